"""The membership attack on an alpha-beta view (Rastogi, Suciu & Hong 2007): the exact
posterior by enumeration of instances and views on a tiny domain, its calibration by Monte
Carlo, the comparison with gamma, bad input and the CLI."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privlab.attacks.alphabeta import alphabeta_attack, estimated_prior
from privlab.data import Table
from privlab.data.schema import Attribute, Role, Schema
from privlab.errors import ParameterError, ReleaseError
from privlab.publish.alpha_beta import AlphaBetaRelease, alphabeta, choose_parameters

SCHEMA = Schema(
    (
        Attribute("a", ("x", "y"), Role.QI, declared=True),
        Attribute("b", ("0", "1"), Role.QI, declared=True),
    )
)
CELLS = list(itertools.product(range(2), range(2)))  # m = 4


def _view(cells) -> np.ndarray:
    codes = np.array(sorted(cells), dtype=np.int64).reshape(-1, 2)
    return codes


def test_posterior_of_each_published_tuple_by_enumeration():
    a, b = 0.35, 0.2
    priors = {c: p for c, p in zip(CELLS, (0.05, 0.2, 0.5, 0.8))}  # tuple-independent
    subsets = [
        frozenset(c for c, bit in zip(CELLS, bits) if bit)
        for bits in itertools.product([0, 1], repeat=len(CELLS))
    ]

    def p_inst(inst):
        return math.prod(priors[c] if c in inst else 1 - priors[c] for c in CELLS)

    def p_view(view, inst):
        return math.prod(
            (a + b if c in inst else b) if c in view else (1 - a - b if c in inst else 1 - b)
            for c in CELLS
        )

    for view in subsets:
        if not view:
            continue
        joint = {inst: p_inst(inst) * p_view(view, inst) for inst in subsets}
        total = sum(joint.values())
        codes = _view(view)
        rel = AlphaBetaRelease(Table(codes, SCHEMA), a, b)
        post = alphabeta_attack(rel, prior=[priors[tuple(r)] for r in codes])
        for i, row in enumerate(map(tuple, codes)):
            exact = sum(p for inst, p in joint.items() if row in inst) / total
            assert post.probs[i, 1] == pytest.approx(exact, rel=1e-12)
            assert post.probs[i, 0] == pytest.approx(1 - exact, rel=1e-12)
        assert post.values == ("0", "1") and post.sensitive == "real"


def test_at_theorem_4_3_parameters_the_posterior_at_prior_d_is_gamma():
    d, gamma = 0.1, 0.4
    a, b = choose_parameters(d, gamma)
    rel = AlphaBetaRelease(Table(_view(CELLS[:3]), SCHEMA), a, b, d=d, gamma=gamma)
    post = alphabeta_attack(rel)
    np.testing.assert_allclose(post.probs[:, 1], gamma, rtol=1e-12)
    assert post.diagnostics["prior"] == d and post.diagnostics["prior_source"] == "the release's d"
    assert post.diagnostics["within_gamma"] and post.diagnostics["above_gamma"] == 0.0
    # a more informed adversary (prior 0.3 > d) is above gamma: the guarantee does not cover it
    strong = alphabeta_attack(rel, prior=0.3)
    expect = 0.3 * (a + b) / (0.3 * (a + b) + 0.7 * b)
    np.testing.assert_allclose(strong.probs[:, 1], expect, rtol=1e-12)
    assert expect > gamma and strong.diagnostics["above_gamma"] == 1.0
    assert not strong.diagnostics["within_gamma"]


def test_deterministic_limits():
    rel = AlphaBetaRelease(Table(_view(CELLS[:2]), SCHEMA), 1.0, 0.0)
    # beta = 0: nothing is inserted, every published tuple is real
    np.testing.assert_allclose(alphabeta_attack(rel, prior=0.01).probs[:, 1], 1.0)
    # prior 0 stays 0, whatever the view
    rel = AlphaBetaRelease(Table(_view(CELLS[:2]), SCHEMA), 0.3, 0.2)
    np.testing.assert_allclose(alphabeta_attack(rel, prior=0.0).probs[:, 1], 0.0)


def test_posterior_is_calibrated_by_monte_carlo():
    # each of m cells is real independently with prior p; among published rows the share
    # of real ones estimates Pr[real | in view]
    m, p, a, b = 20_000, 0.1, 0.3, 0.05
    g = np.random.default_rng(11)
    dom = [str(i) for i in range(m)]
    real = np.flatnonzero(g.random(m) < p)
    t = Table.from_pandas(pd.DataFrame({"v": [dom[i] for i in real]}), domains={"v": dom})
    rel = alphabeta(t, alpha=a, beta=b, rng=np.random.default_rng(12))
    post = alphabeta_attack(rel, prior=p)
    share = rel.is_real.mean()
    q = post.probs[0, 1]
    sd = math.sqrt(q * (1 - q) / rel.n_rows)
    assert abs(share - q) < 4 * sd  # accepts the exact posterior
    assert abs(share - 1.3 * q) > 4 * sd  # rejects a 30% wrong one
    # without a prior, the adversary estimates n/m from the view
    est = estimated_prior(rel)
    assert abs(est - real.size / m) < 4 * math.sqrt(rel.n_rows) / (a * m)
    assert alphabeta_attack(rel).diagnostics["prior"] == pytest.approx(est)


@given(
    a=st.floats(0.01, 1.0),
    bshare=st.floats(0.0, 0.99),
    priors=st.lists(st.floats(0.0, 1.0), min_size=3, max_size=3),
)
def test_posterior_invariants(a, bshare, priors):
    b = min(bshare * (1 - a), 0.999)
    rel = AlphaBetaRelease(Table(_view(CELLS[:3]), SCHEMA), a, b)
    post = alphabeta_attack(rel, prior=priors)
    np.testing.assert_allclose(post.probs.sum(axis=1), 1.0, atol=1e-12)
    assert ((post.probs >= 0) & (post.probs <= 1)).all()
    # a tuple in the view is at least as likely real as before (alpha > 0): no negative
    # leakage from being published, and the posterior rises with the prior
    p = np.asarray(priors)
    assert (post.probs[:, 1] >= p - 1e-12).all()
    order = np.argsort(p)
    assert (np.diff(post.probs[order, 1]) >= -1e-12).all()


def test_bad_input():
    rel = AlphaBetaRelease(Table(_view(CELLS[:3]), SCHEMA), 0.3, 0.2)
    with pytest.raises(ParameterError, match="one per published row"):
        alphabeta_attack(rel, prior=[0.1, 0.2])
    with pytest.raises(ParameterError, match="prior"):
        alphabeta_attack(rel, prior=1.5)
    with pytest.raises(ReleaseError, match="alpha-beta release"):
        alphabeta_attack(object())


def test_cli_attack_membership_and_evaluate(run, tmp_path):
    from conftest import fails

    g = np.random.default_rng(5)
    src = tmp_path / "in.csv"
    pd.DataFrame({"a": g.choice(list("xyz"), 200), "b": g.choice(list("0123456789"), 200),
                  "c": g.choice(list("uvw"), 200)}).to_csv(src, index=False)  # fmt: skip
    r = run("alphabeta", src, "--columns", "a,b,c", "--d", "0.2", "--gamma", "0.5",
            "--seed", "3", "--custody", tmp_path / "cus", "--out", tmp_path / "ab")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = run("attack", "membership", tmp_path / "ab", "--out", tmp_path / "p.csv")
    assert r.returncode == 0, r.stderr
    assert "Pr[real | in view] = 0.5" in r.stdout and "within" in r.stdout
    post = pd.read_csv(tmp_path / "p.csv")
    assert list(post.columns) == ["row", "group_id", "0", "1"]
    np.testing.assert_allclose(post["1"], 0.5, rtol=1e-9)
    r = run("evaluate", tmp_path / "p.csv", "--custody", tmp_path / "cus")
    assert r.returncode == 0, r.stderr
    fails(run("attack", "membership", tmp_path / "ab", "--prior", "2", "--out",
              tmp_path / "x.csv"), "--prior")  # fmt: skip
    fails(run("attack", "membership", tmp_path / "nowhere", "--out", tmp_path / "x.csv"),
          "nowhere")  # fmt: skip
    assert not (tmp_path / "x.csv").exists()
