"""privlab's ``Table.from_pandas`` before issue 38 (a copy of the frame, every text cell
converted to ``str``, ``df.isna()``, then ``pd.factorize`` of every column): the oracle
``tests/test_table.py`` compares today's with, on random frames."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privlab.data.schema import Attribute, Role, Schema, py_scalar
from privlab.data.table import CODE_DTYPE, MISSING_MARKERS, Table
from privlab.errors import MissingValuesError, SchemaError


def from_pandas(
    df: pd.DataFrame,
    *,
    qi: Sequence[str] = (),
    sensitive: str | None = None,
    drop_missing: bool = False,
    domains: Mapping[str, Sequence[Any]] | None = None,
    missing_markers: Sequence[str] = MISSING_MARKERS,
) -> Table:
    dup = df.columns[df.columns.astype(str).duplicated()]
    if len(dup):
        raise SchemaError(f"duplicate column name {str(dup[0])!r}: every column needs its own name")
    domains = dict(domains or {})
    columns = ", ".join(map(str, df.columns))
    unknown = [c for c in [*qi, *([sensitive] if sensitive else [])] if c not in df]
    if unknown:
        raise SchemaError(f"unknown column {unknown[0]!r}; columns are: {columns}")
    unknown = [c for c in domains if c not in df]
    if unknown:  # a declared domain (--domain, --domains), not a column the user named
        raise SchemaError(
            f"a domain is declared for {unknown[0]!r}, which is not a column; "
            f"columns are: {columns}"
        )
    df = df.copy()
    df.columns = [str(c) for c in df.columns]
    for c in df.columns:
        if not pd.api.types.is_numeric_dtype(df[c]):
            df[c] = df[c].astype(object).where(~df[c].isin(list(missing_markers)), None)
    for c in df.columns:
        if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]):
            inf = np.isinf(df[c].to_numpy(dtype=np.float64, na_value=np.nan))
            if inf.any():
                raise SchemaError(
                    f"column {c!r} holds {int(inf.sum())} infinite value(s) (first in row "
                    f"{int(np.argmax(inf))}): a numeric column needs finite numbers"
                )
    na = df.isna()
    if na.to_numpy().any():
        if not drop_missing:
            counts = na.sum()
            bad = ", ".join(f"{c!r} ({int(n)})" for c, n in counts.items() if n)
            raise MissingValuesError(
                f"missing values in column(s) {bad}; pass drop_missing=True "
                "(CLI: --drop-missing) to drop those rows"
            )
        df = df.loc[~na.any(axis=1)].reset_index(drop=True)
    attrs, cols = [], []
    for c in df.columns:
        s = df[c]
        numeric = bool(pd.api.types.is_numeric_dtype(s)) and not pd.api.types.is_bool_dtype(s)
        if c in domains:
            dom = list(domains[c])
            if numeric and any(isinstance(v, str) for v in dom):  # e.g. from --domain
                try:
                    dom = list(pd.to_numeric(pd.Series(dom)))
                except (ValueError, TypeError):
                    raise SchemaError(
                        f"the declared domain of numeric column {c!r} holds a non-number"
                    ) from None
            attr = Attribute(c, tuple(py_scalar(v) for v in dom), Role.OTHER, numeric, True)
            codes = attr.encode(s.to_numpy()).astype(CODE_DTYPE)
        else:
            if not numeric:
                s = s.astype(str)
            codes, uniques = pd.factorize(s, sort=True)
            attr = Attribute(c, tuple(py_scalar(v) for v in uniques), Role.OTHER, numeric)
            codes = codes.astype(CODE_DTYPE)
        attrs.append(attr)
        cols.append(codes)
    codes = np.column_stack(cols) if cols else np.empty((len(df), 0), dtype=CODE_DTYPE)
    schema = Schema(tuple(attrs)).with_roles(qi=qi, sensitive=sensitive)
    return Table(codes.reshape(len(df), len(attrs)), schema)
