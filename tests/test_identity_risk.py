"""Identity risk (El Emam's prosecutor / journalist / marketer models, Zayatz's population
uniques): brute force, closed forms."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import hypergeom

import canon_reference as canon
from privlab.errors import ParameterError, PrivlabError
from privlab.metrics.privacy import distinct_l_diversity
from privlab.metrics.risk import identity_risk, zayatz_unique_probability


def _brute(sample, population, threshold):
    """Record by record, with Python loops over tuples."""
    rows = [tuple(r) for r in sample]
    pop = [tuple(r) for r in population]
    f = [sum(1 for q in rows if q == r) for r in rows]
    F = [sum(1 for q in pop if q == r) for r in rows]
    n = len(rows)
    return {
        "prosecutor_max": max(1 / x for x in f),
        "prosecutor_mean": len(set(rows)) / n,
        "prosecutor_share_above": sum(1 / x > threshold for x in f) / n,
        "journalist_max": max(1 / x for x in F),
        "journalist_mean": sum(1 / x for x in F) / n,
        "journalist_share_above": sum(1 / x > threshold for x in F) / n,
        "marketer": sum(1 / x for x in F) / n,  # sum over classes of f_j / F_j, over n
        "sample_uniques": sum(x == 1 for x in f),
        "population_uniques": sum(x == 1 for x in F),
    }


tables = st.integers(1, 30).flatmap(
    lambda n: st.tuples(
        st.lists(st.lists(st.integers(0, 2), min_size=2, max_size=2), min_size=n, max_size=n),
        st.lists(st.lists(st.integers(0, 2), min_size=2, max_size=2), max_size=20),
        st.sampled_from([0.1, 0.2, 0.34, 0.5, 1.0]),
    )
)


@settings(max_examples=150, deadline=None)
@given(tables)
def test_against_brute_force_with_a_population(args):
    sample, extra, threshold = args
    population = sample + extra  # the population holds everyone in the sample
    got = identity_risk(np.array(sample), np.array(population), threshold=threshold)
    want = _brute(sample, population, threshold)
    for k, v in want.items():
        assert getattr(got, k) == pytest.approx(v, abs=1e-12), k
    # the class-size histogram counts every record once
    h = got.class_size_histogram
    assert sum(h["records"]) == len(sample) and sum(h["classes"]) == got.classes


@settings(max_examples=100, deadline=None)
@given(tables)
def test_sample_as_population_and_column_uniqueness(args):
    sample, _, threshold = args
    got = identity_risk(np.array(sample), threshold=threshold, names=["a", "b"])
    want = _brute(sample, sample, threshold)
    assert got.journalist_max == pytest.approx(want["prosecutor_max"])
    assert got.marketer == pytest.approx(got.prosecutor_mean)
    assert got.population_uniques == got.sample_uniques
    for j, (name, share) in enumerate(got.column_uniqueness):
        col = [r[j] for r in sample]
        assert name == "ab"[j]
        assert share == pytest.approx(sum(col.count(v) == 1 for v in col) / len(col))


def test_k_and_l_agree_with_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(5):
        df = pd.DataFrame(
            {"a": rng.integers(0, 3, 60), "b": rng.integers(0, 2, 60), "s": rng.integers(0, 4, 60)}
        )
        risk = identity_risk(df[["a", "b"]].to_numpy())
        rows, qpos = canon.records(df, ["a", "b"])
        assert round(1 / risk.prosecutor_max) == canon.k_anonymity(rows, qpos)
        keys = df["a"] * 2 + df["b"]
        counts = np.zeros((6, 4), dtype=int)
        np.add.at(counts, (keys.to_numpy(), df["s"].to_numpy()), 1)
        assert distinct_l_diversity(counts) == canon.distinct_l(rows, qpos, 2)


def test_zayatz_by_hand_and_its_limits():
    # sample classes: 3 of size 1, 2 of size 2, 1 of size 4 (n = 11) from N = 110
    sizes = np.array([1, 1, 1, 2, 2, 4])
    n, N = 11, 110

    def p1(i):  # exactly one of a class's i members in a sample of n from N
        return math.comb(i, 1) * math.comb(N - i, n - 1) / math.comb(N, n)

    want = 3 * p1(1) / (3 * p1(1) + 2 * p1(2) + 1 * p1(4))
    assert zayatz_unique_probability(sizes, n, N) == pytest.approx(want, rel=1e-12)
    assert p1(2) == pytest.approx(hypergeom(N, 2, n).pmf(1))
    sample = np.repeat(np.arange(6), sizes).reshape(-1, 1)
    r = identity_risk(sample, sampling_fraction=0.1)
    assert r.population_uniques == pytest.approx(3 * want)
    assert r.journalist_max is None and "Zayatz" in r.population_model
    assert identity_risk(sample, population_size=110).population_uniques == r.population_uniques
    # the whole population: population uniques are the sample uniques
    assert identity_risk(sample, sampling_fraction=1.0).population_uniques == 3
    # the summary says how many are population uniques only when that is estimated
    said = [s for s in r.summary_lines() if "unique in the population" in s]
    assert said == [
        f"About {3 * want:,.0f} records are unique in the population as well "
        f"({r.population_model})."
    ]
    unknown = dataclasses.replace(r, population_uniques=None)  # a field that may be unknown
    assert not [s for s in unknown.summary_lines() if "population" in s]
    assert len(unknown.summary_lines()) == len(r.summary_lines()) - 1


def test_zayatz_on_a_sample_of_a_known_population():
    """A 10% sample of 20,000 people over a skewed class distribution: Zayatz's estimate of
    the sample uniques that are population unique, against the truth."""
    rng = np.random.default_rng(1)
    N, n = 20_000, 2_000
    weights = 1.0 / np.arange(1, 4001) ** 1.1
    pop_keys = rng.choice(4000, size=N, p=weights / weights.sum())
    idx = rng.choice(N, size=n, replace=False)
    sample = pop_keys[idx].reshape(-1, 1)
    est = identity_risk(sample, sampling_fraction=n / N).population_uniques
    exact = identity_risk(sample, pop_keys.reshape(-1, 1)).population_uniques
    # measured on this seed: Dankar et al.'s rule takes Pitman's model at this fraction (0.1),
    # 214.4 against 116 true, of 409 sample uniques (Zayatz's alone, the estimate before the
    # rule: 207.3).  Both stand a smooth model in for the population's class sizes, which
    # has fewer small classes, so here they overestimate, by less than a factor 2
    r = identity_risk(sample, sampling_fraction=n / N)
    assert r.population_model == "Dankar et al. 2012 (Pitman), sampling fraction 0.1"
    assert exact < est < 2 * exact


def test_bad_input_is_one_clear_error():
    s = np.array([[0, 1], [1, 1]])
    with pytest.raises(ParameterError, match="threshold"):
        identity_risk(s, threshold=1.5)
    with pytest.raises(ParameterError, match="sampling fraction"):
        identity_risk(s, sampling_fraction=0.0)
    with pytest.raises(ParameterError, match="not both"):
        identity_risk(s, sampling_fraction=0.5, population_size=4)
    with pytest.raises(ParameterError, match="below the 2 records"):
        identity_risk(s, population_size=1)
    with pytest.raises(PrivlabError, match="empty"):
        identity_risk(np.zeros((0, 2), dtype=int))
    with pytest.raises(PrivlabError, match="shape"):
        identity_risk(s, np.array([[0, 1, 2]]))
    with pytest.raises(PrivlabError, match="no match in the population"):
        identity_risk(s, np.array([[0, 1]]), names=["a", "b"])
    # the error names the first record without a match, with its values
    sample = np.array([[0, 1], [5, 6], [7, 8], [0, 1]])
    with pytest.raises(PrivlabError, match=r"^record 1 \(a=5, b=6\) has no match"):
        identity_risk(sample, np.array([[0, 1], [0, 1]]), names=["a", "b"])


def test_the_whole_population_given_as_a_fraction_or_a_size_is_the_default():
    """sampling_fraction=1 and population_size=n say the sample is the population: every
    figure equals the default call's, and the journalist risk equals the exact one computed
    with the sample itself as the population (F = f)."""
    rng = np.random.default_rng(3)
    sample = rng.integers(0, 4, size=(60, 2))
    default = identity_risk(sample, threshold=0.3)
    exact = identity_risk(sample, sample, threshold=0.3)
    for r in (identity_risk(sample, sampling_fraction=1, threshold=0.3),
              identity_risk(sample, population_size=60, threshold=0.3)):  # fmt: skip
        assert r.to_dict() == default.to_dict()
        assert r.journalist_max is not None
        assert r.journalist_max == pytest.approx(exact.journalist_max)
        assert r.journalist_mean == pytest.approx(exact.journalist_mean)
        assert r.journalist_share_above == pytest.approx(exact.journalist_share_above)
        assert r.marketer == pytest.approx(exact.marketer)
        assert r.population_uniques == exact.population_uniques
    # a smaller population than the whole: journalist risk needs one (None), Dankar et al.'s
    # rule (was Zayatz's model alone; at a fraction 60/61 > 0.1 the rule takes the smaller of
    # Zayatz and SNB, here SNB's)
    part = identity_risk(sample, population_size=61, threshold=0.3)
    assert part.journalist_max is None
    assert part.population_model == "Dankar et al. 2012 (SNB), sampling fraction 0.983607"


def test_the_summary_names_exactly_the_columns_that_single_out_more_than_5_percent():
    """A column unique for every record is named with its share; one whose unique records
    are exactly 5% is not ("more than 5%"); without such a column there is no sentence."""
    n = 40
    ids = np.arange(n)
    five = np.r_[np.zeros(n - 2, dtype=int), 1, 2]  # 2 of 40 records unique: exactly 5%
    none = np.arange(n) % 4
    r = identity_risk(np.column_stack([five, ids, none]), names=["five", "id", "none"])
    assert dict(r.column_uniqueness) == {"five": 0.05, "id": 1.0, "none": 0.0}
    flagged = [s for s in r.summary_lines() if "single out more than 5%" in s]
    assert flagged == [
        "Published columns that alone single out more than 5% of the records: id (100.0%)."
    ]
    quiet = identity_risk(np.column_stack([five, none]), names=["five", "none"])
    assert not [s for s in quiet.summary_lines() if "single out" in s]


def test_the_table_of_measures_holds_each_scalar_measure_with_its_value():
    """``to_pandas`` is the report's table: one row per scalar measure, its value as computed
    (four records in classes of sizes 1, 1, 2: prosecutor risk 1 at most, 3/4 on average),
    and none of the per-class or per-column lists."""
    r = identity_risk(np.array([[0], [1], [2], [2]]), names=["zip"])
    frame = r.to_pandas()
    assert list(frame.columns) == ["measure", "value"]
    values = dict(zip(frame["measure"], frame["value"], strict=True))
    assert values["n"] == 4 and values["classes"] == 3
    assert values["prosecutor_max"] == 1.0
    assert values["prosecutor_mean"] == pytest.approx(0.75)
    assert not {"class_size_histogram", "column_uniqueness", "names"} & set(values)


def test_a_sample_that_is_the_whole_population_has_no_unique_to_estimate():
    """Zayatz's estimate when no class of two or more can yield a sample unique (the
    sample is the whole population): the probability is 0, a number, not missing."""
    assert zayatz_unique_probability(np.array([2, 3]), 5, 5) == 0.0
    assert zayatz_unique_probability(np.array([1, 2]), 3, 3) == 1.0


def test_prosecutor_risk_to_dict_holds_every_measure():
    """Classes of 1, 2 and 5 people: max risk 1, mean risk 3 / 8 (each class's people
    count 1 / size each), 3 of 8 people above a threshold of 0.2."""
    from privlab.metrics.risk import prosecutor_risk

    d = prosecutor_risk(np.array([1, 2, 5]), threshold=0.2).to_dict()
    assert d == {"max_risk": 1.0, "mean_risk": 3 / 8, "share_above": 3 / 8, "threshold": 0.2}
    for bad in ([1, 0, 5], [], [2, -1]):  # a class of no one is no class
        with pytest.raises(PrivlabError, match="class sizes must be positive and non-empty"):
            prosecutor_risk(np.array(bad, dtype=np.int64))


def test_the_summary_states_every_figure_and_leaves_out_the_unknown_ones():
    """Four records in classes of sizes 1, 1, 2, half the population (Zayatz): each sentence
    with its figures; a risk without a marketer or population figure says nothing of them."""
    import dataclasses

    r = identity_risk(np.array([[0], [1], [2], [2]]), names=["zip"], sampling_fraction=0.5)
    assert r.summary_lines() == [
        "2 of 4 records (50.0%) are unique on zip: anyone who knows those facts about a "
        "person in the data finds their record.",
        "The smallest group of records sharing those values has 1 record(s), so a record is "
        "re-identified with probability up to 1.00 by someone who knows the person is in the "
        "data (prosecutor risk); 100.0% of the records are above 0.2.",
        "An attacker linking every record to a person would be right for 37.5% of them on "
        "average (marketer risk).",
        "About 1 records are unique in the population as well (Dankar et al. 2012 (Zayatz), "
        "sampling fraction 0.5).",
        "Published columns that alone single out more than 5% of the records: zip (50.0%).",
    ]
    bare = dataclasses.replace(r, marketer=None, population_uniques=None)
    lines = bare.summary_lines()
    assert len(lines) == 3 and lines[:2] == r.summary_lines()[:2]
    assert not [s for s in lines if "marketer" in s or "population" in s]


def test_thresholds_and_fractions_at_their_limits():
    """A threshold of exactly 0 or 1 and a sampling fraction of exactly 1 are accepted, just
    outside they are refused; a record whose risk equals the threshold is not above it; the
    default threshold is 0.2; class sizes must be positive."""
    from privlab.metrics.risk import prosecutor_risk

    sizes = np.array([1, 4, 5])  # record risks 1, 1/4, 1/5
    assert prosecutor_risk(sizes).to_dict() == {
        "max_risk": 1.0, "mean_risk": 0.3, "share_above": 0.5, "threshold": 0.2
    }  # fmt: skip
    assert prosecutor_risk(sizes, threshold=0.25).share_above == 0.1  # 1/4 is not above
    assert prosecutor_risk(sizes, threshold=0.0).share_above == 1.0
    assert prosecutor_risk(sizes, threshold=1.0).share_above == 0.0
    for bad in (-1e-9, 1 + 1e-9):
        with pytest.raises(ParameterError, match="threshold must be in"):
            prosecutor_risk(sizes, threshold=bad)
    for bad in ([], [2, 0], [3, -1]):
        with pytest.raises(PrivlabError, match="positive and non-empty"):
            prosecutor_risk(np.array(bad, dtype=int))
    s = np.repeat(np.arange(3), [1, 4, 5]).reshape(-1, 1)
    r = identity_risk(s)
    assert r.threshold == 0.2 and r.prosecutor_share_above == 0.5 and r.names == ("x0",)
    assert identity_risk(s, threshold=0.0).prosecutor_share_above == 1.0
    assert identity_risk(s, threshold=1.0).journalist_share_above == 0.0
    for bad in (-1e-9, 1 + 1e-9):
        with pytest.raises(ParameterError, match="threshold must be in"):
            identity_risk(s, threshold=bad)
    for bad in (-0.5, 1 + 1e-9):
        with pytest.raises(ParameterError, match="sampling fraction must be in"):
            identity_risk(s, sampling_fraction=bad)
    assert identity_risk(s, sampling_fraction=1.0).journalist_max == 1.0
    assert identity_risk(s, population_size=10).journalist_max == 1.0
    with pytest.raises(PrivlabError, match="2 names for 1 columns"):
        identity_risk(s, names=["a", "b"])
    with pytest.raises(PrivlabError, match="2-d array"):
        identity_risk(np.arange(4))
