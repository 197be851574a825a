"""The Adult setting of Kifer 2009 Sec. 6 and Mothali 2011 Sec. 4.5, shared by the reproductions.

30,162 tuples (missing values dropped); QI workclass, relationship, sex, salary; sensitive
occupation (14 values); Anatomy with groups of 2, 3 and 4 (l = 2, 3, 4).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from privlab.attacks._layout import Layout, layout_of, permutation_table
from privlab.attacks.em import (
    e_step_exact,
    fit_em,
    m_step,
    most_probable_assignment,
    nb_scores,
    run_em,
)
from privlab.data.datasets import load_adult
from privlab.publish.anatomy import AnatomyRelease, anatomize

QI = ("workclass", "relationship", "sex", "salary")
SENSITIVE = "occupation"
GROUP_SIZES = (2, 3, 4)


def adult_release(l: int, rng: np.random.Generator | int | None) -> AnatomyRelease:
    """Anatomize Adult with the seeds' setting at diversity ``l`` (truth kept)."""
    return anatomize(load_adult(), qi=QI, sensitive=SENSITIVE, l=l, rng=rng)


def random_pairs(release: AnatomyRelease, rng: np.random.Generator) -> AnatomyRelease:
    """The same tuples in uniformly random pairs of distinct sensitive values (l = 2).

    Kifer (2009 Sec. 6) says only that he "generated anatomized tables with 2 tuples per
    group"; privlab's :func:`~privlab.publish.anatomize` pairs tuples by Xiao & Tao's rule (one
    from each of the two largest buckets), which on Adult leaves the attacker less to learn
    (benchmarks/diag_anatomy_grouping.py).  Random distinct pairs: a random permutation cut
    into pairs, each pair holding one value twice repaired by exchanging its second member
    with that of a random pair.
    """
    truth = release.truth
    n = truth.size
    order = rng.permutation(n)
    for _ in range(1000):
        bad = np.flatnonzero(truth[order[0::2]] == truth[order[1::2]])
        if bad.size == 0:
            break
        for i in bad:
            j = rng.integers(n // 2)
            order[2 * i + 1], order[2 * j + 1] = order[2 * j + 1], order[2 * i + 1]
    else:
        raise RuntimeError("could not pair the tuples into distinct values")
    gid = np.empty(n, dtype=np.int64)
    gid[order[0::2]] = np.arange(n // 2)
    gid[order[1::2]] = np.arange(n // 2)
    keys, cnt = np.unique(np.column_stack([gid, truth]), axis=0, return_counts=True)
    return AnatomyRelease(
        qit=release.qit, group_id=gid, st_group=keys[:, 0], st_value=keys[:, 1],
        st_count=cnt, sensitive=release.sensitive, l=2, custody=release.custody,
    )  # fmt: skip


#: Mothali 2011 Sec. 4.5's stopping rule: "The accuracy of the assignment was checked after
#: every 10 EM cycles.  A run was assumed to be converged if the accuracy was constant over
#: 200 EM cycles."  privlab reads "constant" as the same number of correctly assigned tuples
#: at 21 consecutive checks; the thesis gives no cap, privlab's is ``cap``.
THESIS_CHECK = 10
THESIS_WINDOW = 200
#: privlab's own rule (run_em's): relative change of the log posterior at most ``TOL``, or
#: ``TOL_MAX_ITER`` iterations (what calibration-table5.1 used up to privlab 0.1).
TOL = 1e-9
TOL_MAX_ITER = 300
_TINY = 1e-300


@dataclass(frozen=True, eq=False)
class ApproxStop:
    """An approximate-EM run (Mothali 2011 Table 4.2) where one stopping rule stopped it."""

    rule: str  # "thesis" or "tolerance"
    iterations: int  # M-steps taken
    by_rule: bool  # False: the cap stopped it
    psi: np.ndarray
    w: np.ndarray
    gamma: np.ndarray  # (N, m): the approximate E-step's responsibilities at (psi, w)
    accuracy: float  # of the attack's Hungarian assignment (the custodian's measure)
    log_posterior: float  # what the approximate EM maximizes: blind to the groups
    release_loglik: float  # log P(release | psi, w): the groups' permutations summed out


@dataclass(frozen=True, eq=False)
class ApproxEM:
    """Approximate-EM restarts, each stopped by both rules, and the restart kept per rule."""

    runs: list[dict[str, ApproxStop]]

    def selected(self, rule: str) -> int:
        """The restart with the highest release likelihood (which sees the groups)."""
        return int(np.argmax([r[rule].release_loglik for r in self.runs]))

    def by_log_posterior(self, rule: str) -> int:
        """The restart ``run_em`` would keep (highest log posterior, blind to the groups)."""
        return int(np.argmax([r[rule].log_posterior for r in self.runs]))

    def best(self, rule: str) -> ApproxStop:
        return self.runs[self.selected(rule)][rule]


class AssignmentHits:
    """Counts the tuples whose value in their group's most probable permutation
    (``argmax_pi prod_m gamma_{m pi_m}``, Mothali 2011 Ch. 4.3) is the true one.

    The same assignment as :func:`privlab.attacks.em.most_probable_assignment` except where
    permutations tie exactly (tuples of one group with the same QIs get the same ``gamma``
    from the approximate E-step; here the first permutation in lexicographic order wins),
    computed by enumerating every group's permutations at once instead of one Hungarian
    solve per group: the thesis's stopping rule needs it every 10 iterations, thousands of
    times.  ``rows_of[n]`` is the row of ``gamma`` that holds tuple ``n`` (the QI
    combination for per-combination responsibilities, ``n`` itself for per-tuple ones).
    """

    def __init__(self, lay: Layout, truth: np.ndarray, rows_of: np.ndarray) -> None:
        m = lay.n_values
        sizes = np.diff(lay.gtup_ptr)
        self._parts = []
        for size in np.unique(sizes):
            groups = np.flatnonzero(sizes == size)
            idx = lay.gtup_ptr[groups][:, None] + np.arange(size)[None, :]
            tup, vals = lay.gtup[idx], lay.gval[idx]
            perms = np.array(list(itertools.permutations(range(size))), dtype=np.int64)
            flat = rows_of[tup][:, None, :] * m + vals[:, perms]  # (groups, perms, size)
            self._parts.append((flat, vals, perms, np.asarray(truth)[tup]))

    def __call__(self, gamma: np.ndarray) -> int:
        logg = -np.log(np.maximum(gamma, _TINY)).ravel()
        hits = 0
        for flat, vals, perms, true in self._parts:
            best = perms[np.argmin(logg[flat].sum(axis=2), axis=1)]
            hits += int((np.take_along_axis(vals, best, axis=1) == true).sum())
        return hits


def approximate_em_restart(
    lay: Layout,
    truth: np.ndarray,
    rng: np.random.Generator,
    *,
    cap: int,
    alpha: float = 1.0,
    beta: float = 1.0,
) -> dict[str, ApproxStop]:
    """One approximate-EM run from the thesis's Dirichlet start, stopped by both rules.

    The run is :func:`privlab.attacks.em.fit_em` with ``approximate=True, init="dirichlet"``
    (its first M-step is taken by ``fit_em`` itself, so the start and every later step are
    its own; tests check the path against it), followed until the thesis's rule stops it
    (:data:`THESIS_CHECK`, :data:`THESIS_WINDOW`) or ``cap`` iterations; on the way, the
    state where privlab's tolerance rule (:data:`TOL`, :data:`TOL_MAX_ITER`) stops is kept.
    The thesis's rule reads the truth (the custodian's accuracy), as the thesis's experiment
    did; an attacker cannot apply it.
    """
    first = fit_em(lay, approximate=True, alpha=alpha, beta=beta, max_iter=1, tol=-1.0,
                   init="dirichlet", rng=rng)  # fmt: skip
    psi, w = first.psi, first.w
    multiplicity = np.bincount(lay.combo_of, minlength=lay.combo_codes.shape[0])[:, None]
    perm_table, perm_ptr = permutation_table(max(lay.max_group, 1))

    hits = AssignmentHits(lay, truth, lay.combo_of)

    def stop(rule: str, it: int, by_rule: bool, psi, w, gamma_c, logp) -> ApproxStop:
        gamma = gamma_c[lay.combo_of]
        _, ll = e_step_exact(nb_scores(psi, w, lay)[lay.combo_of], lay, perm_table, perm_ptr)
        accuracy = float((most_probable_assignment(gamma, lay) == truth).mean())
        return ApproxStop(rule, it, by_rule, psi, w, gamma, accuracy, logp, ll)

    out: dict[str, ApproxStop] = {}
    prev_logp = first.log_posterior
    checks: list[int] = []
    window = THESIS_WINDOW // THESIS_CHECK + 1  # checks spanning THESIS_WINDOW iterations
    it = 1  # M-steps taken; (psi, w) are the parameters after them
    while True:
        scores = nb_scores(psi, w, lay)
        z = np.maximum(scores.sum(axis=1, keepdims=True), _TINY)
        gamma_c = scores / z
        logp = float(
            (np.log(z) * multiplicity).sum()
            + alpha * np.log(np.maximum(psi, _TINY)).sum()
            + beta * np.log(np.maximum(w, _TINY)).sum()
        )
        if "tolerance" not in out:
            # fit_em(max_iter=TOL_MAX_ITER, tol=TOL) returns these parameters: at its cap
            # (reporting the previous log posterior), or when the log posterior moved by at
            # most TOL relative to the previous one
            if it == TOL_MAX_ITER:
                out["tolerance"] = stop("tolerance", it, False, psi, w, gamma_c, prev_logp)
            elif abs(logp - prev_logp) <= TOL * abs(logp):
                out["tolerance"] = stop("tolerance", it, True, psi, w, gamma_c, logp)
        if "thesis" not in out and it % THESIS_CHECK == 0:
            checks.append(hits(gamma_c))
            steady = len(checks) >= window and len(set(checks[-window:])) == 1
            if steady or it >= cap:
                out["thesis"] = stop("thesis", it, steady, psi, w, gamma_c, logp)
        if len(out) == 2:
            return out
        prev_logp = logp
        psi, w = m_step(gamma_c * multiplicity, lay, alpha, beta)
        it += 1


def adult_em_runs(l: int, rngs: list[np.random.Generator], *, restarts: int, exact_init: str,
                  cap: int = 10_000) -> tuple[AnatomyRelease, Layout, ApproxEM, Any]:  # fmt: skip
    """The thesis's Ch. 5 setting: Adult anatomized at ``l`` (``rngs[0]``), ``restarts`` runs
    of the approximate EM from Dirichlet starts (``rngs[1]``; each stopped by the thesis's
    rule, at most ``cap`` iterations, and by privlab's tolerance,
    :func:`approximate_em_restart`) and the exact EM from ``exact_init`` starts
    (``rngs[2]``; :func:`privlab.attacks.em.run_em`, best of ``restarts`` by the log
    posterior, which for the exact E-step is the release's own likelihood).
    Returns ``(release, layout, approx, exact)``."""
    release = adult_release(l, rngs[0])
    lay = layout_of(release)
    truth = release.truth
    approx = ApproxEM(
        [approximate_em_restart(lay, truth, g, cap=cap) for g in rngs[1].spawn(restarts)]
    )
    exact = run_em(release, restarts=restarts, init=exact_init, rng=rngs[2], layout=lay)
    return release, lay, approx, exact
