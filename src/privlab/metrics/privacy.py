"""Privacy measures of a release: the only copy of the per-class privacy maths.

Everything here works on the ``(G, m)`` count matrix ``C[g, v]`` of a partition (the
QI-groups of an Anatomy release, the equivalence classes of a generalized table;
:func:`~privlab.data.counts.group_counts` builds it).  The ``class_*`` functions are
vectorized over classes and are used both by the lattice search's requirements
(:class:`~privlab.publish.models.PrivacyModel`) and by the summaries that ``privlab check``
prints, so the two can never disagree.

Definitions
-----------
* k-anonymity: the size of the smallest class (Sweeney 2002).
* distinct l-diversity: the smallest number of distinct sensitive values in a class.
* entropy l-diversity: ``min_g exp(H_g)`` with ``H_g`` the entropy (natural log) of class
  ``g``'s sensitive-value distribution (Machanavajjhala et al. 2006); a table is entropy
  l-diverse for every ``l`` up to this value.
* recursive (c,l)-diversity: with a class's counts sorted descending ``r_(1) >= r_(2) >= ...``,
  the class satisfies it when ``r_(1) <= c * sum_{i>=l} r_(i)`` (Kifer & Gehrke 2006, Defn
  2.5; Machanavajjhala et al. use a strict ``<``, privlab follows Kifer & Gehrke).
* t-closeness: the earth mover's distance of a class's distribution to the table's, with
  equal ground distance (total variation) or ordered distance over the values present in the
  table (Li et al. 2007).
* delta-disclosure: ``max_{<t>, s} |log p(<t>, s) / p(T, s)|`` over the values of the table
  (Brickell & Shmatikov 2008, Defn 1); a value absent from a class gives ``inf``.

The reference distribution ``p(T, .)`` is the partition's own unless given (the lattice
search passes the *input* table's, as ARX and Brickell & Shmatikov do: with suppression the
two differ).

:func:`privacy_report` assembles the one :class:`PrivacyReport` every release kind returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from privlab._frames import ToFrames
from privlab.data.counts import distinct_rows, group_counts, row_blocks
from privlab.data.partition import Partition
from privlab.data.table import Table
from privlab.errors import ParameterError, PrivlabError
from privlab.metrics.risk import DEFAULT_THRESHOLD, prosecutor_risk, unique_share

#: A kept column that on its own makes more than this share of rows unique is flagged.
UNIQUE_FLAG = 0.05
_EPS = 1e-12

__all__ = [
    "UNIQUE_FLAG",
    "PrivacyReport",
    "class_delta",
    "class_distinct_l",
    "class_emd_equal",
    "class_emd_ordered",
    "class_entropy_l",
    "class_recursive_c",
    "class_recursive_ok",
    "delta_disclosure",
    "distinct_l_diversity",
    "emd_equal",
    "emd_ordered",
    "entropy_l_diversity",
    "group_counts",
    "k_anonymity",
    "max_disclosure",
    "privacy_report",
    "recursive_c",
    "recursive_cl_diversity",
    "t_closeness",
]


# -- per class (vectorized over the rows of the count matrix) ---------------------------------
def _shares(counts: np.ndarray) -> np.ndarray:
    c = np.asarray(counts, dtype=float)
    return c / np.maximum(c.sum(axis=1, keepdims=True), 1.0)


def _reference(counts: np.ndarray, overall: np.ndarray | None) -> np.ndarray:
    """The reference distribution: ``overall`` (normalized unless it already sums to 1), or
    the partition's own."""
    p = np.asarray(counts, dtype=float).sum(axis=0) if overall is None else overall
    p = np.asarray(p, dtype=float)
    if p.shape != (np.shape(counts)[1],) or p.sum() <= 0:
        raise PrivlabError(f"the reference distribution must have {np.shape(counts)[1]} entries")
    total = p.sum()
    return p if abs(total - 1.0) <= 1e-12 else p / total


def class_distinct_l(counts: np.ndarray) -> np.ndarray:
    """Distinct sensitive values of each class."""
    return (np.asarray(counts) > 0).sum(axis=1)


def class_entropy_l(counts: np.ndarray) -> np.ndarray:
    """``exp(H_g)`` of each class (natural log)."""
    q = _shares(counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(q > 0, q * np.log(q), 0.0).sum(axis=1)
    return np.exp(h)


def _sorted_desc(counts: np.ndarray) -> np.ndarray:
    return -np.sort(-np.asarray(counts, dtype=float), axis=1)


def class_recursive_ok(counts: np.ndarray, c: float, l: int) -> np.ndarray:
    """Whether each class satisfies ``r_(1) <= c * sum_{i >= l} r_(i)``."""
    r = _sorted_desc(counts)
    return r[:, 0] <= c * r[:, int(l) - 1 :].sum(axis=1) + _EPS


def class_recursive_c(counts: np.ndarray, l: int) -> np.ndarray:
    """The smallest c for which each class is recursive (c,l)-diverse (inf when none)."""
    r = _sorted_desc(counts)
    tail = r[:, int(l) - 1 :].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(tail > 0, r[:, 0] / np.where(tail > 0, tail, 1.0), np.inf)


def class_emd_equal(counts: np.ndarray, overall: np.ndarray | None = None) -> np.ndarray:
    """EMD with equal ground distance (total variation) of each class to the reference:
    ``1/2 sum_v |q_v - p_v|`` (Li et al. 2007; Brickell & Shmatikov's ``A_diff``)."""
    return 0.5 * np.abs(_shares(counts) - _reference(counts, overall)).sum(axis=1)


def class_emd_ordered(counts: np.ndarray, overall: np.ndarray | None = None) -> np.ndarray:
    """EMD with ordered ground distance (Li et al. 2007, numeric or ordinal values):
    ``1/(m-1) sum_i |sum_{j<=i} (q_j - p_j)|`` over the ``m`` values present in the
    reference, in code order."""
    p = _reference(counts, overall)
    present = p > 0
    m = int(present.sum())
    if m < 2:
        return np.zeros(np.shape(counts)[0])
    q = _shares(counts)[:, present]
    return np.abs(np.cumsum(q - p[present], axis=1)).sum(axis=1) / (m - 1)


def class_delta(counts: np.ndarray, overall: np.ndarray | None = None) -> np.ndarray:
    """``max_v |log q_v / p_v|`` of each class over the values present in the reference
    (``inf`` when such a value is absent from the class)."""
    p = _reference(counts, overall)
    present = p > 0
    with np.errstate(divide="ignore"):
        return np.abs(np.log(_shares(counts)[:, present] / p[present])).max(axis=1)


def class_max_share(counts: np.ndarray) -> np.ndarray:
    """The largest share of one value in each class (the random-worlds disclosure)."""
    return _shares(counts).max(axis=1)


# -- summaries of a partition ------------------------------------------------------------------
def _nonempty(counts: np.ndarray) -> np.ndarray:
    """The rows of ``counts`` with at least one tuple (``counts`` itself, not a copy, when
    every row has one)."""
    c = np.asarray(counts)
    if c.ndim != 2 or c.size == 0:
        raise PrivlabError("the partition is empty (0 tuples)")
    filled = c.sum(axis=1) > 0
    if not filled.any():
        raise PrivlabError("the partition is empty (0 tuples)")
    return c if filled.all() else c[filled]


def k_anonymity(counts: np.ndarray) -> int:
    """The k of k-anonymity: the size of the smallest group."""
    return int(_nonempty(counts).sum(axis=1).min())


def distinct_l_diversity(counts: np.ndarray) -> int:
    """The smallest number of distinct sensitive values in any group."""
    return int(class_distinct_l(_nonempty(counts)).min())


def entropy_l_diversity(counts: np.ndarray) -> float:
    """``min_g exp(H_g)``: the largest l for which the partition is entropy l-diverse."""
    return float(class_entropy_l(_nonempty(counts)).min())


def recursive_cl_diversity(counts: np.ndarray, c: float, l: int) -> bool:
    """Whether every group satisfies ``r_(1) <= c * sum_{i >= l} r_(i)``."""
    if not c > 0:
        raise ParameterError(f"c must be positive, got {c}")
    if l < 1:
        raise ParameterError(f"l must be at least 1, got {l}")
    return bool(class_recursive_ok(_nonempty(counts), c, l).all())


def recursive_c(counts: np.ndarray, l: int) -> float:
    """The smallest c for which the partition is recursive (c,l)-diverse (inf if none)."""
    return float(class_recursive_c(_nonempty(counts), l).max())


def max_disclosure(counts: np.ndarray) -> float:
    """The random-worlds bound: the largest share of one value in one group (<= 1/l)."""
    return float(class_max_share(_nonempty(counts)).max())


def emd_equal(counts: np.ndarray) -> np.ndarray:
    """Per-group EMD (equal distance) to the partition's own distribution."""
    return class_emd_equal(_nonempty(counts))


def emd_ordered(counts: np.ndarray) -> np.ndarray:
    """Per-group EMD (ordered distance) to the partition's own distribution."""
    return class_emd_ordered(_nonempty(counts))


def t_closeness(counts: np.ndarray, *, distance: str = "equal") -> float:
    """The t of t-closeness: the largest EMD of a group to the table (``equal`` / ``ordered``)."""
    if distance == "equal":
        return float(emd_equal(counts).max())
    if distance == "ordered":
        return float(emd_ordered(counts).max())
    raise ParameterError(f"distance must be 'equal' or 'ordered', not {distance!r}")


def delta_disclosure(counts: np.ndarray) -> float:
    """The smallest delta for which the partition is delta-disclosure private.

    A value of the table absent from some group gives ``log 0``: the result is ``inf``
    (pyCANON skips such zeros; privlab follows the definition).
    """
    return float(class_delta(_nonempty(counts)).max())


# -- the report every release returns ----------------------------------------------------------
@dataclass(frozen=True)
class PrivacyReport(ToFrames):
    """The privacy of a published release: the same measures for every kind of release.

    *Identity disclosure* is measured over every published non-sensitive column
    (``linkable``: the quasi-identifiers and every column kept unchanged), as pyCANON and
    ARX's prosecutor model would: ``k`` is the smallest number of published rows sharing
    one combination of those values, ``uniques`` the share of rows alone with theirs.
    *Attribute disclosure* is measured over the release's partition (Anatomy's groups, a
    generalized table's classes); a release without one (PRAM) leaves those fields None and
    reports its own measures in ``details``.

    ``flagged`` lists each kept column that on its own makes more than 5% of the rows
    unique, with that share: publishing it defeats the generalization of the others.
    """

    method: str
    n_rows: int
    linkable: tuple[str, ...]
    n_classes: int
    k: int
    uniques: float
    max_risk: float
    mean_risk: float
    share_above_risk: float
    risk_threshold: float
    partition: str | None = None
    n_groups: int | None = None
    min_group: int | None = None
    distinct_l: int | None = None
    entropy_l: float | None = None
    recursive_c: float | None = None
    t_equal: float | None = None
    t_ordered: float | None = None
    delta: float | None = None
    max_disclosure: float | None = None
    a_know: float | None = None
    a_acc: float | None = None
    flagged: tuple[tuple[str, float], ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["linkable"] = list(self.linkable)
        d["flagged"] = dict(self.flagged)
        return d

    def measures(self) -> dict[str, Any]:
        """The scalar measures (no lists, no details), in a stable order."""
        skip = {"linkable", "flagged", "details"}
        return {k: v for k, v in self.to_dict().items() if k not in skip and v is not None}

    def to_pandas(self) -> Any:
        """A two-column DataFrame: ``measure``, ``value``."""
        import pandas as pd

        rows = list(self.measures().items())
        rows += [(f"flagged: {c}", share) for c, share in self.flagged]
        return pd.DataFrame(rows, columns=["measure", "value"])

    def warnings(self) -> list[str]:
        """Plain-language findings a custodian must act on."""
        out = [
            f"kept column {c!r} alone makes {share:.1%} of the published rows unique: "
            "generalize it, declare it a quasi-identifier, or do not publish it"
            for c, share in self.flagged
        ]
        if self.k == 1 and self.uniques > 0:
            count = round(self.uniques * self.n_rows)
            out.append(
                f"{count} of the {self.n_rows} published rows ({self.uniques:.2%}) are unique "
                f"on the published non-sensitive columns ({', '.join(self.linkable)})"
            )
        return out


def privacy_report(
    method: str,
    linkable: Table,
    partition: Partition | None = None,
    *,
    kept: Sequence[str] = (),
    threshold: float = DEFAULT_THRESHOLD,
    details: Mapping[str, Any] | None = None,
) -> PrivacyReport:
    """The :class:`PrivacyReport` of a release.

    Parameters
    ----------
    method
        The release's method (``anatomy``, ``generalization``, ``pram``, ...).
    linkable
        The published non-sensitive columns, one row per published row.
    partition
        The release's partition with its sensitive counts, or None.
    kept
        The columns of ``linkable`` kept unchanged (checked for uniqueness on their own).
    threshold
        Prosecutor-risk threshold for ``share_above_risk``.
    details
        Method-specific measures, reported as they are.
    """
    n = linkable.n_rows
    if n == 0:
        raise PrivlabError("the release is empty (0 rows)")
    _, _, sizes = distinct_rows(linkable.codes, linkable.schema.sizes)
    risk = prosecutor_risk(sizes, threshold=threshold)
    flagged = []
    for c in kept:
        share = unique_share(linkable.column(c))
        if share > UNIQUE_FLAG:
            flagged.append((c, share))
    base: dict[str, Any] = dict(
        method=method,
        n_rows=n,
        linkable=tuple(linkable.names),
        n_classes=int(sizes.size),
        k=int(sizes.min()),
        uniques=float(sizes[sizes == 1].sum() / n),
        max_risk=risk.max_risk,
        mean_risk=risk.mean_risk,
        share_above_risk=risk.share_above,
        risk_threshold=risk.threshold,
        flagged=tuple(flagged),
        details=dict(details or {}),
    )
    if partition is None:
        return PrivacyReport(**base)
    return PrivacyReport(**base, **_partition_measures(partition))


def _partition_measures(partition: Partition) -> dict[str, Any]:
    """The attribute-disclosure fields of :class:`PrivacyReport`, computed block by block
    (:func:`_row_blocks`) with the same ``class_*`` functions as the lattice search.

    ``A_know`` and ``A_acc`` (Brickell & Shmatikov 2008) are the size-weighted means of
    :func:`class_emd_equal` and :func:`class_max_share` against the partition's own
    distribution, as :func:`~privlab.metrics.cost_of_privacy.a_know` and
    :func:`~privlab.metrics.cost_of_privacy.a_acc` compute them on the whole matrix.
    """
    counts = _nonempty(partition.counts)
    overall = counts.sum(axis=0).astype(float)
    p = overall / overall.sum()
    dl = min(int(class_distinct_l(b).min()) for b in row_blocks(counts))
    min_group, n = np.inf, 0.0
    entropy_l, rec_c, t_eq, t_ord, delta, top, know, acc = (
        np.inf, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    )  # fmt: skip
    for b in row_blocks(counts):
        sizes = b.sum(axis=1).astype(float)
        min_group = min(min_group, sizes.min())
        n += sizes.sum()
        entropy_l = min(entropy_l, float(class_entropy_l(b).min()))
        rec_c = max(rec_c, float(class_recursive_c(b, dl).max()))
        emd = class_emd_equal(b, p)
        t_eq = max(t_eq, float(emd.max()))
        know += float((sizes * emd).sum())
        t_ord = max(t_ord, float(class_emd_ordered(b, p).max()))
        delta = max(delta, float(class_delta(b, p).max()))
        share = class_max_share(b)
        top = max(top, float(share.max()))
        acc += float((sizes * share).sum())
    return dict(
        partition=partition.kind,
        n_groups=int(counts.shape[0]),
        min_group=int(min_group),
        distinct_l=dl,
        entropy_l=entropy_l,
        recursive_c=rec_c,
        t_equal=t_eq,
        t_ordered=t_ord,
        delta=delta,
        max_disclosure=top,
        a_know=know / n,
        a_acc=acc / n - float(p.max()),
    )
