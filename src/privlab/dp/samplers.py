"""Exact samplers for differential privacy: integers only, no floating-point arithmetic.

Mironov (2012) showed that Laplace noise drawn by inverse CDF in doubles and added in floating
point leaks: the set of doubles a release can take depends on the true value, so some
outputs are *impossible* under a neighbouring input and reveal it with certainty.  privlab
therefore draws every noise value as an integer from an exact sampler and, for real-valued
queries, scales it onto a power-of-two grid (:class:`~privlab.dp.mechanisms.Laplace`).

* :func:`discrete_laplace` is Algorithm 2 of Canonne, Kamath & Steinke (2020), "The Discrete
  Gaussian for Differential Privacy": ``P(Y = y) ∝ exp(-|y| s / t)`` for integers ``s, t``,
  built from exact Bernoulli(exp(-u/t)) draws (their Algorithm 1) and uniform integers.  The
  loops are vectorized over the requested shape: each round settles the draws that were
  accepted and repeats the rest.  Large draws (``_KERNEL_MIN`` and more) run the same
  algorithm one sample at a time in a compiled kernel
  (:mod:`privlab.dp._sampler_kernel`) that takes its uniform integers from a bit stream,
  about 10x cheaper per draw.
* :func:`discrete_gaussian` is their Algorithm 3: ``P(Y = y) ∝ exp(-y^2 / (2 sigma^2))`` for
  a rational ``sigma^2``, by rejection from the discrete Laplace, in integers too (a scalar
  reference, :func:`_discrete_gaussian_one`, and the compiled kernel's
  ``discrete_gaussian_block`` above 4096 draws).
* Uniform integers come from the operating system's CSPRNG (``rng=None``: 64-bit words from
  ``os.urandom``, rejection sampling, so exactly uniform) or, for reproducible experiments,
  from a numpy ``Generator`` (``Generator.integers`` is exactly uniform too).  Seeded noise
  must never be published.

Why not OpenDP's samplers (the issue suggests a vetted implementation where it serves
better): ``opendp`` 0.16 is a 47 MB wheel, draws only from its own CSPRNG (no seeded
experiments), and took 2.8 s for 10^5 Laplace draws through its Python interface; the
algorithm here is the same one (CKS 2020), short enough to check line by line, and tested
against the exact pmf.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from privlab._rng import RngLike, as_generator
from privlab.errors import ParameterError

#: Largest denominator ``t`` the samplers accept: ``K t`` (K a small counter) stays below 2^53.
MAX_DENOMINATOR = 1 << 48

UniformBelow = Callable[[np.ndarray], np.ndarray]


def uniform_below(rng: RngLike) -> UniformBelow:
    """``f(n)``: independent uniform integers in ``[0, n_i)`` for an int64 array ``n``
    (``n_i >= 1``), from ``rng`` (None: the OS CSPRNG)."""
    if rng is not None:
        gen = as_generator(rng)
        return lambda n: gen.integers(0, n, dtype=np.int64) if n.size else n.copy()
    return _os_uniform_below


def _os_uniform_below(n: np.ndarray) -> np.ndarray:
    n = np.asarray(n, dtype=np.int64)
    out = np.zeros(n.shape, dtype=np.int64)
    todo = np.flatnonzero(n > 1)  # n == 1 always gives 0
    if todo.size == 0:
        return out
    # bits needed for n - 1 (n < 2^53, so the float conversion is exact)
    width = np.frexp((n[todo] - 1).astype(np.float64))[1].astype(np.uint64)
    while todo.size:
        words = np.frombuffer(os.urandom(8 * todo.size), dtype=np.uint64)
        r = (words >> (np.uint64(64) - width)).astype(np.int64)
        ok = r < n[todo]
        out[todo[ok]] = r[ok]
        todo, width = todo[~ok], width[~ok]
    return out


def bernoulli_exp(num: np.ndarray, den: np.ndarray, below: UniformBelow) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) for integer arrays with ``0 <= num <= den``
    (Canonne, Kamath & Steinke 2020, Algorithm 1): ``K = 1``; while Bernoulli(num/(K den))
    succeeds, ``K += 1``; the result is 1 when ``K`` is odd."""
    num = np.asarray(num, dtype=np.int64)
    den = np.asarray(den, dtype=np.int64)
    k = np.ones(num.shape, dtype=np.int64)
    out = np.zeros(num.shape, dtype=bool)
    active = np.flatnonzero(np.ones(num.shape, dtype=bool))
    while active.size:
        kd = k[active] * den[active]
        if int(kd.max()) >= (1 << 52):  # probability below 1/20!: finish exactly in Python
            import secrets

            for i in active:
                kk = int(k[i])
                while secrets.randbelow(kk * int(den[i])) < int(num[i]):
                    kk += 1
                out[i] = kk % 2 == 1
            break
        success = below(kd) < num[active]
        stop = active[~success]
        out[stop] = k[stop] % 2 == 1
        active = active[success]
        k[active] += 1
    return out


#: Up to this many draws, :func:`discrete_laplace` runs the scalar algorithm.
_SCALAR_MAX = 32


#: 64-bit words :func:`_scalar_below` fetches at a time.
_SCALAR_CHUNK = 32


def _chunk_source(rng: RngLike) -> Callable[[], np.ndarray]:
    """``f()``: the next :data:`_SCALAR_CHUNK` 64-bit words of ``rng``'s bit generator (its
    raw output), or of ``os.urandom`` for ``rng=None``."""
    if rng is None:
        return lambda: np.frombuffer(os.urandom(8 * _SCALAR_CHUNK), dtype=np.uint64)
    gen = as_generator(rng)
    return lambda: gen.bit_generator.random_raw(_SCALAR_CHUNK)


def _scalar_below(
    rng: RngLike, *, fetch: Callable[[], np.ndarray] | None = None
) -> Callable[[int], int]:
    """``randbelow(n)``: one exactly uniform integer in ``[0, n)`` from buffered 64-bit words
    (of ``rng``'s bit generator, or of ``os.urandom``; or the chunks of ``fetch``), by
    rejection.  A chunk is fetched when the buffer is empty and read from its last word
    to its first."""
    fetch = _chunk_source(rng) if fetch is None else fetch
    words: list[int] = []

    def refill() -> None:
        words.extend(int(w) for w in fetch())

    def randbelow(n: int) -> int:
        if n <= 1:
            return 0
        width = (n - 1).bit_length()
        if width > 64:  # (the discrete Gaussian's Python integers) several words a draw
            return _wide_below(n, width)
        shift = 64 - width
        while True:
            if not words:
                refill()
            r = words.pop() >> shift
            if r < n:
                return r

    def _wide_below(n: int, width: int) -> int:
        k = -(-width // 64)
        while True:
            r = 0
            for _ in range(k):
                if not words:
                    refill()
                r = (r << 64) | words.pop()
            r >>= 64 * k - width
            if r < n:
                return r

    return randbelow


def _bernoulli_exp_one(num: int, den: int, randbelow: Callable[[int], int]) -> bool:
    """One exact Bernoulli(exp(-num/den)) draw, ``0 <= num <= den`` (CKS 2020, Alg. 1)."""
    k = 1
    while randbelow(k * den) < num:
        k += 1
    return k % 2 == 1


def _discrete_laplace_one(s: int, t: int, randbelow: Callable[[int], int]) -> int:
    """One draw of :func:`discrete_laplace` (the same algorithm, one sample at a time)."""
    while True:
        u = randbelow(t)
        if not _bernoulli_exp_one(u, t, randbelow):
            continue
        v = 0
        while _bernoulli_exp_one(1, 1, randbelow):
            v += 1
        y = (u + t * v) // s
        if randbelow(2) == 1:
            if y == 0:
                continue
            return -y
        return y


_KERNEL_MODULE = "privlab.dp._sampler_kernel"


def _discrete_laplace_few(s: int, t: int, size: int, fetch: Callable[[], np.ndarray]) -> np.ndarray:
    """``size`` draws of the scalar path of :func:`discrete_laplace` (the draws
    ``_discrete_laplace_one(s, t, _scalar_below(rng))`` makes, word for word, from the
    chunks of ``fetch``), by the compiled kernel.

    :func:`discrete_laplace` takes this path for a few draws once the kernel module is
    loaded (a caller that makes many small draws, such as the DP tree's fit, loads it):
    its draws are the Python path's, so which path ran never shows in the output, and a
    process that never loads numba does not pay for it.  An integer beyond 63 bits (a
    Bernoulli counter ``K`` near 2^15 at ``t`` = 2^48: probability below 1/20000!) hands the
    whole call back to the Python path, from the same words.
    """
    from privlab.dp._sampler_kernel import discrete_laplace_popped

    out = np.empty(size, dtype=np.int64)
    if size == 0:
        return out
    # every draw ends with a random sign, one word at least: the first chunk is always read
    chunks = [np.asarray(fetch(), dtype=np.uint64)]
    words = np.ascontiguousarray(chunks[0][::-1])
    done, pos = 0, 0
    while True:
        done, pos, status = discrete_laplace_popped(s, t, words, pos, out, done)
        if status == 0:
            return out
        if status == -2:  # astronomically rare (tested with a stub kernel)
            randbelow = _scalar_below(None, fetch=_replay(chunks, fetch))
            draws = [_discrete_laplace_one(s, t, randbelow) for _ in range(size)]
            return np.array(draws, dtype=np.int64)
        chunks.append(np.asarray(fetch(), dtype=np.uint64))
        words, pos = np.concatenate([words[pos:], chunks[-1][::-1]]), 0  # drop read words


def _replay(chunks: list[np.ndarray], fetch: Callable[[], np.ndarray]) -> Callable[[], np.ndarray]:
    """A chunk source that gives ``chunks`` again, then the chunks of ``fetch``."""
    replay = iter(chunks)

    def refetch() -> np.ndarray:
        chunk = next(replay, None)
        return fetch() if chunk is None else chunk

    return refetch


#: From this many draws, :func:`discrete_laplace` runs the compiled kernel: below, the
#: vectorized numpy rounds (about 0.5 us per draw) cost less than loading numba in a fresh
#: process (about 0.6 s of CPU), against about 0.05 us per draw in the kernel.
_KERNEL_MIN = 1 << 18

#: Bits of the stream a kernel draw takes: about 8 at ``s = t = 1`` (epsilon 1), about 160 at
#: ``t = 3 * 2^20``.  The first chunk of words is sized for 16 bits a draw; later chunks for
#: the rate measured so far (the OS CSPRNG costs about 4 ns a byte: do not fetch 8x more).
_FIRST_BITS_PER_DRAW = 16


def _word_source(rng: RngLike) -> Callable[[int], np.ndarray]:
    """``f(n)``: ``n`` uniformly random 64-bit words, from the OS CSPRNG (``rng=None``) or
    the bit generator of ``rng`` (its raw output, as :func:`_scalar_below` reads it)."""
    if rng is None:
        return lambda n: np.frombuffer(os.urandom(8 * n), dtype=np.uint64)
    gen = as_generator(rng)
    return lambda n: gen.bit_generator.random_raw(n)


def discrete_laplace_stream(
    s: int, t: int, size: int, words: Callable[[int], np.ndarray]
) -> np.ndarray:
    """``size`` draws of :func:`discrete_laplace` by the compiled kernel, from the bit
    stream of ``words(n)`` chunks (64-bit words, least significant bit first).

    The draws are a function of the stream alone, not of how it is chunked: a draw that
    runs out of bits is drawn again from its first bit once the stream is extended.
    """
    from privlab.dp._sampler_kernel import discrete_laplace_block

    out = np.empty(size, dtype=np.int64)
    stream = np.ascontiguousarray(words(_FIRST_BITS_PER_DRAW * size // 64 + 4), dtype=np.uint64)
    used = 0  # bits of the stream before ``stream`` (already read)
    done, pos = discrete_laplace_block(s, t, stream, 0, out, 0)
    while done < size:
        used += pos - (pos & 63)
        rate = (used + (pos & 63)) / max(done, 1) if done else 4.0 * _FIRST_BITS_PER_DRAW
        more = np.ascontiguousarray(words(int(1.05 * rate * (size - done)) // 64 + 64), np.uint64)
        stream = np.concatenate([stream[pos >> 6 :], more])
        done, pos = discrete_laplace_block(s, t, stream, pos & 63, out, done)
    return out


def discrete_laplace(s: int, t: int, shape: tuple[int, ...], rng: RngLike = None) -> np.ndarray:
    """Exact draws of ``Y`` with ``P(Y = y) = (1 - a) / (1 + a) a^|y|``, ``a = exp(-s/t)``
    (Canonne, Kamath & Steinke 2020, Algorithm 2), as an int64 array of ``shape``.

    ``U`` uniform in ``{0..t-1}`` is accepted with probability ``exp(-U/t)``; ``V`` counts
    Bernoulli(exp(-1)) successes; ``X = U + t V`` is then geometric with ratio ``exp(-1/t)``,
    ``Y = floor(X / s)`` geometric with ratio ``exp(-s/t)``; a random sign is applied and
    the draw ``-0`` is rejected so that 0 is not counted twice.
    """
    s, t = int(s), int(t)
    if s < 1 or t < 1 or t > MAX_DENOMINATOR:
        raise ValueError(f"discrete Laplace needs integers s >= 1 and 1 <= t <= 2^48, got {s}, {t}")
    size = math.prod(shape)
    if size <= _SCALAR_MAX:  # a few draws: plain Python beats numpy's per-call overhead
        if _KERNEL_MODULE in sys.modules:  # the same draws, compiled (once it is loaded)
            return _discrete_laplace_few(s, t, size, _chunk_source(rng)).reshape(shape)
        randbelow = _scalar_below(rng)
        draws = [_discrete_laplace_one(s, t, randbelow) for _ in range(size)]
        return np.array(draws, dtype=np.int64).reshape(shape)
    if size >= _KERNEL_MIN:
        return discrete_laplace_stream(s, t, size, _word_source(rng)).reshape(shape)
    below = uniform_below(rng)
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        m = todo.size
        u = below(np.full(m, t, dtype=np.int64))
        keep = bernoulli_exp(u, np.full(m, t, dtype=np.int64), below)
        cand, u = todo[keep], u[keep]
        v = np.zeros(cand.size, dtype=np.int64)
        alive = np.flatnonzero(np.ones(cand.size, dtype=bool))
        while alive.size:
            ones = np.ones(alive.size, dtype=np.int64)
            success = bernoulli_exp(ones, ones, below)
            alive = alive[success]
            v[alive] += 1
        y = (u + t * v) // s
        negative = below(np.full(cand.size, 2, dtype=np.int64)) == 1
        ok = ~(negative & (y == 0))
        out[cand[ok]] = np.where(negative, -y, y)[ok]
        done = np.zeros(size, dtype=bool)
        done[cand[ok]] = True
        todo = todo[~done[todo]]
    return out.reshape(shape)


# --- the discrete Gaussian (CKS 2020, Algorithm 3) ---------------------------------------------

#: ``sigma^2 = n / d`` (lowest terms) must have ``n <= 2^48`` and, when ``sigma^2 < 1``,
#: ``n d <= 2^48``: then every integer of the plan fits 64 bits (:func:`_gaussian_plan`).
SIGMA2_MAX = 1 << 48

#: ``c^2 a`` (the acceptance's numerator) stays at most this in the kernel.
_INT_LIMIT = 1 << 62


def _sigma2_fits(f: Fraction) -> bool:
    n, d = f.numerator, f.denominator
    return 0 < n <= SIGMA2_MAX and (n >= d or n * d <= SIGMA2_MAX)


def round_up_sigma2(value: Fraction) -> Fraction:
    """The smallest ``p / 2^k`` at or above ``value`` (``k`` as large as fits) within the
    sampler's range: ``value`` itself when it fits.

    More noise, never less: the caller's ``sigma^2`` grows by a relative 2^-46 at most when
    ``sigma >= 1`` and ``2^-23 / sigma`` below (6e-7 at sigma = 0.2; the smallest result is
    2^-48), so a privacy guarantee computed from the value asked for still holds.  Above 2^48
    (``sigma`` above 2^24) there is nothing to round to: :class:`ParameterError`.
    """
    f = Fraction(value)
    if f <= 0:
        raise ParameterError(f"sigma2 must be positive, got {value}")
    if _sigma2_fits(f):
        return f
    if f > SIGMA2_MAX:
        raise ParameterError(
            f"sigma2 = {float(f):.6g} is above 2^48 (sigma above 2^24), beyond the exact sampler"
        )
    for k in range(96, -1, -1):  # the finest dyadic grid that fits: the first found
        g = Fraction(math.ceil(f * (1 << k)), 1 << k)
        if _sigma2_fits(g):
            return g
    raise AssertionError("unreachable: k = 0 gives an integer <= 2^48")  # pragma: no cover


def exact_sigma2(sigma2: Fraction | int | float) -> Fraction:
    """``sigma2`` as the exact :class:`~fractions.Fraction` the discrete Gaussian uses.

    A :class:`~fractions.Fraction` or an integer is taken exactly, and refused
    (:class:`ParameterError`) outside the sampler's range (``n <= 2^48`` for ``sigma^2 = n /
    d`` in lowest terms, and ``n d <= 2^48`` when ``sigma^2 < 1``).  A float is converted
    exactly (``Fraction(x)``: 0.25 and 10.5 stay themselves) and, when that binary fraction
    falls outside the range (0.1 does), rounded *up* by :func:`round_up_sigma2` (by a
    relative 2^-46 when ``sigma >= 1``): the noise never shrinks.  Non-positive, NaN and
    infinite values, bools and non-numbers are refused in one line.
    """
    if isinstance(sigma2, (bool, np.bool_)) or not isinstance(
        sigma2, (int, float, Fraction, np.integer, np.floating)
    ):
        raise ParameterError(f"sigma2 must be a positive number (a Fraction, int or float), "
                             f"got {sigma2!r}")  # fmt: skip
    if isinstance(sigma2, (float, np.floating)):
        x = float(sigma2)
        if not math.isfinite(x) or x <= 0:
            raise ParameterError(f"sigma2 must be positive and finite, got {sigma2!r}")
        return round_up_sigma2(Fraction(x))
    f = Fraction(int(sigma2)) if isinstance(sigma2, (int, np.integer)) else sigma2
    if f <= 0:
        raise ParameterError(f"sigma2 must be positive, got {sigma2}")
    if not _sigma2_fits(f):
        raise ParameterError(
            f"sigma2 = {f} is outside the exact sampler's range (n <= 2^48 for n/d in lowest "
            f"terms, n*d <= 2^48 below 1); pass a float to have it rounded up onto the range"
        )
    return f


@dataclass(frozen=True)
class _GaussianPlan:
    """The integers of one discrete Gaussian: a discrete Laplace with ``P(y) ∝ exp(-|y| ls /
    lt)``, accepted with probability ``exp(-gamma)``, ``gamma = (p |y| - q0)^2 a / b``;
    ``ymax`` the largest ``|y|`` whose ``gamma`` fits 64-bit integers."""

    ls: int
    lt: int
    p: int
    q0: int
    a: int
    b: int
    ymax: int


def _gaussian_plan(sigma2: Fraction) -> _GaussianPlan:
    """The integers of CKS (2020) Algorithm 3 for ``sigma^2 = n / d``.

    CKS take the Laplace scale ``t = floor(sigma) + 1``; the acceptance exponent is then
    ``(|y| - sigma^2 / t)^2 / (2 sigma^2)``, whose denominator ``2 n d t^2 / ...`` grows as
    ``sigma^4`` and passes 2^63 near sigma = 3000.  Their proof holds for every scale
    ``t > 0`` (the Laplace weight ``exp(-|y|/t)`` times the acceptance is ``exp(-y^2/(2
    sigma^2) - sigma^2/(2 t^2))``, Gaussian up to a constant), so privlab takes the rational
    scale ``t = sigma^2 / mu`` with ``mu = round(sigma)`` when ``sigma >= 1``: ``sigma^2 / t =
    mu`` is an integer and ``gamma = (|y| - mu)^2 d / (2 n)`` has denominator ``2 n <=
    2^49``.  ``t`` lies within a factor 1.5 of ``sigma`` (at most 1.56 expected attempts per
    draw, 1.32 for large sigma, as with CKS's ``t``).  Below 1 it is CKS's ``t = 1``:
    ``gamma = (d |y| - n)^2 / (2 n d)``.
    """
    n, d = sigma2.numerator, sigma2.denominator
    if n >= d:
        k = math.isqrt(n // d)  # floor(sigma)
        mu = k + 1 if 4 * n >= d * (2 * k + 1) ** 2 else k  # round(sigma) >= 1, exactly
        g = math.gcd(d * mu, n)
        ls, lt = d * mu // g, n // g  # Laplace scale lt / ls = n / (d mu) = sigma^2 / mu
        p, q0, a, b = 1, mu, d, 2 * n
    else:
        ls, lt = 1, 1
        p, q0, a, b = d, n, 1, 2 * n * d
    g = math.gcd(a, b)
    a, b = a // g, b // g
    cmax = math.isqrt(_INT_LIMIT // a)
    assert q0 <= cmax and b <= 2 * SIGMA2_MAX and lt <= SIGMA2_MAX  # the range guarantees it
    return _GaussianPlan(ls, lt, p, q0, a, b, (cmax + q0) // p)


def _gaussian_accept(ay: int, plan: _GaussianPlan, randbelow: Callable[[int], int]) -> bool:
    """Bernoulli(exp(-gamma)) for the Laplace draw ``|Y| = ay``: ``floor(gamma)`` draws of
    Bernoulli(exp(-1)) (stopping at the first failure), then Bernoulli(exp(-frac(gamma)))
    (CKS 2020, Algorithm 1 and the remark after it), in Python integers of any size."""
    c = plan.p * ay - plan.q0
    whole, rest = divmod(c * c * plan.a, plan.b)
    for _ in range(whole):
        if not _bernoulli_exp_one(1, 1, randbelow):
            return False
    return _bernoulli_exp_one(rest, plan.b, randbelow)


def _discrete_gaussian_one(plan: _GaussianPlan, randbelow: Callable[[int], int]) -> int:
    """One draw of :func:`discrete_gaussian`: the scalar reference of the kernel."""
    while True:
        y = _discrete_laplace_one(plan.ls, plan.lt, randbelow)
        if _gaussian_accept(abs(y), plan, randbelow):
            return y


class _BitReader:
    """A bit stream of 64-bit words fetched in chunks, read by the kernel (``words``, from bit
    ``pos``) and, between kernel calls, by Python (:meth:`randbelow`, the same bits the
    kernel's ``_below`` would take)."""

    def __init__(self, fetch: Callable[[int], np.ndarray], first: int) -> None:
        self.fetch = fetch
        self.words = np.ascontiguousarray(fetch(first), dtype=np.uint64)
        self.pos = 0  # the next unread bit of ``words``
        self.dropped = 0  # bits before ``words`` (read and discarded)

    @property
    def read(self) -> int:
        """Bits read since the start."""
        return self.dropped + self.pos

    def extend(self, n: int) -> None:
        keep = self.pos >> 6
        more = np.ascontiguousarray(self.fetch(n), dtype=np.uint64)
        self.words = np.concatenate([self.words[keep:], more])
        self.dropped += keep << 6
        self.pos -= keep << 6

    def randbelow(self, n: int) -> int:
        if n <= 1:
            return 0
        w = (n - 1).bit_length()
        while True:
            if self.pos + w > 64 * self.words.size:
                self.extend(w // 64 + 64)
                continue
            wi, off = self.pos >> 6, self.pos & 63
            chunk = self.words[wi : wi + (off + w + 63) // 64]
            r = (int.from_bytes(chunk.astype("<u8").tobytes(), "little") >> off) & ((1 << w) - 1)
            self.pos += w
            if r < n:
                return r


def discrete_gaussian_stream(
    sigma2: Fraction | int | float,
    size: int,
    words: Callable[[int], np.ndarray],
    *,
    _ymax: int | None = None,
) -> np.ndarray:
    """``size`` draws of :func:`discrete_gaussian` by the compiled kernel from the bit stream
    of ``words(n)`` chunks (64-bit words, least significant bit first).

    The draws are a function of the stream alone, not of its chunks (an attempt that runs
    out of bits is redrawn from its first bit once the stream is extended), nor of where the
    kernel hands an attempt to Python integers (``_ymax``, for tests: every ``|Y|`` above it
    is decided in Python, from the same bits).
    """
    from privlab.dp._sampler_kernel import discrete_gaussian_block

    plan = _gaussian_plan(exact_sigma2(sigma2))
    ymax = plan.ymax if _ymax is None else _ymax
    # floor(gamma) for |y| > ymax is at least this (c^2 a > 2^62 - a); none below a test's ymax
    lead = (_INT_LIMIT - plan.a) // plan.b if _ymax is None else 0
    out = np.empty(size, dtype=np.int64)
    # a first chunk for a few thousand draws at a guessed rate, then chunks at the rate read
    guess = 2 * (3 * plan.lt.bit_length() + 2 * plan.b.bit_length() + 24)
    bits = _BitReader(words, guess * min(size, 4096) // 64 + 4)
    done = 0
    while done < size:
        done, pos, status, y = discrete_gaussian_block(
            plan.ls, plan.lt, plan.p, plan.q0, plan.a, plan.b, ymax, lead, bits.words, bits.pos,
            out, done,
        )  # fmt: skip
        bits.pos = int(pos)
        if status == 1:  # the acceptance of |Y| = |y| in Python integers, from the same bits
            if _gaussian_accept(abs(int(y)), plan, bits.randbelow):
                out[done] = y
                done += 1
        elif done < size:
            rate = bits.read / done if done else 4.0 * guess
            bits.extend(min(int(1.05 * rate * (size - done)) // 64 + 64, _MAX_CHUNK_WORDS))
    return out


#: The most 64-bit words one refill of the discrete Gaussian's stream fetches (8 MB).
_MAX_CHUNK_WORDS = 1 << 20

#: Up to this many draws, :func:`discrete_gaussian` runs the scalar reference: about 9 us a
#: draw in Python (40 ms for 4096), against about 0.5 s to load the compiled kernel in a fresh
#: process and 0.2-0.3 us a draw in it.
_GAUSS_SCALAR_MAX = 4096


def discrete_gaussian(
    sigma2: Fraction | int | float, shape: int | tuple[int, ...], rng: RngLike = None
) -> np.ndarray:
    """Exact draws of the discrete Gaussian ``N_Z(0, sigma^2)``: ``P(Y = y) = exp(-y^2 / (2
    sigma^2)) / sum_z exp(-z^2 / (2 sigma^2))`` over the integers (Canonne, Kamath & Steinke
    2020, Algorithm 3), as an int64 array of ``shape``.

    Parameters
    ----------
    sigma2
        ``sigma^2 > 0``, exact: a :class:`~fractions.Fraction` or an integer is used as it is
        (refused outside the sampler's range, ``sigma^2 <= 2^48``); a float is converted
        exactly when its binary fraction fits and otherwise rounded *up* a little
        (:func:`exact_sigma2`, :func:`round_up_sigma2`).  ``sigma`` is the scale of the
        discrete Gaussian, not quite its standard deviation: the variance is below
        ``sigma^2`` (CKS 2020, Section 2.1; by a relative ``exp(-2 pi^2 sigma^2)`` order,
        invisible in doubles from sigma = 3 on).
    shape
        The output shape (an int or a tuple).
    rng
        ``None``: the OS CSPRNG (the only noise to publish); an int or a numpy ``Generator``
        for reproducible experiments.

    Notes
    -----
    Each attempt draws a discrete Laplace ``Y`` (CKS Algorithm 2) of scale ``t`` and accepts
    it with probability ``exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))``, an exact Bernoulli of a
    rational exponent (CKS Algorithm 1, with ``floor(gamma)`` Bernoulli(exp(-1)) draws for
    ``gamma > 1``).  The scale is CKS's ``t = floor(sigma) + 1`` below sigma = 1 and the
    rational ``sigma^2 / round(sigma)`` above, which keeps every integer within 64 bits
    (:func:`_gaussian_plan` says why that changes nothing in the distribution).  An
    acceptance that would overflow 64 bits (``|Y|`` some 64 scales out when ``sigma >= 1``;
    any ``Y != 0`` when ``sigma`` is tiny) has ``gamma`` above 8192: the kernel draws its
    first 8192 Bernoulli(exp(-1)) and hands the rest to Python integers only if all succeed
    (probability ``e^-8192``), so no draw is approximate and none is slow.
    """
    f = exact_sigma2(sigma2)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
    size = math.prod(shape)
    if size <= _GAUSS_SCALAR_MAX:
        randbelow = _scalar_below(rng)
        plan = _gaussian_plan(f)
        draws = [_discrete_gaussian_one(plan, randbelow) for _ in range(size)]
        return np.array(draws, dtype=np.int64).reshape(shape)
    return discrete_gaussian_stream(f, size, _word_source(rng)).reshape(shape)
