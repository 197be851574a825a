"""The membership attack on an alpha-beta view (Rastogi, Suciu & Hong 2007; Kifer 2009,
Sec. 7).

Threat model.  A *d-independent* adversary (Rastogi et al. Defn 2.2): every tuple ``t`` of
the public domain ``D`` is in the private instance ``I`` independently, with prior
``Pr[t] = p``.  It sees the view ``V`` and the public ``alpha``, ``beta`` and ``D``.
Because the algorithm keeps real tuples with probability ``alpha + beta`` and inserts every
other tuple with probability ``beta``, independently, the exact posterior of a published
tuple is (Bayes' rule; it depends on ``V`` only through ``t in V``)::

    Pr[t in I | t in V] = p (alpha + beta) / (p (alpha + beta) + (1 - p) beta)

computed by :func:`privlab.publish.alpha_beta.posterior` (through the release's
``membership_posterior``: the attacks see releases only through the ``Release`` base).
The release promises ``(d, gamma)``-privacy: at ``p = d`` this posterior is at most
``gamma``.  The attack reports it for every published tuple, beside ``gamma``.

The prior.  By default the release's own ``d`` (the worst prior its guarantee covers);
without one, the adversary's estimate of the share of real tuples, ``n~ / m`` with
``n~ = (|V| - beta m) / alpha`` the unbiased estimate of ``|I|`` (Rastogi et al. Sec. 4.2),
clipped to ``[0, 1]``.  A number, or one prior per published row (an adversary who knows
more about some tuples), may be given instead.

The posterior has two columns, ``0`` (an inserted tuple) and ``1`` (a real one), the coding
of the custody's ``real`` column, so that the custodian can judge it like any other attack;
its baseline is the prior.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privlab.attacks.posterior import Posterior
from privlab.errors import ParameterError, ReleaseError
from privlab.release.views import Membership

__all__ = ["THREAT_MODEL", "alphabeta_attack", "estimated_prior"]

THREAT_MODEL = (
    "a d-independent adversary: every domain tuple is real independently with the prior "
    "given; it sees the view and the public alpha, beta and domain, and computes the exact "
    "posterior Pr[t in I | t in V] = p(a+b) / (p(a+b) + (1-p) b) for each published tuple"
)
#: The posterior's columns: an inserted tuple, a real one (the custody's ``real`` coding).
VALUES = ("0", "1")


def _check(release: object) -> None:
    """Refuse anything but an alpha-beta view (the :class:`Membership` view)."""
    if getattr(release, "method", None) != "alphabeta" or not isinstance(release, Membership):
        kind = getattr(release, "method", type(release).__name__)
        raise ReleaseError(f"the membership attack needs an alpha-beta release, not a {kind!r} one")


def estimated_prior(release: Membership) -> float:
    """``n~ / m``: the unbiased estimate of ``|I|`` from the view, over the domain size,
    clipped to ``[0, 1]``."""
    _check(release)
    m = float(release.domain_size)
    n_hat = (float(release.n_rows) - release.beta * m) / release.alpha
    return float(min(max(n_hat / m, 0.0), 1.0))


def alphabeta_attack(release: Membership, *, prior: Any = None) -> Posterior:
    """The exact posterior that each published tuple of an alpha-beta view is real.

    Parameters
    ----------
    release
        An :class:`~privlab.publish.alpha_beta.AlphaBetaRelease`.
    prior
        The adversary's prior ``Pr[t in I]``: a number, or one per published row; default
        the release's ``d``, else :func:`estimated_prior`.

    Returns
    -------
    Posterior
        One row per published tuple (``group_id``: 0 for all, the view is one group), the
        columns ``0`` (inserted) and ``1`` (real).  ``diagnostics`` holds the prior, gamma,
        the largest posterior and the share of tuples whose posterior exceeds gamma.
    """
    _check(release)
    n = int(release.n_rows)
    if prior is None:
        if release.d is not None:
            p, source = float(release.d), "the release's d"
        else:
            p, source = estimated_prior(release), "estimated n~/m from the view"
        priors = np.full(n, p)
    else:
        source = "given"
        priors = np.asarray(prior, dtype=float)
        if priors.ndim == 0:
            priors = np.full(n, float(priors))
        elif priors.shape != (n,):
            raise ParameterError(
                f"give one prior, or one per published row ({n}), not {priors.size}"
            )
    post = np.asarray(release.membership_posterior(priors, True), dtype=float).reshape(n)
    probs = np.column_stack([1.0 - post, post])
    gamma = release.gamma
    d = release.d
    diag: dict[str, Any] = {
        "alpha": float(release.alpha),
        "beta": float(release.beta),
        "prior_source": source,
        "prior": float(priors[0]) if n and np.all(priors == priors[0]) else None,
        "d": d,
        "gamma": gamma,
        "published": n,
        "max_posterior": float(post.max()) if n else None,
        "mean_posterior": float(post.mean()) if n else None,
        "posterior_not_in_view": (
            float(release.membership_posterior(priors[0], False)) if n else None
        ),
    }
    if gamma is not None:
        diag["above_gamma"] = float(np.mean(post > gamma + 1e-12)) if n else 0.0
        diag["within_gamma"] = bool(n == 0 or post.max() <= gamma + 1e-12)
    return Posterior(
        probs=probs,
        group_id=np.zeros(n, dtype=np.int64),
        values=VALUES,
        method="membership",
        diagnostics=diag,
        release_kind="alphabeta",
        sensitive="real",
        threat_model=THREAT_MODEL,
    )
