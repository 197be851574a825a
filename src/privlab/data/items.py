"""Items for frequent-itemset mining: a categorical table one-hot expanded, and item groups.

Ma (2006, Sec. 7.1) mines association rules over *items* (binary presence attributes).  A
categorical record becomes a transaction by turning every category of every chosen variable
into an item (``"age=<=30"`` is present when the record's age is ``<=30``), as the thesis does
for Mushroom and Adult.  Items are partitioned into *groups*, each held by one owner and
randomized together (Sec. 7.1.2.1); :func:`check_grouping` checks such a partition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from privlab.data.schema import Attribute, Role, Schema
from privlab.data.table import Table
from privlab.errors import ParameterError, SchemaError

__all__ = ["ITEM_DOMAIN", "binary_items", "check_grouping", "item_name", "one_hot"]

#: The domain of an item column: code 0 = absent, code 1 = present (Ma's order: absent first).
ITEM_DOMAIN = (0, 1)


def item_name(column: str, value: Any, sep: str = "=") -> str:
    """The name of the item "``column`` has ``value``"."""
    return f"{column}{sep}{value}"


def one_hot(table: Table, columns: Sequence[str] | None = None, *, sep: str = "=") -> Table:
    """Every category of every column in ``columns`` (default: all) as a 0/1 item column.

    Items are named ``column=value`` and ordered column by column, values in domain order.
    An item's domain is ``(0, 1)``; it counts as *declared* only when its column's domain was
    declared: the item names publish the column's values, so a domain read from the data keeps
    its :class:`~privlab.errors.PrivacyWarning` downstream.
    """
    columns = list(
        table.names if columns is None else table.schema.require(columns, purpose="as items")
    )
    attrs: list[Attribute] = []
    blocks: list[np.ndarray] = []
    names: set[str] = set()
    for c in columns:
        a = table.schema[c]
        codes = table.column(c)
        for code, value in enumerate(a.domain):
            name = item_name(c, value, sep)
            if name in names:
                raise SchemaError(f"two items are both named {name!r}: choose another separator")
            names.add(name)
            attrs.append(Attribute(name, ITEM_DOMAIN, Role.OTHER, declared=a.declared))
            blocks.append((codes == code).astype(np.int64))
    if not attrs:
        raise ParameterError("no column to turn into items")
    return Table(np.column_stack(blocks), Schema(tuple(attrs)))


def binary_items(table: Table, columns: Sequence[str] | None = None) -> Table:
    """Columns that already are items (two values, ``0``/``1`` or ``False``/``True``, the
    second meaning present) as item columns with the domain :data:`ITEM_DOMAIN`."""
    columns = list(
        table.names if columns is None else table.schema.require(columns, purpose="as items")
    )
    attrs: list[Attribute] = []
    cols: list[np.ndarray] = []
    for c in columns:
        a = table.schema[c]
        text = [str(v).strip().lower() for v in a.domain]
        present = {"1", "true", "1.0"}
        absent = {"0", "false", "0.0"}
        if not set(text) <= present | absent:
            raise ParameterError(
                f"column {c!r} is not an item: its values {list(a.domain)[:5]} are not 0/1 "
                "(turn a categorical column into items with one_hot / without --binary)"
            )
        is_present = np.asarray([t in present for t in text], dtype=np.int64)
        attrs.append(Attribute(c, ITEM_DOMAIN, Role.OTHER, declared=True))
        cols.append(is_present[table.column(c)])
    if not attrs:
        raise ParameterError("no column to use as items")
    return Table(np.column_stack(cols), Schema(tuple(attrs)))


def check_grouping(items: Sequence[str], groups: Sequence[Sequence[str]]) -> list[list[str]]:
    """A partition of ``items`` from ``groups``: every listed item exists and is in one group;
    items in no group become groups of one (in item order).  A :class:`ParameterError` names
    an unknown item, an item listed twice or an empty group."""
    known = list(items)
    index = {name: i for i, name in enumerate(known)}
    out: list[list[str]] = []
    used: dict[str, int] = {}
    for g, group in enumerate(groups):
        group = list(group)
        if not group:
            raise ParameterError(f"group {g + 1} is empty: the grouping is not a partition")
        for item in group:
            if item not in index:
                raise ParameterError(
                    f"group {g + 1} names {item!r}, which is not an item (items: "
                    f"{', '.join(known[:8])}{', ...' if len(known) > 8 else ''})"
                )
            if used.get(item) == g:
                raise ParameterError(f"group {g + 1} names {item!r} twice")
            if item in used:
                raise ParameterError(
                    f"item {item!r} is in groups {used[item] + 1} and {g + 1}: the grouping "
                    "is not a partition of the items"
                )
            used[item] = g
        out.append(group)
    out.extend([name] for name in known if name not in used)
    return out
