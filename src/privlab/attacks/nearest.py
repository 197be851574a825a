"""A learning attack on a masked release: the sensitive value read from the released records
nearest to a person's true values (issue 35, item 6).

A masked release (:class:`privlab.publish.masking.MaskedRelease`) publishes each record's
masked numeric columns with its other columns unchanged, the sensitive one among them.  The
attacker knows the people's true values of the masked columns (the intruder of record
linkage, Domingo-Ferrer & Torra 2001) and learns, from the release alone, a classifier of
the sensitive value from the masked columns: the *k* nearest released records, their shares
of the sensitive values smoothed towards the release's own shares,

    P(s | x) = (#{j in N_k(x) : s_j = s} + a pi_s) / (k + a),

``N_k(x)`` the ``k`` released records nearest to ``x`` (Euclidean on the columns divided by
the release's standard deviations: the attacker has only the release), ``pi`` the release's
shares of the sensitive values and ``a`` (default 1) one pseudo-record of them.  The attacker
picks ``k`` from the release alone by leave-one-out log-loss (each released record
classified by its neighbours, itself left out), so nothing of the truth tunes the attack;
on a microaggregated release the choice lands near the group size, since a record's group
mates share its masked values exactly.

Then each person's posterior is this classifier applied to their true values.  Where the
masking is weak (small k, little noise), a person's nearest released record is their own,
which carries their sensitive value: the record linkage the report measures under identity
becomes an attribute disclosure here, and the share of people at risk counts it on the
same scale as privlab's other attacks (the report's at-risk rule, beyond what is known).

Ties at the *k*-th distance (a microaggregated group larger than *k*) are broken by the
k-d tree's order (scikit-learn's :class:`~sklearn.neighbors.KDTree`): the rows are published
in random order, so the pick is arbitrary and hides nothing.

Refused in one line: a release without a sensitive column kept unchanged, or people's
values of another shape than the masked columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from privlab.attacks.posterior import Posterior
from privlab.errors import ParameterError

#: the numbers of neighbours the attacker tries (those below the release's size)
CANDIDATES = (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 100)
#: the leave-one-out choice reads at most this many released records (an even stride)
LOO_ROWS = 20_000


def _scale(z: np.ndarray) -> np.ndarray:
    sd = z.std(axis=0, ddof=1) if z.shape[0] > 1 else np.ones(z.shape[1])
    return np.where(sd > 0, sd, 1.0)


def _counts(codes: np.ndarray, idx: np.ndarray, m: int, upto: int) -> np.ndarray:
    counts = np.zeros((idx.shape[0], m))
    rows = np.arange(idx.shape[0])
    for j in range(upto):
        np.add.at(counts, (rows, codes[idx[:, j]]), 1.0)
    return counts


def choose_neighbours(
    z: np.ndarray, codes: np.ndarray, m: int, *, candidates: Sequence[int] = CANDIDATES,
    prior_weight: float = 1.0,
) -> tuple[int, dict[int, float]]:  # fmt: skip
    """The number of neighbours of least leave-one-out log-loss on the release (``z`` the
    scaled masked values, ``codes`` the sensitive codes), and each candidate's log-loss.

    Every released record (or an even stride of :data:`LOO_ROWS` of them) is classified by
    its nearest other records; the record itself is left out even where others share its
    values (a microaggregated group)."""
    from sklearn.neighbors import KDTree

    n = z.shape[0]
    ks = sorted({int(c) for c in candidates if 1 <= int(c) <= n - 1})
    if not ks:
        return 1, {}
    rows = np.arange(n) if n <= LOO_ROWS else np.linspace(0, n - 1, LOO_ROWS).astype(np.int64)
    kmax = ks[-1]
    _, idx = KDTree(z).query(z[rows], k=kmax + 1)
    self_at = idx == rows[:, None]
    # drop the record itself where the tree returned it, else the farthest neighbour
    drop = np.where(self_at.any(axis=1), self_at.argmax(axis=1), kmax)
    keep = np.ones(idx.shape, dtype=bool)
    keep[np.arange(rows.size), drop] = False
    idx = idx[keep].reshape(rows.size, kmax)
    prior = np.bincount(codes, minlength=m)[:m] / n
    truth = codes[rows]
    loss: dict[int, float] = {}
    counts = np.zeros((rows.size, m))
    at = np.arange(rows.size)
    done = 0
    for k in ks:
        for j in range(done, k):
            np.add.at(counts, (at, codes[idx[:, j]]), 1.0)
        done = k
        p = (counts[at, truth] + prior_weight * prior[truth]) / (k + prior_weight)
        loss[k] = float(-np.mean(np.log(np.maximum(p, 1e-300))))
    best = min(ks, key=lambda k: (loss[k], k))
    return best, loss


def nearest_neighbour_attack(
    release: Any,
    people: Any = None,
    *,
    neighbours: int | None = None,
    prior_weight: float = 1.0,
) -> Posterior:
    """Each person's posterior of the release's sensitive value from the ``k`` released
    records nearest to their true values of the masked columns (module docstring).

    Parameters
    ----------
    release
        A :class:`~privlab.publish.masking.MaskedRelease` with a sensitive column.
    people
        ``(n, p)`` the people's true values of the masked columns, in the release's
        ``masked`` order.  Default: the custody's (each published row's person).
    neighbours
        ``k``; default: chosen by leave-one-out log-loss on the release.
    prior_weight
        ``a``: pseudo-records of the release's shares added to every neighbourhood (> 0).

    Returns
    -------
    Posterior
        One row per person; ``diagnostics`` holds ``k`` and each candidate's log-loss.
    """
    from sklearn.neighbors import KDTree

    schema = release.table.schema
    sensitive = schema.sensitive
    if sensitive is None:
        raise ParameterError(
            "the masked release has no sensitive column: there is no value to learn"
        )
    if people is None:
        people = release.truth_values()
        if people is None:
            raise ParameterError(
                "the attack needs the people's true values of the masked columns "
                "(give the custody directory)"
            )
    x = np.asarray(people, dtype=np.float64)
    p = len(release.masked)
    if x.ndim != 2 or x.shape[1] != p:
        raise ParameterError(f"people must be (n, {p}) values of {', '.join(release.masked)}")
    if not np.isfinite(x).all():
        raise ParameterError("people's values must be finite numbers")
    if not (isinstance(prior_weight, (int, float)) and prior_weight > 0):
        raise ParameterError(f"prior_weight must be > 0, got {prior_weight!r}")
    values = tuple(str(v) for v in schema[sensitive].domain)
    m = len(values)
    codes = release.table.column(sensitive).astype(np.int64)
    published = release.values()
    scale = _scale(published)
    z = published / scale
    n = z.shape[0]
    loss: dict[int, float] = {}
    if neighbours is None:
        k, loss = choose_neighbours(z, codes, m, prior_weight=prior_weight)
    else:
        if isinstance(neighbours, bool) or not isinstance(neighbours, (int, np.integer)):
            raise ParameterError(f"neighbours must be a whole number, got {neighbours!r}")
        k = int(neighbours)
        if not 1 <= k <= n:
            raise ParameterError(f"neighbours must lie in 1..{n} (the released records)")
    _, idx = KDTree(z).query(x / scale, k=k)
    prior = np.bincount(codes, minlength=m)[:m] / n
    probs = (_counts(codes, idx, m, k) + prior_weight * prior) / (k + prior_weight)
    return Posterior(
        probs=probs,
        group_id=np.arange(x.shape[0]),
        values=values,
        method="nearest",
        diagnostics={
            "neighbours": k,
            "chosen_by": "given" if neighbours is not None else "leave-one-out on the release",
            "loo_logloss": {str(c): v for c, v in loss.items()},
        },
        release_kind="masking",
        sensitive=sensitive,
        threat_model=(
            f"knows each person's true {', '.join(release.masked)} and reads their "
            f"{sensitive} from the {k} released record(s) nearest to them"
        ),
    )


def hamming_attack(release: Any, *, prior_weight: float = 1.0) -> Posterior:
    """The same attacker on a release of categorical masked columns (a medoid
    microaggregation, :attr:`MaskedRelease.categorical`): each person's posterior is the
    sensitive values of *every* released record at the least Hamming distance from their
    true combination (the number of masked columns in which they differ), smoothed by
    ``prior_weight`` pseudo-records of the release's shares.  With few columns, distances
    take few values and ties are the rule, so all tied records count rather than a chosen
    ``k`` (which would pick among them by row order).  Computed between distinct
    combinations: the cost grows with their numbers, not with ``n^2``."""
    sensitive = release.table.schema.sensitive
    if sensitive is None:
        raise ParameterError(
            "the masked release has no sensitive column: there is no value to learn"
        )
    people = release.truth_codes()
    if people is None:
        raise ParameterError(
            "the attack needs the people's true values of the masked columns "
            "(give the custody directory)"
        )
    if not (isinstance(prior_weight, (int, float)) and prior_weight > 0):
        raise ParameterError(f"prior_weight must be > 0, got {prior_weight!r}")
    values = tuple(str(v) for v in release.table.schema[sensitive].domain)
    m = len(values)
    codes = release.table.column(sensitive).astype(np.int64)
    pub = release.codes()
    um, inv = np.unique(pub, axis=0, return_inverse=True)
    inv = inv.ravel()
    per = np.zeros((um.shape[0], m))
    np.add.at(per, (inv, codes), 1.0)
    uq, inv_q = np.unique(people, axis=0, return_inverse=True)
    inv_q = inv_q.ravel()
    counts = np.empty((uq.shape[0], m))
    for lo in range(0, uq.shape[0], 256):
        d = (uq[lo : lo + 256, None, :] != um[None, :, :]).sum(axis=2)
        counts[lo : lo + 256] = (d == d.min(axis=1, keepdims=True)) @ per
    prior = np.bincount(codes, minlength=m)[:m] / codes.size
    probs = (counts + prior_weight * prior) / (counts.sum(axis=1, keepdims=True) + prior_weight)
    near = counts.sum(axis=1)
    return Posterior(
        probs=probs[inv_q],
        group_id=np.arange(people.shape[0]),
        values=values,
        method="nearest",
        diagnostics={
            "neighbours": "every record at the least Hamming distance",
            "median_neighbours": float(np.median(near[inv_q])),
        },
        release_kind="masking",
        sensitive=sensitive,
        threat_model=(
            f"knows each person's true {', '.join(release.masked)} and reads their "
            f"{sensitive} from the released records nearest to them (Hamming distance)"
        ),
    )


def prior_posterior(release: Any, n: int) -> np.ndarray:
    """The no-learning baseline: every person given the release's shares of the sensitive
    values."""
    sensitive = release.table.schema.sensitive
    m = len(release.table.schema[sensitive].domain)
    codes = release.table.column(sensitive).astype(np.int64)
    prior = np.bincount(codes, minlength=m)[:m] / codes.size
    return np.tile(prior, (n, 1))


__all__ = [
    "CANDIDATES", "choose_neighbours", "hamming_attack", "nearest_neighbour_attack",
    "prior_posterior",
]  # fmt: skip
