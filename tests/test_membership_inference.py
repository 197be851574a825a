"""Membership inference on a synthetic table, judged against the (epsilon, delta)-DP bound
(:mod:`privlab.attacks.membership_inference`): deterministic limits and values by hand, the
statistics of the estimate (a planted leak, the interval's coverage), invariants, and the
finding in ``assess_synthetic``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from privlab.attacks.membership_inference import dp_advantage_bound, membership_inference
from privlab.errors import ParameterError
from privlab.metrics.intervals import difference
from privlab.metrics.synthetic import distance_to_nearest


def _mixed(gen: np.random.Generator, n: int) -> pd.DataFrame:
    """Two continuous columns and a categorical one: no two records alike."""
    return pd.DataFrame(
        {
            "x": gen.normal(size=n),
            "y": gen.exponential(size=n),
            "c": gen.choice(np.array(list("abcde")), size=n),
        }
    )


K, P = 10, 4  # categorical records: P columns of K equally likely values


def _cat(gen: np.random.Generator, n: int, k: int = K, p: int = P) -> pd.DataFrame:
    return pd.DataFrame({f"c{j}": gen.integers(k, size=n).astype(str) for j in range(p)})


def _planted(gen, n: int, f: float, k: int = K, p: int = P):
    """Members, non-members and a synthetic table of ``n`` rows whose first ``f n`` rows copy
    members and the rest are drawn afresh from the population."""
    members, nonmembers = _cat(gen, n, k, p), _cat(gen, n, k, p)
    copied = int(f * n)
    syn = pd.concat([members.iloc[:copied], _cat(gen, n - copied, k, p)], ignore_index=True)
    return syn, members, nonmembers, copied / n


def _true_advantage(threshold: float, f: float, n_syn: int, k: int = K, p: int = P) -> float:
    """``TPR - FPR`` of the rule ``distance < threshold`` on the population of the planted
    leak.  A record independent of the synthetic rows (a non-member, or a member not copied:
    the copies are other members, drawn independently) is at distance ``< threshold`` when
    some synthetic row differs in at most ``j = ceil(threshold p) - 1`` columns; each of the
    ``n_syn`` rows, a uniform record, does so with probability ``Binom(p, 1 - 1/k) <= j``.
    A copied member is at 0.  So ``TPR = f + (1 - f) F``, ``FPR = F``: ``f (1 - F)``."""
    if threshold <= 0:
        return 0.0
    j = math.ceil(threshold * p) - 1
    near = 1.0 - (1.0 - binom.cdf(j, p, 1.0 - 1.0 / k)) ** n_syn
    return f * (1.0 - near)


# --- the bound -----------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [1e-3, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0])
@pytest.mark.parametrize("delta", [0.0, 1e-6, 1e-2, 0.3, 0.9])
def test_bound_is_the_closed_form(epsilon, delta):
    e = math.exp(epsilon)
    assert dp_advantage_bound(epsilon, delta) == pytest.approx(
        min(1.0, (e - 1 + 2 * delta) / (e + 1)), abs=1e-12
    )
    if delta == 0:
        # Yeom et al.'s e^eps - 1 is the weaker bound
        assert dp_advantage_bound(epsilon) <= e - 1


def test_bound_values_cap_and_tightness():
    assert dp_advantage_bound(1.0) == pytest.approx((math.e - 1) / (math.e + 1), abs=1e-15)
    assert dp_advantage_bound(1.0, 0.25) == pytest.approx((math.e - 0.5) / (math.e + 1), abs=1e-15)
    assert dp_advantage_bound(math.log(3)) == pytest.approx(0.5, abs=1e-15)
    # at most 1, reached only in the limit (no overflow for a huge epsilon)
    assert dp_advantage_bound(1e6) == 1.0 and dp_advantage_bound(800.0, 0.5) == 1.0
    assert all(dp_advantage_bound(e, 0.999) <= 1.0 for e in (1e-9, 1.0, 40.0, 1e300))
    # randomized response on one bit (eps-DP) reaches it: report the bit with probability
    # e^eps / (1 + e^eps), call "member" when the report says 1
    eps = 0.7
    keep = math.exp(eps) / (1 + math.exp(eps))
    assert keep - (1 - keep) == pytest.approx(dp_advantage_bound(eps), abs=1e-15)


@pytest.mark.parametrize(
    ("epsilon", "delta", "match"),
    [
        (0.0, 0.0, "epsilon must be a finite number > 0"),
        (-1.0, 0.0, "epsilon must be a finite number > 0"),
        (math.inf, 0.0, "epsilon must be a finite number > 0"),
        (math.nan, 0.0, "epsilon must be a finite number > 0"),
        ("1", 0.0, "epsilon must be a number"),
        (True, 0.0, "epsilon must be a number"),
        (1.0, -0.1, r"delta must lie in \[0, 1\)"),
        (1.0, 1.0, r"delta must lie in \[0, 1\)"),
        (1.0, math.nan, r"delta must lie in \[0, 1\)"),
        (1.0, None, "delta must be a number"),
    ],
)
def test_bad_guarantees_are_refused(epsilon, delta, match):
    with pytest.raises(ParameterError, match=match):
        dp_advantage_bound(epsilon, delta)


# --- deterministic limits and values by hand ---------------------------------------------


def test_newcombe_interval_of_newcombe_1998():
    """Newcombe (1998), Table II, example (a): 56/70 - 48/80, method 10: 0.0524 to 0.3339."""
    d = difference(56, 70, 48, 80)
    assert d.value == pytest.approx(0.2, abs=1e-12)
    assert d.low == pytest.approx(0.0524, abs=5e-5) and d.high == pytest.approx(0.3339, abs=5e-5)
    # example (e): 0/10 - 0/20: -0.1611 to 0.2775
    d = difference(0, 10, 0, 20)
    assert d.low == pytest.approx(-0.1611, abs=5e-5) and d.high == pytest.approx(0.2775, abs=5e-5)


def test_a_copy_of_the_members_is_found_and_breaks_epsilon_1():
    gen = np.random.default_rng(1)
    members, nonmembers = _mixed(gen, 1000), _mixed(gen, 1000)
    r = membership_inference(members.sample(frac=1, random_state=2), members, nonmembers, rng=3)
    assert r.tpr == 1.0 and r.fpr == 0.0 and r.auc == 1.0
    assert r.advantage.value == 1.0 and r.advantage.low > 0.98
    w = r.within(1.0)
    assert w["violated"] and not w["consistent"] and w["bound"] == dp_advantage_bound(1.0)
    assert r.n_members == 500 and r.n_members_select == 500


def test_an_independent_table_is_not_found():
    gen = np.random.default_rng(4)
    members, nonmembers, syn = _mixed(gen, 1000), _mixed(gen, 1000), _mixed(gen, 1000)
    r = membership_inference(syn, members, nonmembers, rng=5)
    a = r.advantage
    assert a.low < 0 < a.high and abs(a.value) < 0.07 and abs(r.auc - 0.5) < 0.05
    w = r.within(1.0)
    assert w["consistent"] and not w["violated"]


def test_rule_threshold_and_auc_by_hand():
    """The rule's threshold is the best of the first halves' (searched here over every
    midpoint), a record is a member when strictly below it, and the AUC is the pairwise
    Mann-Whitney share with ties 1/2; on categorical data, where distances tie."""
    gen = np.random.default_rng(6)
    syn, members, nonmembers, _ = _planted(gen, 60, 0.3, k=3, p=3)
    r = membership_inference(syn, members, nonmembers, rng=7)
    d, m, meas = r.distance, r.member, r.measured
    first_m, first_n = d[m & ~meas], d[~m & ~meas]
    values = np.unique(np.concatenate([first_m, first_n]))
    cands = [0.0, *((values[:-1] + values[1:]) / 2)]
    advs = [(first_m < t).mean() - (first_n < t).mean() for t in cands]
    best = max(advs)
    assert r.selected_advantage == pytest.approx(max(best, 0.0), abs=1e-12)
    assert r.threshold == cands[int(np.argmax(advs))]
    second_m, second_n = d[m & meas], d[~m & meas]
    assert r.tpr == (second_m < r.threshold).mean() and r.fpr == (second_n < r.threshold).mean()
    pairs = (second_m[:, None] < second_n[None, :]) + 0.5 * (second_m[:, None] == second_n)
    assert r.auc == pytest.approx(pairs.mean(), abs=1e-12)
    assert len(np.unique(d)) < 5  # ties do occur
    frame = r.to_pandas()
    assert len(frame) == 120 and frame["called"].equals(pd.Series(d < r.threshold))
    assert (frame["half"] == "measure").sum() == r.n_members + r.n_nonmembers == 60


def test_ties_at_the_threshold_count_as_non_members():
    """Every distance 0 on the first halves and beyond: no threshold helps, no one is called
    (a synthetic table holding every member and every non-member)."""
    gen = np.random.default_rng(8)
    members, nonmembers = _cat(gen, 40), _cat(gen, 40)
    r = membership_inference(pd.concat([members, nonmembers]), members, nonmembers, rng=9)
    assert r.threshold == 0.0 and r.tpr == 0.0 and r.fpr == 0.0 and r.advantage.value == 0
    assert r.auc == 0.5 and r.advantage.low < 0 < r.advantage.high


def test_distance_to_nearest_by_brute_force():
    """Gower's capped distance on the reference's ranges, against the full matrix."""
    gen = np.random.default_rng(10)
    ref, q = _mixed(gen, 50), _mixed(gen, 30)
    q.loc[0, "x"] = 40.0  # far outside the reference's range: that column counts 1
    got = distance_to_nearest(q, ref)
    rx, ry = np.ptp(ref["x"]), np.ptp(ref["y"])
    full = (
        np.minimum(np.abs(q["x"].to_numpy()[:, None] - ref["x"].to_numpy()) / rx, 1)
        + np.minimum(np.abs(q["y"].to_numpy()[:, None] - ref["y"].to_numpy()) / ry, 1)
        + (q["c"].to_numpy()[:, None] != ref["c"].to_numpy())
    ) / 3
    np.testing.assert_allclose(got, full.min(axis=1), atol=1e-12)


def test_bad_input_is_refused():
    gen = np.random.default_rng(11)
    t = _mixed(gen, 10)
    with pytest.raises(ParameterError, match="the members table must be a pandas DataFrame"):
        membership_inference(t, t.to_numpy(), t)
    with pytest.raises(ParameterError, match="the nonmembers table has 1 rows: it needs"):
        membership_inference(t, t, t.head(1))
    with pytest.raises(ParameterError, match="the synthetic table is empty"):
        membership_inference(t.head(0), t, t)
    with pytest.raises(ParameterError, match="the query table has no column 'c'"):
        membership_inference(t, t.drop(columns="c"), t)
    with pytest.raises(ParameterError, match="numeric column 'z' is not a column compared"):
        membership_inference(t, t, t, numeric=["z"])


# --- statistics ----------------------------------------------------------------------------


def test_a_planted_leak_is_measured():
    """30% of the synthetic rows copy members: the advantage is f (1 - F) (see
    ``_true_advantage``), measured within 4 standard errors; 30% more or less is rejected
    by the interval."""
    gen = np.random.default_rng(12)
    syn, members, nonmembers, f = _planted(gen, 2000, 0.3, k=12, p=5)
    r = membership_inference(syn, members, nonmembers, rng=13)
    truth = _true_advantage(r.threshold, f, len(syn), k=12, p=5)
    assert 0.28 < truth < 0.3
    a = r.advantage
    se = math.sqrt(r.tpr * (1 - r.tpr) / r.n_members + r.fpr * (1 - r.fpr) / r.n_nonmembers)
    assert abs(a.value - truth) < 4 * se
    assert a.low <= truth <= a.high
    assert not a.low <= 1.3 * truth <= a.high and not a.low <= 0.7 * truth <= a.high
    assert r.within(1.0)["consistent"] and r.within(0.5)["violated"]


def test_the_interval_covers_the_true_advantage():
    """200 planted leaks (f = 0.2) on 250 records of each kind: the 95% interval covers the
    true advantage of the rule chosen on the first halves at least 90% of the time."""
    covered = []
    for seed in range(200):
        gen = np.random.default_rng(seed)
        syn, members, nonmembers, f = _planted(gen, 250, 0.2)
        r = membership_inference(syn, members, nonmembers, rng=gen)
        truth = _true_advantage(r.threshold, f, len(syn))
        covered.append(r.advantage.low <= truth <= r.advantage.high)
    assert np.mean(covered) >= 0.90


# --- invariants ----------------------------------------------------------------------------


@settings(max_examples=25)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_syn=st.integers(1, 40),
    n_m=st.integers(2, 40),
    n_n=st.integers(2, 40),
    copies=st.floats(0, 1),
)
def test_invariants(seed, n_syn, n_m, n_n, copies):
    gen = np.random.default_rng(seed)
    members, nonmembers = _cat(gen, n_m, k=3, p=2), _cat(gen, n_n, k=3, p=2)
    members["x"] = gen.integers(0, 5, size=n_m).astype(float)
    nonmembers["x"] = gen.integers(0, 5, size=n_n).astype(float)
    syn = pd.concat([members.head(int(copies * min(n_m, n_syn))), nonmembers.head(1)])
    syn = pd.concat([syn, members.sample(n_syn, replace=True, random_state=seed % 1000)])
    r = membership_inference(syn, members, nonmembers, rng=seed)
    a = r.advantage
    assert -1 <= a.low <= a.value <= a.high <= 1
    assert 0 <= r.auc <= 1 and 0 <= r.tpr <= 1 and 0 <= r.fpr <= 1
    assert a.value == pytest.approx(r.tpr - r.fpr, abs=1e-12)
    shuffled = syn.sample(frac=1, random_state=seed % 997)
    again = membership_inference(shuffled, members, nonmembers, rng=seed)
    assert again.to_dict() == r.to_dict()


# --- the report ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult():
    from privlab.data.datasets import load_dataset

    cols = ["age", "sex", "race", "education", "hours-per-week", "fnlwgt", "occupation"]
    df = load_dataset("adult").to_pandas()[cols]
    gen = np.random.default_rng(14)
    idx = gen.permutation(len(df))
    train = df.iloc[idx[:1000]].reset_index(drop=True)
    control = df.iloc[idx[1000:2000]].reset_index(drop=True)
    indep = pd.DataFrame({c: gen.choice(train[c].to_numpy(), size=1000) for c in cols})
    return train, control, indep


def test_assess_synthetic_judges_membership_against_the_guarantee(adult, tmp_path, monkeypatch):
    from privlab.attacks import anonymeter
    from privlab.errors import MissingDependencyError
    from privlab.report.assess import Roles
    from privlab.report.synthetic import assess_synthetic

    def missing():  # Anonymeter's criteria are other tests'; this one stays fast
        raise MissingDependencyError("anonymeter is not installed")

    monkeypatch.setattr(anonymeter, "_import_anonymeter", missing)
    train, control, indep = adult
    roles = Roles(quasi_identifiers=("age", "sex", "race", "education"), sensitive="occupation",
                  keep=("hours-per-week", "fnlwgt"), kind="synthetic")  # fmt: skip
    train.sample(frac=1, random_state=1).to_csv(tmp_path / "copy.csv", index=False)
    indep.to_csv(tmp_path / "indep.csv", index=False)

    def finding(rep):
        return next(f for f in rep.verdict["findings"] if f["reason"].startswith("membership"))

    copy = assess_synthetic(tmp_path / "copy.csv", train, roles, control=control,
                            attack_salt=1, epsilon=1.0)  # fmt: skip
    m = copy.identity["membership"]
    assert m["measured"] and m["dp"]["violated"] and m["advantage"]["low"] > 0.9
    f = finding(copy)
    assert f["level"] == "FAIL" and copy.verdict["level"] == "FAIL"
    assert "above the 46.2% that its (epsilon = 1, delta = 0) differential privacy" in f["reason"]
    assert "discloses membership beyond what its guarantee allows" in f["reason"]
    html = copy.to_html()
    assert "membership advantage" in html and "this one does" in html
    # without a guarantee the same copy is a REVIEW: members are told from the control
    plain = assess_synthetic(tmp_path / "copy.csv", train, roles, control=control, attack_salt=1)
    assert plain.identity["membership"]["dp"] is None
    assert finding(plain)["level"] == "REVIEW"
    assert "told apart from others" in finding(plain)["reason"]

    ind = assess_synthetic(tmp_path / "indep.csv", train, roles, control=control,
                           attack_salt=1, epsilon=1.0, delta=1e-6)  # fmt: skip
    f = finding(ind)
    assert f["level"] == "PASS" and not ind.identity["membership"]["dp"]["violated"]
    assert "within the 46.2% that its (epsilon = 1, delta = 1e-06)" in f["reason"]
    # no control: not measured
    none = assess_synthetic(tmp_path / "indep.csv", train, roles, attack_salt=1, epsilon=1.0)
    assert not none.identity["membership"]["measured"]
    assert "not measured (it needs a control set" in finding(none)["reason"]
    assert "Not measured: it needs a control set" in none.to_html()
    with pytest.raises(ParameterError, match="epsilon must be a finite number > 0"):
        assess_synthetic(tmp_path / "indep.csv", train, roles, control=control, epsilon=0.0)
    with pytest.raises(ParameterError, match="was given without epsilon"):
        assess_synthetic(tmp_path / "indep.csv", train, roles, control=control, delta=0.1)
