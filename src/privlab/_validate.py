"""Validation of files privlab reads back (model files, release and custody metadata).

A file that was edited, truncated or written by something else is refused with one
:class:`~privlab.errors.PrivlabError` that names the file and the path of the bad field
(``nb.json: counts[3] must be a finite number, got NaN``), never with a ``KeyError`` and
never accepted with nonsense inside.  :class:`Fields` walks a parsed JSON document; every
accessor checks the type (and range) of what it returns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privlab.errors import PrivlabError


class Fields:
    """A JSON value at ``where`` inside the file ``source``, with checked accessors."""

    def __init__(self, value: Any, source: str | Path, where: str = "") -> None:
        self.value = value
        self.source = str(source)
        self.where = where

    # -- errors -------------------------------------------------------------------------------
    def fail(self, problem: str) -> PrivlabError:
        at = f"{self.where} " if self.where else ""
        return PrivlabError(f"{self.source}: {at}{problem}")

    def _child(self, value: Any, key: str | int) -> Fields:
        where = f"{self.where}[{key}]" if isinstance(key, int) else (
            f"{self.where}.{key}" if self.where else str(key)
        )  # fmt: skip
        return Fields(value, self.source, where)

    # -- containers ---------------------------------------------------------------------------
    def obj(self) -> dict[str, Any]:
        if not isinstance(self.value, dict):
            raise self.fail(f"must be a JSON object, got {_kind(self.value)}")
        return self.value

    def has(self, key: str) -> bool:
        return key in self.obj() and self.obj()[key] is not None

    def get(self, key: str) -> Fields:
        """The field ``key`` (which must be present)."""
        d = self.obj()
        if key not in d:
            where = f"{self.where}.{key}" if self.where else key
            raise PrivlabError(f"{self.source}: field {where!r} is missing")
        return self._child(d[key], key)

    def opt(self, key: str) -> Fields | None:
        """The field ``key``, or None when it is absent or null."""
        return self.get(key) if self.has(key) else None

    def items(self, *, length: int | None = None, min_length: int = 0) -> list[Fields]:
        if not isinstance(self.value, list):
            raise self.fail(f"must be a list, got {_kind(self.value)}")
        if length is not None and len(self.value) != length:
            raise self.fail(f"must have {length} entries, has {len(self.value)}")
        if len(self.value) < min_length:
            raise self.fail(f"must have at least {min_length} entries, has {len(self.value)}")
        return [self._child(v, i) for i, v in enumerate(self.value)]

    # -- scalars ------------------------------------------------------------------------------
    def string(self, choices: Sequence[str] | None = None) -> str:
        if not isinstance(self.value, str):
            raise self.fail(f"must be a string, got {_kind(self.value)}")
        if choices is not None and self.value not in choices:
            raise self.fail(f"must be one of {', '.join(choices)}, got {self.value!r}")
        return self.value

    def number(
        self,
        *,
        lo: float | None = None,
        hi: float | None = None,
        lo_open: bool = False,
        allow_inf: bool = False,
    ) -> float:
        v = self.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(f"must be a number, got {_kind(v)}")
        v = float(v)
        if math.isnan(v) or (math.isinf(v) and not (allow_inf and v > 0)):
            raise self.fail(f"must be a finite number, got {v}")
        if lo is not None and (v < lo or (lo_open and v == lo)):
            raise self.fail(f"must be {'>' if lo_open else '>='} {lo:g}, got {v:g}")
        if hi is not None and v > hi:
            raise self.fail(f"must be <= {hi:g}, got {v:g}")
        return v

    def integer(self, *, lo: int | None = None, hi: int | None = None) -> int:
        v = self.value
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(f"must be an integer, got {_kind(v)}")
        if lo is not None and v < lo:
            raise self.fail(f"must be >= {lo}, got {v}")
        if hi is not None and v > hi:
            raise self.fail(f"must be <= {hi}, got {v}")
        return v

    def scalars(self, *, min_length: int = 0, unique: bool = True) -> list[Any]:
        """A list of plain values (strings, numbers, booleans), distinct by default."""
        out = []
        for f in self.items(min_length=min_length):
            v = f.value
            if not isinstance(v, (str, int, float, bool)) or (
                isinstance(v, float) and not math.isfinite(v)
            ):
                raise f.fail(f"must be a plain value, got {_kind(v)}")
            out.append(v)
        if unique and len(set(out)) != len(out):
            raise self.fail("holds a value twice")
        return out

    def array(
        self, *, length: int | None = None, nonneg: bool = False, allow_inf: bool = False
    ) -> np.ndarray:
        """A list of finite numbers as a float array."""
        values = [f.number(lo=0.0 if nonneg else None, allow_inf=allow_inf)
                  for f in self.items(length=length)]  # fmt: skip
        return np.asarray(values, dtype=float)

    def probabilities(self, *, length: int | None = None, tol: float = 1e-6) -> np.ndarray:
        """A probability vector: entries in [0, 1] summing to 1 (within ``tol``)."""
        p = np.asarray([f.number(lo=0.0, hi=1.0) for f in self.items(length=length)], dtype=float)
        if p.size and abs(p.sum() - 1.0) > tol:
            raise self.fail(f"must sum to 1, sums to {p.sum():.6g}")
        return p


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"a boolean ({v})"
    if isinstance(v, (int, float)):
        return f"{v!r}"
    if isinstance(v, str):
        return f"the string {v[:40]!r}"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__
