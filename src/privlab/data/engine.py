"""The engines a sanitizer or a count can run on, decided in one place.

* ``memory``: the whole input in memory (numpy); any table privlab reads.
* ``stream``: a Parquet file read a batch of rows at a time (:mod:`privlab.data.stream`):
  memory bounded by a batch and the counts, whatever the file's size.
* ``spark``: a Spark DataFrame or a Parquet path that Spark reads (:mod:`privlab.data.spark`).

Every function that takes ``engine=`` checks it here, against the engines it offers, so
that the library and the command line refuse an engine with the same sentence.
"""

from __future__ import annotations

from collections.abc import Sequence

from privlab.errors import ParameterError

ENGINES = ("memory", "stream", "spark")


def check_engine(
    engine: str,
    *,
    available: Sequence[str] = ("memory", "spark"),
    what: str | None = None,
    hint: str | None = None,
) -> str:
    """``engine`` checked: one of :data:`ENGINES` that ``what`` (a function's name) offers
    (``available``).  An engine privlab knows but ``what`` does not offer is refused with a
    sentence that names the ones it does (and ``hint``, where else to look)."""
    if engine not in ENGINES:
        raise ParameterError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if engine not in available:
        name = f" for {what}" if what else ""
        more = f" ({hint})" if hint else ""
        raise ParameterError(
            f"engine {engine!r} is not available{name}: use {' or '.join(available)}{more}"
        )
    return engine
