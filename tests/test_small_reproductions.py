"""The small reproductions of issue 14 item 8: Kifer Table 1, thesis Table 3.3, thesis Fig. 5.5.

Each runs through :func:`privlab.experiments.run_experiment` at quick size and asserts its
computed numbers against the paper's (exact ones exactly) and the paper's qualitative finding.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from privlab.attacks.exact import exact_posterior
from privlab.experiments import run_experiment
from privlab.experiments._exact_rational import (
    dirichlet_integral,
    lebesgue_simplex_integral,
    naive_bayes_group_posterior,
)
from privlab.experiments.anatomy_table3_3 import TABLE_3_3_QIT, TABLE_3_3_ST, release_of
from privlab.experiments.kifer_table1 import posterior_naive_bayes_privlab


def _run(tmp_path, experiment_id):
    out = tmp_path / experiment_id
    res = run_experiment(experiment_id, quick=True, seed=0, out=out, progress=False)
    on_disk = json.loads((out / "result.json").read_text())
    assert on_disk["experiment"] == experiment_id and on_disk["rows"] == res.rows
    for plot in res.plots:
        assert (out / plot).read_bytes()[:4] == b"\x89PNG"
    return res


# --- the rational oracle ---------------------------------------------------------------------
def test_dirichlet_integral_closed_forms():
    # Beta(1, 1): E[p^a (1-p)^b] = a! b! / (a + b + 1)!
    assert dirichlet_integral([3, 2]) == Fraction(math.factorial(3) * 2, math.factorial(6))
    # the uniform density on the k-simplex is (k-1)! times Lebesgue measure
    c = [4, 0, 2, 1]
    assert dirichlet_integral(c) == math.factorial(3) * lebesgue_simplex_integral(c)
    # Laplace's rule of succession: P(next = 1 | s ones in n) = (s + 1) / (n + 2)
    assert dirichlet_integral([8, 3]) / dirichlet_integral([7, 3]) == Fraction(8, 12)


def test_rational_posterior_matches_privlab_exact_enumeration():
    qi = [(s,) for _, s, _ in TABLE_3_3_QIT]
    groups = [[t - 1 for t, _, g in TABLE_3_3_QIT if g == k] for k in range(1, 7)]
    vals = [[v for g, v in TABLE_3_3_ST if g == k] for k in range(1, 7)]
    frac = naive_bayes_group_posterior(qi, groups, vals)
    rel = release_of(TABLE_3_3_ST)
    ex = exact_posterior(rel)
    for i, row in enumerate(frac):
        assert sum(row.values()) == 1
        for j, v in enumerate(rel.sensitive.domain):
            assert float(row[v]) == pytest.approx(ex.probs[i, j], abs=1e-12)


# --- Kifer 2009 Table 1 ----------------------------------------------------------------------
def test_kifer_table1(tmp_path):
    res = _run(tmp_path, "kifer-table1")
    rows = {r["model"]: r for r in res.rows}
    joint = rows["exchangeable, uniform joint prior (Sec. 3.2)"]
    assert joint["fraction"] == "100/101" == joint["paper_fraction"]
    assert joint["p_cancer_200"] == 100 / 101
    assert joint["integrals_equal_paper_exactly"] is True
    assert joint["log10_integral_cancer"] == joint["paper_log10_integral_cancer"]
    assert joint["log10_integral_no_cancer"] == joint["paper_log10_integral_no_cancer"]
    # random worlds and the prior belief do not move: 1/2 (Sec. 3.1)
    assert rows["random worlds"]["fraction"] == "1/2"
    assert rows["uniform joint prior, before seeing the table"]["fraction"] == "1/2"
    # the deFinetti attack's Naive-Bayes model: a different prior, a slightly different answer
    nb = rows["Naive Bayes, uniform priors (deFinetti attack's model)"]
    assert nb["fraction"] == "1020000/1030201"
    assert nb["p_cancer_200_float"] == pytest.approx(1020000 / 1030201, abs=1e-12)
    assert rows["Naive Bayes, Dir(2,2) on P(S), uniform P(smoker|S)"]["fraction"] == "100/101"
    # every paper row is matched by a computed row with the same fraction
    for p in res.paper:
        assert rows[p["model"]]["fraction"] == p["fraction"]


def test_kifer_table1_float_path_is_privlab_loglik():
    # privlab's float Dirichlet-multinomial log-likelihood against the rational oracle
    assert posterior_naive_bayes_privlab() == pytest.approx(1020000 / 1030201, abs=1e-12)
    assert posterior_naive_bayes_privlab(prior=1e-3) > posterior_naive_bayes_privlab()


# --- Mothali 2011 Table 3.3 ------------------------------------------------------------------
def test_anatomy_table33(tmp_path):
    res = _run(tmp_path, "anatomy-table3.3")
    rel = {r["release"]: r for r in res.rows if r["part"] == "release"}
    printed, text = rel["printed"], rel["text (Kifer Table 6)"]
    for r in (printed, text):
        assert (r["groups"], r["group_size"], r["distinct_l"]) == (6, 2, 2)
        assert r["max_random_worlds"] == 0.5 and r["round_trip"] is True
        assert r["smoker_groups"] == r["paper_smoker_groups"] == "1,3,4,6"
    # the printed table contradicts its text: group 4 (two smokers) holds no cancer
    assert printed["cancer_groups"] == "1,3,6" != printed["paper_cancer_groups"]
    assert text["cancer_groups"] == "1,3,4,6" == text["paper_cancer_groups"]
    # privlab's Anatomy on consistent microdata: the same (forced) group compositions
    (ana,) = [r for r in res.rows if r["release"].startswith("anatomize")]
    assert (ana["groups"], ana["group_size"], ana["distinct_l"]) == (6, 2, 2)
    assert ana["compositions"] == printed["compositions"]
    assert printed["compositions"] == "Cancer+Flu:1 Cancer+None:2 Flu+None:3"

    post = {(r["release"], r["tuple"]): r for r in res.rows if r["part"] == "posterior"}
    expected = {"printed": "7/9", "text (Kifer Table 6)": "27/32"}
    for name, frac in expected.items():
        for t in (5, 6):
            r = post[(name, t)]
            assert r["p_random_worlds"] == 0.5  # the paper's random-worlds value
            assert r["p_exact_fraction"] == frac
            f = Fraction(frac)
            assert r["p_exact"] == pytest.approx(float(f), abs=1e-6)
            assert r["p_definetti"] == pytest.approx(float(f), abs=0.03)  # 20k x 4 chains
            # the thesis's finding: tuple 5 more likely ill, tuple 6 more likely healthy
            assert r["p_exact"] > 0.5 and r["p_definetti"] > 0.5
    # Kifer's Table 6 (the text's reading): tuple 12 has cancer with ~0.16; 1 - 27/32 = 5/32
    assert 1 - Fraction(expected["text (Kifer Table 6)"]) == Fraction(5, 32)
    assert float(Fraction(5, 32)) == pytest.approx(0.16, abs=0.005)


# --- Mothali 2011 Fig. 5.5 -------------------------------------------------------------------
def test_calibration_fig55(tmp_path):
    res = _run(tmp_path, "calibration-fig5.5")
    assert res.plots == ("fig5_5_group2.png", "assignment_probabilities.png")
    n = 30162  # Adult without missing values (Sec. 4.5)

    def hist(e_step, l, name):
        rows = [
            r for r in res.rows
            if (r["e_step"], r["group_size"], r["probabilities"]) == (e_step, l, name)
        ]  # fmt: skip
        assert [r["bin"] for r in rows][-1] == "0.9-1.0" and len(rows) == 10
        return rows

    for e_step in ("approximate", "exact"):
        for l in (2, 3, 4):
            top, every = hist(e_step, l, "top"), hist(e_step, l, "all")
            counts = np.array([r["count"] for r in top])
            assert counts.sum() == n
            assert sum(r["share"] for r in top) == pytest.approx(1, abs=1e-3)
            # a tuple's top probability is at least 1/|group| >= 1/5
            assert counts[:2].sum() == 0
            # every (tuple, value of its group) event: about l per tuple (a few groups of 5)
            assert l * n <= sum(r["count"] for r in every) <= (l + 1) * n
            for r in top:
                assert r["observed"] is None or 0 <= r["observed"] <= 1
    # Fig. 5.5: a high percentage of the probabilities close to 1 (groups of 2) ...
    top2 = hist("approximate", 2, "top")
    assert max(top2, key=lambda r: r["count"])["bin"] == "0.9-1.0"
    assert top2[-1]["share"] > 0.5
    # ... and for groups of 3 and 4 too (at one start, not always the mode at g = 4)
    for l in (3, 4):
        assert hist("approximate", l, "top")[-1]["share"] > 0.2
    # for g = 2 a group's tuples hold p and 1 - p: the all-events histogram is symmetric
    # apart from the 0.5 ties, which fall into 0.5-0.6
    every2 = [r["count"] for r in hist("approximate", 2, "all")]
    assert every2[:4] == every2[-1:-5:-1]
    # the probabilities near 1 are overconfident (the reason for Ch. 5.3's calibration)
    assert top2[-1]["observed"] < 0.9
