"""Anonymized marginals (Kifer & Gehrke 2006): IPF against closed forms, Birch's conditions and a
converged Poisson GLM, k-combinatorial anonymity against brute-force enumeration, the checks and
the greedy search."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privlab.data import Table
from privlab.data.hierarchy import from_mapping
from privlab.data.schema import Attribute, Role, Schema
from privlab.errors import ParameterError, SchemaError
from privlab.metrics.privacy import class_distinct_l
from privlab.publish.marginals import (
    empirical,
    greedy_marginals,
    ipf,
    k_combinatorial,
    k_link,
    kl_divergence,
    make_marginal,
    maxent_l_diversity,
)

H = {
    "a": from_mapping("a", {"w": ["wx"], "x": ["wx"], "y": ["yz"], "z": ["yz"]}),
    "b": from_mapping("b", {"0": ["01"], "1": ["01"], "2": ["2"]}),
}


def _table(seed=0, n=300, dependent=True) -> Table:
    g = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "a": g.choice(list("wxyz"), n, p=[0.4, 0.1, 0.3, 0.2]),
            "b": g.choice(["0", "1", "2"], n),
            "s": g.choice(["p", "q", "r"], n, p=[0.5, 0.3, 0.2]),
        }
    )
    if dependent:  # a structural zero: w never has r
        df.loc[df.a == "w", "s"] = g.choice(["p", "q"], (df.a == "w").sum())
    return Table.from_pandas(df)


def test_ipf_of_one_generalized_table_is_the_uniform_spread_within_classes():
    t = _table()
    base = make_marginal(t, ["a", "b", "s"], [1, 1, 0], hierarchies=H)
    fit = ipf(t.names, t.schema.sizes, [base], tol=1e-14)
    assert fit.converged and fit.iterations <= 2
    # closed form: each generalized cell's count spread evenly over its leaves
    a_map, b_map = base.maps[0], base.maps[1]
    a_leaves = np.bincount(a_map)
    b_leaves = np.bincount(b_map)
    expect = np.zeros(t.schema.sizes)
    for i, j, s in itertools.product(*(range(k) for k in t.schema.sizes)):
        cell = base.counts[a_map[i], b_map[j], s]
        expect[i, j, s] = cell / (t.n_rows * a_leaves[a_map[i]] * b_leaves[b_map[j]])
    np.testing.assert_allclose(fit.probs, expect, rtol=1e-12, atol=1e-15)
    p = empirical(t)
    assert kl_divergence(p, fit.probs) == pytest.approx(
        float(np.sum(p[p > 0] * np.log(p[p > 0] / expect[p > 0]))), rel=1e-12
    )


def test_kl_over_all_attributes_is_the_lattice_kl_plus_the_sensitive_term():
    """Lattice.kl (the generalization search's objective) is KL over the QIs only; Kifer &
    Gehrke's utility over all attributes adds the sensitive term (chain rule):
    KL(P(Q,S) || F2) = KL(P(Q) || F2(Q)) + sum_q P(q) KL(P(S|q) || share of S in q's class)."""
    from privlab.publish.lattice import Lattice
    from privlab.publish.models import PrivacyModel

    t = _table(4)
    node = (1, 1)
    lat = Lattice(t.columns(["a", "b"]), [H[c].compile(t.schema[c]) for c in "ab"],
                  t.column("s"), t.schema["s"].size)  # fmt: skip
    cls, sizes, ok = lat.evaluate(node, PrivacyModel(k=1))
    qi_only = lat.kl(node, cls, sizes, ok)
    base = make_marginal(t, ["a", "b", "s"], [*node, 0], hierarchies=H)
    full = kl_divergence(empirical(t), ipf(t.names, t.schema.sizes, [base], tol=1e-14).probs)
    # the sensitive term, by hand: each leaf QI cell's S distribution against its class's
    p = empirical(t)  # shape (a, b, s)
    pq = p.sum(axis=2)
    cls_s = base.counts / base.counts.sum(axis=2, keepdims=True)
    term = 0.0
    for i, j in itertools.product(range(p.shape[0]), range(p.shape[1])):
        if pq[i, j] == 0:
            continue
        ps = p[i, j] / pq[i, j]
        qs = cls_s[base.maps[0][i], base.maps[1][j]]
        pos = ps > 0
        term += pq[i, j] * float(np.sum(ps[pos] * np.log(ps[pos] / qs[pos])))
    assert term > 0.01 and qi_only > 0.01
    assert full == pytest.approx(qi_only + term, rel=1e-10)


def _design(t, margs) -> np.ndarray:
    """The log-linear model's design: one indicator column per published marginal cell."""
    grid = np.indices(t.schema.sizes).reshape(len(t.names), -1)
    cols = []
    for m in margs:
        axes = [t.names.index(a) for a in m.attributes]
        cell = np.ravel_multi_index(
            tuple(m.maps[j][grid[ax]] for j, ax in enumerate(axes)), m.counts.shape
        )
        cols.append(np.eye(m.counts.size)[cell])
    return np.hstack(cols)


def test_ipf_is_the_log_linear_mle_by_birchs_conditions():
    """Max-ent = the MLE of the log-linear model with one parameter per marginal cell.

    Birch's theorem (Bishop, Fienberg & Holland 1975, Thm 3.1.1) characterizes it without an
    iterative oracle: the MLE is the one positive fit whose log lies in the span of the design
    and whose sufficient statistics (the marginal cells) equal the data's.  Both are checked
    directly (a least-squares projection, exact sums); then a Poisson GLM on a full-rank basis
    of the same design, which must report convergence, gives the same fitted counts.  (The
    GLM on the rank-deficient design stopped unconverged at statsmodels' iteration limit, and
    a test that compared with it failed when IPF was right: issue 28.)
    """
    sm = pytest.importorskip("statsmodels.api")
    from scipy.linalg import qr

    t = _table(1, n=600, dependent=False)
    margs = [
        make_marginal(t, ["a", "b", "s"], [1, 1, 0], hierarchies=H),
        make_marginal(t, ["a", "s"], [0, 0], hierarchies=H),
        make_marginal(t, ["a", "b"], [0, 1], hierarchies=H),
    ]
    for m in margs:
        assert (m.counts > 0).all()  # an interior MLE
    fit = ipf(t.names, t.schema.sizes, margs, tol=1e-12)
    assert fit.converged
    mu = fit.probs.ravel() * t.n_rows
    x = _design(t, margs)
    y = t.counts(list(t.names)).astype(float)
    # (1) the sufficient statistics: every published marginal cell, fitted = observed
    np.testing.assert_allclose(x.T @ mu, x.T @ y, rtol=1e-9)
    # (2) the model: log mu is a linear combination of the design's columns
    coef, *_ = np.linalg.lstsq(x, np.log(mu), rcond=None)
    np.testing.assert_allclose(x @ coef, np.log(mu), atol=1e-9)
    # a mutant of either kind fails one of them: a fit off the model, a fit off the data
    off_model = mu * np.exp(0.05 * np.sin(np.arange(mu.size)))
    coef2, *_ = np.linalg.lstsq(x, np.log(off_model), rcond=None)
    assert np.abs(x @ coef2 - np.log(off_model)).max() > 1e-3
    assert np.abs(x.T @ (mu * 1.01) - x.T @ y).max() > 1e-3
    # (3) an independent solver, asked to say that it converged: the GLM on a basis of the
    # design's column space (pivoted QR picks independent columns)
    _, r, piv = qr(x, pivoting=True, mode="economic")
    rank = int((np.abs(np.diag(r)) > 1e-9 * abs(r[0, 0])).sum())
    glm = sm.GLM(y, x[:, np.sort(piv[:rank])], family=sm.families.Poisson()).fit(
        tol=1e-12, maxiter=500
    )
    assert glm.converged
    np.testing.assert_allclose(mu, glm.fittedvalues, rtol=1e-6)
    # and the MLE has the highest Poisson log-likelihood (up to the GLM's tolerance)
    assert (
        float(y @ np.log(mu) - mu.sum())
        >= float(y @ np.log(glm.fittedvalues) - glm.fittedvalues.sum()) - 1e-8
    )


def test_pythagorean_identity_of_nested_fits():
    """KL(p||q_less) = KL(p||q_more) + KL(q_more||q_less) for nested marginal sets."""
    t = _table(2)
    p = empirical(t)
    base = make_marginal(t, ["a", "b", "s"], [1, 1, 0], hierarchies=H)
    extra = make_marginal(t, ["a", "s"], hierarchies=H)
    q1 = ipf(t.names, t.schema.sizes, [base], tol=1e-13).probs
    q2 = ipf(t.names, t.schema.sizes, [base, extra], tol=1e-13).probs
    lhs = kl_divergence(p, q1)
    assert lhs == pytest.approx(kl_divergence(p, q2) + kl_divergence(q2, q1), rel=1e-8)
    assert kl_divergence(p, q2) < lhs


def test_the_full_joint_marginal_gives_the_data_and_kl_zero():
    t = _table(3)
    fit = ipf(t.names, t.schema.sizes, [make_marginal(t, t.names)])
    assert kl_divergence(empirical(t), fit.probs) == pytest.approx(0.0, abs=1e-14)


def test_k_link_by_hand():
    t = _table(4, n=40)
    m = make_marginal(t, ["a", "s"], hierarchies=H)
    ns = m.counts.sum(axis=1)
    holds, smallest = k_link([m], "s", 5)
    assert smallest == ns[ns > 0].min() and holds == (smallest >= 5)
    assert k_link([m], "s", int(smallest))[0] and not k_link([m], "s", int(smallest) + 1)[0]


def test_maxent_l_diversity_of_one_table_is_its_classes_l_diversity():
    t = _table(5)
    base = make_marginal(t, ["a", "b", "s"], [1, 1, 0], hierarchies=H)
    fit = ipf(t.names, t.schema.sizes, [base])
    classes = base.counts.reshape(-1, base.counts.shape[-1])
    classes = classes[classes.sum(axis=1) > 0]
    want = int(class_distinct_l(classes).min())
    r = maxent_l_diversity(fit, "s", want)
    assert r.holds and r.distinct_l == want
    assert not maxent_l_diversity(fit, "s", want + 1).holds
    assert maxent_l_diversity(fit, "s", 1.5, variant="entropy").entropy_l >= 1.0


# -- k-combinatorial anonymity: ILP against brute force on a 2x2x2 domain -------------------------
def _tiny(cells_counts) -> Table:
    schema = Schema(
        tuple(Attribute(nm, ("0", "1"), Role.QI if nm != "s" else Role.SENSITIVE, False, True)
              for nm in ("a", "b", "s"))
    )  # fmt: skip
    rows = [
        c for c, k in zip(itertools.product(range(2), repeat=3), cells_counts) for _ in range(k)
    ]
    return Table(np.array(rows, dtype=np.int64).reshape(-1, 3), schema)


def _compositions(n, parts):
    """Every way to write n as an ordered sum of ``parts`` non-negative integers."""
    for bars in itertools.combinations(range(n + parts - 1), parts - 1):
        edges = (-1, *bars, n + parts - 1)
        yield [edges[i + 1] - edges[i] - 1 for i in range(parts)]


def _brute_force_maxima(margs, n):
    best = np.zeros((2, 2), dtype=int)
    for comp in _compositions(n, 8):
        tab = np.array(comp).reshape(2, 2, 2)
        ok = True
        for m in margs:
            axes = ["abs".index(a) for a in m.attributes]
            got = tab.sum(axis=tuple(a for a in range(3) if a not in axes))
            if not np.array_equal(got, m.counts):
                ok = False
                break
        if ok:
            best = np.maximum(best, tab.sum(axis=2))
    return best


@settings(max_examples=10)
@given(st.lists(st.integers(0, 2), min_size=8, max_size=8).filter(lambda c: 1 <= sum(c) <= 8))
def test_k_combinatorial_ilp_equals_brute_force(counts):
    t = _tiny(counts)
    margs = [make_marginal(t, ["a", "s"]), make_marginal(t, ["b", "s"])]
    n = t.n_rows
    _, ilp = k_combinatorial(margs, t.names, t.schema.sizes, "s", 2)
    brute = _brute_force_maxima(margs, n)
    assert np.array_equal(ilp, brute)
    _, lp = k_combinatorial(margs, t.names, t.schema.sizes, "s", 2, relax=True)
    assert np.all(lp >= ilp - 1e-9)  # the LP relaxation bounds the maximum from above
    for k in (1, 2, 3):
        holds, _ = k_combinatorial(margs, t.names, t.schema.sizes, "s", k)
        assert holds == bool(np.all((brute == 0) | (brute >= k)))


def test_k_combinatorial_flags_a_cell_that_must_stay_small():
    # one record in cell (a=1, b=1): the (a, b) marginal pins it to exactly 1
    t = _tiny([2, 2, 2, 2, 2, 2, 1, 0])
    margs = [make_marginal(t, ["a", "b"]), make_marginal(t, ["s"])]
    holds, maxima = k_combinatorial(margs, t.names, t.schema.sizes, "s", 2)
    assert not holds and maxima[1, 1] == 1


def test_ilp_above_the_limit_says_so_and_gives_the_lp_bound():
    from privlab.publish.marginals import IlpTooLargeError

    counts = [2, 2, 3, 2, 2, 2, 1, 0]  # 8 leaf cells; the (a, b) marginal pins each T(t)
    t = _tiny(counts)
    margs = [make_marginal(t, ["a", "b"]), make_marginal(t, ["s"])]
    pinned = np.array(counts).reshape(2, 2, 2).sum(axis=2)  # [[4, 5], [4, 1]]: exact max T(t)
    with pytest.raises(IlpTooLargeError) as err:
        k_combinatorial(margs, t.names, t.schema.sizes, "s", 2, max_cells=7)
    msg = str(err.value)
    assert "the integer program has 8 variables" in msg and "limit of 7 (max_cells)" in msg
    assert "not solved" in msg and "\n" not in msg
    # the LP bound it gives is the exact maximum here, and what relax=True returns
    np.testing.assert_allclose(err.value.lp_bound, pinned, atol=1e-9)
    _, lp = k_combinatorial(margs, t.names, t.schema.sizes, "s", 2, relax=True, max_cells=7)
    np.testing.assert_allclose(lp, pinned, atol=1e-9)
    assert "0 of 4 combinations have bound 0" in msg
    assert "the smallest positive bound is 1," in msg
    assert "1 positive bounds lie below k = 2" in msg and "3 reach k" in msg
    # at or under the limit the ILP runs and finds the pinned cell
    holds, ilp = k_combinatorial(margs, t.names, t.schema.sizes, "s", 2, max_cells=8)
    assert not holds and np.array_equal(ilp, pinned)
    with pytest.raises(ParameterError, match="max_cells = 0 must be at least 1"):
        k_combinatorial(margs, t.names, t.schema.sizes, "s", 2, max_cells=0)


def test_ilp_and_lp_both_too_large_say_so(monkeypatch):
    import privlab.publish.marginals as pm

    t = _tiny([1] * 8)
    margs = [make_marginal(t, ["a", "b"]), make_marginal(t, ["s"])]
    monkeypatch.setattr(pm, "MAX_LP_CELLS", 6)
    with pytest.raises(pm.IlpTooLargeError, match="LP relaxation has more than 6 variables") as e:
        k_combinatorial(margs, t.names, t.schema.sizes, "s", 2, max_cells=7)
    assert e.value.lp_bound is None


def test_a_domain_too_large_to_enumerate_is_refused_with_its_size():
    from privlab.publish.marginals import MAX_CELLS, publish_marginals

    t = _tiny([1] * 8)
    margs = [make_marginal(t, ["a", "b"])]
    big = ["a", "b", "s"], [1000, 1000, 1000]
    needle = r"the leaf domain has 1,000,000,000 cells, more than the 16,777,216"
    assert MAX_CELLS == 16_777_216
    with pytest.raises(ParameterError, match=needle):
        k_combinatorial(margs, *big, "s", 2)
    with pytest.raises(ParameterError, match=needle):
        k_combinatorial(margs, *big, "s", 2, relax=True)
    # a table whose leaf domain is 300^3 = 27,000,000 cells: empirical F1 and the release
    g = np.random.default_rng(0)
    df = pd.DataFrame({c: g.permutation(300).astype(str) for c in ("x", "y", "z")})
    wide = Table.from_pandas(df)
    with pytest.raises(ParameterError, match="27,000,000 cells"):
        empirical(wide)
    with pytest.raises(ParameterError, match="27,000,000 cells"):
        publish_marginals(wide, qi=["x", "y"], sensitive="z", k=2, l=1)


# -- greedy search --------------------------------------------------------------------------------
def test_greedy_lowers_kl_and_keeps_the_checks():
    t = _table(6)
    base = make_marginal(t, ["a", "b", "s"], [1, 1, 0], hierarchies=H)
    res = greedy_marginals(t, base, sensitive="s", k=10, l=2, hierarchies=H, max_marginals=3)
    assert res.added and np.all(np.diff(res.kl_path) < 0)
    assert k_link(res.marginals, "s", 10)[0]
    assert maxent_l_diversity(res.fit, "s", 2).holds
    assert res.kl_path[-1] == pytest.approx(kl_divergence(empirical(t), res.fit.probs))
    assert list(res.to_pandas()["step"]) == list(range(len(res.kl_path)))


# -- bad input -------------------------------------------------------------------------------------
def test_bad_input_names_the_value():
    t = _table()
    with pytest.raises(ParameterError, match=r"level 3 of .a. is outside 0\.\.2"):
        make_marginal(t, ["a"], [3], hierarchies=H)
    with pytest.raises(SchemaError, match="zz"):
        make_marginal(t, ["a", "zz"])
    small = make_marginal(t.take(np.arange(10)), ["a"])
    with pytest.raises(ParameterError, match="counts 10 records, the first counts 300"):
        ipf(t.names, t.schema.sizes, [make_marginal(t, ["a"]), small])
    with pytest.raises(ParameterError, match="1,000,000,000 cells"):
        ipf(["x", "y", "z"], [1000, 1000, 1000], [make_marginal(t, ["a"])])
    assert math.isinf(kl_divergence([0.5, 0.5], [1.0, 0.0]))


# -- the release and the CLI --------------------------------------------------------------------
def _csv(tmp_path):
    t = _table(7, n=400)
    src = tmp_path / "in.csv"
    t.to_pandas().to_csv(src, index=False)
    hdir = tmp_path / "h"
    hdir.mkdir()
    for name, h in H.items():
        (hdir / f"{name}.csv").write_text(h.to_csv())
    return t, src, hdir


def test_release_roundtrip_and_privacy(tmp_path):
    from privlab.publish import load_release
    from privlab.publish.marginals import MarginalsRelease, publish_marginals

    t, _, _ = _csv(tmp_path)
    rel = publish_marginals(t, qi=["a", "b"], sensitive="s", k=10, l=2, hierarchies=H)
    assert isinstance(rel, MarginalsRelease) and len(rel.marginals) >= 2
    path = rel.kl_path
    assert path[-1] < path[0] and "kl_path" not in rel.params
    assert kl_divergence(empirical(t.select(["a", "b", "s"])), rel.maxent().probs) == (
        pytest.approx(path[-1], rel=1e-6)
    )
    rel.save(tmp_path / "rel", custody=tmp_path / "cus")
    back = load_release(tmp_path / "rel")
    assert isinstance(back, MarginalsRelease)
    for m1, m2 in zip(rel.marginals, back.marginals):
        assert m1.attributes == m2.attributes and m1.levels == m2.levels
        assert np.array_equal(m1.counts, m2.counts)
    np.testing.assert_allclose(back.maxent().probs, rel.maxent().probs, atol=1e-12)
    # the KL path is measured on the input: in the custody, never in release.json
    import json

    meta = json.loads((tmp_path / "rel" / "release.json").read_text())
    assert "kl_path" not in json.dumps(meta) and back.kl_path is None
    custody = json.loads((tmp_path / "cus" / "custody.json").read_text())
    assert custody["input_measures"]["kl_path"] == list(path)
    assert load_release(tmp_path / "rel", custody=tmp_path / "cus").kl_path == path
    report = back.privacy()
    assert report.k >= 10 and report.n_rows == t.n_rows
    assert report.details["k_link_min_cell"] >= 10 and report.details["maxent_distinct_l"] >= 2


def test_cli_marginals_and_bad_input(run, tmp_path):
    from conftest import fails

    _, src, hdir = _csv(tmp_path)
    r = run("marginals", src, "--qi", "a,b", "--sensitive", "s", "--k", "10", "--l", "2",
            "--hierarchies", hdir, "--out", tmp_path / "m")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "KL" in r.stdout and (tmp_path / "m" / "marginal_1.csv").is_file()
    base = pd.read_csv(tmp_path / "m" / "base.csv")
    assert base["count"].sum() == 400
    r = run("check", tmp_path / "m")
    assert r.returncode == 0 and "k_link_min_cell" in r.stdout
    fails(run("marginals", src, "--qi", "a,zz", "--sensitive", "s", "--out", tmp_path / "x"),
          "zz")  # fmt: skip
    fails(run("marginals", src, "--qi", "a", "--sensitive", "s", "--width", "1",
              "--out", tmp_path / "x"), "--width >= 2")  # fmt: skip
    assert not (tmp_path / "x").exists()
    # a leaf domain too large to enumerate (300^3 cells): one line, nothing written
    g = np.random.default_rng(1)
    wide = tmp_path / "wide.csv"
    pd.DataFrame({c: g.permutation(300) for c in ("x", "y", "z")}).to_csv(wide, index=False)
    fails(run("marginals", wide, "--qi", "x,y", "--sensitive", "z", "--k", "2",
              "--out", tmp_path / "x"), "27,000,000 cells", "16,777,216")  # fmt: skip
    assert not (tmp_path / "x").exists()


# -- the marginals-adult classifier helpers ---------------------------------------------------
def test_sample_records_follow_the_distribution():
    from scipy import stats

    from privlab.experiments.marginals_adult import sample_records

    probs = np.array([[0.1, 0.2], [0.3, 0.4]])
    x = sample_records(probs, 40_000, np.random.default_rng(0))
    counts = np.bincount(x[:, 0] * 2 + x[:, 1], minlength=4)
    assert stats.chisquare(counts, 40_000 * probs.ravel()).pvalue > 1e-3
    wrong = np.array([0.1, 0.2, 0.3 * 1.3, 0.4 - 0.09])  # one cell 30% off
    assert stats.chisquare(counts, 40_000 * wrong).pvalue < 1e-6


def test_naive_bayes_on_draws_from_the_empirical_distribution_matches_the_original():
    # at the leaf level the max-ent estimate of the full joint is the empirical distribution:
    # a classifier trained on draws from it must score like one trained on the records
    from privlab.data.datasets import load_adult
    from privlab.experiments.marginals_adult import encode_like, nb_accuracy, sample_records
    from privlab.publish.marginals import MarginalsRelease

    adult = load_adult().select(["education", "sex", "race", "salary"])
    adult = adult.with_roles(qi=["education", "sex", "race"], sensitive="salary")
    full = make_marginal(adult, adult.names)
    rel = MarginalsRelease((full,), tuple(adult.schema.attributes))
    fit = rel.maxent()
    np.testing.assert_allclose(fit.probs, empirical(adult), atol=1e-12)
    train = encode_like(rel, adult)
    test = encode_like(rel, load_adult(split="test"))
    target = rel.names.index("salary")
    original = nb_accuracy(train, test, target, rel.sizes)
    drawn = nb_accuracy(
        sample_records(fit.probs, adult.n_rows, np.random.default_rng(1)), test, target, rel.sizes
    )
    assert abs(drawn - original) < 0.01
