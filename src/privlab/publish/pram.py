"""PRAM, the post-randomization method, as seed 002 (J. Ma, PhD thesis 2006, Ch. 2) uses it.

Every record's value of an attribute ``X_i`` is replaced independently by a random value drawn
from row ``x`` of a known, row-stochastic transition matrix ``P^i``::

    P^i[l, m] = Pr(X~_i = m | X_i = l)          (row = original value, column = released value)

Several attributes of one owner may instead be randomized *simultaneously* through one joint
matrix over their combined domain (Ma Sec. 2.1, 7.1.2).  The joint domain is laid out in
mixed radix with the **first attribute varying slowest** (the layout for which independent
randomization is ``P^1 (x) P^2``; notes Sec. 0 — the thesis's Sec. 2.4.1 says "fastest",
which contradicts its own Kronecker order).

The release (:class:`PramRelease`) holds the randomized table and *every* transition matrix
(identity for attributes released unchanged), so anyone can estimate frequencies from it
(:mod:`privlab.publish.pram_estimation`) and measure its privacy (:mod:`privlab.metrics.pram`).

Scheme builders follow Ma Sec. 2.1 / Fig. 2.1 as the notes reconstruct them (the figure is not
in the text): binary ``[[1-p1, p1], [p2, 1-p2]]``; ternary symmetric circulant (stay
``1-p1-p2``, next value ``p1``, the one after ``p2``); M-category (stay ``1-p``, each other
value ``p/(K-1)``); grouped block-diagonal; identity.  :func:`invariant_matrix` is the
invariant PRAM of Gouweleeuw et al. (1998) that sdcMicro offers.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numba
import numpy as np
import pandas as pd

from privlab._io import atomic_dir
from privlab._rng import RngLike, as_generator, seed_of
from privlab.data.schema import Attribute, Role, Schema
from privlab.data.table import Table
from privlab.errors import (
    ParameterError,
    PrivacyWarning,
    PrivlabError,
    ReleaseError,
    SchemaError,
)
from privlab.publish.release import RELEASE_FILE, read_meta, release_method

DATA_FILE = "randomized.csv"
SCHEMES = ("identity", "binary", "binary-symmetric", "ternary-symmetric", "m-category")
_ATOL = 1e-9


class MatrixError(ParameterError):
    """A transition matrix is not square, not stochastic, singular, or of the wrong size."""


# -- builders -----------------------------------------------------------------------------------
def _check_p(name: str, p: float, hi: float = 1.0) -> float:
    try:
        p = float(p)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {p!r}") from None
    if not (0.0 <= p <= hi) or np.isnan(p):
        raise ParameterError(f"{name} = {p} is outside [0, {hi:g}]")
    return p


def identity_matrix(k: int) -> np.ndarray:
    """The ``k x k`` identity: the attribute is released unchanged."""
    if int(k) < 1:
        raise ParameterError(f"a domain needs at least one value, got k = {k}")
    return np.eye(int(k))


def binary_matrix(p1: float, p2: float) -> np.ndarray:
    """Binary randomization (Ma Fig. 2.1a): ``[[1-p1, p1], [p2, 1-p2]]``.

    ``p1 = Pr(X~ = 2 | X = 1)`` and ``p2 = Pr(X~ = 1 | X = 2)``; ``p1 != p2`` protects one
    value more than the other (Table 5.1's variables C and F use ``p1 = 0.1, p2 = 0.25``).
    """
    p1, p2 = _check_p("p1", p1), _check_p("p2", p2)
    return np.array([[1.0 - p1, p1], [p2, 1.0 - p2]])


def binary_symmetric_matrix(p: float) -> np.ndarray:
    """Binary symmetric randomization: each value flips with probability ``p``."""
    return binary_matrix(p, p)


def ternary_symmetric_matrix(p1: float, p2: float | None = None) -> np.ndarray:
    """Ternary symmetric randomization (Ma Fig. 2.1b), circulant form.

    Row ``k`` keeps ``k`` with ``1 - p1 - p2``, moves to ``k+1 mod 3`` with ``p1`` and to
    ``k+2 mod 3`` with ``p2`` (``p2`` defaults to ``p1``).  Its gamma is
    ``(1-p1-p2)/p2`` when ``1-p1-p2 >= p1 >= p2`` (Ma Sec. 3.1.2).
    """
    p1 = _check_p("p1", p1)
    p2 = p1 if p2 is None else _check_p("p2", p2)
    if p1 + p2 > 1.0 + _ATOL:
        raise ParameterError(f"p1 + p2 = {p1 + p2} exceeds 1")
    stay = max(0.0, 1.0 - p1 - p2)
    row = np.array([stay, p1, p2])
    return np.stack([np.roll(row, k) for k in range(3)])


def m_category_matrix(k: int, p: float) -> np.ndarray:
    """M-category randomization of ``k`` values: keep with ``1-p``, else each other ``p/(k-1)``.

    For ``k = 1`` only ``p = 0`` is possible (there is nothing to move to).
    """
    k = int(k)
    p = _check_p("p", p)
    if k < 1:
        raise ParameterError(f"a domain needs at least one value, got k = {k}")
    if k == 1:
        if p > 0:
            raise ParameterError(f"a one-value domain cannot be randomized (p = {p})")
        return np.ones((1, 1))
    m = np.full((k, k), p / (k - 1))
    np.fill_diagonal(m, 1.0 - p)
    return m


def grouped_matrix(groups: Sequence[Sequence[int]], p: float, k: int | None = None) -> np.ndarray:
    """Grouped M-category randomization: block-diagonal, values move only within their group.

    ``groups`` partitions ``0..k-1`` (codes); each group of size ``s`` gets the ``s``-category
    matrix with parameter ``p`` (a singleton group is never randomized).  Lower gamma, lower
    conditional entropy and lower K_p than the ungrouped scheme (Ma Sec. 3.1).
    """
    flat = [int(c) for g in groups for c in g]
    k = len(flat) if k is None else int(k)
    if sorted(flat) != list(range(k)):
        raise ParameterError(f"groups {[list(g) for g in groups]} do not partition 0..{k - 1}")
    p = _check_p("p", p)
    m = np.zeros((k, k))
    for g in groups:
        g = np.asarray(g, dtype=int)
        m[np.ix_(g, g)] = m_category_matrix(g.size, p if g.size > 1 else 0.0)
    return m


def joint_m_category_matrix(sizes: Sequence[int], p: float) -> np.ndarray:
    """Simultaneous randomization of several attributes through one M-category joint matrix.

    The joint domain has ``prod(sizes)`` values laid out first-attribute-slowest; each joint
    value is kept with ``1-p`` and moved to each other joint value with ``p/(J-1)`` (Ma Sec.
    7.1.2's group randomization; its simultaneous gamma is ``(1-p)(J-1)/p``).
    """
    sizes = [int(s) for s in sizes]
    if not sizes or min(sizes) < 1:
        raise ParameterError(f"bad joint domain sizes {sizes}")
    return m_category_matrix(int(np.prod(sizes)), p)


def build_matrix(
    scheme: str,
    k: int,
    p: float,
    *,
    p2: float | None = None,
    groups: Sequence[Sequence[int]] | None = None,
) -> np.ndarray:
    """The ``k x k`` matrix of a named scheme (see :data:`SCHEMES`), optionally grouped.

    ``binary`` takes ``p`` as ``p1`` and ``p2`` (default ``p``); ``ternary-symmetric`` takes
    ``p`` as ``p1`` and ``p2`` (default ``p``); ``m-category`` with ``groups`` is the grouped
    block-diagonal scheme.
    """
    scheme = scheme.lower().replace("_", "-")
    if scheme not in SCHEMES:
        raise ParameterError(f"unknown PRAM scheme {scheme!r}; known: {', '.join(SCHEMES)}")
    _check_p("p", p)
    if groups is not None and scheme != "m-category":
        raise ParameterError(f"groups apply to the m-category scheme, not {scheme!r}")
    if scheme in ("binary", "binary-symmetric") and k != 2:
        raise MatrixError(f"scheme {scheme!r} needs a 2-value domain, the attribute has {k}")
    if scheme == "ternary-symmetric" and k != 3:
        raise MatrixError(
            f"scheme 'ternary-symmetric' needs a 3-value domain, the attribute has {k}"
        )
    if scheme == "identity":
        return identity_matrix(k)
    if scheme == "binary":
        return binary_matrix(p, p if p2 is None else p2)
    if scheme == "binary-symmetric":
        return binary_symmetric_matrix(p)
    if scheme == "ternary-symmetric":
        return ternary_symmetric_matrix(p, p2)
    if groups is not None:
        return grouped_matrix(groups, p, k)
    return m_category_matrix(k, p)


# -- validation -----------------------------------------------------------------------------------
def validate_matrix(
    matrix: Any, *, size: int | None = None, invertible: bool = False, name: str = "matrix"
) -> np.ndarray:
    """Check a transition matrix and return it as a float array.

    Raises :class:`MatrixError` when it is not a square 2-D array, has a negative or non-finite
    entry, a row not summing to 1 (within 1e-9), a size other than ``size`` (the attribute's
    domain), or, with ``invertible=True``, is singular (estimation needs ``P^-1``).
    """
    try:
        m = np.array(matrix, dtype=float)
    except (TypeError, ValueError):
        raise MatrixError(f"{name} is not a numeric matrix") from None
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise MatrixError(f"{name} must be a non-empty square matrix, got shape {m.shape}")
    if size is not None and m.shape[0] != size:
        raise MatrixError(f"{name} is {m.shape[0]}x{m.shape[0]} but the domain has {size} values")
    if not np.all(np.isfinite(m)):
        raise MatrixError(f"{name} has a non-finite entry")
    if np.any(m < 0):
        i, j = np.argwhere(m < 0)[0]
        raise MatrixError(f"{name} is not stochastic: entry ({i}, {j}) = {m[i, j]} is negative")
    sums = m.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > _ATOL)
    if bad.size:
        raise MatrixError(
            f"{name} is not stochastic: row {int(bad[0])} sums to {sums[bad[0]]:.12g}, not 1"
        )
    if invertible:
        cond = np.linalg.cond(m)
        if not np.isfinite(cond) or cond > 1e12:
            raise MatrixError(
                f"{name} is singular (condition number {cond:.3g}); frequencies cannot be "
                "estimated through it (e.g. binary symmetric with p = 0.5)"
            )
    return m


def invariant_matrix(matrix: Any, frequencies: Any) -> np.ndarray:
    """Invariant PRAM (Gouweleeuw, Kooiman, Willenborg & de Wolf 1998; sdcMicro's default).

    With ``pi`` the (relative) frequencies of the original values and ``R`` the backward
    matrix ``R[m, l] = Pr(X = l | X~ = m) = pi_l P[l, m] / sum_j pi_j P[j, m]``, the matrix
    ``Q = P R`` is row-stochastic and keeps the frequencies in expectation: ``pi^T Q = pi^T``.
    A released value that no frequent value can reach (a zero column of ``pi P``) maps back to
    itself in ``R``, which keeps ``Q`` stochastic without affecting ``pi^T Q``.
    """
    p = validate_matrix(matrix, name="matrix")
    pi = np.asarray(frequencies, dtype=float)
    if pi.shape != (p.shape[0],) or np.any(pi < 0) or pi.sum() <= 0:
        raise ParameterError(
            f"frequencies must be {p.shape[0]} non-negative numbers with a positive sum"
        )
    pi = pi / pi.sum()
    joint = pi[:, None] * p  # joint[l, m] = pi_l P[l, m]
    col = joint.sum(axis=0)
    r = np.divide(joint.T, col[:, None], out=np.zeros_like(joint.T), where=col[:, None] > 0)
    # Columns never reached: map back to themselves so that Q stays stochastic.
    for m in np.flatnonzero(col <= 0):
        r[m, m] = 1.0
    return p @ r


# -- randomization --------------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _draw_inplace(codes, col, cum, gen):  # pragma: no cover - compiled
    """Replace ``codes[:, col]`` by draws: one uniform per record, inverse CDF of its row."""
    n = codes.shape[0]
    k = cum.shape[1]
    for i in range(n):
        v = codes[i, col]
        x = gen.random()
        if k <= 32:
            j = 0
            while cum[v, j] <= x:
                j += 1
        else:
            lo, hi = 0, k - 1
            while lo < hi:
                mid = (lo + hi) // 2
                if cum[v, mid] <= x:
                    lo = mid + 1
                else:
                    hi = mid
            j = lo
        codes[i, col] = j


@numba.njit(cache=True, nogil=True)
def _draw_rows(src, perm, cums, active, gen, out):  # pragma: no cover - compiled
    """Fused shuffle + randomization: ``out[perm[r]] = randomized src[r]``, row by row.

    Reading sequentially and scattering the writes is faster than gathering the reads; the
    inverse of a uniformly random permutation is uniformly random too.

    ``cums[j]`` is column ``j``'s padded CDF table (entries >= 2 past the last positive value);
    columns with ``active[j] == False`` are copied unchanged.
    """
    n, d = src.shape
    kmax = cums.shape[2]
    for r in range(n):
        i = perm[r]
        for j in range(d):
            v = src[r, j]
            if active[j]:
                x = gen.random()
                if kmax <= 32:
                    t = 0
                    while cums[j, v, t] <= x:
                        t += 1
                else:
                    lo, hi = 0, kmax - 1
                    while lo < hi:
                        mid = (lo + hi) // 2
                        if cums[j, v, mid] <= x:
                            lo = mid + 1
                        else:
                            hi = mid
                    t = lo
                out[i, j] = t
            else:
                out[i, j] = v


def _cumulative(m: np.ndarray) -> np.ndarray:
    """Row-wise CDFs, with every entry from the last positive column on set to 2 (> any
    uniform), so rounding can never select a zero-probability trailing value."""
    cum = np.cumsum(m, axis=1)
    k = m.shape[1]
    last = k - 1 - np.argmax(m[:, ::-1] > 0, axis=1)
    cum[np.arange(k)[None, :] >= last[:, None]] = 2.0
    return np.ascontiguousarray(cum)


def randomize_codes(codes: np.ndarray, matrix: np.ndarray, rng: RngLike = None) -> np.ndarray:
    """Draw ``X~`` for every code of a 1-D array (a new array; see :func:`randomize_columns`)."""
    m = np.asarray(matrix, dtype=float)
    codes = np.asarray(codes)
    dtype = np.int32 if m.shape[0] < 2**31 else np.int64
    out = np.ascontiguousarray(codes, dtype=dtype).reshape(-1, 1).copy()
    randomize_columns(out, {0: m}, rng)
    return out.reshape(codes.shape)


def randomize_columns(codes: np.ndarray, matrices: Mapping[int, np.ndarray], rng: RngLike) -> None:
    """Randomize columns of a 2-D integer array IN PLACE: ``{column index: matrix}``.

    Per record and attribute one uniform from ``rng`` is drawn and mapped through the
    cumulative row of the record's value (a compiled loop: linear scan for up to 32 values,
    binary search beyond).  Identity matrices leave their column untouched.
    """
    gen = as_generator(rng)
    for col, m in matrices.items():
        m = np.asarray(m, dtype=float)
        if np.array_equal(m, np.eye(m.shape[0])) or codes.shape[0] == 0:
            continue
        _draw_inplace(codes, int(col), _cumulative(m), gen)


def joint_index(codes: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Mixed-radix index of code tuples, first column slowest."""
    return np.ravel_multi_index(tuple(np.asarray(codes).T), tuple(sizes)).astype(np.int64)


# -- the release ----------------------------------------------------------------------------------
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


@dataclass(frozen=True)
class PramPrivacy:
    """Per-attribute (or per-block) privacy of a PRAM release (Ma Sec. 3.1).

    ``rows`` has one dict per block: columns, gamma (non-zero-only, the thesis's), strict gamma,
    rho2* for ``rho1``, conditional entropy H(X|X~) in bits for the prior estimated from the
    release, K_p and Dist_K.
    """

    rows: tuple[dict[str, Any], ...]
    rho1: float

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for r in self.rows:
            name = "+".join(r["columns"])
            for key in ("gamma", "gamma_strict", "rho2_star", "entropy_bits", "k_p", "dist_k"):
                out[f"{name}.{key}"] = r[key]
        out["rho1"] = self.rho1
        return out


@release_method("pram")
@dataclass(frozen=True, eq=False)
class PramRelease:
    """A PRAM-randomized table plus every transition matrix (identity for unchanged columns).

    Attributes
    ----------
    table
        The randomized table (all columns, in the input's order).
    blocks
        One :class:`Block` per independently randomized attribute or simultaneously randomized
        set of attributes; together they cover every column exactly once.
    p, scheme, seed
        Parameters of the run, for the record (``seed`` is None when not reproducible).
    """

    table: Table
    blocks: tuple[Block, ...]
    scheme: str = "custom"
    p: float | None = None
    seed: int | None = None
    params: dict[str, Any] = field(default_factory=dict)

    method: ClassVar[str] = "pram"

    def __post_init__(self) -> None:
        object.__setattr__(self, "blocks", tuple(self.blocks))
        seen: list[str] = []
        for b in self.blocks:
            sizes = [self.table.schema[c].size for c in b.columns]  # SchemaError on unknown
            j = int(np.prod(sizes))
            if b.matrix.shape[0] != j:
                raise MatrixError(
                    f"matrix of {', '.join(b.columns)} is {b.matrix.shape[0]}x"
                    f"{b.matrix.shape[0]} but the domain has {j} values"
                )
            seen.extend(b.columns)
        dup = {c for c in seen if seen.count(c) > 1}
        if dup:
            raise ReleaseError(f"column(s) in two matrices: {', '.join(sorted(dup))}")
        missing = [c for c in self.table.names if c not in seen]
        if missing:
            raise ReleaseError(f"no transition matrix for column(s): {', '.join(missing)}")

    @property
    def n_rows(self) -> int:
        return self.table.n_rows

    @property
    def randomized_columns(self) -> tuple[str, ...]:
        return tuple(
            c
            for b in self.blocks
            if not np.array_equal(b.matrix, np.eye(len(b.matrix)))
            for c in b.columns
        )

    def block_of(self, column: str) -> Block:
        for b in self.blocks:
            if column in b.columns:
                return b
        raise SchemaError(f"unknown column {column!r}; columns are: {', '.join(self.table.names)}")

    def matrix(self, column: str) -> np.ndarray:
        """The transition matrix of one column (marginalized if randomized jointly)."""
        from privlab.publish.pram_estimation import marginal_matrix

        b = self.block_of(column)
        if len(b.columns) == 1:
            return b.matrix
        sizes = [self.table.schema[c].size for c in b.columns]
        return marginal_matrix(b.matrix, sizes, [b.columns.index(column)])

    def privacy(self, *, rho1: float = 0.1) -> PramPrivacy:
        """gamma, rho2*, H(X|X~), K_p and Dist_K of every randomized block (Ma Sec. 3.1).

        The prior for H and K_p is the moment (EM) estimate of the block's distribution from
        the release itself, since the true distribution is not published.
        """
        from privlab.metrics.pram import (
            breach_rho2,
            conditional_entropy,
            gamma_amplification,
            probabilistic_k_anonymity,
        )
        from privlab.publish.pram_estimation import em_estimate, observed_counts

        rows = []
        for b in self.blocks:
            if np.array_equal(b.matrix, np.eye(len(b.matrix))):
                continue
            sizes = [self.table.schema[c].size for c in b.columns]
            counts = observed_counts(self.table.columns(list(b.columns)), sizes)
            prior = em_estimate(counts, [b.matrix], max_iter=2000).theta
            g = gamma_amplification(b.matrix)
            kp = probabilistic_k_anonymity(b.matrix, prior)
            rows.append(
                {
                    "columns": list(b.columns),
                    "scheme": b.scheme,
                    "gamma": g,
                    "gamma_strict": gamma_amplification(b.matrix, strict=True),
                    "rho2_star": breach_rho2(g, rho1),
                    "entropy_bits": conditional_entropy(b.matrix, prior),
                    "k_p": kp.k_p,
                    "dist_k": kp.dist_k,
                }
            )
        return PramPrivacy(tuple(rows), rho1)

    def to_dict(self) -> dict[str, Any]:
        """The ``release.json`` content: schema, every matrix, parameters."""
        return {
            "method": self.method,
            "parameters": {"scheme": self.scheme, "p": self.p, "seed": self.seed, **self.params},
            "data_file": DATA_FILE,
            "schema": self.table.schema.to_dict(),
            "n_rows": self.n_rows,
            "layout": "joint matrices index their columns in mixed radix, first column slowest",
            "matrices": [b.to_dict() for b in self.blocks],
        }

    def save(self, directory: str | Path, *, force: bool = False) -> Path:
        """Write ``randomized.csv`` (decoded values) and ``release.json`` atomically."""
        directory = Path(directory)
        with atomic_dir(directory, force=force) as tmp:
            self.table.to_pandas().to_csv(tmp / DATA_FILE, index=False)
            (tmp / RELEASE_FILE).write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> PramRelease:
        directory = Path(directory)
        meta = read_meta(directory)
        if meta.get("method") != cls.method:
            raise ReleaseError(f"{directory} holds a {meta.get('method')!r} release, not pram")
        try:
            schema = Schema.from_dict(meta["schema"])
            blocks = tuple(
                Block(
                    tuple(b["columns"]), np.asarray(b["matrix"], dtype=float), b.get("scheme", "")
                )
                for b in meta["matrices"]
            )
            params = dict(meta.get("parameters", {}))
        except (KeyError, TypeError) as e:
            raise ReleaseError(f"{directory}/{RELEASE_FILE} is malformed ({e})") from None
        path = directory / meta.get("data_file", DATA_FILE)
        if not path.is_file():
            raise ReleaseError(f"not a release: {directory} has no {path.name}")
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        if list(df.columns) != list(schema.names):
            raise ReleaseError(f"{path} has columns {list(df.columns)}; expected {schema.names}")
        cols = []
        for a in schema.attributes:
            lookup = {str(v): i for i, v in enumerate(a.domain)}
            codes = df[a.name].map(lookup)
            if codes.isna().any():
                bad = df[a.name][codes.isna()].iloc[0]
                raise ReleaseError(f"{path.name}: value {bad!r} is not in the domain of {a.name!r}")
            cols.append(codes.to_numpy(dtype=np.int32))
        codes = np.column_stack(cols) if cols else np.empty((len(df), 0), dtype=np.int32)
        scheme = params.pop("scheme", "custom")
        p = params.pop("p", None)
        seed = params.pop("seed", None)
        return cls(Table(codes, schema), blocks, scheme=scheme, p=p, seed=seed, params=params)


def randomize(
    table: Table,
    matrices: Mapping[str | tuple[str, ...], Any],
    *,
    rng: RngLike = None,
    scheme: str = "custom",
    p: float | None = None,
    params: Mapping[str, Any] | None = None,
    shuffle: bool = True,
) -> PramRelease:
    """Randomize ``table`` through the given matrices; other columns are released unchanged.

    Parameters
    ----------
    table
        The microdata.
    matrices
        ``{column: P}`` for independent randomization or ``{(col_a, col_b): P_joint}`` for
        simultaneous randomization (joint layout: first column slowest).  Each matrix must be
        row-stochastic and sized to the (joint) domain.
    rng
        Seed or generator (None: OS entropy).
    shuffle
        Release the rows in random order (default), so that the input's order (say, sorted
        by a sensitive value) cannot be read off the release.  Estimation ignores row order.
    """
    table.require_rows()
    gen = as_generator(rng)
    blocks: list[Block] = []
    n, d = table.codes.shape
    single: dict[int, np.ndarray] = {}
    joint: list[tuple[list[int], list[int], np.ndarray]] = []
    done: set[str] = set()
    for key, mat in matrices.items():
        cols = (key,) if isinstance(key, str) else tuple(key)
        if not cols:
            raise ParameterError("an empty set of columns was given a matrix")
        idx = table.schema.indices(cols)
        for c in cols:
            if c in done:
                raise ParameterError(f"column {c!r} was given two matrices")
            done.add(c)
        sizes = [table.schema[c].size for c in cols]
        m = validate_matrix(mat, size=int(np.prod(sizes)), name=f"matrix of {', '.join(cols)}")
        if len(cols) == 1:
            single[idx[0]] = m
        else:
            joint.append((idx, sizes, m))
        blocks.append(Block(cols, m, scheme))
    for c in table.names:
        if c not in done:
            blocks.append(Block((c,), np.eye(table.schema[c].size), "identity"))
    src = table.codes
    if joint:  # jointly randomized blocks first, on a copy, through their joint index
        src = np.array(table.codes, copy=True, order="C")
        for idx, sizes, m in joint:
            flat = joint_index(src[:, idx], sizes).reshape(-1, 1)
            randomize_columns(flat, {0: m}, gen)
            src[:, idx] = np.column_stack(np.unravel_index(flat[:, 0], sizes))
    active = np.zeros(d, dtype=np.bool_)
    kmax = max([1, *(m.shape[0] for m in single.values())])
    cums = np.full((d, kmax, kmax), 2.0)
    for j, m in single.items():
        if not np.array_equal(m, np.eye(m.shape[0])):
            active[j] = True
            cums[j, : m.shape[0], : m.shape[0]] = _cumulative(m)
    perm = gen.permutation(n) if shuffle else np.arange(n)
    codes = np.empty((n, d), dtype=table.codes.dtype)
    if n:
        _draw_rows(np.ascontiguousarray(src), perm, cums, active, gen, codes)
    schema = Schema(
        tuple(Attribute(a.name, a.domain, Role.OTHER, a.numeric) for a in table.schema.attributes)
    )
    return PramRelease(
        Table(codes, schema),
        tuple(blocks),
        scheme=scheme,
        p=p,
        seed=seed_of(rng),
        params=dict(params or {}),
    )


def pram(
    table: Table,
    *,
    columns: Sequence[str],
    scheme: str = "m-category",
    p: float,
    p2: float | None = None,
    groups: Mapping[str, Sequence[Sequence[Any]]] | None = None,
    simultaneous: bool = False,
    invariant: bool = False,
    rng: RngLike = None,
    shuffle: bool = True,
) -> PramRelease:
    """Randomize ``columns`` of ``table`` with one named scheme (Ma Ch. 2).

    Parameters
    ----------
    columns
        The attributes to randomize; the rest are released unchanged (identity matrices).
    scheme
        ``binary`` (``p`` = p1, ``p2``), ``binary-symmetric``, ``ternary-symmetric``
        (``p`` = p1, ``p2``), ``m-category`` or ``identity``.
    groups
        ``{column: [[value, ...], ...]}``: grouped M-category randomization (values by their
        decoded value or code); values not listed form singleton groups.
    simultaneous
        Randomize all ``columns`` together through one M-category joint matrix.
    invariant
        Replace each matrix by its invariant version for the table's frequencies
        (:func:`invariant_matrix`); this uses the secret frequencies, so the matrix itself
        reveals them (as with sdcMicro); a :class:`PrivacyWarning` says so.
    shuffle
        Release rows in random order (see :func:`randomize`).
    """
    columns = list(columns)
    if not columns:
        raise ParameterError("no column to randomize was given")
    dup = {c for c in columns if columns.count(c) > 1}
    if dup:
        raise ParameterError(f"column listed twice: {', '.join(sorted(dup))}")
    table.schema.indices(columns)
    p = _check_p("p", p)
    groups = dict(groups or {})
    for g in groups:
        if g not in columns:
            raise ParameterError(f"groups given for {g!r}, which is not randomized")
    if invariant:
        warnings.warn(
            "invariant PRAM builds its matrices from the table's frequencies, and the release "
            "publishes those matrices: the original frequencies can be read off them",
            PrivacyWarning,
            stacklevel=2,
        )
    matrices: dict[Any, np.ndarray] = {}
    if simultaneous:
        if scheme.lower().replace("_", "-") != "m-category" or groups:
            raise ParameterError("simultaneous randomization uses the m-category scheme only")
        sizes = [table.schema[c].size for c in columns]
        m = joint_m_category_matrix(sizes, p)
        if invariant:
            m = invariant_matrix(
                m, np.bincount(joint_index(table.columns(columns), sizes), minlength=len(m))
            )
        matrices[tuple(columns)] = m
    else:
        for c in columns:
            attr = table.schema[c]
            code_groups = None
            if c in groups:
                code_groups = _code_groups(attr, groups[c])
            m = build_matrix(scheme, attr.size, p, p2=p2, groups=code_groups)
            if invariant:
                m = invariant_matrix(m, np.bincount(table.column(c), minlength=attr.size))
            matrices[c] = m
    params = {"columns": columns, "simultaneous": simultaneous, "invariant": invariant}
    if p2 is not None:
        params["p2"] = p2
    if groups:
        params["groups"] = {c: [list(map(_jsonable, g)) for g in v] for c, v in groups.items()}
    return randomize(table, matrices, rng=rng, scheme=scheme, p=p, params=params, shuffle=shuffle)


def _jsonable(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _code_groups(attr: Attribute, groups: Sequence[Sequence[Any]]) -> list[list[int]]:
    lookup = {str(v): i for i, v in enumerate(attr.domain)}
    out: list[list[int]] = []
    used: set[int] = set()
    for g in groups:
        cg = []
        for v in g:
            if v in attr.domain:
                code = attr.domain.index(v)
            elif str(v) in lookup:
                code = lookup[str(v)]
            else:
                raise PrivlabError(f"group value {v!r} is not in the domain of {attr.name!r}")
            if code in used:
                raise ParameterError(f"value {v!r} of {attr.name!r} is in two groups")
            used.add(code)
            cg.append(code)
        out.append(cg)
    out.extend([c] for c in range(attr.size) if c not in used)
    return out
