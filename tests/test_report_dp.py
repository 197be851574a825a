"""``privlab report`` of a DP output: a noisy histogram or a DP model file, with its custody
(issue 33, item 5): the guarantee against the policy, the input's budget, what epsilon does
not cover, the utility; gating with ``--fail-on``."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from conftest import fails
from privlab.report import FAIL, PASS, REVIEW
from privlab.report.config import parse_config
from privlab.report.dp import build_dp


def _hist(run, where, eps="0.5", seed="3", extra=()):
    r = run("dp", "histogram", "adult", "--columns", "sex,salary", "--epsilon", eps,
            "--out", where / "h.csv", "--seed", seed, "--custody", where / "hc",
            *extra)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return where / "h.csv", where / "hc"


def test_a_dp_histogram_within_the_policy_passes_with_its_noise_measured(run, registry, tmp_path):
    """epsilon = 0.5 of a fresh input's total 1: PASS; the expected noise per cell is the
    two-sided geometric's standard deviation sqrt(2a) / (1 - a), a = e^-0.5 (closed form), and
    the measured one is the released minus the true counts of Adult."""
    h, c = _hist(run, tmp_path)
    r = run("report", h, "--custody", c, "--out", tmp_path / "r.html", "--original", "adult",
            "--fail-on", "REVIEW", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["level"] == PASS and doc["next_step"].startswith("the output may be published")
    rep = json.loads((tmp_path / "r.json").read_text())
    assert "epsilon = 0.5" in rep["verdict"]["findings"][0]["reason"]
    assert "factor e^epsilon = 1.65" in rep["verdict"]["findings"][0]["reason"]
    assert rep["diagnostics"]["ledger"]["spent"] == 0.5
    u = rep["utility"]
    a = math.exp(-0.5)
    assert u["expected_rmse_per_cell"] == pytest.approx(math.sqrt(2 * a) / (1 - a), rel=1e-5)
    released = pd.read_csv(h)
    from privlab.data.datasets import load_adult

    adult = load_adult().to_pandas()
    true = adult.groupby(["sex", "salary"], observed=True).size()
    err = [row["count"] - true[(row["sex"], row["salary"])] for _, row in released.iterrows()]
    assert u["cells"] == 4 and u["n"] == len(adult)
    assert u["measured_rmse_per_cell"] == pytest.approx(float(np.sqrt(np.mean(np.square(err)))))
    assert u["max_abs_error"] == max(abs(e) for e in err)
    page = (tmp_path / "r.html").read_text()
    assert page.index('id="verdict"') < page.index('id="header"') < page.index('id="utility"')
    assert "measured error per cell" in page and str(c) not in page and 'salt"' not in page


def test_a_dp_output_fails_above_the_policy_or_the_budget_and_gates(run, registry, tmp_path):
    """epsilon = 2 above the policy's 1: FAIL with the step to release it again lower, and
    ``--fail-on FAIL`` exits 3; a config allowing 2 passes that finding, but then the input's
    ledger (2 of 1) fails; a second output adds to the ledger of the first."""
    h, c = _hist(run, tmp_path, eps="2")
    r = run("report", h, "--custody", c, "--out", tmp_path / "r.html", "--fail-on", "FAIL")
    assert r.returncode == 3, r.stderr
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["verdict"]["level"] == FAIL
    assert "the policy allows epsilon <= 1" in rep["verdict"]["reasons"][0]
    assert rep["verdict"]["next_step"].startswith("release it again with epsilon <= 1")
    lenient = parse_config({"thresholds": {"max_epsilon": 2.0}})
    rep = build_dp(h, custody=c, config=lenient)
    levels = [f["level"] for f in rep.verdict["findings"]]
    assert levels == [PASS, FAIL] and "epsilon = 2 together" in rep.verdict["reasons"][0]
    (tmp_path / "b").mkdir()
    h2, c2 = _hist(run, tmp_path / "b", eps="0.25", seed="5")
    rep = build_dp(h2, custody=c2, config=lenient)
    assert rep.diagnostics["ledger"]["spent"] == 2.25
    assert [o["this"] for o in rep.diagnostics["ledger"]["outputs"]] == [False, True]


def test_an_experiment_or_a_domain_read_from_the_data_is_not_covered(run, registry, tmp_path):
    """A file drawn from the caller's own seed (not for publication) fails; a model whose
    domains were read from the data needs review, and says which columns."""
    from privlab.data.datasets import load_adult
    from privlab.dp.histogram import noisy_histogram

    h = noisy_histogram(load_adult(), ["sex"], epsilon=0.5, rng=np.random.default_rng(0))
    h.save(tmp_path / "x.csv", custody=tmp_path / "xc", not_for_publication=True)
    rep = build_dp(tmp_path / "x.csv", custody=tmp_path / "xc")
    assert rep.verdict["level"] == FAIL
    assert any("experiment" in r for r in rep.verdict["reasons"])
    # (nor is it in the ledger: it spends nothing, which the report says it cannot check)
    assert any("registry does not list" in f["reason"] for f in rep.verdict["findings"])
    r = run("dp", "histogram", "adult", "--columns", "sex", "--epsilon", "1", "--seed", "1",
            "--not-for-publication", "--out", tmp_path / "e.csv")  # fmt: skip
    assert r.returncode == 0, r.stderr
    fails(run("report", tmp_path / "e.csv", "--out", tmp_path / "r.html"),
          "is an experiment", "never be published")  # fmt: skip
    small = tmp_path / "small.csv"  # no declared domains: they are read from the data
    load_adult().to_pandas()[["sex", "salary"]].head(2000).to_csv(small, index=False)
    r = run("dp", "nb", "train", small, "--target", "salary", "--epsilon", "0.5",
            "--out", tmp_path / "nb.json", "--seed", "1",
            "--custody", tmp_path / "nbc")  # fmt: skip
    assert r.returncode == 0, r.stderr
    rep = build_dp(tmp_path / "nb.json", custody=tmp_path / "nbc")
    assert (
        rep.verdict["level"] == REVIEW and "of sex, salary were read" in rep.verdict["reasons"][0]
    )
    assert rep.verdict["next_step"].startswith("declare the domains or bounds of sex, salary")


@pytest.mark.parametrize("kind", ["nb", "tree"])
def test_a_dp_model_is_judged_and_tested_on_held_out_people(run, registry, tmp_path, kind):
    """A DP naive Bayes model and a DP tree: their guarantee, and their accuracy on
    adult-test beside always guessing its most common salary (recomputed here)."""
    from privlab.data.datasets import load_input

    r = run("dp", kind, "train", "adult", "--target", "salary", "--epsilon", "1",
            "--features", "sex,relationship,education", "--out", tmp_path / "m.json",
            "--seed", "2", "--custody", tmp_path / "mc")  # fmt: skip
    assert r.returncode == 0, r.stderr
    cfg = parse_config({"utility": {"holdout": "adult-test"}})
    rep = build_dp(tmp_path / "m.json", custody=tmp_path / "mc", config=cfg)
    assert rep.verdict["level"] == PASS, rep.verdict
    u = rep.utility
    test = load_input("adult-test", drop_missing=True).to_pandas()
    assert u["majority"] == pytest.approx((test["salary"] == "<=50K").mean())
    if kind == "tree":
        from privlab.learn.dp_tree import DPTreeModel

        pred = DPTreeModel.load(tmp_path / "m.json").predict(test)
    else:
        from privlab.learn.dp_naive_bayes import DPNaiveBayes

        pred = DPNaiveBayes.load(tmp_path / "m.json").predict(
            test[["sex", "relationship", "education"]]
        )
    assert u["accuracy"] == pytest.approx(float((pred.astype(str) == test["salary"]).mean()))
    assert u["accuracy"] > u["majority"] - 0.05
    assert "the model predicts salary" in rep.to_html()
    without = build_dp(tmp_path / "m.json", custody=tmp_path / "mc")
    assert "accuracy" not in without.utility and "holdout" in without.utility["why"]


def test_a_dp_output_is_refused_in_one_line_without_its_own_custody(run, registry, tmp_path):
    h, c = _hist(run, tmp_path)
    out = tmp_path / "r.html"
    fails(run("report", h, "--out", out), "not a release directory", "--custody DIR")
    fails(run("report", h, "--custody", tmp_path, "--out", out), "no custody.json")
    other = tmp_path / "other.csv"
    other.write_text(h.read_text().replace("Female", "female"))
    fails(run("report", other, "--custody", c, "--out", out), "custody of another file")
    fails(run("report", h, "--custody", c, "--out", out, "--attacks", "definetti"),
          "is a DP output", "--attacks")  # fmt: skip
    fails(run("report", h, "--custody", c, "--out", out, "--original", "adult-test"),
          "--original adult-test: not the input of this histogram")  # fmt: skip
    fails(run("report", tmp_path / "missing", "--out", out), "missing")
    assert not out.exists() and not out.with_suffix(".json").exists()
    r = run("dp", "nb", "train", "adult", "--target", "salary", "--epsilon", "1",
            "--features", "sex", "--out", tmp_path / "m.json", "--seed", "2",
            "--custody", tmp_path / "mc")  # fmt: skip
    assert r.returncode == 0, r.stderr
    fails(run("report", tmp_path / "m.json", "--custody", tmp_path / "mc", "--out", out,
              "--original", "adult"), "--original applies to a DP histogram")  # fmt: skip
    assert not out.exists()
