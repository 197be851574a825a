"""The output side of the DataFrame adapter: ``to_arrow()`` and ``to_polars()`` beside every
result's and release's ``to_pandas()`` (the input side is :mod:`privlab.data.frames`)."""

from __future__ import annotations

from typing import Any


class ToFrames:
    """Mixin for a class with ``to_pandas(...)``: the same frame as a pyarrow Table or a
    polars DataFrame.  A meaningful pandas index (not the default 0..n-1) becomes the first
    column, since neither Arrow nor polars has an index."""

    __slots__ = ()

    def _frame(self, *args: Any, **kwargs: Any) -> Any:
        import pandas as pd

        df = self.to_pandas(*args, **kwargs)  # type: ignore[attr-defined]
        if not isinstance(df, pd.DataFrame):
            df = pd.DataFrame(df)
        if not isinstance(df.index, pd.RangeIndex) or df.index.start != 0 or df.index.step != 1:
            df = df.reset_index()
        return df

    def to_arrow(self, *args: Any, **kwargs: Any) -> Any:
        """``to_pandas(...)`` as a :class:`pyarrow.Table` (same arguments)."""
        import pyarrow as pa

        return pa.Table.from_pandas(self._frame(*args, **kwargs), preserve_index=False)

    def to_polars(self, *args: Any, **kwargs: Any) -> Any:
        """``to_pandas(...)`` as a :class:`polars.DataFrame` (same arguments); needs the
        ``polars`` extra (``pip install 'privlab[polars]'``)."""
        try:
            import polars as pl
        except ImportError:
            from privlab.errors import MissingDependencyError

            raise MissingDependencyError(
                "to_polars() needs polars: pip install 'privlab[polars]'"
            ) from None
        return pl.from_pandas(self._frame(*args, **kwargs))
