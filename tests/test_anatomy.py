import itertools
import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from privlab.data import Attribute, Role, Schema, Table, load_adult
from privlab.errors import (
    EligibilityError,
    OutputExistsError,
    ParameterError,
    PrivlabError,
    ReleaseError,
    SchemaError,
)
from privlab.publish import AnatomyRelease, anatomize, load_release


def _rows(table: Table, names) -> Counter:
    return Counter(map(tuple, table.columns(names).tolist()))


def _check_anatomy(table: Table, rel: AnatomyRelease, qi, sens, l) -> None:
    n = table.n_rows
    assert rel.n_rows == n
    sizes = np.bincount(rel.group_id)
    # every tuple in exactly one group; sizes l, or l+1 where a residue joined (residues go
    # to distinct groups whenever there are enough groups; fewer than l residues in all)
    n_res = int((sizes - l).sum())
    assert sizes.sum() == n and sizes.min() >= l and sizes.max() <= 2 * l - 1 and n_res < l
    # each group has distinct sensitive values
    c = rel.group_counts()
    assert c.max() == 1
    assert np.array_equal(c.sum(axis=1), sizes)
    # ST counts match the true values of each group
    t = np.zeros_like(c)
    np.add.at(t, (rel.group_id, rel.truth), 1)
    assert np.array_equal(t, c)
    # the multiset of QI rows (and of QI rows with their truth) is unchanged
    assert _rows(rel.qit, qi) == _rows(table, qi)
    orig = Counter(map(tuple, np.column_stack([table.columns(qi), table.column(sens)]).tolist()))
    pub = Counter(map(tuple, np.column_stack([rel.qit.codes, rel.truth]).tolist()))
    assert orig == pub


@st.composite
def eligible_tables(draw):
    l = draw(st.integers(2, 5))
    m = draw(st.integers(l, 7))
    n = draw(st.integers(l, 60))
    sens = draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n))
    q = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    counts = np.bincount(sens, minlength=m)
    if counts.max() * l > n or (counts > 0).sum() < l:
        # make it eligible: cycle through values
        sens = [i % m for i in range(n)]
        if n < l * 1 or max(np.bincount(sens)) * l > n:
            sens = [i % l for i in range(n - n % l)]
            q = q[: len(sens)]
    df = pd.DataFrame({"q": q, "z": [x % 2 for x in q], "s": sens})
    return Table.from_pandas(df), l, draw(st.integers(0, 2**31))


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(eligible_tables())
def test_anatomy_invariants(case):
    table, l, seed = case
    rel = anatomize(table, qi=["q", "z"], sensitive="s", l=l, rng=np.random.default_rng(seed))
    _check_anatomy(table, rel, ["q", "z"], "s", l)
    p = rel.privacy()
    assert p.distinct_l >= l and p.min_group >= l and p.max_disclosure <= 1 / l
    # identity: Anatomy publishes the QIs exactly, so k is that of the QI table itself
    _, counts = np.unique(table.columns(["q", "z"]), axis=0, return_counts=True)
    assert p.k == counts.min() and p.partition == "groups"


@pytest.mark.parametrize("l", [2, 3, 4, 5])
def test_anatomy_on_adult(l):
    table = load_adult()
    qi = ["workclass", "relationship", "sex", "salary"]
    rel = anatomize(table, qi=qi, sensitive="occupation", l=l, rng=np.random.default_rng(l))
    _check_anatomy(table, rel, qi, "occupation", l)
    # with thousands of groups every residue finds its own group: sizes l or l + 1
    assert set(rel.group_sizes().tolist()) <= {l, l + 1}


@given(st.integers(0, 2**31), st.integers(2, 5))
@settings(max_examples=40, deadline=None)
def test_residues_join_distinct_groups(seed, l):
    # m = l + 1 values: every group of l distinct values lacks exactly one value, so the
    # groups lacking one residue's value are disjoint from those lacking another's, and each
    # residue's value was skipped by at least one group: a distinct matching always exists.
    k = 6
    s = np.concatenate([np.full(k + 1 if v < l else k, v) for v in range(l + 1)])
    df = pd.DataFrame({"q": np.arange(s.size) % 3, "s": s})
    rel = anatomize(
        Table.from_pandas(df), qi=["q"], sensitive="s", l=l, rng=np.random.default_rng(seed)
    )
    _check_anatomy(Table.from_pandas(df), rel, ["q"], "s", l)
    assert set(rel.group_sizes().tolist()) <= {l, l + 1}


def _same(a: AnatomyRelease, b: AnatomyRelease) -> bool:
    return np.array_equal(a.group_id, b.group_id) and np.array_equal(a.qit.codes, b.qit.codes)


def test_a_seed_is_salted_and_custody_replays_it(tmp_path):
    # A guessable seed must not replay a release: the same seed gives other releases ...
    table = load_adult().take(np.arange(3000))
    kw = dict(qi=["workclass", "sex"], sensitive="occupation", l=3)
    a, b = anatomize(table, **kw, rng=7), anatomize(table, **kw, rng=7)
    assert not _same(a, b)
    assert a.custody.seed.seed == 7 and a.custody.seed.salt.bit_length() > 100
    assert a.custody.seed.salt != b.custody.seed.salt
    # ... and the seed with its salt (the saved custody's record) replays one exactly
    with pytest.raises(PrivlabError, match="save it first"):
        a.custody.replay()  # a replay is checked against the saved release
    a.save(tmp_path / "a", custody=tmp_path / "a.c")
    back = load_release(tmp_path / "a", custody=tmp_path / "a.c")
    assert _same(a, anatomize(table, **kw, rng=back.custody.replay()))
    # a caller's own generator is used as given (experiments), and custody cannot replay it
    g1, g2 = (anatomize(table, **kw, rng=np.random.default_rng(5)) for _ in range(2))
    assert _same(g1, g2) and not g1.custody.seed.replayable and g1.custody.seed.experiment
    with pytest.raises(PrivlabError, match="caller's own generator"):
        g1.custody.replay()
    with pytest.raises(ParameterError, match="non-negative"):
        anatomize(table, **kw, rng=-1)


def test_qit_order_does_not_reveal_sensitive_value():
    # Input sorted by the sensitive value: the published row order must be independent of it.
    n, m = 6000, 6
    df = pd.DataFrame({"q": np.arange(n) % 5, "s": np.repeat(np.arange(m), n // m)})
    rel = anatomize(
        Table.from_pandas(df), qi=["q"], sensitive="s", l=3, rng=np.random.default_rng(0)
    )
    rho, _ = stats.spearmanr(np.arange(n), rel.truth)
    assert abs(rho) < 0.05
    # group ids carry no order either: the mean value code is flat across group-id halves
    half = rel.group_id < rel.n_groups // 2
    assert abs(rel.truth[half].mean() - rel.truth[~half].mean()) < 0.15


def test_table_1_4_is_a_valid_4_diverse_anatomy(table_1_1):
    """Mothali (2011) Table 1.4 (= Table 3.2): QIT and ST published from Table 1.1."""
    qit = [
        ("M", 25, "90210", 1), ("M", 29, "90212", 1), ("F", 40, "07620", 1),
        ("F", 24, "33109", 1), ("F", 43, "90211", 2), ("F", 41, "07620", 2),
        ("M", 48, "07620", 2), ("F", 40, "07620", 2), ("M", 41, "90213", 3),
        ("F", 40, "33109", 3), ("M", 48, "33109", 3), ("M", 49, "33109", 3),
    ]  # fmt: skip
    schema = table_1_1.schema
    codes = np.array([[schema[a].code_of(v) for a, v in zip(schema.qi, r[:3])] for r in qit])
    dis = schema["disease"]
    st_rows = [(g, v) for g in (1, 2, 3) for v in ("AIDS", "Cancer", "Flu", "None")]
    rel = AnatomyRelease(
        qit=Table(codes, schema.select(schema.qi)),
        group_id=np.array([r[3] - 1 for r in qit]),
        st_group=np.array([g - 1 for g, _ in st_rows]),
        st_value=np.array([dis.code_of(v) for _, v in st_rows]),
        st_count=np.ones(12, dtype=int),
        sensitive=dis,
        l=4,
    )
    p = rel.privacy()
    assert (p.min_group, p.distinct_l, p.max_disclosure) == (4, 4, 0.25)
    assert _rows(rel.qit, schema.qi) == _rows(table_1_1, schema.qi)
    # Brute force: some assignment of the ST values to the QIT rows of each group
    # reproduces the original table exactly.
    orig = Counter(map(tuple, table_1_1.codes.tolist()))
    groups = [np.flatnonzero(rel.group_id == g) for g in range(3)]
    vals = [rel.st_value[rel.st_group == g] for g in range(3)]
    found = False
    for perms in itertools.product(*(itertools.permutations(v) for v in vals)):
        s = np.empty(12, dtype=int)
        for idx, pv in zip(groups, perms):
            s[idx] = pv
        if Counter(map(tuple, np.column_stack([codes, s]).tolist())) == orig:
            found = True
            break
    assert found
    # and privlab's own Anatomize produces a release of the same shape
    mine = anatomize(table_1_1, l=4, rng=np.random.default_rng(0))
    _check_anatomy(table_1_1, mine, schema.qi, "disease", 4)
    assert sorted(mine.group_sizes().tolist()) == [4, 4, 4]


def test_save_load_round_trip(tmp_path, table_1_1):
    rel = anatomize(table_1_1, l=3, rng=1)
    rel.save(tmp_path / "r", custody=tmp_path / "c")
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [
        "qit.csv",
        "release.json",
        "st.csv",
    ]
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["custody.json", "truth.csv"]
    qit = pd.read_csv(tmp_path / "r" / "qit.csv", dtype=str)
    assert list(qit.columns) == ["gender", "age", "zip", "group_id"]
    assert list(pd.read_csv(tmp_path / "r" / "st.csv").columns) == ["group_id", "disease", "count"]
    assert list(pd.read_csv(tmp_path / "c" / "truth.csv").columns) == ["row", "disease"]
    assert qit["zip"].str.len().eq(5).all()  # leading zeros survive
    meta = json.loads((tmp_path / "r" / "release.json").read_text())
    assert meta["method"] == "anatomy" and meta["parameters"] == {"l": 3}
    roles = {a["name"]: a["role"] for a in meta["schema"]["attributes"]}
    assert roles == {"gender": "qi", "age": "qi", "zip": "qi", "disease": "sensitive"}
    back = load_release(tmp_path / "r")
    assert isinstance(back, AnatomyRelease) and back.truth is None and back.custody is None
    for f in ("group_id", "st_group", "st_value", "st_count"):
        assert np.array_equal(getattr(back, f), getattr(rel, f)), f
    assert np.array_equal(back.qit.codes, rel.qit.codes)
    assert back.qit.schema.names == rel.qit.schema.names
    assert back.sensitive.domain == rel.sensitive.domain
    assert back.privacy() == rel.privacy()
    # the custody directory gives the truth back, checked against this release
    full = load_release(tmp_path / "r", custody=tmp_path / "c")
    assert np.array_equal(full.truth, rel.truth)
    assert (
        full.custody.seed == rel.custody.seed
        and full.custody.input_sha256 == table_1_1.fingerprint()
    )
    # without custody nothing secret is written anywhere
    rel.save(tmp_path / "p")
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == [
        "qit.csv",
        "release.json",
        "st.csv",
    ]


def test_save_refuses_existing_directory(tmp_path, table_1_1):
    rel = anatomize(table_1_1, l=2, rng=1)
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "keep.txt").write_text("mine")
    with pytest.raises(OutputExistsError, match="exists"):
        rel.save(tmp_path / "r")
    assert (tmp_path / "r" / "keep.txt").read_text() == "mine"
    rel.save(tmp_path / "r", force=True)
    assert (tmp_path / "r" / "qit.csv").exists() and not (tmp_path / "r" / "keep.txt").exists()


def test_load_rejects_broken_releases(tmp_path, table_1_1):
    with pytest.raises(ReleaseError, match="does not exist"):
        load_release(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReleaseError, match=r"no release\.json"):
        load_release(tmp_path / "empty")
    rel = anatomize(table_1_1, l=3, rng=1)
    rel.save(tmp_path / "r", custody=tmp_path / "c")
    st_path = tmp_path / "r" / "st.csv"
    st_df = pd.read_csv(st_path, dtype=str, keep_default_na=False)
    st_df.loc[0, "count"] = "2"
    st_df.to_csv(st_path, index=False)
    with pytest.raises(ReleaseError, match=r"st\.csv was modified"):
        load_release(tmp_path / "r")
    rel.save(tmp_path / "t", custody=tmp_path / "tc")
    truth = pd.read_csv(tmp_path / "tc" / "truth.csv", dtype=str, keep_default_na=False)
    truth.iloc[:-1].to_csv(tmp_path / "tc" / "truth.csv", index=False)
    with pytest.raises(ReleaseError, match=r"truth\.csv was modified after the custody"):
        load_release(tmp_path / "t", custody=tmp_path / "tc")
    # a custody directory of another release (same table, other draws) is refused
    anatomize(table_1_1, l=3, rng=1).save(tmp_path / "o", custody=tmp_path / "oc", republish=True)
    with pytest.raises(ReleaseError, match="another release"):
        load_release(tmp_path / "t", custody=tmp_path / "oc")


def test_bad_input(table_1_1):
    with pytest.raises(ParameterError, match="an integer >= 2"):
        anatomize(table_1_1, l=1)
    with pytest.raises(ParameterError, match=r"l = 5 is above .* \(4\)"):
        anatomize(table_1_1, l=5)
    with pytest.raises(SchemaError, match="'nope'"):
        anatomize(table_1_1, qi=["nope"], sensitive="disease", l=2)
    with pytest.raises(SchemaError, match="both the sensitive"):
        anatomize(table_1_1, qi=["gender", "disease"], sensitive="disease", l=2)
    with pytest.raises(PrivlabError, match="empty"):
        anatomize(table_1_1.take(np.zeros(12, dtype=bool)), l=2)
    df = pd.DataFrame({"q": range(5), "s": ["a", "a", "a", "b", "c"]})
    with pytest.raises(EligibilityError, match=r"'a' occurs in 3 of 5 tuples"):
        anatomize(Table.from_pandas(df), qi=["q"], sensitive="s", l=2)


def test_release_validates_its_tables():
    schema = Schema((Attribute("q", ("a", "b"), Role.QI),))
    sens = Attribute("s", ("x", "y"), Role.SENSITIVE)
    with pytest.raises(ReleaseError, match="group 0"):
        AnatomyRelease(
            qit=Table(np.array([[0], [1]]), schema),
            group_id=np.array([0, 0]),
            st_group=np.array([0]),
            st_value=np.array([0]),
            st_count=np.array([1]),
            sensitive=sens,
            l=2,
        )
    with pytest.raises(ReleaseError, match="ST counts sum"):
        AnatomyRelease(
            qit=Table(np.array([[0], [1]]), schema),
            group_id=np.array([0, 0]),
            st_group=np.array([0, 0]),
            st_value=np.array([0, 1]),
            st_count=np.array([1, 2]),
            sensitive=sens,
            l=2,
        )


def test_more_residues_than_groups_all_join_the_one_group():
    """Five distinct values, l = 3: Anatomize forms one group of three and leaves two
    residues for that one group (no distinct matching exists): both join it, so the one
    group holds all five tuples (Xiao & Tao 2006, step 3)."""
    df = pd.DataFrame({"q": [0, 1, 2, 0, 1], "s": list("abcde")})
    for seed in range(5):
        rel = anatomize(
            Table.from_pandas(df), qi=["q"], sensitive="s", l=3, rng=np.random.default_rng(seed)
        )
        assert rel.n_groups == 1 and rel.group_sizes().tolist() == [5]
        assert rel.group_id.tolist() == [0] * 5
        assert rel.group_counts().tolist() == [[1, 1, 1, 1, 1]]


def test_group_formation_marks_the_residues_minus_one():
    """The Python reference of the compiled kernel returns each tuple's group with ``-1``
    for a residue (the kernel's contract), before the residues are assigned."""
    from privlab.publish.anatomy_core import _form_groups

    s = np.array([0, 0, 0, 1], dtype=np.int64)  # l = 2: one group {0, 1}, two residues of 0
    _, _, remaining, heap, group, members = _form_groups(
        s, 2, 2, np.arange(4, dtype=np.int64), np.arange(2, dtype=np.int64)
    )
    assert members.tolist() == [[0, 1]] and heap.tolist() == [0] and remaining.tolist() == [2, 0]
    assert sorted(group.tolist()) == [-1, -1, 0, 0] and group[3] == 0


@pytest.mark.parametrize("counts", [(2, 2, 2, 1, 1), (2, 2, 1, 1, 1, 1), (3, 3, 3, 1, 1)])
def test_residues_without_a_distinct_matching_still_join_groups_lacking_their_value(counts):
    """l = 3 and groups such as {0, 1, 2}, {4, 3, 0} with residues 1 and 2: only the second
    group lacks either, so no distinct matching exists and one residue falls back; it must
    still join a group lacking its value: no value twice in a group, every group l-diverse."""
    s = np.repeat(np.arange(len(counts)), counts)
    df = pd.DataFrame({"q": np.arange(s.size) % 2, "s": s})
    t = Table.from_pandas(df)
    for seed in range(8):
        rel = anatomize(t, qi=["q"], sensitive="s", l=3, rng=np.random.default_rng(seed))
        assert rel.group_counts().max() == 1
        _check_anatomy(t, rel, ["q"], "s", 3)


def test_claims_name_the_group_that_breaks_l_and_hold_exactly_at_1_over_l():
    """The l claim holds when each group's most frequent value is at most 1/l of its rows
    (exactly 1/2 here), fails above it, and names the failing group by its id, even when a
    group id is skipped (a hand-made release: group 1 is empty)."""
    schema = Schema((Attribute("q", ("a", "b"), Role.QI),))
    sens = Attribute("s", ("x", "y", "z"), Role.SENSITIVE)
    kw = dict(qit=Table(np.array([[0], [1], [0], [1]]), schema), sensitive=sens, l=2)
    ok = AnatomyRelease(
        group_id=np.array([0, 0, 2, 2]),
        st_group=np.array([0, 0, 2, 2]),
        st_value=np.array([0, 1, 1, 2]),
        st_count=np.array([1, 1, 1, 1]),
        **kw,
    )
    assert ok.claims() == [
        {
            "claim": "l = 2 (each group's most frequent sensitive value <= 1/2 of its rows)",
            "holds": True,
            "measured": "largest share 0.5 (group 0)",
        }
    ]
    bad = AnatomyRelease(
        group_id=np.array([0, 0, 2, 2]),
        st_group=np.array([0, 0, 2]),
        st_value=np.array([0, 1, 2]),
        st_count=np.array([1, 1, 2]),
        **kw,
    )
    [claim] = bad.claims()
    assert claim["holds"] is False and claim["measured"] == "largest share 1 (group 2)"
    # a group of one row (hand-made) discloses its value: share 1; four values, three groups
    sens4 = Attribute("s", ("w", "x", "y", "z"), Role.SENSITIVE)
    single = AnatomyRelease(
        group_id=np.array([0, 0, 0, 2]),
        st_group=np.array([0, 0, 0, 2]),
        st_value=np.array([0, 1, 2, 3]),
        st_count=np.array([1, 1, 1, 1]),
        **{**kw, "sensitive": sens4},
    )
    [claim] = single.claims()
    assert claim["holds"] is False and claim["measured"] == "largest share 1 (group 2)"


def test_from_rows_l_is_the_smallest_group_size():
    """A hand-written release's l is its smallest group's size (groups of 3 and 2 here,
    over 3 values), the most any group's distinct values can give."""
    rel = AnatomyRelease.from_rows(
        [("a",), ("b",), ("c",), ("a",), ("b",)],
        ["q"],
        [7, 7, 7, 9, 9],
        [(7, "x"), (7, "y"), (7, "z"), (9, "x"), (9, "y")],
        "s",
    )
    assert rel.l == 2 and rel.group_sizes().tolist() == [3, 2]
    assert rel.group_counts().tolist() == [[1, 1, 1], [1, 1, 0]]


def test_the_compiled_sensitive_table_equals_the_python_one(monkeypatch):
    """Large tables (``KERNEL_MIN`` tuples and more) build their groups and ST in the
    compiled kernels: forced onto a small table with residues, the release is the Python
    path's, row for row."""
    import privlab.publish.anatomy_core as core

    s = np.repeat(np.arange(5), [4, 3, 3, 2, 2])
    df = pd.DataFrame({"q": np.arange(s.size) % 4, "s": s})
    t = Table.from_pandas(df)
    py = anatomize(t, qi=["q"], sensitive="s", l=3, rng=np.random.default_rng(5))
    monkeypatch.setattr(core, "KERNEL_MIN", 1)
    jit = anatomize(t, qi=["q"], sensitive="s", l=3, rng=np.random.default_rng(5))
    for name in ("group_id", "st_group", "st_value", "st_count"):
        np.testing.assert_array_equal(getattr(jit, name), getattr(py, name))
    np.testing.assert_array_equal(jit.qit.codes, py.qit.codes)
    assert py.group_sizes().sum() == s.size and py.st_count.sum() == s.size


def test_a_declared_value_no_tuple_holds_joins_no_group():
    """A sensitive value of the declared domain that no tuple holds (``e``) takes no part in
    the groups: five tuples of distinct values at l = 3 still form one group of five."""
    df = pd.DataFrame({"q": [0, 1, 2, 0, 1], "s": list("abcdf")})
    t = Table.from_pandas(df, domains={"s": list("abcdef")})
    for seed in range(5):
        rel = anatomize(t, qi=["q"], sensitive="s", l=3, rng=np.random.default_rng(seed))
        assert rel.group_sizes().tolist() == [5]
        assert rel.group_counts().tolist() == [[1, 1, 1, 1, 0, 1]]


def test_claims_measure_each_groups_own_most_frequent_value():
    """Group 1 holds z three times in four rows: the largest share is 0.75, in group 1."""
    schema = Schema((Attribute("q", ("a", "b"), Role.QI),))
    rel = AnatomyRelease(
        qit=Table(np.array([[0], [1], [0], [1], [0], [1]]), schema),
        group_id=np.array([0, 0, 1, 1, 1, 1]),
        st_group=np.array([0, 0, 1, 1]),
        st_value=np.array([0, 1, 2, 3]),
        st_count=np.array([1, 1, 1, 3]),
        sensitive=Attribute("s", ("w", "x", "y", "z"), Role.SENSITIVE),
        l=2,
    )
    [claim] = rel.claims()
    assert claim["holds"] is False and claim["measured"] == "largest share 0.75 (group 1)"


def test_a_release_refuses_a_truth_that_does_not_match_its_sensitive_table():
    """The truth kept in custody must hold, per group, exactly the sensitive table's values:
    a value moved to another group is refused; the same values shuffled within their groups
    are accepted.  (A code outside the domain cannot get there: a Table refuses it.)"""
    import dataclasses

    from privlab.release.base import Custody

    def with_truth(codes):
        custody = Custody(truth=Table(codes.reshape(-1, 1), Schema((rel.sensitive,))))
        return dataclasses.replace(rel, custody=custody)

    t = load_adult().take(np.arange(300))
    rel = anatomize(t, l=2, qi=["sex", "race"], sensitive="relationship", rng=3)
    truth = np.asarray(rel.truth).copy()
    with pytest.raises(SchemaError, match="outside its domain"):
        with_truth(np.r_[-1, truth[1:]])
    a = int(np.flatnonzero(rel.group_id == 0)[0])
    b = int(np.flatnonzero((rel.group_id != 0) & (truth != truth[a]))[0])
    swapped = truth.copy()
    swapped[a], swapped[b] = truth[b], truth[a]
    with pytest.raises(ReleaseError, match="the truth does not match"):
        with_truth(swapped)
    g0 = np.flatnonzero(rel.group_id == 0)
    shuffled = truth.copy()
    shuffled[g0] = truth[g0][::-1]
    assert np.array_equal(with_truth(shuffled).truth, shuffled)


def test_a_forced_distinct_matching_is_always_found():
    """Residue step on groups built so that exactly one distinct matching exists: residue
    values 0, 1, 2 lack groups {1}, {1, 2} and {2, 3}, so 0 -> 1, 1 -> 2, 2 -> 3 is the only
    way to put the three residues into three different groups lacking their values.  The
    matching must find it for every draw of the random costs: a matching that let a residue
    take a group holding its value (a penalty below the largest total of the random costs)
    sends it back to its one lacking group, beside another residue (a group of l + 2)."""
    from privlab.publish.anatomy_core import _assign_residues

    members = np.array([[0, 1, 2, 3], [2, 3, 4, 5], [0, 3, 4, 5], [0, 1, 3, 4]])
    lacks = {v: {g for g in range(4) if v not in members[g]} for v in range(3)}
    assert lacks == {0: {1}, 1: {1, 2}, 2: {2, 3}}
    heap = np.array([0, 1, 2], dtype=np.int64)  # residue values, one tuple each
    remaining = np.array([1, 1, 1, 0, 0, 0], dtype=np.int64)
    starts = np.array([0, 1, 2, 3, 3, 3], dtype=np.int64)
    bucket = np.array([16, 17, 18], dtype=np.int64)  # rows 16-18 are the residues
    for seed in range(300):
        group = np.full(19, 7, dtype=np.int64)
        got, vals = _assign_residues(
            group, bucket, starts, remaining, heap, members, np.random.default_rng(seed)
        )
        assert vals.tolist() == [0, 1, 2]
        assert got.tolist() == [1, 2, 3], seed
        assert group[:16].tolist() == [7] * 16 and group[16:].tolist() == [1, 2, 3]


def test_a_residue_beyond_the_groups_joins_either_lacking_group_at_random():
    """Three residues and two groups that both lack all three values: the matching places
    two of them in different groups, the third (unmatched) joins a random lacking group.
    The two groups are alike, so by symmetry group 0 takes the extra residue with
    probability 1/2 (400 draws: 200 +- 10; a rule that always picks group 0, or any fixed
    group, gives 400 or 0)."""
    from privlab.publish.anatomy_core import _assign_residues

    members = np.array([[0, 1, 2, 3], [0, 1, 2, 3]])
    heap = np.array([4, 5, 6], dtype=np.int64)
    remaining = np.array([0, 0, 0, 0, 1, 1, 1], dtype=np.int64)
    starts = np.array([0, 2, 4, 6, 8, 9, 10], dtype=np.int64)
    bucket = np.arange(11, dtype=np.int64)
    in_zero = 0
    for seed in range(400):
        group = np.array([0, 1] * 4 + [-1] * 3, dtype=np.int64)
        got, vals = _assign_residues(
            group, bucket, starts, remaining, heap, members, np.random.default_rng(seed)
        )
        assert vals.tolist() == [4, 5, 6] and sorted(set(got.tolist())) == [0, 1]
        in_zero += int((got == 0).sum() == 2)
    assert 160 <= in_zero <= 240, in_zero  # Binomial(400, 1/2): 4 standard deviations


def test_group_schedule_needs_one_group_of_l_distinct_values():
    """The Spark engine's schedule from the counts alone: fewer than ``l`` distinct values
    form no group (refused); exactly ``l`` of them form the one group (no residue)."""
    from privlab.errors import EligibilityError
    from privlab.publish.anatomy_core import group_schedule

    with pytest.raises(EligibilityError, match="no group of l distinct values"):
        group_schedule(np.array([1, 1]), 3, np.random.default_rng(0))
    assert group_schedule(np.array([1, 1, 1]), 3, np.random.default_rng(0)).tolist() == [0] * 3
    sched = group_schedule(np.array([2, 2, 1]), 2, np.random.default_rng(1))
    assert sorted(np.bincount(sched).tolist()) == [2, 3]


def test_a_table_without_residues_has_none():
    """``n`` a multiple of ``l`` with every value as often: every tuple is in a group of
    exactly ``l``; the residue arrays are empty and of the same length (the compiled ST
    kernel reads one by the other's length)."""
    from privlab.publish.anatomy_core import anatomize_groups

    s = np.repeat(np.arange(3, dtype=np.int64), 4)
    groups = anatomize_groups(s, 3, np.random.default_rng(2))
    assert groups.res_group.shape == (0,) and groups.res_value.shape == (0,)
    assert np.bincount(groups.group).tolist() == [3, 3, 3, 3]
    assert groups.members.shape == (4, 3)


def test_the_spark_engine_is_handed_the_arguments(monkeypatch):
    """``engine="spark"`` hands the checked arguments to the Spark engine and returns what it
    returns (the engine itself is tested in tests/test_spark.py)."""
    import privlab.publish.spark_anatomy as sa
    from privlab.data.spark import SparkInput

    class _Frame:
        columns = ("q", "s", "k")

    schema = Table.from_pandas(pd.DataFrame({"q": [0, 1], "s": ["a", "b"], "k": [1, 2]})).schema
    seen = {}

    def fake(table, **kwargs):
        seen.update(kwargs, table=table)
        return "the spark release"

    monkeypatch.setattr(sa, "anatomize_spark", fake)
    data = SparkInput(_Frame(), schema)
    out = anatomize(data, qi=["q"], sensitive="s", keep=["k"], l=2, rng=7, engine="spark")
    assert out == "the spark release"
    assert seen["table"].df is data.df and seen["l"] == 2 and seen["rng"] == 7
    assert seen["qi"] == ["q"] and seen["sensitive"] == "s" and seen["keep"] == ["k"]


def test_a_sensitive_table_in_any_row_order_is_accepted_but_not_a_repeated_pair():
    """The ST's rows may come in any order (an outside release, a hand-edited file): only a
    (group, value) pair listed twice is refused."""
    schema = Schema((Attribute("q", ("a", "b"), Role.QI),))
    sens = Attribute("s", ("x", "y"), Role.SENSITIVE)

    def release(st_group, st_value, st_count):
        return AnatomyRelease(
            qit=Table(np.array([[0], [1], [0], [1]]), schema),
            group_id=np.array([0, 0, 1, 1]),
            st_group=np.array(st_group),
            st_value=np.array(st_value),
            st_count=np.array(st_count),
            sensitive=sens,
            l=2,
        )

    ordered = release([0, 0, 1, 1], [0, 1, 0, 1], [1, 1, 1, 1])
    shuffled = release([1, 0, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1])
    assert shuffled.group_counts().tolist() == ordered.group_counts().tolist() == [[1, 1], [1, 1]]
    with pytest.raises(ReleaseError, match="pair twice"):
        release([0, 1, 0], [1, 0, 1], [1, 2, 1])
