"""The custodian's registry of releases and its per-input epsilon ledger.

Two releases of one input reveal more together than either alone: two independently drawn
Anatomy releases (l = 4) of Adult determine a share of the linkable people's sensitive value
exactly (the intersection of their two groups' values), and two PRAM releases multiply the
evidence about each record's true value (``tools/pair_attacks.py``; docs/results.md).  A
release's custody directory holds its input's fingerprint, but no release looked at earlier
ones.  The registry does: every release a custodian saves records, under the SHA-256 of its
input (:meth:`privlab.data.Table.fingerprint`), its method, public parameters, the SHA-256 of
what it published and a digest of its draw (seed and salt); every DP output also records its
epsilon.

* A new release of an input the registry already holds a release of (another draw, any
  parameters) is refused with :class:`~privlab.errors.RepublicationError` unless the custodian
  acknowledges it (``republish=True``; CLI ``--republish``).  The same release again (a
  replay of its custody, the same deterministic release, another save of the same draw) is
  not a new release.
* DP outputs compose by epsilon instead: each is added to the input's ledger and a
  :class:`~privlab.errors.PrivacyWarning` says so when the total exceeds the configured one
  (``PRIVLAB_EPSILON_TOTAL``, default :data:`DEFAULT_EPSILON_TOTAL`; ``inf`` turns it off).
  They do not trip the release guard, nor does a release trip them.
* Drafts (``privlab audit``'s and ``privlab demo``'s candidates) and outputs written with
  ``not_for_publication=True`` are neither checked nor recorded.

Where it lives: ``--registry DIR`` (the root option of the CLI), else the environment variable
``PRIVLAB_REGISTRY``, else a per-user data directory: ``$XDG_DATA_HOME/privlab/registry``
(``~/.local/share/privlab/registry``), ``%LOCALAPPDATA%\\privlab\\registry`` on Windows.  It is
the custodian's, like a custody directory: it holds input fingerprints and draw digests, and
is never published.  Layout: ``DIR/inputs/<input sha256>.json`` (one JSON file per input,
replaced atomically) and ``DIR/inputs/<input sha256>.lock``; a writer holds the input's lock
from its check to its record, so concurrent releases of one input are serialized and the
second is refused.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import math
import os
import secrets
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from privlab._io import loads
from privlab._rng import SeedRecord
from privlab.errors import CustodyError, PrivacyWarning, PrivlabError, RepublicationError

try:  # POSIX: flock on the input's lock file
    import fcntl
except ImportError:  # Windows: filelock (a dependency there)
    fcntl = None  # type: ignore[assignment]

#: The environment variable naming the registry directory.
ENV = "PRIVLAB_REGISTRY"
#: The environment variable setting the epsilon total above which the ledger warns.
EPSILON_ENV = "PRIVLAB_EPSILON_TOTAL"
#: The default total: epsilon = 1 bounds the ratio of any output's probability on two
#: neighbouring inputs by e (about 2.7), the usual upper end of "strong" privacy (Dwork &
#: Roth 2014); the DP outputs of one input add up under sequential composition.
DEFAULT_EPSILON_TOTAL = 1.0

#: What two releases of one input reveal together, measured by ``tools/pair_attacks.py`` on
#: Adult (docs/results.md); the refusal says it.
PAIR_RISK = (
    "on Adult, two independent Anatomy releases at l = 4 determine the occupation of 21% of "
    "the linkable people exactly, and two PRAM releases at p = 0.3 put 49% of them at "
    "posterior >= 0.95 (98.7% right) where one release puts none"
)

_override: list[Path | None] = [None]


def use_registry(path: str | os.PathLike | None) -> None:
    """Make ``path`` the registry of this process (the CLI's ``--registry``); None: the
    environment's or the default again."""
    _override[0] = None if path is None else Path(path)


def registry_dir() -> Path:
    """The registry in use: ``--registry``, else ``$PRIVLAB_REGISTRY``, else the default."""
    if _override[0] is not None:
        return _override[0]
    env = os.environ.get(ENV)
    if env:
        return Path(env)
    return default_dir()


def user_dir(kind: str = "data") -> Path:
    """The per-user ``privlab`` directory of a kind: ``"data"`` (the registry) or
    ``"cache"`` (compiled programs only).  ``LOCALAPPDATA`` on Windows, else
    ``XDG_DATA_HOME`` / ``XDG_CACHE_HOME`` or their defaults under the home."""
    if os.name == "nt":  # pragma: no cover - Windows
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    else:
        env, fallback = {
            "data": ("XDG_DATA_HOME", (".local", "share")),
            "cache": ("XDG_CACHE_HOME", (".cache",)),
        }[kind]
        base = os.environ.get(env) or str(Path.home().joinpath(*fallback))
    return Path(base) / "privlab"


def default_dir() -> Path:
    """The per-user data directory's ``privlab/registry``."""
    return user_dir("data") / "registry"


def epsilon_total() -> float:
    """The ledger's configured total (``PRIVLAB_EPSILON_TOTAL``, default 1.0)."""
    raw = os.environ.get(EPSILON_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_EPSILON_TOTAL
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not value > 0:  # nan too
        raise PrivlabError(f"{EPSILON_ENV} must be a positive number or 'inf', got {raw!r}")
    return value


class Registry:
    """The entries of a registry directory (see the module docstring)."""

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = Path(path) if path is not None else registry_dir()

    def _file(self, input_sha256: str) -> Path:
        """``inputs/<fingerprint>.json``; a fingerprint that is no hex SHA-256 (the Spark
        engine's) is named by its own SHA-256."""
        key = str(input_sha256)
        if not (len(key) == 64 and all(c in "0123456789abcdef" for c in key)):
            key = hashlib.sha256(key.encode()).hexdigest()
        return self.path / "inputs" / f"{key}.json"

    def entries(self, input_sha256: str) -> list[dict[str, Any]]:
        """The input's entries, oldest first ([] when it has none)."""
        path = self._file(input_sha256)
        if not path.is_file():
            return []
        try:
            doc = loads(path.read_text(encoding="utf-8"), what=f"the registry file {path}")
            entries = doc["entries"]
            if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
                raise TypeError
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
            raise PrivlabError(
                f"the registry file {path} is not readable as a privlab registry: move it "
                "away (the releases it recorded are then forgotten)"
            ) from None
        return entries

    def epsilon(self, input_sha256: str) -> float:
        """The epsilon the input's DP outputs spend together (sequential composition)."""
        return sum(float(e.get("epsilon", 0.0)) for e in self.entries(input_sha256)
                   if e.get("kind") == "dp")  # fmt: skip

    def _write(self, input_sha256: str, entries: list[dict[str, Any]]) -> None:
        path = self._file(input_sha256)
        text = json.dumps({"input_sha256": input_sha256, "entries": entries}, indent=2) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @contextlib.contextmanager
    def locked(self, input_sha256: str) -> Iterator[None]:
        """Hold the input's lock (concurrent writers of one input wait for each other)."""
        folder = self._file(input_sha256).parent
        try:  # the custodian's only: fingerprints and draw digests
            self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
            folder.mkdir(exist_ok=True, mode=0o700)
        except OSError as e:
            raise PrivlabError(
                f"cannot use the release registry {self.path}: {e.strerror or e}; set "
                f"{ENV} (or --registry DIR) to a writable directory"
            ) from None
        lock = self._file(input_sha256).with_suffix(".lock")
        if fcntl is None:  # pragma: no cover - Windows
            from filelock import FileLock

            with FileLock(str(lock)):
                yield
            return
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


class Publication:
    """One output being published: checked against the registry, then recorded.

    Use :func:`publication` (a context manager): call :meth:`check` with the output's SHA-256
    once it is written (before it is committed), then :meth:`record` as the last step
    before the commit; an exception that leaves the block removes the entry again.
    """

    def __init__(self, registry: Registry | None, input_sha256: str | None, entry: dict,
                 republish: bool) -> None:  # fmt: skip
        self.registry = registry
        self.input_sha256 = input_sha256
        self.entry = entry
        self.republish = republish
        self._before: list[dict[str, Any]] | None = None
        self._new = False
        self._recorded = False
        #: the ledger's total, read (and checked) before anything is written
        self.limit = epsilon_total() if entry["kind"] == "dp" and registry else math.inf

    @property
    def active(self) -> bool:
        return self.registry is not None and self.input_sha256 is not None

    def check(self, release_sha256: str) -> None:
        """Refuse a new release of an input already released (without ``republish``)."""
        self.entry["release_sha256"] = release_sha256
        if not self.active:
            return
        assert self.registry is not None and self.input_sha256 is not None
        before = self.registry.entries(self.input_sha256)
        self._before = before
        draw = self.entry.get("draw")
        same = [e for e in before if e.get("release_sha256") == release_sha256
                or (draw is not None and e.get("draw") == draw)]  # fmt: skip
        self._new = not same
        if not self._new or self.entry["kind"] != "release":
            return
        earlier = [e for e in before if e.get("kind") == "release"]
        if earlier and not self.republish:
            last = earlier[-1]
            raise RepublicationError(
                f"this input already has {len(earlier)} release(s) in the registry "
                f"{self.registry.path} (the last: {last.get('method')}, saved "
                f"{str(last.get('saved', '?'))[:10]}); two releases of one input reveal more "
                f"together than either alone ({PAIR_RISK}): pass --republish (in Python "
                "republish=True) to publish another anyway, or --replay the earlier custody "
                "to draw the same release again"
            )

    def record(self) -> None:
        """Add the entry (a new release only); undone if the block then fails."""
        if not self.active or not self._new:
            return
        assert self.registry is not None and self.input_sha256 is not None
        entries = self.registry.entries(self.input_sha256)
        self.registry._write(self.input_sha256, [*entries, self.entry])
        self._recorded = True

    def rollback(self) -> None:
        if self._recorded:
            assert self.registry is not None and self.input_sha256 is not None
            entries = [e for e in self.registry.entries(self.input_sha256)
                       if e.get("id") != self.entry["id"]]  # fmt: skip
            self.registry._write(self.input_sha256, entries)
            self._recorded = False

    def ledger_note(self) -> str | None:
        """For a new DP output: the note to give when the input's total exceeds the
        configured one (None otherwise)."""
        if not self.active or not self._new or self.entry["kind"] != "dp":
            return None
        assert self._before is not None
        spent = [float(e.get("epsilon", 0.0)) for e in self._before if e.get("kind") == "dp"]
        total = math.fsum([*spent, float(self.entry["epsilon"])])
        limit = self.limit
        if total <= limit:
            return None
        terms = " + ".join(f"{e:g}" for e in [*spent, float(self.entry["epsilon"])])
        return (
            f"the DP outputs of this input now spend epsilon = {total:g} together ({terms}, "
            f"sequential composition), above the total of {limit:g} ({EPSILON_ENV}; the "
            f"ledger is in {self.registry.path if self.registry else '?'})"
        )


@contextlib.contextmanager
def publication(
    input_sha256: str | None,
    *,
    kind: str,
    method: str,
    parameters: dict[str, Any],
    record: SeedRecord,
    epsilon: float | None = None,
    republish: bool = False,
    enabled: bool = True,
) -> Iterator[Publication]:
    """Check and record one output in the registry (see :class:`Publication`).

    ``kind`` is ``"release"`` (a sanitizer's: a second one of an input is refused without
    ``republish``) or ``"dp"`` (a DP output: added to the input's epsilon ledger, with a
    :class:`PrivacyWarning` above the configured total).  ``enabled=False`` (a draft, an
    output not for publication) or an unknown input (``input_sha256`` None) skips both.
    """
    from privlab import __version__

    entry: dict[str, Any] = {
        "id": secrets.token_hex(8),
        "kind": kind,
        "method": method,
        "parameters": parameters,
        "release_sha256": None,
        "draw": record.draw,
        "saved": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "privlab": __version__,
    }
    if epsilon is not None:
        entry["epsilon"] = float(epsilon)
    if not enabled or input_sha256 is None:
        yield Publication(None, None, entry, republish)
        return
    registry = Registry()
    pub = Publication(registry, input_sha256, entry, republish)
    with registry.locked(input_sha256):
        try:
            yield pub
        except BaseException:
            pub.rollback()
            raise
    message = pub.ledger_note()
    if message is not None:
        warnings.warn(message, PrivacyWarning, stacklevel=3)


# -- DP outputs: one file, its custody, the ledger --------------------------------------------
#: What a file written with ``not_for_publication=True`` says about itself.
NOT_FOR_PUBLICATION = (
    "not for publication: an experiment, drawn reproducibly from the caller's own random "
    "stream, which anyone who guesses it can replay; never publish this file"
)


def save_output(
    path: str | os.PathLike,
    write: Callable[[Path, str | None], None],
    *,
    method: str,
    parameters: dict[str, Any],
    record: SeedRecord,
    input_sha256: str | None,
    epsilon: float,
    custody: str | os.PathLike | None = None,
    force: bool = False,
    not_for_publication: bool = False,
    custody_extra: dict[str, Any] | None = None,
    draft: bool = False,
) -> Path:
    """Write one DP output (``write(tmp, mark)`` writes the file; ``mark`` is
    :data:`NOT_FOR_PUBLICATION` or None) and, with ``custody``, its custody directory
    (``custody.json``: the method, the output's SHA-256, the seed record, the input's
    fingerprint, and ``custody_extra``); both appear whole or not at all.

    Refused: an experiment (``record.experiment``) without ``not_for_publication``; a replay
    (``record.replays``) that is not the output it replays.  A publishable output is added to
    the registry's epsilon ledger (a :class:`PrivacyWarning` above the configured total),
    unless it is a ``draft`` (an audit's candidate, of which the custodian publishes one at
    most: it spends nothing until that one is written again as an output).
    """
    from privlab._io import atomic_outputs, sha256_file
    from privlab._release_files import write_custody_json

    path = Path(path)
    if record.experiment and not not_for_publication:
        raise PrivlabError(
            "this output's noise was drawn from the caller's own generator or seed record (an "
            "experiment: anyone who guesses the seed replays it); pass "
            "not_for_publication=True to write it marked as such, or draw it with rng=None "
            "or an int seed (salted with OS entropy kept in custody) to publish it"
        )
    outputs: list[tuple[Path, str]] = [(path, "file")]
    if custody is not None:
        c = Path(custody).resolve()
        if c == path.resolve() or c in path.resolve().parents:
            raise PrivlabError(
                f"the custody directory {custody} must not hold the output {path}: the "
                "custody files must never be published with it"
            )
        outputs.append((Path(custody), "directory"))
    mark = NOT_FOR_PUBLICATION if not_for_publication else None
    with (
        publication(input_sha256, kind="dp", method=method, parameters=parameters,
                    record=record, epsilon=epsilon,
                    enabled=not (not_for_publication or draft)) as pub,
        atomic_outputs(*outputs, force=force) as temps,
    ):  # fmt: skip
        write(temps[0], mark)
        digest = sha256_file(temps[0])
        if record.replays is not None and digest != record.replays:
            raise CustodyError(
                "this output was drawn with the seed and salt of another output but differs "
                "from it (another input or other parameters): the two would be correlated, so "
                "it is not written; replay with exactly the original input and parameters"
            )
        pub.check(digest)
        if custody is not None:
            meta = {
                "notice": "custodian's files: never publish this directory",
                "method": method,
                "release_sha256": digest,
                "seed": record.to_dict(),
                "input_sha256": input_sha256,
                "epsilon": float(epsilon),
                **(custody_extra or {}),
            }
            if not_for_publication:
                meta["not_for_publication"] = True
            write_custody_json(temps[1], meta)
        pub.record()
    return path
