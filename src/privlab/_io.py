"""Atomic output (files and directories appear whole or not at all) and JSON helpers."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from privlab.errors import OutputExistsError, PrivlabError

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


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, force: bool = False) -> Iterator[Path]:
    """Yield a temporary file path beside ``path``; rename it onto ``path`` on success.

    Refuses to replace an existing ``path`` unless ``force`` is true.
    """
    path = Path(path)
    _refuse_inputs(path)
    if path.exists() and not force:
        raise OutputExistsError(f"output file exists: {path} (use --force to overwrite)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike, *, force: bool = False) -> Iterator[Path]:
    """Yield a temporary directory beside ``path``; move it onto ``path`` on success.

    An existing ``path`` is refused unless ``force`` is true, in which case it is replaced only
    after the new content is complete.
    """
    path = Path(path)
    _refuse_inputs(path)
    if path.exists() and not force:
        raise OutputExistsError(f"output directory exists: {path} (use --force to overwrite)")
    if path.exists() and not path.is_dir():
        raise OutputExistsError(f"output path exists and is not a directory: {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def dumps(obj: Any) -> str:
    """``obj`` as indented JSON; numpy scalars and arrays become Python values."""
    return json.dumps(obj, indent=2, default=json_default) + "\n"


def write_json(path: str | os.PathLike, obj: Any, *, force: bool = False) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    with atomic_path(path, force=force) as tmp:
        tmp.write_text(dumps(obj))


def read_json(path: str | os.PathLike, *, what: str = "JSON file") -> Any:
    """Read a JSON file; a missing, unreadable or malformed file raises one clear
    :class:`PrivlabError` naming it (``what`` says what the file should be)."""
    path = Path(path)
    if not path.is_file():
        raise PrivlabError(f"{what} not found: {path}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
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


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
