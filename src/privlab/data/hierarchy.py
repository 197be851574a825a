"""Generalization hierarchies (value generalization hierarchies, Sweeney 2002; ARX's layout).

A hierarchy of one attribute is a table with one row per original value and one column per
level: column 0 holds the value itself, column ``j`` its generalization at level ``j``, and
the last column the fully suppressed value (``*``).  This is the layout of ARX's hierarchy
CSV files (one row per value, ``;``-separated, no header), which :func:`read_hierarchy`
reads and :meth:`Hierarchy.to_csv` writes.

A hierarchy must be a tree: two values with the same label at level ``j`` share their label
at every level above ``j``; rows must all have the same depth; the last level must be a
single label.  Builders: :func:`intervals` (numeric values in nested intervals),
:func:`ordered` (ordered categories in nested blocks), :func:`masking` (zip codes: mask
digits from the right), :func:`flat` (value or ``*``) and :func:`from_mapping`.

Internally a hierarchy is *compiled* against an attribute's domain into per-level lookup
arrays ``maps[j][code] -> label code at level j`` (:meth:`Hierarchy.compile`), which is what
the lattice search vectorizes over.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from privlab.data.schema import Attribute
from privlab.errors import HierarchyError, ParameterError

STAR = "*"


@dataclass(frozen=True)
class CompiledHierarchy:
    """A hierarchy bound to an attribute's domain: integer lookup arrays per level.

    ``maps[j]`` has one entry per domain code (the code of its label at level ``j``) and
    ``labels[j]`` the labels of level ``j``; ``maps[0]`` is the identity.
    """

    attribute: str
    maps: tuple[np.ndarray, ...]
    labels: tuple[tuple[str, ...], ...]

    @property
    def height(self) -> int:
        """Number of generalization steps (levels minus one)."""
        return len(self.maps) - 1

    def sizes(self) -> tuple[int, ...]:
        """Number of labels at each level."""
        return tuple(len(lab) for lab in self.labels)


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A value generalization hierarchy of one attribute.

    Attributes
    ----------
    attribute
        The attribute's name.
    rows
        ``rows[i]`` = ``(value, level-1 label, ..., top label)``, all strings.
    from_data
        True for a generic interval hierarchy built from the attribute's own range (its
        labels then reveal the data's minimum and maximum).
    """

    attribute: str
    rows: tuple[tuple[str, ...], ...]
    from_data: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        rows = tuple(tuple(str(c) for c in r) for r in self.rows)
        object.__setattr__(self, "rows", rows)
        if not rows:
            raise HierarchyError(f"the hierarchy of {self.attribute!r} has no rows")
        depths = {len(r) for r in rows}
        if len(depths) > 1:
            bad = next(r for r in rows if len(r) != len(rows[0]))
            raise HierarchyError(
                f"the hierarchy of {self.attribute!r} has rows of unequal depth: "
                f"{rows[0][0]!r} has {len(rows[0])} levels, {bad[0]!r} has {len(bad)}"
            )
        if len(rows[0]) < 2:
            raise HierarchyError(
                f"the hierarchy of {self.attribute!r} needs at least 2 levels (value and *)"
            )
        values = [r[0] for r in rows]
        if len(set(values)) != len(values):
            dup = next(v for v in values if values.count(v) > 1)
            raise HierarchyError(f"the hierarchy of {self.attribute!r} lists {dup!r} twice")
        tops = {r[-1] for r in rows}
        if len(tops) != 1:
            raise HierarchyError(
                f"the top level of the hierarchy of {self.attribute!r} must be one label, "
                f"found {len(tops)}: {', '.join(sorted(tops)[:5])}"
            )
        for j in range(1, len(rows[0]) - 1):
            parent: dict[str, str] = {}
            for r in rows:
                p = parent.setdefault(r[j], r[j + 1])
                if p != r[j + 1]:
                    raise HierarchyError(
                        f"the hierarchy of {self.attribute!r} is not a tree: label {r[j]!r} at "
                        f"level {j} generalizes to both {p!r} and {r[j + 1]!r}"
                    )

    @property
    def height(self) -> int:
        return len(self.rows[0]) - 1

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(r[0] for r in self.rows)

    def level(self, j: int) -> dict[str, str]:
        """Mapping value -> label at level ``j``."""
        if not 0 <= j <= self.height:
            raise ParameterError(
                f"level {j} is outside 0..{self.height} for the hierarchy of {self.attribute!r}"
            )
        return {r[0]: r[j] for r in self.rows}

    def compile(self, attribute: Attribute) -> CompiledHierarchy:
        """Bind to ``attribute``'s domain; a domain value missing here raises HierarchyError."""
        index = {r[0]: i for i, r in enumerate(self.rows)}
        if attribute.numeric:
            # A CSV reader may have parsed "07620" as 7620: match numbers by value too.
            for i, r in enumerate(self.rows):
                try:
                    index.setdefault(value_key(float(r[0])), i)
                except ValueError:
                    pass
        missing = [v for v in attribute.domain if value_key(v) not in index]
        if missing:
            raise HierarchyError(
                f"value {missing[0]!r} of attribute {attribute.name!r} is missing from its "
                f"hierarchy ({len(missing)} value(s) missing)"
            )
        rows_of = np.array([index[value_key(v)] for v in attribute.domain], dtype=np.int64)
        maps, labels = (
            [np.arange(attribute.size, dtype=np.int64)],
            [tuple(value_key(v) for v in attribute.domain)],
        )
        for j in range(1, self.height + 1):
            col = [self.rows[i][j] for i in rows_of]
            # Labels in order of first appearance along the (ordered) domain.
            uniq = list(dict.fromkeys(col))
            pos = {lab: i for i, lab in enumerate(uniq)}
            maps.append(np.array([pos[c] for c in col], dtype=np.int64))
            labels.append(tuple(uniq))
        for m in maps:
            m.setflags(write=False)
        return CompiledHierarchy(attribute.name, tuple(maps), tuple(labels))

    # -- I/O --------------------------------------------------------------------------------
    def to_csv(self, path: str | Path | None = None, *, delimiter: str = ";") -> str:
        """ARX layout: one row per value, ``;``-separated, no header.  Returns the text.

        A label a spreadsheet would run as a formula is written with a leading ``'``
        (:mod:`privlab._csv`; :func:`read_hierarchy` removes it)."""
        from privlab._csv import neutralize, warn_neutralized

        buf = io.StringIO()
        w = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
        rows = [[neutralize(str(c)) for c in r] for r in self.rows]
        w.writerows(rows)
        text = buf.getvalue()
        changed = sum(a != str(b) for r, q in zip(rows, self.rows) for a, b in zip(r, q))
        warn_neutralized({Path(path).name if path is not None else "the hierarchy": changed})
        if path is not None:
            from privlab._io import atomic_path

            with atomic_path(path, force=True) as tmp:
                tmp.write_text(text)
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"attribute": self.attribute, "rows": [list(r) for r in self.rows]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Hierarchy:
        return cls(d["attribute"], tuple(tuple(r) for r in d["rows"]))


def value_key(v: Any) -> str:
    """The string a domain value is matched by in a hierarchy (``40.0`` matches ``40``)."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, np.generic):
        return value_key(v.item())
    return str(v)


def read_hierarchy(path: str | Path, attribute: str | None = None) -> Hierarchy:
    """Read an ARX hierarchy CSV (``;`` or ``,`` separated, no header)."""
    path = Path(path)
    if not path.is_file():
        raise HierarchyError(f"hierarchy file not found: {path}")
    text = path.read_text()
    first = text.splitlines()[0] if text.strip() else ""
    delim = ";" if ";" in first else ","
    from privlab._csv import restore

    rows = [
        tuple(restore(c.strip()) for c in r) for r in csv.reader(io.StringIO(text), delimiter=delim)
    ]
    rows = [r for r in rows if any(r)]
    if not rows:
        raise HierarchyError(f"hierarchy file is empty: {path}")
    return Hierarchy(attribute or path.stem, tuple(rows))


def read_hierarchies(directory: str | Path) -> dict[str, Hierarchy]:
    """Every ``<attribute>.csv`` of ``directory``."""
    directory = Path(directory)
    if not directory.is_dir():
        raise HierarchyError(f"hierarchy directory not found: {directory}")
    return {p.stem: read_hierarchy(p) for p in sorted(directory.glob("*.csv"))}


# -- builders -------------------------------------------------------------------------------
def flat(attribute: Attribute | str, values: Sequence[Any] | None = None) -> Hierarchy:
    """Two levels: the value, then ``*``."""
    name, values = _name_values(attribute, values)
    return Hierarchy(name, tuple((value_key(v), STAR) for v in values))


def intervals(
    attribute: Attribute | str,
    values: Sequence[float] | None = None,
    *,
    widths: Sequence[int] = (5, 10, 20),
    start: float | None = None,
) -> Hierarchy:
    """Numeric values in nested intervals of the given widths, then ``*``.

    Each width must be a multiple of the previous one, so that the intervals nest.  Interval
    ``[lo, lo + w - 1]`` (integers) is labelled ``"lo-hi"``; ``start`` aligns the intervals
    (default: the smallest value rounded down to the first width).
    """
    name, values = _name_values(attribute, values)
    if not values:
        raise HierarchyError(f"no values to build the interval hierarchy of {name!r}")
    try:
        nums = [float(v) for v in values]
    except (TypeError, ValueError):
        raise HierarchyError(
            f"attribute {name!r} is not numeric; use ordered() or flat()"
        ) from None
    widths = [int(w) for w in widths]
    if any(w <= 0 for w in widths):
        raise ParameterError(f"interval widths must be positive, got {widths}")
    for a, b in itertools.pairwise(widths):
        if b % a:
            raise ParameterError(f"interval widths must nest (each a multiple): {widths}")
    base = float(start) if start is not None else np.floor(min(nums) / widths[0]) * widths[0]
    rows = []
    for v, x in zip(values, nums):
        row = [value_key(v)]
        for w in widths:
            lo = base + np.floor((x - base) / w) * w
            row.append(f"{_num(lo)}-{_num(lo + w - 1)}")
        row.append(STAR)
        rows.append(tuple(row))
    return Hierarchy(name, tuple(rows))


def ordered(
    attribute: Attribute | str,
    values: Sequence[Any] | None = None,
    *,
    fanouts: Sequence[int] = (2,),
) -> Hierarchy:
    """Ordered categories grouped into consecutive blocks (``fanouts[j]`` blocks of level j
    per block of level j+1), labelled ``first..last``, then ``*``."""
    name, values = _name_values(attribute, values)
    keys = [value_key(v) for v in values]
    rows = [[k] for k in keys]
    block = np.arange(len(keys))
    for f in fanouts:
        if f < 2:
            raise ParameterError(f"fanouts must be at least 2, got {list(fanouts)}")
        block = block // f
        if len(set(block.tolist())) <= 1:
            break
        for b in np.unique(block):
            members = [keys[i] for i in np.flatnonzero(block == b)]
            lab = members[0] if len(members) == 1 else f"{members[0]}..{members[-1]}"
            for i in np.flatnonzero(block == b):
                rows[i].append(lab)
    for r in rows:
        r.append(STAR)
    return Hierarchy(name, tuple(tuple(r) for r in rows))


def masking(
    attribute: Attribute | str, values: Sequence[Any] | None = None, *, mask: str = "*"
) -> Hierarchy:
    """Mask characters from the right, one per level (``90210, 9021*, 902**, ..., *``).

    All values must have the same length (zip codes); the last level is ``*``.
    """
    name, values = _name_values(attribute, values)
    keys = [value_key(v) for v in values]
    lengths = {len(k) for k in keys}
    if len(lengths) != 1:
        raise HierarchyError(
            f"masking needs values of equal length; {name!r} has lengths {sorted(lengths)}"
        )
    n = lengths.pop()
    rows = []
    for k in keys:
        row = [k] + [k[: n - j] + mask * j for j in range(1, n)]
        row.append(STAR)
        rows.append(tuple(row))
    return Hierarchy(name, tuple(rows))


def from_mapping(attribute: str, mapping: Mapping[Any, Sequence[str]]) -> Hierarchy:
    """``{value: (level-1 label, ..., top)}``; a ``*`` level is appended when missing."""
    rows = []
    for v, labels in mapping.items():
        labels = list(labels)
        if not labels or labels[-1] != STAR:
            labels.append(STAR)
        rows.append((value_key(v), *labels))
    return Hierarchy(attribute, tuple(rows))


def _name_values(attribute: Attribute | str, values: Sequence[Any] | None) -> tuple[str, list]:
    if isinstance(attribute, Attribute):
        return attribute.name, list(attribute.domain if values is None else values)
    if values is None:
        raise ParameterError(f"give the values of {attribute!r} (or pass an Attribute)")
    return attribute, list(values)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def default_hierarchy(attribute: Attribute) -> Hierarchy:
    """A generic hierarchy: nested intervals for numeric attributes, ``*`` for the rest.

    The intervals start at the domain's minimum and their widths follow its range: unless
    the domain is declared, that range is read from the data (``from_data``)."""
    if attribute.numeric and attribute.size > 2:
        lo, hi = float(min(attribute.domain)), float(max(attribute.domain))
        span = max(hi - lo, 1.0)
        w = max(1, int(10 ** np.floor(np.log10(span / 8))))
        widths = [w]
        while widths[-1] * 2 < span:
            widths.append(widths[-1] * 2)
            if len(widths) == 4:
                break
        h = intervals(attribute, widths=widths)
        return replace(h, from_data=not attribute.declared)
    return flat(attribute)


__all__ = [
    "STAR",
    "CompiledHierarchy",
    "Hierarchy",
    "HierarchyError",
    "default_hierarchy",
    "flat",
    "from_mapping",
    "intervals",
    "masking",
    "ordered",
    "read_hierarchies",
    "read_hierarchy",
    "value_key",
]
