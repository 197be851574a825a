"""The `privlab alphabeta` commands: publish, estimate, check, and bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import fails

DOMAINS = {"a": ["x", "y", "z"], "b": ["u", "v"], "c": ["k", "l", "m", "n"]}


def _input(tmp_path):
    g = np.random.default_rng(0)
    src = tmp_path / "in.csv"
    pd.DataFrame({k: g.choice(v, 30) for k, v in DOMAINS.items()}).to_csv(src, index=False)
    (tmp_path / "domains.json").write_text(json.dumps(DOMAINS))
    return src


def test_publish_estimate_and_check(run, tmp_path):
    src = _input(tmp_path)
    r = run("alphabeta", src, "--columns", "a,b,c", "--d", "0.05", "--gamma", "0.4",
            "--domains", tmp_path / "domains.json", "--custody", tmp_path / "c",
            "--seed", "7", "--out", tmp_path / "r")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "alpha-beta view" in r.stdout and "custodian" in r.stderr
    meta = json.loads((tmp_path / "r" / "release.json").read_text())
    assert meta["method"] == "alphabeta" and meta["parameters"]["domain_size"] == 24
    assert meta["parameters"]["d"] == 0.05
    r = run("alphabeta", "estimate", tmp_path / "r", "--where", "a=x|y,b=u",
            "--out", tmp_path / "est.csv")  # fmt: skip
    assert r.returncode == 0, r.stderr
    est = pd.read_csv(tmp_path / "est.csv")
    view = pd.read_csv(tmp_path / "r" / "view.csv")
    n_v = int((view["a"].isin(["x", "y"]) & (view["b"] == "u")).sum())
    assert est["n_view"][0] == n_v and est["n_domain"][0] == 2 * 1 * 4
    alpha, beta = meta["parameters"]["alpha"], meta["parameters"]["beta"]
    assert est["estimate"][0] == pytest.approx((n_v - beta * 8) / alpha)
    assert est["sd"][0] > 0
    r = run("check", tmp_path / "r")
    assert r.returncode == 0 and "posterior_in_view" in r.stdout


def test_alpha_beta_given_directly_and_default_subcommand(run, tmp_path):
    src = _input(tmp_path)
    r = run("alphabeta", "publish", src, "--columns", "a,b", "--alpha", "1", "--beta", "0",
            "--out", tmp_path / "r")  # fmt: skip
    assert r.returncode == 0, r.stderr
    view = pd.read_csv(tmp_path / "r" / "view.csv")
    truth = pd.read_csv(src)[["a", "b"]].drop_duplicates()
    assert len(view) == len(truth)  # beta = 0, alpha = 1: the data's distinct tuples
    assert list(view.itertuples(index=False)) == sorted(view.itertuples(index=False))


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--alpha", "0.8", "--beta", "0.3"], ["alpha + beta = 1.1 exceeds 1"]),
        (["--d", "0.5", "--gamma", "0.5"], ["gamma = 0.5 must exceed d = 0.5"]),
        (["--alpha", "0.8"], ["--alpha and --beta"]),
        ([], ["--d and --gamma"]),
        (["--d", "0.1"], ["--d and --gamma"]),
        (["--columns", "a,zz", "--alpha", "0.5", "--beta", "0.1"], ["zz"]),
    ],
)
def test_bad_input_one_line_exit_2_nothing_written(run, tmp_path, args, needles):
    src = _input(tmp_path)
    cols = [] if "--columns" in args else ["--columns", "a,b"]
    r = run("alphabeta", src, *cols, *args, "--custody", tmp_path / "c", "--out", tmp_path / "r")
    fails(r, *needles)
    assert not (tmp_path / "r").exists() and not (tmp_path / "c").exists()


def test_estimate_bad_query(run, tmp_path):
    src = _input(tmp_path)
    r = run("alphabeta", src, "--columns", "a,b", "--alpha", "0.5", "--beta", "0.1",
            "--domains", tmp_path / "domains.json", "--out", tmp_path / "r")  # fmt: skip
    assert r.returncode == 0, r.stderr
    fails(run("alphabeta", "estimate", tmp_path / "r", "--where", "a=w"), "'w'", "'a'")
    fails(run("alphabeta", "estimate", tmp_path / "r", "--where", "c=k"), "'c'")
    fails(run("alphabeta", "estimate", tmp_path / "r", "--where", "a"), "COLUMN=VALUE")
    fails(run("alphabeta", "estimate", tmp_path / "nope"), "nope")


def test_vacuous_guarantee_is_a_note_at_publish_and_qualified_by_check(run, tmp_path):
    """The README's example: d = 0.05 against a share of real tuples far above it."""
    src = _input(tmp_path)  # 30 rows over 24 tuples: n/m well above 0.05
    r = run("alphabeta", src, "--columns", "a,b,c", "--d", "0.05", "--gamma", "0.5",
            "--domains", tmp_path / "domains.json", "--out", tmp_path / "r")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "note: the input's distinct tuples are a share n/m" in r.stderr
    assert "vacuous" in r.stderr
    r = run("check", tmp_path / "r")
    assert r.returncode == 0, r.stderr
    rows = [[c.strip() for c in x.strip("│ ").split("│")] for x in r.stdout.splitlines()]
    (private,) = [row[1] for row in rows if row[0] == "private"]
    assert private.startswith("True only for priors <= d = 0.05: vacuous")
    assert "note: the (0.05, 0.5)-privacy of this view is vacuous" in r.stderr
