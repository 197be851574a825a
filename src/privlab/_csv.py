"""CSV files that are safe to open in a spreadsheet and read back to the same values.

A spreadsheet (Excel, LibreOffice Calc, Google Sheets) runs a CSV cell that starts with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return as a formula: a value such as
``=HYPERLINK("http://evil.example/?x","click")`` or ``=cmd|' /C calc'!A0`` that one data
subject typed into a free-text field would reach whoever opens the published release
(OWASP, "CSV Injection").  Every CSV privlab writes goes through :func:`write_csv`, which
applies one documented, reversible escaping to every cell *and* header:

* a cell that starts with one of ``= + - @ TAB CR`` and is not a plain decimal number (``-2``,
  ``+1.5``, ``-3e-4`` stay as they are: a spreadsheet reads them as the same number) is
  written with one ``'`` in front (``'=1+1``), which a spreadsheet shows as text;
* a cell that starts with ``'`` followed by one of those characters or by another ``'`` gets
  one more ``'`` (``'=x`` is written ``''=x``), so that the escaping can be undone exactly.

Every privlab reader of a CSV (a release's tables, a custody's truth, a posterior, an input
table) undoes it with :func:`restore_frame`: a cell that starts with ``'`` followed by one of
``= + - @ TAB CR '`` loses that first ``'``.  ``restore(neutralize(v)) == v`` for every
string ``v``.  Numeric columns are never touched.  :func:`write_csv` returns how many cells it
neutralized; :func:`warn_neutralized` says so as a :class:`~privlab.errors.SpreadsheetWarning`
(the CLI's ``note:`` line).

A release's SHA-256 digests are those of the bytes written, escaping included.  A file
with a carriage return inside a value quotes its text fields (a lone CR would end the row).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping
from typing import IO, Any

#: The first characters that make a spreadsheet evaluate a cell (OWASP's list).
TRIGGERS = "=+-@\t\r"
#: The escape character put in front of such a cell.
ESCAPE = "'"
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")


def is_formula(cell: str) -> bool:
    """Whether a spreadsheet would evaluate ``cell`` as a formula (it starts with one of
    :data:`TRIGGERS` and is not a plain decimal number)."""
    return bool(cell) and cell[0] in TRIGGERS and _NUMBER.match(cell) is None


def _needs_escape(value: str) -> bool:
    if not value:
        return False
    if value[0] == ESCAPE:
        return len(value) > 1 and value[1] in TRIGGERS + ESCAPE
    return is_formula(value)


def neutralize(value: str) -> str:
    """``value`` as written to a CSV cell: with a leading ``'`` when a spreadsheet would
    evaluate it, or when it would otherwise read back as something else."""
    return ESCAPE + value if _needs_escape(value) else value


def restore(value: str) -> str:
    """The inverse of :func:`neutralize`: a cell starting with ``'`` then one of
    ``= + - @ TAB CR '`` loses its first ``'``."""
    if len(value) > 1 and value[0] == ESCAPE and value[1] in TRIGGERS + ESCAPE:
        return value[1:]
    return value


def _strings(col: Any) -> list[str]:
    """The distinct string cells of a pandas Series ([] for a numeric column)."""
    import pandas as pd

    if not (pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)):
        return []
    return [v for v in pd.unique(col) if isinstance(v, str)]


def _map_column(col: Any, fn, values: list[str] | None = None) -> tuple[Any, int]:
    """``col`` (a pandas Series) with ``fn`` applied to its string cells that ``fn``
    changes, and how many cells changed (decided once per distinct value)."""
    changed = {}
    for v in _strings(col) if values is None else values:
        w = fn(v)
        if w != v:
            changed[v] = w
    if not changed:
        return col, 0
    hit = col.isin(list(changed))
    return col.where(~hit, col.map(lambda v: changed.get(v, v))), int(hit.sum())


def neutralize_frame(df: Any) -> tuple[Any, int]:
    """A copy of the DataFrame ``df`` with every header and string cell neutralized, and the
    number of them that changed."""
    return _neutralize(df)[:2]


def _neutralize(df: Any) -> tuple[Any, int, bool]:
    """:func:`neutralize_frame`, and whether a header or cell holds a carriage return."""
    header = [neutralize(str(c)) for c in df.columns]
    n = sum(h != str(c) for h, c in zip(header, df.columns))
    cr = any("\r" in h for h in header)
    cols = {}
    for i in range(df.shape[1]):
        values = _strings(df.iloc[:, i])
        cr = cr or any("\r" in v for v in values)
        cols[i], k = _map_column(df.iloc[:, i], neutralize, values)
        n += k
    if n == 0:
        return df, 0, cr
    import pandas as pd

    out = pd.concat([cols[i] for i in range(df.shape[1])], axis=1) if cols else df.copy()
    out.columns = header
    return out, n, cr


def restore_frame(df: Any) -> Any:
    """The DataFrame ``df`` read from a CSV privlab wrote, with the escaping of
    :func:`neutralize` undone in its header and string cells (numeric columns untouched)."""
    header = [restore(c) if isinstance(c, str) else c for c in df.columns]
    changed = header != list(df.columns)
    cols = []
    for i in range(df.shape[1]):
        col, k = _map_column(df.iloc[:, i], restore)
        changed = changed or k > 0
        cols.append(col)
    if not changed:
        return df
    import pandas as pd

    out = pd.concat(cols, axis=1) if cols else df.copy()
    out.columns = header
    return out


def write_csv(
    df: Any, target: str | os.PathLike | IO[str], *, name: str | None = None, **to_csv: Any
) -> int:
    """Write the DataFrame ``df`` as CSV (no index) with every cell a spreadsheet would
    evaluate neutralized; return how many were.  With ``name`` (the file's final name: the
    target is often a temporary), a :class:`~privlab.errors.SpreadsheetWarning` says so.

    A file with a carriage return inside a header or cell quotes every text field (pandas
    leaves a lone CR unquoted, which every reader takes for the end of a row)."""
    import csv

    safe, n, cr = _neutralize(df)
    if cr:
        to_csv.setdefault("quoting", csv.QUOTE_NONNUMERIC)
    safe.to_csv(target, index=False, **to_csv)
    if name is not None and n:
        warn_neutralized({name: n}, stacklevel=3)
    return n


def warn_neutralized(counts: Mapping[str, int], *, stacklevel: int = 2) -> None:
    """One :class:`~privlab.errors.SpreadsheetWarning` for the cells neutralized in the
    files ``counts`` names (``{file name: cells}``; files without any are left out)."""
    from privlab.errors import SpreadsheetWarning

    hit = {k: v for k, v in counts.items() if v}
    if not hit:
        return
    where = ", ".join(f"{v:,} in {k}" for k, v in hit.items())
    warnings.warn(
        f"cells starting with =, +, -, @, a tab or a carriage return, which a spreadsheet "
        f"would run as formulas, were written with a leading ' ({where}); privlab reads "
        "them back without it",
        SpreadsheetWarning,
        stacklevel=stacklevel + 1,
    )
