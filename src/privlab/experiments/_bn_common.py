"""Shared helpers of the Ch. 5 reproductions: uniform randomization, CPT distances."""

from __future__ import annotations

import numpy as np

from privlab.learn.bayesnet import BayesianNetwork
from privlab.learn.pram_bn import PramData
from privlab.publish.randomization import binary_symmetric_matrix, randomize_codes


def uniform_release(net: BayesianNetwork, codes: np.ndarray, p: float, rng) -> PramData:
    """Every variable randomized independently by binary symmetric ``p`` (data-miner case)."""
    m = binary_symmetric_matrix(p)
    y = np.column_stack([randomize_codes(codes[:, i], m, rng) for i in range(codes.shape[1])])
    sizes = [net.cardinality(n) for n in net.nodes]
    return PramData.from_codes(y, dict.fromkeys(net.nodes, m), names=net.nodes, sizes=sizes)


def original_data(net: BayesianNetwork, codes: np.ndarray) -> PramData:
    return PramData.from_codes(
        codes, names=net.nodes, sizes=[net.cardinality(n) for n in net.nodes]
    )


def conditional_kl(
    p0: np.ndarray, pp: np.ndarray, weights: np.ndarray, floor: float = 1e-6
) -> float:
    """Ma Sec. 5.6.3's CKL: ``sum_j P(pa = j) KL(P0(X | j) || Pp(X | j))`` (nats).

    ``Pp`` is floored at ``floor`` (and renormalized) so that a clipped zero does not make
    the divergence infinite; the thesis does not say what it did.
    """
    q = np.maximum(pp, floor)
    q = q / q.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(p0 > 0, p0 * np.log(p0 / q), 0.0)
    return float(np.sum(weights * t.sum(axis=1)))


def joint_kl(p: np.ndarray, q: np.ndarray, floor: float = 1e-12) -> float:
    """KL(p || q) of two joint distributions (nats), ``q`` floored at ``floor``."""
    q = np.maximum(q, floor)
    q = q / q.sum()
    pos = p > 0
    return float(np.sum(p[pos] * np.log(p[pos] / q[pos])))
