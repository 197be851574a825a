"""The deFinetti kernels' rarely taken paths, each against its exact law: groups whose values
repeat, weights that all vanish, Gamma draws that all underflow (listed first among the
kernels' tests in ``tools/mutation.py``: they are fast)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from attack_helpers import tiny_release
from privlab.attacks import exact_posterior
from privlab.attacks._layout import layout_of
from test_anneal import KERNELS, _kernel_run, _tempered_exact


def test_a_group_of_three_whose_weights_vanish_takes_two_uniform_draws():
    """With every weight 0 the draw of a group of 3 reads the generator twice (the weighted
    draw and its uniform replacement): the same stream as a generator advanced by two
    ``random()`` calls, so a seed replays it."""
    from privlab.attacks._kernels import _draw3

    gen, ref = np.random.default_rng(4), np.random.default_rng(4)
    assign = np.zeros(3, dtype=np.int64)
    for _ in range(50):
        _draw3(gen, np.zeros((3, 3)), np.arange(3, dtype=np.int64),
               np.arange(3, dtype=np.int64), assign, 0)  # fmt: skip
        ref.random(2)
    assert gen.random() == ref.random()


def test_a_group_of_four_whose_weights_vanish_takes_two_uniform_draws():
    """With every weight 0 the draw of a group of 4 reads the generator twice (the weighted
    draw and its uniform replacement)."""
    from privlab.attacks._kernels import _draw4

    gen, ref = np.random.default_rng(6), np.random.default_rng(6)
    assign, cum = np.zeros(4, dtype=np.int64), np.zeros(24)
    for _ in range(50):
        _draw4(gen, np.zeros((4, 4)), np.arange(4, dtype=np.int64),
               np.arange(4, dtype=np.int64), assign, 0, cum)  # fmt: skip
        ref.random(2)
    assert gen.random() == ref.random()


def test_a_group_of_four_is_picked_as_the_scan_of_its_24_cumulative_weights():
    """``_draw4`` finds the block of 6 orders, then the order within it: the same pick as
    the flat inverse CDF, the draw ``u`` against all 24 cumulative weights summed as the
    kernel sums them (each block in order, then the blocks' bases), for scores from tiny
    to zero; every order is picked somewhere, never one of weight 0."""
    from privlab.attacks._kernels import _PERM4, _draw4, _weights4

    g = np.random.default_rng(8)
    combo_of = np.arange(4, dtype=np.int64)
    assign, cum, w = np.zeros(4, dtype=np.int64), np.zeros(24), np.zeros(24)
    picks = set()
    for trial in range(400):
        score = g.uniform(0, 1, (4, 6)) ** g.integers(1, 30)
        if trial % 5 == 0:
            score[g.integers(0, 4), g.integers(0, 6)] = 0.0  # some orders weigh nothing
        gval = g.permutation(6)[:4].astype(np.int64)
        _weights4(score, combo_of, gval, 0, w)
        flat = w.copy()
        for blk in range(0, 24, 6):
            for i in range(blk + 1, blk + 6):
                flat[i] += flat[i - 1]
        bases = np.cumsum([0.0, flat[5], flat[11], flat[17]])
        total = bases[3] + flat[23]
        for b in (1, 2, 3):
            flat[6 * b : 6 * b + 6] += bases[b]
        seed = 1000 + trial
        u = np.random.default_rng(seed).random() * total
        want = int((u >= flat[:23]).sum())
        got = _draw4(np.random.default_rng(seed), score, combo_of, gval, assign, 0, cum)
        assert list(got) == _PERM4[want].tolist(), (trial, want, got)
        assert w[want] > 0.0  # never an order of weight 0
        picks.add(want)
    assert len(picks) == 24  # every order was taken somewhere


def test_a_group_of_four_whose_weights_all_vanish_is_drawn_uniformly():
    """The exact draw of a group of 4 falls back to a uniform permutation when every weight
    underflows to 0: each of the 24 orders about 1/24 of the time."""
    from privlab.attacks._kernels import _draw4

    score = np.zeros((4, 4))
    combo_of = np.arange(4, dtype=np.int64)
    gval = np.arange(4, dtype=np.int64)
    assign = np.zeros(4, dtype=np.int64)
    cum = np.zeros(24)
    gen = np.random.default_rng(1)
    seen: dict[tuple, int] = {}
    draws = 48_000
    for _ in range(draws):
        _draw4(gen, score, combo_of, gval, assign, 0, cum)
        key = tuple(assign.tolist())
        seen[key] = seen.get(key, 0) + 1
    assert set(seen) == set(itertools.permutations(range(4)))
    share = np.array(list(seen.values())) / draws * 24
    assert np.abs(share - 1).max() < 0.12, seen


def test_pick_draws_by_the_cumulative_weights_and_uniformly_when_they_vanish():
    """``_pick`` is one inverse-CDF draw: among cumulative weights 1, 3, 4 of a total 10 it
    returns 0, 1 and 2 with 0.1, 0.2 and 0.7 (a draw beyond the last weight takes the last
    permutation); with a total of 0 it returns each of ``p_lo..p_hi-1`` equally often."""
    from privlab.attacks._kernels import _pick

    gen = np.random.default_rng(3)
    draws = 40_000
    weights = np.array([9.0, 9.0, 1.0, 3.0, 4.0, 9.0])  # only 2..4 are read
    got = np.bincount([_pick(gen, weights, 2, 5, 10.0) for _ in range(draws)], minlength=6)
    np.testing.assert_allclose(got / draws, [0, 0, 0.1, 0.2, 0.7, 0], atol=0.01)
    got = np.bincount([_pick(gen, weights, 2, 6, 0.0) for _ in range(draws)], minlength=6)
    np.testing.assert_allclose(got / draws, [0, 0, 0.25, 0.25, 0.25, 0.25], atol=0.01)


def test_a_dirichlet_draw_whose_gammas_all_underflow_is_its_mean():
    """Shapes so small that every Gamma draw underflows to 0 give the Dirichlet's mean (the
    shapes normalized), not a division by zero; ordinary shapes give a draw on the simplex."""
    from privlab.attacks._kernels import _dirichlet_fill

    gen = np.random.default_rng(0)
    out = np.zeros(3)
    _dirichlet_fill(gen, np.array([1e-310, 1e-310, 2e-310]), out)
    np.testing.assert_allclose(out, [0.25, 0.25, 0.5], rtol=1e-12)
    _dirichlet_fill(gen, np.array([1.0, 2.0, 3.0]), out)
    assert out.sum() == pytest.approx(1.0) and np.all(out > 0) and np.all(out < 1)


def _repeated_values_release():
    """Groups of 3, 2, 3, 2 whose sensitive values repeat inside a group (s0, s0, s1; s2, s2;
    ...), with QIs correlated with the value."""
    from privlab.publish.anatomy import AnatomyRelease

    rng = np.random.default_rng(5)
    groups = [0, 0, 0, 1, 1, 2, 2, 2, 3, 3]
    values = [0, 0, 1, 2, 2, 1, 3, 3, 0, 1]
    qi = [[str((v + rng.integers(0, 2)) % 3) for _ in range(2)] for v in values]
    st = [(g, f"s{v}") for g, v in zip(groups, values)]
    return AnatomyRelease.from_rows(qi, ["q0", "q1"], groups, st, "s",
                                    truth=[f"s{v}" for v in values])  # fmt: skip


@pytest.mark.parametrize("sampler", ["blocked", "collapsed"])
@pytest.mark.parametrize("beta", [None, 0.4])
def test_groups_with_repeated_values_target_the_exact_posterior(sampler, beta):
    """A group whose values repeat is drawn by each permutation's exact sequential
    predictive (the collapsed sampler's second path): the chain's marginals are the
    enumeration's, untempered and tempered (where the temperature moves them by 0.17)."""
    rel = _repeated_values_release()
    exact = _tempered_exact(rel, 1.0 if beta is None else beta, sampler)
    if beta is not None:
        assert np.abs(exact - exact_posterior(rel).probs).max() > 0.1
    probs, *_ = _kernel_run(KERNELS[sampler], layout_of(rel), 40_000, seed=2, beta=beta)
    assert np.abs(probs - exact).max() < 0.02


def test_repeated_values_are_drawn_exactly_when_every_weight_is_tiny():
    """A vanishing prior on a column whose every value is unique makes every permutation's
    weight tiny (log about -1,000 for a group of 3) but not equal: the draw, relative to
    the first permutation's weight, still follows the enumeration (a draw on the weights'
    absolute scale would underflow them all to 0 and fall back to uniform)."""
    from privlab.attacks._kernels import collapsed_gibbs_run, shuffle_within_groups
    from privlab.attacks._layout import permutation_table
    from privlab.attacks.exact import _log_beta_ratio
    from privlab.publish.anatomy import AnatomyRelease

    rng = np.random.default_rng(5)
    groups = [0, 0, 0, 1, 1, 2, 2, 2, 3, 3]
    values = [0, 0, 1, 2, 2, 1, 3, 3, 0, 1]
    qi = [[str((v + rng.integers(0, 2)) % 3), f"u{i}"] for i, v in enumerate(values)]
    st = [(g, f"s{v}") for g, v in zip(groups, values)]
    rel = AnatomyRelease.from_rows(qi, ["q0", "q1"], groups, st, "s",
                                   truth=[f"s{v}" for v in values])  # fmt: skip
    lay = layout_of(rel)
    priors = (1.0, 1e-150)  # per column: q1's values are all unique
    codes, m = lay.combo_codes[lay.combo_of], lay.n_values
    perms = [
        (lay.gtup[lo:hi], sorted(set(itertools.permutations(lay.gval[lo:hi].tolist()))))
        for lo, hi in itertools.pairwise(lay.gtup_ptr)
    ]
    logw, assigns = [], []
    assign = np.zeros(lay.n_rows, dtype=np.int64)
    for choice in itertools.product(*(range(len(p)) for _, p in perms)):
        for (tup, ps), k in zip(perms, choice):
            assign[tup] = ps[k]
        ll = _log_beta_ratio(np.bincount(assign, minlength=m)[None, :].astype(float), 1.0)
        for j, prior in enumerate(priors):
            lo, hi = lay.attr_ptr[j], lay.attr_ptr[j + 1]
            cnt = np.zeros((m, hi - lo))
            np.add.at(cnt, (assign, codes[:, j] - lo), 1.0)
            ll += _log_beta_ratio(cnt, prior)
        logw.append(ll)
        assigns.append(assign.copy())
    w = np.exp(np.array(logw) - max(logw))
    exact = np.zeros((lay.n_rows, m))
    for wk, a in zip(w / w.sum(), assigns):
        exact[np.arange(lay.n_rows), a] += wk
    assert exact[0].max() == pytest.approx(2 / 3, abs=0.01)  # not uniform over 3 orders

    gen, iterations = np.random.default_rng(2), 40_000
    table, ptr = permutation_table(5)
    prior_r = np.concatenate([np.full(lay.attr_ptr[j + 1] - lay.attr_ptr[j], p)
                              for j, p in enumerate(priors)])  # fmt: skip
    state = np.zeros(lay.n_rows, dtype=np.int64)
    shuffle_within_groups(gen, lay.gtup_ptr, lay.gval, state)
    post = np.zeros((lay.n_rows, m))
    collapsed_gibbs_run(
        gen, np.ascontiguousarray(lay.combo_of[lay.gtup]), lay.combo_codes, lay.attr_ptr,
        lay.gtup_ptr, lay.gval, table, ptr, np.ones(m), prior_r, state, post,
        np.zeros(iterations), 0, iterations, 0, 5, np.arange(3, dtype=np.int64),
        np.zeros((iterations, 3), dtype=np.int16),
    )  # fmt: skip
    probs = np.zeros((lay.n_rows, m))
    probs[lay.gtup] = post / iterations
    assert np.abs(probs - exact).max() < 0.02


@pytest.mark.parametrize("size", [3, 4])
def test_one_group_is_drawn_by_the_exact_law_of_its_orders(size):
    """A group of 3 or 4 with unequal scores (each tuple its own QI combination) takes each
    order with probability proportional to the product of its scores: the frequencies of
    60,000 draws within 4 standard errors of the enumeration, while the law with one
    tuple's scores 30% off on one value lies outside them."""
    from privlab.attacks._kernels import _draw3, _draw4

    gen = np.random.default_rng(11 + size)
    score = gen.uniform(0.05, 1.0, (size, size))
    gval = np.array([3, 0, 2, 1][:size], dtype=np.int64)  # values in no particular order
    combo_of = np.arange(size, dtype=np.int64)
    big = np.zeros((size, 4))
    big[:, gval] = score  # score[c, v] for the group's values v
    orders = list(itertools.permutations(range(size)))

    def law(s):
        w = np.array([np.prod([s[a, o[a]] for a in range(size)]) for o in orders])
        return w / w.sum()

    exact = law(score)
    bent = score.copy()
    bent[0, 1] *= 1.3
    wrong = law(bent)
    assign = np.zeros(size, dtype=np.int64)
    cum = np.zeros(24)
    index = {tuple(gval[list(o)].tolist()): i for i, o in enumerate(orders)}
    got = np.zeros(len(orders))
    draws = 60_000
    for _ in range(draws):
        if size == 3:
            _draw3(gen, big, combo_of, gval, assign, 0)
        else:
            _draw4(gen, big, combo_of, gval, assign, 0, cum)
        got[index[tuple(assign.tolist())]] += 1
    freq = got / draws
    se = np.sqrt(exact * (1 - exact) / draws)
    assert np.all(np.abs(freq - exact) < 4 * se + 1e-12), (freq, exact)
    assert np.any(np.abs(freq - wrong) > 4 * se), (freq, wrong)


@pytest.mark.parametrize("exact_max", [5, 3, 2])
@pytest.mark.parametrize("sizes", [(2, 2, 3, 4, 1), (4, 4, 3), (5, 2, 7, 13)])
def test_the_kept_draws_are_counted_per_tuple_whatever_the_group_size(sizes, exact_max):
    """The blocked kernel counts the kept draws of the groups it draws in closed form (of
    at most 4, and at most ``exact_max``) per (tuple, which of its group's values) and
    folds them into ``post`` at the end; other groups count into ``post`` directly.  Either
    way ``post`` equals the assignments of every kept iteration tallied one by one (the
    kernel run an iteration at a time, one count per tuple)."""
    from privlab.attacks._kernels import gibbs_run, shuffle_within_groups
    from privlab.attacks._layout import permutation_table

    rel = tiny_release(4, sizes=sizes, n_values=max(sizes) + 1)
    lay = layout_of(rel)
    n, m = lay.n_rows, lay.n_values
    combo_g = np.ascontiguousarray(lay.combo_of[lay.gtup])
    pt, pp = permutation_table(exact_max)
    ps, pr = np.ones(m), np.ones(lay.n_flat)
    tp, tr = np.zeros(0, dtype=np.int64), np.zeros((40, 0), dtype=np.int16)

    def run(step):
        gen = np.random.default_rng(3)
        assign, post = np.zeros(n, dtype=np.int64), np.zeros((n, m))
        shuffle_within_groups(gen, lay.gtup_ptr, lay.gval, assign)
        tally = np.zeros((n, m))
        for it in range(0, 40, step):
            gibbs_run(gen, combo_g, lay.combo_codes, lay.attr_ptr, lay.gtup_ptr, lay.gval,
                      pt, pp, ps, pr, assign, post, np.zeros(step), it, it + step, 10, 3,
                      tp, tr)  # fmt: skip
            if step == 1 and it >= 10:
                tally[np.arange(n), assign] += 1
        return post, tally

    post_one, tally = run(1)
    post_all, _ = run(40)
    np.testing.assert_array_equal(post_one, tally)
    np.testing.assert_array_equal(post_all, tally)  # the same draws, one call
    assert post_all.sum() == 30 * n


def test_a_large_group_of_one_combination_is_shuffled_uniformly():
    """A group above SHUFFLE_MAX whose members share one QI combination (a generalized
    class as published) is drawn by a uniform shuffle, its exact law: each member's
    posterior is the group's value shares (10, 6, 4 of 20: 0.5, 0.3, 0.2) within 0.02 after
    2,000 kept iterations, every iteration keeps the group's values, and each shuffle counts
    as 20 accepted proposals.  A group of two combinations still takes the swap sweep."""
    from privlab.attacks._kernels import SHUFFLE_MAX, gibbs_run
    from privlab.attacks._layout import permutation_table

    size = 20
    assert size > SHUFFLE_MAX
    gval = np.repeat(np.array([0, 1, 2], dtype=np.int64), [10, 6, 4])
    gtup_ptr = np.array([0, size], dtype=np.int64)
    combo_codes = np.array([[0], [1]], dtype=np.int64)
    attr_ptr = np.array([0, 2], dtype=np.int64)
    pt, pp = permutation_table(4)
    tp, tr = np.array([0, 19], dtype=np.int64), np.zeros((2000, 2), dtype=np.int16)

    def run(combo_of):
        gen = np.random.default_rng(8)
        assign, post = gval.copy(), np.zeros((size, 3))
        accepted = gibbs_run(gen, combo_of, combo_codes, attr_ptr, gtup_ptr, gval, pt, pp,
                             np.ones(3), np.ones(2), assign, post, np.zeros(2500), 0, 2500,
                             500, 3, tp, tr)  # fmt: skip
        assert sorted(assign.tolist()) == sorted(gval.tolist())
        return accepted, post / 2000

    accepted, probs = run(np.zeros(size, dtype=np.int64))
    assert accepted == size * 2500
    np.testing.assert_allclose(probs, np.tile([0.5, 0.3, 0.2], (size, 1)), atol=0.02)
    assert set(np.unique(tr[:, 0])) == {0, 1, 2}  # the tracked members move
    mixed = np.zeros(size, dtype=np.int64)
    mixed[::2] = 1
    accepted_mixed, _ = run(mixed)
    assert 0 < accepted_mixed < size * 2500  # swaps of equal values are not counted
