"""Anatomy's compiled group creation (privlab.publish._anatomy_kernel) and the rewritten
publish step give, for a given generator, exactly what privlab's implementation before them
gave (tests/anatomy_reference.py, verbatim), and leave the generator in the same state."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privlab.publish.anatomy as an
import privlab.publish.anatomy_core as core
from privlab.data import Table, load_adult
from privlab.errors import EligibilityError, ParameterError, ReleaseError
from privlab.publish import AnatomyRelease
from privlab.publish._anatomy_kernel import form_groups


def _ref():
    import anatomy_reference

    return anatomy_reference


def _groups_run(f, s, l, seed):
    """``f(s, l, gen)``'s group labels (or its error) and the generator's next draw."""
    gen = np.random.default_rng(seed)
    try:
        out = f(s, l, gen)
    except EligibilityError as e:
        return ("error", str(e)), gen.random()
    return getattr(out, "group", out).tolist(), gen.random()


def _sensitive(rng: np.random.Generator, n: int, m: int, kind: str) -> np.ndarray:
    """``n`` codes below ``m``: uniform, skewed (Dirichlet 0.3) or as even as possible."""
    if kind == "uniform":
        return rng.integers(0, m, n)
    if kind == "skewed":
        return rng.choice(m, n, p=rng.dirichlet(np.full(m, 0.3)))
    return rng.permutation(np.arange(n) % m)


#: (n, m, l, kind): tiny tables, n = l, values absent, deep heaps, skew; (5, 5, 3) and
#: (7, 7, 4) leave more residues than groups (the fallback: one group of 2l - 1 tuples)
CASES = [
    *[
        (n, m, l, k)
        for l in (2, 3, 5)
        for n, m in ((l, l), (l + 1, l + 1), (2 * l + 1, l + 1))
        for k in ("even", "uniform")
    ],
    *[(50, 7, 3, "uniform"), (50, 7, 3, "skewed"), (200, 12, 4, "skewed")],
    *[(997, 40, 6, "uniform"), (3000, 300, 8, "uniform"), (3000, 300, 2, "skewed")],
    *[(4000, 1000, 7, "even"), (600, 5, 5, "even"), (601, 5, 5, "uniform")],
    *[(5, 5, 3, "even"), (7, 7, 4, "even")],
]


@pytest.mark.parametrize(("n", "m", "l", "kind"), CASES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_groups_are_identical_to_the_heapq_implementation(n, m, l, kind, seed, monkeypatch):
    """Same groups (or the same error) and the same generator state, through the kernel and
    the Python loop, as the implementation before them, on eligible and ineligible inputs
    alike (``anatomize_groups`` itself does not check eligibility)."""
    ref = _ref()
    s = _sensitive(np.random.default_rng([seed, n, m, l]), n, m, kind)
    old = _groups_run(ref._anatomize_groups, s, l, seed)
    for kernel_min in (0, 1 << 40):  # the kernel, then the Python loop
        monkeypatch.setattr(core, "KERNEL_MIN", kernel_min)
        assert _groups_run(core.anatomize_groups, s, l, seed) == old


def test_the_sweep_holds_residues_and_errors():
    """The cases above are not all alike: some leave residues, some groups of more than
    l + 1 tuples (the fallback), some fail."""
    ref = _ref()
    seen = set()
    for n, m, l, kind in CASES:
        for seed in (0, 1, 2):
            s = _sensitive(np.random.default_rng([seed, n, m, l]), n, m, kind)
            out, _ = _groups_run(ref._anatomize_groups, s, l, seed)
            if out[0] == "error":
                seen.add("error")
                continue
            sizes = np.bincount(out)
            assert np.bincount(s).max() * l <= n  # only an eligible table is grouped
            seen.add("grouped")
            if sizes.max() > l:
                seen.add("residues")
            if sizes.max() > l + 1:
                seen.add("fallback")
    assert seen == {"error", "grouped", "residues", "fallback"}


@settings(max_examples=200, deadline=None)
@given(
    st.integers(2, 6),
    st.lists(st.integers(0, 9), min_size=2, max_size=120),
    st.integers(0, 2**32 - 1),
)
def test_groups_are_identical_on_random_inputs(l, values, seed):
    ref = _ref()
    s = np.asarray(values, dtype=np.int64)
    old = _groups_run(ref._anatomize_groups, s, l, seed)
    saved = core.KERNEL_MIN
    try:
        for kernel_min in (0, 1 << 40):
            core.KERNEL_MIN = kernel_min
            assert _groups_run(core.anatomize_groups, s, l, seed) == old
    finally:
        core.KERNEL_MIN = saved


@pytest.mark.parametrize(("n", "m", "l"), [(5001, 14, 2), (5003, 14, 4), (4000, 500, 3)])
def test_kernel_matches_the_python_loop_part_by_part(n, m, l):
    """Every output of the kernel, the heap's final layout (the residues' order) and each
    group's values in pop order included, equals the Python heapq loop's."""
    rng = np.random.default_rng([n, m, l])
    for s in (rng.integers(0, m, n), rng.choice(m, n, p=rng.dirichlet(np.full(m, 0.5)))):
        order, tie = rng.permutation(n), rng.permutation(m)
        new = form_groups(s.astype(np.int64), m, l, order, tie)
        old = core._form_groups(s, m, l, order, tie)
        assert len(new) == len(old) == 6
        for a, b in zip(new, old, strict=True):
            np.testing.assert_array_equal(a, b)
        assert new[5].shape[0] > 0 and new[3].size > 0  # groups formed, values left over


def _fields(rel: AnatomyRelease) -> dict:
    return {
        "qit": rel.qit.codes,
        "qit_schema": rel.qit.schema,
        "group_id": rel.group_id,
        "st_group": rel.st_group,
        "st_value": rel.st_value,
        "st_count": rel.st_count,
        "truth": rel.truth,
        "sensitive": rel.sensitive,
        "l": rel.l,
        "input_sha256": rel.custody.input_sha256,
    }


def _assert_same_release(new: AnatomyRelease, old: AnatomyRelease) -> None:
    a, b = _fields(new), _fields(old)
    for k in a:
        if isinstance(a[k], np.ndarray):
            assert a[k].dtype == b[k].dtype, k
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        else:
            assert a[k] == b[k], k


def _release_case(seed: int) -> tuple[Table, int]:
    """A random table (sizes, l, uniform / skewed / even sensitive values, a kept column)."""
    rng = np.random.default_rng([7, seed])
    l = int(rng.integers(2, 6))
    m = int(rng.integers(l, 15))
    n = int(rng.integers(l, 400)) if seed % 5 else l  # n = l: a single group
    s = _sensitive(rng, n, m, ("uniform", "skewed", "even")[seed % 3]) if n > l else np.arange(n)
    df = pd.DataFrame({"q": rng.integers(0, 4, n), "k": rng.integers(0, 3, n), "s": s})
    return Table.from_pandas(df), l


@pytest.mark.parametrize("seed", range(40))
def test_releases_are_identical_to_the_implementation_before(seed, monkeypatch):
    """anatomize() end to end (QIT rows and their order, group ids, ST, custody truth,
    generator state) equals the implementation before it, through both group paths;
    ineligible tables fail with the same error."""
    ref = _ref()
    table, l = _release_case(seed)
    kw = dict(qi=["q"], keep=["k"], sensitive="s", l=l)

    def run(f):
        gen = np.random.default_rng(seed)
        try:
            return f(table, **kw, rng=gen), gen.random()
        except (EligibilityError, ParameterError) as e:
            return f"{type(e).__name__}: {e}", gen.random()

    old, old_next = run(ref.anatomize)
    for kernel_min in (0, 1 << 40):
        monkeypatch.setattr(core, "KERNEL_MIN", kernel_min)
        new, new_next = run(an.anatomize)
        assert new_next == old_next
        if isinstance(old, str):
            assert new == old
        else:
            _assert_same_release(new, old)


def test_the_release_sweep_holds_both_outcomes():
    """Most cases above publish, some are ineligible or have fewer than l values, some are
    single groups."""
    eligible, single = 0, 0
    for seed in range(40):
        table, l = _release_case(seed)
        counts = np.bincount(table.column("s"))
        eligible += counts.max() * l <= table.n_rows and np.count_nonzero(counts) >= l
        single += table.n_rows == l
    assert 20 < eligible < 40 and single == 8


@pytest.mark.parametrize("l", [2, 3, 4, 5])
def test_adult_release_is_identical_through_the_kernel(l, monkeypatch):
    """On Adult (30,162 tuples: the kernel's size class), the kernel's release equals the
    implementation before it."""
    ref = _ref()
    table = load_adult()
    kw = dict(qi=["workclass", "relationship", "sex", "salary"], sensitive="occupation", l=l)
    old = ref.anatomize(table, **kw, rng=np.random.default_rng(l))
    monkeypatch.setattr(core, "KERNEL_MIN", 0)
    _assert_same_release(an.anatomize(table, **kw, rng=np.random.default_rng(l)), old)


def _release(n=600, l=3, seed=0) -> AnatomyRelease:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"q": rng.integers(0, 3, n), "s": np.arange(n) % 7})
    return an.anatomize(Table.from_pandas(df), qi=["q"], sensitive="s", l=l, rng=rng)


def _rebuilt(rel: AnatomyRelease, **changes) -> AnatomyRelease:
    from dataclasses import fields

    kw = {f.name: getattr(rel, f.name) for f in fields(rel)}
    kw.update(changes)
    return AnatomyRelease(**kw)


def test_validation_still_refuses_a_pair_listed_twice_in_any_order():
    """The one-pass check of the ST's (group, value) pairs falls back to a sort when the ST
    is not sorted: a repeated pair is refused sorted or shuffled, a shuffled ST without
    repeats is accepted."""
    rel = _release()
    g, v, c = rel.st_group, rel.st_value, rel.st_count
    p = np.random.default_rng(1).permutation(g.size)
    _rebuilt(rel, st_group=g[p], st_value=v[p], st_count=c[p])  # accepted
    # group 0's second value replaced by its first (counts 1 each: sizes still agree)
    assert c.max() == 1 and g[1] == 0
    v2 = v.copy()
    v2[1] = v[0]
    for perm in (np.arange(g.size), p):
        with pytest.raises(ReleaseError, match="pair twice"):
            _rebuilt(rel, st_group=g[perm], st_value=v2[perm], st_count=c[perm], custody=None)


def test_validation_still_refuses_a_truth_that_does_not_match():
    """Two rows of different groups and values swap their truths: group sizes still agree,
    the (group, value) counts do not."""
    from privlab.data import Schema
    from privlab.release.base import Custody

    rel = _release()
    truth = rel.truth.copy()
    i = 0
    j = int(np.flatnonzero((rel.group_id != rel.group_id[i]) & (truth != truth[i]))[0])
    truth[[i, j]] = truth[[j, i]]
    bad = Custody(truth=Table(truth.reshape(-1, 1), Schema((rel.sensitive,))))
    with pytest.raises(ReleaseError, match="does not match"):
        _rebuilt(rel, custody=bad)
    good = Custody(truth=Table(rel.truth.reshape(-1, 1), Schema((rel.sensitive,))))
    _rebuilt(rel, custody=good)  # the unchanged truth is accepted
