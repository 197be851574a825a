"""What every release shares: the ``release.json`` metadata file and loading by method.

Each sanitizer module registers its release class with :func:`release_method`; the generic
:func:`load_release` reads ``release.json`` and dispatches on its ``method`` field.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from privlab.errors import ReleaseError

RELEASE_FILE = "release.json"
_LOADERS: dict[str, Callable[[Path], Any]] = {}


def release_method(name: str) -> Callable[[type], type]:
    """Class decorator: register ``cls.load`` as the loader of releases whose method is ``name``."""

    def deco(cls: type) -> type:
        _LOADERS[name] = cls.load  # type: ignore[attr-defined]
        return cls

    return deco


def read_meta(directory: str | Path) -> dict[str, Any]:
    """Read and minimally validate ``DIR/release.json``."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ReleaseError(f"not a release directory: {directory} does not exist")
    path = directory / RELEASE_FILE
    if not path.is_file():
        raise ReleaseError(f"not a release: {directory} has no {RELEASE_FILE}")
    try:
        meta = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ReleaseError(f"not a release: {path} is not valid JSON ({e.msg})") from None
    if not isinstance(meta, dict) or "method" not in meta:
        raise ReleaseError(f"not a release: {path} has no 'method' field")
    return meta


def load_release(directory: str | Path) -> Any:
    """Load any release saved by privlab, whatever its method."""
    meta = read_meta(directory)
    import privlab.publish as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"privlab.publish.{mod.name}")
    method = meta["method"]
    if method not in _LOADERS:
        raise ReleaseError(f"unknown release method {method!r} in {directory}/{RELEASE_FILE}")
    return _LOADERS[method](Path(directory))
