"""PRAM's draws, below its engines: each record's randomized values drawn from the rows of
the transition matrices (the inverse of each row's cumulative distribution, by a lookup
table, a binary search or a compiled kernel), and the matrices' blocks as ``release.json``
lists them.  :mod:`privlab.publish.randomization` runs them in memory,
:mod:`privlab.publish.streaming` batch by batch and :mod:`privlab.publish.spark_pram` on
Spark; each imports this module, never the reverse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from privlab._rng import RngLike, as_generator
from privlab.data.counts import joint_index
from privlab.data.matrices import validate_matrix
from privlab.data.schema import Role, Schema
from privlab.errors import MatrixError, ParameterError

# -- randomization ---------------------------------------------------------------------------------
#: Rows drawn per block (bounds the memory of the uniforms: 8 bytes per row and randomized
#: column; the compiled path's blocks stay in the cache between the generator and the kernel).
_BLOCK = 1 << 20
_KERNEL_BLOCK = 1 << 14
#: Domains up to this size are drawn through a lookup table over ``_BUCKETS`` equal slices
#: of [0, 1); larger ones by a binary search per original value.
_SCAN_MAX = 64
#: Slices of the unit interval in the lookup table (a power of two: ``u * B`` is exact).
_BUCKETS = 4096
#: Draws (records x output columns) from which the compiled kernel is used: below, the
#: vectorized numpy path is faster than importing numba and loading the cached kernel
#: (about 0.6 s of CPU in a fresh process, against about 25 ns per draw in numpy).
_KERNEL_MIN = 1 << 23


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
    Either way the answer is the sequential scan's, bit for bit (numpy path of :func:`_draw`).
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


def _draw_numpy(
    src: np.ndarray,
    cols: Sequence[int],
    cums: Sequence[np.ndarray | None],
    gen: np.random.Generator,
) -> np.ndarray:
    """``out[r, j] = ``column ``cols[j]`` of row ``r`` of ``src``, randomized through
    ``cums[j]`` (None: copied unchanged).

    Uniforms are drawn block by block, one per record and randomized column in row-major
    order (record by record), so the stream a seed gives does not depend on the block size.
    The vectorized path of :func:`_draw`, for small tables.
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
        out[lo:hi] = block
    return out


def _plan(cums: Sequence[np.ndarray | None]) -> tuple[np.ndarray, ...]:
    """The compiled kernel's description of the output columns: kind, uniform slot, domain
    size, offset of the CDF rows in one flat float array, offset of the lookup table in one
    flat uint8 array (see :func:`privlab.publish._pram_kernel.draw_block`)."""
    from privlab.publish._pram_kernel import AMBIGUOUS, COPY, SEARCH, TABLE

    n = len(cums)
    kind, slot, ks = (np.full(n, COPY, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64))
    cum_off, tab_off = np.zeros(n, np.int64), np.zeros(n, np.int64)
    flat: list[np.ndarray] = [np.zeros(0)]
    tables: list[np.ndarray] = [np.zeros(0, np.uint8)]
    at = tat = active = 0
    for j, cum in enumerate(cums):
        if cum is None:
            continue
        k = cum.shape[1]
        slot[j], ks[j], cum_off[j] = active, k, at
        active += 1
        flat.append(np.ascontiguousarray(cum, dtype=np.float64).ravel())
        at += k * k
        if k <= _SCAN_MAX:  # answers <= 64 and a flag: one byte each (k x 4096 bytes)
            kind[j], tab_off[j] = TABLE, tat
            answer, ambiguous = _lookup_table(cum)
            tables.append((answer + AMBIGUOUS * ambiguous).astype(np.uint8))
            tat += k * _BUCKETS
        else:
            kind[j] = SEARCH
    return kind, slot, ks, cum_off, np.concatenate(flat), tab_off, np.concatenate(tables)


def _draw_kernel(
    src: np.ndarray,
    cols: Sequence[int],
    cums: Sequence[np.ndarray | None],
    gen: np.random.Generator,
    *,
    in_place: bool = False,
    origin: tuple[np.ndarray, Sequence[int]] | None = None,
    truth: tuple[np.ndarray, Sequence[int]] | None = None,
) -> np.ndarray:
    """:func:`_draw_numpy`'s draws by one compiled pass per block of ``_KERNEL_BLOCK``
    records: the same uniforms, the same answers, without temporaries or branches on the
    data (a code's slice of [0, 1) is looked up; only a slice holding a CDF boundary costs a
    comparison).

    With ``in_place`` the output is written over ``src``, which holds exactly the output
    columns (``cols`` is ``0 .. len(cols) - 1``; C-contiguous).  ``origin`` (an array and
    its columns, default ``src`` and ``cols``) is where a code outside its domain is
    looked for and named, by its row there.  ``truth`` (an array and positions in
    ``cols``): the original codes of those output columns are also copied into the array,
    in the same pass.
    """
    from privlab.publish._pram_kernel import draw_block

    n = src.shape[0]
    if in_place:
        if not src.flags.c_contiguous or list(cols) != list(range(src.shape[1])):
            raise ValueError("drawing in place needs the output columns, C-contiguous")
        out = src
    else:
        src = np.ascontiguousarray(src)
        out = np.empty((n, len(cols)), dtype=src.dtype)
    if n == 0 or not len(cols):
        return out if in_place else src[:, list(cols)].copy()
    kind, slot, ks, cum_off, flat, tab_off, table = _plan(cums)
    col_idx = np.asarray(cols, dtype=np.int64)
    tcol = np.full(len(cols), -1, dtype=np.int64)
    kept = np.empty((n, 0), dtype=src.dtype) if truth is None else truth[0]
    if truth is not None:
        tcol[np.asarray(truth[1], dtype=np.int64)] = np.arange(len(truth[1]))
    n_active = sum(c is not None for c in cums)
    buf = np.empty((min(n, _KERNEL_BLOCK), n_active))
    for lo in range(0, n, _KERNEL_BLOCK):
        hi = min(n, lo + _KERNEL_BLOCK)
        u = buf[: hi - lo]
        if n_active:
            gen.random(out=u)
        bad = draw_block(src, lo, col_idx, kind, slot, ks, cum_off, flat, tab_off, table,
                         _BUCKETS, u, out, lo, tcol, kept)  # fmt: skip
        if bad >= 0:
            where, at = (src, cols) if origin is None else origin
            _refuse_bad_code(where, at, ks)
    return out


def _refuse_bad_code(src: np.ndarray, cols: Sequence[int], ks: np.ndarray) -> None:
    """Name the first row of ``src`` (its columns ``cols``, of ``ks`` values; 0: copied)
    holding a code outside its domain, and the first such column of that row."""
    first = [
        (int(bad[0]), j)
        for j, (c, k) in enumerate(zip(cols, ks))
        if k and (bad := np.flatnonzero((src[:, c] < 0) | (src[:, c] >= k))).size
    ]
    row, j = min(first)
    raise ParameterError(
        f"code {src[row, cols[j]]} of column {cols[j]} (row {row}) is outside the "
        f"matrix's {ks[j]} values"
    )


def _draw(
    src: np.ndarray,
    cols: Sequence[int],
    cums: Sequence[np.ndarray | None],
    gen: np.random.Generator,
    kernel: bool | None = None,
) -> np.ndarray:
    """``out[r, j] = ``column ``cols[j]`` of row ``r`` of ``src``, randomized through
    ``cums[j]`` (None: copied unchanged).

    Large draws (``_KERNEL_MIN`` and more, or ``kernel=True``: a stream's batches take one
    path for the whole table) run the compiled kernel, smaller ones the vectorized numpy
    code; both give the same output and leave ``gen`` in the same state (tests/test_pram.py
    compares them with privlab's implementation before the kernel).
    """
    if kernel is None:
        kernel = src.shape[0] * len(cols) >= _KERNEL_MIN
    if kernel:
        return _draw_kernel(src, cols, cums, gen)
    return _draw_numpy(src, cols, cums, gen)


def draw_release(
    src: np.ndarray,
    codes: np.ndarray,
    cols: Sequence[int],
    cums: Sequence[np.ndarray | None],
    truth_cols: Sequence[int],
    gen: np.random.Generator,
    shuffle: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """The in-memory release and its custody's truth: ``(out, truth)``.

    With ``shuffle`` the rows are published in a uniformly random order: published row
    ``i`` is input row ``order[i]`` (``order = privlab.data.shuffle.permutation(gen, n)``),
    column ``cols[j]`` of ``src`` randomized through ``cums[j]`` (None: copied), its
    uniforms drawn in the published order (one per record and randomized column, row-major,
    as :func:`_draw`), and ``truth[i]`` the columns ``truth_cols`` of ``codes`` (the
    original values) of the same input row.  Without it, row ``i`` is input row ``i``
    (then the release is :func:`_draw`'s, bit for bit).

    The rows are shuffled first, the published columns and the truth together
    (:func:`~privlab.data.shuffle.shuffled_rows`: from a million rows, two passes that stay
    in the cache, and no permutation array), then drawn in place.  A seed's shuffled
    release of a million rows or more changed with this (privlab 0.2): same law, another
    draw.
    """
    cols, truth_cols = [int(c) for c in cols], [int(c) for c in truth_cols]
    kernel = src.shape[0] * len(cols) >= _KERNEL_MIN
    # the truth's columns are published columns of src: read with the rows they are drawn
    # from (by the kernel's own pass, or shuffled with them), not by a pass of their own
    inner = codes is src and set(truth_cols) <= set(cols)
    at = [cols.index(c) for c in truth_cols] if inner else []
    origin, other = None, None
    if shuffle:  # then drawn in place, and a bad code named by its input row
        from privlab.data.shuffle import shuffled_rows

        rows, other = shuffled_rows(gen, src, cols, None if inner else codes, truth_cols)
        src, cols, origin = rows, list(range(len(cols))), (src, cols)
    if kernel and inner:
        truth = np.empty((src.shape[0], len(at)), dtype=codes.dtype)
        out = _draw_kernel(src, cols, cums, gen, in_place=shuffle, origin=origin,
                           truth=(truth, at))  # fmt: skip
        return out, truth
    if inner:  # (numpy's draws leave src as it is)
        truth = np.ascontiguousarray(src[:, at if shuffle else truth_cols])
    else:
        truth = other if shuffle else np.ascontiguousarray(codes[:, truth_cols])
    if kernel:
        return _draw_kernel(src, cols, cums, gen, in_place=shuffle, origin=origin), truth
    return _draw_numpy(src, cols, cums, gen), truth


def _is_identity(m: np.ndarray) -> bool:
    return bool(np.array_equal(m, np.eye(m.shape[0])))


def randomize_codes(codes: np.ndarray, matrix: np.ndarray, rng: RngLike = None) -> np.ndarray:
    """Draw ``X~`` for every code of a 1-D array (see :func:`randomize_columns`): a new
    array of ``codes``' shape, of int32 (4 bytes a code; int64 only for a matrix of 2^31 or
    more values)."""
    m = np.asarray(matrix, dtype=float)
    codes = np.asarray(codes)
    dtype = np.int32 if m.shape[0] < 2**31 else np.int64
    out = np.ascontiguousarray(codes, dtype=dtype).reshape(-1, 1).copy()
    randomize_columns(out, {0: m}, rng)
    return out.reshape(codes.shape)


def randomize_columns(codes: np.ndarray, matrices: Mapping[int, np.ndarray], rng: RngLike) -> None:
    """Randomize columns of a 2-D integer array IN PLACE: ``{column index: matrix}``.

    Per record and attribute one uniform from ``rng`` is drawn and mapped through the
    cumulative row of the record's value; identity matrices leave their column untouched.
    """
    gen = as_generator(rng)
    for col, m in matrices.items():
        m = np.asarray(m, dtype=float)
        if m.ndim != 2 or m.shape[0] != m.shape[1]:
            raise MatrixError(f"a PRAM matrix is square (K x K), got shape {m.shape}")
        if _is_identity(m) or codes.shape[0] == 0:
            continue
        lo, hi = codes[:, int(col)].min(), codes[:, int(col)].max()
        if lo < 0 or hi >= m.shape[0]:
            raise ParameterError(
                f"code {lo if lo < 0 else hi} is outside the matrix's {m.shape[0]} values"
            )
        codes[:, int(col)] = _draw(codes, [int(col)], [_cumulative(m)], gen, None)[:, 0]


# -- the matrices of a release ------------------------------------------------------------------
@dataclass(frozen=True)
class Block:
    """A set of attributes randomized together by one matrix (one attribute if independent)."""

    columns: tuple[str, ...]
    matrix: np.ndarray
    scheme: str = "custom"

    def __post_init__(self) -> None:
        m = validate_matrix(self.matrix, name=f"matrix of {', '.join(self.columns)}")
        m.setflags(write=False)
        object.__setattr__(self, "matrix", m)
        object.__setattr__(self, "columns", tuple(self.columns))

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns),
            "scheme": self.scheme,
            "matrix": self.matrix.tolist(),
        }


def randomized_columns(blocks: Sequence[Block]) -> tuple[str, ...]:
    """The columns a non-identity matrix of ``blocks`` randomizes, in block order (every
    engine's release names them so)."""
    return tuple(c for b in blocks if not _is_identity(b.matrix) for c in b.columns)


def pram_metadata(blocks: Sequence[Block]) -> dict[str, Any]:
    """What ``release.json`` says of a PRAM release's matrices (both engines)."""
    return {
        "matrix_layout": "joint matrices index their columns in mixed radix, first column slowest",
        "matrices": [b.to_dict() for b in blocks],
    }


@dataclass(frozen=True)
class PramSettings:
    """What :func:`~privlab.publish.randomization.randomize` checked, as every engine
    (memory, stream, Spark) takes it: the matrices' ``blocks``, the ``published`` columns in
    their order, the ``randomized`` ones, the scheme with ``p`` and its other ``params``
    (``release.json``'s parameters), and whether the rows are ``shuffle``-d."""

    blocks: tuple[Block, ...]
    published: tuple[str, ...]
    randomized: frozenset[str]
    scheme: str = "custom"
    p: float | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    shuffle: bool = True

    @property
    def truth_columns(self) -> list[str]:
        """The randomized columns in published order: the custody's truth."""
        return [c for c in self.published if c in self.randomized]

    @property
    def full_domain(self) -> frozenset[str]:
        """The columns whose whole domain is published (their matrices index it)."""
        return frozenset(c for b in self.blocks for c in b.columns)

    def parameters(self) -> dict[str, Any]:
        """``release.json``'s parameters."""
        return {"scheme": self.scheme, "p": self.p, **self.params}

    def public_schema(self, schema: Schema) -> Schema:
        """The published columns of ``schema``; a column without a role is a QI when
        randomized, else insensitive."""
        attrs = []
        for c in self.published:
            a = schema[c]
            role = (
                a.role
                if a.role.published
                else Role.QI
                if c in self.randomized
                else Role.INSENSITIVE
            )
            attrs.append(replace(a, role=role))
        return Schema(tuple(attrs))

    def truth_schema(self, schema: Schema) -> Schema | None:
        """The custody's truth columns of ``schema`` (None when nothing is randomized)."""
        return schema.select(self.truth_columns) if self.truth_columns else None


def draw_plan(
    blocks: Sequence[Block], published: Sequence[str], schema: Any, *, skip_identity: bool = False
) -> tuple[list[np.ndarray | None], list[tuple[list[int], list[int], np.ndarray]]]:
    """How the engines draw a row of ``published`` codes: per column its cumulative matrix
    (None: released unchanged), and the joint blocks ``(positions, sizes, matrix)``, drawn
    first through their joint index.  ``skip_identity`` leaves identity joint blocks out
    (the Spark engine; the stream engine draws them, which changes no value)."""
    pos = {c: j for j, c in enumerate(published)}
    cums: list[np.ndarray | None] = [None] * len(published)
    joint = []
    for b in blocks:
        if len(b.columns) == 1:
            if not _is_identity(b.matrix):
                cums[pos[b.columns[0]]] = _cumulative(b.matrix)
        elif not (skip_identity and _is_identity(b.matrix)):
            sizes = [schema[c].size for c in b.columns]
            joint.append(([pos[c] for c in b.columns], sizes, np.asarray(b.matrix)))
    return cums, joint


def draw_joint(
    codes: np.ndarray,
    joint: Sequence[tuple[list[int], list[int], np.ndarray]],
    gen: np.random.Generator,
) -> np.ndarray:
    """``codes`` with :func:`draw_plan`'s joint blocks drawn, each through its joint index:
    a copy (``codes`` itself where there is no joint block), on every engine."""
    if not joint:
        return codes
    src = np.array(codes, copy=True, order="C")
    for idx, sizes, m in joint:
        flat = joint_index(src[:, idx], sizes).reshape(-1, 1)
        randomize_columns(flat, {0: m}, gen)
        src[:, idx] = np.column_stack(np.unravel_index(flat[:, 0], sizes))
    return src
