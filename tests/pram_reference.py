"""The PRAM draws as privlab made them before the numba kernel (commit 2e65ca4), verbatim:
the oracle of tests/test_pram.py's identical-output tests (and of benchmarks/bench_pram.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Rows drawn per block (bounds the memory of the uniforms: 8 bytes per row and column).
_BLOCK = 1 << 20
#: Domains up to this size are drawn through a lookup table over ``_BUCKETS`` equal slices
#: of [0, 1); larger ones by a binary search per original value.
_SCAN_MAX = 64
#: Slices of the unit interval in the lookup table (a power of two: ``u * B`` is exact).
_BUCKETS = 4096


def _cumulative(m: np.ndarray) -> np.ndarray:
    """Row-wise CDFs, with every entry from the last positive column on set to 2 (> any
    uniform), so rounding can never select a zero-probability trailing value."""
    cum = np.cumsum(m, axis=1)
    k = m.shape[1]
    last = k - 1 - np.argmax(m[:, ::-1] > 0, axis=1)
    cum[np.arange(k)[None, :] >= last[:, None]] = 2.0
    return np.ascontiguousarray(cum)


def _scan(cum: np.ndarray, codes: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The number of entries of row ``codes[i]`` of ``cum`` that are ``<= u[i]``."""
    cum_t = np.ascontiguousarray(cum.T)
    out = np.zeros(codes.size, dtype=np.int64)
    for t in range(cum.shape[1] - 1):  # the last entry is padding (2.0): never <= u
        out += cum_t[t][codes] <= u
    return out


def _lookup_table(cum: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each value and slice ``[b/B, (b+1)/B)`` of the unit interval: the draw's answer
    at the slice's start, and whether a CDF boundary falls inside the slice (then the
    answer depends on where ``u`` lies in it)."""
    edges = np.arange(_BUCKETS + 1) / _BUCKETS
    first = np.stack([np.searchsorted(row, edges[:-1], side="right") for row in cum])
    last = np.stack([np.searchsorted(row, edges[1:], side="left") for row in cum])
    return first.astype(np.int64).ravel(), (first != last).ravel()


def _inverse_cdf(cum: np.ndarray, codes: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Released value of each record: the first column of row ``codes[i]`` of the padded
    CDF table ``cum`` that exceeds ``u[i]`` (the number of entries ``<= u[i]``).

    Small domains go through a lookup table on the slice of ``u`` (exact: ``u * 4096`` is
    computed without rounding), with the few records whose slice holds a boundary of their
    row's CDF decided by comparison; large domains by a binary search per original value.
    Either way the answer is the sequential scan's, bit for bit.
    """
    k = cum.shape[1]
    if k <= _SCAN_MAX:
        answer, ambiguous = _lookup_table(cum)
        cell = codes.astype(np.int64) * _BUCKETS + (u * _BUCKETS).astype(np.int64)
        out = answer[cell]
        fix = np.flatnonzero(ambiguous[cell])
        if fix.size:
            out[fix] = _scan(cum, codes[fix], u[fix])
        return out
    out = np.empty(codes.size, dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(k + 1))
    for v in np.flatnonzero(np.diff(bounds)):
        rows = order[bounds[v] : bounds[v + 1]]
        out[rows] = np.searchsorted(cum[v], u[rows], side="right")
    return out


def _draw(
    src: np.ndarray,
    cols: Sequence[int],
    cums: Sequence[np.ndarray | None],
    gen: np.random.Generator,
    perm: np.ndarray | None = None,
) -> np.ndarray:
    """``out[perm[r], j] = ``column ``cols[j]`` of row ``r`` of ``src``, randomized through
    ``cums[j]`` (None: copied unchanged).

    Uniforms are drawn block by block, one per record and randomized column in row-major
    order (record by record), so the stream a seed gives does not depend on the block size.
    Scattering to ``perm`` shuffles the rows: the inverse of a uniformly random permutation is
    uniformly random too.
    """
    n = src.shape[0]
    out = np.empty((n, len(cols)), dtype=src.dtype)
    active = [j for j, c in enumerate(cums) if c is not None]
    for lo in range(0, n, _BLOCK):
        hi = min(n, lo + _BLOCK)
        u = gen.random((hi - lo, len(active))) if active else None
        block = np.empty((hi - lo, len(cols)), dtype=src.dtype)
        for j, col in enumerate(cols):
            vals = src[lo:hi, col]
            if cums[j] is not None:
                vals = _inverse_cdf(cums[j], vals, u[:, active.index(j)])
            block[:, j] = vals
        if perm is None:
            out[lo:hi] = block
        else:
            _scatter_rows(out, perm[lo:hi], block)
    return out


def _scatter_rows(out: np.ndarray, rows: np.ndarray, block: np.ndarray) -> None:
    """``out[rows] = block`` for C-contiguous 2-D arrays, moving each row as one item (one
    random write per record; 9x faster than numpy's 2-D fancy assignment at 10^7 rows)."""
    if out.shape[1] == 0:
        return
    row = np.dtype((np.void, out.dtype.itemsize * out.shape[1]))
    np.put(out.view(row).ravel(), rows, np.ascontiguousarray(block).view(row).ravel())


def plain_em(params, e_step, m_step, iterations, tol):
    """The PRAM attack's EM without acceleration, with the stopping rule of
    ``privlab.attacks.pram._squarem`` (whose place it takes when patched in): the oracle of
    the accelerated fit, and the benchmark's plain side."""
    r, logz, obj = e_step(params)
    for k in range(1, iterations + 1):
        params = m_step(params, r)
        r, logz, new = e_step(params)
        if abs(new[0] - obj[0]) <= tol * max(abs(new[0]), 1.0):
            return params, r, logz, new, k, True
        obj = new
    return params, r, logz, obj, iterations, False
