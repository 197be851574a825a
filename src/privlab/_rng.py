"""Random-number plumbing shared by every randomized function.

Conventions (DEVELOPERS.md): every random function takes ``rng`` as an ``int``, a
:class:`numpy.random.Generator` or ``None``.  ``None`` draws fresh entropy from the operating
system (``numpy.random.SeedSequence()`` reads ``os.urandom``), so released noise is
unpredictable unless the caller fixes a seed.  No module-level random state is ever used.
"""

from __future__ import annotations

import numpy as np

RngLike = int | np.random.Generator | np.random.SeedSequence | None


def as_generator(rng: RngLike) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``rng``.

    Parameters
    ----------
    rng
        ``None`` (OS entropy), an integer seed, a ``SeedSequence`` or an existing generator
        (returned unchanged, so that a caller's stream is continued, not restarted).
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer, np.random.SeedSequence)):
        return np.random.default_rng(rng)
    raise TypeError(f"rng must be an int, a numpy Generator or None, not {type(rng).__name__}")


def spawn(rng: RngLike, n: int) -> list[np.random.Generator]:
    """Spawn ``n`` independent child generators (for experiments, chains, folds)."""
    return as_generator(rng).spawn(n)


def seed_of(rng: RngLike) -> int | None:
    """The integer seed recorded in a release's metadata (``None`` when not reproducible)."""
    if rng is None or isinstance(rng, np.random.Generator):
        return None
    if isinstance(rng, np.random.SeedSequence):
        return int(rng.entropy) if isinstance(rng.entropy, int) else None
    return int(rng)
