"""The alpha-beta algorithm (Rastogi, Suciu & Hong 2007): limits, statistics, invariants,
the exact posterior by enumeration, the release model and bad input."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from privlab.data import Table
from privlab.data.schema import Attribute, Role, Schema
from privlab.errors import MemoryBudgetError, ParameterError, PrivacyWarning, SchemaError
from privlab.publish import load_release
from privlab.publish.alpha_beta import (
    AlphaBetaRelease,
    _distinct_uniform,
    _rank_to_cell,
    alphabeta,
    check_parameters,
    choose_parameters,
    estimator_variance,
    given_gamma,
    is_private,
    parse_where,
    posterior,
    sample_view,
    utility_guarantee,
)

DOMAINS = {"a": ["x", "y", "z"], "b": ["0", "1", "2", "3"], "c": ["u", "v"]}  # m = 24


def _frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["a", "b", "c"])


def _table(seed=0, n=40) -> Table:
    g = np.random.default_rng(seed)
    df = pd.DataFrame({k: g.choice(v, size=n) for k, v in DOMAINS.items()})
    return Table.from_pandas(df, domains=DOMAINS)


def _cells(rel: AlphaBetaRelease) -> set[tuple]:
    return set(map(tuple, rel.to_pandas().astype(str).to_numpy()))


# -- deterministic limits ---------------------------------------------------------------------
def test_beta_zero_alpha_one_publishes_the_data_and_the_estimator_is_exact():
    t = _table()
    rel = alphabeta(t, alpha=1.0, beta=0.0, rng=np.random.default_rng(3))
    truth = set(map(tuple, t.to_pandas().astype(str).to_numpy()))
    assert _cells(rel) == truth and rel.n_rows == len(truth)
    assert rel.is_real.all()
    df = t.to_pandas().drop_duplicates()
    for where in ({}, {"a": "x"}, {"a": ["x", "z"], "c": "v"}, {"b": "3", "c": "u"}):
        mask = np.ones(len(df), bool)
        for col, vals in where.items():
            mask &= df[col].isin([vals] if isinstance(vals, str) else vals).to_numpy()
        e = rel.estimate(where)
        assert e.estimate == mask.sum()
        assert e.sd == 0.0 and e.sd_max == 0.0


def test_beta_zero_keeps_only_real_tuples_and_divides_by_alpha():
    t = _table(1)
    rel = alphabeta(t, alpha=0.5, beta=0.0, rng=np.random.default_rng(0))
    assert rel.is_real.all()
    e = rel.estimate({"a": "y"})
    assert e.estimate == e.n_view / 0.5
    # Q(D) is computed combinatorially: 1 * 4 * 2 cells have a = y
    assert e.n_domain == 8 and rel.estimate().n_domain == 24


def test_alpha_plus_beta_one_keeps_every_real_tuple():
    t = _table(2)
    rel = alphabeta(t, alpha=0.6, beta=0.4, rng=np.random.default_rng(0))
    real = set(map(tuple, t.to_pandas().astype(str).to_numpy()))
    view = rel.to_pandas().astype(str).to_numpy()
    assert real <= _cells(rel)
    assert [tuple(r) in real for r in view] == list(rel.is_real)


def test_theorem_4_3_parameters_give_posterior_gamma_exactly():
    for d, gamma in [(0.01, 0.1), (0.1, 0.5), (0.2, 0.3)]:
        a, b = choose_parameters(d, gamma)
        assert a + b == pytest.approx(1 - d / gamma, abs=1e-15)
        assert b / (a + b) == pytest.approx(d * (1 - gamma) / (gamma * (1 - d)), rel=1e-12)
        assert float(posterior(d, a, b, True)) == pytest.approx(gamma, rel=1e-12)
        assert is_private(a, b, d, gamma)
        # a little more retention breaks the positive-leakage bound
        assert not is_private(a + 0.01, b * 0.9, d, gamma)


def test_rank_to_cell_is_the_rth_cell_outside_the_data():
    real = np.array([0, 3, 4, 9])
    outside = [c for c in range(12) if c not in real]
    assert _rank_to_cell(np.arange(8), real).tolist() == outside


def test_estimator_variance_closed_form():
    assert estimator_variance(10, 30, 0.5, 0.2) == pytest.approx(
        (10 * 0.7 * 0.3 + 20 * 0.2 * 0.8) / 0.25
    )


def test_estimator_variance_refuses_a_count_outside_0_to_n_d():
    """Q(I) counts tuples of the domain's answer, so 0 <= Q(I) <= Q(D): a negative count and
    one above Q(D) are each refused; the ends are fine (Q(I) = Q(D) leaves only the real
    tuples' variance)."""
    for q in (-1, 31, [5, -2], [5, 40]):
        with pytest.raises(ParameterError, match=r"Q\(I\) must lie in \[0, Q\(D\)\]"):
            estimator_variance(q, 30, 0.5, 0.2)
    assert estimator_variance(0, 30, 0.5, 0.2) == pytest.approx(30 * 0.2 * 0.8 / 0.25)
    assert estimator_variance(30, 30, 0.5, 0.2) == pytest.approx(30 * 0.7 * 0.3 / 0.25)


# -- statistical (fixed seed, Monte Carlo) ---------------------------------------------------
M, REAL = 400, np.arange(0, 400, 5)  # 80 real cells of 400
ALPHA, BETA = 0.55, 0.15


def _monte_carlo(reps=4000, seed=11):
    g = np.random.default_rng(seed)
    query = np.arange(100, 300)  # a range query: Q(D) = 200, Q(I) = 40
    ests, fakes = np.empty(reps), np.empty(reps)
    inclusion = np.zeros(M)
    for r in range(reps):
        cells, real = sample_view(REAL, M, ALPHA, BETA, g)
        n_v = np.isin(cells, query).sum()
        ests[r] = (n_v - BETA * query.size) / ALPHA
        fakes[r] = (~real).sum()
        inclusion[cells] += 1
    return ests, fakes, inclusion


@pytest.fixture(scope="module")
def monte_carlo():
    return _monte_carlo()


def test_estimator_is_unbiased(monte_carlo):
    ests, _, _ = monte_carlo
    var = float(estimator_variance(40, 200, ALPHA, BETA))
    se = math.sqrt(var / ests.size)
    assert abs(ests.mean() - 40) < 4 * se  # 4 standard errors (about 0.43 here)


def test_estimator_variance_matches_the_formula_and_rejects_30_percent(monte_carlo):
    ests, _, _ = monte_carlo
    var = float(estimator_variance(40, 200, ALPHA, BETA))
    ratio = ests.var(ddof=1) / var
    assert abs(ratio - 1) < 0.10  # sd of the ratio: sqrt(2/3999) = 2.2%
    for wrong in (0.7 * var, 1.3 * var):
        assert abs(ests.var(ddof=1) / wrong - 1) > 0.10


def test_inserted_tuples_are_binomial_and_uniform_outside_the_data(monte_carlo):
    _, fakes, inclusion = monte_carlo
    reps, outside = fakes.size, M - REAL.size
    assert abs(fakes.mean() - outside * BETA) < 4 * math.sqrt(outside * BETA * (1 - BETA) / reps)
    assert abs(fakes.var(ddof=1) / (outside * BETA * (1 - BETA)) - 1) < 0.10
    # every cell is in the view with its probability: chi-square over the cells
    p = np.full(M, BETA)
    p[REAL] = ALPHA + BETA
    chi2 = (((inclusion - reps * p) ** 2) / (reps * p * (1 - p))).sum()
    assert stats.chi2.sf(chi2, M) > 1e-3
    # and a 30% wrong insertion rate is rejected
    q = p.copy()
    q[np.setdiff1d(np.arange(M), REAL)] = 1.3 * BETA
    chi2_wrong = (((inclusion - reps * q) ** 2) / (reps * q * (1 - q))).sum()
    assert stats.chi2.sf(chi2_wrong, M) < 1e-6


def test_utility_guarantee_holds_for_the_worst_query():
    g = np.random.default_rng(5)
    n, m, a, b, eps = 60, 300, 0.5, 0.1, 0.1
    real = np.sort(g.choice(m, n, replace=False))
    u = utility_guarantee(n, m, a, b, eps)
    # Bernstein's exponential tail beats Chebyshev for small epsilon
    tight = utility_guarantee(n, m, a, b, 0.001)
    assert tight.rho == tight.rho_bernstein < tight.rho_chebyshev
    errs = np.array([(sample_view(real, m, a, b, g)[0].size - b * m) / a - n for _ in range(3000)])
    assert np.mean(np.abs(errs) >= u.rho * math.sqrt(n)) <= eps
    assert errs.var() == pytest.approx(u.var_max, rel=0.1)


def test_whole_view_distribution_on_a_tiny_domain():
    """Pr[V | I] of the sampler against the product of the per-cell probabilities."""
    g = np.random.default_rng(2)
    m, real, a, b, reps = 4, np.array([1, 2]), 0.5, 0.3, 20000
    counts: dict[tuple, int] = {}
    for _ in range(reps):
        v = tuple(sample_view(real, m, a, b, g)[0].tolist())
        counts[v] = counts.get(v, 0) + 1
    exp, obs = [], []
    for bits in itertools.product([0, 1], repeat=m):
        v = tuple(c for c in range(m) if bits[c])
        p = math.prod(
            (a + b if c in real else b) if bits[c] else (1 - a - b if c in real else 1 - b)
            for c in range(m)
        )
        exp.append(reps * p)
        obs.append(counts.get(v, 0))
    assert stats.chisquare(obs, exp).pvalue > 1e-3


# -- the exact posterior by enumeration ------------------------------------------------------
def test_posterior_by_enumeration_of_instances_and_views():
    a, b = 0.4, 0.25
    priors = np.array([0.05, 0.2, 0.5])  # a tuple-independent adversary on 3 cells
    cells = range(3)
    subsets = [
        frozenset(c for c in cells if bits[c]) for bits in itertools.product([0, 1], repeat=3)
    ]

    def p_inst(inst):
        return math.prod(priors[c] if c in inst else 1 - priors[c] for c in cells)

    def p_view(view, inst):
        return math.prod(
            (a + b if c in inst else b) if c in view else (1 - a - b if c in inst else 1 - b)
            for c in cells
        )

    for view in subsets:
        joint = {inst: p_inst(inst) * p_view(view, inst) for inst in subsets}
        total = sum(joint.values())
        for t in cells:
            exact = sum(p for inst, p in joint.items() if t in inst) / total
            assert float(posterior(priors[t], a, b, t in view)) == pytest.approx(exact, rel=1e-12)


# -- invariants (hypothesis) --------------------------------------------------------------------
@given(
    m=st.integers(1, 300),
    frac=st.floats(0, 1),
    a=st.floats(0.01, 1.0),
    bshare=st.floats(0, 1),
    seed=st.integers(0, 2**32 - 1),
)
def test_view_invariants(m, frac, a, bshare, seed):
    g = np.random.default_rng(seed)
    b = min(bshare * (1 - a), 0.999)
    real = np.sort(g.choice(m, int(frac * m), replace=False))
    cells, is_real = sample_view(real, m, a, b, g)
    assert np.all(np.diff(cells) > 0)  # a sorted set: the order says nothing
    assert cells.size == 0 or (cells[0] >= 0 and cells[-1] < m)
    assert np.array_equal(np.isin(cells, real), is_real)


@given(total=st.integers(1, 5000), share=st.floats(0, 1), seed=st.integers(0, 2**32 - 1))
def test_distinct_uniform_draws_k_distinct_values(total, share, seed):
    k = int(share * total)
    out = _distinct_uniform(total, k, np.random.default_rng(seed))
    assert out.size == k and np.unique(out).size == k
    assert k == 0 or (out.min() >= 0 and out.max() < total)


@given(d=st.floats(1e-4, 0.9), ratio=st.floats(1.01, 50), p=st.floats(0, 1))
def test_theorem_4_3_implies_both_conditions_on_the_exact_posteriors(d, ratio, p):
    gamma = min(d * ratio, 0.999)
    if gamma <= d:
        return
    a, b = choose_parameters(d, gamma)
    prior = p * d  # any prior up to d
    post_in = float(posterior(prior, a, b, True))
    post_out = float(posterior(prior, a, b, False))
    assert 0 <= post_out <= prior <= post_in <= gamma + 1e-9
    if prior > 0:
        assert post_out / prior >= d / gamma - 1e-9
    assert is_private(a, b, d, gamma)


# -- the release -----------------------------------------------------------------------------
def test_save_load_roundtrip_and_custody(tmp_path):
    rel = alphabeta(_table(), d=0.1, gamma=0.4, rng=12345)
    rel.save(tmp_path / "rel", custody=tmp_path / "cus")
    meta = json.loads((tmp_path / "rel" / "release.json").read_text())
    assert meta["method"] == "alphabeta" and meta["parameters"]["domain_size"] == 24
    # the whole declared domain is published (the estimator needs it)
    assert [a["domain"] for a in meta["schema"]["attributes"]] == list(DOMAINS.values())
    text = "".join(f.read_text() for f in (tmp_path / "rel").iterdir())
    assert str(rel.custody.seed.salt) not in text and "12345" not in text
    assert "real" not in (tmp_path / "rel" / "view.csv").read_text().splitlines()[0]
    back = load_release(tmp_path / "rel", custody=tmp_path / "cus")
    assert isinstance(back, AlphaBetaRelease)
    assert (back.alpha, back.beta, back.d, back.gamma) == (rel.alpha, rel.beta, 0.1, 0.4)
    assert np.array_equal(back.is_real, rel.is_real)
    with pytest.raises(ParameterError, match="only the custody knows which rows are real"):
        load_release(tmp_path / "rel").is_real  # noqa: B018 (without its custody)
    assert back.estimate({"c": "v"}) == rel.estimate({"c": "v"})
    details = back.privacy().details
    assert details["private"] and details["posterior_in_view"] == pytest.approx(0.4)
    # the custody replays the release exactly
    again = alphabeta(_table(), d=0.1, gamma=0.4, rng=back.custody.replay())
    assert _cells(again) == _cells(rel)


def test_duplicates_collapse_into_a_set():
    df = _frame([["x", "0", "u"]] * 5 + [["y", "1", "v"]])
    rel = alphabeta(
        Table.from_pandas(df, domains=DOMAINS), alpha=1.0, beta=0.0, rng=np.random.default_rng(0)
    )
    assert rel.n_rows == 2


def test_undeclared_domain_is_a_privacy_warning():
    df = _frame([["x", "0", "u"], ["y", "1", "v"]])
    with pytest.warns(PrivacyWarning, match="read from the data"):
        alphabeta(df, alpha=0.5, beta=0.1, rng=np.random.default_rng(0))


def test_parameters_not_private_warn():
    with pytest.warns(PrivacyWarning, match="not \\(0.1, 0.2\\)-private"):
        alphabeta(_table(), alpha=0.9, beta=0.05, d=0.1, gamma=0.2, rng=np.random.default_rng(0))


# -- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"alpha": 0.7, "beta": 0.4}, "alpha + beta = 1.1 exceeds 1"),
        ({"alpha": 0.0, "beta": 0.4}, "alpha = 0"),
        ({"alpha": 0.5, "beta": -0.1}, "beta = -0.1"),
        ({"alpha": 0.5, "beta": 1.0}, "beta = 1 must lie in [0, 1)"),
        ({"d": 0.3, "gamma": 0.3}, "gamma = 0.3 must exceed d = 0.3"),
        ({"d": 0.5, "gamma": 0.2}, "gamma = 0.2 must exceed d = 0.5"),
        ({"d": 0.0, "gamma": 0.2}, "d = 0"),
        ({"d": 1.0, "gamma": 0.2}, "d = 1 must lie in (0, 1)"),
        ({"d": 0.2, "gamma": 0.0}, "gamma = 0 must lie in (0, 1)"),
        ({"d": 0.2, "gamma": 1.0}, "gamma = 1 must lie in (0, 1)"),
        ({"alpha": 0.5}, "give both alpha and beta"),
        ({}, "give alpha and beta, or d and gamma"),
        ({"d": 0.1}, "give alpha and beta, or d and gamma"),
        ({"gamma": 0.4}, "give alpha and beta, or d and gamma"),
        ({"alpha": float("nan"), "beta": 0.1}, "alpha must be a number, got nan"),
    ],
)
def test_bad_parameters_name_the_value(kwargs, needle):
    with pytest.raises(ParameterError) as e:
        alphabeta(_table(), rng=np.random.default_rng(0), **kwargs)
    assert needle in str(e.value)


def test_unknown_column_and_bad_query():
    with pytest.raises(SchemaError, match="nope"):
        alphabeta(_table(), columns=["a", "nope"], alpha=0.5, beta=0.1)
    rel = alphabeta(_table(), alpha=0.5, beta=0.1, rng=np.random.default_rng(0))
    with pytest.raises(SchemaError, match="'w' is not in the domain of 'a'"):
        rel.estimate({"a": "w"})
    with pytest.raises(SchemaError, match="zz"):
        rel.estimate({"zz": "1"})
    with pytest.raises(SchemaError, match="must look like"):
        parse_where(["a"])


def test_domain_too_large_to_index_names_its_size():
    big = [Attribute(f"c{i}", tuple(range(100_000)), Role.QI, True, True) for i in range(4)]
    t = Table(np.zeros((2, 4), dtype=np.int64), Schema(tuple(big)))
    with pytest.raises(ParameterError, match=r"1\.000e\+20 tuples"):
        alphabeta(t, alpha=0.5, beta=0.0)


def test_view_too_large_for_memory_is_refused(monkeypatch):
    monkeypatch.setenv("PRIVLAB_MEMORY_LIMIT", "1MB")
    big = [Attribute(f"c{i}", tuple(range(1000)), Role.QI, True, True) for i in range(3)]
    t = Table(np.zeros((2, 3), dtype=np.int64), Schema(tuple(big)))
    with pytest.raises(MemoryBudgetError, match="inserted"):
        alphabeta(t, alpha=0.5, beta=0.1)


def test_check_parameters_and_guarantee_bounds():
    assert check_parameters(0.3, 0.7) == (0.3, 0.7)
    with pytest.raises(ParameterError, match="epsilon = 1"):
        utility_guarantee(10, 100, 0.5, 0.1, 1.0)
    with pytest.raises(ParameterError, match="n = 200, m = 100"):
        utility_guarantee(200, 100, 0.5, 0.1, 0.1)


# -- the guarantee as given (issue 29, part 6) -------------------------------------------------
def test_given_gamma_is_the_smallest_gamma_that_holds():
    for d, gamma in [(0.01, 0.1), (0.1, 0.5), (0.2, 0.3)]:  # Thm 4.3's parameters give gamma
        a, b = choose_parameters(d, gamma)
        assert given_gamma(a, b, d) == pytest.approx(gamma, rel=1e-12)
    for a, b, d in [(0.6, 0.1, 0.1), (0.5, 0.2, 0.05), (0.3, 0.01, 0.2), (0.2, 0.01, 0.5)]:
        g = given_gamma(a, b, d)
        assert is_private(a, b, d, g) and not is_private(a, b, d, g * (1 - 1e-6))
    assert given_gamma(0.5, 0.0, 0.1) is None  # no insertion: a tuple in the view is real
    assert given_gamma(0.7, 0.3, 0.1) is None  # alpha + beta = 1: absence says "not real"
    assert given_gamma(0.9, 0.05, 0.1) is None  # absence lowers the prior below d / 1


def test_parameters_not_private_record_the_gamma_they_give(tmp_path):
    t = Table.from_pandas(_frame([["x", "0", "u"]]), domains=DOMAINS)  # n/m = 1/24 < d
    with pytest.warns(PrivacyWarning, match="not \\(0.1, 0.2\\)-private") as seen:
        rel = alphabeta(t, alpha=0.6, beta=0.1, d=0.1, gamma=0.2, rng=5)
    given = given_gamma(0.6, 0.1, 0.1)
    assert f"records what they give at d = 0.1: gamma = {given:.4g}" in str(seen[0].message)
    assert rel.gamma == pytest.approx(given) and rel.params["requested_gamma"] == 0.2
    rel.save(tmp_path / "r", custody=tmp_path / "c")
    meta = json.loads((tmp_path / "r" / "release.json").read_text())
    assert given > 0.2 and meta["parameters"]["gamma"] == pytest.approx(given)
    assert meta["parameters"]["requested_gamma"] == 0.2
    assert meta["guarantee"]["gamma"] == pytest.approx(given)
    back = load_release(tmp_path / "r")
    assert back.gamma == pytest.approx(given) and back.privacy().details["private"]
    # parameters that give no gamma below 1 at d record none
    with pytest.warns(PrivacyWarning, match="no gamma below 1"):
        # (a generator of the test's own: from a salted seed the one-row view is empty
        # about once in 70 runs, 0.05 x 0.95^23, and an empty release has no privacy figures)
        none = alphabeta(t, alpha=0.9, beta=0.05, d=0.1, gamma=0.2, rng=np.random.default_rng(5))
    assert none.gamma is None and none.d == 0.1 and not none.privacy().details["private"]


def test_publish_warns_when_the_share_of_real_tuples_exceeds_d():
    import warnings

    many = _table(0, n=200)  # most of the 24 tuples of the domain are real: n/m > 0.05
    n = len(set(map(tuple, many.codes.tolist())))
    assert n / 24 > 0.05
    with pytest.warns(PrivacyWarning, match="vacuous") as seen:
        alphabeta(many, d=0.05, gamma=0.5, rng=3)
    assert [w for w in seen if f"n/m = {n / 24:.2g}" in str(w.message)]
    one = Table.from_pandas(_frame([["x", "0", "u"]]), domains=DOMAINS)  # n/m = 1/24 < d
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        alphabeta(one, d=0.05, gamma=0.5, rng=3)
    # without d no guarantee is claimed, so nothing is vacuous
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        alphabeta(many, alpha=0.5, beta=0.1, rng=3)


def test_release_json_states_the_guarantee_from_the_view_alone(tmp_path):
    many = _table(0, n=14)  # fewer distinct tuples than the domain's 24 cells
    rel = alphabeta(many, d=0.05, gamma=0.5, rng=np.random.default_rng(3))
    rel.save(tmp_path / "r", custody=tmp_path / "c", not_for_publication=True)
    meta = json.loads((tmp_path / "r" / "release.json").read_text())
    g = meta["guarantee"]
    view = pd.read_csv(tmp_path / "r" / "view.csv")
    a, b = meta["parameters"]["alpha"], meta["parameters"]["beta"]
    share = (len(view) - b * 24) / (a * 24)  # what anyone computes from the view
    assert g["estimated_real_share"] == pytest.approx(min(max(share, 0), 1))
    assert g["posterior_at_estimated_share"] == pytest.approx(
        float(posterior(g["estimated_real_share"], a, b))
    )
    assert g["d"] == 0.05 and g["gamma"] == pytest.approx(0.5)
    assert g["vacuous"] and "vacuous" in g["statement"]
    details = load_release(tmp_path / "r").privacy().details
    assert details["private"] and details["guarantee_vacuous"]
    # n, the input's number of distinct tuples, is written nowhere public: no number in
    # release.json but the view's own estimate equals n or n/m
    n = len(set(map(tuple, many.codes.tolist())))

    def numbers(obj, path=()):
        if isinstance(obj, dict):
            for k, v in obj.items():
                yield from numbers(v, (*path, k))
        elif isinstance(obj, list):
            for v in obj:
                yield from numbers(v, path)
        elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
            yield path, obj

    from_view = {
        ("guarantee", "estimated_real_share"),
        ("guarantee", "posterior_at_estimated_share"),
    }
    leaked = [
        p
        for p, v in numbers(meta)
        if p not in from_view and p[0] != "tables" and v in (n, n / 24)  # tables: view rows
    ]
    assert leaked == [], leaked
    # a view with few real tuples is not vacuous (drawn from a fixed generator: from an int
    # seed, salted with OS entropy, a rare view estimates a share above d and failed CI once)
    few = alphabeta(Table.from_pandas(_frame([["x", "0", "u"]]), domains=DOMAINS), d=0.2,
                    gamma=0.6, rng=np.random.default_rng(4))  # fmt: skip
    assert few.guarantee()["vacuous"] is False


def test_the_share_warning_is_for_shares_above_d_and_points_at_the_caller():
    """The (d, gamma) guarantee covers priors up to d: a share of real tuples of exactly d
    (1 of the 24 cells, d = 1/24) is covered, so nothing is vacuous; above d the warning is
    raised at the caller's line (this file), where the parameters were chosen."""
    import warnings

    one = Table.from_pandas(_frame([["x", "0", "u"]]), domains=DOMAINS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        alphabeta(one, d=1 / 24, gamma=0.5, rng=3)
    with pytest.warns(PrivacyWarning, match="vacuous") as seen:
        alphabeta(one, d=1 / 25, gamma=0.5, rng=3)
    vacuous = [w for w in seen if "vacuous" in str(w.message)]
    assert vacuous and all(w.filename == __file__ for w in vacuous)


def test_a_domain_of_2_to_the_62_tuples_is_refused_with_what_to_do():
    """62 binary columns make 2^62 tuples, one more than an int64 key can index from 0:
    refused before anything is drawn, with the way out (drop columns or merge values)."""
    cols = [f"x{i}" for i in range(62)]
    df = pd.DataFrame({c: ["0", "1"] for c in cols})
    table = Table.from_pandas(df, domains={c: ["0", "1"] for c in cols})
    with pytest.raises(ParameterError, match=r"too many to index .* drop columns or merge"):
        alphabeta(table, alpha=0.5, beta=0.1, rng=3)
    # one column fewer (2^61 tuples) passes the check (and is then refused for memory)
    with pytest.raises(MemoryBudgetError):
        alphabeta(table, columns=cols[:61], alpha=0.5, beta=0.1, rng=3)


def test_utility_guarantee_at_n_equal_m():
    """n = m (every tuple of the domain is real) is allowed: ``Var_max = n (a+b)(1-a-b) /
    a^2`` = 5 * 0.6 * 0.4 / 0.25 = 4.8, ``rho_chebyshev = sqrt(4.8 / (5 * 0.1))``; n = m + 1
    is refused."""
    g = utility_guarantee(5, 5, 0.5, 0.1, 0.1)
    assert g.var_max == pytest.approx(4.8) and g.rho_chebyshev == pytest.approx(math.sqrt(9.6))
    with pytest.raises(ParameterError, match="n = 6, m = 5"):
        utility_guarantee(6, 5, 0.5, 0.1, 0.1)


def test_an_empty_view_has_no_rows():
    """alpha = 0.01, beta = 0 on one real tuple: the view is empty (this seed drops it):
    no row, no truth, the estimate 0."""
    t = Table.from_pandas(pd.DataFrame({"a": ["x"]}), domains={"a": ["x", "y"]})
    with pytest.warns(Warning):
        rel = alphabeta(t, alpha=0.01, beta=0.0, rng=np.random.default_rng(0))
    assert rel.n_rows == 0 and len(rel.to_pandas()) == 0 and rel.is_real.size == 0
    assert rel.table.codes.shape == (0, 1)
    e = rel.estimate()
    assert e.n_view == 0 and e.estimate == 0.0 and e.n_domain == 2


def test_alpha_plus_beta_may_exceed_1_by_rounding_only():
    """``alpha + beta <= 1`` with a tolerance of 1e-12 for rounding: exactly 1 + 1e-12 is
    accepted (beta then clipped to 1 - alpha), anything beyond refused."""
    assert check_parameters(1.0, 1e-12) == (1.0, 0.0)
    assert check_parameters(0.25, 0.75) == (0.25, 0.75)
    with pytest.raises(ParameterError, match="exceeds 1"):
        check_parameters(1.0, 1e-11)


def test_the_view_memory_estimate_is_64_bytes_per_row_and_column(monkeypatch):
    """The view is refused when ``64 (columns + 1) (alpha n + beta m)`` bytes exceed the
    budget: ten real tuples of one column kept whole (alpha = 1, beta = 0) need exactly
    64 * 2 * 10 = 1280 bytes, which a budget of 1280 bytes allows and 1279 refuses."""
    t = Table.from_pandas(pd.DataFrame({"a": list(range(10))}), domains={"a": list(range(20))})
    monkeypatch.setenv("PRIVLAB_MEMORY_LIMIT", "1280")
    rel = alphabeta(t, alpha=1.0, beta=0.0, rng=np.random.default_rng(0))
    assert rel.n_rows == 10
    monkeypatch.setenv("PRIVLAB_MEMORY_LIMIT", "1279")
    with pytest.raises(MemoryBudgetError, match="about 10 rows"):
        alphabeta(t, alpha=1.0, beta=0.0, rng=np.random.default_rng(0))


def test_is_private_holds_at_its_bounds_within_rounding():
    """Both conditions of Thm 4.3 hold at equality, within 1e-12 for rounding: the
    posterior at prior d equal to gamma + 1e-12, and the negative-leakage ratio
    ``(1-a-b)/(1-b)`` equal to ``d/gamma - 1e-12``; given_gamma refuses d = 0."""
    post = float(posterior(0.1, 0.3, 0.1, True))  # 0.03 / 0.12 = 4/13
    gamma = post - 1e-12
    assert gamma + 1e-12 == post and is_private(0.3, 0.1, 0.1, gamma)
    assert not is_private(0.3, 0.1, 0.1, gamma - 1e-9)
    ratio = (1.0 - 0.5 - 0.3) / (1.0 - 0.3)
    gamma = 0.1 / (ratio + 1e-12)
    assert 0.1 / gamma - 1e-12 == ratio and is_private(0.5, 0.3, 0.1, gamma)
    assert not is_private(0.5, 0.3, 0.1, gamma * (1 - 1e-9))
    with pytest.raises(ParameterError, match="d = 0 must lie in"):
        given_gamma(0.5, 0.1, 0.0)


def test_parameter_boundaries_of_the_guarantees():
    """given_gamma refuses d = 1 and gives None when alpha + beta = 1 (no tuple is left out,
    so a tuple outside the view is surely not real); utility_guarantee takes n = 1 and
    refuses epsilon = 0."""
    with pytest.raises(ParameterError, match="d = 1 must lie in"):
        given_gamma(0.5, 0.1, 1.0)
    assert given_gamma(0.5, 0.5, 0.1) is None
    g = utility_guarantee(1, 4, 0.5, 0.25, 0.5)
    # Var_max = [1 * 0.75 * 0.25 + 3 * 0.25 * 0.75] / 0.25 = 3
    assert g.var_max == pytest.approx(3.0) and g.rho_chebyshev == pytest.approx(math.sqrt(6.0))
    with pytest.raises(ParameterError, match="n = 0, m = 4"):
        utility_guarantee(0, 4, 0.5, 0.25, 0.5)
    with pytest.raises(ParameterError, match="epsilon = 0 must lie in"):
        utility_guarantee(1, 4, 0.5, 0.25, 0.0)


def test_drawing_all_or_none_of_the_cells_costs_no_randomness():
    """``k = 0`` distinct cells is the empty set and ``k = total`` is every cell: neither
    draws anything from the generator (the complement drawn is empty)."""
    gen = np.random.default_rng(4)
    before = gen.bit_generator.state
    assert _distinct_uniform(0, 0, gen).tolist() == []
    assert _distinct_uniform(7, 0, gen).tolist() == []
    assert _distinct_uniform(5, 5, gen).tolist() == [0, 1, 2, 3, 4]
    assert gen.bit_generator.state == before


def test_the_guarantee_is_vacuous_when_the_view_shows_the_share_above_d_at_95_percent():
    """Vacuous when the estimated share of real tuples less 1.645 sd (one-sided 95%) exceeds
    d: this view estimates 0.633 (sd 0.176), so d = 0.3 is vacuous and d = 0.4 is not; with
    sd = 0 (alpha = 1, beta = 0) a share exactly d is not."""
    t = _table()
    share, sd = alphabeta(
        t, alpha=0.5, beta=0.1, rng=np.random.default_rng(0)
    ).estimated_real_share()
    assert share - 2.645 * sd < 0.3 < share - 1.645 * sd < 0.4
    with pytest.warns(PrivacyWarning):
        low = alphabeta(t, alpha=0.5, beta=0.1, d=0.3, gamma=0.9, rng=np.random.default_rng(0))
    assert low.guarantee()["vacuous"] is True
    with pytest.warns(PrivacyWarning):
        high = alphabeta(t, alpha=0.5, beta=0.1, d=0.4, gamma=0.9, rng=np.random.default_rng(0))
    assert high.guarantee()["vacuous"] is False
    one = Table.from_pandas(pd.DataFrame({"a": ["x"]}), domains={"a": list("wxyz")})
    with pytest.warns(PrivacyWarning):
        exact = alphabeta(one, alpha=1.0, beta=0.0, d=0.25, gamma=0.5, rng=np.random.default_rng(0))
    g = exact.guarantee()
    assert g["estimated_real_share"] == 0.25 and g["estimated_real_share_sd"] == 0.0
    assert g["vacuous"] is False


def test_sample_view_refuses_a_cell_outside_the_domain():
    with pytest.raises(ParameterError, match=r"cell indices must lie in \[0, 3\)"):
        sample_view(np.array([0, 3]), 3, 0.5, 0.1, np.random.default_rng(0))
    cells, real = sample_view(np.array([0, 2]), 3, 1.0, 0.0, np.random.default_rng(0))
    assert cells.tolist() == [0, 2] and real.tolist() == [True, True]


def test_the_bernstein_and_chebyshev_radii_by_their_closed_forms():
    """rho_chebyshev = sqrt(Var_max / (n eps)); the Bernstein radius solves
    2 exp(-x^2 / (2 (Var + x / (3 alpha)))) = eps: x = L/(3a) + sqrt((L/(3a))^2 + 2 Var L),
    L = ln(2 / eps), rho = x / sqrt(n).  At alpha = 0.25 the 3 alpha term matters."""
    n, m, a, b, eps = 40, 500, 0.25, 0.05, 0.01
    u = utility_guarantee(n, m, a, b, eps)
    var = (n * (a + b) * (1 - a - b) + (m - n) * b * (1 - b)) / a**2
    assert u.var_max == pytest.approx(var, rel=1e-12)
    assert u.rho_chebyshev == pytest.approx(math.sqrt(var / (n * eps)), rel=1e-12)
    big_l = math.log(2 / eps)
    x = big_l / (3 * a) + math.sqrt((big_l / (3 * a)) ** 2 + 2 * var * big_l)
    assert u.rho_bernstein == pytest.approx(x / math.sqrt(n), rel=1e-12)
    # x solves the tail bound at eps
    assert 2 * math.exp(-(x**2) / (2 * (var + x / (3 * a)))) == pytest.approx(eps, rel=1e-9)


def test_parse_where_reads_columns_once_each():
    assert parse_where(["age=30|31", "sex=F, race = x"]) == {
        "age": ["30", "31"],
        "sex": ["F"],
        "race": ["x"],
    }
    with pytest.raises(SchemaError, match="names column 'age' twice"):
        parse_where(["age=30", "age=31"])


def test_the_whole_declared_domain_is_published_even_values_the_view_lacks(tmp_path):
    """The estimator needs Q(D), so release.json holds every declared value, also those no
    published tuple holds (a small view over a 24-cell domain misses some)."""
    for seed in range(50):  # a generator (not a salted seed): the same views every run
        rel = alphabeta(_table(seed=5, n=3), d=0.1, gamma=0.4, rng=np.random.default_rng(seed))
        view = rel.to_pandas().astype(str)
        if any(set(view[c]) < set(v) for c, v in DOMAINS.items()):  # the view misses values
            break
    else:
        pytest.fail("every view held every value")
    assert {a.name: list(a.domain) for a in rel.public_schema().attributes} == DOMAINS


def test_a_query_estimate_is_one_row_of_a_frame():
    rel = alphabeta(_table(), d=0.1, gamma=0.4, rng=12345)
    est = rel.estimate({"a": ["x", "y"], "c": "v"})
    df = est.to_pandas()
    assert len(df) == 1 and df.loc[0, "estimate"] == est.estimate and df.loc[0, "sd"] == est.sd
    assert df.loc[0, "where"] == "a IN ['x', 'y'] AND c IN ['v']"
    assert est.to_arrow().num_rows == 1


# -- what a release without d says, and the remaining refusals -----------------------------------
@pytest.fixture(scope="module")
def without_d():
    """A view of ``_table()`` at alpha = 0.5, beta = 0.1, no (d, gamma) asked for."""
    return alphabeta(_table(), alpha=0.5, beta=0.1, rng=np.random.default_rng(0))


def test_a_release_without_d_states_no_d_gamma_guarantee(without_d):
    """Without ``d`` the parameters, the guarantee and the privacy report hold alpha, beta
    and what the view estimates, and nothing of (d, gamma)."""
    rel = without_d
    assert rel.parameters() == {
        "alpha": 0.5,
        "beta": 0.1,
        "domain_size": 24,
        "columns": ["a", "b", "c"],
    }
    g = rel.guarantee()
    assert set(g) == {
        "definition",
        "estimated_real_share",
        "estimated_real_share_sd",
        "posterior_at_estimated_share",
    }
    share, sd = rel.estimated_real_share()
    assert (g["estimated_real_share"], g["estimated_real_share_sd"]) == (share, sd)
    assert g["posterior_at_estimated_share"] == float(posterior(share, 0.5, 0.1))
    assert rel.privacy().details == {"alpha": 0.5, "beta": 0.1}


def test_gamma_without_d_and_an_empty_column_list_or_query_are_refused(without_d):
    with pytest.raises(ParameterError, match="gamma is given without d"):
        AlphaBetaRelease(without_d.table, 0.5, 0.1, gamma=0.4)
    with pytest.raises(ParameterError, match="give at least one column for the domain"):
        alphabeta(_table(), columns=[], alpha=0.5, beta=0.1)
    with pytest.raises(ParameterError, match="the query gives column 'a' no value"):
        without_d.estimate({"a": [], "c": "v"})


def test_the_utility_guarantee_as_a_record_and_a_frame():
    """``to_dict`` holds the fields and the better of the two radii; ``to_pandas`` is that
    record as one row.  ``var_max`` is the closed form of the docstring,
    ``[n (a+b)(1-a-b) + (m-n) b (1-b)] / a^2``."""
    n, m, a, b, eps = 10, 24, 0.5, 0.1, 0.05
    u = utility_guarantee(n, m, a, b, eps)
    d = u.to_dict()
    var = (n * (a + b) * (1 - a - b) + (m - n) * b * (1 - b)) / a**2
    assert set(d) == {"n", "m", "alpha", "beta", "epsilon", "var_max", "rho_chebyshev",
                      "rho_bernstein", "rho"}  # fmt: skip
    assert (d["n"], d["m"], d["alpha"], d["beta"], d["epsilon"]) == (n, m, a, b, eps)
    assert d["var_max"] == pytest.approx(var, rel=1e-12)
    assert d["rho_chebyshev"] == pytest.approx(math.sqrt(var / (n * eps)), rel=1e-12)
    assert d["rho"] == min(d["rho_chebyshev"], d["rho_bernstein"])
    df = u.to_pandas()
    assert len(df) == 1 and df.iloc[0].to_dict() == d


def test_parse_where_skips_empty_parts():
    assert parse_where(["age=30|31,", " , sex=F", ""]) == {"age": ["30", "31"], "sex": ["F"]}


def test_the_published_columns_keep_their_roles_and_undeclared_ones_become_quasi_identifiers():
    """A column with a role keeps it in the view; one without (OTHER) is published as a
    quasi-identifier, since every column of the view is linkable."""
    from privlab.data.schema import Role

    t = _table().with_roles(qi=["a"], sensitive="c")  # b has no role
    rel = alphabeta(t, alpha=0.8, beta=0.2, rng=np.random.default_rng(4))
    roles = {a.name: a.role for a in rel.schema.attributes}
    assert roles == {"a": Role.QI, "b": Role.QI, "c": Role.SENSITIVE}
