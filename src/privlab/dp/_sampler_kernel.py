"""The numba kernel of the exact discrete-Laplace sampler (:mod:`privlab.dp.samplers` holds
the logic and the reasons).

Canonne, Kamath & Steinke (2020), Algorithm 2 with their Algorithm 1 for the Bernoulli
draws, one sample at a time, as :func:`privlab.dp.samplers._discrete_laplace_one` runs it in
Python; only integers, no floating point.  Uniform integers in ``[0, n)`` are taken by
rejection from a **bit stream**: ``bitlength(n - 1)`` fresh bits at a time, so a random sign
costs one bit, not a 64-bit word.  The bits come from an array of 64-bit words (OS CSPRNG or
a numpy bit generator), read least significant bit first, word after word.

Compiled on first use and cached on disk; imported lazily, for large draws only
(``samplers._KERNEL_MIN``).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _take(words, pos, w):
    """``w`` bits (``0 <= w <= 63``) of the stream from bit ``pos`` as an integer, or -1 when
    the stream holds fewer than ``pos + w`` bits."""
    if pos + w > words.size * 64:
        return -1
    if w == 0:
        return 0
    wi = pos >> 6
    off = pos & 63
    x = words[wi] >> np.uint64(off)
    if off + w > 64:
        x |= words[wi + 1] << np.uint64(64 - off)
    x &= (np.uint64(1) << np.uint64(w)) - np.uint64(1)
    return np.int64(x)


@njit(cache=True, nogil=True, inline="always")
def _bits(n):
    """The bit length of ``n - 1`` for ``n >= 1`` (0 for ``n == 1``)."""
    m = n - 1
    b = 0
    while m > 0:
        m >>= 1
        b += 1
    return b


@njit(cache=True, nogil=True, inline="always")
def _below(words, pos, n):
    """``(r, pos')``: ``r`` uniform in ``[0, n)`` by rejection from the stream at ``pos``;
    ``pos' = -1`` when the stream runs out."""
    w = _bits(n)
    while True:
        r = _take(words, pos, w)
        if r < 0:
            return 0, -1
        pos += w
        if r < n:
            return r, pos


@njit(cache=True, nogil=True, inline="always")
def _bernoulli_exp(num, den, words, pos):
    """``(b, pos')``: exact Bernoulli(exp(-num/den)), ``0 <= num <= den`` (CKS Alg. 1): ``K = 1``;
    while ``uniform below K den < num``, ``K += 1``; 1 when ``K`` is odd."""
    k = 1
    while True:
        r, pos = _below(words, pos, k * den)
        if pos < 0:
            return False, -1
        if r >= num:
            return k % 2 == 1, pos
        k += 1


@njit(cache=True, nogil=True)
def discrete_laplace_block(s, t, words, pos, out, start):
    """Fill ``out[start:]`` with discrete Laplace draws (``P(y) ∝ exp(-|y| s / t)``) from the
    bit stream ``words`` read from bit ``pos``.

    Returns ``(i, pos')``: draws ``start .. i - 1`` are done and the next draw starts at bit
    ``pos'``.  ``i < len(out)`` means the stream ran out inside draw ``i``: call again with
    the stream extended (the unread bits from ``pos'`` followed by fresh ones), and draw ``i``
    is drawn again from its first bit, so the draws are those of one unbroken stream.
    """
    i = start
    while i < out.shape[0]:
        p0 = pos
        while True:
            u, pos = _below(words, pos, t)
            if pos < 0:
                return i, p0
            ok, pos = _bernoulli_exp(u, t, words, pos)
            if pos < 0:
                return i, p0
            if not ok:
                continue
            v = 0
            while True:
                ok, pos = _bernoulli_exp(1, 1, words, pos)
                if pos < 0:
                    return i, p0
                if not ok:
                    break
                v += 1
            y = (u + t * v) // s
            sign, pos = _below(words, pos, 2)
            if pos < 0:
                return i, p0
            if sign == 1:
                if y == 0:
                    continue
                out[i] = -y
            else:
                out[i] = y
            break
        i += 1
    return i, pos
