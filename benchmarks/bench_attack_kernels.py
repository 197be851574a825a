"""The attacks' kernels against what the machine allows, side by side in one run.

On anatomized Adult (QI workclass, relationship, sex, salary; sensitive occupation), for
l = 2, 3, 4:

* one deFinetti Gibbs iteration over all 30,162 tuples (blocked = Kifer's Algorithm 1, also
  with every draw counted into the posterior, and collapsed), in ns per tuple, beside the
  *look-up limit*: a compiled loop doing the same
  random score-table look-ups (l per tuple: each group reads its l x l score matrix) and
  nothing else;
* two chains on one worker thread and on two (the kernel releases the GIL);
* the exact E-step beside its memory floor (each group's l x l scores read and added into
  their cells), and one EM iteration with it, summed per distinct QI combination inside the
  kernel (privlab's) and through an (N, m) responsibility array (the earlier way);
* one iteration on Adult replicated 63 times (1.9M tuples), draws not kept and kept;
* the attack layout of 1.9 million rows: one mixed-radix key versus ``np.unique(axis=0)``.

Run by hand: ``.venv/bin/python benchmarks/bench_attacks.py``.
"""

from __future__ import annotations

import time
import warnings
from functools import partial

import numpy as np
from numba import njit

from privlab.attacks._kernels import (
    collapsed_gibbs_run,
    gibbs_run,
    group_marginals,
    group_marginals_by_combo,
    shuffle_within_groups,
)
from privlab.attacks._layout import layout_from_arrays, layout_of, permutation_table
from privlab.attacks.definetti import run_definetti
from privlab.attacks.em import m_step, nb_scores
from privlab.data import Table, load_adult
from privlab.publish import anatomize

QI = ["workclass", "relationship", "sex", "salary"]


@njit(cache=True)
def lookup_limit(gen, combo_of, gtup_ptr, gval, score):
    """Per group, read its l x l score matrix (the kernel's random look-ups) and draw once."""
    acc = 0.0
    for g in range(gtup_ptr.size - 1):
        lo = gtup_ptr[g]
        size = gtup_ptr[g + 1] - lo
        for a in range(size):
            c = combo_of[lo + a]
            for b in range(size):
                acc += score[c, gval[lo + b]]
        acc += gen.random()
    return acc


@njit(cache=True)
def e_step_floor(scores, combo_of, gtup_ptr, gval, out):
    """The exact E-step's memory floor: per group, read its l x l scores and add each into
    its (QI combination, value) cell, with no arithmetic over the orders."""
    for g in range(gtup_ptr.size - 1):
        lo = gtup_ptr[g]
        size = gtup_ptr[g + 1] - lo
        for a in range(size):
            c = combo_of[lo + a]
            for b in range(size):
                v = gval[lo + b]
                out[c, v] += scores[c, v]


def best_of(f, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def _setup(table, l: int):
    """Anatomized ``table`` at ``l``, its layout, the tuples' QI combinations in group order,
    the permutation table (exact up to 5) and a generator."""
    rel = anatomize(table, qi=QI, sensitive="occupation", l=l, rng=np.random.default_rng(l))
    lay = layout_of(rel)
    pt, pp = permutation_table(5)
    combo_g = np.ascontiguousarray(lay.combo_of[lay.gtup])
    return rel, lay, combo_g, pt, pp, np.random.default_rng(0)


def bench_l(table, l: int) -> str:
    """One table row: the kernels at diversity ``l``."""
    rel, lay, combo_g, pt, pp, gen = _setup(table, l)
    n, m = lay.n_rows, lay.n_values
    ps, pr = np.ones(m), np.ones(lay.n_flat)
    tp, tr = np.zeros(0, dtype=np.int64), np.zeros((1, 0), dtype=np.int16)
    its = 100
    per_tuple = {}
    for name, kernel, burn in (
        ("blocked", gibbs_run, its),
        ("blocked, kept", gibbs_run, 0),  # every draw counted into the posterior
        ("collapsed", collapsed_gibbs_run, its),
    ):
        assign, post = np.zeros(n, dtype=np.int64), np.zeros((n, m))
        shuffle_within_groups(gen, lay.gtup_ptr, lay.gval, assign)
        ll = np.zeros(its)
        args = (gen, combo_g, lay.combo_codes, lay.attr_ptr, lay.gtup_ptr, lay.gval, pt, pp,
                ps, pr, assign, post, ll, 0, its, burn, 200, tp, tr)  # fmt: skip
        kernel(*args)  # compile and warm up
        per_tuple[name] = best_of(partial(kernel, *args), 3) / its / n * 1e9
    score = gen.random((lay.combo_codes.shape[0], m))
    limit_args = (gen, combo_g, lay.gtup_ptr, lay.gval, score)
    lookup_limit(*limit_args)
    limit = best_of(partial(lookup_limit, *limit_args), 20) / n * 1e9
    # one EM iteration (exact E-step + M-step), both ways
    psi = np.full(m, 1.0 / m)
    w = np.full((lay.n_flat, m), 0.1)
    order = np.argsort(lay.combo_of, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(lay.combo_of[order]) != 0])

    def em_combo():
        cs = nb_scores(psi, w, lay)
        out = np.zeros_like(cs)
        group_marginals_by_combo(cs, combo_g, lay.gtup_ptr, lay.gval, pt, pp, out)
        m_step(out, lay, 1.0, 1.0)

    def em_rows():
        scores = nb_scores(psi, w, lay)[lay.combo_of]
        gamma = np.zeros_like(scores)
        group_marginals(scores, lay.gtup_ptr, lay.gtup, lay.gval, pt, pp, 0, gamma)
        m_step(np.add.reduceat(gamma[order], starts, axis=0), lay, 1.0, 1.0)

    em_combo(), em_rows()
    t_combo, t_rows = best_of(em_combo, 20) * 1e3, best_of(em_rows, 20) * 1e3
    cs = nb_scores(psi, w, lay)
    out = np.zeros_like(cs)
    e_args = (cs, combo_g, lay.gtup_ptr, lay.gval, pt, pp, out)
    f_args = (cs, combo_g, lay.gtup_ptr, lay.gval, out)
    group_marginals_by_combo(*e_args), e_step_floor(*f_args)
    t_e = best_of(partial(group_marginals_by_combo, *e_args), 30) * 1e3
    t_f = best_of(partial(e_step_floor, *f_args), 30) * 1e3
    chains = {}
    for workers in (1, 2):
        t0 = time.perf_counter()
        run_definetti(rel, iterations=1000, chains=2, rng=5, workers=workers, warn=False)
        chains[workers] = time.perf_counter() - t0
    return (
        f"| {l} | {per_tuple['blocked']:.1f} | {per_tuple['blocked, kept']:.1f} "
        f"| {per_tuple['collapsed']:.1f} | {limit:.1f} "
        f"| {per_tuple['blocked'] / limit:.2f}x | {t_e:.3f} / {t_f:.3f} ({t_e / t_f:.2f}x) "
        f"| {t_combo:.2f} | {t_rows:.2f} "
        f"| {chains[1]:.2f} / {chains[2]:.2f} ({chains[1] / chains[2]:.2f}x) |"
    )


def bench_census(table, l: int) -> str:
    """One iteration of the blocked kernel on Adult replicated 63 times (1.9M tuples), draws
    not kept and kept, beside the look-up limit, in ms."""
    _rel, lay, combo_g, pt, pp, gen = _setup(table, l)
    n, m = lay.n_rows, lay.n_values
    ps, pr = np.ones(m), np.ones(lay.n_flat)
    tp, tr = np.zeros(0, dtype=np.int64), np.zeros((20, 0), dtype=np.int16)
    its = 10
    ms = []
    for burn in (its, 0):
        assign, post = np.zeros(n, dtype=np.int64), np.zeros((n, m))
        shuffle_within_groups(gen, lay.gtup_ptr, lay.gval, assign)
        args = (gen, combo_g, lay.combo_codes, lay.attr_ptr, lay.gtup_ptr, lay.gval, pt, pp,
                ps, pr, assign, post, np.zeros(its), 0, its, burn, 200, tp, tr)  # fmt: skip
        gibbs_run(*args)
        ms.append(best_of(partial(gibbs_run, *args), 3) / its * 1e3)
    score = gen.random((lay.combo_codes.shape[0], m))
    limit_args = (gen, combo_g, lay.gtup_ptr, lay.gval, score)
    lookup_limit(*limit_args)
    limit = best_of(partial(lookup_limit, *limit_args), 5) * 1e3
    return (
        f"| {l} | {n:,} | {ms[0]:.1f} ({ms[0] / limit:.2f}x) | {ms[1]:.1f} "
        f"({ms[1] / limit:.2f}x) | {limit:.1f} |"
    )


def main() -> None:
    warnings.simplefilter("ignore")
    table = load_adult()
    print(
        "| l | blocked ns/tuple | blocked, draws kept | collapsed ns/tuple "
        "| look-up limit ns/tuple | blocked / limit | E-step / its floor (ms) "
        "| EM iter, per combo (ms) | EM iter, (N, m) (ms) | 2 chains: 1 / 2 workers (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for l in (2, 3, 4):
        print(bench_l(table, l))
    print()
    print("| l | tuples | blocked ms/iteration | draws kept | look-up limit ms |")
    print("|---|---|---|---|---|")
    census = Table(np.tile(table.codes, (63, 1)), table.schema)
    for l in (2, 3, 4):
        print(bench_census(census, l))
    # the layout at 1.9M rows (Adult's QI domain sizes, uniform codes)
    g = np.random.default_rng(0)
    n = 1_900_000
    sizes = (8, 6, 2, 2, 16, 7)
    qi = np.column_stack([g.integers(0, s, n) for s in sizes])
    gid = np.repeat(np.arange(n // 2), 2)
    counts = np.zeros((n // 2, 14), dtype=np.int64)
    np.add.at(counts, (gid, g.integers(0, 14, n)), 1)
    t_key = best_of(partial(layout_from_arrays, qi, sizes, gid, counts), 3)
    t_unique = best_of(partial(np.unique, qi, axis=0, return_inverse=True), 3)
    print(
        f"layout of 1.9M rows: {t_key:.2f} s (mixed-radix key; the whole layout) vs "
        f"{t_unique:.2f} s for np.unique(axis=0) alone"
    )


if __name__ == "__main__":
    main()
