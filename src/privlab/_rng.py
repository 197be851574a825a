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

A release drawn from the caller's own stream (a ``Generator``, a ``SeedSequence``, or a seed
record that ``Custody.replay()`` did not produce, such as ``rng=custody.seed``) is an
*experiment*: :func:`publication_rng` warns (:class:`~privlab.errors.ExperimentWarning`, a
``PrivacyWarning``) and marks its record, and ``save()`` refuses to write it unless the caller
says ``not_for_publication=True`` (the file then says so).  DP noise follows the same rules
(:func:`noise_rng`), except that no seed means the OS CSPRNG itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
import warnings
from dataclasses import dataclass, field

import numpy as np

from privlab.errors import ExperimentWarning, ParameterError

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
    #: True for a draw from the caller's own stream (a Generator, a SeedSequence, a record
    #: ``Custody.replay()`` did not produce): an experiment, never to be published.
    experiment: bool = field(default=False, compare=False)

    @property
    def replayable(self) -> bool:
        return self.salt is not None

    @property
    def draw(self) -> str | None:
        """A digest of the seed and the salt: the same for every replay of one draw, None when
        nothing is replayable (kept in the custodian's registry, never published)."""
        if self.salt is None:
            return None
        return hashlib.sha256(f"privlab-draw:{self.salt}:{self.seed}".encode()).hexdigest()

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
        d: dict[str, str | int | bool | None] = {
            "seed": self.seed,
            "salt": None if self.salt is None else str(self.salt),
        }
        if self.experiment:
            d["experiment"] = True
        return d  # type: ignore[return-value]

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
        experiment = d.get("experiment", False)
        if not isinstance(experiment, bool):
            raise ParameterError(f"'experiment' must be true or false, got {experiment!r}")
        return cls(
            seed=None if seed is None else check_seed(seed), salt=salt, experiment=experiment
        )


def publication_rng(rng: RngLike | SeedRecord) -> tuple[np.random.Generator, SeedRecord]:
    """The generator a sanitizer draws a release from, and the record its custody keeps.

    * ``None``: fresh OS entropy, recorded as the salt (custody alone replays the release);
    * an integer seed: mixed with :data:`SALT_BITS` bits of fresh OS entropy, so the same
      seed gives a different release each time unless replayed from custody;
    * the record of ``Custody.replay()``: replays that release exactly (``save()`` then
      refuses anything but that release, byte for byte);
    * a ``Generator``, a ``SeedSequence`` or any other :class:`SeedRecord` (``custody.seed``,
      one rebuilt from ``custody.json``): the caller's own stream, an *experiment*; an
      :class:`~privlab.errors.ExperimentWarning` is issued and the record is marked, so that
      ``save()`` refuses to write the release unless told ``not_for_publication=True``.
    """
    if isinstance(rng, SeedRecord):
        if rng.replays is not None:  # Custody.replay(): save() checks it is that release
            if rng.experiment:
                warn_experiment("the replay of an experiment")
            return rng.generator(), rng
        warn_experiment("a seed record that Custody.replay() did not produce")
        return rng.generator(), dataclasses.replace(rng, experiment=True)
    if isinstance(rng, (np.random.Generator, np.random.SeedSequence)):
        warn_experiment(f"the caller's own {type(rng).__name__}")
        return as_generator(rng), SeedRecord(experiment=True)
    if rng is None:
        record = SeedRecord(None, _fresh_salt())
    elif isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        record = SeedRecord(check_seed(rng), _fresh_salt())
    else:
        raise TypeError(f"rng must be an int, a numpy Generator or None, not {type(rng).__name__}")
    return record.generator(), record


def noise_rng(rng: RngLike | SeedRecord) -> tuple[np.random.Generator | None, SeedRecord]:
    """The ``rng`` a DP output's noise is drawn with, and the record its custody keeps.

    As :func:`publication_rng`, except that ``None`` stays ``None``: the mechanisms then draw
    from the operating system's CSPRNG (:mod:`privlab.dp.secure`) and nothing is replayable.
    An integer seed is salted exactly as a release's is.
    """
    if rng is None:
        return None, SeedRecord()
    return publication_rng(rng)


def estimator_record(record: SeedRecord | None, rng: object) -> SeedRecord:
    """The seed record of a fitted DP estimator: ``record`` when the table-level function
    that fitted it salted its seed, else from the estimator's own ``rng`` (``None``: the OS
    CSPRNG, publishable; a seed or a generator of the caller's: an experiment)."""
    if record is not None:
        return record
    return SeedRecord() if rng is None else SeedRecord(experiment=True)


def warn_experiment(source: str) -> None:
    """Warn that a draw comes from ``source``, the caller's own stream: an experiment."""
    warnings.warn(
        f"drawn from {source}: an experiment, not a publication (anyone who guesses its seed "
        "replays the draws); save() refuses it unless not_for_publication=True; pass rng=None "
        "or an int seed (salted with OS entropy kept in custody) to publish",
        ExperimentWarning,
        stacklevel=4,
    )


def _fresh_salt() -> int:
    return secrets.randbits(SALT_BITS)  # the OS CSPRNG
