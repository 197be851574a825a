"""Anonymized marginals (Kifer & Gehrke, SIGMOD 2006): publish a generalized base table plus
(generalized) marginals, measure their utility by the maximum-entropy estimate, and check
k-link anonymity, MaxEnt l-diversity and k-combinatorial anonymity.

Definitions (seed 001's summary of the paper; notes S6):

* A *marginal* ``M`` (:class:`Marginal`) is the table of counts of a subset of the attributes,
  each generalized to a level of its hierarchy.  The generalized base table is the marginal of
  **all** attributes with the quasi-identifiers at a k-anonymous node and the sensitive
  attribute at its leaves.
* ``F^_1`` is the empirical distribution over the full leaf domain, ``F^_2`` the maximum-entropy
  distribution that agrees with every marginal's cell totals.  ``F^_2`` is computed by
  iterative proportional fitting (:func:`ipf`; cyclic scaling, Deming & Stephan 1940), which
  converges to it because max-ent under linear count constraints is the MLE of the log-linear
  model with one parameter per marginal cell (the seed: "maximum entropy is also the maximum
  likelihood estimate associated with log linear models").
* Utility: ``KL(F^_1 || F^_2)`` in nats over all attributes, sensitive included (lower is
  better; :func:`kl_divergence`).
* k-link anonymity (Defn 4.1): every marginal, summed over its sensitive attribute, has each
  cell 0 or >= k (:func:`k_link`).
* MaxEnt l-diversity (Defn 4.3): ``F^_2(S | q)`` is l-diverse for every combination ``q`` of
  the non-sensitive attributes with positive mass (:func:`maxent_l_diversity`).
* k-combinatorial anonymity (Defn 4.2): for every non-sensitive combination ``t``, the largest
  ``T(t)`` over the non-negative integer tables ``T`` consistent with the marginals is 0 or
  >= k (:func:`k_combinatorial`, an integer program solved by ``scipy.optimize.milp``).

Where the seed is silent, privlab decides:

* The paper's search is summarized only as "even a very simple search ... can yield dramatic
  results"; :func:`greedy_marginals` adds, one at a time, the candidate marginal (a 2- or
  3-attribute subset at the lowest k-link-anonymous levels) that lowers KL most while k-link
  anonymity, MaxEnt l-diversity and (where the ILP may run) k-combinatorial anonymity hold,
  and stops when none does.  k-link anonymity does not imply k-combinatorial anonymity: on
  small random tables the marginals together can pin a QI combination below k in every
  consistent table (privlab issue 31); above the ILP's limit a PrivacyWarning says that it
  was not checked.
* MaxEnt l-diversity defaults to the entropy variant: the distinct variant is nearly
  vacuous for a max-ent estimate, which leaves almost every value a positive probability
  (:func:`publish_marginals`).
* IPF runs on the dense leaf domain, refused above :data:`MAX_CELLS` cells.
* "Either ``T(t) = 0`` for all consistent T, or some T has ``T(t) >= k``": privlab computes
  the exact maximum by the ILP.  Its LP relaxation (:func:`k_combinatorial` with
  ``relax=True``) gives an *upper* bound on each maximum: LP max < k proves that ``t`` cannot
  reach k, but only the ILP tells 0 from a small positive count.  Integer programs are
  exponential in the worst case: small domains only.  Above :data:`MAX_ILP_CELLS` leaf
  cells (``max_cells=``) the ILP is refused with :class:`IlpTooLargeError`, which says so
  and gives the LP bound (up to :data:`MAX_LP_CELLS` cells).
* The maximum-entropy l-diversity check treats a conditional probability below ``1e-9`` as
  zero (IPF approaches zero cells geometrically, never exactly).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from privlab._frames import ToFrames
from privlab.data.default_hierarchies import resolve_hierarchies
from privlab.data.frames import as_table
from privlab.data.hierarchy import CompiledHierarchy
from privlab.data.schema import Attribute, Role, Schema
from privlab.data.table import Table
from privlab.errors import ParameterError, PrivacyWarning, SchemaError
from privlab.metrics.privacy import (
    PrivacyReport,
    class_entropy_l,
    class_recursive_ok,
    privacy_report,
)
from privlab.metrics.risk import DEFAULT_THRESHOLD
from privlab.release.base import Custody, PublishedTable, Release, refuse_reserved

__all__ = [
    "MAX_CELLS",
    "MAX_ILP_CELLS",
    "MAX_LP_CELLS",
    "GreedyResult",
    "IlpTooLargeError",
    "IpfResult",
    "Marginal",
    "MarginalsRelease",
    "empirical",
    "greedy_marginals",
    "ipf",
    "k_combinatorial",
    "k_link",
    "kl_divergence",
    "make_marginal",
    "maxent_l_diversity",
    "publish_marginals",
]

#: The largest leaf domain IPF runs on (dense float64: 128 MiB).
MAX_CELLS = 1 << 24
#: The most variables (leaf cells) k-combinatorial anonymity's integer program is given.
MAX_ILP_CELLS = 4096
#: The most variables its LP relaxation (the bound reported above that limit) is given.
MAX_LP_CELLS = 1 << 16
#: Conditional probabilities below this count as zero in MaxEnt l-diversity.
ZERO = 1e-9


@dataclass(frozen=True, eq=False)
class Marginal(ToFrames):
    """A (generalized) marginal of a table.

    Attributes
    ----------
    attributes
        Names of its attributes, in its axis order.
    levels
        The generalization level of each.
    maps
        Per attribute, the cell (generalized code) of each leaf code.
    labels
        Per attribute, the labels of its cells.
    counts
        Counts over the cells, shape ``[len(labels[j]) for j]``.
    """

    attributes: tuple[str, ...]
    levels: tuple[int, ...]
    maps: tuple[np.ndarray, ...]
    labels: tuple[tuple[str, ...], ...]
    counts: np.ndarray

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def to_dict(self) -> dict[str, Any]:
        return {
            "attributes": list(self.attributes),
            "levels": list(self.levels),
            "cells": int(self.counts.size),
            "n": self.n,
        }

    def to_pandas(self) -> pd.DataFrame:
        """One row per cell: the cell's labels and its count."""
        grids = np.indices(self.counts.shape).reshape(len(self.attributes), -1)
        data = {a: np.asarray(self.labels[j], dtype=object)[grids[j]]
                for j, a in enumerate(self.attributes)}  # fmt: skip
        data["count"] = self.counts.ravel().astype(np.int64)
        return pd.DataFrame(data)

    def describe(self) -> str:
        return "(" + ", ".join(f"{a}@{lv}" for a, lv in zip(self.attributes, self.levels)) + ")"


def _hierarchies(
    table: Table, hierarchies: Mapping[str, Any] | None, dataset: str | None
) -> dict[str, CompiledHierarchy]:
    resolved = resolve_hierarchies(table.schema.attributes, hierarchies, dataset=dataset)
    return {a.name: resolved[a.name].compile(a) for a in table.schema.attributes}


def make_marginal(
    table: Any,
    attributes: Sequence[str],
    levels: Sequence[int] | None = None,
    *,
    hierarchies: Mapping[str, Any] | Mapping[str, CompiledHierarchy] | None = None,
    dataset: str | None = None,
) -> Marginal:
    """The marginal of ``attributes`` generalized to ``levels`` (default: the leaves).

    ``hierarchies`` maps names to :class:`~privlab.data.hierarchy.Hierarchy` or compiled
    hierarchies (default: the dataset's, else generic ones).
    """
    table = as_table(table)
    attributes = list(attributes)
    if not attributes:
        raise ParameterError("a marginal needs at least one attribute")
    if len(set(attributes)) != len(attributes):
        raise SchemaError(f"a marginal lists an attribute twice: {attributes}")
    idx = table.schema.indices(attributes)
    levels = [0] * len(attributes) if levels is None else [int(v) for v in levels]
    if len(levels) != len(attributes):
        raise ParameterError(f"{len(levels)} levels for {len(attributes)} attributes")
    compiled = _compile(table, hierarchies, dataset, attributes, levels)
    maps, labels = [], []
    for a, lv in zip(attributes, levels):
        h = compiled[a]
        if not 0 <= lv <= h.height:
            raise ParameterError(f"level {lv} of {a!r} is outside 0..{h.height}")
        maps.append(np.asarray(h.maps[lv], dtype=np.int64))
        labels.append(tuple(map(str, h.labels[lv])))
    cells = [m[table.codes[:, j]] for m, j in zip(maps, idx)]
    shape = tuple(len(lab) for lab in labels)
    flat = np.ravel_multi_index(tuple(cells), shape) if table.n_rows else np.empty(0, np.int64)
    counts = np.bincount(flat, minlength=math.prod(shape)).reshape(shape)
    return Marginal(tuple(attributes), tuple(levels), tuple(maps), tuple(labels), counts)


def _compile(table, hierarchies, dataset, attributes, levels) -> dict[str, CompiledHierarchy]:
    given = dict(hierarchies or {})
    out: dict[str, CompiledHierarchy] = {}
    rest = {}
    for a in attributes:
        h = given.get(a)
        if isinstance(h, CompiledHierarchy):
            out[a] = h
        elif h is not None:
            rest[a] = h
    need = [a for a, lv in zip(attributes, levels) if a not in out]
    if need:
        sub = table.select(need)
        out.update(_hierarchies(sub, rest, dataset))
    return out


# -- the maximum-entropy estimate -----------------------------------------------------------
@dataclass(frozen=True, eq=False)
class IpfResult(ToFrames):
    """The maximum-entropy distribution ``F^_2`` over the leaf domain.

    ``probs`` has shape ``sizes`` (the attributes in ``names`` order); ``max_error`` is the
    largest absolute gap between a marginal cell's fitted and target share after the last
    cycle.
    """

    names: tuple[str, ...]
    probs: np.ndarray
    iterations: int
    converged: bool
    max_error: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "names": list(self.names),
            "cells": int(self.probs.size),
            "iterations": self.iterations,
            "converged": self.converged,
            "max_error": self.max_error,
        }

    def to_pandas(self) -> pd.DataFrame:
        grids = np.indices(self.probs.shape).reshape(len(self.names), -1)
        data = {a: grids[j] for j, a in enumerate(self.names)}
        data["prob"] = self.probs.ravel()
        return pd.DataFrame(data)


def _check_cells(sizes: Sequence[int]) -> int:
    cells = math.prod(int(s) for s in sizes)
    if cells > MAX_CELLS:
        raise ParameterError(
            f"the leaf domain has {cells:,} cells, more than the {MAX_CELLS:,} that IPF and "
            "the checks enumerate: use fewer attributes or merge values"
        )
    return cells


def ipf(
    names: Sequence[str],
    sizes: Sequence[int],
    marginals: Sequence[Marginal],
    *,
    tol: float = 1e-10,
    max_iter: int = 5000,
) -> IpfResult:
    """Iterative proportional fitting of the max-ent distribution to ``marginals``.

    Starts from the uniform distribution on the leaf domain ``prod(sizes)`` (maximum
    entropy) and cycles through the marginals, rescaling the leaves of each cell so that
    the cell's mass equals its target share; stops when a whole cycle moves no cell share
    by more than ``tol``.  Each rescaling is an I-projection, so the limit is the max-ent
    distribution consistent with every marginal (Csiszar 1975).
    """
    names = tuple(names)
    sizes = tuple(int(s) for s in sizes)
    _check_cells(sizes)
    if not marginals:
        raise ParameterError("IPF needs at least one marginal")
    n = marginals[0].n
    if n <= 0:
        raise ParameterError("the marginals are empty (0 records)")
    plans = []
    for mg in marginals:
        if mg.n != n:
            raise ParameterError(
                f"marginal {mg.describe()} counts {mg.n} records, the first counts {n}"
            )
        axes = [names.index(a) if a in names else -1 for a in mg.attributes]
        if -1 in axes:
            raise SchemaError(f"marginal {mg.describe()} has an attribute outside {names}")
        order = sorted(range(len(axes)), key=lambda j: axes[j])
        sorted_axes = [axes[j] for j in order]
        grid = np.indices([sizes[a] for a in sorted_axes])
        cell_codes = [None] * len(axes)
        for pos, j in enumerate(order):
            cell_codes[j] = mg.maps[j][grid[pos]]
        cell = np.ravel_multi_index(tuple(cell_codes), mg.counts.shape)
        others = tuple(a for a in range(len(sizes)) if a not in sorted_axes)
        expand = [sizes[a] if a in sorted_axes else 1 for a in range(len(sizes))]
        plans.append((cell, others, expand, mg.counts.ravel() / n))
    q = np.full(sizes, 1.0 / math.prod(sizes))
    converged, err, it = False, math.inf, 0
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        err = 0.0
        for cell, others, expand, target in plans:
            sub = q.sum(axis=others) if others else q
            current = np.bincount(cell.ravel(), weights=sub.ravel(), minlength=target.size)
            err = max(err, float(np.abs(current - target).max()))
            ratio = np.divide(target, current, out=np.zeros_like(target), where=current > 0)
            q *= ratio[cell].reshape(expand)
        if err <= tol:
            converged = True
            break
    return IpfResult(names, q, it, converged, err)


def empirical(table: Any, names: Sequence[str] | None = None) -> np.ndarray:
    """``F^_1``: the empirical distribution of ``table`` over the leaf domain of ``names``."""
    table = as_table(table)
    names = list(table.names if names is None else names)
    sizes = [table.schema[c].size for c in names]
    _check_cells(sizes)
    if table.n_rows == 0:
        raise ParameterError("the table is empty (0 rows)")
    return table.counts(names).reshape(sizes) / table.n_rows


def kl_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """``KL(p || q)`` in nats (``inf`` when ``q`` is 0 where ``p`` is not)."""
    p, q = np.asarray(p, dtype=float).ravel(), np.asarray(q, dtype=float).ravel()
    pos = p > 0
    if np.any(q[pos] <= 0):
        return math.inf
    return float(np.sum(p[pos] * (np.log(p[pos]) - np.log(q[pos]))))


# -- privacy checks ----------------------------------------------------------------------------
def k_link(marginals: Sequence[Marginal], sensitive: str | None, k: int) -> tuple[bool, int]:
    """k-link anonymity (Defn 4.1): every marginal summed over ``sensitive`` has each cell 0
    or >= k.  Returns ``(holds, smallest positive cell)``."""
    smallest = math.inf
    for mg in marginals:
        c = mg.counts
        if sensitive in mg.attributes:
            c = c.sum(axis=mg.attributes.index(sensitive))
        pos = c[c > 0]
        if pos.size:
            smallest = min(smallest, int(pos.min()))
    smallest = int(smallest) if smallest != math.inf else 0
    return smallest == 0 or smallest >= k, smallest


@dataclass(frozen=True)
class LDiversity:
    """MaxEnt l-diversity (Defn 4.3) of ``F^_2(S | q)`` over the combinations ``q`` of the
    non-sensitive attributes with positive mass; ``max_posterior`` is the largest
    ``F^_2(s | q)``: what the max-ent attacker can be sure of at most."""

    variant: str
    l: float
    holds: bool
    distinct_l: int
    entropy_l: float
    combinations: int
    max_posterior: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def maxent_l_diversity(
    fit: IpfResult, sensitive: str, l: float, *, variant: str = "distinct", c: float = 1.0
) -> LDiversity:
    """Whether the max-ent distribution is l-diverse (``distinct``, ``entropy`` or
    ``recursive`` (c,l)) for every non-sensitive combination with positive mass."""
    if sensitive not in fit.names:
        raise SchemaError(f"sensitive attribute {sensitive!r} is not among {fit.names}")
    if variant not in ("distinct", "entropy", "recursive"):
        raise ParameterError(f"variant must be distinct, entropy or recursive, not {variant!r}")
    s = fit.names.index(sensitive)
    cond = np.moveaxis(fit.probs, s, -1).reshape(-1, fit.probs.shape[s])
    mass = cond.sum(axis=1)
    keep = mass > ZERO
    cond = cond[keep] / mass[keep, None]
    cond = np.where(cond < ZERO, 0.0, cond)
    distinct = int((cond > 0).sum(axis=1).min()) if cond.size else 0
    ent = float(class_entropy_l(cond).min()) if cond.size else 0.0
    if variant == "distinct":
        holds = distinct >= l
    elif variant == "entropy":
        holds = ent >= l - 1e-9
    else:
        holds = bool(class_recursive_ok(cond, c, int(l)).all())
    top = float(cond.max()) if cond.size else 0.0
    return LDiversity(variant, l, bool(holds), distinct, ent, int(keep.sum()), top)


class IlpTooLargeError(ParameterError):
    """k-combinatorial anonymity's integer program is larger than the configured limit.

    ``lp_bound`` holds the LP relaxation's upper bound on every maximum ``T(t)`` (shaped
    like the non-sensitive domain), or None when the LP is too large as well.
    """

    def __init__(self, message: str, lp_bound: np.ndarray | None = None) -> None:
        super().__init__(message)
        self.lp_bound = lp_bound


def _constraints(marginals, names, sizes, cells):
    """The sparse equality constraints ``A x = b``: each marginal cell's count."""
    from scipy.sparse import coo_array

    rows, cols, rhs, offset = [], [], [], 0
    grid = np.indices(sizes).reshape(len(sizes), -1)
    for mg in marginals:
        missing = [a for a in mg.attributes if a not in names]
        if missing:
            raise SchemaError(f"marginal {mg.describe()} has an attribute outside {names}")
        axes = [names.index(a) for a in mg.attributes]
        codes = [mg.maps[j][grid[a]] for j, a in enumerate(axes)]
        rows.append(offset + np.ravel_multi_index(tuple(codes), mg.counts.shape))
        cols.append(np.arange(cells))
        rhs.append(mg.counts.ravel().astype(float))
        offset += mg.counts.size
    r, c = np.concatenate(rows), np.concatenate(cols)
    a = coo_array((np.ones(r.size), (r, c)), shape=(offset, cells)).tocsr()
    return a, np.concatenate(rhs)


def _maxima(a, b, t_of_cell, n_t: int, *, integer: bool, which=None) -> np.ndarray:
    """``max sum_{cells of t} x`` over ``A x = b, x >= 0`` (integer or not), for each ``t``
    (or each ``t`` in ``which``; the others are left 0)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    cells = t_of_cell.size
    cons = LinearConstraint(a, b, b)
    integrality = np.ones(cells) if integer else np.zeros(cells)
    out = np.zeros(n_t)
    for t in range(n_t) if which is None else which:
        obj = -(t_of_cell == t).astype(float)
        res = milp(obj, constraints=cons, integrality=integrality, bounds=Bounds(0, np.inf))
        if res.status != 0:
            raise ParameterError(f"no table is consistent with the marginals ({res.message})")
        out[t] = -res.fun
    return out


def k_combinatorial(
    marginals: Sequence[Marginal],
    names: Sequence[str],
    sizes: Sequence[int],
    sensitive: str | None,
    k: int,
    *,
    relax: bool = False,
    max_cells: int | None = None,
) -> tuple[bool, np.ndarray]:
    """k-combinatorial anonymity (Defn 4.2) by integer programming (``scipy.optimize.milp``).

    For every combination ``t`` of the non-sensitive attributes, the largest ``T(t)`` over
    the non-negative integer tables ``T`` on the leaf domain whose marginals equal the
    given ones.  Returns ``(holds, maxima)`` with ``maxima`` shaped like the non-sensitive
    domain.  ``relax=True`` solves the LP relaxation instead: an upper bound on each
    maximum, enough to show ``T(t) < k`` but not to tell 0 from a small positive count.

    The integer program has one variable per leaf cell and is exponential in the worst
    case: above ``max_cells`` variables (default :data:`MAX_ILP_CELLS`) it is not solved;
    :class:`IlpTooLargeError` says so and gives the LP bound (computed when the LP has at
    most :data:`MAX_LP_CELLS` variables), which ``relax=True`` returns in full.
    """
    names = tuple(names)
    sizes = tuple(int(s) for s in sizes)
    cells = _check_cells(sizes)
    limit = MAX_ILP_CELLS if max_cells is None else int(max_cells)
    if limit < 1:
        raise ParameterError(f"max_cells = {limit} must be at least 1")
    if sensitive is not None and sensitive not in names:
        raise SchemaError(f"sensitive attribute {sensitive!r} is not among {names}")
    ns = [j for j, a in enumerate(names) if a != sensitive]
    ns_shape = tuple(sizes[j] for j in ns)
    n_t = math.prod(ns_shape) if ns else 1
    integer = not relax
    if integer and cells > limit:
        head = (
            f"k-combinatorial anonymity: the integer program has {cells:,} variables (leaf "
            f"cells), more than the configured limit of {limit:,} (max_cells), so it was not "
            "solved"
        )
        if cells > MAX_LP_CELLS:
            raise IlpTooLargeError(
                f"{head}; its LP relaxation has more than {MAX_LP_CELLS:,} variables too: "
                "use fewer attributes or merge values"
            )
        a, b = _constraints(marginals, names, sizes, cells)
        lp = _maxima(a, b, _t_of_cell(sizes, ns, ns_shape, cells), n_t, integer=False)
        lp = np.where(np.abs(lp - np.round(lp)) < 1e-9, np.round(lp), lp)
        small = (lp > 1e-9) & (lp < k - 1e-9)
        pos = lp[lp > 1e-9]
        raise IlpTooLargeError(
            f"{head}; the LP relaxation bounds every max T(t) from above: "
            f"{int((lp <= 1e-9).sum()):,} of {n_t:,} combinations have bound 0 (T(t) = 0 "
            f"surely), the smallest positive bound is {pos.min() if pos.size else 0:.6g}, "
            f"{int(small.sum()):,} positive bounds lie below k = {k} (undecided) and "
            f"{int((lp >= k - 1e-9).sum()):,} reach k; relax=True returns the bounds, or "
            "raise max_cells",
            lp.reshape(ns_shape) if ns else lp,
        )
    a, b = _constraints(marginals, names, sizes, cells)
    maxima = _maxima(a, b, _t_of_cell(sizes, ns, ns_shape, cells), n_t, integer=integer)
    maxima = maxima.reshape(ns_shape) if ns else maxima
    if relax:
        return bool(np.all(maxima >= k - 1e-9)), maxima
    r = np.round(maxima)
    return bool(np.all((r == 0) | (r >= k))), r.astype(np.int64)


def _combinatorial_holds(
    marginals: Sequence[Marginal],
    names: Sequence[str],
    sizes: Sequence[int],
    sensitive: str,
    k: int,
    data: np.ndarray,
) -> bool:
    """k-combinatorial anonymity (Defn 4.2) of marginals taken from the table whose leaf
    counts are ``data``: :func:`k_combinatorial`'s answer, with the ILP solved only where
    two exact bounds leave the maximum ``T(t)`` undecided.  The data is a consistent table,
    so ``max T(t) >= N(t)``: a combination whose true count reaches k passes; every
    marginal cell holding ``t`` bounds it from above, so ``max T(t) <= min_M M(t)``: a
    bound of 0 passes, and ``0 < N(t)`` with a bound below k fails.  Stops at the first
    failure."""
    names = tuple(names)
    ns = [j for j, a in enumerate(names) if a != sensitive]
    ns_names = [names[j] for j in ns]
    ns_shape = tuple(int(sizes[j]) for j in ns)
    truth = np.asarray(data).reshape(sizes).sum(axis=names.index(sensitive))
    grid = np.indices(ns_shape)
    upper = np.full(ns_shape, np.inf)
    for mg in marginals:
        c = mg.counts
        if sensitive in mg.attributes:
            c = c.sum(axis=mg.attributes.index(sensitive))
        attrs = [a for a in mg.attributes if a != sensitive]
        idx = tuple(mg.maps[mg.attributes.index(a)][grid[ns_names.index(a)]] for a in attrs)
        upper = np.minimum(upper, c[idx] if attrs else c)
    if np.any((truth > 0) & (truth < k) & (upper < k)):
        return False
    todo = np.flatnonzero(((truth < k) & (upper > 0)).ravel())
    if not todo.size:
        return True
    cells = _check_cells(sizes)
    a, b = _constraints(marginals, names, sizes, cells)
    t_of = _t_of_cell(tuple(int(x) for x in sizes), ns, ns_shape, cells)
    for t in todo:
        m = round(_maxima(a, b, t_of, truth.size, integer=True, which=[int(t)])[t])
        if 0 < m < k:
            return False
    return True


def _t_of_cell(sizes, ns, ns_shape, cells) -> np.ndarray:
    """The non-sensitive combination (flat index) of each leaf cell."""
    if not ns:
        return np.zeros(cells, dtype=np.int64)
    grid = np.indices(sizes).reshape(len(sizes), -1)
    return np.ravel_multi_index(tuple(grid[j] for j in ns), ns_shape)


# -- the greedy search --------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class GreedyResult(ToFrames):
    """The marginals the greedy search chose, with the KL after each step."""

    base: Marginal
    added: tuple[Marginal, ...]
    kl_path: tuple[float, ...]
    fit: IpfResult
    steps: list[dict[str, Any]] = field(default_factory=list)
    #: ``"checked"`` (every accepted collection is k-combinatorially anonymous, by the
    #: ILP), ``"not checked"`` (the leaf domain is above the ILP's limit) or ``"off"``.
    combinatorial: str = "off"

    @property
    def marginals(self) -> tuple[Marginal, ...]:
        return (self.base, *self.added)

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base.to_dict(),
            "added": [m.to_dict() for m in self.added],
            "kl_path": list(self.kl_path),
            "steps": self.steps,
            "k_combinatorial": self.combinatorial,
        }

    def to_pandas(self) -> pd.DataFrame:
        return pd.DataFrame(self.steps)


def _lowest_k_link_levels(table, attrs, compiled, sensitive, k) -> list[tuple[int, ...]]:
    """The minimal level vectors at which the marginal of ``attrs`` is k-link anonymous."""
    ranges = [range(compiled[a].height + 1) if a != sensitive else range(1) for a in attrs]
    ok_nodes = []
    for node in itertools.product(*ranges):
        if any(all(o <= v for o, v in zip(other, node)) for other in ok_nodes):
            continue  # above a satisfying node: not minimal
        mg = make_marginal(table, attrs, node, hierarchies=compiled)
        if k_link([mg], sensitive, k)[0]:
            ok_nodes.append(node)
    return ok_nodes


#: What :func:`greedy_marginals` does about k-combinatorial anonymity.
COMBINATORIAL = ("auto", "require", "off")


def _unchecked(sizes: Sequence[int], max_cells: int | None) -> str:
    limit = MAX_ILP_CELLS if max_cells is None else int(max_cells)
    return (
        f"k-combinatorial anonymity (Kifer & Gehrke 2006, Defn 4.2) cannot be checked: the "
        f"leaf domain has {math.prod(sizes):,} cells, more than the integer program's limit "
        f"of {limit:,}; the marginals are k-link anonymous, which does not imply it"
    )


def _combinatorial_policy(combinatorial: str, sizes: Sequence[int], max_cells: int | None) -> bool:
    """Whether k-combinatorial anonymity is checked; refuses a bad policy, and a domain too
    large for the ILP under ``"require"``."""
    if combinatorial not in COMBINATORIAL:
        raise ParameterError(
            f"combinatorial must be one of {', '.join(COMBINATORIAL)}, not {combinatorial!r}"
        )
    limit = MAX_ILP_CELLS if max_cells is None else int(max_cells)
    check = combinatorial != "off" and math.prod(sizes) <= limit
    if combinatorial == "require" and not check:
        raise IlpTooLargeError(
            _unchecked(sizes, max_cells) + " (use fewer attributes or merge values, or "
            "combinatorial='auto')"
        )
    return check


def greedy_marginals(
    table: Any,
    base: Marginal,
    *,
    sensitive: str,
    k: int,
    l: float,
    l_variant: str = "entropy",
    c: float = 1.0,
    width: int = 2,
    max_marginals: int = 5,
    hierarchies: Mapping[str, Any] | None = None,
    dataset: str | None = None,
    tol: float = 1e-8,
    combinatorial: str = "auto",
    max_cells: int | None = None,
) -> GreedyResult:
    """Greedily add the (generalized) marginal that lowers ``KL(F^_1 || F^_2)`` most.

    Candidates are the attribute subsets of size 2..``width`` at each of their minimal
    k-link-anonymous level vectors (the sensitive attribute at its leaves); a candidate is
    accepted only if k-link anonymity (Kifer & Gehrke 2006, Defn 4.1), MaxEnt l-diversity
    (Defn 4.3, ``l_variant``) and, where it can be decided, k-combinatorial anonymity
    (Defn 4.2) hold with it.  Stops when no candidate lowers KL, or after ``max_marginals``
    additions.

    Parameters
    ----------
    l_variant, c
        ``entropy`` (default), ``recursive`` (with ``c``) or ``distinct`` MaxEnt
        l-diversity of ``F^_2(S | q)``; see :func:`publish_marginals` for the default.
    combinatorial
        k-link anonymity does not imply k-combinatorial anonymity: the marginals together
        can pin a QI combination below k in every consistent table (privlab issue 31, 7 of
        300 small random tables).  ``"auto"`` (default) checks every accepted collection
        exactly (:func:`k_combinatorial`'s ILP) when the leaf domain has at most
        ``max_cells`` cells (default :data:`MAX_ILP_CELLS`), and otherwise warns
        (:class:`~privlab.errors.PrivacyWarning`) that it was not checked; ``"require"``
        refuses such a domain (:class:`IlpTooLargeError`); ``"off"`` checks k-link and
        l-diversity only (the search as the paper states it, for comparison).
    """
    table = as_table(table)
    names = tuple(table.names)
    sizes = tuple(table.schema.sizes)
    check = _combinatorial_policy(combinatorial, sizes, max_cells)
    if combinatorial == "auto" and not check:
        warnings.warn(_unchecked(sizes, max_cells), PrivacyWarning, stacklevel=2)
    compiled = _hierarchies(table, hierarchies, dataset)
    p = empirical(table, names)
    data = table.counts(list(names)) if check else None
    chosen: list[Marginal] = []
    fit = ipf(names, sizes, [base], tol=tol)
    kl = kl_divergence(p, fit.probs)
    path = [kl]
    steps: list[dict[str, Any]] = [{"step": 0, "marginal": base.describe(), "kl": kl}]
    candidates = []
    for r in range(2, width + 1):
        for attrs in itertools.combinations(names, r):
            for node in _lowest_k_link_levels(table, attrs, compiled, sensitive, k):
                candidates.append(make_marginal(table, attrs, node, hierarchies=compiled))
    for step in range(1, max_marginals + 1):
        best = None
        for cand in candidates:
            f = ipf(names, sizes, [base, *chosen, cand], tol=tol)
            val = kl_divergence(p, f.probs)
            if best is not None and val >= best[1]:
                continue
            if val >= kl - 1e-12:
                continue
            if not maxent_l_diversity(f, sensitive, l, variant=l_variant, c=c).holds:
                continue
            collection = [base, *chosen, cand]
            if check and not _combinatorial_holds(collection, names, sizes, sensitive, k, data):
                continue
            best = (cand, val, f)
        if best is None:
            break
        cand, kl, fit = best
        chosen.append(cand)
        candidates = [m for m in candidates if m is not cand]
        path.append(kl)
        steps.append({"step": step, "marginal": cand.describe(), "kl": kl})
    state = "checked" if check else "off" if combinatorial == "off" else "not checked"
    return GreedyResult(base, tuple(chosen), tuple(path), fit, steps, state)


# -- the release ----------------------------------------------------------------------------------
def _column(attribute: str, level: int) -> str:
    """The published column of an attribute at a level: its name at the leaves, else
    ``name@level`` (one release may hold an attribute at several levels)."""
    return attribute if level == 0 else f"{attribute}@{level}"


@dataclass(frozen=True, eq=False, repr=False)
class MarginalsRelease(Release):
    """A generalized base table plus generalized marginals (Kifer & Gehrke 2006).

    Each marginal is published as one table with a row per cell (its labels and ``count``);
    ``release.json`` holds every attribute's leaf domain and, per marginal, the cell of each
    leaf, so that anyone can recompute the max-ent estimate (:meth:`maxent`).

    Attributes
    ----------
    marginals
        The base table first, then the added marginals.
    attributes
        The leaf-level attributes (name, domain, role) the marginals are over.
    params
        Parameters of the search (k, l, width, max_marginals).
    kl_path
        ``KL(data || max-ent)`` after each step of the greedy search: measured on the input,
        so the custodian's (kept in custody, never in ``release.json``); None on a release
        loaded without its custody.
    custody
        The input's fingerprint and the KL path (nothing here is random).
    """

    marginals: tuple[Marginal, ...]
    attributes: tuple[Attribute, ...]
    params: dict[str, Any] = field(default_factory=dict)
    kl_path: tuple[float, ...] | None = None
    custody: Custody | None = field(default=None, compare=False)

    method: ClassVar[str] = "marginals"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.attributes)

    @property
    def sensitive(self) -> str | None:
        s = [a.name for a in self.attributes if a.role is Role.SENSITIVE]
        return s[0] if s else None

    def _table_of(self, mg: Marginal) -> PublishedTable:
        attrs = []
        for a, lv, lab in zip(mg.attributes, mg.levels, mg.labels):
            leaf = self.attributes[self.names.index(a)]
            attrs.append(Attribute(_column(a, lv), lab, leaf.role, False, True))
        grids = np.indices(mg.counts.shape).reshape(len(mg.attributes), -1).T
        return PublishedTable(
            Table(grids, Schema(tuple(attrs))),
            {"count": mg.counts.ravel().astype(np.int64)},
        )

    def published(self) -> dict[str, PublishedTable]:
        out = {"base": self._table_of(self.marginals[0])}
        for i, mg in enumerate(self.marginals[1:], 1):
            out[f"marginal_{i}"] = self._table_of(mg)
        return out

    def parameters(self) -> dict[str, Any]:
        return dict(self.params)

    def metadata(self) -> dict[str, Any]:
        return {
            "leaf_attributes": [a.to_dict() for a in self.attributes],
            "marginals": [
                {
                    "table": name,
                    "attributes": list(mg.attributes),
                    "levels": list(mg.levels),
                    "maps": [m.tolist() for m in mg.maps],
                }
                for name, mg in zip(self.published(), self.marginals)
            ],
        }

    def _keeps_full_domain(self, attribute: Attribute) -> bool:
        return True  # every cell is published, zero counts included

    def with_custody(
        self, custody: str | Path | Custody, release_sha256: str | None
    ) -> MarginalsRelease:
        """This release with its custody attached, and the KL path it keeps."""
        rel = super().with_custody(custody, release_sha256)
        kept = (rel.custody.input_measures or {}) if rel.custody is not None else {}
        if kept.get("kl_path") is None:
            return rel  # type: ignore[return-value]
        path = tuple(float(v) for v in kept["kl_path"])
        return dataclasses.replace(rel, kl_path=path)  # type: ignore[type-var]

    @classmethod
    def _from_published(
        cls, meta: dict[str, Any], tables: dict[str, PublishedTable]
    ) -> MarginalsRelease:
        attrs = tuple(Schema.from_dict({"attributes": meta["leaf_attributes"]}).attributes)
        margs = []
        for spec in meta["marginals"]:
            t = tables[spec["table"]]
            names, levels = tuple(spec["attributes"]), tuple(int(v) for v in spec["levels"])
            cols = [_column(a, lv) for a, lv in zip(names, levels)]
            labels = tuple(tuple(t.table.schema[c].domain) for c in cols)
            shape = tuple(len(lab) for lab in labels)
            counts = np.zeros(shape, dtype=np.int64)
            idx = tuple(t.table.columns(cols).T.astype(np.int64))
            np.add.at(counts, idx, t.integers["count"])
            maps = tuple(np.asarray(m, dtype=np.int64) for m in spec["maps"])
            margs.append(Marginal(names, levels, maps, labels, counts))
        params = dict(meta["parameters"])
        old = params.pop("kl_path", None)  # written to release.json before 0.2
        path = tuple(float(v) for v in old) if old is not None else None
        return cls(tuple(margs), attrs, params=params, kl_path=path)

    def maxent(self, *, tol: float = 1e-10) -> IpfResult:
        """``F^_2``: the max-ent distribution the published marginals determine."""
        return ipf(self.names, self.sizes, self.marginals, tol=tol)

    def linkable(self) -> Table:
        """The base table's generalized non-sensitive columns, one row per record."""
        base = self._table_of(self.marginals[0])
        rows = np.repeat(np.arange(base.n_rows), base.integers["count"])
        t = base.table.take(rows)
        return t.select(t.schema.linkable)

    def privacy(self, *, threshold: float = DEFAULT_THRESHOLD) -> PrivacyReport:
        """The base table's k (over its generalized non-sensitive columns), with
        ``details``: k-link anonymity's smallest positive cell, MaxEnt l-diversity (distinct
        and entropy l of ``F^_2(S | q)``), the largest max-ent posterior ``F^_2(s | q)``,
        and k-combinatorial anonymity (Defn 4.2): ``k_combinatorial`` (whether every QI
        combination's largest count over the consistent tables is 0 or >= the release's k)
        and ``k_combinatorial_min`` (the smallest positive such maximum), by the exact ILP
        when the leaf domain has at most :data:`MAX_ILP_CELLS` cells; above that,
        ``k_combinatorial_checked`` is False."""
        details: dict[str, Any] = {"marginals": [m.describe() for m in self.marginals]}
        s = self.sensitive
        details["k_link_min_cell"] = k_link(self.marginals, s, 1)[1]
        if s is not None:
            ld = maxent_l_diversity(self.maxent(), s, 1)
            details.update(maxent_distinct_l=ld.distinct_l, maxent_entropy_l=ld.entropy_l,
                           maxent_max_posterior=ld.max_posterior)  # fmt: skip
        details.update(self._combinatorial())
        return privacy_report(
            self.method, self.linkable(), None, threshold=threshold, details=details
        )

    def claims(self) -> list[dict[str, Any]]:
        """k-link anonymity at the release's k and, with l, MaxEnt l-diversity (Kifer &
        Gehrke 2006, Defns 4.1 and 4.3) of the published marginals."""
        k = int(self.params.get("k", 1))
        holds, smallest = k_link(self.marginals, self.sensitive, k)
        out = [{"claim": f"k = {k} (k-link: every marginal cell 0 or >= k)", "holds": holds,
                "measured": f"smallest positive cell {smallest}"}]  # fmt: skip
        l = self.params.get("l")
        if l is not None and self.sensitive is not None:
            variant = str(self.params.get("l_variant", "entropy"))
            ld = maxent_l_diversity(self.maxent(), self.sensitive, float(l), variant=variant,
                                    c=float(self.params.get("c") or 1.0))  # fmt: skip
            out.append({"claim": f"MaxEnt {variant} l = {float(l):g}", "holds": ld.holds,
                        "measured": f"distinct l {ld.distinct_l}, entropy l "
                                    f"{ld.entropy_l:.4g}"})  # fmt: skip
        return out

    def _combinatorial(self) -> dict[str, Any]:
        """k-combinatorial anonymity at the release's k, where the ILP may run."""
        k = int(self.params.get("k", 1))
        if math.prod(self.sizes) > MAX_ILP_CELLS:
            return {"k_combinatorial_checked": False}
        holds, maxima = k_combinatorial(self.marginals, self.names, self.sizes, self.sensitive, k)
        pos = maxima[maxima > 0]
        return {
            "k_combinatorial_checked": True,
            "k_combinatorial": holds,
            "k_combinatorial_min": int(pos.min()) if pos.size else 0,
        }


def publish_marginals(
    data: Any,
    *,
    qi: Sequence[str],
    sensitive: str,
    k: int,
    l: float = 2,
    l_variant: str = "entropy",
    c: float = 1.0,
    width: int = 2,
    max_marginals: int = 5,
    hierarchies: Mapping[str, Any] | str | None = None,
    dataset: str | None = None,
    combinatorial: str = "auto",
) -> MarginalsRelease:
    """A k-anonymous, l-diverse generalized base table (privlab's optimal full-domain
    recoding, no suppression) plus the marginals :func:`greedy_marginals` adds.

    ``l_variant`` applies to the base table and to MaxEnt l-diversity (Kifer & Gehrke 2006,
    Defn 4.3).  The default is **entropy** l-diversity (Machanavajjhala et al. 2007):
    ``H(F^_2(S | q)) >= log l`` for every combination ``q``.  Distinct l-diversity of the
    max-ent estimate is nearly vacuous, since IPF leaves almost every value a positive
    probability: on Adult at k = 10 (6 marginals of width 3) it accepted marginals that give
    157 people a max-ent posterior >= 0.9 (127 of them right) where the base table alone
    gives nobody 0.9 (privlab issue 31).  Entropy l-diversity bounds the largest posterior
    ``p`` of every ``q`` through ``h(p) + (1 - p) log(m - 1) >= log l`` (``m`` sensitive
    values; ``p <= 0.876`` for Adult's 14 occupations at l = 2) without a second parameter;
    ``recursive`` (c, 2)-diversity bounds it at ``c / (c + 1)``.  The release's
    :meth:`~MarginalsRelease.privacy` reports the largest max-ent posterior.
    ``combinatorial`` is :func:`greedy_marginals`'s k-combinatorial policy.
    """
    from privlab.publish.generalization import generalize

    table = as_table(data).require_rows()
    qi = table.schema.require(qi, purpose="as quasi-identifiers")
    table.schema.index(sensitive)
    if sensitive in qi:  # the schema would say "duplicate attribute name" (issue 30.8)
        raise ParameterError(
            f"attribute {sensitive!r} is both the sensitive attribute and a quasi-identifier"
        )
    if int(k) < 1:
        raise ParameterError(f"k = {k} must be at least 1")
    if int(width) < 2:
        raise ParameterError(f"width = {width} must be at least 2")
    names = [*qi, sensitive]
    refuse_reserved(names)
    sub = table.select(names).with_roles(qi=qi, sensitive=sensitive)
    _check_cells(sub.schema.sizes)
    _combinatorial_policy(combinatorial, sub.schema.sizes, None)  # refused before the search
    gen = generalize(
        sub, qi=qi, sensitive=sensitive, k=int(k), l=l, l_variant=l_variant, c=c if
        l_variant == "recursive" else None, hierarchies=hierarchies, dataset=dataset,
    )  # fmt: skip
    if gen.node is None:
        raise ParameterError("the generalization found no full-domain node")
    hier = hierarchies if not isinstance(hierarchies, str) else None
    if isinstance(hierarchies, str):
        from privlab.data.hierarchy import read_hierarchies

        hier = read_hierarchies(hierarchies)
    base = make_marginal(sub, names, [*gen.node, 0], hierarchies=hier, dataset=dataset)
    res = greedy_marginals(sub, base, sensitive=sensitive, k=int(k), l=l, l_variant=l_variant,
                           c=c, width=width, max_marginals=max_marginals, hierarchies=hier,
                           dataset=dataset, combinatorial=combinatorial)  # fmt: skip
    params = {
        "k": int(k), "l": l, "l_variant": l_variant, "width": width,
        "max_marginals": max_marginals,
    }  # fmt: skip
    # the KL path is measured on the input: the custodian's, never in release.json
    path = tuple(float(v) for v in res.kl_path)
    return MarginalsRelease(
        res.marginals,
        tuple(sub.schema.attributes),
        params=params,
        kl_path=path,
        custody=Custody(input_sha256=table.fingerprint(), input_measures={"kl_path": list(path)}),
    )
