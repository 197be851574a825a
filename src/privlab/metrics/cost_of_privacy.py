"""Brickell & Shmatikov (KDD 2008), "The cost of privacy": sensitive-attribute
disclosure of a partition measured against trivial sanitization.

With ``p(U, s)`` the share of value ``s`` among tuples ``U``, ``T`` the table and ``<t>`` an
equivalence class:

* ``A_diff(<t>) = 1/2 sum_s |p(T, s) - p(<t>, s)|`` (total variation to the baseline);
* ``A_quot(<t>, s) = p(<t>, s) / p(T, s)`` (delta-disclosure bounds ``|log A_quot|``);
* ``A_know = 1/|T| sum_<t> |<t>| A_diff(<t>)`` (knowledge gain);
* ``A_acc = 1/|T| sum_<t> |<t>| p(<t>, s_max(<t>)) - p(T, s_max(T))`` (accuracy gain of the
  adversary who guesses each class's most common value over guessing the table's);
* ``GAIN(S, Q) = H(S) - H(S | Q)`` (the information gain of ID3 / C4.5, in nats: the mutual
  information of the sensitive value and the class), which Lemma 1 bounds: a
  delta-disclosure-private table has ``GAIN(S, Q) < delta`` (both with natural logarithms;
  ``GAIN = sum_<t> |<t>|/|T| KL(p(<t>, .) || p(T, .))`` and each KL is a mean of
  ``log p(<t>, s) / p(T, s) < delta``).

Utility is workload-specific: ``U_base`` (trivially sanitized data), ``U_san`` (sanitized),
``U_max`` (original); the gain is ``U_san - U_base`` (see the ``cost-of-privacy`` experiment).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from privlab.errors import PrivlabError
from privlab.metrics.privacy import class_emd_equal


def _dist(
    counts: np.ndarray, baseline: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    c = np.asarray(counts, dtype=float)
    c = c[c.sum(axis=1) > 0]
    if c.size == 0:
        raise PrivlabError("the partition is empty (0 tuples)")
    sizes = c.sum(axis=1)
    q = c / sizes[:, None]
    if baseline is None:
        p = c.sum(axis=0) / c.sum()
    else:
        p = np.asarray(baseline, dtype=float)
        if p.shape != (c.shape[1],):
            raise PrivlabError(f"baseline has shape {p.shape}, expected ({c.shape[1]},)")
        p = p / p.sum()
    return q, p, sizes


def a_diff(counts: np.ndarray, baseline: np.ndarray | None = None) -> np.ndarray:
    """``A_diff`` of every non-empty class (``baseline``: ``p(T, .)``, default the table's):
    the equal-distance EMD of t-closeness."""
    c = np.asarray(counts)
    c = c[c.sum(axis=1) > 0]
    if c.size == 0:
        raise PrivlabError("the partition is empty (0 tuples)")
    if baseline is not None and np.shape(baseline) != (c.shape[1],):
        raise PrivlabError(f"baseline has shape {np.shape(baseline)}, expected ({c.shape[1]},)")
    return class_emd_equal(c, baseline)


def a_quot(counts: np.ndarray, baseline: np.ndarray | None = None) -> np.ndarray:
    """``A_quot[<t>, s] = p(<t>, s) / p(T, s)`` (values absent from T give nan)."""
    q, p, _ = _dist(counts, baseline)
    with np.errstate(divide="ignore", invalid="ignore"):
        return q / p


def a_know(counts: np.ndarray, baseline: np.ndarray | None = None) -> float:
    """Knowledge gain ``A_know`` (size-weighted mean of ``A_diff``)."""
    c = np.asarray(counts)
    sizes = c[c.sum(axis=1) > 0].sum(axis=1)
    return float((sizes * a_diff(counts, baseline)).sum() / sizes.sum())


def a_acc(counts: np.ndarray, baseline: np.ndarray | None = None) -> float:
    """Adversarial accuracy gain ``A_acc``."""
    q, p, sizes = _dist(counts, baseline)
    return float((sizes * q.max(axis=1)).sum() / sizes.sum() - p.max())


def information_gain(counts: np.ndarray) -> float:
    """``GAIN(S, Q) = H(S) - H(S | Q)`` in nats for the ``(G, m)`` count matrix of a partition
    (Brickell & Shmatikov 2008, Lemma 1; ID3's information gain of splitting on the class).

    Computed as ``sum_g w_g KL(q_g || p)`` with ``w_g = |g| / n``, ``q_g`` the class's and
    ``p`` the table's distribution of the sensitive value (equal to ``H(S) - H(S | Q)``).
    """
    q, p, sizes = _dist(counts, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(q > 0, q * np.log(q / p), 0.0)
    return float(max((sizes / sizes.sum()) @ terms.sum(axis=1), 0.0))


@dataclass(frozen=True)
class CostOfPrivacy:
    """Brickell-Shmatikov disclosure measures of a partition."""

    a_know: float
    a_acc: float
    max_a_diff: float
    max_log_a_quot: float
    #: ``GAIN(S, Q)`` in nats (:func:`information_gain`; < ``max_log_a_quot`` by Lemma 1).
    gain: float = 0.0

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def cost_of_privacy(counts: np.ndarray, baseline: np.ndarray | None = None) -> CostOfPrivacy:
    """All measures; ``max_log_a_quot`` is the delta of delta-disclosure (inf if a value of
    ``T`` is absent from a class)."""
    quot = a_quot(counts, baseline)
    present = np.isfinite(quot).all(axis=0)
    with np.errstate(divide="ignore"):
        lq = np.abs(np.log(quot[:, present]))
    return CostOfPrivacy(
        a_know=a_know(counts, baseline),
        a_acc=a_acc(counts, baseline),
        max_a_diff=float(a_diff(counts, baseline).max()),
        max_log_a_quot=float(lq.max()) if lq.size else 0.0,
        gain=information_gain(counts),
    )
