"""The deFinetti attack on Anatomy (Kifer, SIGMOD 2009, Sec. 5.1, Algorithms 1-2).

The attacker models the joint distribution of QI and sensitive values with Naive Bayes
(Eq. 1) under a Dirichlet prior (uniform by default: an ignorant attacker willing to learn)
and computes ``P(t.S = s | T)`` (Eq. 2) by Markov chain Monte Carlo:

1. Start from a uniformly random within-group permutation (Knuth shuffle; Alg. 1 line 1).
2. Gibbs outer loop: treating the current permutation as the truth, draw the Naive-Bayes
   parameters from their Dirichlet posteriors (Eqs. 4 and 5); then draw a new permutation of
   every group from Eq. 6, whose per-group factor is Eq. 7.  Groups of at most ``exact_max``
   tuples are drawn exactly by enumerating their permutations (as Kifer did for sizes 2-4);
   larger groups run ``inner`` Metropolis-Hastings steps with Knuth-shuffle proposals
   (Algorithm 2).
3. After the burn-in (default: half the iterations, as in Alg. 1 line 8) each kept
   permutation votes; a tuple's posterior is the share of kept samples giving it each value.

Several chains start from independent random permutations; the pooled posterior averages
them.  Convergence diagnostics: the Gelman-Rubin R-hat of the collapsed log-likelihood trace
(``log P(QIT, assignment)`` with the parameters integrated out) across chains.

The sampler is a numba kernel working on distinct QI combinations (scores are computed once
per combination per iteration), with CSR group offsets and a precomputed permutation table.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from privlab._progress import track
from privlab._rng import RngLike, as_generator
from privlab.attacks._kernels import gibbs_run, shuffle_within_groups
from privlab.attacks._layout import Layout, layout_of, permutation_table, values_of
from privlab.attacks.posterior import Posterior
from privlab.errors import ParameterError
from privlab.metrics.calibration import abs_error, accuracy

_BLOCK = 500  # iterations per kernel call (progress-bar granularity)


@dataclass(frozen=True, eq=False)
class DefinettiRun:
    """A deFinetti attack's pooled posterior plus its per-chain material.

    Attributes
    ----------
    posterior
        Pooled over all chains.
    chain_probs
        ``(chains, n_rows, n_values)`` per-chain posteriors (float32), or None when not kept.
    loglik
        ``(chains, iterations)`` collapsed log-likelihood trace.
    rhat
        Gelman-Rubin potential scale reduction of the kept part of ``loglik`` (nan for 1 chain).
    seconds
        Wall time of the sampling.
    """

    posterior: Posterior
    loglik: np.ndarray
    rhat: float
    seconds: float
    chain_probs: np.ndarray | None = field(default=None, repr=False)


def gelman_rubin(traces: np.ndarray) -> float:
    """Gelman-Rubin R-hat of ``(chains, n)`` traces (nan with fewer than 2 chains or n < 2)."""
    traces = np.asarray(traces, dtype=np.float64)
    k, n = traces.shape
    if k < 2 or n < 2:
        return float("nan")
    means = traces.mean(axis=1)
    w = traces.var(axis=1, ddof=1).mean()
    b = n * means.var(ddof=1)
    if w <= 0:
        return float("nan") if b > 0 else 1.0
    var_hat = (n - 1) / n * w + b / n
    return float(np.sqrt(var_hat / w))


def _check(iterations, burn_in, chains, prior, exact_max, inner) -> int:
    for name, v, lo in (("iterations", iterations, 1), ("chains", chains, 1), ("inner", inner, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ParameterError(f"{name} must be an integer >= {lo}, got {v!r}")
    if burn_in is None:
        burn_in = iterations // 2
    if isinstance(burn_in, bool) or not isinstance(burn_in, (int, np.integer)):
        raise ParameterError(f"burn-in must be an integer, got {burn_in!r}")
    if not 0 <= burn_in < iterations:
        raise ParameterError(
            f"burn-in must be between 0 and iterations - 1 = {iterations - 1}, got {burn_in}"
        )
    if not np.isfinite(prior) or prior <= 0:
        raise ParameterError(f"the Dirichlet prior must be > 0, got {prior!r}")
    if not 1 <= exact_max <= 7:
        raise ParameterError(f"exact_max must be between 1 and 7, got {exact_max!r}")
    return int(burn_in)


def run_definetti(
    release,
    *,
    iterations: int = 2000,
    burn_in: int | None = None,
    chains: int = 4,
    prior: float = 1.0,
    exact_max: int = 5,
    inner: int = 200,
    rng: RngLike = None,
    keep_chains: bool = False,
    truth: np.ndarray | None = None,
    progress: bool = False,
    layout: Layout | None = None,
) -> DefinettiRun:
    """Run the deFinetti attack on an anatomy release (Kifer 2009, Algorithms 1-2).

    Parameters
    ----------
    release
        An :class:`~privlab.publish.anatomy.AnatomyRelease`.
    iterations
        Gibbs outer iterations per chain (Kifer used 50,000).
    burn_in
        Iterations discarded at the start of each chain (default ``iterations // 2``).
    chains
        Independent chains from random starts (Kifer ran 20).
    prior
        Concentration of the symmetric Dirichlet prior of Eqs. 4-5 (1 = uniform, the paper).
    exact_max
        Groups up to this size are sampled exactly; larger ones by Metropolis-Hastings.
    inner
        Metropolis-Hastings steps per large group per outer iteration.
    rng
        Seed or generator (each chain gets a spawned child stream).
    keep_chains
        Also return each chain's posterior (for the min/max columns of Table 7).
    truth
        The custodian's true codes (QIT row order), optional: the diagnostics then also
        give each chain's accuracy and ABS, the spread of the metrics across chains.
    progress
        Show a progress bar.
    """
    burn_in = _check(iterations, burn_in, chains, prior, exact_max, inner)
    lay = layout if layout is not None else layout_of(release)
    n, m = lay.n_rows, lay.n_values
    perm_table, perm_ptr = permutation_table(exact_max)
    prior_s = np.full(m, float(prior))
    prior_r = np.full(lay.n_flat, float(prior))
    gens = as_generator(rng).spawn(chains)
    kept = iterations - burn_in
    pooled = np.zeros((n, m))
    chain_probs = np.zeros((chains, n, m), dtype=np.float32) if keep_chains else None
    loglik = np.zeros((chains, iterations))
    accepted = 0
    blocks = [(c, s, min(s + _BLOCK, iterations)) for c in range(chains)
              for s in range(0, iterations, _BLOCK)]  # fmt: skip
    t0 = time.perf_counter()
    # the kernel works in group order: position i holds tuple lay.gtup[i]
    combo_g = np.ascontiguousarray(lay.combo_of[lay.gtup])
    assign = np.zeros(n, dtype=np.int64)
    post = np.zeros((n, m))
    spread: dict[str, list[float]] = {"top_probability_mean": [], "at_risk_share": []}
    truth_g = None
    if truth is not None:
        truth = np.asarray(truth, dtype=np.int64)
        if truth.shape != (n,) or truth.min(initial=0) < 0 or truth.max(initial=0) >= m:
            raise ParameterError(f"truth must hold {n} codes in 0..{m - 1}")
        truth_g = truth[lay.gtup]
        spread["acc"], spread["abs"] = [], []
    for c, start, stop in track(
        blocks, description="deFinetti attack", total=len(blocks), enabled=progress
    ):
        gen = gens[c]
        if start == 0:
            post[:] = 0.0
            shuffle_within_groups(gen, lay.gtup_ptr, lay.gval, assign)
        accepted += gibbs_run(
            gen, combo_g, lay.combo_codes, lay.attr_ptr, lay.gtup_ptr, lay.gval,
            perm_table, perm_ptr, prior_s, prior_r, assign, post, loglik[c],
            start, stop, burn_in, inner,
        )  # fmt: skip
        if stop == iterations:
            pooled[lay.gtup] += post
            cp = post / kept
            top = cp.max(axis=1)
            spread["top_probability_mean"].append(round(float(top.mean()), 4))
            spread["at_risk_share"].append(round(float((top >= 0.8).mean()), 4))
            if truth_g is not None:
                spread["acc"].append(round(accuracy(cp, truth_g), 4))
                spread["abs"].append(round(abs_error(cp, truth_g), 2))
            if chain_probs is not None:
                chain_probs[c][lay.gtup] = cp
    seconds = time.perf_counter() - t0
    probs = pooled / (kept * chains)
    rhat = gelman_rubin(loglik[:, burn_in:])
    sizes = np.diff(lay.gtup_ptr)
    n_mh = int((sizes > exact_max).sum())
    diagnostics = {
        "iterations": int(iterations),
        "burn_in": burn_in,
        "chains": int(chains),
        "prior": float(prior),
        "exact_max": int(exact_max),
        "seconds": round(seconds, 3),
        "iterations_per_second": round(iterations * chains / seconds, 1) if seconds else None,
        "rhat_loglik": rhat,
        "loglik_mean_per_chain": loglik[:, burn_in:].mean(axis=1).round(3).tolist(),
        # the spread of the metrics across chains (Kifer 2009 Table 7's min/max columns)
        **{f"{k}_per_chain": v for k, v in spread.items()},
        "mh_groups": n_mh,
        "mh_acceptance": (accepted / (n_mh * inner * iterations * chains)) if n_mh else None,
    }
    posterior = Posterior(
        probs=probs,
        group_id=lay.group_id,
        values=values_of(release),
        method="definetti",
        diagnostics=diagnostics,
    )
    return DefinettiRun(
        posterior=posterior, loglik=loglik, rhat=rhat, seconds=seconds, chain_probs=chain_probs
    )


def definetti_attack(release, **kwargs) -> Posterior:
    """The pooled posterior of :func:`run_definetti` (same keyword arguments)."""
    return run_definetti(release, **kwargs).posterior
