"""Attribute schema: names, ordered domains and roles.

Internally privlab stores every table as integer codes (``codes[i, j]`` is the index of row
``i``'s value in attribute ``j``'s domain) plus a :class:`Schema`; values are decoded only at
the edges (I/O, CLI, plots).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from privlab.errors import SchemaError


class Role(enum.StrEnum):
    """What an attribute is for an adversary: a quasi-identifier, the secret, or neither."""

    QI = "qi"
    SENSITIVE = "sensitive"
    OTHER = "other"


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
    """

    name: str
    domain: tuple[Any, ...]
    role: Role = Role.OTHER
    numeric: bool = False

    def __post_init__(self) -> None:
        if len(set(self.domain)) != len(self.domain):
            raise SchemaError(f"attribute {self.name!r} has duplicate values in its domain")

    @property
    def size(self) -> int:
        """Number of values in the domain."""
        return len(self.domain)

    def code_of(self, value: Any) -> int:
        """The code of ``value``; a :class:`SchemaError` names a value outside the domain."""
        try:
            return self.domain.index(value)
        except ValueError:
            raise SchemaError(
                f"value {value!r} is not in the domain of attribute {self.name!r}"
            ) from None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "domain": list(self.domain),
            "role": self.role.value,
            "numeric": self.numeric,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Attribute:
        return cls(
            name=d["name"],
            domain=tuple(d["domain"]),
            role=Role(d.get("role", "other")),
            numeric=bool(d.get("numeric", False)),
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
    def sizes(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.attributes)

    # -- derivation -------------------------------------------------------------------------
    def with_roles(self, *, qi: Sequence[str] = (), sensitive: str | None = None) -> Schema:
        """A copy whose roles are exactly: ``qi`` quasi-identifiers, ``sensitive``, rest other.

        Raises :class:`SchemaError` for unknown names, repeated QIs, or a sensitive attribute
        that is also listed as a QI.
        """
        qi = list(qi)
        self.indices(qi)
        if sensitive is not None:
            self.index(sensitive)
        dup = {q for q in qi if qi.count(q) > 1}
        if dup:
            raise SchemaError(f"quasi-identifier listed twice: {', '.join(sorted(dup))}")
        if sensitive is not None and sensitive in qi:
            raise SchemaError(
                f"attribute {sensitive!r} is both the sensitive attribute and a quasi-identifier"
            )
        attrs = []
        for a in self.attributes:
            role = (
                Role.QI if a.name in qi else Role.SENSITIVE if a.name == sensitive else Role.OTHER
            )
            attrs.append(replace(a, role=role))
        return Schema(tuple(attrs))

    def select(self, names: Sequence[str]) -> Schema:
        """The sub-schema of ``names`` in the given order."""
        return Schema(tuple(self.attributes[i] for i in self.indices(names)))

    def to_dict(self) -> dict[str, Any]:
        return {"attributes": [a.to_dict() for a in self.attributes]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Schema:
        return cls(tuple(Attribute.from_dict(a) for a in d["attributes"]))
