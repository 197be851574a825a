"""CLI and experiment building blocks of the DP decision trees (Friedman & Schuster 2010)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from privlab.experiments import run_experiment
from privlab.experiments.dptree import (
    ADULT_CONTINUOUS,
    ADULT_NOMINAL,
    adult_matrix,
    label_with,
    random_tree,
    synthetic,
)


def _toy(tmp_path):
    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({"colour": rng.choice(["red", "blue", "green"], n),
                       "size": rng.integers(0, 100, n)})  # fmt: skip
    df["label"] = np.where((df["colour"] == "red") | (df["size"] > 70), "yes", "no")
    src = tmp_path / "toy.csv"
    df.to_csv(src, index=False)
    return src, df


def test_train_print_and_predict(cli, tmp_path):
    src, df = _toy(tmp_path)
    before = src.read_bytes()
    model = tmp_path / "tree.json"
    r = cli("dp", "tree", "train", src, "--target", "label", "--epsilon", "inf", "--max-depth", "2",
            "--criterion", "gini", "--seed", "0", "--not-for-publication",
            "--out", model)  # fmt: skip
    assert r.returncode == 0, r.stderr
    # default: no numeric column without a declared domain; accuracy on held-out rows only,
    # labelled as outside the budget, and no exact private count (480 training rows)
    assert "size" not in r.stdout and "accuracy on the 20% held-out rows" in r.stdout
    assert "outside the privacy budget" in r.stdout and "480" not in r.stdout
    assert json.loads(model.read_text())["not_for_publication"].startswith("not for publication")
    r = cli("dp", "tree", "train", src, "--target", "label", "--epsilon", "inf", "--max-depth", "2",
            "--criterion", "gini", "--features", "colour,size", "--holdout", "0", "--seed", "0",
            "--not-for-publication", "--out", model, "--force")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "colour = red:" in r.stdout and "size <=" in r.stdout and ": yes  (noisy" in r.stdout
    assert "must be public" in r.stderr
    assert json.loads(model.read_text())["format"] == "privlab-dptree/1"
    out = tmp_path / "pred.csv"
    r = cli("dp", "tree", "predict", model, src, "--out", out)
    assert r.returncode == 0, r.stderr
    pred = pd.read_csv(out)
    assert (pred["predicted_label"] == df["label"]).mean() > 0.97
    assert "accuracy" in r.stdout and src.read_bytes() == before
    r = cli("dp", "tree", "predict", model, src, "--out", out)
    assert r.returncode == 2 and "exists" in r.stderr


def test_train_errors_are_one_line(cli, tmp_path):
    src, _ = _toy(tmp_path)
    base = ["--out", tmp_path / "m.json", "--seed", "0", "--custody", tmp_path / "m.custody"]
    r = cli("dp", "tree", "train", src, "--target", "nope", "--epsilon", "1", *base)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "'nope'" in r.stderr
    r = cli("dp", "tree", "train", src, "--target", "label", "--epsilon", "1", "--criterion",
            "info_gain", *base)  # fmt: skip
    assert r.returncode == 2 and "public upper bound" in r.stderr
    r = cli("dp", "tree", "predict", tmp_path / "none.json", src, "--out", tmp_path / "p.csv")
    assert r.returncode == 2 and "not found" in r.stderr


def test_a_table_too_small_to_hold_a_row_out_trains_and_says_so(run, tmp_path):
    """A one-row table: the 20% held out is no row, so the tree trains on the row and says
    no accuracy is reported (before: the model was written, then predicting on 0 rows
    failed with "unexpected ValueError", exit 1, and the model stayed)."""
    src = tmp_path / "one.csv"
    src.write_text("colour,label\nred,yes\n")
    for cmd in ("tree", "nb"):
        out = tmp_path / f"{cmd}.json"
        code, stdout, err = run("dp", cmd, "train", src, "--target", "label", "--epsilon", "1",
                                "--domain", "label=yes|no", "--out", out)  # fmt: skip
        assert code == 0, err
        assert "holds out no row" in err and "accuracy" not in stdout
        assert out.is_file()
        code, _, err = run("dp", cmd, "train", src, "--target", "label", "--epsilon", "1",
                           "--domain", "label=yes|no", "--holdout", "0.9",
                           "--out", tmp_path / f"{cmd}2.json")  # fmt: skip
        assert code == 2 and "leaves no row to train on" in err
        assert not (tmp_path / f"{cmd}2.json").exists()


def test_random_labelling_tree():
    rng = np.random.default_rng(1)
    tree = random_tree(7, 3, 5, rng)
    X, y = synthetic(5000, 7, 3, tree, 0.0, rng)
    assert set(np.unique(X[:, :7])) == {0.0, 1.0} and 0 < y.mean() < 1
    np.testing.assert_array_equal(label_with(tree, X), y)
    _, y_noisy = synthetic(20000, 7, 3, tree, 0.1, np.random.default_rng(2))
    X2, y2 = synthetic(20000, 7, 3, tree, 0.0, np.random.default_rng(2))
    assert abs(np.mean(y_noisy != y2) - 0.1) < 0.01

    # every split of the generating tree is informative: the root's two sides differ
    root = X2[:, tree["feature"]] <= tree["threshold"]
    assert abs(y2[root].mean() - y2[~root].mean()) > 0.05
    # depth 1: the class is one attribute or its negation
    stump = random_tree(10, 0, 1, rng)
    assert {k["label"] for k in stump["children"]} == {0, 1}


def test_adult_matrix():
    X, y, cat, sizes, (lo, hi) = adult_matrix()
    assert X.shape == (45222, len(ADULT_NOMINAL) + len(ADULT_CONTINUOUS)) == (45222, 14)
    assert cat == list(range(8)) and sizes[ADULT_NOMINAL.index("sex")] == 2
    assert abs(y.mean() - 0.2478) < 0.001  # 11,208 of 45,222 earn >50K
    assert np.all(X >= lo) and np.all(X <= hi) and lo[8] == 17 and hi[8] == 90  # age


def test_single_split_quick(tmp_path):
    res = run_experiment("dptree-single-split", quick=True, out=tmp_path / "ss", progress=False)
    acc = {(r["records"], r["criterion"]): r["accuracy"] for r in res.rows}
    assert acc[(100, "max")] < 0.6  # too few records: the root stays a leaf
    assert acc[(20000, "max")] == 1.0 and acc[(20000, "non-private")] == 1.0
    assert acc[(1000, "max")] > acc[(1000, "info_gain")]  # Δ = 1 vs log2(n+1) + 1/ln 2
    assert (tmp_path / "ss" / "accuracy_vs_records.png").stat().st_size > 1000
