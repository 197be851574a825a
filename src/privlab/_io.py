"""Atomic output (files and directories appear whole or not at all) and JSON helpers."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from privlab.errors import Interrupted, OutputExistsError, PrivlabError

try:  # POSIX: the commit lock is flock on the output's folder (no lock file)
    import fcntl
except ImportError:  # Windows: a lock file beside the outputs (see _commit_lock)
    fcntl = None  # type: ignore[assignment]

_PROTECTED: ContextVar[tuple[Path, ...]] = ContextVar("privlab_protected_inputs", default=())


@contextlib.contextmanager
def protect_inputs(*paths: str | os.PathLike | None) -> Iterator[None]:
    """Within the block, no atomic output may replace, contain or overwrite these inputs.

    The CLI wraps every command that reads files, so that ``--out`` pointing at an input (or
    at a directory that holds one) is refused even with ``--force``: inputs are never
    modified.  Paths that do not exist (a bundled dataset's name) are ignored.
    """
    resolved = tuple(Path(p).resolve() for p in paths if p is not None and Path(p).exists())
    token = _PROTECTED.set(_PROTECTED.get() + resolved)
    try:
        yield
    finally:
        _PROTECTED.reset(token)


def _refuse_inputs(path: Path) -> None:
    target = path.resolve()
    for inp in _PROTECTED.get():
        if inp == target or target in inp.parents or (inp in target.parents and target.exists()):
            raise OutputExistsError(
                f"output {path} would overwrite the input {inp}; inputs are never modified, "
                "choose another output"
            )


def check_output(path: str | os.PathLike, *, force: bool = False, kind: str = "file") -> None:
    """Refuse ``path`` now, before any work: an existing output without ``force``, or one
    that would replace an input.  (The atomic writers check again when they write.)"""
    path = Path(path)
    _refuse_inputs(path)
    if path.exists() and not force:
        raise OutputExistsError(f"output {kind} exists: {path} (use --force to overwrite)")
    _check_parent(path)


def _check_parent(path: Path) -> None:
    """The nearest existing ancestor of ``path`` must be a writable directory."""
    ancestor = path.absolute().parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise PrivlabError(f"cannot write {path}: {ancestor} is a file, not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise PrivlabError(f"cannot write {path}: the directory {ancestor} is not writable")


# -- interruption ----------------------------------------------------------------------------
_DEFERRED = 0  # > 0 while outputs are being committed: a signal then waits for the commit
_PENDING: list[int] = []
_DEPTH: ContextVar[int] = ContextVar("privlab_output_depth", default=0)
_COMMITTED: list[Path] = []


def install_signal_handlers() -> None:
    """Turn SIGINT, SIGTERM and SIGHUP into :class:`~privlab.errors.Interrupted`, so that the
    atomic writers remove their temporary files on the way out.  A signal that arrives while
    outputs are being renamed into place waits until they all are.  (Main thread only.)"""
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _on_signal)


def _on_signal(signum: int, frame: Any) -> None:
    if _DEFERRED:
        _PENDING.append(signum)
        return
    raise Interrupted(signum, tuple(_COMMITTED))


@contextlib.contextmanager
def _deferred_signals() -> Iterator[None]:
    global _DEFERRED
    if threading.current_thread() is not threading.main_thread():
        yield  # Python runs signal handlers in the main thread only: nothing to hold back
        return
    _DEFERRED += 1
    try:
        yield
    finally:
        _DEFERRED -= 1
        if not _DEFERRED and _PENDING:
            signum = _PENDING[0]
            _PENDING.clear()
            raise Interrupted(signum, tuple(_COMMITTED))


def committed_outputs() -> tuple[Path, ...]:
    """The outputs this process has put in place (outermost writes only), in order."""
    return tuple(_COMMITTED)


# -- temporary names, stale leftovers and the commit lock -------------------------------------
_MARK = "privlab"
_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.privlab-(?P<pid>\d+)-[A-Za-z0-9_]+\.(?:tmp|old)$")


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.{_MARK}-{os.getpid()}-"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if os.name == "nt":  # os.kill(pid, 0) would terminate the process there
        return _alive_windows(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _alive_windows(pid: int) -> bool:  # pragma: no cover - Windows only
    import ctypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return ctypes.get_last_error() == 5  # access denied: it exists
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == 259  # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


def sweep_leftovers(path: str | os.PathLike) -> list[Path]:
    """Remove the temporary files and directories that a killed privlab process left in
    ``path``'s folder (``.NAME.privlab-PID-XXXX.tmp`` / ``.old`` of any NAME whose process is
    gone); return them.

    A process that is killed (SIGKILL, power loss) cannot clean up after itself; the next
    privlab write into the same folder does, whatever it writes there: a killed audit's
    custody temporary (``.OUT.custody.privlab-...``), which holds the truth, must not wait for
    a write of the same name.
    """
    path = Path(path)
    removed = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = _LEFTOVER.match(entry.name)
        if m is None or _alive(int(m["pid"])):
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry)
    return removed


@contextlib.contextmanager
def _commit_lock(parent: Path) -> Iterator[None]:
    """Serialize the commits of concurrent writers into one directory.

    On POSIX, ``flock`` on the directory itself: no lock file is left behind.  Where there is
    no ``fcntl`` (Windows), a hidden ``.privlab.lock`` file in the directory, locked with
    ``filelock`` (a dependency on Windows only).
    """
    if fcntl is None:  # pragma: no cover - Windows
        from filelock import FileLock

        with FileLock(parent / ".privlab.lock"):
            yield
        return
    fd = os.open(parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def _group_lock(parents: list[Path]) -> Iterator[None]:
    """Hold the commit lock of every folder of one commit group at once.

    The outputs of one command (a release and its custody, a report and the custody's files)
    may live in different folders; their folders' locks are taken in one fixed order (their
    resolved paths, sorted), so two groups that share folders never deadlock, and a group's
    outputs are checked and renamed into place while no other writer can commit into any of
    them: concurrent writers of the same release and custody never pair one's release with
    the other's custody.
    """
    folders = sorted({p.resolve() for p in parents}, key=str)
    with contextlib.ExitStack() as stack:
        for folder in folders:
            stack.enter_context(_commit_lock(folder))
        yield


class _Staged:
    """One output being written: a temporary sibling that is renamed onto ``path``."""

    def __init__(self, path: str | os.PathLike, *, force: bool, kind: str) -> None:
        self.path = Path(path)
        self.force = force
        # "optional file": a file that the writer may leave empty, and then none is written
        self.optional = kind == "optional file"
        self.kind = "file" if self.optional else kind
        _refuse_inputs(self.path)
        self._refuse_existing()
        _check_parent(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        sweep_leftovers(self.path)
        prefix = _temp_prefix(self.path)
        if kind == "directory":
            self.tmp = Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=self.path.parent))
        else:
            fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=self.path.parent)
            os.close(fd)
            self.tmp = Path(tmp)

    def _refuse_existing(self) -> None:
        # one stat: a concurrent writer may be swapping the path (outside the commit lock)
        try:
            is_dir = stat.S_ISDIR(os.stat(self.path).st_mode)
        except (FileNotFoundError, NotADirectoryError):  # the latter: a parent is a file
            if not os.path.islink(self.path):
                return
            is_dir = False  # a dangling link
        if not self.force:
            raise OutputExistsError(
                f"output {self.kind} exists: {self.path} (use --force to overwrite)"
            )
        if self.kind == "directory" and not is_dir:
            raise OutputExistsError(f"output path exists and is not a directory: {self.path}")
        if self.kind == "file" and is_dir:
            raise OutputExistsError(f"output path is a directory, not a file: {self.path}")

    def commit(self) -> None:
        """Rename the temporary onto the output (the caller holds the folder's lock and has
        called :meth:`_refuse_existing` under it)."""
        if self.kind == "directory" and self.path.exists():
            old = Path(tempfile.mkdtemp(prefix=_temp_prefix(self.path), suffix=".old",
                                        dir=self.path.parent))  # fmt: skip
            os.replace(self.path, old)  # an empty directory is replaced
            os.replace(self.tmp, self.path)
            shutil.rmtree(old, ignore_errors=True)
        elif self.optional and os.path.getsize(self.tmp) == 0:
            # nothing to write: no file, and none left from an earlier run (which --force
            # replaces) to be read as this run's
            self.path.unlink(missing_ok=True)
            self.tmp.unlink(missing_ok=True)
        else:
            os.replace(self.tmp, self.path)

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            if self.tmp.is_dir():
                shutil.rmtree(self.tmp)
            elif self.tmp.exists():
                self.tmp.unlink()


@contextlib.contextmanager
def atomic_outputs(
    *outputs: tuple[str | os.PathLike, str], force: bool = False
) -> Iterator[list[Path]]:
    """Write several outputs that appear together or not at all.

    ``outputs`` are ``(path, kind)`` pairs, ``kind`` ``"file"``, ``"directory"`` or
    ``"optional file"`` (left empty by the writer: not written, and an earlier one removed);
    yields their temporary paths.  Every output is checked (existing without ``force``, replacing an
    input) before anything is written; on success all are checked again and renamed into
    place under one lock over all their folders (:func:`_group_lock`), with signals held back
    until the last one is; on an error or a signal every temporary is removed.
    """
    staged: list[_Staged] = []
    outermost = _DEPTH.get() == 0  # writes inside another output's temporary aren't listed
    token = _DEPTH.set(_DEPTH.get() + 1)
    try:
        for path, kind in outputs:
            staged.append(_Staged(path, force=force, kind=kind))
        yield [s.tmp for s in staged]
        with _deferred_signals(), _group_lock([s.path.parent for s in staged]):
            for s in staged:  # another writer may have committed meanwhile: all or none
                s._refuse_existing()
            for s in staged:
                s.commit()
                if outermost:
                    _COMMITTED.append(s.path)
    finally:
        _DEPTH.reset(token)
        for s in staged:
            s.discard()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, force: bool = False) -> Iterator[Path]:
    """Yield a temporary file path beside ``path``; rename it onto ``path`` on success.

    Refuses to replace an existing ``path`` unless ``force`` is true.
    """
    with atomic_outputs((path, "file"), force=force) as (tmp,):
        yield tmp


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike, *, force: bool = False) -> Iterator[Path]:
    """Yield a temporary directory beside ``path``; move it onto ``path`` on success.

    An existing ``path`` is refused unless ``force`` is true, in which case it is replaced only
    after the new content is complete.
    """
    with atomic_outputs((path, "directory"), force=force) as (tmp,):
        yield tmp


def dumps(obj: Any) -> str:
    """``obj`` as indented JSON; numpy scalars and arrays become Python values."""
    return json.dumps(obj, indent=2, default=json_default) + "\n"


def write_json(path: str | os.PathLike, obj: Any, *, force: bool = False) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    with atomic_path(path, force=force) as tmp:
        tmp.write_text(dumps(obj))


#: The deepest nesting of arrays and objects a JSON file privlab reads may have.  privlab's
#: own files nest a few levels (a DP tree's model two per tree level); a deeper file is
#: refused before it is parsed (Python's parser would raise RecursionError).
MAX_JSON_DEPTH = 400
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


def json_depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in the JSON ``text`` (brackets inside strings
    ignored), computed without parsing it."""
    import numpy as np

    bare = _JSON_STRING.sub("", text).encode("utf-8", "replace")
    b = np.frombuffer(bare, dtype=np.uint8)
    step = (b == 0x5B).astype(np.int32) + (b == 0x7B) - (b == 0x5D) - (b == 0x7D)
    return int(np.cumsum(step).max(initial=0))


def loads(text: str, *, what: str = "JSON file") -> Any:
    """``json.loads`` of a file's ``text`` (``what`` names it), refusing one nested deeper
    than :data:`MAX_JSON_DEPTH` with a :class:`PrivlabError`; a malformed text raises
    ``json.JSONDecodeError`` as ``json.loads`` does."""
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise PrivlabError(
            f"{what} nests arrays and objects {depth:,} deep, more than the {MAX_JSON_DEPTH} "
            "levels privlab reads (not a file privlab wrote)"
        )
    try:
        return json.loads(text)
    except RecursionError:  # pragma: no cover - bounded by the depth check above
        raise PrivlabError(f"{what} nests arrays and objects too deeply") from None


def read_json(path: str | os.PathLike, *, what: str = "JSON file") -> Any:
    """Read a JSON file; a missing, unreadable, malformed or too deeply nested file raises one
    clear :class:`PrivlabError` naming it (``what`` says what the file should be)."""
    path = Path(path)
    if not path.is_file():
        raise PrivlabError(f"{what} not found: {path}")
    try:
        return loads(path.read_text(encoding="utf-8"), what=f"{what} {path}")
    except UnicodeDecodeError:
        raise PrivlabError(f"{what} {path} is not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise PrivlabError(f"{what} {path} is not valid JSON ({e.msg}, line {e.lineno})") from None


def json_default(obj: Any) -> Any:
    """``default=`` for :func:`json.dumps`: numpy scalars and arrays, paths."""
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def json_ready(v: Any) -> Any:
    """``v`` as plain JSON values, recursively: dict keys as strings, tuples and arrays as
    lists, numpy scalars as Python ones, paths as strings and a non-finite float as
    ``None`` (JSON has no NaN; ``json.dumps(..., allow_nan=False)`` then refuses nothing)."""
    import math

    import numpy as np

    if isinstance(v, dict):
        return {str(k): json_ready(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_ready(x) for x in v]
    if isinstance(v, np.ndarray):
        return json_ready(v.tolist())
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, np.generic):  # integers, booleans, numpy strings
        return v.item()
    if isinstance(v, Path):
        return str(v)
    return v


def sha256_path(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes or, for a directory (a Parquet dataset of part files),
    of each file's relative name and SHA-256 in name order."""
    import hashlib

    p = Path(path)
    if not p.is_dir():
        return sha256_file(p)
    h = hashlib.sha256()
    for f in sorted(q for q in p.rglob("*") if q.is_file()):
        h.update(f"{f.relative_to(p).as_posix()}\0{sha256_file(f)}\n".encode())
    return h.hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes."""
    import hashlib  # not at the top: OpenSSL's start-up is on every command's path

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
