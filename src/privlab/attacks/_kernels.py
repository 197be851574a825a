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


@njit(cache=True, nogil=True)
def _draw3(gen, score, combo_of, gval, assign, lo):
    """Exact draw of a group of 3 (Eq. 6): the first tuple's value, weighted by the 2 x 2
    permanent of the other two, then their order (the 6 permutations, 9 look-ups)."""
    c0 = combo_of[lo]
    c1 = combo_of[lo + 1]
    c2 = combo_of[lo + 2]
    v0 = gval[lo]
    v1 = gval[lo + 1]
    v2 = gval[lo + 2]
    # 2 x 2 permanents of tuples 1, 2 over the value pairs left by tuple 0's value
    p12 = score[c1, v1] * score[c2, v2] + score[c1, v2] * score[c2, v1]  # 0 takes v0
    p02 = score[c1, v0] * score[c2, v2] + score[c1, v2] * score[c2, v0]  # 0 takes v1
    p01 = score[c1, v0] * score[c2, v1] + score[c1, v1] * score[c2, v0]  # 0 takes v2
    w0 = score[c0, v0] * p12
    w1 = w0 + score[c0, v1] * p02
    w2 = w1 + score[c0, v2] * p01
    u = gen.random() * w2
    if w2 <= 0.0:
        u = gen.random() * 3.0
        w0, w1 = 1.0, 2.0
    if u < w0:
        a, b, c = v0, v1, v2
    elif u < w1:
        a, b, c = v1, v0, v2
    else:
        a, b, c = v2, v0, v1
    # tuples 1, 2 take (b, c) or (c, b)
    keep = score[c1, b] * score[c2, c]
    tot = keep + score[c1, c] * score[c2, b]
    assign[lo] = a
    if (tot > 0.0 and gen.random() * tot < keep) or (tot <= 0.0 and gen.random() < 0.5):
        assign[lo + 1] = b
        assign[lo + 2] = c
    else:
        assign[lo + 1] = c
        assign[lo + 2] = b


@njit(cache=True, nogil=True)
def _rest(x, y):
    """The two indices of ``0..3`` other than ``x != y``, in increasing order."""
    r0 = 0
    while r0 == x or r0 == y:
        r0 += 1
    r1 = r0 + 1
    while r1 == x or r1 == y:
        r1 += 1
    return r0, r1


@njit(cache=True, nogil=True)
def _draw4(gen, score, combo_of, gval, assign, lo, mat, cum):
    """Exact draw of a group of 4 (Eq. 6) through 2 x 2 minors: the values of tuples 0 and 1
    (12 ordered pairs) weighted by the permanent of tuples 2, 3 over the two values left,
    then their order: 36 products instead of the 96 of the 24 permutations."""
    for a in range(4):
        c = combo_of[lo + a]
        for b in range(4):
            mat[a, b] = score[c, gval[lo + b]]
    total = 0.0
    k = 0
    for x in range(4):
        for y in range(4):
            if x == y:
                continue
            r0, r1 = _rest(x, y)  # the two values left for tuples 2 and 3
            perm = mat[2, r0] * mat[3, r1] + mat[2, r1] * mat[3, r0]
            total += mat[0, x] * mat[1, y] * perm
            cum[k] = total
            k += 1
    u = gen.random() * total
    pick = 11
    if total > 0.0:
        for i in range(12):
            if u < cum[i]:
                pick = i
                break
    else:
        pick = _below(gen, 12)
    x = pick // 3
    y = pick % 3
    if y >= x:
        y += 1
    r0, r1 = _rest(x, y)
    keep = mat[2, r0] * mat[3, r1]
    tot = keep + mat[2, r1] * mat[3, r0]
    assign[lo] = gval[lo + x]
    assign[lo + 1] = gval[lo + y]
    if (tot > 0.0 and gen.random() * tot < keep) or (tot <= 0.0 and gen.random() < 0.5):
        assign[lo + 2] = gval[lo + r0]
        assign[lo + 3] = gval[lo + r1]
    else:
        assign[lo + 2] = gval[lo + r1]
        assign[lo + 3] = gval[lo + r0]


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
    classes of hundreds) one sweep of ``size`` pairwise-swap proposals.  Iterations
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

    cv = np.zeros((n_combo, m))
    cv_next = np.zeros((n_combo, m))
    cum = np.zeros(12)
    mat4 = np.zeros((4, 4))
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

    for it in range(it_start, it_stop):
        # -- sufficient statistics of the current assignment (after the first iteration,
        # counted while the groups were resampled) ----------------------------------------
        if not counted:
            cv[:, :] = 0.0
            for t in range(n):
                cv[combo_of[t], assign[t]] += 1.0
        flat_counts[:, :] = 0.0
        value_counts[:] = 0.0
        for c in range(n_combo):
            for s in range(m):
                k = cv[c, s]
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
                lv = math.log(v) if v > 0.0 else -1e300
                if tempered:
                    lv *= beta
                    v = math.exp(lv)
                score[c, s] = v
                log_score[c, s] = lv
                if v > mx:
                    mx = v
            inv, lmx = (1.0 / mx, math.log(mx)) if mx > 0.0 else (1.0, 0.0)
            for s in range(m):
                score[c, s] *= inv
                if log_score[c, s] > -1e299:
                    log_score[c, s] -= lmx

        # -- Eq. 6 / Algorithm 2: resample each group's permutation ---------------------
        cv_next[:, :] = 0.0
        for g in range(n_groups):
            lo = gtup_ptr[g]
            size = gtup_ptr[g + 1] - lo
            if size == 2:
                # the common case, in closed form: two permutations
                c0 = combo_of[lo]
                c1 = combo_of[lo + 1]
                v0 = gval[lo]
                v1 = gval[lo + 1]
                w_keep = score[c0, v0] * score[c1, v1]
                w_swap = score[c0, v1] * score[c1, v0]
                tot = w_keep + w_swap
                if (tot > 0.0 and gen.random() * tot < w_keep) or (
                    tot <= 0.0 and gen.random() < 0.5
                ):
                    assign[lo] = v0
                    assign[lo + 1] = v1
                else:
                    assign[lo] = v1
                    assign[lo + 1] = v0
                cv_next[c0, assign[lo]] += 1.0
                cv_next[c1, assign[lo + 1]] += 1.0
                continue
            if size == 1:
                assign[lo] = gval[lo]
            elif size == 3 and exact_max >= 3:
                _draw3(gen, score, combo_of, gval, assign, lo)
            elif size == 4 and exact_max >= 4:
                _draw4(gen, score, combo_of, gval, assign, lo, mat4, cum)
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
                cv_next[combo_of[a], assign[a]] += 1.0
        cv, cv_next = cv_next, cv
        counted = True

        if it >= burn_in:
            _record(post, assign, track_pos, trace, it - burn_in)
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
def group_marginals_by_combo(scores, combo_of, gtup_ptr, gval, perm_table, perm_ptr, out):
    """The exact E-step (:func:`group_marginals`, ``mode == 0``) summed per QI combination.

    ``scores[c, v]`` is the weight of combination ``c`` for value ``v`` (``psi_v prod_j
    w``); ``combo_of`` is in group order (position ``i`` is the ``i``-th tuple of the groups
    laid end to end).  ``out[c, v]`` receives ``sum_{t in c} Pr(t.S = v)``, all the M-step
    needs, without an ``(N, m)`` array; returns ``sum_g log Z_g``.
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
        if total > 0.0:
            logz += math.log(total)
            for a in range(size):
                c = combo_of[lo + a]
                for b in range(size):
                    out[c, gval[lo + b]] += marg[a, b] / total
        else:
            logz += -1e300
            for a in range(size):
                c = combo_of[lo + a]
                for b in range(size):
                    out[c, gval[lo + b]] += 1.0 / size
    return logz
