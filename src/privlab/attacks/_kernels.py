"""numba kernels of the attacks (hot loops only; the Python modules hold the logic).

Each kernel is compiled for exactly one signature (int64 index arrays, float64 values,
``np.random.Generator``) and cached on disk, so the compile cost is paid once per machine.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: Groups larger than ``exact_max`` and up to this size are resampled by Kifer's Algorithm 2
#: (Metropolis-Hastings with uniform reshuffles); larger ones by sweeps of pairwise swaps.
SHUFFLE_MAX = 12


@njit(cache=True)
def _dirichlet_fill(gen, alpha_plus_counts, out):
    """``out ~ Dir(alpha_plus_counts)`` via normalized Gamma draws."""
    total = 0.0
    for i in range(alpha_plus_counts.size):
        x = gen.standard_gamma(alpha_plus_counts[i])
        out[i] = x
        total += x
    if total <= 0.0:  # every draw underflowed (tiny shapes): fall back to the mean
        total = 0.0
        for i in range(alpha_plus_counts.size):
            out[i] = alpha_plus_counts[i]
            total += out[i]
    for i in range(alpha_plus_counts.size):
        out[i] /= total


@njit(cache=True)
def _collapsed_loglik(flat_counts, value_counts, attr_ptr, prior_s, prior_r):
    """log P(QI table, assignment) with the Naive-Bayes parameters integrated out.

    Dirichlet-multinomial closed form (the product of Eqs. 4-5's normalizing constants):
    ``lnB(prior_s + n) - lnB(prior_s) + sum_{j,s} [lnB(prior_r + n_{j,.,s}) - lnB(prior_r)]``
    where ``lnB(a) = sum lgamma(a_i) - lgamma(sum a_i)``.
    """
    m = value_counts.size
    a_sum = 0.0
    n_sum = 0.0
    ll = 0.0
    for s in range(m):
        ll += math.lgamma(prior_s[s] + value_counts[s]) - math.lgamma(prior_s[s])
        a_sum += prior_s[s]
        n_sum += value_counts[s]
    ll += math.lgamma(a_sum) - math.lgamma(a_sum + n_sum)
    n_attr = attr_ptr.size - 1
    for j in range(n_attr):
        for s in range(m):
            a_sum = 0.0
            n_sum = 0.0
            for x in range(attr_ptr[j], attr_ptr[j + 1]):
                c = flat_counts[x, s]
                ll += math.lgamma(prior_r[x] + c) - math.lgamma(prior_r[x])
                a_sum += prior_r[x]
                n_sum += c
            ll += math.lgamma(a_sum) - math.lgamma(a_sum + n_sum)
    return ll


@njit(cache=True, nogil=True)
def _below(gen, k):
    """A uniform integer in ``0..k-1`` from one ``gen.random()`` draw."""
    r = int(gen.random() * k)
    return k - 1 if r >= k else r


@njit(cache=True, nogil=True)
def _knuth(gen, x, lo, hi):
    """Knuth-shuffle ``x[lo:hi]`` in place."""
    for a in range(hi - 1, lo, -1):
        r = lo + _below(gen, a - lo + 1)
        tmp = x[a]
        x[a] = x[r]
        x[r] = tmp


@njit(cache=True, nogil=True)
def _perm_weights(mat, size, perm_table, p_lo, p_hi, weights):
    """Cumulative weights ``prod_a mat[a, pi_a]`` of the permutations ``p_lo..p_hi-1``
    into ``weights``; returns their total."""
    total = 0.0
    for p in range(p_lo, p_hi):
        w = 1.0
        for a in range(size):
            w *= mat[a, perm_table[p, a]]
        total += w
        weights[p] = total
    return total


@njit(cache=True, nogil=True)
def _pick(gen, weights, p_lo, p_hi, total):
    """One inverse-CDF draw among cumulative ``weights``; uniform when all underflowed.

    A draw at or beyond the last cumulative weight takes the last index (the callers pass
    ``total = weights[p_hi - 1]``, which ``random() * total`` never reaches)."""
    u = gen.random() * total
    if total > 0.0:
        for p in range(p_lo, p_hi):
            if u < weights[p]:
                return p
        return p_hi - 1
    return p_lo + _below(gen, p_hi - p_lo)


# the 24 orders of a group of 4 (which of the group's values each tuple takes), grouped by
# tuple 0's value (6 each), then tuple 1's, then the last two kept or swapped
_PERM4 = np.array(
    [
        [x, y, *(rest if swap == 0 else rest[::-1])]
        for x in range(4)
        for y in range(4)
        if y != x
        for rest in ([r for r in range(4) if r not in (x, y)],)
        for swap in (0, 1)
    ],
    dtype=np.int64,
)
# the 6 orders of a group of 3: tuple 0 takes v0 (the other two kept, swapped), v1, v2
_PERM3 = np.array(
    [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]], dtype=np.int64
)


@njit(cache=True, nogil=True, inline="always")
def _draw3(gen, score, combo_of, gval, assign, lo):
    """Exact draw of a group of 3 (Eq. 6): the 6 orders' weights from 9 look-ups, then one
    inverse-CDF draw from one ``random()`` (a branch-free count of the cumulative weights
    below it); when every weight vanishes, a second draw picks an order uniformly.  Returns
    the order's row of ``_PERM3`` (which of the group's values each tuple took)."""
    c0 = combo_of[lo]
    c1 = combo_of[lo + 1]
    c2 = combo_of[lo + 2]
    v0 = gval[lo]
    v1 = gval[lo + 1]
    v2 = gval[lo + 2]
    s10 = score[c1, v0]
    s11 = score[c1, v1]
    s12 = score[c1, v2]
    s20 = score[c2, v0]
    s21 = score[c2, v1]
    s22 = score[c2, v2]
    a0 = score[c0, v0]
    a1 = score[c0, v1]
    a2 = score[c0, v2]
    k0 = a0 * (s11 * s22)
    k1 = k0 + a0 * (s12 * s21)
    k2 = k1 + a1 * (s10 * s22)
    k3 = k2 + a1 * (s12 * s20)
    k4 = k3 + a2 * (s10 * s21)
    total = k4 + a2 * (s11 * s20)
    u = gen.random() * total
    if total > 0.0:
        pick = (
            np.int64(u >= k0) + np.int64(u >= k1) + np.int64(u >= k2)
            + np.int64(u >= k3) + np.int64(u >= k4)
        )  # fmt: skip
    else:
        pick = _below(gen, 6)
    assign[lo] = gval[lo + _PERM3[pick, 0]]
    assign[lo + 1] = gval[lo + _PERM3[pick, 1]]
    assign[lo + 2] = gval[lo + _PERM3[pick, 2]]
    return pick


@njit(cache=True, nogil=True, inline="always")
def _weights4(score, combo_of, gval, lo, w):
    """The 24 orders' weights of the group of 4 at ``lo`` into ``w``, in ``_PERM4``'s order:
    16 look-ups, tuples 2 and 3's 12 products (kept in order, swapped) and tuples 0 and 1's
    12 computed once, so 48 products instead of the 72 of the 24 orders one by one.  The
    draw (:func:`_draw4`) and the exact E-step (:func:`group_marginals_by_combo`) share it."""
    v0 = gval[lo]
    v1 = gval[lo + 1]
    v2 = gval[lo + 2]
    v3 = gval[lo + 3]
    e0 = combo_of[lo]
    e1 = combo_of[lo + 1]
    e2 = combo_of[lo + 2]
    e3 = combo_of[lo + 3]
    a0, a1, a2, a3 = score[e0, v0], score[e0, v1], score[e0, v2], score[e0, v3]
    b0, b1, b2, b3 = score[e1, v0], score[e1, v1], score[e1, v2], score[e1, v3]
    c0, c1, c2, c3 = score[e2, v0], score[e2, v1], score[e2, v2], score[e2, v3]
    d0, d1, d2, d3 = score[e3, v0], score[e3, v1], score[e3, v2], score[e3, v3]
    # tuples 2, 3 over each pair of values left: kept in order, swapped
    k23, s23 = c2 * d3, c3 * d2
    k13, s13 = c1 * d3, c3 * d1
    k12, s12 = c1 * d2, c2 * d1
    k03, s03 = c0 * d3, c3 * d0
    k02, s02 = c0 * d2, c2 * d0
    k01, s01 = c0 * d1, c1 * d0
    # tuples 0, 1: the 12 ordered pairs, in _PERM4's order
    q0, q1, q2 = a0 * b1, a0 * b2, a0 * b3
    q3, q4, q5 = a1 * b0, a1 * b2, a1 * b3
    q6, q7, q8 = a2 * b0, a2 * b1, a2 * b3
    q9, q10, q11 = a3 * b0, a3 * b1, a3 * b2
    w[0], w[1], w[2], w[3] = q0 * k23, q0 * s23, q1 * k13, q1 * s13
    w[4], w[5], w[6], w[7] = q2 * k12, q2 * s12, q3 * k23, q3 * s23
    w[8], w[9], w[10], w[11] = q4 * k03, q4 * s03, q5 * k02, q5 * s02
    w[12], w[13], w[14], w[15] = q6 * k13, q6 * s13, q7 * k03, q7 * s03
    w[16], w[17], w[18], w[19] = q8 * k01, q8 * s01, q9 * k12, q9 * s12
    w[20], w[21], w[22], w[23] = q10 * k02, q10 * s02, q11 * k01, q11 * s01


@njit(cache=True, nogil=True, inline="always")
def _draw4(gen, score, combo_of, gval, assign, lo, cum):
    """Exact draw of a group of 4 (Eq. 6) from one ``random()``: the 24 orders' weights
    (:func:`_weights4`), their cumulative sums, and a branch-free count of those below the
    draw.  The sums run as a tree (the 4 blocks of 6 orders that share tuple 0's value,
    then the blocks' bases), which shortens the chain of dependent additions from 23 to 9;
    every sum adds non-negative terms, so they never decrease.  When every weight vanishes,
    a second draw picks an order uniformly.

    ``cum`` (24) is a scratch array.  Returns the order's row of ``_PERM4`` (which of the
    group's values each tuple took)."""
    _weights4(score, combo_of, gval, lo, cum)
    for blk in range(0, 24, 6):  # each block's own cumulative sums (4 independent chains)
        for i in range(blk + 1, blk + 6):
            cum[i] += cum[i - 1]
    base1 = cum[5]
    base2 = base1 + cum[11]
    base3 = base2 + cum[17]
    total = base3 + cum[23]
    for i in range(6, 12):
        cum[i] += base1
    for i in range(12, 18):
        cum[i] += base2
    for i in range(18, 24):
        cum[i] += base3
    u = gen.random() * total
    if total > 0.0:
        pick = 0
        for i in range(23):
            pick += np.int64(u >= cum[i])
    else:
        pick = _below(gen, 24)
    x = _PERM4[pick, 0]
    y = _PERM4[pick, 1]
    z = _PERM4[pick, 2]
    w = _PERM4[pick, 3]
    assign[lo] = gval[lo + x]
    assign[lo + 1] = gval[lo + y]
    assign[lo + 2] = gval[lo + z]
    assign[lo + 3] = gval[lo + w]
    return x, y, z, w


@njit(cache=True, nogil=True)
def _record(post, assign, track_pos, trace, row):
    """One kept draw: every tuple's value counted, the tracked ones traced."""
    for t in range(assign.size):
        post[t, assign[t]] += 1.0
    for k in range(track_pos.size):
        trace[row, k] = assign[track_pos[k]]


@njit(cache=True, nogil=True)
def gibbs_run(
    gen,
    combo_of,
    combo_codes,
    attr_ptr,
    gtup_ptr,
    gval,
    perm_table,
    perm_ptr,
    prior_s,
    prior_r,
    assign,
    post,
    loglik,
    it_start,
    it_stop,
    burn_in,
    n_inner,
    track_pos,
    trace,
    beta=1.0,
):
    """Iterations ``it_start..it_stop-1`` of the deFinetti attack (Kifer 2009, Algorithms 1-2).

    Each iteration (Algorithm 1, lines 3-5): count the current assignment, draw the Naive-Bayes
    parameters from their Dirichlet posteriors (Eqs. 4-5), then resample every group's
    permutation from the distribution of Eq. 6, whose per-group factor is Eq. 7.  Groups of
    at most ``perm_table.shape[1]`` tuples are sampled exactly (all permutations enumerated);
    larger groups run ``n_inner`` Metropolis-Hastings steps with uniform (Knuth-shuffle)
    proposals (Algorithm 2), and groups above :data:`SHUFFLE_MAX` (a generalized table's
    classes of hundreds) one sweep of ``size`` pairwise-swap proposals, or, when all their
    members share one QI combination, a uniform shuffle (their exact draw).  Iterations
    ``>= burn_in`` add one count per tuple to ``post``.
    ``loglik[it]`` receives the collapsed log-likelihood of the assignment that iteration
    started from.  Returns the number of accepted MH proposals.

    ``track_pos`` (positions) and ``trace`` follow a few tuples: every kept iteration
    ``it >= burn_in`` writes their current values to ``trace[it - burn_in]`` (the
    convergence diagnostics of their posteriors).  ``loglik`` is indexed by ``it - it_start``.

    ``beta`` (default 1: the attack's posterior) tempers the likelihood: the chain then
    targets ``p(theta) * P(QIT, assignment | theta) ** beta``, whose two Gibbs conditionals
    are the Dirichlet draws with the counts multiplied by ``beta`` and the permutation draws
    with every Naive-Bayes score raised to ``beta`` (the annealed burn-in of
    :func:`privlab.attacks.definetti.run_definetti`; Kirkpatrick, Gelatt & Vecchi 1983,
    Neal 2001).  ``beta == 1`` runs exactly the untempered arithmetic.

    Compiled with ``nogil``: chains run in parallel threads, each with its own generator and
    arrays, so the result for a seed does not depend on the number of threads.

    The kernel works in *group order*: position ``i`` is the ``i``-th tuple of the groups laid
    end to end (``combo_of``, ``assign`` and ``post`` are indexed by position), so that every
    inner loop reads memory sequentially.
    """
    n = combo_of.size
    n_combo = combo_codes.shape[0]
    n_attr = combo_codes.shape[1]
    m = post.shape[1]
    n_flat = attr_ptr[n_attr]
    exact_max = perm_table.shape[1]
    n_groups = gtup_ptr.size - 1

    # counts of the current assignment per (QI combination, value); integers, whose
    # increments in the group loop are cheaper than a float's
    cv = np.zeros((n_combo, m), dtype=np.int64)
    cv_next = np.zeros((n_combo, m), dtype=np.int64)
    cum = np.zeros(24)
    # the kept draws of groups of at most 4, counted per (position, which of its group's
    # values): size**2 int32 counts a group, folded into ``post`` at the end of the call
    # (a 1.9M-row release's post is 213 MB of float64, which a count per tuple and
    # iteration would sweep through; these counts are 16 bytes a tuple at l = 4)
    # (the groups drawn in closed form: sizes 1 and 2, and 3 and 4 unless exact_max is
    # smaller; the others count into ``post`` directly)
    slot_max = min(4, max(2, exact_max))
    slot_ptr = np.zeros(n_groups + 1, dtype=np.int64)
    for g in range(n_groups):
        size = gtup_ptr[g + 1] - gtup_ptr[g]
        slot_ptr[g + 1] = slot_ptr[g] + (size * size if size <= slot_max else 0)
    slots = np.zeros(slot_ptr[n_groups] if burn_in < it_stop else 0, dtype=np.int32)
    counted = False
    flat_counts = np.zeros((n_flat, m))
    value_counts = np.zeros(m)
    theta = np.zeros(m)
    phi = np.zeros((n_flat, m))
    score = np.zeros((n_combo, m))
    log_score = np.zeros((n_combo, m))
    shape = np.zeros(max(m, n_flat))
    buf = np.zeros(max(m, n_flat))
    mat = np.zeros((exact_max, exact_max))
    weights = np.zeros(perm_table.shape[0])
    prop = np.zeros(n, dtype=np.int64)
    accepted = 0
    tempered = beta != 1.0
    # the log-scores serve the Metropolis-Hastings groups (above exact_max) and the
    # tempered scores only: without either, no logarithm per (combination, value)
    need_log = tempered
    # the large groups whose members all share one QI combination
    one_combo = np.zeros(n_groups, dtype=np.bool_)
    for g in range(n_groups):
        lo = gtup_ptr[g]
        hi = gtup_ptr[g + 1]
        if hi - lo > exact_max:
            need_log = True
        if hi - lo > SHUFFLE_MAX:
            same = True
            for a in range(lo + 1, hi):
                if combo_of[a] != combo_of[lo]:
                    same = False
                    break
            one_combo[g] = same

    for it in range(it_start, it_stop):
        # -- sufficient statistics of the current assignment (after the first iteration,
        # counted while the groups were resampled) ----------------------------------------
        if not counted:
            cv[:, :] = 0
            for t in range(n):
                cv[combo_of[t], assign[t]] += 1
        flat_counts[:, :] = 0.0
        value_counts[:] = 0.0
        for c in range(n_combo):
            for s in range(m):
                k = float(cv[c, s])
                if k > 0.0:
                    value_counts[s] += k
                    for j in range(n_attr):
                        flat_counts[combo_codes[c, j], s] += k
        loglik[it - it_start] = _collapsed_loglik(
            flat_counts, value_counts, attr_ptr, prior_s, prior_r
        )

        # -- Eqs. 4 and 5: draw the Naive-Bayes parameters ------------------------------
        for s in range(m):
            shape[s] = prior_s[s] + (beta * value_counts[s] if tempered else value_counts[s])
        _dirichlet_fill(gen, shape[:m], theta)
        for j in range(n_attr):
            lo = attr_ptr[j]
            hi = attr_ptr[j + 1]
            for s in range(m):
                for x in range(lo, hi):
                    c = flat_counts[x, s]
                    shape[x - lo] = prior_r[x] + (beta * c if tempered else c)
                _dirichlet_fill(gen, shape[: hi - lo], buf[: hi - lo])
                for x in range(lo, hi):
                    phi[x, s] = buf[x - lo]
        # Naive-Bayes score of every (QI combination, value): the factor of Eq. 7, each
        # combination's scores divided by their largest (a factor common to every
        # permutation of a group, so the draws are unchanged and products cannot underflow)
        for c in range(n_combo):
            mx = 0.0
            for s in range(m):
                v = theta[s]
                for j in range(n_attr):
                    v *= phi[combo_codes[c, j], s]
                if need_log:
                    lv = math.log(v) if v > 0.0 else -1e300
                    if tempered:
                        lv *= beta
                        v = math.exp(lv)
                    log_score[c, s] = lv
                score[c, s] = v
                if v > mx:
                    mx = v
            inv = 1.0 / mx if mx > 0.0 else 1.0
            for s in range(m):
                score[c, s] *= inv
            if need_log:
                lmx = math.log(mx) if mx > 0.0 else 0.0
                for s in range(m):
                    if log_score[c, s] > -1e299:
                        log_score[c, s] -= lmx

        # -- Eq. 6 / Algorithm 2: resample each group's permutation ---------------------
        cv_next[:, :] = 0
        rec = it >= burn_in
        for g in range(n_groups):
            lo = gtup_ptr[g]
            size = gtup_ptr[g + 1] - lo
            off = slot_ptr[g]
            if size == 2:
                # the common case, in closed form: two permutations
                c0 = combo_of[lo]
                c1 = combo_of[lo + 1]
                v0 = gval[lo]
                v1 = gval[lo + 1]
                w_keep = score[c0, v0] * score[c1, v1]
                w_swap = score[c0, v1] * score[c1, v0]
                tot = w_keep + w_swap
                if tot > 0.0:
                    keep = gen.random() * tot < w_keep
                else:
                    keep = gen.random() < 0.5
                # branch-free: the draw is a coin the branch predictor cannot learn
                a0 = v1 + np.int64(keep) * (v0 - v1)
                a1 = v0 + v1 - a0
                assign[lo] = a0
                assign[lo + 1] = a1
                cv_next[c0, a0] += 1
                cv_next[c1, a1] += 1
                if rec:
                    sw = 1 - np.int64(keep)
                    slots[off + sw] += 1
                    slots[off + 3 - sw] += 1
                continue
            if size == 1:
                assign[lo] = gval[lo]
                if rec:
                    slots[off] += 1
            elif size == 3 and exact_max >= 3:
                p3 = _draw3(gen, score, combo_of, gval, assign, lo)
                if rec:
                    slots[off + _PERM3[p3, 0]] += 1
                    slots[off + 3 + _PERM3[p3, 1]] += 1
                    slots[off + 6 + _PERM3[p3, 2]] += 1
            elif size == 4 and exact_max >= 4:
                x, y, z, w = _draw4(gen, score, combo_of, gval, assign, lo, cum)
                if rec:
                    slots[off + x] += 1
                    slots[off + 4 + y] += 1
                    slots[off + 8 + z] += 1
                    slots[off + 12 + w] += 1
            elif size <= exact_max:
                # exact: weight of every permutation, then one inverse-CDF draw
                for a in range(size):
                    c = combo_of[lo + a]
                    mx = 0.0
                    for b in range(size):
                        w = score[c, gval[lo + b]]
                        mat[a, b] = w
                        if w > mx:
                            mx = w
                    if mx > 0.0:
                        inv = 1.0 / mx
                        for b in range(size):
                            mat[a, b] *= inv
                p_lo = perm_ptr[size]
                p_hi = perm_ptr[size + 1]
                total = _perm_weights(mat, size, perm_table, p_lo, p_hi, weights)
                pick = _pick(gen, weights, p_lo, p_hi, total)
                for a in range(size):
                    assign[lo + a] = gval[lo + perm_table[pick, a]]
            elif size > SHUFFLE_MAX and one_combo[g]:
                # a large group whose members share one QI combination (a generalized
                # table's class as published): every arrangement of its values is equally
                # likely, so a uniform shuffle is its exact draw (counted as ``size``
                # accepted proposals; the swap sweep below would accept every swap)
                _knuth(gen, assign, lo, lo + size)
                accepted += size
            elif size > SHUFFLE_MAX:
                # a large group (a generalized table's class): one sweep of Metropolis-
                # Hastings swaps, ``size`` proposals that exchange two members' values (a
                # symmetric proposal; a uniform reshuffle of hundreds of values is never
                # accepted)
                for _ in range(size):
                    a = lo + _below(gen, size)
                    b = lo + _below(gen, size)
                    va = assign[a]
                    vb = assign[b]
                    if va == vb:
                        continue
                    ca = combo_of[a]
                    cb = combo_of[b]
                    delta = (
                        log_score[ca, vb]
                        + log_score[cb, va]
                        - log_score[ca, va]
                        - log_score[cb, vb]
                    )
                    if delta >= 0.0 or gen.random() < math.exp(delta):
                        assign[a] = vb
                        assign[b] = va
                        accepted += 1
            else:
                # Metropolis-Hastings with Knuth-shuffle (uniform) proposals (Algorithm 2)
                cur = 0.0
                for a in range(size):
                    cur += log_score[combo_of[lo + a], assign[lo + a]]
                for _ in range(n_inner):
                    for a in range(size):
                        prop[a] = gval[lo + a]
                    _knuth(gen, prop, 0, size)
                    new = 0.0
                    for a in range(size):
                        new += log_score[combo_of[lo + a], prop[a]]
                    if new >= cur or gen.random() < math.exp(new - cur):
                        for a in range(size):
                            assign[lo + a] = prop[a]
                        cur = new
                        accepted += 1
            for a in range(lo, lo + size):  # the next iteration's counts
                cv_next[combo_of[a], assign[a]] += 1
            if rec and size > slot_max:  # a kept draw of a group the slots do not count
                for a in range(lo, lo + size):
                    post[a, assign[a]] += 1.0
        cv, cv_next = cv_next, cv
        counted = True

        if rec:
            for k in range(track_pos.size):
                trace[it - burn_in, k] = assign[track_pos[k]]
    if slots.size:  # the kept draws of the small groups, into post
        for g in range(n_groups):
            lo = gtup_ptr[g]
            size = gtup_ptr[g + 1] - lo
            off = slot_ptr[g]
            if size > slot_max:
                continue
            for a in range(size):
                for b in range(size):
                    k = slots[off + a * size + b]
                    if k:
                        post[lo + a, gval[lo + b]] += k
    return accepted


@njit(cache=True, nogil=True)
def _pred(flat_counts, value_counts, den, combo_codes, c, s, prior_r):
    """Collapsed predictive factor of a tuple of QI combination ``c`` taking value ``s``:
    ``prod_j (n_{j,x_j,s} + beta) / (n_s + |D_j| beta)`` (the Dirichlet-multinomial
    posterior predictive of its QI values given ``s``, Eq. 5's parameters integrated out)."""
    v = 1.0
    for j in range(combo_codes.shape[1]):
        x = combo_codes[c, j]
        v *= (flat_counts[x, s] + prior_r[x]) / (value_counts[s] + den[j])
    return v


@njit(cache=True, nogil=True)
def _move(flat_counts, value_counts, combo_codes, c, s, d):
    value_counts[s] += d
    for j in range(combo_codes.shape[1]):
        flat_counts[combo_codes[c, j], s] += d


@njit(cache=True, nogil=True)
def _collapsed_state(combo_of, assign, combo_codes, attr_ptr, prior_r, m):
    """The collapsed samplers' counts of an assignment: ``flat_counts[x, s]`` and
    ``value_counts[s]``, and ``den[j]``, the sum of attribute ``j``'s Dirichlet prior
    (the denominators of :func:`_pred`)."""
    n_attr = combo_codes.shape[1]
    flat_counts = np.zeros((attr_ptr[n_attr], m))
    value_counts = np.zeros(m)
    den = np.zeros(n_attr)
    for j in range(n_attr):
        for x in range(attr_ptr[j], attr_ptr[j + 1]):
            den[j] += prior_r[x]
    for t in range(combo_of.size):
        _move(flat_counts, value_counts, combo_codes, combo_of[t], assign[t], 1.0)
    return flat_counts, value_counts, den


@njit(cache=True, nogil=True)
def _group_logw(flat_counts, value_counts, den, combo_codes, combo_of, lo, vals, prior_r):
    """log P(the group's tuples take ``vals`` | every other tuple), parameters integrated
    out: the sequential Dirichlet-multinomial predictive (exact with repeated values).  The
    counts hold the rest of the table; they are restored before returning."""
    size = vals.size
    lw = 0.0
    for a in range(size):
        s = vals[a]
        c = combo_of[lo + a]
        lw += math.log(_pred(flat_counts, value_counts, den, combo_codes, c, s, prior_r))
        _move(flat_counts, value_counts, combo_codes, c, s, 1.0)
    for a in range(size):
        _move(flat_counts, value_counts, combo_codes, combo_of[lo + a], vals[a], -1.0)
    return lw


@njit(cache=True, nogil=True)
def collapsed_gibbs_run(
    gen,
    combo_of,
    combo_codes,
    attr_ptr,
    gtup_ptr,
    gval,
    perm_table,
    perm_ptr,
    prior_s,
    prior_r,
    assign,
    post,
    loglik,
    it_start,
    it_stop,
    burn_in,
    n_inner,
    track_pos,
    trace,
    beta=1.0,
):
    """The deFinetti attack's target by *collapsed* Gibbs sampling: same arguments and the
    same posterior ``P(assignment | T)`` as :func:`gibbs_run`, with the Naive-Bayes parameters
    integrated out instead of drawn.

    Each group's permutation is drawn in turn from its conditional given every other group's
    current assignment (Dirichlet-multinomial predictives; the values' own factor
    ``n_s + alpha`` is the same for every permutation of the group's multiset and cancels),
    the counts updated at once (Liu 1994, "The collapsed Gibbs sampler", JASA 89).  It moves
    one group at a time where Kifer's Algorithm 1 moves every group at once given drawn
    parameters; which crosses modes better depends on the release (see
    :func:`privlab.attacks.definetti.run_definetti`'s ``sampler``).

    ``beta`` (default 1) tempers the target to ``P(QIT, assignment) ** beta``: every
    conditional weight (predictive product, Metropolis-Hastings ratio) is raised to ``beta``.
    """
    m = post.shape[1]
    exact_max = perm_table.shape[1]
    n_groups = gtup_ptr.size - 1
    flat_counts, value_counts, den = _collapsed_state(combo_of, assign, combo_codes, attr_ptr,
                                                      prior_r, m)  # fmt: skip
    mat = np.zeros((exact_max, exact_max))
    weights = np.zeros(perm_table.shape[0])
    vals = np.zeros(max(exact_max, SHUFFLE_MAX), dtype=np.int64)
    prop = np.zeros(max(exact_max, SHUFFLE_MAX), dtype=np.int64)
    accepted = 0
    tempered = beta != 1.0

    for it in range(it_start, it_stop):
        loglik[it - it_start] = _collapsed_loglik(
            flat_counts, value_counts, attr_ptr, prior_s, prior_r
        )
        for g in range(n_groups):
            lo = gtup_ptr[g]
            size = gtup_ptr[g + 1] - lo
            if size == 1:
                continue
            if size > SHUFFLE_MAX:
                # sweeps of Metropolis-Hastings swaps: with the two tuples taken out, a swap of
                # two different values changes only their own predictive factors
                for _ in range(size):
                    a = lo + _below(gen, size)
                    b = lo + _below(gen, size)
                    va = assign[a]
                    vb = assign[b]
                    if va == vb:
                        continue
                    ca = combo_of[a]
                    cb = combo_of[b]
                    _move(flat_counts, value_counts, combo_codes, ca, va, -1.0)
                    _move(flat_counts, value_counts, combo_codes, cb, vb, -1.0)
                    ratio = _pred(flat_counts, value_counts, den, combo_codes, ca, vb, prior_r)
                    ratio *= _pred(flat_counts, value_counts, den, combo_codes, cb, va, prior_r)
                    ratio /= _pred(flat_counts, value_counts, den, combo_codes, ca, va, prior_r)
                    ratio /= _pred(flat_counts, value_counts, den, combo_codes, cb, vb, prior_r)
                    if tempered:
                        ratio = ratio**beta
                    if ratio >= 1.0 or gen.random() < ratio:
                        assign[a] = vb
                        assign[b] = va
                        va, vb = vb, va
                        accepted += 1
                    _move(flat_counts, value_counts, combo_codes, ca, va, 1.0)
                    _move(flat_counts, value_counts, combo_codes, cb, vb, 1.0)
                continue
            # take the group out of the counts
            distinct = True
            for a in range(size):
                c = combo_of[lo + a]
                _move(flat_counts, value_counts, combo_codes, c, assign[lo + a], -1.0)
                for b in range(a):
                    if gval[lo + a] == gval[lo + b]:
                        distinct = False
            if size <= exact_max:
                p_lo = perm_ptr[size]
                p_hi = perm_ptr[size + 1]
                total = 0.0
                if distinct:
                    # distinct values: the predictive of the permutation factorizes
                    for a in range(size):
                        c = combo_of[lo + a]
                        mx = 0.0
                        for b in range(size):
                            w = _pred(flat_counts, value_counts, den, combo_codes, c,
                                      gval[lo + b], prior_r)  # fmt: skip
                            if tempered:
                                w = w**beta
                            mat[a, b] = w
                            if w > mx:
                                mx = w
                        if mx > 0.0:
                            for b in range(size):
                                mat[a, b] /= mx
                    total = _perm_weights(mat, size, perm_table, p_lo, p_hi, weights)
                else:
                    # repeated values: the exact sequential predictive of each permutation
                    base = 0.0
                    for p in range(p_lo, p_hi):
                        for a in range(size):
                            vals[a] = gval[lo + perm_table[p, a]]
                        lw = _group_logw(flat_counts, value_counts, den, combo_codes, combo_of,
                                         lo, vals[:size], prior_r)  # fmt: skip
                        if tempered:
                            lw *= beta
                        if p == p_lo:
                            base = lw
                        total += math.exp(lw - base)
                        weights[p] = total
                pick = _pick(gen, weights, p_lo, p_hi, total)
                for a in range(size):
                    assign[lo + a] = gval[lo + perm_table[pick, a]]
            else:
                # Metropolis-Hastings with Knuth-shuffle proposals (Algorithm 2), collapsed
                for a in range(size):
                    vals[a] = assign[lo + a]
                cur = _group_logw(flat_counts, value_counts, den, combo_codes, combo_of, lo,
                                  vals[:size], prior_r)  # fmt: skip
                if tempered:
                    cur *= beta
                for _ in range(n_inner):
                    for a in range(size):
                        prop[a] = gval[lo + a]
                    _knuth(gen, prop, 0, size)
                    new = _group_logw(flat_counts, value_counts, den, combo_codes, combo_of, lo,
                                      prop[:size], prior_r)  # fmt: skip
                    if tempered:
                        new *= beta
                    if new >= cur or gen.random() < math.exp(new - cur):
                        for a in range(size):
                            assign[lo + a] = prop[a]
                        cur = new
                        accepted += 1
            # and back in, with its new permutation
            for a in range(size):
                c = combo_of[lo + a]
                _move(flat_counts, value_counts, combo_codes, c, assign[lo + a], 1.0)

        if it >= burn_in:
            _record(post, assign, track_pos, trace, it - burn_in)
    return accepted


@njit(cache=True, nogil=True)
def shuffle_within_groups(gen, gtup_ptr, gval, assign):
    """A uniformly random permutation of every group's values (Algorithm 1, line 1).

    Group order, as :func:`gibbs_run`: ``assign[i]`` is the value of the ``i``-th position.
    """
    n_groups = gtup_ptr.size - 1
    for g in range(n_groups):
        lo = gtup_ptr[g]
        hi = gtup_ptr[g + 1]
        for a in range(lo, hi):
            assign[a] = gval[a]
        _knuth(gen, assign, lo, hi)


@njit(cache=True)
def group_marginals(scores, gtup_ptr, gtup, gval, perm_table, perm_ptr, mode, out):
    """Per-tuple marginals of a distribution over each group's permutations.

    ``scores[t, v]`` is tuple ``t``'s (unnormalized) weight for value ``v``.

    * ``mode == 0``: ``Pr(pi) \\propto prod_m scores[t_m, pi_m]`` (Mothali 2011 Ch. 4 exact E-step
      with ``scores = psi * prod w``; Ch. 5.2 with ``scores = gamma``).
    * ``mode == 1``: the calibrated ``Pr(pi) = 1/g! sum_m p~[t_m, pi_m]`` of Mothali 2011 Ch. 5.3,
      with ``p~`` each tuple's scores normalized over the group's values.

    ``out[t, v]`` receives ``Pr(t.S = v) = sum_{pi: pi_t = v} Pr(pi)``.  Returns
    ``sum_g log Z_g`` for mode 0 (the log-likelihood of the release when ``scores`` are the
    Naive-Bayes joint probabilities), 0 for mode 1.
    """
    exact_max = perm_table.shape[1]
    n_groups = gtup_ptr.size - 1
    mat = np.zeros((exact_max, exact_max))
    marg = np.zeros((exact_max, exact_max))
    logz = 0.0
    for g in range(n_groups):
        lo = gtup_ptr[g]
        size = gtup_ptr[g + 1] - lo
        for a in range(size):
            t = gtup[lo + a]
            mx = 0.0
            rs = 0.0
            for b in range(size):
                w = scores[t, gval[lo + b]]
                mat[a, b] = w
                rs += w
                if w > mx:
                    mx = w
            d = mx if mode == 0 else rs
            if d > 0.0:
                for b in range(size):
                    mat[a, b] /= d
                if mode == 0:
                    logz += math.log(mx)
            elif mode == 1:
                for b in range(size):
                    mat[a, b] = 1.0 / size
            for b in range(size):
                marg[a, b] = 0.0
        total = 0.0
        for p in range(perm_ptr[size], perm_ptr[size + 1]):
            if mode == 0:
                w = 1.0
                for a in range(size):
                    w *= mat[a, perm_table[p, a]]
            else:
                w = 0.0
                for a in range(size):
                    w += mat[a, perm_table[p, a]]
            total += w
            for a in range(size):
                marg[a, perm_table[p, a]] += w
        if total > 0.0:
            if mode == 0:
                logz += math.log(total)
            for a in range(size):
                t = gtup[lo + a]
                for b in range(size):
                    out[t, gval[lo + b]] += marg[a, b] / total
        else:
            logz += -1e300
            for a in range(size):
                t = gtup[lo + a]
                for b in range(size):
                    out[t, gval[lo + b]] += 1.0 / size
    return logz


@njit(cache=True, nogil=True)
def _order_marginals(mat, size, perm_table, perm_ptr, marg):
    """Every order of a group of ``size`` enumerated: ``marg[a, b]`` the summed weight
    (``prod_a mat[a, pi_a]``) of the orders giving tuple ``a`` value ``b``; returns their
    total."""
    for a in range(size):
        for b in range(size):
            marg[a, b] = 0.0
    total = 0.0
    for p in range(perm_ptr[size], perm_ptr[size + 1]):
        w = 1.0
        for a in range(size):
            w *= mat[a, perm_table[p, a]]
        total += w
        for a in range(size):
            marg[a, perm_table[p, a]] += w
    return total


@njit(cache=True, nogil=True)
def _marginals_rescaled(scores, combo_of, gval, lo, size, perm_table, perm_ptr, mat, marg, out):
    """One group's exact marginals into ``out`` with each tuple's row of weights divided by
    its largest (products of tiny weights cannot underflow); returns the group's ``log Z``
    relative to ``scores`` (``-1e300`` when every weight vanishes: each tuple uniform)."""
    logz = 0.0
    for a in range(size):
        c = combo_of[lo + a]
        mx = 0.0
        for b in range(size):
            w = scores[c, gval[lo + b]]
            mat[a, b] = w
            if w > mx:
                mx = w
        if mx > 0.0:
            for b in range(size):
                mat[a, b] /= mx
            logz += math.log(mx)
    total = _order_marginals(mat, size, perm_table, perm_ptr, marg)
    if total > 0.0:
        for a in range(size):
            c = combo_of[lo + a]
            for b in range(size):
                out[c, gval[lo + b]] += marg[a, b] / total
        return logz + math.log(total)
    for a in range(size):
        c = combo_of[lo + a]
        for b in range(size):
            out[c, gval[lo + b]] += 1.0 / size
    return -1e300


#: A group's total weight (from per-combination normalized scores) below which its
#: marginals are computed again with each tuple's weights rescaled (no underflow).
_TINY = 1e-250


@njit(cache=True, nogil=True)
def group_marginals_by_combo(scores, combo_of, gtup_ptr, gval, perm_table, perm_ptr, out):
    """The exact E-step (:func:`group_marginals`, ``mode == 0``) summed per QI combination.

    ``scores[c, v]`` is the weight of combination ``c`` for value ``v`` (``psi_v prod_j
    w``); ``combo_of`` is in group order (position ``i`` is the ``i``-th tuple of the groups
    laid end to end).  ``out[c, v]`` receives ``sum_{t in c} Pr(t.S = v)``, all the M-step
    needs, without an ``(N, m)`` array; returns ``sum_g log Z_g``.

    Each combination's scores are divided by their largest once (its log counted once per
    tuple of it), groups of 2, 3 and 4 are in closed form (4: the 24 orders' weights of
    :func:`_weights4`, as the draw's), and the groups' totals are multiplied
    together with a logarithm taken only when the product leaves ``[1e-20, 1e280]``: no
    logarithm per tuple.  A group whose total falls below :data:`_TINY` (scores that
    nearly vanish on its values) is computed again with every tuple's weights rescaled,
    as before.
    """
    exact_max = perm_table.shape[1]
    n_groups = gtup_ptr.size - 1
    n_combo = scores.shape[0]
    m = scores.shape[1]
    norm = np.zeros((n_combo, m))
    log_mx = np.zeros(n_combo)
    for c in range(n_combo):
        mx = 0.0
        for v in range(m):
            if scores[c, v] > mx:
                mx = scores[c, v]
        if mx > 0.0:
            inv = 1.0 / mx
            for v in range(m):
                norm[c, v] = scores[c, v] * inv
            log_mx[c] = math.log(mx)
    mat = np.zeros((exact_max, exact_max))
    marg = np.zeros((exact_max, exact_max))
    w24 = np.zeros(24)
    logz = 0.0
    for t in range(combo_of.size):
        logz += log_mx[combo_of[t]]
    acc = 1.0  # the product of the groups' totals not yet in logz
    for g in range(n_groups):
        lo = gtup_ptr[g]
        size = gtup_ptr[g + 1] - lo
        if size == 2:
            c0 = combo_of[lo]
            c1 = combo_of[lo + 1]
            v0 = gval[lo]
            v1 = gval[lo + 1]
            keep = norm[c0, v0] * norm[c1, v1]
            swap = norm[c0, v1] * norm[c1, v0]
            total = keep + swap
            if total >= _TINY:
                k = keep / total
                s = swap / total
                out[c0, v0] += k
                out[c1, v1] += k
                out[c0, v1] += s
                out[c1, v0] += s
                acc *= total
            else:
                logz += _marginals_rescaled(norm, combo_of, gval, lo, size, perm_table,
                                            perm_ptr, mat, marg, out)  # fmt: skip
        elif size == 3:
            c0 = combo_of[lo]
            c1 = combo_of[lo + 1]
            c2 = combo_of[lo + 2]
            v0 = gval[lo]
            v1 = gval[lo + 1]
            v2 = gval[lo + 2]
            a0, a1, a2 = norm[c0, v0], norm[c0, v1], norm[c0, v2]
            b0, b1, b2 = norm[c1, v0], norm[c1, v1], norm[c1, v2]
            d0, d1, d2 = norm[c2, v0], norm[c2, v1], norm[c2, v2]
            # the 6 orders (_PERM3's): tuple 0 takes v0, v1, v2; the other two kept, swapped
            w0 = a0 * b1 * d2
            w1 = a0 * b2 * d1
            w2 = a1 * b0 * d2
            w3 = a1 * b2 * d0
            w4 = a2 * b0 * d1
            w5 = a2 * b1 * d0
            total = ((w0 + w1) + (w2 + w3)) + (w4 + w5)
            if total >= _TINY:
                inv = 1.0 / total
                out[c0, v0] += (w0 + w1) * inv
                out[c0, v1] += (w2 + w3) * inv
                out[c0, v2] += (w4 + w5) * inv
                out[c1, v0] += (w2 + w4) * inv
                out[c1, v1] += (w0 + w5) * inv
                out[c1, v2] += (w1 + w3) * inv
                out[c2, v0] += (w3 + w5) * inv
                out[c2, v1] += (w1 + w4) * inv
                out[c2, v2] += (w0 + w2) * inv
                acc *= total
            else:
                logz += _marginals_rescaled(norm, combo_of, gval, lo, size, perm_table,
                                            perm_ptr, mat, marg, out)  # fmt: skip
        elif size == 4:
            c0 = combo_of[lo]
            c1 = combo_of[lo + 1]
            c2 = combo_of[lo + 2]
            c3 = combo_of[lo + 3]
            v0 = gval[lo]
            v1 = gval[lo + 1]
            v2 = gval[lo + 2]
            v3 = gval[lo + 3]
            _weights4(norm, combo_of, gval, lo, w24)  # the 24 orders', in _PERM4's order
            w0, w1, w2, w3, w4, w5 = w24[0], w24[1], w24[2], w24[3], w24[4], w24[5]
            w6, w7, w8, w9, w10, w11 = w24[6], w24[7], w24[8], w24[9], w24[10], w24[11]
            w12, w13, w14, w15 = w24[12], w24[13], w24[14], w24[15]
            w16, w17, w18, w19 = w24[16], w24[17], w24[18], w24[19]
            w20, w21, w22, w23 = w24[20], w24[21], w24[22], w24[23]
            x0 = ((w0 + w1) + (w2 + w3)) + (w4 + w5)
            x1 = ((w6 + w7) + (w8 + w9)) + (w10 + w11)
            x2 = ((w12 + w13) + (w14 + w15)) + (w16 + w17)
            x3 = ((w18 + w19) + (w20 + w21)) + (w22 + w23)
            total = (x0 + x1) + (x2 + x3)
            if total >= _TINY:
                inv = 1.0 / total
                out[c0, v0] += x0 * inv
                out[c0, v1] += x1 * inv
                out[c0, v2] += x2 * inv
                out[c0, v3] += x3 * inv
                out[c1, v0] += (((w6 + w7) + (w12 + w13)) + (w18 + w19)) * inv
                out[c1, v1] += (((w0 + w1) + (w14 + w15)) + (w20 + w21)) * inv
                out[c1, v2] += (((w2 + w3) + (w8 + w9)) + (w22 + w23)) * inv
                out[c1, v3] += (((w4 + w5) + (w10 + w11)) + (w16 + w17)) * inv
                out[c2, v0] += (((w8 + w10) + (w14 + w16)) + (w20 + w22)) * inv
                out[c2, v1] += (((w2 + w4) + (w12 + w17)) + (w18 + w23)) * inv
                out[c2, v2] += (((w0 + w5) + (w6 + w11)) + (w19 + w21)) * inv
                out[c2, v3] += (((w1 + w3) + (w7 + w9)) + (w13 + w15)) * inv
                out[c3, v0] += (((w9 + w11) + (w15 + w17)) + (w21 + w23)) * inv
                out[c3, v1] += (((w3 + w5) + (w13 + w16)) + (w19 + w22)) * inv
                out[c3, v2] += (((w1 + w4) + (w7 + w10)) + (w18 + w20)) * inv
                out[c3, v3] += (((w0 + w2) + (w6 + w8)) + (w12 + w14)) * inv
                acc *= total
            else:
                logz += _marginals_rescaled(norm, combo_of, gval, lo, size, perm_table,
                                            perm_ptr, mat, marg, out)  # fmt: skip
        else:
            for a in range(size):
                c = combo_of[lo + a]
                for b in range(size):
                    mat[a, b] = norm[c, gval[lo + b]]
            total = _order_marginals(mat, size, perm_table, perm_ptr, marg)
            if total >= _TINY:
                inv = 1.0 / total
                for a in range(size):
                    c = combo_of[lo + a]
                    for b in range(size):
                        out[c, gval[lo + b]] += marg[a, b] * inv
                acc *= total
            else:
                logz += _marginals_rescaled(norm, combo_of, gval, lo, size, perm_table,
                                            perm_ptr, mat, marg, out)  # fmt: skip
        if acc < 1e-20 or acc > 1e280:
            logz += math.log(acc)
            acc = 1.0
    return logz + math.log(acc)


@njit(cache=True, nogil=True)
def multiset_marginals(s, counts, stride, out):
    """The forward-backward of :func:`privlab.attacks.control._dp_marginals` compiled:
    ``out[i, v]`` proportional to the sum of ``prod_t s[t, pi_t]`` over the assignments
    ``pi`` of the group's multiset of values (value ``v`` ``counts[v]`` times) in which row
    ``i`` gets ``v``; rows normalized.

    The state is the multiset not yet assigned, in mixed radix (``stride``).  A state's
    contributions are added in the order of ``v``, as the vectorized version adds them, and
    each layer is divided by its sum (the scale cancels in each row's normalization)."""
    k, d = s.shape
    n_states = 1
    for v in range(d):
        n_states *= counts[v] + 1
    fwd = np.zeros((k + 1, n_states))
    bwd = np.zeros((k + 1, n_states))
    start = 0
    for v in range(d):
        start += counts[v] * stride[v]
    fwd[0, start] = 1.0
    bwd[k, 0] = 1.0
    digits = np.empty((n_states, d), dtype=np.int64)
    for r in range(n_states):
        for v in range(d):
            digits[r, v] = (r // stride[v]) % (counts[v] + 1)
    for i in range(k):
        for v in range(d):
            w = s[i, v]
            for r in range(n_states):
                if digits[r, v] > 0:
                    fwd[i + 1, r - stride[v]] += fwd[i, r] * w
        tot = 0.0
        for r in range(n_states):
            tot += fwd[i + 1, r]
        for r in range(n_states):
            fwd[i + 1, r] /= tot
    for i in range(k - 1, -1, -1):
        for v in range(d):
            w = s[i, v]
            for r in range(n_states):
                if digits[r, v] > 0:
                    bwd[i, r] += bwd[i + 1, r - stride[v]] * w
        tot = 0.0
        for r in range(n_states):
            tot += bwd[i, r]
        for r in range(n_states):
            bwd[i, r] /= tot
    for i in range(k):
        row = 0.0
        for v in range(d):
            acc = 0.0
            for r in range(n_states):
                if digits[r, v] > 0:
                    acc += fwd[i, r] * bwd[i + 1, r - stride[v]]
            out[i, v] = acc * s[i, v]
            row += out[i, v]
        for v in range(d):
            out[i, v] /= row


@njit(cache=True, nogil=True)
def _pairwise_block(a, lo, n):
    """numpy's pairwise sum of at most 128 contiguous terms (8 running sums)."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - (n % 8):
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True, nogil=True)
def _pairwise_long(a, lo, n):
    """numpy's pairwise sum above 128 terms, without recursion: the halving tree's leaves
    (pieces of at most 128) summed left to right, each internal node the sum of its two
    children (a post-order walk with an explicit stack)."""
    # stack of (lo, n, state); state 0: not expanded, 1: left child done
    stack_lo = np.empty(64, dtype=np.int64)
    stack_n = np.empty(64, dtype=np.int64)
    stack_state = np.empty(64, dtype=np.int64)
    stack_left = np.empty(64)
    top = 0
    stack_lo[0], stack_n[0], stack_state[0] = lo, n, 0
    result = 0.0
    while top >= 0:
        cur_lo, cur_n = stack_lo[top], stack_n[top]
        if cur_n <= 128:
            result = _pairwise_block(a, cur_lo, cur_n)
            top -= 1
            # hand the result to the parent
            while top >= 0:
                if stack_state[top] == 0:
                    stack_left[top] = result
                    stack_state[top] = 1
                    half = stack_n[top] // 2
                    half -= half % 8
                    top += 1
                    stack_lo[top] = stack_lo[top - 1] + half
                    stack_n[top] = stack_n[top - 1] - half
                    stack_state[top] = 0
                    break
                result = stack_left[top] + result
                top -= 1
            continue
        half = cur_n // 2
        half -= half % 8
        top += 1
        stack_lo[top], stack_n[top], stack_state[top] = cur_lo, half, 0
    return result


@njit(cache=True, nogil=True)
def _pairwise_sum(a, lo, n):
    """``a[lo:lo + n].sum()`` added as numpy adds a contiguous row (its pairwise sum: 8
    running sums for up to 128 terms, halves above), so that a compiled loop gives numpy's
    bits (checked against the numpy version in tests/test_attack_statistics.py)."""
    if n <= 128:
        return _pairwise_block(a, lo, n)
    return _pairwise_long(a, lo, n)


@njit(cache=True, nogil=True)
def sinkhorn_sweeps(p, group, target, tol, max_iter):
    """The sweeps of :func:`privlab.attacks.control._sinkhorn_marginals` compiled, with
    numpy's arithmetic step for step (rows divided by their pairwise sums, each group's
    column sums added in row order, then every row scaled by its group's ratios): ``p``
    scaled in place; returns the sweeps made."""
    n, d = p.shape
    col = np.zeros(target.shape)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (it is returned)
        for r in range(n):
            s = _pairwise_sum(p[r], 0, d)
            for v in range(d):
                p[r, v] /= s
        col[:, :] = 0.0
        for r in range(n):
            g = group[r]
            for v in range(d):
                col[g, v] += p[r, v]
        worst = 0.0
        nan = False
        for g in range(col.shape[0]):
            for v in range(d):
                diff = abs(col[g, v] - target[g, v])
                if diff != diff:
                    nan = True
                elif diff > worst:
                    worst = diff
        if not nan and worst <= tol:
            break
        for r in range(n):
            g = group[r]
            for v in range(d):
                c = col[g, v]
                p[r, v] *= target[g, v] / c if c > 0.0 else 0.0
    return it
