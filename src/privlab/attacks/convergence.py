"""Convergence of the attacks' Markov chains, reported in plain words (never assumed).

A Markov-chain posterior is only as good as its chains' agreement.  privlab judges it with
the rank-normalized split R-hat and the bulk effective sample size of Vehtari, Gelman,
Simpson, Carpenter & Bürkner (2021, "Rank-normalization, folding, and localization: an
improved R-hat", Bayesian Analysis 16(2)), computed by ``arviz-stats`` (the ArviZ project's
statistics), on two kinds of trace:

* the collapsed log-likelihood of each iteration's assignment (one number per iteration);
* for a random sample of tracked people, the indicator that the current assignment gives
  them their pooled most probable value: the posteriors a custodian acts on (the "at-risk"
  people, whose top probability reaches 0.8, when any are tracked).

The chains are taken as converged when every R-hat is below :data:`R_HAT_LIMIT` (1.05, the
issue's and Vehtari et al.'s stricter 1.01 being out of reach of the trace lengths people
run) and the log-likelihood's bulk ESS reaches :data:`ESS_MIN`.  A tracked person whose
chains each stay on one value but disagree between chains has R-hat infinity: a mode the
chains do not leave.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

#: R-hat at or above this says the chains disagree (Vehtari et al. 2021 recommend < 1.01
#: for final results; 1.05 is the usual working limit).
R_HAT_LIMIT = 1.05
#: Smallest bulk effective sample size of the log-likelihood for a usable posterior
#: (Vehtari et al. 2021: 100 per chain for four chains).
ESS_MIN = 400.0


def split_rhat(traces: np.ndarray) -> float:
    """Rank-normalized split R-hat of ``(chains, draws)`` traces (nan when undefined).

    Traces that are constant within every chain but differ between chains give ``inf``.
    """
    x = np.asarray(traces, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 4:
        return float("nan")
    if np.all(x == x.flat[0]):
        return 1.0
    if np.all(x.std(axis=1) == 0):  # each chain stuck on its own value
        return float("inf")
    from arviz_stats.base import array_stats

    return float(array_stats.rhat(x, chain_axis=0, draw_axis=1, method="rank"))


def ess_bulk(traces: np.ndarray) -> float:
    """Bulk effective sample size of ``(chains, draws)`` traces (all draws when constant)."""
    x = np.asarray(traces, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 4:
        return float("nan")
    if np.all(x == x.flat[0]):
        return float(x.size)
    if np.all(x.std(axis=1) == 0):
        return 0.0
    from arviz_stats.base import array_stats

    return float(array_stats.ess(x, chain_axis=0, draw_axis=1, method="bulk"))


@dataclass(frozen=True)
class Convergence:
    """Diagnostics of one run of chains.

    Attributes
    ----------
    rhat_loglik, ess_loglik
        Rank-normalized split R-hat and bulk ESS of the collapsed log-likelihood.
    rhat_targets, ess_targets
        The largest R-hat and the smallest bulk ESS over the tracked people's indicators
        (those at risk when any tracked person is; nan when none is tracked).
    n_targets
        How many tracked people those two figures cover.
    chains, draws
        Chains and kept draws per chain.
    converged
        Every R-hat below :data:`R_HAT_LIMIT` and the log-likelihood's ESS at least
        :data:`ESS_MIN`.
    """

    rhat_loglik: float
    ess_loglik: float
    rhat_targets: float
    ess_targets: float
    n_targets: int
    chains: int
    draws: int
    converged: bool

    def to_dict(self) -> dict[str, object]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v)
                for k, v in asdict(self).items()}  # fmt: skip

    def message(self, method: str = "the attack") -> str:
        """One sentence, in plain words, on whether to trust the posterior."""
        figures = f"R-hat {self.rhat_loglik:.3f} on the log-likelihood"
        if not math.isnan(self.rhat_targets):
            figures += f", up to {self.rhat_targets:.3f} on {self.n_targets} tracked people"
        figures += f"; effective sample size {self.ess_loglik:.0f}"
        if self.converged:
            return f"{method}: the {self.chains} chains agree ({figures})"
        return (
            f"{method} has NOT converged: its {self.chains} chains disagree or are too short "
            f"({figures}; needed: R-hat < {R_HAT_LIMIT}, effective sample size >= "
            f"{ESS_MIN:.0f}), so its probabilities are not reliable: run more iterations "
            "or chains (or let it sample until converged)"
        )


def diagnose(
    loglik: np.ndarray,
    target_traces: np.ndarray | None = None,
    target_top: np.ndarray | None = None,
    at_risk: np.ndarray | None = None,
) -> Convergence:
    """Diagnose kept draws: ``loglik`` ``(chains, draws)``; ``target_traces``
    ``(chains, draws, K)`` values of tracked people, ``target_top`` ``(K,)`` their pooled
    most probable value, ``at_risk`` ``(K,)`` which of them are at risk (the figures then
    cover those only, when there are any)."""
    loglik = np.asarray(loglik, dtype=np.float64)
    chains, draws = loglik.shape
    r_ll, e_ll = split_rhat(loglik), ess_bulk(loglik)
    r_t, e_t, k = float("nan"), float("nan"), 0
    if target_traces is not None and target_traces.size and target_top is not None:
        ind = (np.asarray(target_traces) == np.asarray(target_top)[None, None, :]).astype(float)
        pick = np.arange(ind.shape[2])
        if at_risk is not None and np.any(at_risk):
            pick = np.flatnonzero(at_risk)
        rs = [split_rhat(ind[:, :, j]) for j in pick]
        es = [ess_bulk(ind[:, :, j]) for j in pick]
        rs = [r for r in rs if not math.isnan(r)]
        es = [e for e in es if not math.isnan(e)]
        k = int(pick.size)
        r_t = max(rs) if rs else float("nan")
        e_t = min(es) if es else float("nan")
    ok = (
        not math.isnan(r_ll)
        and r_ll < R_HAT_LIMIT
        and (math.isnan(r_t) or r_t < R_HAT_LIMIT)
        and e_ll >= ESS_MIN
    )
    return Convergence(r_ll, e_ll, r_t, e_t, k, int(chains), int(draws), bool(ok))
