"""Privacy measures of a partition of tuples into groups carrying sensitive values.

They apply to any partition: the QI-groups of an Anatomy release, the equivalence classes of
a generalized table.  Input is either per-tuple ``(groups, values)`` code arrays or the
``(n_groups, n_values)`` count matrix that :func:`group_value_counts` builds.

Definitions
-----------
* k-anonymity: the size of the smallest group (Sweeney 2002; seed 000 Ch. 1).
* distinct l-diversity: the smallest number of distinct sensitive values in a group.
* entropy l-diversity: ``min_g exp(H_g)`` with ``H_g`` the entropy (natural log) of group
  ``g``'s sensitive-value distribution (Machanavajjhala et al. 2006); a table is entropy
  l-diverse for every ``l`` up to this value.
* recursive (c,l)-diversity: with a group's counts sorted descending ``r_(1) >= r_(2) >= ...``,
  the group satisfies it when ``r_(1) <= c * sum_{i>=l} r_(i)`` (seed 001, Kifer & Gehrke
  Defn 2.5; Machanavajjhala et al. use a strict ``<``, privlab follows the seed).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from privlab.errors import ParameterError, PrivlabError


def group_value_counts(
    groups: np.ndarray, values: np.ndarray, n_values: int | None = None
) -> np.ndarray:
    """Count matrix ``C[g, v]`` = number of tuples of group ``g`` with sensitive code ``v``.

    Group labels may be any integers; they are compacted to ``0..G-1`` in ascending order.
    """
    groups = np.asarray(groups)
    values = np.asarray(values)
    if groups.shape != values.shape or groups.ndim != 1:
        raise PrivlabError("groups and values must be 1-d arrays of the same length")
    if groups.size == 0:
        raise PrivlabError("the partition is empty (0 tuples)")
    _, g = np.unique(groups, return_inverse=True)
    m = int(values.max()) + 1 if n_values is None else int(n_values)
    counts = np.zeros((int(g.max()) + 1, m), dtype=np.int64)
    np.add.at(counts, (g, values), 1)
    return counts


def k_anonymity(counts: np.ndarray) -> int:
    """The k of k-anonymity: the size of the smallest group."""
    return int(np.asarray(counts).sum(axis=1).min())


def distinct_l_diversity(counts: np.ndarray) -> int:
    """The smallest number of distinct sensitive values in any group."""
    return int((np.asarray(counts) > 0).sum(axis=1).min())


def entropy_l_diversity(counts: np.ndarray) -> float:
    """``min_g exp(H_g)``: the largest l for which the partition is entropy l-diverse."""
    c = np.asarray(counts, dtype=float)
    p = c / c.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=1)
    return float(np.exp(h).min())


def recursive_cl_diversity(counts: np.ndarray, c: float, l: int) -> bool:
    """Whether every group satisfies ``r_(1) <= c * sum_{i >= l} r_(i)``."""
    if not c > 0:
        raise ParameterError(f"c must be positive, got {c}")
    if l < 1:
        raise ParameterError(f"l must be at least 1, got {l}")
    r = -np.sort(-np.asarray(counts), axis=1)
    tail = r[:, l - 1 :].sum(axis=1)
    return bool(np.all(r[:, 0] <= c * tail))


def recursive_c(counts: np.ndarray, l: int) -> float:
    """The smallest c for which the partition is recursive (c,l)-diverse (inf if none)."""
    r = -np.sort(-np.asarray(counts), axis=1)
    tail = r[:, l - 1 :].sum(axis=1) if l - 1 < r.shape[1] else np.zeros(r.shape[0])
    if np.any(tail == 0):
        return float("inf")
    return float(np.max(r[:, 0] / tail))


def max_disclosure(counts: np.ndarray) -> float:
    """The random-worlds bound: the largest share of one value in one group (<= 1/l)."""
    c = np.asarray(counts, dtype=float)
    return float((c.max(axis=1) / c.sum(axis=1)).max())


@dataclass(frozen=True)
class PartitionPrivacy:
    """Summary of a partition's privacy measures (what ``privlab check`` prints)."""

    n_tuples: int
    n_groups: int
    k: int
    distinct_l: int
    entropy_l: float
    recursive_c: float
    max_disclosure: float

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


def partition_privacy(counts: np.ndarray) -> PartitionPrivacy:
    """All measures of a count matrix; ``recursive_c`` is for ``l = distinct_l``."""
    counts = np.asarray(counts)
    if counts.size == 0 or counts.sum() == 0:
        raise PrivlabError("the partition is empty (0 tuples)")
    counts = counts[counts.sum(axis=1) > 0]
    dl = distinct_l_diversity(counts)
    return PartitionPrivacy(
        n_tuples=int(counts.sum()),
        n_groups=int(counts.shape[0]),
        k=k_anonymity(counts),
        distinct_l=dl,
        entropy_l=entropy_l_diversity(counts),
        recursive_c=recursive_c(counts, dl),
        max_disclosure=max_disclosure(counts),
    )


# -- distribution-based models (issue 6): t-closeness, delta-disclosure ---------------------
def _class_and_overall(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-group distributions ``q`` and the table's ``p``, on values present in the table."""
    c = np.asarray(counts, dtype=float)
    c = c[c.sum(axis=1) > 0]
    if c.size == 0:
        raise PrivlabError("the partition is empty (0 tuples)")
    total = c.sum(axis=0)
    c = c[:, total > 0]
    p = total[total > 0] / total.sum()
    q = c / c.sum(axis=1, keepdims=True)
    return q, p


def emd_equal(counts: np.ndarray) -> np.ndarray:
    """Per-group EMD to the table's distribution with equal ground distance (Li et al. 2007):
    ``D[q, p] = 1/2 sum_i |q_i - p_i|`` (total variation)."""
    q, p = _class_and_overall(counts)
    return 0.5 * np.abs(q - p).sum(axis=1)


def emd_ordered(counts: np.ndarray) -> np.ndarray:
    """Per-group EMD with ordered distance (Li et al. 2007, numeric/ordinal values):
    ``D[q, p] = 1/(m-1) sum_i |sum_{j<=i} (q_j - p_j)|`` over the ``m`` values present in the
    table, in code order (ascending for numeric attributes)."""
    q, p = _class_and_overall(counts)
    m = p.size
    if m < 2:
        return np.zeros(q.shape[0])
    return np.abs(np.cumsum(q - p, axis=1)).sum(axis=1) / (m - 1)


def t_closeness(counts: np.ndarray, *, distance: str = "equal") -> float:
    """The t of t-closeness: the largest EMD of a group to the table (``equal`` / ``ordered``)."""
    if distance == "equal":
        return float(emd_equal(counts).max())
    if distance == "ordered":
        return float(emd_ordered(counts).max())
    raise ParameterError(f"distance must be 'equal' or 'ordered', not {distance!r}")


def delta_disclosure(counts: np.ndarray) -> float:
    """The smallest delta for which the partition is delta-disclosure private (Brickell &
    Shmatikov 2008, Defn 1; seed 001): ``max_{<t>, s} |log p(<t>, s) / p(T, s)|``.

    A value of the table absent from some group gives ``log 0``: the result is ``inf``
    (pyCANON skips such zeros; privlab follows the definition).
    """
    q, p = _class_and_overall(counts)
    with np.errstate(divide="ignore"):
        r = np.abs(np.log(q / p))
    return float(r.max())
