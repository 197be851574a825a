"""PRAM, the post-randomization method, as Ma (2006, Ch. 2) uses it.

Every record's value of an attribute ``X_i`` is replaced independently by a random value drawn
from row ``x`` of a known, row-stochastic transition matrix ``P^i``::

    P^i[l, m] = Pr(X~_i = m | X_i = l)          (row = original value, column = released value)

Several attributes of one owner may instead be randomized *simultaneously* through one joint
matrix over their combined domain (Ma Sec. 2.1, 7.1.2).  The joint domain is laid out in
mixed radix with the **first attribute varying slowest** (the layout for which independent
randomization is ``P^1 (x) P^2``; :mod:`privlab.data.counts`.  Ma's Sec. 2.4.1 says
"fastest", which contradicts the thesis's own Kronecker order).

The release (:class:`PramRelease`) holds the randomized columns, the columns kept unchanged
(``keep``) and the transition matrix of every randomized column, so anyone can estimate
frequencies from it (:mod:`privlab.estimate.pram`) and measure its privacy
(:mod:`privlab.metrics.pram`).  Other columns of the input are dropped; a kept column needs
no matrix (its identity stays implicit, so a 20,263-value column costs nothing).  The
seed, its salt and the original values of the randomized columns go to the custody
directory only: whoever knows the seed replays every draw.

Scheme builders follow Ma Sec. 2.1 / Fig. 2.1 as the notes reconstruct them (the figure is not
in the text): binary ``[[1-p1, p1], [p2, 1-p2]]``; ternary symmetric circulant (stay
``1-p1-p2``, next value ``p1``, the one after ``p2``); M-category (stay ``1-p``, each other
value ``p/(K-1)``); grouped block-diagonal; identity.  :func:`invariant_matrix` is the
invariant PRAM of Gouweleeuw et al. (1998) that sdcMicro offers.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from privlab._memory import require_memory
from privlab._rng import RngLike, SeedRecord, publication_rng
from privlab.data.counts import joint_index
from privlab.data.engine import ENGINES, check_engine
from privlab.data.frames import as_table
from privlab.data.matrices import ATOL, validate_matrix
from privlab.data.schema import Attribute, Schema, py_scalar
from privlab.data.spark import SparkInput, spark_input
from privlab.data.stream import DEFAULT_BATCH_ROWS, StreamInput, stream_input
from privlab.data.table import Table
from privlab.errors import (
    ConvergenceWarning,
    MatrixError,
    ParameterError,
    PrivacyWarning,
    PrivlabError,
    ReleaseError,
    SchemaError,
)
from privlab.metrics.privacy import PrivacyReport
from privlab.metrics.risk import DEFAULT_THRESHOLD
from privlab.publish import pram_core
from privlab.publish.pram_core import (
    Block,
    PramSettings,
    _cumulative,
    _is_identity,
    pram_metadata,
    randomize_codes,
    randomize_columns,
)
from privlab.publish.spark_release import SparkRelease
from privlab.publish.stream_pram import StreamedPramRelease, randomize_stream
from privlab.release.base import Custody, PublishedTable, Release, refuse_reserved

SCHEMES = ("identity", "binary", "binary-symmetric", "ternary-symmetric", "m-category")
__all__ = [
    "SCHEMES",
    "Block",
    "MatrixError",
    "PramRelease",
    "binary_matrix",
    "binary_symmetric_matrix",
    "build_matrix",
    "grouped_matrix",
    "identity_matrix",
    "invariant_matrix",
    "joint_index",
    "joint_m_category_matrix",
    "m_category_matrix",
    "pram",
    "pram_items",
    "randomize",
    "randomize_codes",
    "randomize_columns",
    "ternary_symmetric_matrix",
    "validate_matrix",
]


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
    if p1 + p2 > 1.0 + ATOL:
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


# -- the release ----------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class PramRelease(Release):
    """A PRAM-randomized table plus the transition matrix of every randomized column.

    Attributes
    ----------
    table
        The published table: the randomized columns and the columns kept unchanged, in the
        input's order.
    blocks
        One :class:`Block` per independently randomized attribute or simultaneously
        randomized set of attributes; a column in no block was released unchanged.
    p, scheme, params
        Parameters of the run.
    custody
        The custodian's files (seed, salt, input fingerprint, the original values of the
        randomized columns), or None.
    """

    table: Table
    blocks: tuple[Block, ...]
    scheme: str = "custom"
    p: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    custody: Custody | None = field(default=None, compare=False)

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

    @property
    def randomized_columns(self) -> tuple[str, ...]:
        return pram_core.randomized_columns(self.blocks)

    def block_of(self, column: str) -> Block | None:
        """The block that randomized ``column``, or None when it was released unchanged."""
        self.table.schema.index(column)  # SchemaError names an unknown column
        for b in self.blocks:
            if column in b.columns:
                return b
        return None

    def matrix(self, column: str) -> np.ndarray:
        """The transition matrix of one column (marginalized if randomized jointly; the
        identity, built on request, for a column released unchanged)."""
        from privlab.estimate.pram import marginal_matrix

        b = self.block_of(column)
        if b is None:
            return np.eye(self.table.schema[column].size)
        if len(b.columns) == 1:
            return b.matrix
        sizes = [self.table.schema[c].size for c in b.columns]
        return marginal_matrix(b.matrix, sizes, [b.columns.index(column)])

    # -- the Release interface --------------------------------------------------------------
    def published(self) -> dict[str, PublishedTable]:
        return {"randomized": PublishedTable(self.table)}

    def parameters(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "p": self.p, **self.params}

    def metadata(self) -> dict[str, Any]:
        return pram_metadata(self.blocks)

    def summary(self) -> dict[str, Any]:
        return {
            "rows": self.n_rows,
            "randomized": list(self.randomized_columns),
            "kept": [c for c in self.table.names if self.block_of(c) is None],
            "scheme": self.scheme,
            "p": self.p,
        }

    def _keeps_full_domain(self, attribute: Attribute) -> bool:
        # a randomized column's matrix has a row per domain value: the domain goes whole
        return attribute.declared or self.block_of(attribute.name) is not None

    @classmethod
    def _from_published(
        cls, meta: dict[str, Any], tables: dict[str, PublishedTable]
    ) -> PramRelease:
        blocks = tuple(
            Block(tuple(b["columns"]), np.asarray(b["matrix"], dtype=float), b.get("scheme", ""))
            for b in meta["matrices"]
        )
        params = dict(meta["parameters"])
        table = tables["randomized"].table
        scheme = params.pop("scheme", "custom")
        p = params.pop("p", None)
        release = cls(table, blocks, scheme=scheme, p=p, params=params)  # shapes checked
        check_published_scheme(release.blocks, table.schema, meta["parameters"])
        return release

    def privacy(self, *, threshold: float = DEFAULT_THRESHOLD, rho1: float = 0.1) -> PrivacyReport:
        """The :class:`~privlab.metrics.privacy.PrivacyReport` of the randomized table, with
        ``details["blocks"]``: gamma, rho2*, H(X|X~), K_p and Dist_K of every randomized
        block (Ma Sec. 3.1).  A matrix with a released value that only one original value
        produces gets gamma = inf and rho2* = 1, with a :class:`PrivacyWarning` (Ma's gamma
        ignores zero entries and would call a deterministic swap safe).

        The prior for H and K_p is the EM estimate of the block's distribution from the
        release itself, since the true distribution is not published.
        """
        from privlab.estimate.pram import observed_counts
        from privlab.estimate.pram_em import em_certified
        from privlab.metrics.pram import (
            breach_rho2,
            conditional_entropy,
            gamma_amplification,
            probabilistic_k_anonymity,
            revealing_values,
        )
        from privlab.metrics.privacy import privacy_report

        rows = []
        for b in self.blocks:
            if _is_identity(b.matrix):
                continue
            sizes = [self.table.schema[c].size for c in b.columns]
            counts = observed_counts(self.table.columns(list(b.columns)), sizes)
            fit = em_certified(counts, [b.matrix])
            if not fit.converged:
                warnings.warn(
                    f"the EM estimate of the prior of {'+'.join(b.columns)} has NOT converged "
                    f"(the log-likelihood can still gain up to {fit.gap:.3g} nats): its "
                    "probabilistic k-anonymity is approximate",
                    ConvergenceWarning,
                    stacklevel=2,
                )
            prior = fit.theta
            g = gamma_amplification(b.matrix)
            revealing = revealing_values(b.matrix)
            if revealing.size:  # a deterministic disclosure: no amplification bound holds
                g = float("inf")
                warnings.warn(
                    f"randomized {'+'.join(b.columns)}: {revealing.size} released value(s) "
                    "can come from one original value only, so whoever sees one knows the "
                    "original (gamma = inf, rho2* = 1)",
                    PrivacyWarning,
                    stacklevel=2,
                )
            kp = probabilistic_k_anonymity(b.matrix, prior)
            rows.append(
                {
                    "columns": list(b.columns),
                    "scheme": b.scheme,
                    "gamma": g,
                    "revealing_values": int(revealing.size),
                    "gamma_strict": gamma_amplification(b.matrix, strict=True),
                    "rho2_star": breach_rho2(g, rho1),
                    "entropy_bits": conditional_entropy(b.matrix, prior),
                    "k_p": kp.k_p,
                    "dist_k": kp.dist_k,
                }
            )
        return privacy_report(
            self.method,
            self.linkable(),
            None,
            kept=self.table.schema.insensitive,
            threshold=threshold,
            details={"rho1": rho1, "blocks": rows},
        )


def randomize(
    data: Any,
    matrices: Mapping[str | tuple[str, ...], Any],
    *,
    keep: Sequence[str] | None = None,
    rng: RngLike | SeedRecord = None,
    scheme: str = "custom",
    p: float | None = None,
    params: Mapping[str, Any] | None = None,
    shuffle: bool = True,
    engine: str = "memory",
    schema: Schema | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    buckets: int | None = None,
) -> PramRelease | SparkRelease | StreamedPramRelease:
    """Randomize a table through the given matrices; ``keep`` columns are released unchanged
    and every other column is dropped.

    Parameters
    ----------
    data
        The microdata: a privlab ``Table``, a pandas or polars DataFrame or a pyarrow Table.
    matrices
        ``{column: P}`` for independent randomization or ``{(col_a, col_b): P_joint}`` for
        simultaneous randomization (joint layout: first column slowest).  Each matrix must be
        row-stochastic and sized to the (joint) domain.
    keep
        Columns published unchanged (default: the table's insensitive columns).
    rng
        None (OS entropy), a seed (salted with 128 bits of OS entropy), a custody's seed
        record (replays that release) or a generator of the caller's (used as given).
    shuffle
        Release the rows in random order (default), so that the input's order (say, sorted
        by a sensitive value) cannot be read off the release.  Estimation ignores row order.
    engine, schema
        ``"spark"``: ``data`` is a Spark DataFrame or a Parquet path and ``schema`` its
        public domains (columns it lacks are read from the data); every partition draws
        from its own stream spawned from one ``SeedSequence`` and the rows are shuffled
        globally (:func:`privlab.publish.spark_pram.randomize_spark`).  Returns a
        :class:`~privlab.publish.spark_release.SparkRelease`.  ``"stream"``: ``data`` is
        a Parquet file read ``batch_rows`` rows at a time, ``schema`` its public domains
        (columns it lacks are read from the data by one pass); each batch draws from its own
        stream and the rows are released in a uniformly random order by an external shuffle
        of ``buckets`` files (:mod:`privlab.publish.stream_pram`).  Returns a
        :class:`~privlab.publish.stream_release.StreamedRelease`, whose ``save()`` draws the
        rows and ``collect()`` is this in-memory release.
    batch_rows, buckets
        The stream engine's batch and bucket files (see ``engine``).
    """
    named = [c for k in matrices for c in ((k,) if isinstance(k, str) else tuple(k))]
    table = _input(data, engine, schema, _stream_columns(data, schema, named, keep), batch_rows)
    gen, record = publication_rng(rng)
    blocks: list[Block] = []
    single: dict[str, np.ndarray] = {}
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
            single[cols[0]] = m
        else:
            joint.append((idx, sizes, m))
        blocks.append(Block(cols, m, scheme))
    keep = list(table.schema.insensitive if keep is None else keep)
    table.schema.indices(keep)
    both = [c for c in keep if c in done]
    if both:
        raise SchemaError(f"column {both[0]!r} is both randomized and kept unchanged (--keep)")
    published = [c for c in table.names if c in done or c in keep]
    if not published:
        raise ParameterError("nothing to publish: give a column to randomize or to keep")
    _warn_data_domains(table, pram_core.randomized_columns(blocks))
    _warn_near_deterministic(table, blocks)
    settings = PramSettings(tuple(blocks), tuple(published), frozenset(done), scheme=scheme, p=p,
                            params=dict(params or {}), shuffle=shuffle)  # fmt: skip
    if isinstance(table, StreamInput):
        return randomize_stream(table, settings, gen, record, buckets=buckets)
    if isinstance(table, SparkInput):
        from privlab.publish.spark_pram import randomize_spark

        return randomize_spark(table, settings, gen, record)
    fingerprint = table.fingerprint_soon()  # hashed beside the draws
    src = pram_core.draw_joint(table.codes, joint, gen)  # joint blocks first, on a copy
    cums = [
        _cumulative(single[c]) if c in single and not _is_identity(single[c]) else None
        for c in published
    ]
    randomized = settings.truth_columns
    # the release, and the original values in its row order (the custody's truth), in one pass
    codes, truth = pram_core.draw_release(
        src, table.codes, table.schema.indices(published), cums,
        table.schema.indices(randomized), gen, shuffle,
    )  # fmt: skip
    custody = Custody(
        seed=record,
        input_sha256=fingerprint(),
        truth=Table.checked(truth, table.schema.select(randomized)),
    )
    return PramRelease(  # codes drawn through the matrices' rows or copied: in their domains
        Table.checked(codes, settings.public_schema(table.schema)),
        settings.blocks,
        scheme=scheme,
        p=p,
        params=dict(settings.params),
        custody=custody,
    )


def check_published_scheme(
    blocks: Sequence[Block], schema: Schema, parameters: Mapping[str, Any]
) -> None:
    """Refuse a release whose matrices are not those its parameters name.

    A release of :func:`pram` publishes its scheme, ``p`` (``p2``, ``groups``) and columns
    beside the matrices; the matrices are rebuilt from those and the published domains and
    must be the published ones (an edited matrix, say the identity in place of p = 0.3, would
    make every estimate the observed counts with sd 0).  A release of custom matrices
    (:func:`randomize`, an unknown scheme) or of invariant PRAM (matrices from the input's
    frequencies) is checked for stochasticity only (by :class:`Block`).
    """
    scheme = str(parameters.get("scheme", "custom")).lower().replace("_", "-")
    columns = parameters.get("columns")
    if scheme not in SCHEMES or parameters.get("invariant") or not isinstance(columns, list):
        return
    simultaneous = bool(parameters.get("simultaneous", False))
    try:
        if scheme == "identity" and not simultaneous:
            expected: dict[Any, np.ndarray] = {}  # pram() publishes the columns unchanged
        else:
            expected = scheme_matrices(
                schema, [str(c) for c in columns], scheme=scheme, p=parameters.get("p"),
                p2=parameters.get("p2"), groups=parameters.get("groups"),
                simultaneous=simultaneous,
            )  # fmt: skip
    except (PrivlabError, TypeError) as e:
        raise ReleaseError(
            f"its parameters (scheme {scheme!r}, p = {parameters.get('p')!r}) give no matrix: {e}"
        ) from None
    want = {(k,) if isinstance(k, str) else tuple(k): m for k, m in expected.items()}
    got = {b.columns: b.matrix for b in blocks}
    if set(want) != set(got):
        names = sorted("+".join(c) for c in got)
        raise ReleaseError(
            f"it publishes matrices of {', '.join(names) or 'no column'}, but its parameters "
            f"randomize {', '.join(map(str, columns))} (simultaneous: {simultaneous})"
        )
    for cols, m in want.items():
        if got[cols].shape != m.shape or not np.allclose(got[cols], m, rtol=0, atol=1e-9):
            raise ReleaseError(
                f"the matrix of {'+'.join(cols)} is not the {scheme} matrix of "
                f"p = {parameters.get('p')} that its parameters publish (an edited matrix?)"
            )


def _input(
    data: Any,
    engine: str,
    schema: Schema | None,
    columns: Sequence[str] | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    what: str = "randomize",
) -> Table | SparkInput | StreamInput:
    """The input of a sanitizer: a :class:`Table` (memory engine, rows required), a
    :class:`SparkInput` (Spark engine) or a :class:`StreamInput` of ``columns`` (stream
    engine: the columns it reads, the file's others never are)."""
    engine = check_engine(engine, available=ENGINES, what=what)
    if engine == "spark":
        return spark_input(data, schema)
    if engine == "stream":
        table = stream_input(data, schema, columns=columns, batch_rows=batch_rows)
        if table.n_rows == 0:
            raise ParameterError(f"{table.path} has no rows")
        return table
    if schema is not None:
        raise ParameterError("schema= applies to the Spark and stream engines")
    return as_table(data).require_rows()


def _stream_columns(data: Any, schema: Schema | None, named: Sequence[str],
                    keep: Sequence[str] | None) -> list[str]:  # fmt: skip
    """The columns a streamed sanitizer reads: ``named`` and ``keep`` (default: the
    insensitive columns of the caller's ``schema``)."""
    if isinstance(data, StreamInput):
        return list(data.names)
    kept = (schema.insensitive if schema is not None else ()) if keep is None else keep
    return [*named, *kept]


def _warn_data_domains(table: Table | SparkInput, randomized: Sequence[str]) -> None:
    """A randomized column's whole domain is published with its matrix: say so when it was
    read from the data rather than declared."""
    read = [c for c in randomized if not table.schema[c].declared]
    if read:
        warnings.warn(
            f"the domain of {', '.join(map(repr, read))} was read from the data and is "
            "published whole with the transition matrix: a value that only a few records "
            "hold is disclosed by it; declare public domains (CLI: --domains FILE; "
            "Table.from_pandas(domains=...))",
            PrivacyWarning,
            stacklevel=3,
        )


def _warn_near_deterministic(table: Table | SparkInput, blocks: Sequence[Block]) -> None:
    """Warn at publish time about a block whose matrix releases some value as one fixed
    value that names it (:func:`privlab.metrics.pram.near_deterministic`): ``p = 1`` on a
    binary column (a swap), a permutation, ``p = 0``, a value alone in its group.  The
    ``identity`` scheme, which publishes columns unchanged on purpose, is not warned about."""
    from privlab.metrics.pram import NEAR_DETERMINISTIC, near_deterministic

    for b in blocks:
        if b.scheme.lower() == "identity":
            continue
        pairs = near_deterministic(b.matrix)
        if not pairs:
            continue
        sizes = [table.schema[c].size for c in b.columns]
        i, j = pairs[0]
        name = {
            code: "|".join(
                str(table.schema[c].domain[int(v)])
                for c, v in zip(b.columns, np.unravel_index(code, sizes))
            )
            for code in (i, j)
        }
        total = int(np.prod(sizes))
        warnings.warn(
            f"the matrix of {'+'.join(b.columns)} is (near-)deterministic: {len(pairs)} of "
            f"its {total} values {'is' if len(pairs) == 1 else 'are'} released as one fixed "
            f"value with probability >= {NEAR_DETERMINISTIC:g} that names the original (e.g. "
            f"{name[i]!r} -> {name[j]!r} with probability {b.matrix[i, j]:.3g}): those "
            "records are as good as published unchanged; randomize more (a p further from "
            "0 and from 1 on a binary column)",
            PrivacyWarning,
            stacklevel=3,
        )


#: Bytes per entry of a K x K transition matrix while randomizing and saving (the matrix,
#: its lookup table, the JSON lists of Python floats and their text): the memory estimate.
MATRIX_ENTRY_BYTES = 120
#: The largest matrix a release publishes (release.json holds every entry: about 80 MB).
MAX_MATRIX_SIZE = 2048


def _require_matrix_memory(schema: Schema, columns: Sequence[str], simultaneous: bool) -> None:
    """Refuse up front a transition matrix too large to build (and to publish whole)."""
    require_matrix_sizes({c: schema[c].size for c in columns}, columns, simultaneous)


def require_matrix_sizes(
    sizes: Mapping[str, int | None],
    columns: Sequence[str],
    simultaneous: bool,
    *,
    scheme: str = "m-category",
) -> None:
    """Refuse a transition matrix too large to publish whole or to build in memory, from
    the domain sizes alone (:class:`~privlab.errors.ParameterError` or
    :class:`~privlab.errors.MemoryBudgetError`, naming the size).

    ``sizes`` gives each column's domain size, or None where it is not known yet (a domain
    still to be read from the data): the known sizes then bound the matrix from below, so
    declared domains that already make it too large are refused before the data is read.
    The identity scheme of columns randomized one by one builds no matrix.
    """
    if not simultaneous and scheme.lower().replace("_", "-") == "identity":
        return
    known = [c for c in columns if sizes.get(c) is not None]
    if simultaneous:
        blocks = [(list(columns), int(np.prod([sizes[c] for c in known], dtype=float)))]
    else:
        blocks = [([c], int(sizes[c])) for c in known]  # type: ignore[arg-type]
    partial = len(known) < len(columns)
    for cols, k in blocks:
        joint = f"joint domain of {', '.join(cols)}" if len(cols) > 1 else f"domain of {cols[0]}"
        if partial and len(cols) > 1:
            declared = ", ".join(c for c in cols if c in known)
            what = (
                f"the transition matrix over the {joint} (at least {k:,} x {k:,}: the declared "
                f"domains of {declared} alone)"
            )
        else:
            what = f"the {k:,} x {k:,} transition matrix over the {joint}"
        hint = (
            "randomize fewer columns together, or each column on its own"
            if len(cols) > 1
            else "merge rare values first"
        )
        if k > MAX_MATRIX_SIZE:
            raise ParameterError(
                f"{what} is too large to publish (release.json holds every entry; at most "
                f"{MAX_MATRIX_SIZE:,} values per matrix): {hint}"
            )
        require_memory(MATRIX_ENTRY_BYTES * k * k, what, hint)


def pram(
    data: Any,
    *,
    columns: Sequence[str],
    keep: Sequence[str] | None = None,
    scheme: str = "m-category",
    p: float,
    p2: float | None = None,
    groups: Mapping[str, Sequence[Sequence[Any]]] | None = None,
    simultaneous: bool = False,
    invariant: bool = False,
    rng: RngLike | SeedRecord = None,
    shuffle: bool = True,
    engine: str = "memory",
    schema: Schema | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    buckets: int | None = None,
) -> PramRelease | SparkRelease | StreamedPramRelease:
    """Randomize ``columns`` of a table with one named scheme (Ma 2006, Ch. 2).

    Parameters
    ----------
    data
        The microdata: a privlab ``Table``, a pandas or polars DataFrame or a pyarrow Table.
    columns
        The attributes to randomize.
    keep
        Attributes published unchanged; every other column is dropped.
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
    rng, shuffle, engine, schema, batch_rows, buckets
        See :func:`randomize` (``engine="stream"`` randomizes a Parquet file larger than
        memory; with ``invariant`` its frequencies take one more pass).
    """
    if isinstance(columns, str):
        raise ParameterError(f"columns must be a list of names, not the string {columns!r}")
    read = _stream_columns(data, schema, list(columns), keep)
    table = _input(data, engine, schema, read, batch_rows, what="pram")
    columns = table.schema.require(columns, purpose="to randomize")
    refuse_reserved([*columns, *(table.schema.insensitive if keep is None else keep)])
    p = _check_p("p", p)
    if scheme.lower().replace("_", "-") == "identity" and not simultaneous and not invariant:
        # the identity changes nothing: the columns are kept, and no K x K matrix is built
        kept = table.schema.insensitive if keep is None else keep
        overlap = [c for c in columns if c in kept]
        if overlap:
            raise SchemaError(f"column {overlap[0]!r} is both randomized and kept unchanged")
        keep = [c for c in table.names if c in columns or c in kept]
        params = {"columns": columns, "simultaneous": False, "invariant": False}
        return randomize(table, {}, keep=keep, rng=rng, scheme=scheme, p=p, params=params,
                         shuffle=shuffle, engine=engine, buckets=buckets)  # fmt: skip
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
    matrices = scheme_matrices(
        table.schema, columns, scheme=scheme, p=p, p2=p2, groups=groups, simultaneous=simultaneous
    )
    if invariant:  # (joint) counts over the domain: in memory or one Spark aggregation
        for key, m in matrices.items():
            freq = table.counts(list(columns) if simultaneous else [key])
            matrices[key] = invariant_matrix(m, freq)
    params: dict[str, Any] = {"columns": columns, "simultaneous": simultaneous}
    params["invariant"] = invariant
    if p2 is not None:
        params["p2"] = p2
    if groups:
        params["groups"] = {c: [[py_scalar(v) for v in g] for g in gs] for c, gs in groups.items()}
    return randomize(
        table, matrices, keep=keep, rng=rng, scheme=scheme, p=p, params=params, shuffle=shuffle,
        engine=engine, buckets=buckets,
    )  # fmt: skip


def scheme_matrices(
    schema: Schema,
    columns: Sequence[str],
    *,
    scheme: str,
    p: float,
    p2: float | None = None,
    groups: Mapping[str, Sequence[Sequence[Any]]] | None = None,
    simultaneous: bool = False,
) -> dict[Any, np.ndarray]:
    """The matrices of :func:`pram` (before ``invariant``) from the schema alone:
    ``{column: P}``, or ``{tuple(columns): P_joint}`` when ``simultaneous``."""
    groups = dict(groups or {})
    matrices: dict[Any, np.ndarray] = {}
    _require_matrix_memory(schema, columns, simultaneous)
    if simultaneous:
        if scheme.lower().replace("_", "-") != "m-category" or groups:
            raise ParameterError("simultaneous randomization uses the m-category scheme only")
        sizes = [schema[c].size for c in columns]
        matrices[tuple(columns)] = joint_m_category_matrix(sizes, p)
        return matrices
    for c in columns:
        attr = schema[c]
        code_groups = _code_groups(attr, groups[c]) if c in groups else None
        matrices[c] = build_matrix(scheme, attr.size, p, p2=p2, groups=code_groups)
    return matrices


def _code_groups(attr: Attribute, groups: Sequence[Sequence[Any]]) -> list[list[int]]:
    """Groups of values (decoded values or their text) as groups of codes; values in no
    group become singletons."""
    out: list[list[int]] = []
    used: set[int] = set()
    for g in groups:
        cg = [int(c) for c in attr.encode(list(g), where="group")]
        for v, code in zip(g, cg):
            if code in used:
                raise ParameterError(f"value {v!r} of {attr.name!r} is in two groups")
            used.add(code)
        out.append(cg)
    out.extend([c] for c in range(attr.size) if c not in used)
    return out


def pram_items(
    data: Any,
    *,
    columns: Sequence[str] | None = None,
    groups: Sequence[Sequence[str]] = (),
    p: float,
    binary: bool = False,
    rng: RngLike | SeedRecord = None,
    shuffle: bool = True,
) -> PramRelease:
    """Randomize items group by group for frequent-itemset mining (Ma 2006, Sec. 7.1.2.1).

    Every category of every column in ``columns`` becomes an item (``column=value``;
    :func:`privlab.data.items.one_hot`), or, with ``binary``, each column already is a 0/1
    item.  ``groups`` lists groups of item names, each randomized jointly (the presence
    pattern of its ``g`` items, ``2^g`` patterns, first item slowest, absent = 0) through the
    M-category matrix with parameter ``p``; items in no group are randomized alone.  Each
    group should hold the items of one owner (the thesis's vertical partition); that is the
    caller's to choose.  The release publishes the randomized items and every group's matrix;
    :class:`~privlab.learn.pram_apriori.PramApriori` mines it.
    """
    from privlab.data.items import binary_items, check_grouping, one_hot

    table = as_table(data).require_rows()
    cols = None if columns is None else table.schema.require(columns, purpose="as items")
    items = binary_items(table, cols) if binary else one_hot(table, cols)
    p = _check_p("p", p)
    part = check_grouping(items.names, groups)
    for g in part:
        if 1 << len(g) > MAX_MATRIX_SIZE:
            raise ParameterError(
                f"a group of {len(g)} items ({', '.join(g[:3])}, ...) has a "
                f"{1 << len(g):,}-pattern matrix, more than a release publishes "
                f"({MAX_MATRIX_SIZE:,}): split it"
            )
    matrices = {tuple(g): joint_m_category_matrix([2] * len(g), p) for g in part}
    params = {"items": list(items.names), "groups": part, "binary": binary}
    return randomize(items, matrices, keep=[], rng=rng, scheme="m-category", p=p,
                     params=params, shuffle=shuffle)  # fmt: skip
