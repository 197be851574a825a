"""numba kernels for latent class membership (threat model (a) on overlapping cells).

When a local recoding's cells overlap, a person whose exact QIs fit several classes may be
any of them: the deFinetti attack's state is then the people's classes as well as each
class's arrangement of its sensitive values.  Between two Gibbs iterations,
:func:`membership_moves` proposes to exchange two people between classes that both of them
fit (person ``p`` at position ``a`` of class ``g1``, person ``q`` at position ``b`` of
``g2``): afterwards ``q`` holds the value at ``a`` and ``p`` the value at ``b``.  The move is
a Metropolis-Hastings step on the collapsed posterior ``P(membership, arrangement | T)``
(parameters integrated out, uniform prior over feasible memberships and arrangements), so it
leaves the target of both samplers invariant; the blocked sampler draws its parameters
afresh from the arrangement at the start of every iteration.

Positions stay in group order (the samplers' layout); what moves is who stands at a
position: ``person_at[pos]`` and its inverse ``pos_of[person]``, and the position's QI
combination ``combo_g[pos]``.
"""

from __future__ import annotations

from numba import njit

from privlab.attacks._kernels import _below, _collapsed_state, _move, _pred


@njit(cache=True, nogil=True)
def _fits(fit_ptr, fit_cls, person, g):
    for k in range(fit_ptr[person], fit_ptr[person + 1]):
        if fit_cls[k] == g:
            return True
    return False


@njit(cache=True, nogil=True)
def membership_moves(
    gen,
    combo_g,
    combo_codes,
    attr_ptr,
    prior_r,
    n_values,
    gtup_ptr,
    group_of_pos,
    person_at,
    pos_of,
    fit_ptr,
    fit_cls,
    multi,
    assign,
    n_moves,
):
    """``n_moves`` Metropolis-Hastings exchanges of people between classes; returns the
    number accepted.

    Proposal: a person ``p`` uniformly among those fitting several classes (``multi``), one
    of their other classes ``g2`` uniformly, a position ``b`` of ``g2`` uniformly; proposals
    whose person ``q`` at ``b`` does not fit ``p``'s class ``g1`` are rejected.  The same
    exchange is also proposed by starting from ``q``, so the proposal probability is
    ``1 / ((F_p - 1) |g2|) + 1 / ((F_q - 1) |g1|)`` (``F``: classes a person fits), and its
    reverse has ``|g1|`` and ``|g2|`` exchanged; the Hastings ratio is their quotient.  The
    likelihood ratio is the collapsed Dirichlet-multinomial one of the two changed (QI
    combination, value) pairs, exact when the values differ (with equal values nothing
    changes but who is where).
    """
    flat_counts, value_counts, den = _collapsed_state(combo_g, assign, combo_codes, attr_ptr,
                                                      prior_r, n_values)  # fmt: skip
    accepted = 0
    for _ in range(n_moves):
        p = multi[_below(gen, multi.size)]
        a = pos_of[p]
        g1 = group_of_pos[a]
        f_p = fit_ptr[p + 1] - fit_ptr[p]
        k = _below(gen, f_p - 1)  # the k-th of p's classes other than g1
        g2 = -1
        for idx in range(fit_ptr[p], fit_ptr[p + 1]):
            if fit_cls[idx] == g1:
                continue
            if k == 0:
                g2 = fit_cls[idx]
                break
            k -= 1
        size1 = gtup_ptr[g1 + 1] - gtup_ptr[g1]
        size2 = gtup_ptr[g2 + 1] - gtup_ptr[g2]
        b = gtup_ptr[g2] + _below(gen, size2)
        q = person_at[b]
        if not _fits(fit_ptr, fit_cls, q, g1):
            continue
        f_q = fit_ptr[q + 1] - fit_ptr[q]
        fwd = 1.0 / ((f_p - 1) * size2) + 1.0 / ((f_q - 1) * size1)
        rev = 1.0 / ((f_p - 1) * size1) + 1.0 / ((f_q - 1) * size2)
        ratio = rev / fwd
        ca = combo_g[a]
        cb = combo_g[b]
        va = assign[a]
        vb = assign[b]
        changes = va != vb and ca != cb
        if changes:
            _move(flat_counts, value_counts, combo_codes, ca, va, -1.0)
            _move(flat_counts, value_counts, combo_codes, cb, vb, -1.0)
            ratio *= _pred(flat_counts, value_counts, den, combo_codes, ca, vb, prior_r)
            ratio *= _pred(flat_counts, value_counts, den, combo_codes, cb, va, prior_r)
            ratio /= _pred(flat_counts, value_counts, den, combo_codes, ca, va, prior_r)
            ratio /= _pred(flat_counts, value_counts, den, combo_codes, cb, vb, prior_r)
        accept = ratio >= 1.0 or gen.random() < ratio
        if changes:
            # p (combination ca) ends with vb and q (cb) with va when accepted
            if accept:
                _move(flat_counts, value_counts, combo_codes, ca, vb, 1.0)
                _move(flat_counts, value_counts, combo_codes, cb, va, 1.0)
            else:
                _move(flat_counts, value_counts, combo_codes, ca, va, 1.0)
                _move(flat_counts, value_counts, combo_codes, cb, vb, 1.0)
        if accept:
            person_at[a] = q
            person_at[b] = p
            pos_of[p] = b
            pos_of[q] = a
            combo_g[a] = cb
            combo_g[b] = ca
            accepted += 1
    return accepted


@njit(cache=True, nogil=True)
def record_people(post, assign, person_at, pos_of, track, trace, row):
    """One kept draw counted per *person* (``post[person, value]``), the tracked people's
    values traced (their positions move with the membership)."""
    for t in range(assign.size):
        post[person_at[t], assign[t]] += 1.0
    for k in range(track.size):
        trace[row, k] = assign[pos_of[track[k]]]
