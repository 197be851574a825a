"""Generalization (issue 6): golden tables, brute-force re-checks of the published tables,
brute-force optimality."""

from __future__ import annotations

import itertools
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import canon_reference as canon
from privlab.data import Table
from privlab.data.datasets import load_adult
from privlab.data.default_hierarchies import dataset_hierarchies
from privlab.data.hierarchy import (
    Hierarchy,
    HierarchyError,
    flat,
    intervals,
    masking,
    ordered,
    read_hierarchy,
)
from privlab.errors import EligibilityError, ParameterError
from privlab.experiments.generalization_examples import (
    PAPER_TABLES,
    example_hierarchies,
    groups_of,
    measure_printed,
    paper_groups,
    reproduce,
)
from privlab.metrics import cost_of_privacy as cop
from privlab.metrics import privacy as pm
from privlab.metrics.risk import prosecutor_risk
from privlab.publish.generalization import GeneralizedRelease, generalize
from privlab.publish.lattice import ACCOUNTINGS, Lattice, optimal_node
from privlab.publish.models import PrivacyModel
from privlab.release.base import load_release


def canon_check(rel: GeneralizedRelease) -> None:
    """k, l (distinct and entropy), t and delta of the published table, counted by brute force
    (``canon_reference``: plain Python from the papers' definitions), equal privlab's.

    Recursive (c,l) is checked against loops in test_privacy_metrics.  The table is read back
    as published (``to_pandas``), so the check also covers the decoding.
    """
    df = rel.to_pandas()
    p = rel.privacy()
    qi = list(p.linkable)  # every published non-sensitive column: QIs and kept ones
    assert sorted(qi) == sorted(c for c in df.columns if c != rel.sensitive)
    rows, qpos = canon.records(df, qi)
    assert canon.k_anonymity(rows, qpos) == p.k
    kept = rel.table.schema.insensitive
    if rel.model.k > 1 and not kept:
        assert p.k >= rel.model.k
    if rel.sensitive is None:
        return
    s = list(df.columns).index(rel.sensitive)
    assert canon.distinct_l(rows, qpos, s) == p.distinct_l
    assert canon.entropy_l(rows, qpos, s) == pytest.approx(p.entropy_l, rel=1e-12)
    assert canon.t_closeness(rows, qpos, s, ordered=False) == pytest.approx(p.t_equal, abs=1e-12)
    if pd.api.types.is_numeric_dtype(df[rel.sensitive]):
        want = canon.t_closeness(rows, qpos, s, ordered=True)
        assert want == pytest.approx(p.t_ordered, abs=1e-12)
    assert canon.delta_disclosure(rows, qpos, s) == pytest.approx(p.delta, abs=1e-12)
    m = rel.model
    if kept:  # the model holds on the QIs; kept columns may split the classes further
        return
    if m.l is not None and m.l_variant == "distinct":
        assert p.distinct_l >= m.l
    if m.l is not None and m.l_variant == "entropy":
        assert p.entropy_l >= m.l - 1e-9
    if m.t is not None and rel.n_suppressed == 0:
        assert (p.t_equal if m.t_distance == "equal" else p.t_ordered) <= m.t + 1e-9


# -- seed 000 golden tables ---------------------------------------------------------------
def test_golden_tables_1_2_2_4_2_5():
    rel = reproduce()
    for name in ("1.2", "2.4"):
        r = rel[name]
        assert r.algorithm == "optimal"
        assert groups_of(r) == paper_groups(PAPER_TABLES[name])
        labels = set(r.to_pandas()["zip"])
        assert labels == {"9021*", "0762*", "3310*"}
        assert set(r.to_pandas()["gender"]) == {"*"}
        p = r.privacy()
        assert (p.k, p.distinct_l, p.n_classes) == (4, 2, 3)
        canon_check(r)
    r = rel["2.5"]
    assert r.algorithm == "mondrian"
    assert groups_of(r) == paper_groups(PAPER_TABLES["2.5"])
    assert set(r.to_pandas()["age"]) == {"25-43", "40-48", "24-49"}
    canon_check(r)
    # The paper's printed tables measure as the text says.
    assert measure_printed(PAPER_TABLES["1.2"]) == {"k": 4, "distinct_l": 2, "groups": 3}
    assert measure_printed(PAPER_TABLES["1.3"]) == {"k": 4, "distinct_l": 4, "groups": 3}
    assert measure_printed(PAPER_TABLES["2.5"])["k"] == 4


def test_examples_experiment_writes_result(tmp_path):
    from privlab.experiments import run_experiment

    res = run_experiment("generalization-examples", out=tmp_path / "ge", progress=False)
    assert (tmp_path / "ge" / "result.json").is_file()
    by = {r["table"]: r for r in res.rows}
    assert by["1.2"]["same_groups_as_paper"] and by["2.5"]["same_groups_as_paper"]
    assert {p["table"]: p["k"] for p in res.paper} == {"1.2": 4, "1.3": 4, "2.4": 4, "2.5": 4}


def test_table_1_3_l_diverse():
    rel = reproduce()
    for name in ("1.3", "1.3-mondrian"):
        r = rel[name]
        p = r.privacy()
        assert p.distinct_l == 4 and p.k == 6
        canon_check(r)
    # Global optimum for distinct 4-diversity keeps gender and suppresses age and zip.
    assert rel["1.3"].node == (0, 2, 5)


# -- Adult: every output re-checked by brute force ------------------------------------------
@pytest.fixture(scope="module")
def adult_small() -> Table:
    t = load_adult()
    rows = np.random.default_rng(0).choice(t.n_rows, 1500, replace=False)
    return t.take(np.sort(rows)).select(
        ["age", "education", "marital-status", "race", "sex", "occupation", "salary"]
    )


QI4 = ["age", "education", "marital-status", "sex"]


@pytest.mark.parametrize(
    "kw",
    [
        dict(k=5),
        dict(k=10, suppression=0.02),
        dict(k=3, l=3),
        dict(k=2, l=2.5, l_variant="entropy"),
        dict(k=2, l=2, l_variant="recursive", c=3),
        dict(k=2, t=0.25),
        dict(k=2, t=0.15, t_distance="ordered"),
        dict(k=2, delta=1.5),
        dict(k=5, method="mondrian"),
        dict(k=3, l=3, method="mondrian"),
        dict(k=4, t=0.3, method="mondrian"),
        dict(k=5, objective="entropy"),
        dict(k=5, objective="kl"),
    ],
)
def test_adult_outputs_match_brute_force(adult_small, kw):
    rel = generalize(adult_small, qi=QI4, sensitive="occupation", dataset="adult", **{"k": 2, **kw})
    canon_check(rel)
    assert rel.n_rows + rel.n_suppressed == adult_small.n_rows
    assert rel.n_suppressed <= int(kw.get("suppression", 0) * adult_small.n_rows)
    if kw.get("delta"):
        assert rel.privacy().delta < kw["delta"]


def test_numeric_sensitive_uses_ordered_distance(adult_small):
    t = adult_small.select(["education", "marital-status", "sex", "race", "age"])
    rel = generalize(
        t, qi=["education", "marital-status", "sex"], sensitive="age", dataset="adult",
        k=5, t=0.12, t_distance="ordered",
    )  # fmt: skip
    canon_check(rel)
    assert rel.privacy().t_ordered <= 0.12 + 1e-12


def test_optimal_beats_mondrian_nowhere_it_should_not(adult_small):
    """Mondrian (local) loses no more than the best full-domain recoding in discernibility."""
    g = generalize(adult_small, qi=QI4, k=10, dataset="adult")
    m = generalize(adult_small, qi=QI4, k=10, dataset="adult", method="mondrian")
    canon_check(g)
    canon_check(m)
    assert m.utility.discernibility <= g.utility.discernibility
    # each release's summary: rows, algorithm and model, and the lattice node of a
    # full-domain recoding (Mondrian, a local recoding, has none)
    sg, sm = g.summary(), m.summary()
    assert sg["rows"] == sm["rows"] == adult_small.n_rows
    assert sg["node"] == list(g.node) and all(isinstance(h, int) for h in sg["node"])
    assert m.node is None and sm["node"] is None
    assert sg["model"] == g.model.describe() and sg["algorithm"] == g.algorithm
    # Mondrian's search counts the partitions it cut: one class of the release each, every
    # one of at least k records
    sizes = m.to_pandas().groupby(list(QI4), observed=True).size()
    assert m.search["partitions"] == len(sizes) and sizes.min() >= 10


# -- brute force: the search is optimal; properties of the lattice --------------------------
def _small_table(data) -> tuple[Table, dict]:
    n = data.draw(st.integers(6, 40))
    rng = np.random.default_rng(data.draw(st.integers(0, 10**6)))
    df = pd.DataFrame(
        {
            "a": rng.integers(0, 12, n),
            "b": rng.choice(list("pqrstu"), n),
            "c": rng.choice(["x1", "x2", "y1", "y2"], n),
            "s": rng.choice(["u", "v", "w"], n, p=[0.5, 0.3, 0.2]),
        }
    )
    t = Table.from_pandas(df, qi=["a", "b", "c"], sensitive="s")
    h = {
        "a": intervals(t.schema["a"], widths=(2, 4, 8), start=0),
        "b": ordered(t.schema["b"], fanouts=(2, 2)),
        "c": Hierarchy("c", tuple((v, v[0], "*") for v in t.schema["c"].domain)),
    }
    return t, h


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_optimum_matches_brute_force(data):
    t, h = _small_table(data)
    k = data.draw(st.integers(1, 5))
    supp = data.draw(st.sampled_from([0.0, 0.1]))
    l_ = data.draw(st.sampled_from([None, 2]))
    variant = data.draw(st.sampled_from(["distinct", "entropy"]))
    t_ = data.draw(st.sampled_from([None, 0.35]))
    objective = data.draw(
        st.sampled_from(
            ["discernibility", "entropy", "entropy", "kl", "avg_class_size", "precision", "height"]
        )
    )
    accounting = data.draw(st.sampled_from(ACCOUNTINGS))
    model = PrivacyModel(k=k, l=l_, l_variant=variant, t=t_)
    comp = [h[q].compile(t.schema[q]) for q in ("a", "b", "c")]
    lat = Lattice(t.columns(["a", "b", "c"]), comp, t.column("s"), t.schema["s"].size)
    max_supp = int(supp * t.n_rows)
    best = None
    prev_k = {}
    every = {}
    for node in lat.nodes():
        node = tuple(int(v) for v in node)
        cls, sizes, ok = lat.evaluate(node, model)
        prev_k[node] = int(sizes.min())
        if sizes[~ok].sum() <= max_supp:
            every[node] = lat.cost(node, cls, sizes, ok, objective, k, accounting)
            # Roll-up from kept class tables counts what the rows count.
            assert lat.violations(node, model) == sizes[~ok].sum()
    if every:
        best = min(every, key=lambda v: (every[v], sum(v), v))
    res = optimal_node(
        lat, model, max_suppressed=max_supp, objective=objective, accounting=accounting
    )
    if best is None:
        assert res is None
    else:
        # The exact optimum, and the same node under the same tie-break (height, then order).
        assert res is not None and res.cost == pytest.approx(every[best])
        if objective != "kl":  # kl ties may differ in the last bit between nodes
            assert res.node == best
    # More generalization never lowers k.
    for u, ku in prev_k.items():
        for j in range(3):
            v = list(u)
            v[j] += 1
            if tuple(v) in prev_k:
                assert prev_k[tuple(v)] >= ku


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_every_class_at_least_k(data):
    t, h = _small_table(data)
    k = data.draw(st.integers(1, t.n_rows))
    method = data.draw(st.sampled_from(["optimal", "mondrian"]))
    rel = generalize(t, hierarchies=h, k=k, method=method)
    sizes = np.bincount(rel.classes())
    assert sizes.min() >= k and rel.n_rows == t.n_rows
    canon_check(rel)


def test_lattice_costs_equal_release_utility(adult_small):
    qi = QI4
    hier = dataset_hierarchies("adult")
    comp = [hier[q].compile(adult_small.schema[q]) for q in qi]
    lat = Lattice(adult_small.columns(qi), comp)
    for kw in (dict(k=7), dict(k=20, suppression=0.03)):
        rel = generalize(adult_small, qi=qi, dataset="adult", **kw)
        canon_check(rel)
        model = PrivacyModel(k=kw["k"])
        cls, sizes, ok = lat.evaluate(rel.node, model)
        for obj, field in [
            ("discernibility", "discernibility"),
            ("entropy", "non_uniform_entropy"),
            ("kl", "kl_divergence"),
        ]:
            c = lat.cost(rel.node, cls, sizes, ok, obj, model.k)
            assert c == pytest.approx(getattr(rel.utility, field), rel=1e-9)


# -- hierarchies ------------------------------------------------------------------------------
def test_hierarchy_builders_and_csv(tmp_path, table_1_1):
    z = masking(table_1_1.schema["zip"])
    assert z.level(1)["90210"] == "9021*" and z.level(5)["07620"] == "*"
    a = intervals(table_1_1.schema["age"], widths=(5, 10), start=0)
    assert a.level(1)["43"] == "40-44" and a.level(2)["43"] == "40-49" and a.height == 3
    path = tmp_path / "zip.csv"
    z.to_csv(path)
    assert path.read_text().splitlines()[0] == "07620;0762*;076**;07***;0****;*"
    back = read_hierarchy(path)
    assert back.rows == z.rows and back.attribute == "zip"
    o = ordered("x", list("abcde"), fanouts=(2,))
    assert o.level(1) == {"a": "a..b", "b": "a..b", "c": "c..d", "d": "c..d", "e": "e"}
    adult = load_adult()
    for name, hh in dataset_hierarchies("adult").items():
        hh.compile(adult.schema[name])  # every Adult value is covered


def test_bad_hierarchies(tmp_path, table_1_1):
    bad = tmp_path / "gender.csv"
    bad.write_text("M;*\nF;X;*\n")
    with pytest.raises(HierarchyError, match="unequal depth"):
        read_hierarchy(bad)
    with pytest.raises(HierarchyError, match="not a tree"):
        Hierarchy("x", (("a", "A", "*"), ("b", "A", "*"), ("c", "A", "*"), ("d", "B", "*"))) and (
            Hierarchy("x", (("a", "A", "P", "*"), ("b", "A", "Q", "*")))
        )
    with pytest.raises(HierarchyError, match=r"'F'.*missing"):
        generalize(table_1_1, hierarchies={"gender": flat("gender", ["M"])}, k=2)
    with pytest.raises(HierarchyError, match="one label"):
        Hierarchy("x", (("a", "A"), ("b", "B")))


def test_bad_parameters(table_1_1):
    h = example_hierarchies(table_1_1)
    with pytest.raises(ParameterError, match="k = 13 is larger than the table"):
        generalize(table_1_1, hierarchies=h, k=13)
    with pytest.raises(ParameterError, match="l = 5"):
        generalize(table_1_1, hierarchies=h, k=2, l=5)
    with pytest.raises(ParameterError, match="c > 0"):
        generalize(table_1_1, hierarchies=h, k=2, l=2, l_variant="recursive")
    with pytest.raises(ParameterError, match="method"):
        generalize(table_1_1, hierarchies=h, k=2, method="greedy")
    with pytest.raises(ParameterError, match="suppression"):
        generalize(table_1_1, hierarchies=h, k=2, suppression=1.5)
    # Unsatisfiable: the whole table's entropy is below l.
    df = pd.DataFrame({"q": list("abcdefghij"), "s": ["x"] * 9 + ["y"]})
    t = Table.from_pandas(df, qi=["q"], sensitive="s")
    with pytest.raises(EligibilityError, match="entropy l = 2"):
        generalize(t, k=2, l=2, l_variant="entropy")
    with pytest.raises(EligibilityError):
        generalize(t, k=2, l=2, l_variant="entropy", method="mondrian")


# -- measures -------------------------------------------------------------------------------
def test_distribution_measures_by_hand():
    counts = np.array([[2, 0, 2], [1, 1, 0], [1, 3, 2]])  # overall 4,4,4 of 12
    # equal: 1/2 sum|q - 1/3|
    assert pm.emd_equal(counts) == pytest.approx([1 / 3, 1 / 3, 1 / 6])
    # ordered: cumulative differences over m - 1 = 2
    q0 = np.array([0.5, 0, 0.5]) - 1 / 3
    assert pm.emd_ordered(counts)[0] == pytest.approx(np.abs(np.cumsum(q0)).sum() / 2)
    assert pm.delta_disclosure(counts) == math.inf
    # p(T) = (2/3, 1/3); classes (1/2, 1/2) and (3/4, 1/4): the largest |log| is log(3/2).
    ratios = [0.5 / (2 / 3), 0.5 / (1 / 3), 0.75 / (2 / 3), 0.25 / (1 / 3)]
    expected = max(abs(math.log(r)) for r in ratios)
    assert expected == pytest.approx(math.log(1.5))
    assert pm.delta_disclosure(np.array([[1, 1], [3, 1]])) == pytest.approx(expected)
    # Brickell-Shmatikov on the same partition.
    assert cop.a_know(counts) == pytest.approx((4 * 1 / 3 + 2 * 1 / 3 + 6 * 1 / 6) / 12)
    assert cop.a_acc(counts) == pytest.approx((2 + 1 + 3) / 12 - 1 / 3)
    assert cop.a_know(np.array([[2, 2, 2]])) == 0.0
    r = prosecutor_risk(np.array([2, 5, 5]), threshold=0.25)
    assert (r.max_risk, r.mean_risk, r.share_above) == (0.5, 3 / 12, 2 / 12)


def test_save_load_check_cli(cli, tmp_path, table_1_1):
    rel = reproduce()["2.5"]
    rel.save(tmp_path / "r")
    back = load_release(tmp_path / "r")
    assert isinstance(back, GeneralizedRelease)
    assert back.privacy() == rel.privacy()
    assert back.to_pandas().equals(rel.to_pandas())
    src = tmp_path / "in.csv"
    table_1_1.to_pandas().to_csv(src, index=False)
    hdir = tmp_path / "h"
    hdir.mkdir()
    for name, hh in example_hierarchies(table_1_1).items():
        hh.to_csv(hdir / f"{name}.csv")
    r = cli("generalize", src, "--qi", "gender,age,zip", "--sensitive", "disease",
            "--hierarchies", hdir, "--k", "4", "--out", tmp_path / "g")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = pd.read_csv(tmp_path / "g" / "table.csv", dtype=str)
    assert sorted(out["zip"].unique()) == ["0762*", "3310*", "9021*"]
    canon_check(load_release(tmp_path / "g"))
    r = cli("check", tmp_path / "g")
    assert r.returncode == 0 and "t_equal" in r.stdout and "max_risk" in r.stdout
    r = cli("generalize", src, "--qi", "gender,age,zip", "--hierarchies", hdir, "--k", "40",
            "--out", tmp_path / "g2")  # fmt: skip
    assert r.returncode == 2 and "k = 40 is larger" in r.stderr


def test_bundled_dataset_defaults(cli, tmp_path):
    r = cli("generalize", "adult", "--qi", "age,education,sex", "--sensitive", "salary",
            "--k", "50", "--l", "2", "--out", tmp_path / "a")  # fmt: skip
    assert r.returncode == 0, r.stderr
    meta = load_release(tmp_path / "a")
    assert meta.privacy().k >= 50 and meta.n_rows == 30162  # nothing suppressed (no --suppression)
    assert meta.privacy().distinct_l >= 2
    canon_check(meta)  # the table as published, read back from disk


def test_all_levels_enumerated():
    h = {"a": flat("a", [0, 1]), "b": masking("b", ["10", "11"])}
    t = Table.from_pandas(pd.DataFrame({"a": [0, 1], "b": ["10", "11"]}), qi=["a", "b"])
    lat = Lattice(t.columns(["a", "b"]), [h[c].compile(t.schema[c]) for c in "ab"])
    assert {tuple(v) for v in lat.nodes()} == set(itertools.product(range(2), range(3)))


# -- Brickell & Shmatikov measures on generalized releases ----------------------------------
def test_coarsening_never_raises_a_know_or_a_acc(adult_small):
    """A_diff and max are convex: merging classes never increases A_know or A_acc."""
    qi = ["age", "education", "sex"]
    hier = dataset_hierarchies("adult")
    comp = [hier[q].compile(adult_small.schema[q]) for q in qi]
    s = adult_small.column("occupation")
    m = adult_small.schema["occupation"].size
    lat = Lattice(adult_small.columns(qi), comp, s, m)
    model = PrivacyModel(k=1)
    vals = {}
    for node in lat.nodes():
        node = tuple(int(v) for v in node)
        cls, _, _ = lat.evaluate(node, model)
        counts = lat.class_counts(cls, int(cls.max()) + 1)
        vals[node] = (cop.a_know(counts), cop.a_acc(counts))
    for u, (ku, au) in vals.items():
        for j in range(len(qi)):
            v = list(u)
            v[j] += 1
            if tuple(v) in vals:
                kv, av = vals[tuple(v)]
                assert kv <= ku + 1e-12 and av <= au + 1e-12
    top = tuple(int(h.height) for h in comp)
    assert vals[top] == (pytest.approx(0.0), pytest.approx(0.0))


def test_cost_of_privacy_building_blocks(adult_small):
    from privlab.experiments.cost_of_privacy import QI, SENSITIVE, evaluate, split

    t = load_adult().select([*QI, SENSITIVE])
    t = t.take(np.random.default_rng(1).choice(t.n_rows, 3000, replace=False))
    train, test = split(t, np.random.default_rng(0))
    rows = evaluate(train, test, [("k", 50), ("t", 0.1)], ("naive_bayes",))
    by = {r["parameter"]: r for r in rows}
    y_tr, y_te = train.column(SENSITIVE), test.column(SENSITIVE)
    assert by["k=50"]["u_base"] == pytest.approx(np.mean(y_te == np.bincount(y_tr).argmax()))
    # The original table leaks the most; t-closeness bounds every class's A_diff by t.
    assert by["original"]["a_know"] >= by["k=50"]["a_know"] >= 0
    assert by["t=0.1"]["a_know"] <= 0.1 + 1e-12
    for r in rows:
        assert 0 <= r["u_base"] <= 1 and 0 <= r["u_san"] <= 1


def test_cost_of_privacy_neutral_workload_limits(adult_small):
    """Exact limits of the salary workload: generalizing every QI to its top (k = n) leaves
    naive Bayes the occupation alone (a one-category feature multiplies every class by 1), so
    U_san = u_base_s; the original table gives U_max; u_base_s is the per-occupation rule of
    naive Bayes, recomputed from counts."""
    from privlab.experiments.cost_of_privacy import NEUTRAL, QI, SENSITIVE, evaluate, split

    t = load_adult().select([*QI, SENSITIVE, NEUTRAL])
    t = t.take(np.random.default_rng(1).choice(t.n_rows, 3000, replace=False))
    train, test = split(t, np.random.default_rng(0))
    rows = evaluate(train, test, [("k", train.n_rows)], ("naive_bayes",), neutral=True)
    by = {(r["workload"], r["parameter"]): r for r in rows}
    top = by[(NEUTRAL, f"k={train.n_rows}")]
    assert top["classes"] == 1 and top["u_san"] == top["u_base_s"]
    assert by[(NEUTRAL, "original")]["u_san"] == by[(NEUTRAL, "original")]["u_max"]
    # naive Bayes on one feature (alpha = 1): argmax_y n_y (n_{s,y} + 1) / (n_y + |S|)
    s_tr, y_tr = train.column(SENSITIVE), train.column(NEUTRAL)
    m_s = train.schema[SENSITIVE].size
    n_sy = np.zeros((m_s, 2))
    np.add.at(n_sy, (s_tr, y_tr), 1)
    n_y = n_sy.sum(axis=0)
    rule = np.argmax(n_y * (n_sy + 1) / (n_y + m_s), axis=1)
    expect = np.mean(rule[test.column(SENSITIVE)] == test.column(NEUTRAL))
    assert top["u_base_s"] == pytest.approx(expect, abs=1e-12)


# -- peers (ANJANA is a bench-only dependency: skipped when not installed) -------------------
def test_no_more_loss_than_anjana(adult_small):
    pytest.importorskip("anjana")  # bench extra only
    from privlab.experiments.generalization_peers import class_stats, run_anjana

    qi = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex",
          "native-country"]  # fmt: skip
    t = load_adult()
    t = t.take(np.random.default_rng(2).choice(t.n_rows, 2000, replace=False))
    df = t.to_pandas()
    for k in (5, 20):
        rel = generalize(t, qi=qi, k=k, dataset="adult")
        canon_check(rel)
        _, out = run_anjana(df, k)
        ours = class_stats(rel.to_pandas(), qi, len(df), k)
        theirs = class_stats(out, qi, len(df), k)
        assert theirs["min_class"] >= k
        assert ours["discernibility"] <= theirs["discernibility"]


def test_warns_about_a_column_that_relabels_a_qi(adult_small):
    from privlab.errors import PrivacyWarning

    t = load_adult().take(np.arange(500)).select(["age", "education", "education-num", "sex"])
    with pytest.warns(PrivacyWarning, match="'education-num' determines quasi-identifier"):
        rel = generalize(
            t, qi=["age", "education", "sex"], keep=["education-num"], k=5, dataset="adult"
        )
    canon_check(rel)
    # not kept, it is not published at all (and nothing warns)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        rel = generalize(t, qi=["age", "education", "sex"], k=5, dataset="adult")
    assert "education-num" not in rel.to_pandas().columns


# -- information loss and Brickell & Shmatikov measures by hand -------------------------------
def test_utility_measures_by_hand():
    """4 records, one QI over {a, b, c} = codes 0, 1, 2: a, a, b -> cell {a, b}; c -> {c}."""
    from privlab.metrics.utility import cell_utility

    x = np.array([[0], [0], [1], [2]])
    cover = [np.array([[True, True, False], [False, False, True]])]
    rep = cell_utility(x, [np.array([0, 0, 0, 1])], cover, np.array([0, 0, 0, 1]), k=1,
                       levels=[1], heights=[2])  # fmt: skip
    assert rep.discernibility == 3**2 + 1**2
    assert rep.avg_class_size == 4 / 2
    assert rep.ncp == pytest.approx((3 * (2 - 1) / (3 - 1)) / 4)
    # -log2 P(v | cell): a, a in {a, b} (2 of 3), b (1 of 3), c alone
    assert rep.non_uniform_entropy == pytest.approx(2 * math.log2(3 / 2) + math.log2(3))
    # input (1/2, 1/4, 1/4); release spreads 3/4 over {a, b} and 1/4 on c
    kl = 0.5 * math.log(0.5 / 0.375) + 0.25 * math.log(0.25 / 0.375)
    assert rep.kl_divergence == pytest.approx(kl)
    assert rep.height == 1 and rep.precision == pytest.approx(0.5)
    # a suppressed record is charged the table size and spread over the whole domain
    sup = cell_utility(x, [np.array([0, 0, 0, 0])], cover, np.array([0, 0, 0, -1]), k=1)
    assert sup.discernibility == 3**2 + 1 * 4 and sup.n_suppressed == 1
    assert sup.ncp == pytest.approx((3 * 0.5 + 1.0) / 4)


def test_brickell_shmatikov_measures_by_hand():
    # two classes over 3 values; table distribution p(T) = (4, 4, 2) / 10
    counts = np.array([[3, 1, 0], [1, 3, 2]])
    p = np.array([0.4, 0.4, 0.2])
    q = counts / counts.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(cop.a_diff(counts), 0.5 * np.abs(q - p).sum(axis=1))
    assert cop.a_diff(counts)[0] == pytest.approx(0.5 * (0.35 + 0.15 + 0.2))
    np.testing.assert_allclose(cop.a_quot(counts), q / p)
    assert cop.a_quot(counts)[0, 0] == pytest.approx(0.75 / 0.4)
    a_diff_2 = 0.5 * (abs(1 / 6 - 0.4) + abs(1 / 2 - 0.4) + abs(1 / 3 - 0.2))
    assert cop.a_know(counts) == pytest.approx((4 * 0.35 + 6 * a_diff_2) / 10)
    # adversary: class 1 guesses value 0 (3 of 4), class 2 value 1 (3 of 6); table: 0.4
    assert cop.a_acc(counts) == pytest.approx((4 * 0.75 + 6 * 0.5) / 10 - 0.4)
    # value 2 is absent from class 1: delta-disclosure is infinite
    assert cop.cost_of_privacy(counts).max_log_a_quot == math.inf
    both = np.array([[3, 1, 1], [1, 3, 1]])  # p(T) = (0.4, 0.4, 0.2); classes (.6, .2, .2), ...
    c = cop.cost_of_privacy(both)
    # quotients 1.5, 0.5, 1 (and mirrored): max |log| = log 2 > log 1.5
    assert c.max_log_a_quot == pytest.approx(math.log(2))
    assert c.max_a_diff == pytest.approx(0.2) and c.a_know == pytest.approx(0.2)


# -- what release.json may hold (issue 29, part 5) ------------------------------------------
def _suppressed_rows(rel: GeneralizedRelease, table: Table, qi) -> np.ndarray:
    """Input rows the release suppressed: those whose exact QI tuple the custody's truth
    (each published row's exact QIs) holds fewer times than the input."""
    from collections import Counter

    published = Counter(map(tuple, rel.custody.truth.codes.tolist()))
    rows = [tuple(r) for r in table.select(list(qi)).codes.tolist()]
    left = published.copy()
    out = []
    for i, r in enumerate(rows):
        if left[r] > 0:
            left[r] -= 1
        else:
            out.append(i)
    return np.asarray(out)


def test_d_and_d_minus_one_suppressed_person_publish_identical_files(adult_small, tmp_path):
    """Two releases of D and of D minus one suppressed person publish the same table; every
    public file is then the same byte for byte (nothing of a generalization is random by
    design), while the custody's measures over the input tell them apart: the raw-input
    KL and non-uniform entropy that release.json used to publish gave away that person's QI
    tuple and its multiplicity."""
    import filecmp

    kw = {"qi": QI4, "sensitive": "occupation", "k": 5, "suppression": 0.05, "dataset": "adult"}
    rel = generalize(adult_small, **kw)
    supp = _suppressed_rows(rel, adult_small, QI4)
    assert supp.size == rel.n_suppressed > 0
    # the person alone with their QI tuple among the suppressed (the c* = 1)
    qi = adult_small.select(QI4).codes
    tuples, count = np.unique(qi[supp], axis=0, return_counts=True)
    alone = tuples[count == 1][0]
    who = int(supp[(qi[supp] == alone).all(axis=1)][0])
    smaller = adult_small.take(np.delete(np.arange(adult_small.n_rows), who))
    rel2 = generalize(smaller, **kw)
    assert np.array_equal(rel.table.codes, rel2.table.codes)  # the same published table
    rel.save(tmp_path / "d", custody=tmp_path / "d.custody")
    rel2.save(tmp_path / "d1", custody=tmp_path / "d1.custody")
    files = sorted(p.name for p in (tmp_path / "d").iterdir())
    assert (
        files
        == sorted(p.name for p in (tmp_path / "d1").iterdir())
        == [
            "release.json",
            "table.csv",
        ]
    )
    _, mismatch, errors = filecmp.cmpfiles(tmp_path / "d", tmp_path / "d1", files, shallow=False)
    assert mismatch == [] and errors == []
    meta = json.loads((tmp_path / "d" / "release.json").read_text())
    assert not {"n_input", "n_suppressed", "search"} & set(meta)
    public = {"n_published", "n_classes", "discernibility", "avg_class_size", "height"}
    assert set(meta["utility"]) == {*public, "classification_metric"}
    # the classification metric of the published table, by hand: in each class of rows
    # alike on the QIs, the rows whose occupation is not the class's most common one
    pub = pd.read_csv(tmp_path / "d" / "table.csv", dtype=str, keep_default_na=False)
    wrong = sum(len(s) - s.value_counts().max() for _, s in pub.groupby(list(QI4))["occupation"])
    assert meta["utility"]["classification_metric"] == pytest.approx(wrong / len(pub))
    assert meta["utility"]["classification_metric"] > 0
    # the custodian keeps what tells them apart
    a = load_release(tmp_path / "d", custody=tmp_path / "d.custody")
    b = load_release(tmp_path / "d1", custody=tmp_path / "d1.custody")
    assert (a.n_input, a.n_suppressed) == (b.n_input + 1, b.n_suppressed + 1)
    assert a.utility == rel.utility and a.search == rel.search
    assert a.utility.kl_divergence != b.utility.kl_divergence
    assert a.utility.non_uniform_entropy != b.utility.non_uniform_entropy
    # loaded without custody, the release knows only what it published
    bare = load_release(tmp_path / "d")
    assert bare.n_input is None and bare.utility is None
    assert bare.published_utility() == meta["utility"]


def test_published_utility_by_hand():
    from privlab.metrics.utility import published_utility

    # classes {0: 3 rows, labels a a b}, {7: 1 row, label c}; k = 2, node levels (1, 2)
    u = published_utility(np.array([0, 0, 0, 7]), np.array([0, 0, 1, 2]), k=2, levels=(1, 2))
    assert u == {"n_published": 4, "n_classes": 2, "discernibility": 10.0,
                 "avg_class_size": 1.0, "height": 3, "classification_metric": 0.25}  # fmt: skip
    # weights: each row stands for several records (the Spark engine's distinct tuples)
    w = published_utility(np.array([0, 0, 7]), np.array([0, 1, 2]), weights=np.array([2, 1, 1]))
    assert w["discernibility"] == 10.0 and w["classification_metric"] == 0.25
    assert w["height"] is None and w["avg_class_size"] == 2.0


def test_mondrian_cuts_the_qi_of_larger_normalized_width():
    """Mondrian splits the QI whose class spans the larger normalized width (LeFevre et al.
    2006): a hierarchical QI's span is (leaves under its lowest common ancestor - 1) /
    (domain size - 1), here (2 - 1) / (5 - 1) = 0.25 for {a, b}, against 1 for ages 0 and 9
    over the domain 0..9; so the ages are cut and c is published as its ancestor ``ab``."""
    df = pd.DataFrame({"age": [0, 9, 0, 9], "c": ["a", "a", "b", "b"]})
    t = Table.from_pandas(df, qi=["age", "c"], domains={"age": list(range(10)), "c": list("abcde")})
    h = {
        "c": Hierarchy("c", tuple((v, "ab" if v in "ab" else "cde", "*") for v in "abcde")),
        "age": Hierarchy("age", tuple((str(v), "*") for v in range(10))),
    }
    rel = generalize(t, method="mondrian", hierarchies=h)  # k = 2 by default
    out = rel.to_pandas().astype(str)
    assert out.to_numpy().tolist() == [["0", "ab"], ["0", "ab"], ["9", "ab"], ["9", "ab"]]
    assert rel.parameters() == {
        "algorithm": "mondrian",
        **PrivacyModel(k=2).to_dict(),
        "suppression": 0.0,
        "objective": "discernibility",
        "accounting": "privlab",
    }
    assert rel.claims() == [
        {"claim": "k = 2 (every class of the quasi-identifiers)", "holds": True,
         "measured": "smallest class 2"}
    ]  # fmt: skip
    with pytest.raises(ParameterError, match=r"suppression must be in \[0, 1\), got 1"):
        generalize(t, hierarchies=h, suppression=1)


def test_a_kept_relabel_of_a_two_valued_qi_warns_at_the_callers_line():
    """A kept column that relabels a QI of two values (as many values as it) is reported;
    a constant QI is not (nothing to undo); both warnings point at the caller's line."""
    from privlab.errors import PrivacyWarning

    df = pd.DataFrame({"q": ["a", "b", "a", "b"], "c": ["x", "y", "x", "y"], "z": ["u"] * 4})
    t = Table.from_pandas(df, qi=["q", "z"])
    h = {"q": flat(t.schema["q"]), "z": flat(t.schema["z"])}
    with pytest.warns(PrivacyWarning, match="'c' determines quasi-identifier 'q'") as rec:
        generalize(t, qi=["q", "z"], keep=["c"], k=2, hierarchies=h)
    assert [w.filename for w in rec] == [__file__]
    assert "'z'" not in str(rec[0].message)
    ages = Table.from_pandas(pd.DataFrame({"age": [30, 31, 40, 41]}), qi=["age"])
    with pytest.warns(PrivacyWarning, match="built from the data's own range") as rec:
        generalize(ages, k=2)
    assert rec[0].filename == __file__


def test_a_class_holding_one_value_of_a_hierarchical_qi_spans_width_zero():
    """Every record holds c = a (a leaf under ``ab``): c's span is one value, width 0, not
    the (2 - 1) / (5 - 1) of its parent, so Mondrian cuts the ages (width 1/9) into two
    classes of k = 2 instead of trying c and stopping at one class."""
    df = pd.DataFrame({"age": [0, 1, 0, 1], "c": ["a"] * 4})
    t = Table.from_pandas(df, qi=["age", "c"], domains={"age": list(range(10)), "c": list("abcde")})
    h = {
        "c": Hierarchy("c", tuple((v, "ab" if v in "ab" else "cde", "*") for v in "abcde")),
        "age": Hierarchy("age", tuple((str(v), "*") for v in range(10))),
    }
    rel = generalize(t, method="mondrian", hierarchies=h)
    assert rel.to_pandas().astype(str).to_numpy().tolist() == [["0", "a"], ["0", "a"],
                                                                ["1", "a"], ["1", "a"]]  # fmt: skip
    assert rel.utility.n_classes == 2 and rel.utility.ncp == 0.0


def test_mondrian_widths_are_normalized_by_the_domain_span():
    """A numeric QI's width is its class's range over the domain's range, whatever the
    units: ages 0 and 0.4 over the domain 0..0.4 span 1, more than c's {a, b, c} at
    (3 - 1) / (5 - 1) = 0.5, so the ages are cut; a one-valued QI (z) takes no part and
    raises no numeric warning."""
    df = pd.DataFrame({"age": [0.0, 0.4, 0.0, 0.4], "c": ["a", "a", "c", "c"], "z": ["u"] * 4})
    t = Table.from_pandas(
        df, qi=["age", "c", "z"], domains={"age": [0.0, 0.2, 0.4], "c": list("abcde")}
    )
    h = {
        "c": Hierarchy("c", tuple((v, "abc" if v in "abc" else "de", "*") for v in "abcde")),
        "age": Hierarchy("age", tuple((str(v), "*") for v in (0.0, 0.2, 0.4))),
        "z": flat(t.schema["z"]),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rel = generalize(t, k=2, method="mondrian", hierarchies=h)
    out = rel.to_pandas().astype(str)
    assert sorted(out["age"]) == ["0", "0", "0.4", "0.4"]
    assert out["c"].tolist() == ["abc"] * 4 and out["z"].tolist() == ["u"] * 4


def test_a_release_whose_qi_order_is_not_the_column_order_loads_with_its_order(tmp_path):
    """The QIs in the order the caller gave (the lattice node follows it), not the table's
    column order, survive a save and a load."""
    from privlab.publish import generalize, load_release

    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "a": rng.integers(0, 4, 300),
            "b": rng.choice(["x", "y", "z"], 300),
            "s": rng.choice(["p", "q", "r"], 300),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = generalize(df, qi=["b", "a"], sensitive="s", k=5)
        rel.save(tmp_path / "r", custody=tmp_path / "c")
        back = load_release(tmp_path / "r")
    assert rel.qi == ("b", "a") and back.qi == ("b", "a")
    assert back.node == rel.node


def test_the_spark_engine_is_handed_the_schemas_roles_by_default(monkeypatch):
    """``engine="spark"`` without ``qi``/``sensitive``/``keep`` hands the Spark engine the
    schema's own roles (the engine itself is tested in tests/test_spark.py)."""
    import privlab.publish.spark_generalization as sg
    from privlab.data import Schema
    from privlab.data.schema import Attribute, Role
    from privlab.data.spark import SparkInput
    from privlab.publish import generalize

    schema = Schema(
        (
            Attribute("q", ("a", "b"), Role.QI),
            Attribute("s", ("x", "y"), Role.SENSITIVE),
            Attribute("k", ("u", "v"), Role.INSENSITIVE),
        )
    )

    class _Frame:
        columns = ("q", "s", "k")

    seen = {}

    def fake(source, settings):
        seen["settings"] = settings
        return "the spark release"

    monkeypatch.setattr(sg, "generalize_spark", fake)
    out = generalize(SparkInput(_Frame(), schema), k=2, engine="spark")
    assert out == "the spark release"
    got = seen["settings"]
    assert got.qi == ("q",) and got.sensitive == "s" and got.keep == ("k",)
    assert got.model.k == 2
    generalize(SparkInput(_Frame(), schema), k=2, keep=[], qi=["q"], engine="spark")
    assert seen["settings"].keep == ()


def test_the_inputs_measures_come_back_with_custody_only(tmp_path):
    """The input's measures (n_input, n_suppressed) stay in custody: release.json holds
    none, a release loaded without its custody has them unknown (None), with it they are
    back."""
    from privlab.publish import generalize, load_release

    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": rng.integers(0, 4, 200), "s": rng.choice(["p", "q", "r"], 200)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = generalize(df, qi=["a"], sensitive="s", k=5, suppression=0.05)
        rel.save(tmp_path / "r", custody=tmp_path / "c")
    meta = json.loads((tmp_path / "r" / "release.json").read_text())
    assert "n_input" not in meta and "n_suppressed" not in meta
    bare = load_release(tmp_path / "r")
    assert bare.n_input is None and bare.n_suppressed is None
    full = load_release(tmp_path / "r", custody=tmp_path / "c")
    assert full.n_input == 200 and full.n_suppressed == rel.n_suppressed


def test_a_constant_kept_column_beside_a_constant_qi_is_no_dependency():
    """A QI with one value reveals nothing, so a kept column that is also constant does not
    "determine" it: no warning; a kept copy of a QI with several values does warn."""
    from privlab.errors import PrivacyWarning
    from privlab.publish import generalize

    rng = np.random.default_rng(2)
    n = 120
    df = pd.DataFrame(
        {
            "q": ["same"] * n,
            "r": rng.choice(["a", "b", "c"], n),
            "k": ["one"] * n,
            "s": rng.choice(["p", "q", "r"], n),
        }
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        generalize(df, qi=["q", "r"], sensitive="s", keep=["k"], k=3)
    assert not [w for w in caught if "determines quasi-identifier" in str(w.message)]
    df["copy"] = df["r"].map({"a": "A", "b": "B", "c": "C"})
    with pytest.warns(PrivacyWarning, match="'copy' determines quasi-identifier 'r'"):
        generalize(df, qi=["q", "r"], sensitive="s", keep=["k", "copy"], k=3)


def test_claims_report_a_k_the_classes_do_not_reach(tmp_path):
    """``claims()`` measures k on the published classes: a model k above the smallest class
    does not hold; a custody without the input's measures still attaches."""
    import dataclasses

    from privlab.publish import generalize, load_release
    from privlab.publish.models import PrivacyModel

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"a": rng.integers(0, 6, 200), "s": rng.choice(["p", "q"], 200)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = generalize(df, qi=["a"], sensitive="s", k=4)
    assert rel.claims()[0]["holds"]
    smallest = int(rel.claims()[0]["measured"].split()[-1])
    strict = dataclasses.replace(rel, model=PrivacyModel(k=smallest + 1))
    assert strict.claims()[0]["holds"] is False
    rel.save(tmp_path / "r", custody=tmp_path / "c")
    cpath = tmp_path / "c" / "custody.json"
    meta = json.loads(cpath.read_text())
    meta.pop("input_measures")
    cpath.write_text(json.dumps(meta))
    back = load_release(tmp_path / "r", custody=tmp_path / "c")
    assert back is not None and back.custody is not None and back.n_input is None


def test_mondrian_measures_a_one_valued_qi_as_no_loss():
    """A quasi-identifier with one value loses nothing when generalized: its normalized
    width is 0, not 0/0, so the release's NCP stays a number."""
    from privlab.publish import generalize

    rng = np.random.default_rng(7)
    df = pd.DataFrame(
        {
            "one": ["x"] * 60,
            "age": rng.integers(20, 60, 60),
            "s": rng.choice(["p", "q", "r"], 60),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = generalize(df, qi=["one", "age"], sensitive="s", k=4, method="mondrian")
    u = rel.utility
    assert np.isfinite(u.ncp) and 0 <= u.ncp <= 1
    alone = generalize(df[["age", "s"]], qi=["age"], sensitive="s", k=4, method="mondrian")
    assert u.ncp == pytest.approx(alone.utility.ncp / 2)  # the mean over two QIs, one at 0


# -- the claims of l-diversity; refused parameters and listings -------------------------------
def _class_value_counts(rel: GeneralizedRelease) -> list[list[int]]:
    """Per published class of the QIs, the counts of its sensitive values, largest first
    (counted with pandas on the table as published)."""
    df = rel.to_pandas()
    by = df.groupby(list(rel.qi), observed=True)[rel.sensitive]
    return [sorted((c for c in s.value_counts().tolist() if c), reverse=True) for _, s in by]


def test_claims_state_distinct_l_over_the_published_classes(table_1_1):
    """A release with a sensitive column and a distinct l claims ``distinct l = ...`` (no c:
    that is recursive (c,l)'s), measured as the classes with fewer distinct values; a
    k-anonymous release claims its k alone."""
    import dataclasses

    h = example_hierarchies(table_1_1)
    rel = generalize(table_1_1, hierarchies=h, k=2, l=2)
    counts = _class_value_counts(rel)
    k_claim = rel.claims()[0]
    assert k_claim["claim"] == "k = 2 (every class of the quasi-identifiers)"
    assert rel.claims()[1:] == [
        {
            "claim": "distinct l = 2",
            "holds": True,
            "measured": f"0 of {len(counts)} classes below it",
        }
    ]
    assert all(len(c) >= 2 for c in counts)  # what the claim says, counted by hand
    # the same classes against l = 3: the classes of fewer than 3 distinct values fail it
    below = sum(len(c) < 3 for c in counts)
    assert below > 0
    strict = dataclasses.replace(rel, model=PrivacyModel(k=2, l=3))
    assert strict.claims()[1:] == [
        {"claim": "distinct l = 3", "holds": False,
         "measured": f"{below} of {len(counts)} classes below it"}
    ]  # fmt: skip
    plain = generalize(table_1_1, hierarchies=h, k=2)
    assert plain.sensitive == "disease"
    assert [c["claim"] for c in plain.claims()] == ["k = 2 (every class of the quasi-identifiers)"]


def test_claims_state_recursive_l_with_its_c(table_1_1):
    """Recursive (c,l)-diversity is claimed with its c; a class fails it when its most frequent
    value's count r_1 exceeds c times the counts from the l-th on (Kifer & Gehrke 2006,
    Defn 2.5: ``r_1 <= c sum_{i>=l} r_i``), checked here by hand."""
    import dataclasses

    h = example_hierarchies(table_1_1)
    rel = generalize(table_1_1, hierarchies=h, k=2, l=2, l_variant="recursive", c=3)
    counts = _class_value_counts(rel)

    def below(l, c):
        return sum(not r[0] <= c * sum(r[l - 1 :]) for r in counts)

    assert below(2, 3) == 0
    assert rel.claims()[1:] == [
        {"claim": "recursive l = 2, c = 3", "holds": True,
         "measured": f"0 of {len(counts)} classes below it"}
    ]  # fmt: skip
    n_bad = below(2, 1.5)
    assert n_bad > 0
    strict = dataclasses.replace(rel, model=PrivacyModel(k=2, l=2, l_variant="recursive", c=1.5))
    assert strict.claims()[1:] == [
        {"claim": "recursive l = 2, c = 1.5", "holds": False,
         "measured": f"{n_bad} of {len(counts)} classes below it"}
    ]  # fmt: skip


def _no_sensitive(table_1_1) -> Table:
    df = table_1_1.to_pandas().drop(columns="disease")
    return Table.from_pandas(df, qi=["gender", "age", "zip"])


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        (
            dict(accounting="ARX"),
            "accounting must be one of privlab, arx, arx-monotonic, not 'ARX'",
        ),
        (dict(suppression=0.1, method="mondrian"), "record suppression applies to the optimal"),
        (dict(engine="spark", method="mondrian"), "the Spark engine runs the optimal method only"),
        (dict(schema="schema"), r"schema= applies to the Spark and stream engines"),
        (dict(qi=[]), "no quasi-identifier given"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(table_1_1, kw, needle):
    h = example_hierarchies(table_1_1)
    if kw.get("schema") == "schema":
        kw = {**kw, "schema": table_1_1.schema}
    with pytest.raises(ParameterError, match=needle):
        generalize(table_1_1, hierarchies=h, k=2, **kw)


def test_a_table_without_quasi_identifiers_is_refused():
    t = Table.from_pandas(pd.DataFrame({"a": ["x", "y"], "b": ["u", "v"]}))
    assert t.schema.qi == ()
    with pytest.raises(ParameterError, match="no quasi-identifier given"):
        generalize(t, k=1)


@pytest.mark.parametrize("model", [dict(l=2), dict(t=0.2), dict(delta=1.0)])
def test_a_model_of_the_sensitive_values_needs_a_sensitive_column(table_1_1, model):
    t = _no_sensitive(table_1_1)
    h = example_hierarchies(table_1_1)
    assert t.schema.sensitive is None
    with pytest.raises(
        ParameterError, match="l-diversity, t-closeness and delta-disclosure need --sensitive"
    ):
        generalize(t, hierarchies=h, k=2, **model)
    rel = generalize(t, hierarchies=h, k=2)  # k-anonymity alone needs none
    assert rel.sensitive is None and rel.privacy().k >= 2


def test_a_release_json_listing_other_quasi_identifiers_is_refused(tmp_path, table_1_1):
    """release.json's ``qi`` (the node's order) must name the schema's QIs: one edited to
    drop one, even with its digest recomputed, is refused when loaded."""
    from privlab._release_files import release_text
    from privlab.errors import ReleaseError

    rel = generalize(table_1_1, hierarchies=example_hierarchies(table_1_1), k=2)
    rel.save(tmp_path / "r")
    path = tmp_path / "r" / "release.json"
    meta = json.loads(path.read_text())
    assert sorted(meta["qi"]) == ["age", "gender", "zip"]
    meta["qi"] = ["age", "gender"]
    path.write_text(release_text(meta))
    with pytest.raises(ReleaseError, match="the listed quasi-identifiers differ from the schema's"):
        load_release(tmp_path / "r")
