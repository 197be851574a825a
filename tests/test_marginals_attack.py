"""The max-ent attack on an anonymized-marginals release (Kifer & Gehrke 2006; Kifer 2009
Sec. 7): closed forms, an independent max-ent solver, invariants, bad input and the CLI."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privlab.attacks.marginals import marginals_attack
from privlab.data import Table
from privlab.data.hierarchy import from_mapping
from privlab.errors import ParameterError, ReleaseError, SchemaError
from privlab.publish.marginals import MarginalsRelease, make_marginal, publish_marginals

H = {
    "a": from_mapping("a", {"w": ["wx"], "x": ["wx"], "y": ["yz"], "z": ["yz"]}),
    "b": from_mapping("b", {"0": ["01"], "1": ["01"], "2": ["2"]}),
}


def _table(seed=0, n=300) -> Table:
    g = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "a": g.choice(list("wxyz"), n, p=[0.4, 0.1, 0.3, 0.2]),
            "b": g.choice(["0", "1", "2"], n),
            "s": g.choice(["p", "q", "r"], n, p=[0.5, 0.3, 0.2]),
        }
    )
    df.loc[df.a == "w", "s"] = g.choice(["p", "q"], (df.a == "w").sum())
    return Table.from_pandas(df).with_roles(qi=["a", "b"], sensitive="s")


def _release(t: Table, marginals) -> MarginalsRelease:
    return MarginalsRelease(tuple(marginals), tuple(t.schema.attributes))


def test_base_table_alone_gives_each_class_its_sensitive_shares():
    t = _table()
    base = make_marginal(t, ["a", "b", "s"], [1, 1, 0], hierarchies=H)
    post, rw = marginals_attack(_release(t, [base]), t, return_baseline=True)
    a, b = t.column("a"), t.column("b")
    counts = base.counts[base.maps[0][a], base.maps[1][b]].astype(float)  # (n, |S|)
    expect = counts / counts.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(post.probs, expect, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(rw.probs, expect, rtol=1e-9, atol=1e-12)
    # group_id is the base class: people of one class share it, other classes differ
    cls = base.maps[0][a] * 10 + base.maps[1][b]
    for c in np.unique(cls):
        assert np.unique(post.group_id[cls == c]).size == 1
    assert np.unique(post.group_id).size == np.unique(cls).size
    assert post.values == ("p", "q", "r") and post.sensitive == "s"
    assert post.release_kind == "marginals" and post.method == "maxent"


def test_leaf_base_table_gives_the_empirical_conditional():
    t = _table(3)
    base = make_marginal(t, ["a", "b", "s"], [0, 0, 0], hierarchies=H)
    post = marginals_attack(_release(t, [base]), t)
    df = t.to_pandas()
    for i in (0, 5, 17, 100):
        same = df[(df.a == df.a[i]) & (df.b == df.b[i])]
        shares = same.s.value_counts(normalize=True).reindex(["p", "q", "r"], fill_value=0)
        np.testing.assert_allclose(post.probs[i], shares.to_numpy(), atol=1e-9)


def _tiny(seed=1, n=60) -> Table:
    g = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "a": g.choice(["0", "1"], n, p=[0.6, 0.4]),
            "b": g.choice(["0", "1"], n),
            "s": g.choice(["u", "v"], n, p=[0.3, 0.7]),
        }
    )
    df.loc[(df.a == "1") & (g.random(n) < 0.6), "s"] = "u"  # s depends on a
    return Table.from_pandas(df).with_roles(qi=["a", "b"], sensitive="s")


def test_two_marginals_give_naive_bayes_in_closed_form():
    # with the marginals (a, s) and (b, s), max-ent makes a and b independent given s:
    # F2(a, b, s) = P(a, s) P(b, s) / P(s), so F2(s | a, b) is proportional to it
    t = _tiny()
    m_as = make_marginal(t, ["a", "s"])
    m_bs = make_marginal(t, ["b", "s"])
    post = marginals_attack(_release(t, [m_as, m_bs]), t)
    df = t.to_pandas()
    n = len(df)
    p_as = pd.crosstab(df.a, df.s) / n
    p_bs = pd.crosstab(df.b, df.s) / n
    p_s = df.s.value_counts(normalize=True)
    for i in range(n):
        w = np.array([p_as.loc[df.a[i], s] * p_bs.loc[df.b[i], s] / p_s[s] for s in ("u", "v")])
        np.testing.assert_allclose(post.probs[i], w / w.sum(), atol=1e-9)


def test_generalized_base_plus_marginal_against_an_independent_max_ent_solver():
    # maximize the entropy over the 8 cells subject to the published cell totals (scipy's
    # SLSQP, not IPF), then condition on each (a, b)
    from scipy.optimize import minimize

    t = _tiny(4)
    hier = {"a": from_mapping("a", {"0": ["*"], "1": ["*"]})}
    base = make_marginal(t, ["a", "b", "s"], [1, 0, 0], hierarchies=hier)
    m_as = make_marginal(t, ["a", "s"])
    rel = _release(t, [base, m_as])
    rows, rhs = [], []
    cells = list(itertools.product(range(2), repeat=3))
    for mg in rel.marginals:
        axes = [("a", "b", "s").index(c) for c in mg.attributes]
        for cell in itertools.product(*(range(s) for s in mg.counts.shape)):
            rows.append([
                float(all(mg.maps[j][leaf[ax]] == cell[j] for j, ax in enumerate(axes)))
                for leaf in cells
            ])  # fmt: skip
            rhs.append(mg.counts[cell] / t.n_rows)
    A, b = np.array(rows), np.array(rhs)
    keep: list[int] = []  # drop redundant constraints (SLSQP needs independent ones)
    for i in range(len(A)):
        if np.linalg.matrix_rank(A[[*keep, i]]) > len(keep):
            keep.append(i)
    A, b = A[keep], b[keep]

    def negent(p):
        p = np.clip(p, 1e-15, None)
        return float(np.sum(p * np.log(p)))

    res = minimize(
        negent, np.full(8, 1 / 8), method="SLSQP", bounds=[(0, 1)] * 8,
        constraints=[{"type": "eq", "fun": lambda p: A @ p - b}],
        options={"ftol": 1e-14, "maxiter": 1000},
    )  # fmt: skip
    assert res.success
    joint = res.x.reshape(2, 2, 2)
    post = marginals_attack(rel, t)
    a, bb = t.column("a"), t.column("b")
    expect = joint[a, bb] / joint[a, bb].sum(axis=1, keepdims=True)
    np.testing.assert_allclose(post.probs, expect, atol=1e-5)


def test_known_subset_of_qis_sums_the_others_out():
    t = _table(2)
    rel = publish_marginals(t, qi=["a", "b"], sensitive="s", k=10, l=2, hierarchies=H)
    fit = rel.maxent().probs  # (a, b, s)
    post = marginals_attack(rel, t, qi=["a"])
    f_as = fit.sum(axis=1)
    a = t.column("a")
    np.testing.assert_allclose(post.probs, f_as[a] / f_as[a].sum(axis=1, keepdims=True), atol=1e-9)
    # knowing every QI: the full conditional
    full = marginals_attack(rel, t)
    cond = fit[a, t.column("b")]
    np.testing.assert_allclose(full.probs, cond / cond.sum(axis=1, keepdims=True), atol=1e-9)
    assert full.diagnostics["converged"] and full.diagnostics["targets"] == t.n_rows


def test_marginals_sharpen_the_posterior_beyond_the_base_table():
    # the structural zero (w never has r) is invisible in the base table, where w shares its
    # class with x; a marginal on (a, s) shows it and the attack uses it
    t = _table(5, n=600)
    base = make_marginal(t, ["a", "b", "s"], [1, 1, 0], hierarchies=H)
    rel = _release(t, [base, make_marginal(t, ["a", "s"])])
    post, rw = marginals_attack(rel, t, return_baseline=True)
    truth = t.column("s")
    n = t.n_rows
    loglik = np.log(post.probs[np.arange(n), truth]).mean()
    loglik_rw = np.log(rw.probs[np.arange(n), truth]).mean()
    assert loglik > loglik_rw  # the marginals move the posterior toward the truth
    w = t.column("a") == t.schema["a"].encode(["w"])[0]
    r = list(post.values).index("r")
    assert (rw.probs[w, r] > 0.02).all() and np.allclose(post.probs[w, r], 0.0, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    levels=st.tuples(st.integers(0, 1), st.integers(0, 1)),
    extra=st.sampled_from([(), ("a", "s"), ("b", "s"), ("a", "b")]),
)
def test_posterior_rows_sum_to_one(seed, levels, extra):
    t = _table(seed, n=80)
    base = make_marginal(t, ["a", "b", "s"], [*levels, 0], hierarchies=H)
    margs = [base] + ([make_marginal(t, list(extra))] if extra else [])
    post, rw = marginals_attack(_release(t, margs), t, return_baseline=True)
    for p in (post, rw):
        assert p.probs.shape == (t.n_rows, 3)
        np.testing.assert_allclose(p.probs.sum(axis=1), 1.0, atol=1e-9)
        assert (p.probs >= 0).all()
    # every person's true value keeps positive probability (the release counts it)
    assert (post.probs[np.arange(t.n_rows), t.column("s")] > 0).all()


def test_bad_input_names_the_value():
    t = _table()
    base = make_marginal(t, ["a", "b", "s"], [1, 1, 0], hierarchies=H)
    rel = _release(t, [base])
    with pytest.raises(SchemaError, match="'b'"):
        marginals_attack(rel, t.to_pandas()[["a", "s"]])
    bad = t.to_pandas().astype(str)
    bad.loc[3, "a"] = "nowhere"
    with pytest.raises(SchemaError, match="nowhere"):
        marginals_attack(rel, bad)
    with pytest.raises(SchemaError, match="'zz'"):
        marginals_attack(rel, t, qi=["zz"])
    with pytest.raises(ParameterError, match="empty"):
        marginals_attack(rel, t.to_pandas().iloc[:0])
    # a combination the leaf base counts as 0 has no mass: not a person of the release
    df = t.to_pandas()
    t2 = Table.from_pandas(df[(df.a != "w") | (df.b != "0")]).with_roles(
        qi=["a", "b"], sensitive="s"
    )
    leaf = make_marginal(t2, ["a", "b", "s"], [0, 0, 0])
    with pytest.raises(ReleaseError, match="target row 1 has quasi-identifiers with no mass"):
        marginals_attack(_release(t2, [leaf]), pd.DataFrame({"a": ["x", "w"], "b": ["0", "0"]}))
    with pytest.raises(ReleaseError, match="marginals release"):
        marginals_attack(object(), t)


# -- the CLI ------------------------------------------------------------------------------------
def test_cli_attack_maxent_and_evaluate(run, tmp_path):
    from conftest import fails

    t = _table(7, n=400)
    src = tmp_path / "in.csv"
    t.to_pandas().to_csv(src, index=False)
    hdir = tmp_path / "h"
    hdir.mkdir()
    for name, h in H.items():
        (hdir / f"{name}.csv").write_text(h.to_csv())
    r = run("marginals", src, "--qi", "a,b", "--sensitive", "s", "--k", "10", "--l", "2",
            "--hierarchies", hdir, "--out", tmp_path / "m")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = run("attack", "maxent", tmp_path / "m", "--targets", src, "--out", tmp_path / "p.csv",
            "--baseline", tmp_path / "rw.csv")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "max-ent attack on 400 targets" in r.stdout
    post = pd.read_csv(tmp_path / "p.csv")
    assert list(post.columns) == ["row", "group_id", "p", "q", "r"] and len(post) == 400
    np.testing.assert_allclose(post[["p", "q", "r"]].sum(axis=1), 1.0, atol=1e-8)
    from privlab.publish import load_release

    expect = marginals_attack(load_release(tmp_path / "m"), t)
    np.testing.assert_allclose(post[["p", "q", "r"]].to_numpy(), expect.probs, atol=1e-9)
    r = run("evaluate", tmp_path / "p.csv", "--truth", src)
    assert r.returncode == 0, r.stderr
    assert "random worlds" in r.stdout
    # bad input: one error line, nothing written
    fails(run("attack", "maxent", tmp_path / "m", "--targets", src, "--qi", "a,zz",
              "--out", tmp_path / "x.csv"), "zz")  # fmt: skip
    r = run(
        "alphabeta",
        src,
        "--columns",
        "a,b",
        "--alpha",
        "0.5",
        "--beta",
        "0.01",
        "--republish",
        "--out",
        tmp_path / "ab",
    )
    assert r.returncode == 0, r.stderr
    fails(run("attack", "maxent", tmp_path / "ab", "--targets", src, "--out", tmp_path / "x.csv"),
          "alphabeta")  # fmt: skip
    assert not (tmp_path / "x.csv").exists()
