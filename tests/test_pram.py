"""PRAM (seed 002, Ma Ch. 2-3): matrices, randomization, Theorems 1-2, EM, metrics, release."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privlab.data import Table
from privlab.errors import ParameterError, PrivacyWarning, PrivlabError, SchemaError
from privlab.estimate.pram import (
    em_estimate,
    expected_randomized_counts,
    kron_apply,
    kron_matrix,
    marginal_matrix,
    moment_covariance,
    moment_estimate,
    moment_variance,
    randomized_covariance,
    ratio_sd,
)
from privlab.estimate.pram_release import estimate_release
from privlab.metrics.pram import (
    NEAR_DETERMINISTIC,
    breach_impossible,
    breach_rho2,
    conditional_entropy,
    gamma_amplification,
    gamma_binary_symmetric,
    gamma_group_independent,
    gamma_group_simultaneous,
    gamma_m_category,
    gamma_ternary_symmetric,
    kl_divergence,
    near_deterministic,
    odds_ratio,
    posterior,
    probabilistic_k_anonymity,
)
from privlab.publish.randomization import (
    MatrixError,
    PramRelease,
    binary_matrix,
    binary_symmetric_matrix,
    build_matrix,
    grouped_matrix,
    identity_matrix,
    invariant_matrix,
    joint_m_category_matrix,
    m_category_matrix,
    pram,
    randomize,
    randomize_codes,
    ternary_symmetric_matrix,
    validate_matrix,
)
from privlab.release.base import load_release


def _h(p: float) -> float:
    return 0.0 if p in (0, 1) else float(-p * np.log2(p) - (1 - p) * np.log2(1 - p))


def _random_stochastic(rng: np.random.Generator, k: int) -> np.ndarray:
    m = rng.random((k, k)) + np.eye(k) * k  # diagonally dominant: invertible
    return m / m.sum(axis=1, keepdims=True)


def _mc_counts(codes: np.ndarray, sizes, matrices, runs: int, seed: int) -> np.ndarray:
    """Randomize the same data ``runs`` times (one vectorized call); counts per run."""
    n = codes.shape[0]
    tiled = np.tile(codes, (runs, 1))
    table = Table(tiled, _schema_table(sizes).schema)
    gen = np.random.default_rng(seed)
    rel = randomize(table, dict(zip(table.names, matrices)), rng=gen, shuffle=False)
    idx = np.ravel_multi_index(tuple(rel.table.codes.T), sizes)
    run = np.repeat(np.arange(runs), n)
    j = int(np.prod(sizes))
    return np.bincount(run * j + idx, minlength=runs * j).reshape(runs, j).astype(float)


def _schema_table(sizes) -> Table:
    df = pd.DataFrame({f"x{i}": np.arange(max(sizes)) % s for i, s in enumerate(sizes)})
    return Table.from_pandas(df)


def _data_from_counts(counts, sizes) -> np.ndarray:
    idx = np.repeat(np.arange(len(counts)), np.asarray(counts, dtype=int))
    return np.column_stack(np.unravel_index(idx, sizes))


# -- builders and validation ----------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(1, 9),
    p=st.floats(0, 1),
    p2=st.floats(0, 1),
    split=st.integers(1, 8),
)
def test_every_built_matrix_is_row_stochastic(k, p, p2, split):
    mats = [binary_matrix(p, p2), binary_symmetric_matrix(p), identity_matrix(k)]
    if k > 1 or p == 0:
        mats.append(m_category_matrix(k, p))
    if p + p2 <= 1:
        mats.append(ternary_symmetric_matrix(p, p2))
    cut = min(split, k)
    mats.append(
        grouped_matrix([list(range(cut)), list(range(cut, k))] if cut < k else [list(range(k))], p)
    )
    mats.append(joint_m_category_matrix([2, 3], p))
    for m in mats:
        assert np.all(m >= 0)
        np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-12)
        validate_matrix(m)


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 7), n=st.integers(0, 300), seed=st.integers(0, 2**31 - 1))
def test_p_zero_randomization_is_the_identity(k, n, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, k, n)
    for m in (m_category_matrix(k, 0.0), grouped_matrix([list(range(k))], 0.0)):
        np.testing.assert_array_equal(randomize_codes(codes, m, seed), codes)


def test_p_zero_release_reproduces_the_table(table_1_1):
    cols = ["gender", "zip", "disease"]
    rel = pram(table_1_1, columns=cols, keep=["age"], scheme="m-category", p=0.0, rng=3,
               shuffle=False)  # fmt: skip
    np.testing.assert_array_equal(rel.table.codes, table_1_1.codes)
    np.testing.assert_array_equal(rel.custody.truth.codes, table_1_1.columns(cols))
    rel = pram(table_1_1, columns=["gender", "disease"], keep=["age", "zip"], p=0.0,
               simultaneous=True, rng=3)  # fmt: skip
    # shuffled by default: the same rows in another order, the custody's truth row by row
    assert not np.array_equal(rel.table.codes, table_1_1.codes)
    np.testing.assert_array_equal(rel.custody.truth.codes, rel.table.columns(["gender", "disease"]))
    key = np.lexsort(table_1_1.codes.T)
    np.testing.assert_array_equal(
        rel.table.codes[np.lexsort(rel.table.codes.T)], table_1_1.codes[key]
    )


def test_randomize_codes_draws_each_row_distribution():
    """Chi-square per original value: accepts the matrix, rejects one 30% off."""
    from scipy import stats

    m = np.array([[0.6, 0.3, 0.1, 0.0], [0.1, 0.1, 0.7, 0.1], [0.0, 0.0, 0.0, 1.0], [0.25] * 4])
    codes = np.repeat(np.arange(4), 20_000)  # int64
    out = randomize_codes(codes, m, 11)
    assert out.dtype == np.int32 and out.shape == codes.shape  # 4 bytes a code, as documented
    for v in range(4):
        obs = np.bincount(out[codes == v], minlength=4)
        assert np.all(obs[m[v] == 0] == 0)
        pos = m[v] > 0
        if pos.sum() == 1:
            assert obs[pos][0] == 20_000
            continue
        assert stats.chisquare(obs[pos], 20_000 * m[v][pos]).pvalue > 1e-3
        wrong = m[v][pos] * np.where(np.arange(pos.sum()) == 0, 1.3, 1.0)
        wrong /= wrong.sum()
        assert stats.chisquare(obs[pos], 20_000 * wrong).pvalue < 1e-6


def test_randomize_large_domain_and_reproducibility():
    """Domains above 32 values use the binary-search path; a seed fixes the draw."""
    from scipy import stats

    rng = np.random.default_rng(4)
    k = 40
    m = rng.random((k, k)) * (rng.random((k, k)) < 0.5)
    m[:, 0] += 0.01
    m /= m.sum(axis=1, keepdims=True)
    codes = np.repeat([3, 17, 39], 30_000)
    out = randomize_codes(codes, m, 5)
    np.testing.assert_array_equal(out, randomize_codes(codes, m, 5))
    assert not np.array_equal(out, randomize_codes(codes, m, 6))
    for v in (3, 17, 39):
        obs = np.bincount(out[codes == v], minlength=k)
        assert np.all(obs[m[v] == 0] == 0)
        pos = m[v] > 0
        assert stats.chisquare(obs[pos], 30_000 * m[v][pos]).pvalue > 1e-3


@given(k=st.integers(1, 80), n=st.integers(0, 200), seed=st.integers(0, 2**31 - 1))
def test_inverse_cdf_is_the_sequential_scan(k, n, seed):
    """The vectorized draw and the compiled kernel (lookup table for small domains, binary
    search beyond 64 values) pick the first value whose cumulative probability exceeds the
    uniform, as a loop does."""
    from privlab.publish.pram_core import _cumulative, _inverse_cdf

    rng = np.random.default_rng(seed)
    m = rng.random((k, k)) * (rng.random((k, k)) < 0.5)
    m[:, rng.integers(0, k)] += 1e-3
    m /= m.sum(axis=1, keepdims=True)
    codes, u = rng.integers(0, k, n), rng.random(n)
    cum = _cumulative(m)
    expected = [next(t for t in range(k) if cum[v, t] > x) for v, x in zip(codes, u)]
    assert _inverse_cdf(cum, codes, u).tolist() == expected
    assert _kernel_inverse_cdf(cum, codes, u).tolist() == expected
    assert all(m[v, t] > 0 for v, t in zip(codes, expected))  # never a zero-probability value


def test_draws_do_not_depend_on_the_block_size(monkeypatch):
    import privlab.publish.pram_core as rz

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"a": rng.integers(0, 5, 1000), "b": rng.integers(0, 70, 1000)})
    table = Table.from_pandas(df)
    mats = {"a": m_category_matrix(5, 0.3), "b": m_category_matrix(70, 0.4)}
    whole = randomize(table, mats, rng=np.random.default_rng(9)).table.codes
    monkeypatch.setattr(rz, "_BLOCK", 7)
    np.testing.assert_array_equal(
        randomize(table, mats, rng=np.random.default_rng(9)).table.codes, whole
    )


def _reference_matrix(rng: np.random.Generator, k: int, kind: str) -> np.ndarray:
    """Random row-stochastic matrices of three kinds: dense, sparse (zero entries, trailing
    zeros, rows with one positive entry) and dyadic (entries multiples of 1/64, so that CDF
    boundaries fall exactly on the lookup table's slice edges)."""
    if kind == "dyadic":
        m = np.zeros((k, k))
        for v in range(k):
            np.add.at(m[v], rng.integers(0, k, 64), 1 / 64)
        return m
    m = rng.random((k, k))
    if kind == "sparse":
        m *= rng.random((k, k)) < 0.4
        m[np.arange(k), rng.integers(0, k, k)] += 1e-3
    return m / m.sum(axis=1, keepdims=True)


def _kernel_inverse_cdf(cum: np.ndarray, codes: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The compiled kernel's answer for given uniforms (one column, no shuffle)."""
    from privlab.publish._pram_kernel import draw_block
    from privlab.publish.pram_core import _BUCKETS, _plan

    codes = np.ascontiguousarray(codes, dtype=np.int64).reshape(-1, 1)
    out = np.empty_like(codes)
    plan = _plan([cum])
    u = np.ascontiguousarray(u, dtype=np.float64).reshape(-1, 1)
    none = np.full(1, -1, np.int64), np.empty((len(codes), 0), codes.dtype)  # no truth
    assert draw_block(codes, 0, np.zeros(1, np.int64), *plan, _BUCKETS, u, out, 0, *none) == -1
    return out[:, 0]


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("shuffle", [False, True])
def test_draws_are_identical_to_the_numpy_implementation(seed, shuffle, monkeypatch):
    """The compiled kernel and the numpy path give, for a given generator, exactly the codes
    privlab's implementation before the kernel gave (tests/pram_reference.py), and leave the
    generator in the same state: random matrices of 1 to 300 values (table and
    binary-search paths), copied columns, several blocks, shuffled or not (odd seeds: by
    the two-pass shuffle of large tables, here lowered to 1,000 rows)."""
    import pram_reference as ref
    import privlab.data.shuffle as sh
    import privlab.publish.pram_core as rz

    if seed % 2:  # the shuffle of large tables (two passes, 4 buckets) on this small one
        monkeypatch.setattr(sh, "_BUCKET_MIN", 1000)
        monkeypatch.setattr(sh, "_BUCKET_ROWS", 1000)
    monkeypatch.setattr(rz, "_KERNEL_BLOCK", 1000)  # several blocks, a partial last one
    monkeypatch.setattr(rz, "_BLOCK", 1500)
    monkeypatch.setattr(ref, "_BLOCK", 777)  # the stream does not depend on the block size
    rng = np.random.default_rng(100 + seed)
    # 300 values: the binary search of a large domain (and more than a byte's answers)
    sizes = [1, 2, 3, 7, 64, 65, 80, 300, int(rng.integers(2, 40))]
    kinds = ["dense", "sparse", "dyadic"]
    n = 4321
    src = np.column_stack([rng.integers(0, k, n) for k in sizes]).astype(np.int32)
    cols = [int(c) for c in rng.permutation(len(sizes))]
    cums = [
        None if j % 4 == 3 else rz._cumulative(_reference_matrix(rng, sizes[c], kinds[j % 3]))
        for j, c in enumerate(cols)
    ]

    def run(draw):
        gen = np.random.default_rng(seed)
        order = sh.permutation(gen, n) if shuffle else None
        return draw(gen, order), gen.random()

    def rows(order):  # the input's rows in published order
        return src if order is None else src[order]

    # the reference drawn on the rows in published order
    old, old_next = run(lambda gen, order: ref._draw(rows(order), cols, cums, gen))
    assert old.dtype == np.int32
    assert not np.array_equal(old, rows(None)[:, cols])  # something was randomized
    monkeypatch.setattr(rz, "_KERNEL_MIN", 0)  # _draw takes the kernel
    other = rng.integers(0, 9, (n, 3))  # a truth from another array than src
    paths = {
        "kernel": lambda gen, order: rz._draw_kernel(rows(order), cols, cums, gen),
        # in place, over a copy of the output columns (as draw_release draws shuffled rows)
        "in place": lambda gen, order: rz._draw_kernel(
            np.ascontiguousarray(rows(order)[:, cols]), range(len(cols)), cums, gen, in_place=True
        ),
        "numpy": lambda gen, order: rz._draw_numpy(rows(order), cols, cums, gen),
        "_draw": lambda gen, order: rz._draw(rows(order), cols, cums, gen),
        "release": lambda gen, _: rz.draw_release(src, src, cols, cums, [4], gen, shuffle)[0],
    }
    for name, draw in paths.items():
        if name == "release":  # it draws the permutation itself
            gen = np.random.default_rng(seed)
            new, new_next = draw(gen, None), gen.random()
        else:
            new, new_next = run(draw)
        assert new.dtype == np.int32, name
        np.testing.assert_array_equal(new, old, err_msg=name)
        assert new_next == old_next, name  # as many uniforms drawn
    # the truth: the original values of the same input rows, from src or another array
    for codes, at in ((src, [4, 0]), (other, [2, 1, 2])):
        gen = np.random.default_rng(seed)
        out, truth = rz.draw_release(src, codes, cols, cums, at, gen, shuffle)
        gen = np.random.default_rng(seed)
        order = sh.permutation(gen, n) if shuffle else None
        np.testing.assert_array_equal(out, old)
        np.testing.assert_array_equal(truth, (codes if order is None else codes[order])[:, at])


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_a_release_is_identical_through_the_kernel_and_numpy(seed, monkeypatch):
    """randomize() end to end (a jointly randomized pair, independent columns of 3 to 70
    values, an identity and a kept column, the custody's original values), shuffled and
    not: the compiled path gives numpy's release bit for bit; unshuffled, both give privlab's
    implementation before the kernel (tests/pram_reference.py); shuffled, published row i
    is input row order[i], randomized, with its original values in the custody's row i."""
    import pram_reference as ref
    import privlab.publish.pram_core as rz

    rng = np.random.default_rng(seed)
    n = 5000
    sizes = {"a": 3, "b": 4, "c": 70, "d": 5, "e": 2, "f": 6}
    df = pd.DataFrame({c: rng.integers(0, k, n) for c, k in sizes.items()})
    df["id"] = np.arange(n)
    table = Table.from_pandas(df)
    mats = {
        ("a", "b"): joint_m_category_matrix([3, 4], 0.3),
        "c": _reference_matrix(rng, 70, "sparse"),
        "d": _reference_matrix(rng, 5, "dyadic"),
        "e": identity_matrix(2),
    }
    for shuffle in (False, True):
        got = {}
        for path, kernel_min in (("kernel", 0), ("numpy", 1 << 62), ("reference", 1 << 62)):
            with monkeypatch.context() as mp:
                mp.setattr(rz, "_KERNEL_MIN", kernel_min)
                if path == "reference":
                    if shuffle:
                        continue
                    mp.setattr(rz, "_draw_numpy", ref._draw)
                got[path] = randomize(table, mats, keep=["f", "id"], shuffle=shuffle,
                                      rng=np.random.default_rng(seed))  # fmt: skip
        new = got["kernel"]
        assert new.table.names == ("a", "b", "c", "d", "e", "f", "id")
        for other in [r for p, r in got.items() if p != "kernel"]:
            np.testing.assert_array_equal(new.table.codes, other.table.codes)
            np.testing.assert_array_equal(new.custody.truth.codes, other.custody.truth.codes)
        order = new.table.decode("id").astype(np.int64)
        if shuffle:
            assert sorted(order) == list(range(n)) and not np.array_equal(order, np.arange(n))
        else:
            np.testing.assert_array_equal(order, np.arange(n))
        np.testing.assert_array_equal(new.table.decode("f"), df["f"].to_numpy()[order])
        for c in ("a", "b", "c", "d"):  # the custody's truth: the original row's values
            np.testing.assert_array_equal(new.custody.truth.decode(c), df[c].to_numpy()[order])


@pytest.mark.parametrize("path", ["kernel", "numpy", "two-pass"])
def test_the_published_order_is_a_uniformly_random_permutation(path, monkeypatch):
    """4 records, 2,400 seeded releases: each of the 24 orders is published about 100
    times (chi-square), and the test rejects an order law 30% off on half of the orders;
    an input row's randomized value is drawn through its own original value's matrix row
    whichever position it lands in.  ``two-pass``: the shuffle of large tables
    (privlab.data.shuffle, here from 0 rows, a bucket a row) and the draws in place."""
    from scipy import stats

    import privlab.data.shuffle as sh
    import privlab.publish.pram_core as rz

    monkeypatch.setattr(rz, "_KERNEL_MIN", 1 << 62 if path == "numpy" else 0)
    if path == "two-pass":
        monkeypatch.setattr(sh, "_BUCKET_MIN", 0)
        monkeypatch.setattr(sh, "_BUCKET_ROWS", 1)
    table = Table.from_pandas(pd.DataFrame({"id": [0, 1, 2, 3], "s": [0, 0, 1, 1]}))
    perms = list(itertools.permutations(range(4)))
    seen = np.zeros(24)
    changed = np.zeros(2)
    for seed in range(2400):
        rel = randomize(table, {"s": m_category_matrix(2, 0.25)}, keep=["id"], rng=seed)
        ids = tuple(int(x) for x in rel.table.decode("id"))
        seen[perms.index(ids)] += 1
        s = rel.table.decode("s").astype(int)
        truth = rel.custody.truth.decode("s").astype(int)
        np.testing.assert_array_equal(truth, np.array([0, 0, 1, 1])[list(ids)])
        changed += np.bincount(truth, weights=(s != truth), minlength=2)
    assert stats.chisquare(seen).pvalue > 1e-3
    wrong = np.where(np.arange(24) < 12, 1.3, 0.7) * 100
    assert stats.chisquare(seen, wrong).pvalue < 1e-6
    # 4,800 draws per original value, each changed with probability 0.25: within 4 sd
    assert np.all(np.abs(changed / 4800 - 0.25) < 4 * np.sqrt(0.25 * 0.75 / 4800))


def test_inverse_cdf_on_slice_edges_and_cdf_values():
    """Uniforms exactly on the lookup table's slice edges and on CDF entries (the ties):
    the kernel and the numpy path count the entries <= u, as privlab's implementation
    before the kernel did."""
    import pram_reference as ref
    from privlab.publish.pram_core import _cumulative, _inverse_cdf

    rng = np.random.default_rng(8)
    for k, kind in itertools.product((2, 5, 64, 70), ("dyadic", "dense", "sparse")):
        cum = _cumulative(_reference_matrix(rng, k, kind))
        edges = np.arange(4096) / 4096
        ties = cum[cum < 1].ravel()
        u = np.concatenate([edges, ties, np.nextafter(ties, 0), np.nextafter(ties, 1)])
        u = u[u < 1]
        codes = rng.integers(0, k, u.size)
        expected = ref._inverse_cdf(cum, codes, u)
        np.testing.assert_array_equal(_inverse_cdf(cum, codes, u), expected)
        np.testing.assert_array_equal(_kernel_inverse_cdf(cum, codes, u), expected)


@pytest.mark.parametrize("kernel_min", [0, 1 << 40])
def test_a_code_outside_the_matrix_is_refused(kernel_min, monkeypatch):
    import privlab.publish.pram_core as rz

    monkeypatch.setattr(rz, "_KERNEL_MIN", kernel_min)
    with pytest.raises(ParameterError, match="code 4 is outside the matrix's 4 values"):
        randomize_codes(np.array([0, 1, 4]), m_category_matrix(4, 0.2), 0)
    with pytest.raises(ParameterError, match="code -1 is outside"):
        randomize_codes(np.array([0, -1]), m_category_matrix(70, 0.2), 0)
    bad = np.array([[0, 1], [2, 5]], dtype=np.int32)  # the kernel's own check
    with pytest.raises(ParameterError, match=r"code 5 of column 1 \(row 1\)"):
        rz._draw_kernel(bad, [0, 1], [None, rz._cumulative(m_category_matrix(3, 0.2))],
                        np.random.default_rng(0))  # fmt: skip


def test_release_kernel_large_domain_shuffled():
    """randomize(): >32-value domains (binary search), shuffling, identity columns kept."""
    from scipy import stats

    rng = np.random.default_rng(9)
    n = 60_000
    a = rng.integers(0, 40, n)
    b = rng.integers(0, 2, n)
    table = Table.from_pandas(pd.DataFrame({"a": a, "b": b, "c": a % 3}))
    m = m_category_matrix(40, 0.5)
    rel = randomize(
        table, {"a": m, "b": binary_matrix(0.1, 0.3)}, keep=["c"], rng=np.random.default_rng(1)
    )
    exp = expected_randomized_counts(np.bincount(a, minlength=40), [m])
    obs = np.bincount(rel.table.column("a"), minlength=40)
    assert stats.chisquare(obs, exp).pvalue > 1e-3
    wrong = exp * np.where(np.arange(40) < 20, 1.3, 0.7)
    assert stats.chisquare(obs, wrong * n / wrong.sum()).pvalue < 1e-6
    exp_b = expected_randomized_counts(np.bincount(b, minlength=2), [binary_matrix(0.1, 0.3)])
    assert stats.chisquare(np.bincount(rel.table.column("b"), minlength=2), exp_b).pvalue > 1e-3
    # the identity column is released unchanged, up to the row order
    np.testing.assert_array_equal(np.sort(rel.table.column("c")), np.sort(a % 3))
    assert not np.array_equal(rel.table.column("c"), a % 3)


def test_bad_matrices_and_parameters_raise():
    with pytest.raises(MatrixError, match="row 1 sums to"):
        validate_matrix([[0.5, 0.5], [0.2, 0.7]])
    with pytest.raises(MatrixError, match="negative"):
        validate_matrix([[1.2, -0.2], [0.5, 0.5]])
    with pytest.raises(MatrixError, match="square"):
        validate_matrix([[0.5, 0.5]])
    with pytest.raises(MatrixError, match="domain has 3"):
        validate_matrix(np.eye(2), size=3)
    with pytest.raises(MatrixError, match="singular"):
        validate_matrix(binary_symmetric_matrix(0.5), invertible=True)
    with pytest.raises(MatrixError, match="singular"):
        moment_estimate([10, 20], [binary_symmetric_matrix(0.5)])
    with pytest.raises(ParameterError, match=r"p = 1.5"):
        m_category_matrix(3, 1.5)
    with pytest.raises(ParameterError, match=r"p1 = -0.1"):
        binary_matrix(-0.1, 0.2)
    with pytest.raises(ParameterError, match="unknown PRAM scheme 'foo'"):
        build_matrix("foo", 2, 0.1)
    with pytest.raises(MatrixError, match="needs a 2-value domain"):
        build_matrix("binary-symmetric", 3, 0.1)
    with pytest.raises(ParameterError, match="do not partition"):
        grouped_matrix([[0, 1], [1, 2]], 0.2)


def test_bad_release_input_raises(table_1_1):
    with pytest.raises(SchemaError, match="'nope'"):
        pram(table_1_1, columns=["nope"], p=0.2)
    with pytest.raises(MatrixError, match="domain has 2"):
        randomize(table_1_1, {"gender": np.eye(3)})
    with pytest.raises(MatrixError, match="not stochastic"):
        randomize(table_1_1, {"gender": [[0.9, 0.2], [0.5, 0.5]]})
    with pytest.raises(ParameterError, match=r"p = 2"):
        pram(table_1_1, columns=["gender"], scheme="binary-symmetric", p=2)
    with pytest.raises(PrivlabError, match="'Mumps'"):
        pram(table_1_1, columns=["disease"], p=0.2, groups={"disease": [["Flu", "Mumps"]]})
    with pytest.raises(PrivlabError, match="empty"):
        pram(table_1_1.take(np.zeros(12, bool)), columns=["gender"], p=0.2)


def test_invariant_pram_keeps_expected_frequencies():
    rng = np.random.default_rng(0)
    for k in (2, 3, 5):
        p = _random_stochastic(rng, k)
        freq = rng.integers(1, 50, k).astype(float)
        q = invariant_matrix(p, freq)
        validate_matrix(q)
        np.testing.assert_allclose(freq @ q, freq, rtol=1e-12)
    q = invariant_matrix(m_category_matrix(3, 0.3), [5, 0, 5])
    validate_matrix(q)


def test_invariant_release_warns_and_keeps_frequencies(table_1_1):

    with pytest.warns(PrivacyWarning, match="frequencies"):
        rel = pram(
            table_1_1, columns=["disease"], p=0.4, invariant=True, rng=np.random.default_rng(0)
        )
    freq = np.bincount(table_1_1.column("disease"), minlength=4).astype(float)
    np.testing.assert_allclose(freq @ rel.matrix("disease"), freq)


# -- Kronecker algebra ----------------------------------------------------------------------------
@pytest.mark.parametrize("sizes", [(2,), (3, 2), (2, 3, 4), (4, 1, 3)])
def test_modewise_kronecker_equals_explicit_matrix(sizes):
    rng = np.random.default_rng(sum(sizes))
    factors = [_random_stochastic(rng, k) for k in sizes]
    p = kron_matrix(factors)
    x = rng.random(p.shape[0]) * 100
    np.testing.assert_allclose(kron_apply(factors, x), p @ x, rtol=1e-12)
    np.testing.assert_allclose(expected_randomized_counts(x, factors), p.T @ x, rtol=1e-12)
    np.testing.assert_allclose(moment_estimate(x, factors), np.linalg.solve(p.T, x), rtol=1e-9)
    cov = moment_covariance(x, factors)
    pinv = np.linalg.inv(p)
    explicit = pinv.T @ (np.diag(p.T @ x) - p.T @ np.diag(x) @ p) @ pinv
    np.testing.assert_allclose(cov, explicit, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(moment_variance(x, factors), np.diag(explicit), rtol=1e-8)


def test_joint_layout_is_first_attribute_slowest():
    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 2], [1, 2]])
    table = Table.from_pandas(pd.DataFrame({"a": codes[:, 0], "b": codes[:, 1]}))
    rel = randomize(table, {}, keep=["a", "b"], rng=0)
    est = estimate_release(rel, ["a", "b"])
    np.testing.assert_array_equal(est.counts, [1, 1, 0, 1, 0, 2])
    est_ba = estimate_release(rel, ["b", "a"])
    np.testing.assert_array_equal(est_ba.counts, [1, 1, 1, 0, 0, 2])


# -- Theorems 1 and 2 by Monte Carlo --------------------------------------------------------------
SIZES = (3, 2)
FACTORS = [m_category_matrix(3, 0.3), binary_matrix(0.1, 0.25)]
TRUE_N = np.array([200.0, 50, 120, 30, 80, 120])


@pytest.fixture(scope="module")
def mc_runs():
    data = _data_from_counts(TRUE_N, SIZES)
    return _mc_counts(data, SIZES, FACTORS, runs=4000, seed=7)


def test_theorem1_expectation_and_covariance(mc_runs):
    runs = mc_runs.shape[0]
    exp = expected_randomized_counts(TRUE_N, FACTORS)
    cov = randomized_covariance(TRUE_N, FACTORS)
    se = np.sqrt(np.diag(cov) / runs)
    assert np.all(np.abs(mc_runs.mean(axis=0) - exp) < 4 * se)
    emp = np.cov(mc_runs, rowvar=False)
    rel = np.abs(np.diag(emp) / np.diag(cov) - 1)
    assert rel.max() < 0.12  # sampling sd of a variance ratio ~ 0.022 at 4000 runs
    # off-diagonal entries, scaled by the sds
    d = np.sqrt(np.diag(cov))
    assert np.max(np.abs(emp - cov) / np.outer(d, d)) < 0.08
    assert np.max(np.abs(1.3 * emp - cov) / np.outer(d, d)) > 0.2  # a 30% wrong scale fails


def test_theorem2_unbiased_covariance_and_interval_coverage(mc_runs):
    runs = mc_runs.shape[0]
    est = np.array([moment_estimate(r, FACTORS) for r in mc_runs])
    cov = moment_covariance(TRUE_N, FACTORS)
    se = np.sqrt(np.diag(cov) / runs)
    assert np.all(np.abs(est.mean(axis=0) - TRUE_N) < 4 * se)
    emp = np.cov(est, rowvar=False)
    assert np.max(np.abs(np.diag(emp) / np.diag(cov) - 1)) < 0.12
    d = np.sqrt(np.diag(cov))
    assert np.max(np.abs(emp - cov) / np.outer(d, d)) < 0.08
    # plug-in normal 95% intervals cover the truth about 95% of the time
    sd = np.sqrt(np.array([moment_variance(e, FACTORS) for e in est]))
    cover = (np.abs(est - TRUE_N) <= 1.959964 * sd).mean(axis=0)
    assert np.all(np.abs(cover - 0.95) < 0.03), cover


def test_sd_table_of_notes_5_4():
    """sd(theta^_111) for X1 | X2, both binary symmetric, all cells N/4 (notes Sec. 5.4)."""
    table = {
        0.05: 0.0049, 0.10: 0.0079, 0.15: 0.0115, 0.20: 0.0163, 0.25: 0.0237,
        0.30: 0.0368, 0.35: 0.0644, 0.40: 0.142, 0.45: 0.562,
    }  # fmt: skip
    for p, want in table.items():
        n = np.full(4, 2000.0)
        f = [binary_symmetric_matrix(p)] * 2
        got = ratio_sd(n, moment_covariance(n, f), [0], [0, 1])
        assert round(got, len(str(want)) - 2) == want  # equal to the printed digits
    for n_total, want in {1000: 0.0671, 4000: 0.0335, 32000: 0.0119}.items():
        n = np.full(4, n_total / 4)
        f = [binary_symmetric_matrix(0.25)] * 2
        assert round(ratio_sd(n, moment_covariance(n, f), [0], [0, 1]), 4) == want


def test_sd_0237_by_monte_carlo():
    n = np.full(4, 2000.0)
    f = [binary_symmetric_matrix(0.25)] * 2
    runs = _mc_counts(_data_from_counts(n, (2, 2)), (2, 2), f, runs=1000, seed=3)
    est = np.array([moment_estimate(r, f) for r in runs])
    theta = est[:, 0] / est[:, :2].sum(axis=1)
    sd = theta.std(ddof=1)
    assert sd == pytest.approx(0.0237, rel=0.08)  # MC relative se ~ 2.2%
    assert abs(theta.mean() - 0.5) < 4 * 0.0237 / np.sqrt(1000)


# -- EM -------------------------------------------------------------------------------------------
def test_em_equals_moment_when_interior():
    rng = np.random.default_rng(5)
    factors = [m_category_matrix(3, 0.3), m_category_matrix(4, 0.2)]
    true = rng.integers(300, 900, 12).astype(float)
    obs = _mc_counts(_data_from_counts(true, (3, 4)), (3, 4), factors, runs=1, seed=1)[0]
    mom = moment_estimate(obs, factors)
    assert np.all(mom > 0)
    em = em_estimate(obs, factors, tol=1e-13)
    assert em.converged
    np.testing.assert_allclose(em.counts, mom, rtol=1e-6)


@pytest.mark.parametrize("small", [True, False])
def test_em_runs_small_products_on_one_blas_thread(small, monkeypatch):
    """EM's iterations run BLAS on one thread when each product is small (issue 19), and
    leave BLAS as it was otherwise and afterwards; the estimate does not depend on it."""
    from threadpoolctl import threadpool_info, threadpool_limits

    import privlab.estimate.pram as pram

    def blas_threads() -> list[int]:
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    if not blas_threads():
        pytest.skip("no BLAS library found by threadpoolctl")
    with threadpool_limits(limits=2, user_api="blas"):  # two threads, whatever the host
        before = blas_threads()
        assert before == [2] * len(before)
        seen: list[list[int]] = []
        plain = pram.kron_apply

        def spy(factors, x):
            seen.append(blas_threads())
            return plain(factors, x)

        rng = np.random.default_rng(2)
        factors = [m_category_matrix(k, 0.6) for k in (5, 6, 7, 3)]  # 630 cells: mode products
        obs = rng.multinomial(20_000, rng.dirichlet(np.ones(630)))
        ref = em_estimate(obs, factors, max_iter=5)
        monkeypatch.setattr(pram, "kron_apply", spy)
        if not small:
            monkeypatch.setattr(pram, "SMALL_PRODUCT", 0)
        res = em_estimate(obs, factors, max_iter=5)
        in_loop = seen[:-1]  # the last product (the log-likelihood) runs after the loop
        assert len(in_loop) == 2 * res.iterations
        assert all(t == ([1] * len(before) if small else before) for t in in_loop)
        assert blas_threads() == before
    np.testing.assert_allclose(res.theta, ref.theta, rtol=1e-12, atol=1e-15)


def test_em_stays_on_the_simplex_when_moment_is_not_interior():
    table21 = np.array(
        [[1 / 40, 3 / 10, 0, 1 / 60, 0], [3 / 40, 0, 1 / 30, 1 / 20, 1 / 20],
         [0, 1 / 10, 1 / 30, 0, 0], [1 / 20, 0, 0, 1 / 60, 1 / 10], [1 / 20, 0, 1 / 30, 1 / 60, 0]]
    ).ravel()  # fmt: skip
    true = np.round(table21 / table21.sum() * 2000)
    factors = [m_category_matrix(5, 0.5)] * 2
    obs = _mc_counts(_data_from_counts(true, (5, 5)), (5, 5), factors, runs=1, seed=2)[0]
    mom = moment_estimate(obs, factors)
    assert mom.min() < 0  # the moment estimator's known defect
    em = em_estimate(obs, factors, tol=1e-9)
    assert np.all(em.theta >= 0) and em.theta.sum() == pytest.approx(1.0)
    assert em.counts.sum() == pytest.approx(obs.sum())
    # KKT of the MLE on the simplex: gradient P(N~/theta~) = N on the support, <= N off it
    tt = kron_apply([f.T for f in factors], em.theta)
    grad = kron_apply(factors, obs / tt)
    on = em.theta > 1e-6
    np.testing.assert_allclose(grad[on], obs.sum(), rtol=1e-3)
    assert np.all(grad[~on] <= obs.sum() * (1 + 1e-3))
    # the MLE beats the clipped moment estimate in likelihood
    clip = np.clip(mom, 1e-12, None)
    clip /= clip.sum()
    ll_clip = np.sum(obs * np.log(kron_apply([f.T for f in factors], clip)))
    assert em.loglik >= ll_clip


def test_em_covariance_matches_multinomial_sampling_by_monte_carlo():
    """Data drawn afresh each run: the MLE's spread is the inverse Fisher information."""
    from privlab.estimate.pram import em_covariance

    factors = [m_category_matrix(3, 0.2), binary_matrix(0.1, 0.25)]
    theta = np.array([0.3, 0.1, 0.2, 0.1, 0.15, 0.15])
    n, runs = 2000, 3000
    rng = np.random.default_rng(8)
    tt = kron_apply([f.T for f in factors], theta)
    obs = rng.multinomial(n, tt, size=runs).astype(float)
    est = np.array([moment_estimate(o, factors) for o in obs])  # interior: equal to the MLE
    cov = em_covariance(theta, factors, n)
    np.testing.assert_allclose(cov.sum(axis=1), 0, atol=1e-9)  # counts sum to n
    emp = np.cov(est, rowvar=False)
    assert np.max(np.abs(np.diag(emp) / np.diag(cov) - 1)) < 0.12
    d = np.sqrt(np.diag(cov))
    assert np.max(np.abs(emp - cov) / np.outer(d, d)) < 0.08


# -- marginalization ------------------------------------------------------------------------------
def test_marginal_of_group_matrix_matches_props_7_1_and_7_2():
    for g in (2, 3, 4):
        p = 0.3
        joint = joint_m_category_matrix([2] * g, p)
        j = 2**g
        m1 = marginal_matrix(joint, [2] * g, [g - 1])
        np.testing.assert_allclose(m1[0, 1], p * j / (2 * (j - 1)))  # Prop 7.1
        for c in range(1, g + 1):
            mc = marginal_matrix(joint, [2] * g, list(range(c)))
            pii = (1 - p) + p * (2 ** (g - c) - 1) / (2**g - 1)
            pij = p * 2 ** (g - c) / (2**g - 1)
            np.testing.assert_allclose(np.diag(mc), pii)
            np.testing.assert_allclose(mc[~np.eye(2**c, dtype=bool)], pij)


def test_marginal_of_kronecker_is_the_factor_for_any_prior():
    rng = np.random.default_rng(1)
    a, b, c = (_random_stochastic(rng, k) for k in (2, 3, 2))
    joint = kron_matrix([a, b, c])
    prior = rng.random(12)
    np.testing.assert_allclose(marginal_matrix(joint, [2, 3, 2], [1], prior=prior), b)
    np.testing.assert_allclose(marginal_matrix(joint, [2, 3, 2], [2, 0]), np.kron(c, a))


# -- privacy metrics ------------------------------------------------------------------------------
def test_gamma_closed_forms_and_table_5_1():
    for p in (0.1, 0.2, 0.25, 0.3, 0.45):
        assert gamma_amplification(binary_symmetric_matrix(p)) == pytest.approx(
            gamma_binary_symmetric(p)
        )
        assert gamma_amplification(m_category_matrix(6, p)) == pytest.approx(gamma_m_category(6, p))
        grouped = grouped_matrix([[0, 1, 2], [3, 4, 5]], p)
        assert gamma_amplification(grouped) == pytest.approx(2 * (1 - p) / p)
        assert gamma_amplification(grouped, strict=True) == np.inf
    for p1, p2 in ((0.15, 0.15), (0.2, 0.1), (0.3, 0.05)):
        assert gamma_amplification(ternary_symmetric_matrix(p1, p2)) == pytest.approx(
            gamma_ternary_symmetric(p1, p2)
        )
    assert gamma_amplification(binary_symmetric_matrix(0.25)) == pytest.approx(3)
    assert gamma_amplification(ternary_symmetric_matrix(0.15, 0.15)) == pytest.approx(4.6667, 1e-4)
    assert gamma_amplification(binary_symmetric_matrix(0.2)) == pytest.approx(4)
    assert gamma_amplification(binary_matrix(0.1, 0.25)) == pytest.approx(7.5)  # thesis: 9
    assert gamma_amplification(identity_matrix(3), strict=False) == 1.0


def test_simultaneous_gamma_section_7_1_3():
    for g, p, gs, gi in ((2, 0.3, 7, 16), (3, 0.3, 16.333, 112.9), (2, 0.1, 27, 196)):
        joint = joint_m_category_matrix([2] * g, p)
        assert gamma_amplification(joint) == pytest.approx(gamma_group_simultaneous(p, g))
        assert gamma_group_simultaneous(p, g) == pytest.approx(gs, rel=1e-3)
        item = marginal_matrix(joint, [2] * g, [0])
        indep = kron_matrix([item] * g)
        assert gamma_amplification(indep) == pytest.approx(gamma_group_independent(p, g))
        assert gamma_group_independent(p, g) == pytest.approx(gi, rel=1e-3)


def test_conditional_entropy_table_3_1_1():
    want = {0.1: (0.469, 0.701, 0.569), 0.3: (0.881, 1.578, 1.181), 0.5: (1.0, 2.161, 1.5)}
    for p, (b, m6, g6) in want.items():
        assert conditional_entropy(binary_symmetric_matrix(p)) == pytest.approx(b, abs=1e-3)
        assert conditional_entropy(m_category_matrix(6, p)) == pytest.approx(m6, abs=1e-3)
        grouped = grouped_matrix([[0, 1, 2], [3, 4, 5]], p)
        assert conditional_entropy(grouped) == pytest.approx(g6, abs=1e-3)
        assert conditional_entropy(m_category_matrix(6, p)) == pytest.approx(_h(p) + p * np.log2(5))
    # a skewed prior lowers the entropy of a binary symmetric scheme
    assert conditional_entropy(binary_symmetric_matrix(0.3), [0.9, 0.1]) < 0.881


def test_breach_bound_and_k_anonymity():
    assert breach_rho2(3.0, 0.1) == pytest.approx(0.3 / 1.2)
    assert breach_impossible(3.0, 0.1, 0.3) and not breach_impossible(3.0, 0.1, 0.2)
    with pytest.raises(ParameterError, match="rho1"):
        breach_rho2(3.0, 1.5)
    ka = probabilistic_k_anonymity(m_category_matrix(6, 0.3))
    assert ka.k_p == 6
    kg = probabilistic_k_anonymity(grouped_matrix([[0, 1, 2], [3, 4, 5]], 0.3))
    assert kg.k_p == 3
    post = posterior(m_category_matrix(6, 0.3))[0]
    assert ka.dist_k == pytest.approx(np.sum(post * np.log2(post * 6)))
    np.testing.assert_allclose(posterior(binary_matrix(0.1, 0.25), [0.5, 0.5]).sum(axis=1), 1)
    assert probabilistic_k_anonymity(identity_matrix(4)).k_p == 1


def test_information_loss_measures():
    assert odds_ratio([[10, 5], [4, 8]]) == pytest.approx(80 / 20)
    assert kl_divergence([0.5, 0.5], [0.5, 0.5]) == 0.0
    assert kl_divergence([0.5, 0.5], [1, 0]) == np.inf
    assert kl_divergence([1, 3], [2, 2]) == pytest.approx(0.25 * np.log(0.5) + 0.75 * np.log(1.5))


# -- the release ----------------------------------------------------------------------------------
def test_release_roundtrip_and_estimation(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "a": rng.choice(["x", "y", "z"], 3000, p=[0.5, 0.3, 0.2]),
            "b": rng.choice(["u", "v"], 3000),
            "c": rng.choice(["k", "l", "m", "n"], 3000),
            "d": rng.integers(0, 3, 3000),
        }
    )
    table = Table.from_pandas(df)
    rel = pram(table, columns=["a", "c"], keep=["b", "d"], scheme="m-category", p=0.2,
               rng=np.random.default_rng(4), groups={"c": [["k", "l"], ["m", "n"]]})  # fmt: skip
    rel.save(tmp_path / "r", not_for_publication=True)  # drawn from a generator: a test
    back = load_release(tmp_path / "r")
    assert isinstance(back, PramRelease)
    np.testing.assert_array_equal(back.table.codes, rel.table.codes)
    for c in table.names:
        np.testing.assert_allclose(back.matrix(c), rel.matrix(c))
    np.testing.assert_allclose(back.matrix("c"), grouped_matrix([[0, 1], [2, 3]], 0.2))
    assert back.randomized_columns == ("a", "c")
    est = estimate_release(back, ["a", "b"], method="moment")
    truth = pd.crosstab(df["a"], df["b"]).to_numpy().ravel()
    assert np.all(np.abs(est.counts - truth) <= 4 * est.sd + 1e-9)
    assert est.counts.sum() == pytest.approx(3000)
    em = estimate_release(back, ["a", "b"], method="em")
    assert np.all(em.counts >= 0)
    priv = back.privacy()
    blocks = {"+".join(r["columns"]): r for r in priv.details["blocks"]}
    assert set(blocks) == {"a", "c"}
    assert blocks["a"]["gamma"] == pytest.approx(gamma_m_category(3, 0.2))
    assert blocks["c"]["gamma"] == pytest.approx(0.8 / 0.2)
    assert blocks["c"]["k_p"] == 2
    assert priv.linkable == ("a", "b", "c", "d") and priv.partition is None
    with pytest.raises(ParameterError, match="'mle'"):
        estimate_release(back, ["a"], method="mle")


def test_simultaneous_release_partial_estimation():
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"a": rng.integers(0, 2, 4000), "b": rng.integers(0, 3, 4000)})
    df.loc[:1999, "b"] = 0  # dependence
    table = Table.from_pandas(df)
    rel = pram(table, columns=["a", "b"], p=0.3, simultaneous=True, rng=np.random.default_rng(1))
    assert len(rel.blocks) == 1 and rel.blocks[0].matrix.shape == (6, 6)
    joint = estimate_release(rel, ["b", "a"])
    truth = pd.crosstab(df["b"], df["a"]).to_numpy().ravel()
    assert np.all(np.abs(joint.counts - truth) <= 4 * joint.sd)
    only_b = estimate_release(rel, ["b"])
    np.testing.assert_allclose(only_b.counts, joint.counts.reshape(3, 2).sum(axis=1), rtol=1e-9)


def test_a_deterministic_swap_is_not_reported_safe(table_1_1):
    """p = 1 on a binary column swaps every value: Ma's gamma (zeros ignored) says 1 and
    rho2* = rho1; the release's report says gamma = inf and rho2* = 1, with a warning."""
    from privlab.metrics.pram import gamma_amplification, revealing_values

    swap = binary_symmetric_matrix(1.0)
    assert gamma_amplification(swap) == 1.0  # the thesis's definition, kept for Table 5.1
    assert revealing_values(swap).tolist() == [0, 1]
    rel = pram(table_1_1, columns=["gender"], scheme="binary-symmetric", p=1.0,
               rng=np.random.default_rng(0))  # fmt: skip
    with pytest.warns(PrivacyWarning, match="one original value only") as rec:
        (row,) = rel.privacy().details["blocks"]
    # the warning points at the line that asked for the privacy report
    assert [w.filename for w in rec if "one original value" in str(w.message)] == [__file__]
    assert row["gamma"] == np.inf and row["rho2_star"] == 1.0 and row["revealing_values"] == 2
    # a proper randomization reveals nothing and keeps its finite gamma
    rel = pram(table_1_1, columns=["gender"], scheme="binary-symmetric", p=0.2,
               rng=np.random.default_rng(0))  # fmt: skip
    (row,) = rel.privacy().details["blocks"]
    assert row["gamma"] == pytest.approx(4.0) and row["revealing_values"] == 0


# -- deterministic matrices warn at publish time (issue 29, part 6) ----------------------------
@pytest.mark.parametrize(
    ("matrix", "pairs"),
    [
        (binary_symmetric_matrix(1.0), [(0, 1), (1, 0)]),  # pram --p 1: a swap
        (identity_matrix(3), [(0, 0), (1, 1), (2, 2)]),  # p = 0
        (np.eye(4)[[2, 0, 3, 1]], [(0, 2), (1, 0), (2, 3), (3, 1)]),  # a permutation
        (m_category_matrix(3, 0.05), [(0, 0), (1, 1), (2, 2)]),  # diagonal 0.95
        (m_category_matrix(3, 0.1), []),  # diagonal 0.9: below the threshold
        (m_category_matrix(3, 0.3), []),
        (np.array([[0.97, 0.03], [0.97, 0.03]]), []),  # all to one value: nothing named
        (grouped_matrix([[0, 1], [2]], 0.3), [(2, 2)]),  # a value alone in its group
        (binary_matrix(0.02, 0.5), []),  # 0 is kept at 0.98 but 0 comes from 1 too
    ],
)
def test_near_deterministic_pairs(matrix, pairs):
    assert near_deterministic(matrix) == pairs


def test_near_deterministic_threshold_is_exact():
    # uniform prior: released j comes from i with P[i, j] / sum_k P[k, j]; both >= 0.95
    at = m_category_matrix(2, 1 - NEAR_DETERMINISTIC)
    assert near_deterministic(at) == [(0, 0), (1, 1)]
    below = m_category_matrix(2, 1 - NEAR_DETERMINISTIC + 1e-6)
    assert near_deterministic(below) == []


def test_pram_warns_at_publish_time_on_a_deterministic_matrix():
    import warnings

    df = pd.DataFrame({"s": ["a", "b"] * 50, "q": ["x"] * 100})
    t = Table.from_pandas(df, domains={"s": ["a", "b"], "q": ["x"]})
    with pytest.warns(PrivacyWarning, match="near-\\)deterministic.*'a' -> 'b'"):
        pram(t, columns=["s"], scheme="binary-symmetric", p=1.0, rng=3)
    with pytest.warns(PrivacyWarning, match="2 of its 2 values are released"):
        randomize(t, {"s": np.array([[0.0, 1.0], [1.0, 0.0]])}, rng=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        pram(t, columns=["s"], scheme="binary-symmetric", p=0.3, keep=["q"], rng=3)
        pram(t, columns=["s"], scheme="identity", p=0.0, rng=3)  # unchanged on purpose


def test_pram_publishes_each_columns_role(tmp_path):
    """A randomized column without a role is published as a quasi-identifier and a kept one
    as insensitive (every later risk measure reads these roles), through save and load; a
    column whose role was given keeps it."""
    from privlab.data.schema import Role

    g = np.random.default_rng(0)
    df = pd.DataFrame({"zip": g.choice(["a", "b", "c"], 60), "age": g.integers(20, 25, 60),
                       "other": g.choice(["u", "v"], 60)})  # fmt: skip
    with pytest.warns(PrivacyWarning):
        rel = pram(df, columns=["zip"], keep=["age"], p=0.2, rng=np.random.default_rng(1))
    roles = {a.name: a.role for a in rel.table.schema.attributes}
    assert roles == {"zip": Role.QI, "age": Role.INSENSITIVE}
    rel.save(tmp_path / "rel", not_for_publication=True)  # drawn from a generator: a test
    back = load_release(tmp_path / "rel")
    assert {a.name: a.role for a in back.table.schema.attributes} == roles
    # roles given by the custodian are kept: the randomized column is the sensitive one
    table = Table.from_pandas(df).with_roles(qi=["age"], sensitive="zip")
    with pytest.warns(PrivacyWarning):
        rel = pram(table, columns=["zip"], keep=["age"], p=0.2, rng=np.random.default_rng(1))
    roles = {a.name: a.role for a in rel.table.schema.attributes}
    assert roles == {"zip": Role.SENSITIVE, "age": Role.QI}


def test_each_column_of_a_jointly_randomized_block_has_its_own_channel():
    """``PramRelease.matrix(column)`` of a column randomized jointly with another is that
    column's channel: for a block randomized by ``A (x) B`` (independently, in effect) it is
    ``A`` for the first column and ``B`` for the second, square in the column's own domain."""
    a = m_category_matrix(3, 0.3)
    b = binary_symmetric_matrix(0.2)
    rng = np.random.default_rng(11)
    df = pd.DataFrame({"x": rng.integers(0, 3, 200), "y": rng.integers(0, 2, 200)})
    table = Table.from_pandas(df, domains={"x": [0, 1, 2], "y": [0, 1]})
    rel = randomize(table, {("x", "y"): kron_matrix([a, b])}, rng=np.random.default_rng(1))
    np.testing.assert_allclose(rel.matrix("x"), a, atol=1e-12)
    np.testing.assert_allclose(rel.matrix("y"), b, atol=1e-12)


def test_a_matrix_of_exactly_max_matrix_size_values_is_allowed(monkeypatch):
    """At most ``MAX_MATRIX_SIZE`` (2048) values per matrix: 2048 passes the size check (only
    the memory check may refuse it), 2049 is refused, one column or a joint block alike."""
    from privlab.publish.randomization import MAX_MATRIX_SIZE, require_matrix_sizes

    monkeypatch.setenv("PRIVLAB_MEMORY_LIMIT", "1TiB")
    assert MAX_MATRIX_SIZE == 2048
    require_matrix_sizes({"a": 2048}, ["a"], False)
    require_matrix_sizes({"a": 32, "b": 64}, ["a", "b"], True)
    with pytest.raises(ParameterError, match="2,049 x 2,049 transition matrix"):
        require_matrix_sizes({"a": 2049}, ["a"], False)
    with pytest.raises(ParameterError, match="at most 2,048 values per matrix"):
        require_matrix_sizes({"a": 3, "b": 683}, ["a", "b"], True)


def test_matrix_builders_at_their_parameter_limits():
    """p = 0 and p = 1 are allowed (unchanged, always moved), p just above 1 is not; a
    one-value domain takes only p = 0; p1 + p2 = 1 leaves nothing on the diagonal; a
    singleton group is never randomized; a domain of one value is the smallest allowed."""
    np.testing.assert_array_equal(m_category_matrix(2, 0.0), np.eye(2))
    np.testing.assert_array_equal(
        m_category_matrix(3, 1.0), [[0, 0.5, 0.5], [0.5, 0, 0.5], [0.5, 0.5, 0]]
    )
    with pytest.raises(ParameterError, match=r"p = 1.01 is outside \[0, 1\]"):
        m_category_matrix(3, 1.01)
    np.testing.assert_array_equal(m_category_matrix(1, 0.0), [[1.0]])
    with pytest.raises(ParameterError, match="one-value domain"):
        m_category_matrix(1, 0.1)
    with pytest.raises(ParameterError, match="k = 0"):
        m_category_matrix(0, 0.0)
    np.testing.assert_array_equal(identity_matrix(1), [[1.0]])
    with pytest.raises(ParameterError, match="k = 0"):
        identity_matrix(0)
    np.testing.assert_allclose(
        ternary_symmetric_matrix(0.6, 0.4), [[0, 0.6, 0.4], [0.4, 0, 0.6], [0.6, 0.4, 0]]
    )
    np.testing.assert_allclose(
        grouped_matrix([[0], [1, 2]], 0.4), [[1, 0, 0], [0, 0.6, 0.4], [0, 0.4, 0.6]]
    )
    np.testing.assert_allclose(joint_m_category_matrix([1, 2], 0.3), [[0.7, 0.3], [0.3, 0.7]])
    with pytest.raises(ParameterError, match="bad joint domain sizes"):
        joint_m_category_matrix([0, 2], 0.3)


def test_invariant_matrix_of_an_unreached_value_and_bad_frequencies():
    """A released value no frequent value reaches (value 1 under the identity with
    frequencies (1, 0)) maps back to itself: Q is the identity, finite and stochastic;
    frequencies that sum to 0 are refused; p1 + p2 may exceed 1 by the tolerance only."""
    from privlab.data.matrices import ATOL

    np.testing.assert_array_equal(invariant_matrix(np.eye(2), [1.0, 0.0]), np.eye(2))
    with pytest.raises(ParameterError, match="positive sum"):
        invariant_matrix(np.eye(2), [0.0, 0.0])
    np.testing.assert_allclose(
        ternary_symmetric_matrix(1.0, ATOL), [[0, 1, 0], [0, 0, 1], [1, 0, 0]], atol=2 * ATOL
    )
    with pytest.raises(ParameterError, match="exceeds 1"):
        ternary_symmetric_matrix(1.0, 10 * ATOL)


def test_the_kernel_names_a_bad_code_in_the_first_row_and_at_the_domain_size():
    """The compiled pass reports the first bad record even when it is row 0, and names the
    column whose code is out of range (code 0 of column 0 is fine; 3 is one past 3 values)."""
    import privlab.publish.pram_core as rz

    cum = rz._cumulative(m_category_matrix(3, 0.2))
    for bad, code in ((np.array([[0, 5], [1, 1]], dtype=np.int32), 5),
                      (np.array([[0, 3], [1, 1]], dtype=np.int32), 3)):  # fmt: skip
        with pytest.raises(ParameterError, match=rf"code {code} of column 1 \(row 0\)"):
            rz._draw_kernel(bad, [0, 1], [cum, cum], np.random.default_rng(0))


def test_matrix_size_messages_and_the_memory_estimate(monkeypatch):
    """The refusals name the matrix as it is: one column's domain, a joint domain, or (a
    domain still unknown) the declared ones as a lower bound; 120 bytes per entry is the
    memory estimate, allowed at exactly the budget."""
    from privlab.errors import MemoryBudgetError
    from privlab.publish.randomization import require_matrix_sizes

    monkeypatch.setenv("PRIVLAB_MEMORY_LIMIT", "1TiB")
    with pytest.raises(ParameterError) as e:
        require_matrix_sizes({"a": 3000, "b": None}, ["a", "b"], False)
    assert str(e.value).startswith(
        "the 3,000 x 3,000 transition matrix over the domain of a is too large to publish"
    ) and str(e.value).endswith("merge rare values first")
    with pytest.raises(ParameterError) as e:
        require_matrix_sizes({"a": 50, "b": 60}, ["a", "b"], True)
    assert str(e.value).startswith(
        "the 3,000 x 3,000 transition matrix over the joint domain of a, b is too large"
    ) and str(e.value).endswith("randomize fewer columns together, or each column on its own")
    with pytest.raises(ParameterError, match=r"joint domain of a, b \(at least 3,000 x 3,000: "
                       r"the declared domains of a alone\)"):  # fmt: skip
        require_matrix_sizes({"a": 3000, "b": None}, ["a", "b"], True)
    monkeypatch.setenv("PRIVLAB_MEMORY_LIMIT", str(120 * 10 * 10))
    require_matrix_sizes({"a": 10}, ["a"], False)
    monkeypatch.setenv("PRIVLAB_MEMORY_LIMIT", str(120 * 10 * 10 - 1))
    with pytest.raises(MemoryBudgetError, match="10 x 10 transition matrix"):
        require_matrix_sizes({"a": 10}, ["a"], False)


def test_an_edited_matrix_and_the_warnings_point_at_the_caller():
    """A published m-category matrix edited by 0.01 no longer matches its parameters; the
    undeclared-domain and near-deterministic warnings of randomize() point at the caller's
    line."""
    from privlab.publish.randomization import Block, check_published_scheme

    t = Table.from_pandas(pd.DataFrame({"a": list("xyzxyz")}), domains={"a": list("xyz")})
    params = {"scheme": "m-category", "p": 0.2, "columns": ["a"], "simultaneous": False}
    check_published_scheme([Block(("a",), m_category_matrix(3, 0.2))], t.schema, params)
    with pytest.raises(Exception, match="an edited matrix"):
        check_published_scheme([Block(("a",), m_category_matrix(3, 0.21))], t.schema, params)
    raw = Table.from_pandas(pd.DataFrame({"a": list("xyzxyz")}))
    with pytest.warns(PrivacyWarning) as rec:
        randomize(raw, {"a": np.eye(3)[[1, 2, 0]]}, rng=0)  # a permutation
    msgs = [str(w.message) for w in rec]
    assert any("read from the data" in m for m in msgs) and any("deterministic" in m for m in msgs)
    assert {w.filename for w in rec} == {__file__}


def test_pram_items_groups_up_to_2048_patterns():
    """A group of g items is randomized through one 2^g-pattern matrix: 11 items (2,048
    patterns, the most a release publishes) are allowed, 12 refused."""
    from privlab.publish.randomization import pram_items

    names = [f"i{j:02d}" for j in range(12)]
    df = pd.DataFrame({c: [0, 1, 1, 0] for c in names})
    t = Table.from_pandas(df, domains={c: [0, 1] for c in names})
    rel = pram_items(t, binary=True, groups=[names[:11]], p=0.2, rng=0)
    assert [b.matrix.shape for b in rel.blocks] == [(2048, 2048), (2, 2)]
    with pytest.raises(ParameterError, match=r"a group of 12 items .* 4,096-pattern matrix"):
        pram_items(t, binary=True, groups=[names], p=0.2, rng=0)


def test_invariant_pram_warns_at_the_callers_line():
    t = Table.from_pandas(pd.DataFrame({"a": list("xyzx")}), domains={"a": list("xyz")})
    with pytest.warns(PrivacyWarning, match="original frequencies can be read off") as rec:
        pram(t, columns=["a"], p=0.4, invariant=True, rng=0)
    assert rec[0].filename == __file__


@pytest.mark.parametrize("q", [3, 7, 1000, 4095, 4097, 12289])
def test_inverse_cdf_is_exact_on_boundaries_at_any_fraction(q):
    """CDF tables whose boundaries are the multiples ``j/q`` for denominators that are not
    powers of two, and uniforms on them and next to them: the lookup table answers as the
    count of entries <= u (a boundary inside a slice marks it ambiguous, decided by
    comparison)."""
    from privlab.publish.pram_core import _inverse_cdf

    j = np.arange(1, q)
    rows = -(-j.size // 63)
    cum = np.full((rows, 64), 2.0)  # the padded CDF table: 63 boundaries a row, then 2
    cum.ravel()[np.arange(j.size) + np.arange(j.size) // 63] = j / q
    cum[:, :-1] = np.where(cum[:, :-1] == 2.0, 1.0, cum[:, :-1])  # a short last row ends at 1
    ties = np.unique(cum[cum < 1])
    u = np.concatenate([ties, np.nextafter(ties, 0), np.nextafter(ties, 1)])
    for r in range(rows):
        codes = np.full(u.size, r)
        expected = (cum[r][None, :] <= u[:, None]).sum(axis=1)
        np.testing.assert_array_equal(_inverse_cdf(cum, codes, u), expected)


@pytest.mark.parametrize("kernel_min", [0, 1 << 40])
def test_an_identity_column_draws_nothing_and_a_single_row_is_randomized(kernel_min, monkeypatch):
    """Identity matrices leave their column untouched and take no uniforms (the other
    columns' draws are those of a call without it); a table of one row is randomized."""
    import privlab.publish.pram_core as rz
    from privlab.publish.randomization import randomize_columns

    monkeypatch.setattr(rz, "_KERNEL_MIN", kernel_min)  # the compiled path and numpy's
    flip = np.array([[0.0, 1.0], [1.0, 0.0]])
    m = np.full((3, 3), 1 / 3)
    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, 2, 500), rng.integers(0, 3, 500)], axis=1)
    alone, both = codes.copy(), codes.copy()
    randomize_columns(alone, {1: m}, 4)
    randomize_columns(both, {0: np.eye(2), 1: m}, 4)
    np.testing.assert_array_equal(both, alone)
    np.testing.assert_array_equal(both[:, 0], codes[:, 0])
    one = np.array([[0, 2]])
    randomize_columns(one, {0: flip}, 1)
    assert one.tolist() == [[1, 2]]
    # a PRAM matrix is square on both paths; a code beyond its values is refused
    merge = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    with pytest.raises(MatrixError, match=r"square \(K x K\), got shape \(3, 2\)"):
        randomize_columns(np.array([[0], [1], [2]]), {0: merge}, 1)
    with pytest.raises(ParameterError, match="code 3 is outside the matrix's 3 values"):
        randomize_columns(np.array([[0], [3]]), {0: np.full((3, 3), 1 / 3)}, 1)


def test_a_randomized_column_publishes_its_whole_domain_even_values_it_no_longer_shows():
    """The matrix has a row per value, so a randomized column's domain goes whole into
    release.json, also a value no published row holds; a kept column's domain is cut to
    the values published."""
    from privlab.publish import pram

    df = pd.DataFrame({"a": ["x", "y", "z"], "k": ["u", "v", "w"]})
    for seed in range(100):
        rel = pram(
            df, columns=["a"], keep=["k"], p=0.5, rng=np.random.default_rng(seed), shuffle=False
        )
        if len(set(rel.table.decode("a"))) < 3:
            break
    else:
        pytest.fail("no draw left a value out")
    public = rel.public_schema()
    assert public["a"].domain == ("x", "y", "z")
    assert public["k"].domain == ("u", "v", "w")
    assert rel.public_schema().names == ("a", "k")


def test_a_converged_privacy_estimate_warns_nothing():
    """``privacy()`` warns only when the EM estimate of the prior has not converged."""
    import warnings

    from privlab.errors import ConvergenceWarning
    from privlab.publish import pram

    rng = np.random.default_rng(4)
    df = pd.DataFrame({"a": rng.integers(0, 4, 3000).astype(str)})
    rel = pram(df, columns=["a"], p=0.3, rng=np.random.default_rng(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        report = rel.privacy()
    assert report is not None


def test_the_identity_scheme_publishes_the_columns_and_the_kept_ones_only():
    from privlab.publish import pram

    df = pd.DataFrame({"a": ["x", "y"], "k": ["u", "v"], "z": ["secret", "other"]})
    rel = pram(df, columns=["a"], keep=["k"], scheme="identity", p=0.0, rng=1)
    assert rel.table.names == ("a", "k")
    assert "z" not in rel.public_schema().names


def test_fixed_size_schemes_refuse_any_other_domain_size():
    """The binary schemes take 2 values and the ternary-symmetric one 3; any other size is
    refused with the size named."""
    from privlab.errors import MatrixError
    from privlab.publish.randomization import build_matrix

    assert build_matrix("ternary-symmetric", 3, 0.4).shape == (3, 3)
    assert build_matrix("binary", 2, 0.4).shape == (2, 2)
    for scheme, size, good in (("ternary-symmetric", 4, 3), ("ternary-symmetric", 2, 3),
                               ("binary", 3, 2), ("binary-symmetric", 5, 2)):  # fmt: skip
        with pytest.raises(
            MatrixError, match=f"needs a {good}-value domain, the attribute has {size}"
        ):
            build_matrix(scheme, size, 0.4)


def test_pram_records_p2_only_when_given_and_summarizes_its_release():
    from privlab.publish import pram

    df = pd.DataFrame({"a": ["x", "y"] * 50, "k": ["u", "v", "w", "u"] * 25})
    two = pram(df, columns=["a"], keep=["k"], scheme="binary", p=0.2, p2=0.3, rng=1)
    one = pram(df, columns=["a"], keep=["k"], scheme="binary", p=0.2, rng=1)
    assert two.parameters()["p2"] == 0.3 and "p2" not in one.parameters()
    assert one.summary() == {"rows": 100, "randomized": ["a"], "kept": ["k"],
                             "scheme": "binary", "p": 0.2}  # fmt: skip


def test_the_spark_engine_takes_a_spark_input_as_it_is():
    """``engine="spark"``: the sanitizer's input is the SparkInput given (its schema with the
    roles), handed on unchanged; the memory engine refuses ``schema=``."""
    import privlab.publish.randomization as rz
    from privlab.data.spark import SparkInput

    schema = Table.from_pandas(pd.DataFrame({"a": ["x", "y"], "k": ["u", "v"]})).schema

    class _Frame:
        columns = ("a", "k")

    data = SparkInput(_Frame(), schema)
    assert rz._input(data, "spark", None) is data
    with pytest.raises(ParameterError, match="schema= applies to the Spark and stream engines"):
        rz._input(pd.DataFrame({"a": ["x"]}), "memory", schema)


# -- branches of the publisher that only a refusal or a special input takes ----------------------
def _declared_ab() -> Table:
    """Six records: ``a`` (x, y, z) and ``b`` (u, v), both domains declared (no warning)."""
    df = pd.DataFrame({"a": list("xyzxyz"), "b": list("uvuvuu")})
    return Table.from_pandas(df, domains={"a": ["x", "y", "z"], "b": ["u", "v"]})


def test_groups_are_for_the_m_category_scheme_only():
    """Grouping is an M-category variant: a grouped binary scheme is refused (through
    ``pram`` and ``build_matrix``), while the ungrouped binary scheme and the grouped
    M-category one are built."""
    t = _declared_ab()
    with pytest.raises(
        ParameterError, match="groups apply to the m-category scheme, not 'binary-symmetric'"
    ):
        pram(t, columns=["b"], scheme="binary_symmetric", p=0.2, groups={"b": [["u", "v"]]},
             rng=np.random.default_rng(0))  # fmt: skip
    with pytest.raises(ParameterError, match="not 'identity'"):
        build_matrix("identity", 2, 0.0, groups=[[0, 1]])
    np.testing.assert_array_equal(
        build_matrix("binary-symmetric", 2, 0.2), binary_symmetric_matrix(0.2)
    )
    np.testing.assert_array_equal(
        build_matrix("m-category", 3, 0.4, groups=[[0], [1, 2]]),
        grouped_matrix([[0], [1, 2]], 0.4),
    )


def test_the_identity_scheme_builds_the_identity_whatever_p():
    """``identity`` ignores ``p``: its matrix is I, not the M-category matrix of ``p`` (whose
    diagonal would be 1 - p); invariant PRAM of I for any frequencies is I again, so such a
    release publishes the column unchanged with the identity as its matrix."""
    np.testing.assert_array_equal(build_matrix("identity", 3, 0.3), np.eye(3))
    t = _declared_ab()
    with pytest.warns(PrivacyWarning, match="original frequencies can be read off"):
        rel = pram(t, columns=["a"], keep=["b"], scheme="identity", p=0.3, invariant=True,
                   rng=np.random.default_rng(0), shuffle=False)  # fmt: skip
    ((block,),) = [rel.blocks]
    assert block.columns == ("a",) and block.scheme == "identity"
    np.testing.assert_array_equal(block.matrix, np.eye(3))
    np.testing.assert_array_equal(rel.table.codes, t.codes)


@pytest.mark.parametrize("kernel_min", [0, 1 << 40])
def test_a_single_row_and_a_release_of_kept_columns_on_both_draw_paths(kernel_min, monkeypatch):
    """The compiled path (``_KERNEL_MIN`` = 0) and numpy's agree on the edge sizes: one record
    through deterministic matrices lands exactly where they send it (codes chosen non-zero
    so that an unwritten output cannot pass), and a release with nothing randomized
    (identity scheme: only kept columns) publishes the table with an empty custody truth."""
    import privlab.publish.pram_core as rz

    monkeypatch.setattr(rz, "_KERNEL_MIN", kernel_min)
    domain = [f"v{i:02d}" for i in range(50)]
    shift = np.roll(np.eye(50), 17, axis=1)  # value i -> (i + 17) mod 50: v37 -> v04
    rotate = np.eye(3)[[2, 0, 1]]  # x -> z, y -> x, z -> y
    one = Table.from_pandas(
        pd.DataFrame({"a": ["v37"], "b": ["x"], "k": ["w"]}),
        domains={"a": domain, "b": ["x", "y", "z"], "k": ["u", "w"]},
    )
    with pytest.warns(PrivacyWarning, match="deterministic"):
        rel = randomize(one, {"a": shift, "b": rotate}, keep=["k"], rng=np.random.default_rng(0))
    assert rel.table.codes.tolist() == [[4, 2, 1]]
    assert rel.custody.truth.codes.tolist() == [[37, 0]]
    t = _declared_ab()
    rel = pram(t, columns=["a"], keep=["b"], scheme="identity", p=0.0,
               rng=np.random.default_rng(0), shuffle=False)  # fmt: skip
    np.testing.assert_array_equal(rel.table.codes, t.codes)
    assert rel.custody.truth.codes.shape == (6, 0)


def test_a_release_refuses_a_matrix_of_another_size_and_a_column_in_two_blocks():
    from privlab.errors import ReleaseError
    from privlab.publish.randomization import Block

    t = _declared_ab()
    with pytest.raises(MatrixError, match=r"matrix of a is 2x2 but the domain has 3 values"):
        PramRelease(t, [Block(("a",), np.eye(2))])
    with pytest.raises(ReleaseError, match=r"column\(s\) in two matrices: a$"):
        PramRelease(t, [Block(("a",), m_category_matrix(3, 0.2)),
                        Block(("a", "b"), joint_m_category_matrix([3, 2], 0.2))])  # fmt: skip
    ok = PramRelease(t, [Block(("a",), m_category_matrix(3, 0.2)), Block(("b",), np.eye(2))])
    assert ok.randomized_columns == ("a",)


def test_the_privacy_report_leaves_out_blocks_released_unchanged():
    """A column given the identity is published as it is: no row of the report's blocks."""
    t = _declared_ab()
    with pytest.warns(PrivacyWarning, match="matrix of b is"):
        rel = randomize(t, {"a": m_category_matrix(3, 0.4), "b": np.eye(2)},
                        rng=np.random.default_rng(0))  # fmt: skip
    rows = rel.privacy().details["blocks"]
    assert [r["columns"] for r in rows] == [["a"]]
    assert rows[0]["gamma"] == pytest.approx(gamma_m_category(3, 0.4))


def test_an_em_prior_that_has_not_converged_is_warned_about(monkeypatch):
    """``privacy()`` warns, with the EM's remaining gap, when the prior's EM estimate stops
    before its certificate (here cut to one step)."""
    import privlab.estimate.pram_em as pram_em
    from privlab.errors import ConvergenceWarning

    original = pram_em.em_certified

    def one_step(counts, factors, **kwargs):
        return original(counts, factors, max_steps=1)

    monkeypatch.setattr(pram_em, "em_certified", one_step)
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"a": rng.choice(["p", "q"], 3000, p=[0.8, 0.2])})  # r, s: none
    t = Table.from_pandas(df, domains={"a": ["p", "q", "r", "s"]})
    m = m_category_matrix(4, 0.3)
    rel = randomize(t, {"a": m}, rng=np.random.default_rng(1))
    counts = np.bincount(rel.table.column("a"), minlength=4).astype(float)
    fit = original(counts, [m], max_steps=1)
    assert not fit.converged and fit.gap > 0
    with pytest.warns(ConvergenceWarning, match="prior of a has NOT converged") as rec:
        rel.privacy()
    assert f"gain up to {fit.gap:.3g} nats" in str(rec.pop(ConvergenceWarning).message)


def test_a_column_given_two_matrices_is_refused():
    t = _declared_ab()
    with pytest.raises(ParameterError, match="column 'a' was given two matrices"):
        randomize(t, {"a": m_category_matrix(3, 0.2),
                      ("a", "b"): joint_m_category_matrix([3, 2], 0.2)})  # fmt: skip


def test_a_spark_input_is_randomized_by_the_spark_engine(monkeypatch):
    """``randomize`` checks the matrices against the Spark input's schema, then hands the
    settings (blocks, published and randomized columns) and the caller's generator to
    :func:`~privlab.publish.spark_pram.randomize_spark` and returns its release."""
    import privlab.publish.spark_pram as spark_pram
    from privlab.data.spark import SparkInput

    class _Frame:
        columns = ("a", "b")

    calls = []
    done = object()

    def fake(table, settings, gen, record):
        calls.append((table, settings, gen))
        return done

    monkeypatch.setattr(spark_pram, "randomize_spark", fake)
    data = SparkInput(_Frame(), _declared_ab().schema)
    gen = np.random.default_rng(0)
    m = m_category_matrix(3, 0.2)
    assert randomize(data, {"a": m}, keep=["b"], rng=gen, engine="spark", p=0.2) is done
    ((table, settings, got_gen),) = calls
    assert table is data and got_gen is gen
    assert [b.columns for b in settings.blocks] == [("a",)]
    np.testing.assert_array_equal(settings.blocks[0].matrix, m)
    assert settings.published == ("a", "b") and settings.randomized == {"a"}
    assert (settings.scheme, settings.p, settings.params, settings.shuffle) == (
        "custom", 0.2, {}, True
    )  # fmt: skip


def test_matrices_checked_against_their_parameters_only_where_these_name_a_scheme():
    """A release of custom matrices, of invariant PRAM or without a list of columns is
    checked for stochasticity only: the same matrices under a named scheme's parameters are
    refused as edited; the identity scheme publishes no matrix, and a set of matrices other
    than the parameters' columns is refused."""
    from privlab.errors import ReleaseError
    from privlab.publish.randomization import Block, check_published_scheme

    schema = _declared_ab().schema
    custom = [Block(("a",), invariant_matrix(m_category_matrix(3, 0.2), [4, 1, 1]))]
    named = {"scheme": "m-category", "p": 0.2, "columns": ["a"], "simultaneous": False}
    with pytest.raises(ReleaseError, match=r"not the m-category matrix of p = 0\.2 "):
        check_published_scheme(custom, schema, named)
    assert check_published_scheme(custom, schema, {**named, "invariant": True}) is None
    assert check_published_scheme(custom, schema, {**named, "scheme": "custom"}) is None
    assert check_published_scheme(custom, schema, {**named, "columns": None}) is None
    identity = {"scheme": "identity", "p": 0.0, "columns": ["a"], "simultaneous": False}
    assert check_published_scheme([], schema, identity) is None
    with pytest.raises(
        ReleaseError,
        match=r"publishes matrices of a, but its parameters randomize a \(simultaneous: False\)",
    ):
        check_published_scheme([Block(("a",), np.eye(3))], schema, identity)
    with pytest.raises(
        ReleaseError, match=r"publishes matrices of b, but its parameters randomize a \("
    ):
        check_published_scheme([Block(("b",), m_category_matrix(2, 0.2))], schema, named)


def test_a_release_of_the_identity_scheme_saves_and_loads(tmp_path):
    t = _declared_ab()
    rel = pram(t, columns=["a"], keep=["b"], scheme="identity", p=0.0,
               rng=np.random.default_rng(0))  # fmt: skip
    rel.save(tmp_path / "rel", not_for_publication=True)
    back = load_release(tmp_path / "rel")
    assert back.blocks == () and back.parameters()["scheme"] == "identity"
    assert back.table.decode("a").tolist() == rel.table.decode("a").tolist()


def test_identity_blocks_are_not_warned_about_as_deterministic():
    """A matrix named ``identity`` publishes its column unchanged on purpose: no warning; the
    same matrix given as a custom one is warned about."""
    import warnings

    t = _declared_ab()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        randomize(t, {"a": np.eye(3)}, scheme="Identity", rng=1)
    with pytest.warns(PrivacyWarning, match=r"the matrix of a is \(near-\)deterministic"):
        randomize(t, {"a": np.eye(3)}, rng=1)


def test_the_identity_scheme_of_single_columns_needs_no_matrix_memory(monkeypatch):
    """Randomized one by one under ``identity`` nothing is built, so no size is refused;
    jointly, or under another scheme, the same domain is too large to publish."""
    from privlab.publish.randomization import require_matrix_sizes

    monkeypatch.setenv("PRIVLAB_MEMORY_LIMIT", "1TiB")
    assert require_matrix_sizes({"a": 5000}, ["a"], False, scheme="Identity") is None
    with pytest.raises(ParameterError, match="5,000 x 5,000 transition matrix"):
        require_matrix_sizes({"a": 5000}, ["a"], True, scheme="identity")
    with pytest.raises(ParameterError, match="5,000 x 5,000 transition matrix"):
        require_matrix_sizes({"a": 5000}, ["a"], False, scheme="m_category")


def test_pram_refuses_a_column_both_kept_and_under_identity_and_groups_of_other_columns():
    t = _declared_ab()
    with pytest.raises(SchemaError, match=r"column 'a' is both randomized and kept unchanged$"):
        pram(t, columns=["a"], keep=["a", "b"], scheme="identity", p=0.0, rng=1)
    with pytest.raises(ParameterError, match="groups given for 'b', which is not randomized"):
        pram(t, columns=["a"], p=0.2, groups={"b": [["u", "v"]]}, rng=1)


def test_simultaneous_randomization_takes_the_ungrouped_m_category_scheme_only():
    t = _declared_ab()
    msg = "simultaneous randomization uses the m-category scheme only"
    with pytest.raises(ParameterError, match=msg):
        pram(t, columns=["a", "b"], scheme="ternary-symmetric", p=0.2, simultaneous=True, rng=1)
    with pytest.raises(ParameterError, match=msg):
        pram(t, columns=["a", "b"], p=0.2, simultaneous=True, groups={"a": [["x", "y"]]}, rng=1)
    rel = pram(t, columns=["a", "b"], scheme="M_Category", p=0.2, simultaneous=True,
               rng=np.random.default_rng(0))  # fmt: skip
    ((block,),) = [rel.blocks]
    assert block.columns == ("a", "b")
    np.testing.assert_array_equal(block.matrix, joint_m_category_matrix([3, 2], 0.2))
