"""One adapter from the dataframe libraries to privlab's :class:`~privlab.data.table.Table`.

Every public entry point that takes a table (``anatomize``, ``generalize``, ``pram``, the DP
histogram, the learners' table helpers) calls :func:`as_table`, so each accepts a pandas
DataFrame, a polars DataFrame (or LazyFrame), a pyarrow Table or a privlab ``Table``.
polars and pyarrow are recognized by their type's module, so neither is imported unless the
caller already uses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from privlab.data.table import Table
from privlab.errors import ParameterError, SchemaError


def as_table(
    data: Any,
    *,
    qi: Sequence[str] | None = None,
    sensitive: str | None = None,
    keep: Sequence[str] | None = None,
    drop_missing: bool = False,
) -> Table:
    """``data`` as an encoded :class:`Table`, with roles set when any is given.

    Parameters
    ----------
    data
        A privlab ``Table`` (returned as is), a pandas DataFrame, a polars DataFrame or
        LazyFrame, or a pyarrow Table.  Columns are encoded as by :meth:`Table.from_pandas`.
    qi, sensitive, keep
        Roles (see :meth:`~privlab.data.schema.Schema.with_roles`); a role left None keeps
        the table's own (a ``Table`` may carry roles, a DataFrame has none).
    drop_missing
        Drop rows with missing values instead of raising
        :class:`~privlab.errors.MissingValuesError`.

    Raises
    ------
    ParameterError
        ``data`` is none of the supported types.
    SchemaError
        Duplicate column names, an unknown column, a column given two roles.
    """
    table = _convert(data, drop_missing)
    if qi is None and sensitive is None and keep is None:
        return table
    schema = table.schema
    return table.with_roles(
        qi=schema.qi if qi is None else qi,
        sensitive=schema.sensitive if sensitive is None else sensitive,
        keep=schema.insensitive if keep is None else keep,
    )


def _convert(data: Any, drop_missing: bool) -> Table:
    if isinstance(data, Table):
        return data
    if isinstance(data, pd.DataFrame):
        return Table.from_pandas(data, drop_missing=drop_missing)
    module = type(data).__module__.split(".")[0]
    if module == "polars":
        frame = data.collect() if hasattr(data, "collect") else data
        return Table.from_pandas(frame.to_pandas(), drop_missing=drop_missing)
    if module == "pyarrow" and hasattr(data, "column_names"):
        names = list(data.column_names)
        dup = [c for c in names if names.count(c) > 1]
        if dup:
            raise SchemaError(f"duplicate column name {dup[0]!r}: every column needs its own name")
        return Table.from_pandas(data.to_pandas(), drop_missing=drop_missing)
    raise ParameterError(
        "expected a pandas or polars DataFrame, a pyarrow Table or a privlab Table, "
        f"not {type(data).__name__}"
    )
