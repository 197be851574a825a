"""Attribute schema: names, ordered domains and roles.

Internally privlab stores every table as integer codes (``codes[i, j]`` is the index of row
``i``'s value in attribute ``j``'s domain) plus a :class:`Schema`; values are decoded only at
the edges (I/O, CLI, plots).  :meth:`Attribute.encode` is the one place where values (or
their text, as read from a CSV) become codes.

Every column a sanitizer publishes has a declared :class:`Role`: a quasi-identifier, the
sensitive attribute, or an insensitive column kept unchanged (``--keep``).  Columns left
with :attr:`Role.OTHER` are never published (as ARX removes its "identifying" attributes).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from privlab.errors import ParameterError, SchemaError


class Role(enum.StrEnum):
    """What an attribute is for an adversary and whether a sanitizer publishes it.

    ``QI`` (quasi-identifier), ``SENSITIVE`` (the secret) and ``INSENSITIVE`` (kept unchanged,
    neither linked on by assumption nor secret) are published; ``OTHER`` (no declared role)
    is not.
    """

    QI = "qi"
    SENSITIVE = "sensitive"
    INSENSITIVE = "insensitive"
    OTHER = "other"

    @property
    def published(self) -> bool:
        return self is not Role.OTHER


@dataclass(frozen=True)
class Attribute:
    """One categorical attribute with an ordered domain.

    Parameters
    ----------
    name
        Column name.
    domain
        The ordered tuple of values; codes index into it.  Numeric attributes keep numeric
        values in ascending order, categorical ones strings.
    role
        :class:`Role` of the attribute.
    numeric
        True when the values are numbers whose order and distances mean something
        (ages, counts); generalization and tree splits may use them.
    declared
        True when the domain was declared by the user (or documented with a bundled
        dataset) rather than read from the data: only then may a release publish values that
        no published record holds.
    """

    name: str
    domain: tuple[Any, ...]
    role: Role = Role.OTHER
    numeric: bool = False
    declared: bool = False

    def __post_init__(self) -> None:
        if len(set(self.domain)) != len(self.domain):
            raise SchemaError(f"attribute {self.name!r} has duplicate values in its domain")

    @property
    def size(self) -> int:
        """Number of values in the domain."""
        return len(self.domain)

    def code_of(self, value: Any) -> int:
        """The code of ``value``; a :class:`SchemaError` names a value outside the domain."""
        return int(self.encode([value])[0])

    def encode(
        self, values: Any, *, where: str | None = None, unknown: int | None = None
    ) -> np.ndarray:
        """The codes (int64) of ``values``: decoded values or their text as read from a CSV.

        Values match a domain value when they print alike (``str``), an integral float
        matching its integer (``39.0`` is ``39``).  A value outside the domain raises a
        :class:`SchemaError` that names it (and ``where`` it was read), or, when ``unknown``
        is given, gets that code.
        """
        vals = values if isinstance(values, np.ndarray) else np.asarray(list(values), dtype=object)
        vals = vals.ravel()
        if vals.size == 0:
            return np.empty(0, dtype=np.int64)
        index = pd.Index(_keys(np.asarray(self.domain, dtype=object)))
        if not index.is_unique:
            raise SchemaError(f"the domain of {self.name!r} holds two values that print alike")
        if vals.dtype.kind in "iubf" or pd.api.types.infer_dtype(vals, skipna=False) == "string":
            # text keys for the distinct values only: 2M integers of 74 distinct values take
            # 0.04 s instead of 0.69 s; on numbers and on text alone, == agrees with str
            inverse, uniques = pd.factorize(vals, use_na_sentinel=False)
            codes = index.get_indexer(_keys(np.asarray(uniques)))[inverse]
        else:
            codes = index.get_indexer(_keys(vals))
        bad = np.flatnonzero(codes < 0)
        if bad.size and unknown is not None:
            codes[bad] = unknown
        elif bad.size:
            prefix = f"{where}: " if where else ""
            raise SchemaError(
                f"{prefix}value {py_scalar(vals[bad[0]])!r} is not in the domain of {self.name!r}"
            )
        return codes.astype(np.int64)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """The values (an object array) of ``codes``."""
        return np.asarray(self.domain, dtype=object)[np.asarray(codes, dtype=np.int64)]

    def to_dict(self) -> dict[str, Any]:
        d = {
            "name": self.name,
            "domain": [py_scalar(v) for v in self.domain],
            "role": self.role.value,
            "numeric": self.numeric,
        }
        if self.declared:
            d["declared"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Attribute:
        if not isinstance(d, dict) or "name" not in d or not isinstance(d.get("domain"), list):
            raise SchemaError(f"not an attribute description: {str(d)[:80]}")
        role = d.get("role", "other")
        if role not in Role.__members__.values():
            raise SchemaError(f"attribute {d['name']!r} has an unknown role {role!r}")
        return cls(
            name=str(d["name"]),
            domain=tuple(d["domain"]),
            role=Role(role),
            numeric=bool(d.get("numeric", False)),
            declared=bool(d.get("declared", False)),
        )


def py_scalar(v: Any) -> Any:
    """numpy scalar -> Python scalar (so that domains serialize to JSON)."""
    return v.item() if isinstance(v, np.generic) else v


def _keys(values: np.ndarray) -> np.ndarray:
    """Text keys for matching values: ``str(v)``, integral floats as integers."""
    if values.dtype.kind in "iub":
        return values.astype(str).astype(object)
    if values.dtype.kind == "f":
        out = values.astype(str).astype(object)
        whole = np.isfinite(values) & (values == np.round(values))
        out[whole] = values[whole].astype(np.int64).astype(str)
        return out
    return np.array(
        [
            v
            if isinstance(v, str)
            else str(int(v))
            if isinstance(v, float | np.floating) and float(v).is_integer()
            else str(v)
            for v in values
        ],
        dtype=object,
    )


@dataclass(frozen=True)
class Schema:
    """An ordered collection of :class:`Attribute` with at most one sensitive attribute."""

    attributes: tuple[Attribute, ...]
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [a.name for a in self.attributes]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise SchemaError(f"duplicate attribute name(s): {', '.join(sorted(dup))}")
        sens = [a.name for a in self.attributes if a.role is Role.SENSITIVE]
        if len(sens) > 1:
            raise SchemaError(f"more than one sensitive attribute: {', '.join(sens)}")
        object.__setattr__(self, "_index", {n: i for i, n in enumerate(names)})

    # -- lookup -----------------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    def __len__(self) -> int:
        return len(self.attributes)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __getitem__(self, name: str) -> Attribute:
        return self.attributes[self.index(name)]

    def index(self, name: str) -> int:
        """Column position of ``name``; an unknown name raises :class:`SchemaError`."""
        try:
            return self._index[name]
        except KeyError:
            raise SchemaError(
                f"unknown column {name!r}; columns are: {', '.join(self.names)}"
            ) from None

    def indices(self, names: Iterable[str]) -> list[int]:
        return [self.index(n) for n in names]

    def require(self, names: Iterable[str], *, purpose: str) -> list[str]:
        """``names`` checked for one use (``purpose``, e.g. "to randomize"): at least one,
        none listed twice, every one known; a :class:`PrivlabError` names what is wrong."""
        names = list(names)
        if not names:
            raise ParameterError(f"no column given {purpose}")
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ParameterError(f"column listed twice: {', '.join(dup)}")
        self.indices(names)
        return names

    @property
    def qi(self) -> tuple[str, ...]:
        """Names of the quasi-identifiers, in schema order."""
        return tuple(a.name for a in self.attributes if a.role is Role.QI)

    @property
    def sensitive(self) -> str | None:
        """Name of the sensitive attribute, or None."""
        for a in self.attributes:
            if a.role is Role.SENSITIVE:
                return a.name
        return None

    @property
    def insensitive(self) -> tuple[str, ...]:
        """Names of the columns kept unchanged as insensitive (``--keep``), in schema order."""
        return tuple(a.name for a in self.attributes if a.role is Role.INSENSITIVE)

    @property
    def published(self) -> tuple[str, ...]:
        """Names of the columns with a declared role: what a sanitizer may publish."""
        return tuple(a.name for a in self.attributes if a.role.published)

    @property
    def linkable(self) -> tuple[str, ...]:
        """Published columns other than the sensitive one: what an adversary can link on."""
        return tuple(
            a.name for a in self.attributes if a.role.published and a.role is not Role.SENSITIVE
        )

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.attributes)

    # -- derivation -------------------------------------------------------------------------
    def with_roles(
        self, *, qi: Sequence[str] = (), sensitive: str | None = None, keep: Sequence[str] = ()
    ) -> Schema:
        """A copy whose roles are exactly: ``qi`` quasi-identifiers, ``sensitive``, ``keep``
        insensitive (published unchanged), every other column :attr:`Role.OTHER`.

        Raises :class:`SchemaError` for unknown names, a name listed twice, or a column given
        two roles.
        """
        qi, keep = list(qi), list(keep)
        self.indices([*qi, *keep])
        if sensitive is not None:
            self.index(sensitive)
        for what, names in (("quasi-identifier", qi), ("kept column", keep)):
            dup = {q for q in names if names.count(q) > 1}
            if dup:
                raise SchemaError(f"{what} listed twice: {', '.join(sorted(dup))}")
        both = [c for c in keep if c in qi]
        if both:
            raise SchemaError(
                f"column {both[0]!r} is both a quasi-identifier and kept unchanged (--keep); "
                "give it one role"
            )
        if sensitive is not None and sensitive in qi:
            raise SchemaError(
                f"attribute {sensitive!r} is both the sensitive attribute and a quasi-identifier"
            )
        if sensitive is not None and sensitive in keep:
            raise SchemaError(
                f"attribute {sensitive!r} is both the sensitive attribute and kept unchanged "
                "(--keep); give it one role"
            )
        roles = {**{q: Role.QI for q in qi}, **{c: Role.INSENSITIVE for c in keep}}
        if sensitive is not None:
            roles[sensitive] = Role.SENSITIVE
        return Schema(
            tuple(replace(a, role=roles.get(a.name, Role.OTHER)) for a in self.attributes)
        )

    def select(self, names: Sequence[str]) -> Schema:
        """The sub-schema of ``names`` in the given order."""
        return Schema(tuple(self.attributes[i] for i in self.indices(names)))

    def to_dict(self) -> dict[str, Any]:
        return {"attributes": [a.to_dict() for a in self.attributes]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Schema:
        if not isinstance(d, dict) or not isinstance(d.get("attributes"), list):
            raise SchemaError("not a schema description: it has no list of 'attributes'")
        return cls(tuple(Attribute.from_dict(a) for a in d["attributes"]))
