"""privlab.data.shuffle: a uniformly random row order in two passes (a bucket each row, then
Fisher-Yates within each bucket), and its agreement with numpy's permutation below
``_BUCKET_MIN`` rows."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import privlab.data.shuffle as sh
from privlab.data.shuffle import permutation, shuffled_rows


def _swaps(starts, words, rows):
    """The kernel's in-bucket swaps of ``rows`` (one column) with the given words."""
    from privlab.data._shuffle_kernel import shuffle_buckets

    out = np.array(rows, dtype=np.int64).reshape(-1, 1)
    none = np.empty((len(out), 0), dtype=np.int64)
    state = shuffle_buckets(np.asarray(starts, np.int64), 0, -1,
                            np.asarray(words, np.uint64), out, none)  # fmt: skip
    return out[:, 0].tolist(), state[:2]


def test_a_swap_rejects_the_half_word_that_would_bias_it_and_reads_the_next():
    """Lemire's draw below m = 3 from a 32-bit half x is (3x) >> 32, except where
    (3x) mod 2^32 < 2^32 mod 3 = 1, i.e. x = 0: that half is rejected.  Words read low half
    first; with the halves 0 (rejected), 2^32 - 1 (-> 2: row 2 stays) and 0 (below 2 -> 0:
    rows 0 and 1 swap) the bucket [10, 11, 12] becomes [11, 10, 12]."""
    words = [((2**32 - 1) << 32) | 0, 0]
    assert _swaps([0, 3], words, [10, 11, 12]) == ([11, 10, 12], (1, -1))
    # (without the rejection the half 0 would have swapped rows 2 and 0: [12, 11, 10])
    words = [(1 << 32) | (2**32 // 3), 0]  # (3 * floor(2^32 / 3)) >> 32 = 0: rows 2 and 0 swap
    assert _swaps([0, 3], words, [10, 11, 12])[0][2] == 10


def test_the_swaps_stop_where_the_words_run_out_and_go_on_with_new_ones():
    """Two buckets of 3 need 4 draws (2 words); with one word the kernel stops in the
    second bucket at its last row and says where; going on from there with the second word
    gives what both words at once give."""
    from privlab.data._shuffle_kernel import shuffle_buckets

    rng = np.random.default_rng(3)
    words = rng.integers(0, 2**63, 2, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    whole, done = _swaps([0, 3, 6], words, range(6))
    assert done == (2, -1)
    out = np.arange(6, dtype=np.int64).reshape(-1, 1)
    none = np.empty((6, 0), dtype=np.int64)
    starts = np.array([0, 3, 6], np.int64)
    bucket, j, _ = shuffle_buckets(starts, 0, -1, words[:1], out, none)
    assert (bucket, j) == (1, 5)
    bucket, j, _ = shuffle_buckets(starts, bucket, j, words[1:], out, none)
    assert (bucket, j) == (2, -1)
    assert out[:, 0].tolist() == whole
    assert sorted(whole[:3]) == [0, 1, 2] and sorted(whole[3:]) == [3, 4, 5]


@pytest.mark.parametrize("buckets", [None, 1, 2, 7, 64])
def test_shuffled_rows_are_the_rows_taken_in_permutation_order(buckets, monkeypatch):
    """For one generator state, ``shuffled_rows`` gives ``a[order][:, cols]`` and
    ``b[order][:, cols_b]`` with ``order = permutation(gen, n)``, and leaves the generator
    where ``permutation`` leaves it; below ``_BUCKET_MIN`` rows the order is numpy's
    ``permutation``, above it (here lowered) another one."""
    n = 5000
    rng = np.random.default_rng(11)
    a = rng.integers(-5, 100, (n, 6)).astype(np.int32)
    b = rng.random((n, 3))
    if buckets is None:
        assert np.array_equal(permutation(np.random.default_rng(1), n),
                              np.random.default_rng(1).permutation(n))  # fmt: skip
        monkeypatch.setattr(sh, "_BUCKET_MIN", 1000)
        monkeypatch.setattr(sh, "_BUCKET_ROWS", 100)  # 64 buckets
    gen = np.random.default_rng(7)
    order = permutation(gen, n, buckets=buckets)
    after = gen.random()
    assert sorted(order.tolist()) == list(range(n)) and order.dtype == np.int64
    assert not np.array_equal(order, np.random.default_rng(7).permutation(n))
    gen = np.random.default_rng(7)
    got_a, got_b = shuffled_rows(gen, a, [4, 0, 4], b, [2, 1], buckets=buckets)
    assert gen.random() == after
    assert got_a.flags.c_contiguous and got_b.flags.c_contiguous
    np.testing.assert_array_equal(got_a, a[order][:, [4, 0, 4]])
    np.testing.assert_array_equal(got_b, b[order][:, [2, 1]])
    gen = np.random.default_rng(7)
    alone, none = shuffled_rows(gen, a, buckets=buckets)
    assert none is None
    np.testing.assert_array_equal(alone, a[order])


def test_the_order_does_not_depend_on_how_many_words_are_drawn_ahead(monkeypatch):
    """With no word to spare the swaps run out again and again and draw more: the same
    order (the words are one stream), only the generator's state after differs."""
    n = 3000
    want = permutation(np.random.default_rng(5), n, buckets=16)
    monkeypatch.setattr(sh, "_SLACK_WORDS", 1)
    np.testing.assert_array_equal(permutation(np.random.default_rng(5), n, buckets=16), want)


@pytest.mark.parametrize("buckets", [1, 2, 4, 16])
def test_the_two_pass_order_of_four_rows_is_uniform(buckets):
    """2,400 orders of 4 rows: each of the 24 about 100 times (chi-square), and the test
    rejects a law 30% off on half of the orders; with more buckets than rows too."""
    gen = np.random.default_rng(2024 + buckets)
    perms = {p: i for i, p in enumerate(itertools.permutations(range(4)))}
    seen = np.zeros(24)
    for _ in range(2400):
        seen[perms[tuple(permutation(gen, 4, buckets=buckets).tolist())]] += 1
    assert stats.chisquare(seen).pvalue > 1e-3
    wrong = np.where(np.arange(24) < 12, 1.3, 0.7) * 100
    assert stats.chisquare(seen, wrong).pvalue < 1e-6


def test_the_two_pass_order_of_many_rows_is_uniform_in_position_and_pairs():
    """1,000 rows in 16 buckets, 4,000 orders: where row 0 lands (10 equal bins), where
    row 999 lands, and whether row 0 comes before row 1 (probability 1/2) each follow the
    uniform law; a shuffle that kept rows near their bucket-mates' input order would fail
    the last."""
    gen = np.random.default_rng(99)
    first, last, before = np.zeros(10), np.zeros(10), 0
    for _ in range(4000):
        order = permutation(gen, 1000, buckets=16)
        where = np.empty(1000, dtype=np.int64)
        where[order] = np.arange(1000)
        first[where[0] // 100] += 1
        last[where[999] // 100] += 1
        before += where[0] < where[1]
    assert stats.chisquare(first).pvalue > 1e-3
    assert stats.chisquare(last).pvalue > 1e-3
    assert stats.binomtest(before, 4000, 0.5).pvalue > 1e-3
    # the same statistics reject a shuffle 30% off: row 0 in the first half with 0.65
    assert stats.binomtest(int(first[:5].sum()), 4000, 0.65).pvalue < 1e-6


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 300),
    buckets=st.integers(1, 70),
    dtype=st.sampled_from([np.int8, np.int32, np.int64, np.float64, np.uint16]),
    seed=st.integers(0, 2**32 - 1),
)
def test_every_row_is_published_once_and_the_two_arrays_move_together(n, buckets, dtype, seed):
    """Whatever the rows, buckets and type: each input row appears exactly once, and row
    i of the second array stays beside row i of the first."""
    rng = np.random.default_rng(seed)
    a = np.column_stack([np.arange(n), rng.integers(0, 100, n)]).astype(dtype)
    ids = np.arange(n, dtype=np.int64)
    b = np.column_stack([ids, ids * 3])
    got_a, got_b = shuffled_rows(np.random.default_rng(seed), a, [1, 0], b, [1, 0],
                                 buckets=buckets)  # fmt: skip
    assert got_a.dtype == a.dtype and got_a.shape == (n, 2) and got_b.shape == (n, 2)
    order = got_b[:, 1]
    assert sorted(order.tolist()) == list(range(n))
    np.testing.assert_array_equal(got_b[:, 0], order * 3)
    np.testing.assert_array_equal(got_a, a[order][:, [1, 0]])


def test_bad_arguments_are_refused():
    gen = np.random.default_rng(0)
    with pytest.raises(ValueError, match="2-D"):
        shuffled_rows(gen, np.arange(3))
    with pytest.raises(ValueError, match="3 and 2 rows"):
        shuffled_rows(gen, np.zeros((3, 1)), None, np.zeros((2, 1)))
    for bad in (0, 1 << 17):
        with pytest.raises(ValueError, match="buckets must be"):
            permutation(gen, 10, buckets=bad)
