"""The numba kernels of the exact discrete-Laplace and discrete-Gaussian samplers
(:mod:`privlab.dp.samplers` holds the logic and the reasons).

Canonne, Kamath & Steinke (2020), Algorithm 2 (and Algorithm 3 on top of it for the
discrete Gaussian) with their Algorithm 1 for the Bernoulli draws, one sample at a time, as
:func:`privlab.dp.samplers._discrete_laplace_one` (``_discrete_gaussian_one``) runs it in
Python; only integers, no floating point.  Uniform integers in ``[0, n)`` are taken by
rejection from a **bit stream**: ``bitlength(n - 1)`` fresh bits at a time, so a random sign
costs one bit, not a 64-bit word.  The bits come from an array of 64-bit words (OS CSPRNG or
a numpy bit generator), read least significant bit first, word after word.

Compiled on first use and cached on disk; imported lazily, for large draws only
(``samplers._KERNEL_MIN``, ``samplers._GAUSS_SCALAR_MAX``).
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


@njit(cache=True, nogil=True, inline="always")
def _laplace_one(s, t, words, pos):
    """``(y, pos')``: one discrete Laplace draw (``P(y) ∝ exp(-|y| s / t)``, CKS Alg. 2) from the
    stream at ``pos``, as :func:`privlab.dp.samplers._discrete_laplace_one` draws it; ``pos' =
    -1`` when the stream runs out inside it."""
    while True:
        u, pos = _below(words, pos, t)
        if pos < 0:
            return 0, -1
        ok, pos = _bernoulli_exp(u, t, words, pos)
        if pos < 0:
            return 0, -1
        if not ok:
            continue
        v = 0
        while True:
            ok, pos = _bernoulli_exp(1, 1, words, pos)
            if pos < 0:
                return 0, -1
            if not ok:
                break
            v += 1
        y = (u + t * v) // s
        sign, pos = _below(words, pos, 2)
        if pos < 0:
            return 0, -1
        if sign == 1:
            if y == 0:
                continue
            return -y, pos
        return y, pos


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
        y, p1 = _laplace_one(s, t, words, pos)
        if p1 < 0:
            return i, pos
        out[i] = y
        pos = p1
        i += 1
    return i, pos


#: The largest ``k * den`` the capped Bernoulli draws a uniform integer below (63-bit words).
_KDEN_MAX = 1 << 62


@njit(cache=True, nogil=True, inline="always")
def _bernoulli_exp_capped(num, den, words, pos):
    """:func:`_bernoulli_exp` that gives up before ``k * den`` would pass 2^62: ``pos' = -2``
    (the caller finishes the draw in Python integers), ``-1`` when the stream runs out."""
    k = 1
    while True:
        if k > _KDEN_MAX // den:
            return False, -2
        r, pos = _below(words, pos, k * den)
        if pos < 0:
            return False, -1
        if r >= num:
            return k % 2 == 1, pos
        k += 1


@njit(cache=True, nogil=True)
def discrete_gaussian_block(ls, lt, p, q0, a, b, ymax, lead, words, pos, out, start):
    """Fill ``out[start:]`` with discrete Gaussian draws from the bit stream ``words`` read from
    bit ``pos``: CKS (2020) Algorithm 3 as :func:`privlab.dp.samplers._discrete_gaussian_one`
    runs it (its plan gives the integers): ``Y`` discrete Laplace with ``P(y) ∝ exp(-|y| ls /
    lt)``, accepted with probability ``exp(-(p |Y| - q0)^2 a / b)``, drawn as
    ``floor(gamma)`` Bernoulli(exp(-1)) draws and one Bernoulli(exp(-frac(gamma))).

    Returns ``(i, pos', status, y)``.  ``status == 0``: draws ``start .. i - 1`` are done and,
    when ``i < len(out)``, the stream ran out inside an attempt of draw ``i`` that starts at
    bit ``pos'``: extend the stream and call again (the attempt is redrawn from its first bit;
    a rejected attempt leaves nothing behind, so the draws are those of one unbroken
    stream).  ``status == 1``: the attempt of draw ``i`` drew ``Y = y`` whose acceptance does
    not fit in 64-bit integers (``|y| > ymax``, or a Bernoulli denominator past 2^62): the
    caller decides it in Python integers from bit ``pos'`` (just after ``Y``) and calls
    again.  For ``|y| > ymax``, ``floor(gamma)`` is at least ``lead`` (about 2^62 / b >=
    8192): the first ``lead`` Bernoulli(exp(-1)) draws are made here, and the attempt is
    rejected at the first failure as Python would; only ``lead`` successes in a row
    (probability ``e^-lead``) go to Python, which reads the same bits again.
    """
    i = start
    n = out.shape[0]
    while i < n:
        p0 = pos
        y, pos = _laplace_one(ls, lt, words, pos)
        if pos < 0:
            return i, p0, 0, 0
        ay = y if y >= 0 else -y
        if ay > ymax:
            p1 = pos
            rejected = False
            j = 0
            while j < lead:
                ok, pos = _bernoulli_exp(1, 1, words, pos)
                if pos < 0:
                    return i, p0, 0, 0
                if not ok:
                    rejected = True
                    break
                j += 1
            if rejected:
                continue
            return i, p1, 1, y
        c = p * ay - q0
        big = c * c * a  # <= 2^62 for |y| <= ymax
        qq = big // b
        r = big - qq * b
        p1 = pos
        accept = True
        j = 0
        while j < qq:
            ok, pos = _bernoulli_exp(1, 1, words, pos)
            if pos < 0:
                return i, p0, 0, 0
            if not ok:
                accept = False
                break
            j += 1
        if accept:
            ok, pos = _bernoulli_exp_capped(r, b, words, pos)
            if pos == -1:
                return i, p0, 0, 0
            if pos == -2:
                return i, p1, 1, y
            accept = ok
        if accept:
            out[i] = y
            i += 1
    return i, pos, 0, 0


# --- the few-draw path: samplers._scalar_below's word stream, compiled ----------------------

#: The largest int64.
_INT63 = (1 << 63) - 1


@njit(cache=True, nogil=True, inline="always")
def _pop_below(words, pos, n):
    """``(r, pos')``: ``randbelow(n)`` of :func:`privlab.dp.samplers._scalar_below` from the
    words ``words[pos:]`` (given in the order it pops them): for ``n >= 2`` the top
    ``bitlength(n - 1)`` bits of one word a try, by rejection; ``n <= 1`` takes no word.
    ``pos' = -1`` when the words run out, ``-2`` when ``n`` does not fit 63 bits."""
    if n <= 1:
        return 0, pos
    w = _bits(n)
    if w > 63:
        return 0, -2
    shift = np.uint64(64 - w)
    while True:
        if pos >= words.size:
            return 0, -1
        r = np.int64(words[pos] >> shift)  # < 2^63: a safe int64
        pos += 1
        if r < n:
            return r, pos


@njit(cache=True, nogil=True, inline="always")
def _pop_bernoulli_exp(num, den, words, pos):
    """:func:`privlab.dp.samplers._bernoulli_exp_one` from the popped words: ``K = 1``; while
    ``randbelow(K den) < num``, ``K += 1``; 1 when ``K`` is odd (``pos' = -2`` before ``K
    den`` would pass 2^63 - 1)."""
    k = 1
    while True:
        if k > _INT63 // den:
            return False, -2
        r, pos = _pop_below(words, pos, k * den)
        if pos < 0:
            return False, pos
        if r >= num:
            return k % 2 == 1, pos
        k += 1


@njit(cache=True, nogil=True)
def discrete_laplace_popped(s, t, words, pos, out, start):
    """Fill ``out[start:]`` with :func:`privlab.dp.samplers._discrete_laplace_one` draws
    (``P(y) ∝ exp(-|y| s / t)``), each read from the popped words ``words[pos:]`` exactly
    as the Python scalar path reads them.

    Returns ``(i, pos', status)``: ``status == 0``, all done; ``-1``, the words ran out
    inside draw ``i``, which starts at ``pos'`` (append the next chunk and call again: the
    draw is redrawn from its first word, so the draws are those of one unbroken stream);
    ``-2``, draw ``i`` needs an integer beyond 63 bits (the caller redraws the call in
    Python integers from the same words).
    """
    i = start
    while i < out.shape[0]:
        p0 = pos
        while True:
            u, pos = _pop_below(words, pos, t)
            if pos < 0:
                return i, p0, pos
            ok, pos = _pop_bernoulli_exp(u, t, words, pos)
            if pos < 0:
                return i, p0, pos
            if not ok:
                continue
            v = 0
            while True:
                ok, pos = _pop_bernoulli_exp(1, 1, words, pos)
                if pos < 0:
                    return i, p0, pos
                if not ok:
                    break
                v += 1
            if v > (_INT63 - u) // t:
                return i, p0, -2
            y = (u + t * v) // s
            sign, pos = _pop_below(words, pos, 2)
            if pos < 0:
                return i, p0, pos
            if sign == 1:
                if y == 0:
                    continue
                y = -y
            break
        out[i] = y
        i += 1
    return i, pos, 0
