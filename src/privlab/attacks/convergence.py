"""Convergence of the attacks' Markov chains, reported in plain words (never assumed).

A Markov-chain posterior is only as good as its chains' agreement.  privlab judges it with
the rank-normalized split R-hat and the bulk effective sample size of Vehtari, Gelman,
Simpson, Carpenter & Bürkner (2021, "Rank-normalization, folding, and localization: an
improved R-hat", Bayesian Analysis 16(2)), computed by ``arviz-stats`` (the ArviZ project's
statistics), on two kinds of trace:

* the collapsed log-likelihood of each iteration's assignment (one number per iteration);
* for a random sample of tracked people (all of them, at risk or not), the indicator that
  the current assignment gives them their pooled most probable value;

and, beside R-hat, on the chains' agreement on each tracked person's most probable value
(:func:`top_agreement`): the posteriors a custodian acts on are argmaxes, and chains sitting
in different modes name different ones.

The chains are taken as converged when every R-hat is below :data:`R_HAT_LIMIT` (1.05, the
issue's and Vehtari et al.'s stricter 1.01 being out of reach of the trace lengths people
run), the log-likelihood's bulk ESS reaches :data:`ESS_MIN` and no tracked person's chains
name different top values whose probabilities differ by :data:`TOP_SPREAD_LIMIT` or more.
A tracked person whose chains each stay on one value but disagree between chains has R-hat
infinity: a mode the chains do not leave.

Every tracked person is judged, not only those at risk: on a release whose posterior has
symmetric modes (each of several blocks of people can be explained two mirror-image ways
equally well), chains that settle in different modes leave the pooled posterior of the
people they disagree on at 0.5 or 0.75, below the at-risk level, while the people of the
blocks they happen to agree on reach it.  Judged on the at-risk people alone, 7 of 8 seeds
of such a release passed as converged with posteriors 0.5 off (issue 29, part 8;
``tests/test_convergence.py``); the log-likelihood cannot see it, since mirror modes have
the same likelihood.
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
#: Chains whose own most probable values for a person differ, and whose probabilities of
#: those values differ by at least this much, sit in different modes (:func:`top_agreement`).
TOP_SPREAD_LIMIT = 0.2


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

    # a split half that never moves makes the folded (tail) part divide 0 by 0; the bulk
    # part still measures the disagreement, and the result is their maximum
    with np.errstate(invalid="ignore", divide="ignore"):
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

    with np.errstate(invalid="ignore", divide="ignore"):
        return float(array_stats.ess(x, chain_axis=0, draw_axis=1, method="bulk"))


def top_agreement(target_traces: np.ndarray, n_values: int | None = None) -> tuple[int, float]:
    """How far the chains disagree on each tracked person's most probable value.

    ``target_traces`` ``(chains, draws, K)`` holds the values each chain drew for ``K``
    tracked people.  For each person, every chain's own most probable value (the argmax of
    its share of draws) is found; the person's *spread* is the largest difference, over
    those values, between two chains' shares of it.  Chains that sit in different modes
    give a person different top values with a spread near 1; chains that mix give a spread
    of Monte Carlo size only (and differ in argmax only where the top is a near tie).

    Returns
    -------
    disagree, spread
        How many people have chains whose top values differ with a spread of at least
        :data:`TOP_SPREAD_LIMIT`, and the largest spread over all people (0 with one chain).
    """
    x = np.asarray(target_traces)
    chains, draws, k = x.shape
    if chains < 2 or draws == 0 or k == 0:
        return 0, 0.0
    m = int(n_values if n_values is not None else x.max() + 1)
    # share[c, j, v]: the share of chain c's draws that give person j the value v
    idx = (np.arange(k)[None, None, :] * m + x).reshape(chains, -1)
    share = np.stack([np.bincount(row, minlength=k * m) for row in idx]).reshape(chains, k, m)
    share = share / draws
    top = share.argmax(axis=2)  # (chains, K): each chain's own top value
    # spread of each chain-top value across the chains: max_c' share - min_c' share
    at_top = np.take_along_axis(share, top.T[None, :, :].repeat(chains, axis=0), axis=2)
    spread = (at_top.max(axis=0) - at_top.min(axis=0)).max(axis=1)  # (K,)
    differs = np.any(top != top[:1], axis=0)
    disagree = int(np.count_nonzero(differs & (spread >= TOP_SPREAD_LIMIT)))
    return disagree, float(spread.max())


@dataclass(frozen=True)
class Convergence:
    """Diagnostics of one run of chains.

    Attributes
    ----------
    rhat_loglik, ess_loglik
        Rank-normalized split R-hat and bulk ESS of the collapsed log-likelihood.
    rhat_targets, ess_targets
        The largest R-hat and the smallest bulk ESS over every tracked person's indicator
        of their pooled top value (nan when none is tracked).
    n_targets
        How many tracked people those figures cover (all of them).
    chains, draws
        Chains and kept draws per chain.
    converged
        Every R-hat below :data:`R_HAT_LIMIT`, the log-likelihood's ESS at least
        :data:`ESS_MIN` and no tracked person whose chains disagree on the top value
        (``top_disagree == 0``).
    top_disagree, top_spread
        Tracked people whose chains name different top values by at least
        :data:`TOP_SPREAD_LIMIT` in probability, and the largest such spread
        (:func:`top_agreement`).
    n_at_risk
        Tracked people at risk in the pooled posterior (top probability >= 0.8); reported,
        no longer the only ones judged.
    """

    rhat_loglik: float
    ess_loglik: float
    rhat_targets: float
    ess_targets: float
    n_targets: int
    chains: int
    draws: int
    converged: bool
    top_disagree: int = 0
    top_spread: float = float("nan")
    n_at_risk: int = 0

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
        modes = ""
        if self.top_disagree:
            modes = (
                f"; the chains name different most probable values for {self.top_disagree} "
                f"of {self.n_targets} tracked people (their probabilities differ by up to "
                f"{self.top_spread:.2f}: the chains sit in different modes)"
            )
        return (
            f"{method} has NOT converged: its {self.chains} chains disagree or are too short "
            f"({figures}{modes}; needed: R-hat < {R_HAT_LIMIT}, effective sample size >= "
            f"{ESS_MIN:.0f}, the same top value in every chain), so its probabilities are not "
            "reliable: run more iterations or chains (or let it sample until converged)"
        )


def diagnose(
    loglik: np.ndarray,
    target_traces: np.ndarray | None = None,
    target_top: np.ndarray | None = None,
    at_risk: np.ndarray | None = None,
    n_values: int | None = None,
) -> Convergence:
    """Diagnose kept draws.

    Parameters
    ----------
    loglik
        ``(chains, draws)`` collapsed log-likelihood.
    target_traces
        ``(chains, draws, K)`` values drawn for ``K`` tracked people.
    target_top
        ``(K,)`` their pooled most probable value: R-hat and ESS of the indicator that a
        draw gives it, over **every** tracked person.
    at_risk
        ``(K,)`` which of them are at risk (only counted: chains stuck in different modes
        leave the pooled posterior of the people they disagree on below the at-risk level,
        so judging the at-risk people alone passes them; issue 29, part 8).
    n_values
        The number of sensitive values (default: the largest traced value + 1).
    """
    loglik = np.asarray(loglik, dtype=np.float64)
    chains, draws = loglik.shape
    r_ll, e_ll = split_rhat(loglik), ess_bulk(loglik)
    r_t, e_t, k, disagree, spread = float("nan"), float("nan"), 0, 0, float("nan")
    if target_traces is not None and target_traces.size and target_top is not None:
        traces = np.asarray(target_traces)
        ind = (traces == np.asarray(target_top)[None, None, :]).astype(float)
        rs = [split_rhat(ind[:, :, j]) for j in range(ind.shape[2])]
        es = [ess_bulk(ind[:, :, j]) for j in range(ind.shape[2])]
        rs = [r for r in rs if not math.isnan(r)]
        es = [e for e in es if not math.isnan(e)]
        k = int(ind.shape[2])
        r_t = max(rs) if rs else float("nan")
        e_t = min(es) if es else float("nan")
        disagree, spread = top_agreement(traces, n_values)
    ok = (
        not math.isnan(r_ll)
        and r_ll < R_HAT_LIMIT
        and (math.isnan(r_t) or r_t < R_HAT_LIMIT)
        and e_ll >= ESS_MIN
        and disagree == 0
    )
    n_risk = int(np.count_nonzero(at_risk)) if at_risk is not None else 0
    return Convergence(
        r_ll, e_ll, r_t, e_t, k, int(chains), int(draws), bool(ok), disagree, spread, n_risk
    )
