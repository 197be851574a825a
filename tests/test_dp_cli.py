import json

import numpy as np
import pandas as pd
import pytest

from conftest import fails as _fails
from privlab.data import load_lenses
from privlab.dp.histogram import noisy_histogram


def test_noisy_histogram_library():
    t = load_lenses()
    exact = noisy_histogram(t, ["astigmatic", "class"], epsilon=float("inf"))
    df = exact.to_pandas()
    assert len(df) == 2 * 3 and df["count"].sum() == 24
    ref = t.to_pandas().groupby(["astigmatic", "class"]).size()
    for _, row in df.iterrows():
        assert row["count"] == ref.get((row["astigmatic"], row["class"]), 0)
    noisy = noisy_histogram(t, ["astigmatic", "class"], epsilon=0.5, rng=0)
    assert noisy.counts.dtype == np.int64 and np.all(noisy.counts >= 0)
    assert noisy.sensitivity == 1 and noisy.to_dict()["cells"] == 6


def test_dp_histogram_cli(cli, tmp_path):
    out, custody = tmp_path / "h.csv", tmp_path / "h.custody"
    r = cli("dp", "histogram", "nursery", "--columns", "parents,class", "--epsilon", "1",
            "--estimator", "eb", "--seed", "3", "--custody", custody, "--out", out)  # fmt: skip
    assert r.returncode == 0, r.stderr
    # the seed is salted, the salt kept in custody only
    seed = json.loads((custody / "custody.json").read_text())["seed"]
    assert seed["seed"] == 3 and int(seed["salt"]) > 2**100 and seed["salt"] not in out.read_text()
    df = pd.read_csv(out)
    assert list(df.columns) == ["parents", "class", "count"] and len(df) == 15
    assert (df["count"] >= 0).all() and abs(df["count"].sum() - 12960) < 200
    r = cli("dp", "histogram", "nursery", "--columns", "parents", "--epsilon", "1", "--out", out)
    _fails(r, "exists")
    _fails(cli("dp", "histogram", "nursery", "--columns", "parents", "--epsilon", "0",
               "--out", tmp_path / "x.csv"), "epsilon", "0")  # fmt: skip
    _fails(cli("dp", "histogram", "nursery", "--columns", "nope", "--epsilon", "1",
               "--out", tmp_path / "x.csv"), "'nope'")  # fmt: skip
    assert not (tmp_path / "x.csv").exists()


def test_dp_naive_bayes_train_and_predict(cli, tmp_path):
    train = tmp_path / "train.csv"
    g = np.random.default_rng(0)
    n = 600
    y = g.choice(["yes", "no"], n)
    df = pd.DataFrame({
        "a": np.where(g.random(n) < 0.8, y, "other"),
        "b": g.choice(["u", "v", "w"], n),
        "c": np.where(y == "yes", g.choice([1, 2], n), g.choice([2, 3], n)),
        "label": y,
    })  # fmt: skip
    df.to_csv(train, index=False)
    before = train.read_bytes()
    model = tmp_path / "model.json"
    r = cli("dp", "nb", "train", train, "--target", "label", "--epsilon", "2", "--seed", "1",
            "--custody", tmp_path / "nb.custody", "--out", model)  # fmt: skip
    assert r.returncode == 0, r.stderr
    # by default: the categorical columns (c is numeric without a public domain), and the
    # accuracy of held-out rows, never of the training rows; no exact private count (480
    # training rows) is printed, and the accuracy says it is outside the budget
    assert json.loads(model.read_text())["feature_names"] == ["a", "b"]
    assert "480" not in r.stdout and "120" not in r.stdout
    assert "accuracy on the 20% held-out rows" in r.stdout
    assert "outside the privacy budget" in r.stdout
    r = cli("dp", "nb", "train", train, "--target", "label", "--epsilon", "2", "--seed", "1",
            "--not-for-publication", "--features", "a,b,c", "--holdout", "0", "--out", model,
            "--force")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "accuracy" not in r.stdout
    assert train.read_bytes() == before
    meta = json.loads(model.read_text())
    assert meta["feature_names"] == ["a", "b", "c"] and meta["sensitivity"] == 3
    assert meta["estimator"] == "eb" and meta["target"] == "label"
    preds = tmp_path / "pred.csv"
    r = cli("dp", "nb", "predict", model, train, "--out", preds)
    assert r.returncode == 0, r.stderr
    assert "accuracy" in r.stdout
    out = pd.read_csv(preds)
    assert len(out) == n and (out["prediction"] == out["label"]).mean() > 0.8
    # the domains were read from the data: the model file says so, and a value never seen in
    # training is no evidence (its prediction is that of the other features)
    assert set(meta["read_from_data"]) == {"a", "b", "c", "label"}
    assert meta["declared"] == [False, False, False] and "epsilon" in meta["privacy_note"]
    test = tmp_path / "test.csv"
    df.assign(b="zzz").to_csv(test, index=False)
    r = cli("dp", "nb", "predict", model, test, "--out", tmp_path / "p2.csv")
    assert r.returncode == 0, r.stderr
    without_b = pd.read_csv(tmp_path / "p2.csv")
    assert (without_b["prediction"] == out["prediction"]).mean() > 0.8
    # with a declared domain, a value outside it is refused with its name
    r = cli("dp", "nb", "train", train, "--target", "label", "--epsilon", "2", "--seed", "1",
            "--not-for-publication", "--features", "a,b", "--domain", "b=u|v|w", "--out", model,
            "--force")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(model.read_text())["declared"] == [False, True]
    _fails(cli("dp", "nb", "predict", model, test, "--out", tmp_path / "p3.csv"), "'zzz'")


def test_histogram_cells_come_from_a_declared_domain(cli, tmp_path):
    """A domain read from the data is refused (one record with a rare value would add a cell
    that reveals it); a declared value nobody holds is released with noise like the rest."""
    from privlab.data import load_nursery
    from privlab.dp.histogram import noisy_histogram
    from privlab.errors import ParameterError, PrivacyWarning

    src = tmp_path / "in.csv"
    pd.DataFrame({"job": ["baker"] * 50 + ["astronaut"], "x": range(51)}).to_csv(src, index=False)
    r = cli(
        "dp", "histogram", src, "--columns", "job", "--epsilon", "0.1", "--out", tmp_path / "a.csv"
    )
    assert (
        r.returncode == 2 and "read from the data" in r.stderr and not (tmp_path / "a.csv").exists()
    )
    r = cli("dp", "histogram", src, "--columns", "job", "--epsilon", "0.1", "--domain",
            "job=baker|astronaut|pilot", "--out", tmp_path / "b.csv")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert list(pd.read_csv(tmp_path / "b.csv")["job"]) == ["baker", "astronaut", "pilot"]
    r = cli("dp", "histogram", src, "--columns", "job", "--epsilon", "0.1", "--domain-from-data",
            "--out", tmp_path / "c.csv")  # fmt: skip
    assert r.returncode == 0 and "not protected" in r.stderr
    # the API: a bundled declared domain needs nothing; an undeclared one needs the flag
    assert len(noisy_histogram(load_nursery(), ["parents"], epsilon=1, rng=0).counts) == 3
    table = load_nursery().to_pandas()
    with pytest.raises(ParameterError, match="read from the data"):
        noisy_histogram(table, ["parents"], epsilon=1)
    with pytest.warns(PrivacyWarning):
        noisy_histogram(table, ["parents"], epsilon=1, domain_from_data=True)


def test_bundled_adult_brings_its_public_bounds(cli, tmp_path):
    """Adult's numeric columns have documented bounds (extraction rule, census top codes), so
    the learners use them by default and nothing is read from the data; --bounds overrides."""
    model = tmp_path / "nb.json"
    r = cli("dp", "nb", "train", "adult", "--target", "salary", "--epsilon", "1",
            "--holdout", "0", "--bins", "5", "--bounds", "age=10:100", "--out", model)  # fmt: skip
    assert r.returncode == 0, r.stderr
    meta = json.loads(model.read_text())
    assert len(meta["feature_names"]) == 14 and meta["read_from_data"] == []
    edges = dict(zip(meta["feature_names"], meta["bin_edges"]))
    assert edges["age"] == [10.0, 28.0, 46.0, 64.0, 82.0, 100.0]
    assert edges["hours-per-week"][0] == 1.0 and edges["hours-per-week"][-1] == 99.0
    assert "note:" not in r.stderr  # no domain or bound was read from the data
    tree = tmp_path / "tree.json"
    r = cli("dp", "tree", "train", "adult", "--target", "salary", "--epsilon", "1",
            "--holdout", "0", "--max-depth", "2", "--out", tree)  # fmt: skip
    assert r.returncode == 0, r.stderr
    t = json.loads(tree.read_text())
    assert t["read_from_data"] == [] and len(t["features"]) == 14
    age = t["features"].index("age")
    assert t["model"]["bounds"][0][age] == 17.0 and t["model"]["bounds"][1][age] == 90.0


def test_dp_outputs_compose_in_the_ledger_and_a_replay_is_not_counted(cli, tmp_path, registry):
    args = ["dp", "histogram", "nursery", "--columns", "parents,class", "--epsilon", "0.6"]
    r = cli(*args, "--seed", "5", "--custody", tmp_path / "c1", "--out", tmp_path / "h1.csv")
    assert r.returncode == 0, r.stderr
    assert "spend epsilon" not in r.stderr
    # --replay draws the very same noise again from the custody's seed and salt ...
    r = cli(*args, "--replay", tmp_path / "c1", "--out", tmp_path / "h1b.csv")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "h1b.csv").read_bytes() == (tmp_path / "h1.csv").read_bytes()
    assert "spend epsilon" not in r.stderr  # ... which is not a new release
    # a new output of the same input: 0.6 + 0.6 is above the default total of 1
    r = cli(*args, "--out", tmp_path / "h2.csv")
    assert r.returncode == 0, r.stderr
    assert "spend epsilon = 1.2 together (0.6 + 0.6, sequential composition)" in r.stderr
    entries = json.loads(next((registry / "inputs").glob("*.json")).read_text())["entries"]
    assert [e["epsilon"] for e in entries] == [0.6, 0.6]
    # the replay of other parameters would be correlated with the original: refused
    other_params = ["dp", "histogram", "nursery", "--columns", "parents", "--epsilon", "0.6"]
    _fails(cli(*other_params, "--replay", tmp_path / "c1", "--out", tmp_path / "h3.csv"),
           "correlated")  # fmt: skip
    assert not (tmp_path / "h3.csv").exists()
    # privlab --registry DIR: another registry, another ledger
    other = tmp_path / "other-registry"
    r = cli("--registry", other, *args, "--out", tmp_path / "h4.csv")
    assert r.returncode == 0 and "spend epsilon" not in r.stderr, r.stderr
    assert len(list((other / "inputs").glob("*.json"))) == 1
