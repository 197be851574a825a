"""DataFrames in and out (issue 38, item 6): ``Table.from_pandas`` and ``Table.to_pandas``
beside their floor, side by side in one run.

Adult's 30,162 rows drawn with replacement (``default_rng(0)``) up to ``n`` rows, its 15
columns (6 of numbers, 9 of text), as ``load_adult().to_pandas()`` gives them: pandas' own
text columns (pyarrow strings, pandas 3) and, as a second case, the same frame with its
text as Python objects (what ``read_csv`` gives with pandas 2, or ``dtype=object``).

* ``floor``: ``pd.factorize`` of every column (unsorted, the cheapest) and one copy of the
  frame: what any encoder must do at least, reading each column once and writing a frame;
* ``from_pandas``: the encoding (missing values and infinities checked, every domain
  sorted, text columns read as text);
* ``to_pandas``: the decoding back into a frame of the same dtypes;
* ``both``: the two, the round trip the issue measures (target: within 2x of the floor).

Medians of interleaved runs, wall (CPU) seconds.  Run by hand:
``.venv/bin/python benchmarks/bench_frames.py [n_rows] [runs]``.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from _timing import side_by_side
from privlab.data import Table, load_adult


def frame(n: int) -> pd.DataFrame:
    """Adult resampled to ``n`` rows, decoded."""
    adult = load_adult()
    rows = np.random.default_rng(0).integers(0, adult.n_rows, n)
    return Table(adult.codes[rows], adult.schema).to_pandas()


def floor(df: pd.DataFrame) -> pd.DataFrame:
    for c in df.columns:
        pd.factorize(df[c])
    return df.copy()


def bench(n: int, runs: int) -> None:
    base = frame(n)
    text = [c for c in base.columns if not pd.api.types.is_numeric_dtype(base[c])]
    objects = base.astype(dict.fromkeys(text, object))
    for label, df in (("pandas text columns", base), ("Python object text columns", objects)):
        table = Table.from_pandas(df)
        back = table.to_pandas()
        assert back.astype(str).equals(df.astype(str)), "the round trip changed the frame"
        cases = {
            "floor": lambda df=df: floor(df),
            "from_pandas": lambda df=df: Table.from_pandas(df),
            "to_pandas": lambda t=table: t.to_pandas(),
            "both": lambda df=df: Table.from_pandas(df).to_pandas(),
        }
        wall, cpu, _ = side_by_side(cases, runs)
        print(f"{n:,} rows x {df.shape[1]} columns, {label}, median of {runs} interleaved runs:")
        fw, fc = wall["floor"], cpu["floor"]
        for k in cases:
            print(f"  {k:<12} {wall[k]:7.3f} s ({cpu[k]:7.3f})  {wall[k] / fw:5.2f}x the floor "
                  f"({cpu[k] / fc:.2f}x CPU)")  # fmt: skip


if __name__ == "__main__":
    bench(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000,
          int(sys.argv[2]) if len(sys.argv) > 2 else 5)  # fmt: skip
