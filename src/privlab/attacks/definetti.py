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

Several chains start from independent random permutations and run in parallel threads; the
pooled posterior averages them.  Convergence is reported, not assumed
(:mod:`privlab.attacks.convergence`): the rank-normalized split R-hat and effective sample
size of the collapsed log-likelihood trace (``log P(QIT, assignment)`` with the parameters
integrated out) and of the sampled values of a random set of tracked people; a run that has
not converged says so in plain words (a :class:`~privlab.errors.ConvergenceWarning`), and
``iterations=None`` samples until the chains converge or a time budget runs out.

The sampler is a numba kernel working on distinct QI combinations (scores are computed once
per combination per iteration), with CSR group offsets and a precomputed permutation table.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privlab._memory import fits, human, require_at_most, require_units
from privlab._params import check_int
from privlab._progress import progress_bar
from privlab._rng import RngLike, as_generator
from privlab.attacks._kernels import (
    SHUFFLE_MAX,
    collapsed_gibbs_run,
    gibbs_run,
    shuffle_within_groups,
)
from privlab.attacks._layout import (
    Layout,
    layout_of,
    partition_of,
    permutation_table,
    values_of,
)
from privlab.attacks._membership import membership_moves, record_people
from privlab.attacks.convergence import Convergence, diagnose, ess_bulk
from privlab.attacks.population import THREAT_MODEL_A, population_layout
from privlab.attacks.posterior import Posterior
from privlab.data.table import Table
from privlab.errors import ConvergenceWarning, ParameterError
from privlab.metrics.calibration import abs_error, accuracy
from privlab.release.views import Grouped

#: A person is at risk when the attacker's top probability reaches this (Kifer 2009 Sec. 6).
AT_RISK = 0.8
#: The samplers of :func:`run_definetti`.
SAMPLERS = {"collapsed": collapsed_gibbs_run, "blocked": gibbs_run}
#: The attacker of the deFinetti attack, in words (the posterior's metadata says it).
THREAT_MODEL = (
    "the attacker knows the published release (its quasi-identifiers or generalized cells "
    "and each group's sensitive values) and learns the model from the release itself"
)

_BLOCK = 500  # iterations per kernel call (progress-bar granularity)
#: The annealed burn-in's first inverse temperature (``anneal`` of :func:`run_definetti`).
ANNEAL_FROM = 0.01


def anneal_beta(it: int, anneal: int) -> float:
    """Inverse temperature of iteration ``it`` under an annealed burn-in of ``anneal``
    iterations: geometric from :data:`ANNEAL_FROM` (iteration 0) towards 1, then 1."""
    if it >= anneal:
        return 1.0
    return float(ANNEAL_FROM ** (1.0 - it / anneal))


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
        Rank-normalized split R-hat of the kept part of ``loglik``
        (:func:`privlab.attacks.convergence.split_rhat`).
    convergence
        The full diagnostics (:class:`~privlab.attacks.convergence.Convergence`).
    seconds
        Wall time of the sampling.
    """

    posterior: Posterior
    loglik: np.ndarray
    rhat: float
    seconds: float
    chain_probs: np.ndarray | None = field(default=None, repr=False)
    convergence: Convergence | None = None


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


#: Caps on the counts a caller gives (each refused above it, in one line that says why);
#: memory sets a lower cap on chains and iterations where the release is large
#: (:func:`definetti_memory`).
MAX_CHAINS = 1_000
MAX_ITERATIONS = 1_000_000
MAX_RESTARTS = 100
#: Rounds of annealed restarts at most (``restart_rounds`` of :func:`run_definetti`).
MAX_RESTART_ROUNDS = 20
#: Two annealed burn-ins are taken to be in the same mode when their scores (the mean of
#: their untempered log-likelihood) differ by at most this many standard errors of the
#: difference of two scores, ``sqrt(2)`` times the median of the pool's standard errors (each
#: from its own effective sample size; the median, since a burn-in still climbing into a mode
#: during its probe has a trend that swells its own), and at least 1 nat.  On anatomized Adult
#: the log-likelihood moves with a standard deviation of about 90 nats within a mode and a
#: score's standard error is 5 to 15 nats; the modes that split the demo's chains lay 45 to
#: 240 nats below the best start (at 3 standard errors, 49 nats there, a start 43 nats below
#: the best counted as in its mode and the chains split, R-hat 1.05 to 1.67).  Only ``chains``
#: starts need to share the best one's mode, so a strict rule costs a round now and then,
#: never a wrong pool.
SAME_MODE_Z = 2.0
MAX_INNER = 100_000
MAX_SECONDS = 7 * 24 * 3600.0
CAP_REASONS = {
    "chains": "Kifer (2009) ran 20 chains; a few suffice for R-hat to compare them",
    "iterations": "20 times Kifer's 50,000 per chain; 'auto' samples until the chains converge",
    "restarts": "each restart repeats the annealed burn-in; a few find the main mode",
    "restart_rounds": "each round repeats every chain's restarts until they agree on a mode",
    "inner": "Metropolis-Hastings steps per large group and iteration",
}


#: Until-converged mode: the first stage's length per chain; each later stage doubles the
#: total and keeps only its own draws (the earlier half is burn-in, as in Alg. 1 line 8).
FIRST_STAGE = 1000
#: People whose sampled values are traced for the convergence diagnostics.
TRACKED = 128
#: The default time budget of the until-converged mode, in seconds.
DEFAULT_BUDGET = 300.0


@dataclass(frozen=True)
class DefinettiSettings:
    """The deFinetti attack's settings, checked when made: one object that the library
    (:func:`run_definetti`), the report's and the audit's plan
    (:meth:`privlab.report.config.AttackPlan.definetti`) and ``privlab attack definetti``
    pass on.  Each field is the :func:`run_definetti` parameter of the same name (see
    there); ``burn_in=None`` is half the iterations (:attr:`burn`), or chosen by the sampler
    when ``iterations`` is None (until converged).

    A field out of range is refused with one line (:class:`~privlab.errors.ParameterError`)
    that names it, and a count above its cap says why the cap is there
    (:data:`CAP_REASONS`)."""

    iterations: int | None = 2000
    burn_in: int | None = None
    chains: int = 4
    prior: float = 1.0
    exact_max: int = 5
    inner: int = 200
    sampler: str = "blocked"
    anneal: int = 0
    restarts: int = 1
    restart_rounds: int = 4
    max_seconds: float | None = None
    workers: int | None = None

    def __post_init__(self) -> None:
        for name, lo, most in (("chains", 1, MAX_CHAINS), ("inner", 1, MAX_INNER)):
            v = check_int(name, getattr(self, name), low=lo)
            require_at_most(name, v, most, CAP_REASONS[name])
            object.__setattr__(self, name, v)
        t = self.max_seconds
        if t is not None and not (isinstance(t, (int, float)) and t > 0):
            raise ParameterError(f"the time budget must be a positive number of seconds, got {t!r}")
        if t is not None and t > MAX_SECONDS:
            raise ParameterError(
                f"the time budget of {t:g} s is above the cap of {MAX_SECONDS:g} s (a "
                "week): the until-converged mode stops when the chains converge"
            )
        if not np.isfinite(self.prior) or self.prior <= 0:
            raise ParameterError(f"the Dirichlet prior must be > 0, got {self.prior!r}")
        if not 1 <= self.exact_max <= 7:
            raise ParameterError(f"exact_max must be between 1 and 7, got {self.exact_max!r}")
        if self.iterations is None:  # until converged
            if self.burn_in is not None:
                raise ParameterError(
                    "burn-in is chosen by the sampler when it runs until converged"
                )
        else:
            iterations = check_int("iterations", self.iterations, low=1)
            require_at_most("iterations", iterations, MAX_ITERATIONS, CAP_REASONS["iterations"])
            object.__setattr__(self, "iterations", iterations)
            if self.burn_in is not None:
                burn = check_int("burn-in", self.burn_in)
                object.__setattr__(self, "burn_in", burn)
            if not 0 <= self.burn < iterations:
                raise ParameterError(
                    f"burn-in must be between 0 and iterations - 1 = {iterations - 1}, "
                    f"got {self.burn}"
                )
        anneal = check_int("anneal", self.anneal, low=0)
        restarts = check_int("restarts", self.restarts, low=1)
        require_at_most("restarts", restarts, MAX_RESTARTS, CAP_REASONS["restarts"])
        if restarts > 1 and anneal == 0:
            raise ParameterError("restarts choose among annealed burn-ins: give anneal > 0 too")
        rounds = check_int("restart_rounds", self.restart_rounds, low=1)
        require_at_most("restart_rounds", rounds, MAX_RESTART_ROUNDS, CAP_REASONS["restart_rounds"])
        anneal_max = self.burn if self.burn is not None else FIRST_STAGE // 2
        if anneal > anneal_max:
            raise ParameterError(
                f"the annealed iterations are burn-in: anneal must be at most {anneal_max}, "
                f"got {anneal}"
            )
        if self.sampler not in (*SAMPLERS, "alternate"):
            raise ParameterError(
                f"sampler must be one of {', '.join(SAMPLERS)}, alternate; got {self.sampler!r}"
            )
        workers = check_int("workers", self.workers, low=1, none="the machine's processors")
        for name, v in (("anneal", anneal), ("restarts", restarts), ("restart_rounds", rounds),
                        ("workers", workers)):  # fmt: skip
            object.__setattr__(self, name, v)

    @property
    def burn(self) -> int | None:
        """The burn-in in iterations (None until converged: the sampler's stages set it)."""
        if self.iterations is None:
            return None
        return self.iterations // 2 if self.burn_in is None else self.burn_in

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def trace_dtype(m: int) -> type[np.signedinteger]:
    """The integer type of the traced sensitive codes ``0..m-1`` (the tracked people's
    sampled values): ``int16`` while every code fits (fewer than ``2^15`` values), else
    ``int32``."""
    return np.int16 if m < (1 << 15) else np.int32


def definetti_memory(
    n: int,
    m: int,
    *,
    n_combo: int,
    n_flat: int,
    chains: int,
    iterations: int,
    kept: int,
    workers: int,
    keep_chains: bool = False,
    latent: bool = False,
    restarts_kept: int = 0,
) -> tuple[float, float]:
    """Bytes the deFinetti attack needs at most: ``(fixed, per_chain)``, the total being
    ``fixed + chains * per_chain``.

    ``n`` tuples, ``m`` sensitive values, ``n_combo`` distinct QI combinations, ``n_flat``
    QI values in all; ``iterations`` per chain of which ``kept`` are kept (in the
    until-converged mode: those of the stage to run, and every earlier stage's trace).

    Per chain: its posterior counts ``(n, m)`` float64, its assignment (with latent
    membership three more ``(n,)`` arrays), its per-chain probabilities when kept
    (float32), its log-likelihood trace, the sampled values of the tracked people and the
    ``restarts_kept`` assignments its annealed restarts keep for the pool.
    Per running worker: the kernel's scratch (four ``(n_combo, m)`` and two ``(n_flat, m)``
    float64 or int64 arrays, and 32 bytes a tuple: a proposal, the kept draws of the groups
    of at most 4 counted in int32 per (tuple, value of its group), their offsets).
    Fixed: the pooled counts, the probabilities, one chain's normalized
    copy, the posterior's checks and allocator slack (five ``(n, m)`` float64 arrays;
    measured: about four).
    ``tests/test_limits.py`` checks the estimate against a measured peak.
    """
    nm = 8.0 * n * m
    trace_item = np.dtype(trace_dtype(m)).itemsize
    per_chain = (
        nm
        + 8.0 * n * (4 if latent else 1)
        + (4.0 * n * m if keep_chains else 0.0)
        + 8.0 * iterations
        + trace_item * min(n, TRACKED) * float(kept)
        + 8.0 * n * restarts_kept
    )
    scratch = 8.0 * (4 * n_combo * m + 2 * n_flat * m + 4 * n)
    fixed = 5 * nm + min(workers, chains) * scratch
    return fixed, per_chain


def score_se(tail: np.ndarray) -> float:
    """The standard error of the mean of a log-likelihood trace: its standard deviation over
    the square root of its bulk effective sample size (of its length when under 4 draws)."""
    sd = float(np.std(tail))
    ess = ess_bulk(tail[None, :]) if tail.size >= 4 else float(tail.size)
    return sd / math.sqrt(ess) if ess > 0 and math.isfinite(ess) else sd


def same_mode(best: float, score: float, se: float) -> bool:
    """Whether a burn-in scoring ``score`` lies in the mode of the one scoring ``best``: at
    most :data:`SAME_MODE_Z` standard errors of a difference of two scores below it (each
    score's standard error ``se``; at least 1 nat in all)."""
    return best - score <= max(SAME_MODE_Z * math.sqrt(2.0) * se, 1.0)


@dataclass
class _Start:
    """An annealed burn-in: its score (the mean of its untempered log-likelihood), the
    score's standard error, its number among its chain's restarts, the assignment it ended
    in and its log-likelihood trace."""

    score: float
    se: float
    restart: int
    assign: np.ndarray
    ll: np.ndarray


class _Chain:
    """One chain's state (its generator, current assignment, posterior counts; with latent
    membership, who stands at each position and their QI combinations)."""

    def __init__(self, gen: np.random.Generator, n: int, m: int, combo_g=None, gtup=None) -> None:
        self.gen = gen
        self.assign = np.zeros(n, dtype=np.int64)
        self.post = np.zeros((n, m))
        self.accepted = 0
        self.moved = 0
        self.started = False
        self.annealed = 0  # iterations annealed by restarts before the chain's sampling
        self.anneal_ll = np.zeros(0)
        self.restart_scores: list[float] = []  # each annealed restart's score, in order
        self.restart_se: list[float] = []  # and its standard error
        self.restart_from: tuple[int, int] | None = None  # (chain, restart) it went on from
        if combo_g is not None:
            self.combo = combo_g.copy()
            self.person_at = gtup.copy()
            self.pos_of = np.argsort(gtup).astype(np.int64)


def run_definetti(
    release: Grouped,
    settings: DefinettiSettings | None = None,
    *,
    rng: RngLike = None,
    progress: bool = False,
    warn: bool = True,
    keep_chains: bool = False,
    chain_statistic: Callable[[np.ndarray], float] | None = None,
    truth: np.ndarray | None = None,
    layout: Layout | None = None,
    population: Table | None = None,
    hierarchies: Any = None,
    retry: bool = False,
    **options: Any,
) -> DefinettiRun:
    """Run the deFinetti attack on a release with groups (Kifer 2009, Algorithms 1-2).

    Parameters
    ----------
    release
        A release whose rows form groups carrying sensitive values (Anatomy's groups, a
        generalized table's classes): :meth:`~privlab.release.base.Release.partition`.
    settings, **options
        The attack's settings (:class:`DefinettiSettings`; default: its defaults), and
        any of its fields as keyword options, which replace the settings' own:
        ``iterations``, ``burn_in``, ``chains``, ``prior``, ``exact_max``, ``inner``,
        ``sampler``, ``anneal``, ``restarts``, ``restart_rounds``, ``max_seconds``,
        ``workers`` (each described below).
    iterations
        Gibbs outer iterations per chain (Kifer used 50,000).  ``None``: sample until the
        chains converge (:mod:`privlab.attacks.convergence`) or ``max_seconds`` runs out:
        stages of 1,000, 1,000, 2,000, 4,000, ... iterations, each doubling the chain's
        length and keeping only its own draws.
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
        Seed or generator (each chain gets a spawned child stream; one more child picks the
        tracked people).  The result for a seed does not depend on ``workers``.
    keep_chains
        Also return each chain's posterior (for the min/max columns of Table 7).
    chain_statistic
        A figure of each chain's own posterior (``(n_rows, n_values)``, rows in the
        posterior's order), given one chain at a time, so that the chains need not be kept
        (the report's at-risk share per chain): the diagnostics' ``statistic_per_chain``.
    truth
        The custodian's true codes (QIT row order), optional: the diagnostics then also
        give each chain's accuracy and ABS, the spread of the metrics across chains
        (``acc_per_chain`` rounded to 4 places, ``abs_per_chain`` to 2).
    progress
        Show a progress bar.
    max_seconds
        Time budget of the until-converged mode (default 300 s); with fixed ``iterations``
        it is not used.
    workers
        Threads running chains at once (default: the machine's processors, at most
        ``chains``): the kernel releases the GIL.
    warn
        Issue a :class:`~privlab.errors.ConvergenceWarning` when the chains have not
        converged (the diagnostics always say so).
    sampler
        ``"blocked"`` (default): Kifer's Algorithm 1 as written, drawing the parameters and
        then every group; ``"collapsed"``: Gibbs sampling with the parameters integrated out
        (:func:`~privlab.attacks._kernels.collapsed_gibbs_run`), one group at a time;
        ``"alternate"``: the two in turn.  All three leave the same posterior invariant (each
        matches the exact enumeration on small releases).  They differ in how they cross
        between modes: on anatomized Adult at l = 3 the posterior has at least two
        (collapsed log-likelihoods about -165,590 and -165,700) that neither sampler leaves
        within 16,000 iterations; the blocked sampler also fell into a third, 500 nats
        lower, in one of five chains, which the collapsed one did not; on a synthetic
        release with strongly informative QIs the collapsed chains stay in lower modes that
        the blocked ones leave.  The convergence diagnostics report such runs.
    anneal
        Iterations of annealed burn-in (default 0: none).  During the first ``anneal``
        iterations of each chain the likelihood is raised to a power ``beta`` that rises
        geometrically from :data:`ANNEAL_FROM` to 1 (:func:`anneal_beta`; simulated
        annealing, Kirkpatrick, Gelatt & Vecchi 1983, Science 220; as a burn-in for a
        Gibbs sampler, the first leg of Neal's annealed importance sampling, Statistics
        and Computing 11, 2001): a flattened posterior lets each chain, still from its own
        random start, drift to where most of the posterior's mass lies before it freezes
        into a mode.  The annealed iterations are part of the burn-in and never counted
        (``anneal <= burn_in``; in the until-converged mode ``anneal <= 500``, the first
        stage's burn-in); from then on the chain is the untempered sampler, so the
        posterior is unchanged, and the convergence diagnostics still judge the chains.
        It lowers, does not remove, the chance that a chain freezes into a minor mode: on
        anatomized Adult at l = 3, 20,000 annealed iterations sent 4 of 25 blocked chains
        into a mode whose best parameters explain the release 21 nats worse (EM's
        ``log P(T | theta)``), against 5 of 10 chains without (docs/results.md).
    restarts
        Annealed burn-ins per chain (default 1; needs ``anneal``): each chain anneals
        ``restarts`` times from independent random permutations (the last quarter of each,
        at most 500 iterations, untempered), and the chains go on from the best ``chains``
        of all ``chains x restarts`` burn-ins, the best to the first chain, ranked by the
        mean collapsed log-likelihood of their untempered iterations (multi-start
        initialization, as EM keeps its best restart).  Pooled, a chain stays in a minor
        mode only when all but one burn-in froze there: with a chance ``q`` that one finds
        the main mode, ``(1-q)^R`` per chain alone against ``(1-q)^(CR) + CR q (1-q)^(CR-1)``
        for both of 2 chains (in this model, q = 0.6 and R = 4 give 5% of attacks whose
        chains split between modes, as measured on the demo before the pool, against under
        1%).  One annealing froze about 1 chain in 6 on anatomized Adult at l = 3.  The
        selection happens in the burn-in and leaves the sampler's target unchanged; it makes
        the chains' starts less over-dispersed, which weakens what R-hat can detect of modes
        that no restart found.
    restart_rounds
        Rounds of restarts at most (default 4; 1: one round).  When fewer than ``chains``
        burn-ins of the pool lie in the best one's mode (:func:`same_mode`, with the median
        of the pool's standard errors), every chain
        anneals ``restarts`` more times and the pool grows, until ``chains`` of them do or
        the rounds run out; the diagnostics give ``restart_rounds`` and each restart's
        ``restart_se``.
        Without it, a release whose main mode one burn-in in ten finds gave its two chains
        different modes in 2 to 4 attacks of 10 (R-hat 2 to 16: a REVIEW by chance); most
        releases never need a second round (1 in 40 of anatomized Adult's at l = 2, 3, 4).
    population, hierarchies
        Threat model (a) on a generalized release (:mod:`privlab.attacks.population`): the
        attacker knows the exact quasi-identifiers of every person (``population``, one row
        per person, who are then the posterior's rows) and reads the published cells with
        the release's public ``hierarchies``.
    retry
        With fixed ``iterations``: when the chains have not converged, run them on once
        for as many iterations again (to at most :data:`MAX_ITERATIONS`) and keep only the
        new draws, the first run being their burn-in (the report's own advice, "run it
        longer", taken once).  The result is the run of twice the iterations with half of
        them burn-in, bit for bit (same seed, same chains); the diagnostics'
        ``retried_after`` gives the first run's figures.  It costs twice a run, not the
        three times of a second run from fresh starts.
    """
    if settings is None:
        settings = DefinettiSettings(**options)
    elif options:
        settings = dataclasses.replace(settings, **options)
    iterations, burn, chains, sampler = (
        settings.iterations,
        settings.burn,
        settings.chains,
        settings.sampler,
    )
    prior, exact_max, inner = settings.prior, settings.exact_max, settings.inner
    anneal, restarts, restart_rounds = settings.anneal, settings.restarts, settings.restart_rounds
    max_seconds = settings.max_seconds
    kernel = SAMPLERS.get(sampler)
    threat = THREAT_MODEL
    part = partition_of(release)
    pl = None
    fixed = 0  # people who fit several classes but can exchange with nobody
    if population is not None:
        pl = population_layout(release, population, hierarchies=hierarchies, overlap=True)
        lay = pl.layout
        threat = THREAT_MODEL_A
        if pl.overlapping and not pl.exchangeable():
            fixed = int((np.diff(pl.fit_ptr) > 1).sum())
            pl = None  # every filling is the starting one: membership is not latent
        elif not pl.overlapping:
            pl = None
    else:
        lay = layout if layout is not None else layout_of(release, part)
    n, m = lay.n_rows, lay.n_values
    perm_table, perm_ptr = permutation_table(exact_max)
    prior_s = np.full(m, float(prior))
    prior_r = np.full(lay.n_flat, float(prior))
    root = as_generator(rng)
    gens = root.spawn(chains)
    track_gen = root.spawn(1)[0]
    # the kernel works in group order: position i holds tuple lay.gtup[i]
    combo_g = np.ascontiguousarray(lay.combo_of[lay.gtup])
    track_pos = np.sort(track_gen.choice(n, size=min(n, TRACKED), replace=False)).astype(np.int64)
    latent = pl is not None  # people's classes are latent too (overlapping cells)
    if latent:
        states = [_Chain(g, n, m, combo_g, lay.gtup) for g in gens]
        group_of_pos = np.repeat(np.arange(lay.n_groups), np.diff(lay.gtup_ptr)).astype(np.int64)
        multi = np.flatnonzero(np.diff(pl.fit_ptr) > 1).astype(np.int64)
    else:
        states = [_Chain(g, n, m) for g in gens]
    if latent and restarts > 1:
        raise ParameterError("annealed restarts are not available when people fit several classes")
    never = np.iinfo(np.int64).max
    no_track = np.zeros(0, dtype=np.int64)
    no_trace = np.zeros((1, 0), dtype=trace_dtype(m))
    workers = max(1, min(chains, settings.workers or os.cpu_count() or 1))

    def need(total: int, kept: int) -> tuple[float, float]:
        return definetti_memory(
            n, m, n_combo=int(lay.combo_codes.shape[0]), n_flat=lay.n_flat, chains=chains,
            iterations=total, kept=kept, workers=workers, keep_chains=keep_chains,
            latent=latent, restarts_kept=min(restarts, chains) if restarts > 1 else 0,
        )  # fmt: skip

    def next_stage(stop: int) -> tuple[int, float]:
        """The end of the stage after one ending at ``stop`` (the run doubled, capped at
        :data:`MAX_ITERATIONS`) and the bytes the run would then need."""
        longer = min(2 * stop, MAX_ITERATIONS)
        fixed, chain = need(longer, longer - stop)
        return longer, fixed + chains * chain

    first_total = int(iterations) if burn is not None else FIRST_STAGE
    fixed_bytes, per_chain = need(first_total, first_total - (burn if burn is not None else
                                                              FIRST_STAGE // 2))  # fmt: skip
    require_units(
        chains, per_chain, fixed_bytes, f"the deFinetti attack on {n:,} tuples x {m:,} values",
        "chains", "use fewer chains or iterations, or a smaller release",
    )  # fmt: skip
    stop_event = threading.Event()  # set when the caller is interrupted: the workers stop
    rounds_run = [0]  # rounds of annealed restarts run (_pool_restarts)
    truth_g = None
    if truth is not None:
        truth = np.asarray(truth, dtype=np.int64)
        if truth.shape != (n,) or truth.min(initial=0) < 0 or truth.max(initial=0) >= m:
            raise ParameterError(f"truth must hold {n} codes in 0..{m - 1}")
        truth_g = truth if latent else truth[lay.gtup]

    def _anneal_restarts(st: _Chain, kept: list[_Start], first: int) -> list[_Start]:
        """One chain's ``restarts`` annealed burn-ins, numbered from ``first``, merged into
        ``kept``: the best ``chains`` of them all, best first (:func:`_pool_restarts`).

        Each restart anneals over its first ``anneal - probe`` iterations and then samples
        ``probe`` untempered ones; restarts are compared by their mean collapsed
        log-likelihood over those (one value would not do: it moves by about 90 nats from
        one iteration to the next on anatomized Adult, as much as the gap between modes)."""
        probe = min(500, max(1, anneal // 4))
        for r in range(first, first + restarts):
            if stop_event.is_set():
                return kept
            assign = np.zeros(n, dtype=np.int64)
            shuffle_within_groups(st.gen, lay.gtup_ptr, lay.gval, assign)
            ll = np.zeros(anneal)
            for it in range(anneal):
                if stop_event.is_set():
                    return kept
                run = kernel or SAMPLERS["blocked" if it % 2 == 0 else "collapsed"]
                run(
                    st.gen, combo_g, lay.combo_codes, lay.attr_ptr, lay.gtup_ptr, lay.gval,
                    perm_table, perm_ptr, prior_s, prior_r, assign, st.post, ll[it : it + 1],
                    it, it + 1, never, inner, no_track, no_trace,
                    anneal_beta(it, anneal - probe),
                )  # fmt: skip
            tail = ll[anneal - probe :]
            score, se = float(tail.mean()), score_se(tail)
            st.restart_scores.append(score)
            st.restart_se.append(se)
            kept.append(_Start(score, se, r, assign, ll))
            kept.sort(key=lambda k: (-k.score, k.restart))
            del kept[chains:]  # no more of one chain's can be among the best `chains`
        return kept

    def _pool_restarts() -> None:
        """Every chain's annealed restarts (in parallel, each from its own generator), then
        the chains take the best ``chains`` of them all, the best to chain 0 (ties by chain,
        then restart: a seed replays it whatever the workers).  Another round while fewer
        than ``chains`` of the pool lie in the best one's mode (``restart_rounds``)."""
        found: list[list[_Start]] = [[] for _ in states]
        for round_ in range(restart_rounds):

            def one(c: int, first: int = round_ * restarts) -> None:
                found[c] = _anneal_restarts(states[c], found[c], first)

            _each_chain(one)
            if stop_event.is_set():
                return
            pool = sorted(
                ((s, c) for c, got in enumerate(found) for s in got),
                key=lambda k: (-k[0].score, k[1], k[0].restart),
            )
            best = pool[0][0]
            se = float(np.median([x for st in states for x in st.restart_se]))
            rounds_run[0] = round_ + 1
            if sum(same_mode(best.score, s.score, se) for s, _ in pool) >= chains:
                break
        for st, (s, c) in zip(states, pool):
            st.assign[:] = s.assign
            st.anneal_ll = s.ll
            st.restart_from = (c, s.restart)
            st.annealed = anneal
            st.started = True

    def _each_chain(one: Callable[[int], None]) -> None:
        """``one(c)`` for every chain, on ``workers`` threads; an interrupt (or a failing
        chain) stops the others."""
        if workers == 1:
            for c in range(chains):
                one(c)
            return
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(one, c) for c in range(chains)]
            try:
                for f in futures:
                    f.result()
            except BaseException:
                stop_event.set()
                raise

    def run_stage(start: int, stop: int, keep_from: int, bar) -> tuple[np.ndarray, np.ndarray]:
        """Every chain from ``start`` to ``stop``, keeping draws from ``keep_from``."""
        loglik = np.zeros((chains, stop - start))
        trace = np.zeros((chains, stop - keep_from, track_pos.size), dtype=trace_dtype(m))

        def one(c: int) -> None:
            st = states[c]
            if not st.started:  # (with restarts, _pool_restarts started every chain)
                shuffle_within_groups(st.gen, lay.gtup_ptr, lay.gval, st.assign)
                st.started = True
            st.post[:] = 0.0
            if latent:
                for it in range(start, stop):
                    if stop_event.is_set():
                        return
                    run = kernel or SAMPLERS["blocked" if it % 2 == 0 else "collapsed"]
                    st.accepted += run(
                        st.gen, st.combo, lay.combo_codes, lay.attr_ptr, lay.gtup_ptr, lay.gval,
                        perm_table, perm_ptr, prior_s, prior_r, st.assign, st.post,
                        loglik[c, it - start : it - start + 1], it, it + 1, never, inner,
                        no_track, no_trace, anneal_beta(it, anneal),
                    )  # fmt: skip
                    st.moved += membership_moves(
                        st.gen, st.combo, lay.combo_codes, lay.attr_ptr, prior_r, m,
                        lay.gtup_ptr, group_of_pos, st.person_at, st.pos_of, pl.fit_ptr,
                        pl.fit_cls, multi, st.assign, multi.size,
                    )  # fmt: skip
                    if it >= keep_from:
                        record_people(st.post, st.assign, st.person_at, st.pos_of, track_pos,
                                      trace[c], it - keep_from)  # fmt: skip
                    if (it + 1) % _BLOCK == 0 or it + 1 == stop:
                        bar.advance((it + 1) - max(start, (it // _BLOCK) * _BLOCK))
                return
            for lo in range(start, stop, _BLOCK):
                if stop_event.is_set():
                    return
                hi = min(lo + _BLOCK, stop)
                # "alternate": even iterations blocked, odd ones collapsed (each leaves the
                # posterior invariant, so their composition does too); annealed iterations
                # one at a time, each at its own temperature
                spans = []
                it = max(lo, st.annealed)  # iterations its restarts annealed already
                if it > lo:  # their trace, this block's part of it
                    done = min(it, hi)
                    loglik[c, lo - start : done - start] = st.anneal_ll[lo:done]
                while it < hi:
                    if kernel is not None and it >= anneal:
                        spans.append((it, hi, kernel, 1.0))
                        break
                    run = kernel or SAMPLERS["blocked" if it % 2 == 0 else "collapsed"]
                    spans.append((it, it + 1, run, anneal_beta(it, anneal)))
                    it += 1
                for a, b, run, beta in spans:  # every span has a < b
                    st.accepted += run(
                        st.gen, combo_g, lay.combo_codes, lay.attr_ptr, lay.gtup_ptr, lay.gval,
                        perm_table, perm_ptr, prior_s, prior_r, st.assign, st.post,
                        loglik[c, a - start : b - start], a, b, keep_from, inner,
                        track_pos, trace[c], beta,
                    )  # fmt: skip
                bar.advance(hi - lo)

        _each_chain(one)
        return loglik, trace

    t0 = time.perf_counter()
    stages: list[tuple[int, int, int]] = []
    if burn is not None:
        stages.append((0, int(iterations), burn))
        planned = int(iterations) * chains
    else:
        budget = DEFAULT_BUDGET if max_seconds is None else float(max_seconds)
        stages.append((0, FIRST_STAGE, FIRST_STAGE // 2))
        planned = None
    loglik_all: list[np.ndarray] = []
    stop_reason = "fixed"
    retried_after: dict[str, Any] | None = None
    with progress_bar("deFinetti attack", total=planned, enabled=progress) as bar:
        if restarts > 1:
            _pool_restarts()
        while True:
            start, stop, keep_from = stages[-1]
            loglik, trace = run_stage(start, stop, keep_from, bar)
            loglik_all.append(loglik)
            kept_ll = loglik[:, keep_from - start :]
            pooled = sum(st.post for st in states)
            top = pooled.argmax(axis=1)[track_pos]
            at_risk = (pooled.max(axis=1) / pooled.sum(axis=1))[track_pos] >= AT_RISK
            conv = diagnose(kept_ll, trace, top, at_risk, n_values=m)
            if burn is not None:
                if not retry or conv.converged or retried_after is not None:
                    break
                longer, next_bytes = next_stage(stop)
                if longer <= stop or not fits(next_bytes):
                    break  # (no room to run on: the first run is judged as it is)
                retried_after = {
                    "iterations": int(stop),
                    "rhat_loglik": conv.rhat_loglik,
                    "ess_loglik": round(conv.ess_loglik, 1),
                    "convergence": conv.message("the deFinetti attack"),
                }
                bar.set_total(longer * chains)
                stages.append((stop, longer, stop))
                continue
            if conv.converged:
                stop_reason = "converged"
                break
            elapsed = time.perf_counter() - t0
            rate = elapsed / stop  # seconds per iteration of every chain, so far
            if elapsed + rate * stop > budget:  # the next stage doubles the length
                stop_reason = "time budget"
                break
            longer, next_bytes = next_stage(stop)
            if longer < 2 * stop or not fits(next_bytes):
                stop_reason = "memory"  # the next stage would not fit: stop with this one
                break
            stages.append((stop, longer, stop))
    seconds = time.perf_counter() - t0
    start, total, keep_from = stages[-1]
    kept = total - keep_from
    pooled = np.zeros((n, m))
    chain_probs = np.zeros((chains, n, m), dtype=np.float32) if keep_chains else None
    spread: dict[str, list[float]] = {"top_probability_mean": [], "at_risk_share": []}
    if truth_g is not None:
        spread["acc"], spread["abs"] = [], []
    to_rows = slice(None) if latent else lay.gtup  # kept counts: per person or per position
    for c, st in enumerate(states):
        pooled[to_rows] += st.post
        cp = st.post / kept
        top_c = cp.max(axis=1)
        spread["top_probability_mean"].append(round(float(top_c.mean()), 4))
        spread["at_risk_share"].append(round(float((top_c >= AT_RISK).mean()), 4))
        if truth_g is not None:
            spread["acc"].append(round(accuracy(cp, truth_g), 4))
            spread["abs"].append(round(abs_error(cp, truth_g), 2))
        if chain_probs is not None:
            chain_probs[c][to_rows] = cp
        if chain_statistic is not None:  # one chain at a time, in the posterior's rows
            rows = np.empty((n, m), dtype=cp.dtype)
            rows[to_rows] = cp
            spread.setdefault("statistic", []).append(float(chain_statistic(rows)))
    probs = pooled / (kept * chains)
    loglik_trace = np.concatenate(loglik_all, axis=1)
    rhat = gelman_rubin(loglik_trace[:, keep_from:])
    sizes = np.diff(lay.gtup_ptr)
    n_mh = int((sizes > exact_max).sum())
    mh = sizes[sizes > exact_max]  # swap sweeps above SHUFFLE_MAX, else `inner` reshuffles
    proposals = int(np.where(mh > SHUFFLE_MAX, mh, inner).sum()) * total * chains
    accepted = sum(st.accepted for st in states)
    message = conv.message("the deFinetti attack")
    if burn is None and stop_reason == "time budget":
        message += f" (stopped by the time budget of {budget:g} s after {total} iterations)"
    if stop_reason == "memory":
        message += (
            f" (stopped after {total} iterations: the next stage would need about "
            f"{human(next_bytes)} of memory, or pass the cap of {MAX_ITERATIONS:,} iterations)"
        )
    diagnostics = {
        "iterations": int(total),
        "burn_in": int(keep_from),
        "chains": int(chains),
        "prior": float(prior),
        "exact_max": int(exact_max),
        "sampler": sampler,
        "anneal": anneal,
        "restarts": restarts,
        # each chain's restarts' scores (mean untempered log-likelihood) and the (chain,
        # restart) each chain went on from: the best of the pool goes to chain 0
        "restart_scores": (
            [[round(x, 3) for x in st.restart_scores] for st in states] if restarts > 1 else None
        ),
        "restart_from": ([list(st.restart_from or ()) for st in states] if restarts > 1 else None),
        "restart_se": (
            [[round(x, 3) for x in st.restart_se] for st in states] if restarts > 1 else None
        ),
        "restart_rounds": rounds_run[0] if restarts > 1 else None,
        "seconds": round(seconds, 3),
        "iterations_per_second": round(total * chains / seconds, 1) if seconds else None,
        "workers": workers,
        "threat_model": threat,
        "mode": "until converged" if burn is None else "fixed",
        "stopped_by": stop_reason,
        "converged": conv.converged,
        "convergence": message,
        "rhat_loglik": conv.rhat_loglik,
        "ess_loglik": round(conv.ess_loglik, 1),
        "rhat_tracked": conv.rhat_targets,
        "ess_tracked": None if np.isnan(conv.ess_targets) else round(conv.ess_targets, 1),
        "tracked_people": conv.n_targets,
        "tracked_at_risk": conv.n_at_risk,
        "top_disagreements": conv.top_disagree,
        "top_spread": None if np.isnan(conv.top_spread) else round(conv.top_spread, 4),
        "rhat_loglik_classic": rhat,
        "loglik_mean_per_chain": loglik_trace[:, keep_from:].mean(axis=1).round(3).tolist(),
        # the spread of the metrics across chains (Kifer 2009 Table 7's min/max columns)
        **{f"{k}_per_chain": v for k, v in spread.items()},
        "mh_groups": n_mh,
        "mh_acceptance": (accepted / proposals) if proposals else None,
    }
    if retried_after is not None:
        diagnostics["retried_after"] = retried_after
    if fixed:
        diagnostics["people_in_several_classes"] = fixed
        diagnostics["membership_acceptance"] = None  # no exchange is possible at all
    if latent:
        moves = multi.size * total * chains
        diagnostics["people_in_several_classes"] = int(multi.size)
        diagnostics["membership_acceptance"] = sum(st.moved for st in states) / moves
    if warn and not conv.converged:
        warnings.warn(message, ConvergenceWarning, stacklevel=2)
    posterior = Posterior(
        probs=probs,
        group_id=pl.group_id() if latent else lay.group_id,
        values=values_of(part),
        method="definetti",
        diagnostics=diagnostics,
        release_kind=getattr(release, "method", None),
        sensitive=part.sensitive.name,
        threat_model=threat,
    )
    return DefinettiRun(
        posterior=posterior,
        loglik=loglik_trace,
        rhat=conv.rhat_loglik,
        seconds=seconds,
        chain_probs=chain_probs,
        convergence=conv,
    )


def definetti_attack(
    release: Grouped, settings: DefinettiSettings | None = None, **kwargs: Any
) -> Posterior:
    """The pooled posterior of :func:`run_definetti` (same arguments)."""
    return run_definetti(release, settings, **kwargs).posterior
