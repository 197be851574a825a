"""attacks-beyond-anatomy: the learning attacks on generalized and PRAM releases of Adult.

The quick run (a 6,000-row sample, seed 0) is checked for its row fields, for intervals
that hold their estimates, and for what each attack does against its baseline; the helpers
are checked against exact answers.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from privlab.attacks.pram import run_pram_attack
from privlab.data import Table
from privlab.experiments import attacks_beyond_anatomy as aba
from privlab.experiments import run_experiment
from privlab.experiments.attacks_beyond_anatomy import (
    TRUE_PARAMETERS,
    paired_difference,
    pram_control_params,
)
from privlab.publish import pram

FIELDS = {
    "release", "threat_model", "attack", "n", "acc", "acc_ci", "at_risk_share",
    "at_risk_share_ci", "at_risk_precision", "at_risk_precision_ci", "baseline",
    "baseline_acc", "baseline_acc_ci", "acc_minus_baseline", "acc_minus_baseline_ci",
    "beats_baseline", "control_acc", "control_acc_ci", "residual_risk", "residual_risk_ci",
    "iterations", "converged", "seconds",
}  # fmt: skip
# (estimate, interval) pairs of every row; the residual's interval is Anonymeter's, centred
# on the Wilson centres, which at n = 6,000 lie within 0.001 of the rates
PAIRS = [
    ("acc", "acc_ci"), ("at_risk_share", "at_risk_share_ci"),
    ("at_risk_precision", "at_risk_precision_ci"), ("baseline_acc", "baseline_acc_ci"),
    ("acc_minus_baseline", "acc_minus_baseline_ci"), ("control_acc", "control_acc_ci"),
    ("residual_risk", "residual_risk_ci"),
]  # fmt: skip


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """The quick run, with half its deFinetti iterations under (a) (6,000 per chain, not
    12,000): the same code, rows and checks at a fraction of the suite's time."""
    out = tmp_path_factory.mktemp("aba") / "r"
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(aba.QUICK_ITERATIONS, "a", 6000)
        res = run_experiment("attacks-beyond-anatomy", quick=True, seed=0, out=out,
                             progress=False)  # fmt: skip
    assert json.loads((out / "result.json").read_text())["rows"] == res.rows
    return {(r["release"], r["threat_model"].split(" ")[0], r["attack"] == TRUE_PARAMETERS): r
            for r in res.rows}, res  # fmt: skip


def _learning(rows):
    """The learning attacks' rows, keyed by (release, threat model)."""
    return {(name, t): r for (name, t, true), r in rows.items() if not true and t != "(p)"}


def _kind(rows, prefix, threat=None, true=False):
    return next(
        r
        for (name, t, tp), r in rows.items()
        if name.startswith(prefix) and (threat is None or t == threat) and tp == true
    )


def test_rows_carry_every_field_and_intervals_hold_their_estimates(quick):
    rows, res = quick
    assert len(res.rows) == len(rows) == 14 and len(_learning(rows)) == 7
    assert {r["threat_model"][:4] for r in rows.values()} == {"(a) ", "(b) ", "(b')", "PRAM",
                                                               "(p) "}  # fmt: skip
    # a true-parameter row beside every learning attack but (b')
    assert {(n, t) for (n, t, true) in rows if true} == {
        k for k in _learning(rows) if k[1] != "(b')"
    }
    for r in rows.values():
        assert FIELDS <= set(r), FIELDS - set(r)
        assert r["n"] > 5000 and r["seconds"] >= 0
        for est, ci in PAIRS:
            if r[est] is None:  # no control for (b'); no precision when nobody is at risk
                continue
            lo, hi = r[ci]
            assert lo - 1e-4 <= r[est] <= hi + 1e-4, (r["release"], est, r[est], r[ci])
        # the paired difference is the difference of the two accuracies (rounding aside)
        assert r["acc_minus_baseline"] == pytest.approx(r["acc"] - r["baseline_acc"], abs=3e-4)
        assert r["beats_baseline"] == (r["acc_minus_baseline_ci"][0] > 0)
    assert "flexible Bayes" in res.notes and "NOT implemented" not in res.notes


def test_threat_model_a_on_global_recoding(quick):
    rows = _learning(quick[0])
    for r in (
        rows[("generalization (optimal, k=10)", "(a)")],
        _kind(quick[0], "generalization (optimal, k=10, s"),
    ):
        # the public model carries information the classes do not hide: the control beats
        # random worlds ...
        assert r["control_acc"] > r["baseline_acc"] + 0.01
        # ... but the learning attack, which must learn P(occupation | QIs) from the class
        # counts alone, does not: on these large classes it falls below random worlds (also
        # in the full run, converged).  A measured finding against Kifer's claim; if the
        # attack improves, this assertion is the one to revisit.
        assert not r["beats_baseline"] and r["acc_minus_baseline_ci"][1] < 0
        assert r["residual_risk"] < 0
        # the people it puts at risk are mostly wrong (full run: precision about 0.2)
        assert r["at_risk_precision"] is None or r["at_risk_precision"] < 0.5
        # the model counted on the true table, within the same classes, is the ceiling
        ceiling = _kind(quick[0], r["release"], "(a)", true=True)
        assert ceiling["acc"] > max(r["acc"], r["control_acc"], r["baseline_acc"])
    assert _kind(quick[0], "generalization (optimal, k=10, s")["suppressed"] > 0


def test_threat_model_b_flexible_bayes(quick):
    rows = _learning(quick[0])
    glob = rows[("generalization (optimal, k=10)", "(b)")]
    local = rows[("generalization (Mondrian, k=10)", "(b)")]
    # global recoding: every target fits one class, and by symmetry the posterior is the
    # class's shares (random worlds): exactly without the kernel, up to the kernel's
    # borrowing across the 10-year ranges with it
    assert glob["targets_in_several_classes"] == 0
    assert glob["max_from_random_worlds_no_kernel"] < 1e-9
    assert glob["acc_no_kernel"] == glob["baseline_acc"]
    assert 0 < glob["max_from_random_worlds"] < 0.2
    assert abs(glob["acc"] - glob["baseline_acc"]) < 0.01
    # the true parameters see inside the cells (exact age): well above random worlds
    assert _kind(quick[0], glob["release"], "(b)", true=True)["acc"] > glob["acc"] + 0.02
    # ... although a model counted on public data does better: the information is there
    assert glob["control_acc"] > glob["baseline_acc"] + 0.02
    # local recoding: overlapping cells (Kifer Sec. 5.2) put many targets in several classes,
    # and the learned model is at least as good as spreading over their rows
    assert local["targets_in_several_classes"] > 500
    assert local["acc"] >= local["baseline_acc"] - 0.005
    assert local["converged"] and glob["converged"]
    assert "age kernel width" in local["setting"]


def test_threat_model_b_prime_on_mondrian_is_random_worlds(quick):
    # the rows of a class are exchangeable when only the published cells are known: the
    # posterior is the class's value shares, whatever the attacker learns
    r = _kind(quick[0], "generalization (Mondrian", "(b')")
    assert r["acc"] == pytest.approx(r["baseline_acc"], abs=0.01)
    assert not r["beats_baseline"] and r["control_acc"] is None
    assert r["at_risk_share"] == pytest.approx(0.0, abs=0.005)


def test_public_prior_row(quick):
    r = _kind(quick[0], "none")
    assert r["threat_model"].startswith("(p)") and r["control_acc"] is None
    # naive Bayes from public data beats the public marginal's mode; the same public model
    # applied within the release's classes (the control) tells about as much (full run:
    # 0.252 against 0.256), and more than the learning attack under (a) (0.193)
    assert r["acc"] > r["baseline_acc"] + 0.05
    glob = _learning(quick[0])[("generalization (optimal, k=10)", "(a)")]
    assert abs(glob["control_acc"] - r["acc"]) < 0.05, (glob["control_acc"], r["acc"])
    assert r["acc"] > glob["acc"]


def test_pram_learning_attack_against_published_value_and_gamma_bound(quick):
    r = _kind(quick[0], "pram")
    # the prior-only attacker of gamma-amplification stays within rho2* (Ma Sec. 3.1.2) ...
    assert r["prior_only_max_posterior"] <= r["rho2_star"] + 1e-3
    # ... the learning attacker does not (Kifer Sec. 7): most records go above it
    assert r["max_posterior"] > r["rho2_star"] and r["above_rho2_star"] > 0.5
    # against the published value: at this seed and size the attack is ahead by a hair (the
    # full run, with 5x the QI combinations, has it behind): the sign is what is recorded
    assert r["beats_baseline"] == (r["acc_minus_baseline_ci"][0] > 0)
    assert abs(r["acc"] - r["baseline_acc"]) < 0.02
    assert r["converged"] and r["gamma"] == pytest.approx(0.7 / (0.3 / 13), rel=1e-3)
    assert _kind(quick[0], "pram", true=True)["acc"] > r["acc"]


def test_paired_difference_exact_cases():
    truth = np.array([0, 1, 1, 0])
    right = np.eye(2)[truth]
    wrong = np.eye(2)[1 - truth]
    tie = np.full((4, 2), 0.5)
    assert paired_difference(right, right, truth) == (0.0, (0.0, 0.0))
    d, (lo, hi) = paired_difference(right, wrong, truth)
    assert d == 1.0 and lo == hi == 1.0
    d, (lo, hi) = paired_difference(right, tie, truth)  # ties score half a hit
    assert d == 0.5 and lo == hi == 0.5
    mixed = np.vstack([right[:2], wrong[2:]])  # hits 1, 1, 0, 0 against 0.5 each
    d, (lo, hi) = paired_difference(mixed, tie, truth)
    half = 1.959963984540054 * np.std([0.5, 0.5, -0.5, -0.5], ddof=1) / 2
    assert d == pytest.approx(0.0) and (lo, hi) == pytest.approx((-half, half))


def test_pram_control_params_count_the_public_table():
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame(
        {
            "occupation": rng.choice(["a", "b", "c"], n),
            "workclass": rng.choice(["x", "y"], n),
            "relationship": rng.choice(["h", "w"], n),
            "sex": rng.choice(["F", "M"], n),
            "salary": rng.choice(["lo", "hi"], n),
            "age": rng.integers(20, 23, n),
        }
    )
    table = Table.from_pandas(df, domains={"occupation": ["a", "b", "c"]})
    rel = pram(table, columns=["occupation"], keep=["workclass", "relationship", "sex",
               "salary", "age"], p=0.3, rng=1)  # fmt: skip
    qi = ["workclass", "relationship", "sex", "salary", "age"]
    run = run_pram_attack(rel, sensitive="occupation", qi=qi)
    (pi, (theta,)), used = pram_control_params(rel, run, table, alpha=1e-9)
    assert used == n and theta.shape == run.thetas[0].shape
    assert np.allclose(theta.sum(axis=1), 1) and pi.sum() == pytest.approx(1)
    # with (almost) no smoothing the parameters are the public table's own frequencies
    occ = df["occupation"].map({"a": 0, "b": 1, "c": 2}).to_numpy()
    assert pi == pytest.approx(np.bincount(occ) / n, abs=1e-6)
    decoded = [tuple(rel.table.schema[c].domain[k] for c, k in zip(qi, combo))
               for combo in run.kept_combos]  # fmt: skip
    for s in range(3):
        rows = df[occ == s]
        want = [((rows[qi].apply(tuple, axis=1)) == combo).mean() for combo in decoded]
        assert theta[s] == pytest.approx(want, abs=1e-6)
    # Bayes' rule with them runs on the release
    probs = run_pram_attack(rel, sensitive="occupation", qi=qi, params=(pi, [theta]))
    assert np.allclose(probs.posterior.probs.sum(axis=1), 1)
