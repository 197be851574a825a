"""Random-number plumbing shared by every randomized function.

Conventions (DEVELOPERS.md): every random function takes ``rng`` as an ``int``, a
:class:`numpy.random.Generator` or ``None``.  ``None`` draws fresh entropy from the operating
system (``numpy.random.SeedSequence()`` reads ``os.urandom``), so released noise is
unpredictable unless the caller fixes a seed.  No module-level random state is ever used.

Sanitizers that publish a release draw through :func:`publication_rng`: a user's integer seed
is *salted* with 128 bits of OS entropy, because a guessable seed (1, 42) is as bad as a
published one (anyone can try seeds 0..10^6 against the release and replay its draws).  The
salt is kept in the release's custody directory with the seed; together they replay the
release exactly (:class:`SeedRecord`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

import numpy as np

from privlab.errors import ParameterError

RngLike = int | np.random.Generator | np.random.SeedSequence | None

#: Bits of OS entropy mixed into every published release's seed.
SALT_BITS = 128


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
    if isinstance(rng, (bool, np.bool_)):
        raise TypeError("rng must be an int, a numpy Generator or None, not a bool")
    if isinstance(rng, (int, np.integer)):
        return np.random.default_rng(check_seed(rng))
    if rng is None or isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    raise TypeError(f"rng must be an int, a numpy Generator or None, not {type(rng).__name__}")


def check_seed(seed: int) -> int:
    """A seed must be a non-negative integer (numpy refuses negative ones)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ParameterError(f"a seed must be a non-negative integer, got {seed!r}")
    if seed < 0:
        raise ParameterError(f"a seed must be a non-negative integer, got {seed}")
    return int(seed)


def spawn(rng: RngLike, n: int) -> list[np.random.Generator]:
    """Spawn ``n`` independent child generators (for experiments, chains, folds)."""
    return as_generator(rng).spawn(n)


@dataclass(frozen=True)
class SeedRecord:
    """How a release's draws were seeded: what its custody directory keeps to replay them.

    Attributes
    ----------
    seed
        The user's seed, or None when none was given.
    salt
        The OS entropy mixed with it (at least :data:`SALT_BITS` bits), or None when the
        caller supplied their own generator (then nothing can be replayed from custody).
    """

    seed: int | None = None
    salt: int | None = None
    #: The SHA-256 of the release this record replays (set by ``Custody.replay()``): a
    #: release drawn from it may be saved only if it is that release again, byte for byte.
    replays: str | None = field(default=None, compare=False)

    @property
    def replayable(self) -> bool:
        return self.salt is not None

    def generator(self) -> np.random.Generator:
        """The generator the release drew from (only for a replayable record)."""
        if self.salt is None:
            raise ParameterError(
                "this release was drawn from a caller's generator: its custody cannot replay it"
            )
        words = [int(self.salt)] if self.seed is None else [int(self.salt), check_seed(self.seed)]
        return np.random.default_rng(np.random.SeedSequence(words))

    def to_dict(self) -> dict[str, str | int | None]:
        # the salt is written as a string: it exceeds the integers JSON readers keep exactly
        return {"seed": self.seed, "salt": None if self.salt is None else str(self.salt)}

    @classmethod
    def from_dict(cls, d: dict) -> SeedRecord:
        if not isinstance(d, dict):
            raise ParameterError(f"a seed record is an object with 'seed' and 'salt', not {d!r}")
        seed, salt = d.get("seed"), d.get("salt")
        try:
            salt = None if salt is None else int(salt)
        except (TypeError, ValueError):
            raise ParameterError(f"the salt must be a non-negative integer, got {salt!r}") from None
        if salt is not None and salt < 0:
            raise ParameterError(f"the salt must be a non-negative integer, got {salt}")
        return cls(seed=None if seed is None else check_seed(seed), salt=salt)


def publication_rng(rng: RngLike | SeedRecord) -> tuple[np.random.Generator, SeedRecord]:
    """The generator a sanitizer draws a release from, and the record its custody keeps.

    * ``None``: fresh OS entropy, recorded as the salt (custody alone replays the release);
    * an integer seed: mixed with :data:`SALT_BITS` bits of fresh OS entropy, so the same
      seed gives a different release each time unless replayed from custody;
    * a :class:`SeedRecord` (``Custody.seed_record``): replays that release exactly;
    * a ``Generator`` or ``SeedSequence``: the caller's own stream, used as given (for
      experiments and tests); the record then holds nothing replayable.
    """
    if isinstance(rng, SeedRecord):
        return rng.generator(), rng
    if isinstance(rng, (np.random.Generator, np.random.SeedSequence)):
        return as_generator(rng), SeedRecord()
    if rng is None:
        record = SeedRecord(None, _fresh_salt())
    elif isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        record = SeedRecord(check_seed(rng), _fresh_salt())
    else:
        raise TypeError(f"rng must be an int, a numpy Generator or None, not {type(rng).__name__}")
    return record.generator(), record


def _fresh_salt() -> int:
    return secrets.randbits(SALT_BITS)  # the OS CSPRNG
