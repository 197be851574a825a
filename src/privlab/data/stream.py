"""Out of core: a Parquet dataset read in batches of rows, encoded against public domains.

A file larger than memory is read with :meth:`pyarrow.parquet.ParquetFile.iter_batches`,
``batch_rows`` rows at a time; each batch becomes a C-contiguous ``int32`` code array like
:attr:`Table.codes <privlab.data.table.Table.codes>`, so the operations that need one pass
(counts and histograms, PRAM, recoding, the class sizes of a generalization) keep only one
batch in memory.

The domains come first, from the user (:func:`parquet_schema`'s ``domains``, the CLI's
``--domains``/``--domain``): a value outside a declared domain is a
:class:`~privlab.errors.SchemaError` naming the column and the value.  A column without a
declared domain has it read from the data by a first pass, sorted as
:meth:`Table.from_pandas <privlab.data.table.Table.from_pandas>` sorts it, and marked
undeclared; the operations then refuse it or warn exactly as the in-memory path does.

The external shuffle (:class:`BucketShuffle`) releases rows in a uniformly random order
with bounded memory: every row goes to one of ``B`` temporary bucket files by an independent
uniform label, then each bucket is permuted in memory and appended.  Concatenating
uniformly permuted buckets of i.i.d. uniform labels is a uniformly random permutation of the
rows (the bucket sizes are multinomial and the order within a bucket uniform, so every
ordering has probability ``1/n!``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privlab._params import check_int
from privlab.data.counts import _KERNEL_MIN, MAX_RADIX, joint_counts
from privlab.data.schema import Attribute, Role, Schema, py_scalar
from privlab.data.table import CODE_DTYPE
from privlab.errors import MissingValuesError, ParameterError, PrivlabError, SchemaError

#: Rows per batch by default: 2^20 rows of 8 int64 columns is 64 MB of Arrow data.
DEFAULT_BATCH_ROWS = 1 << 20


def _parquet_file(path: str | Path) -> Any:
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.exists():
        raise PrivlabError(f"input file not found: {path}")
    if path.is_dir():
        raise PrivlabError(f"input is a directory, not a Parquet file: {path}")
    try:
        return pq.ParquetFile(path)
    except Exception as e:  # pyarrow's ArrowInvalid and friends
        first = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise PrivlabError(f"cannot read {path} as Parquet: {first}") from None


def _check_batch_rows(batch_rows: int) -> int:
    return check_int("batch_rows", batch_rows, low=1)


def parquet_rows(path: str | Path) -> int:
    """Number of rows of a Parquet file (from its footer; nothing else is read)."""
    return int(_parquet_file(path).metadata.num_rows)


def parquet_columns(path: str | Path) -> list[str]:
    """The column names of a Parquet file (from its footer)."""
    return list(_parquet_file(path).schema_arrow.names)


def require_columns(path: str | Path, names: Sequence[str]) -> None:
    """A :class:`SchemaError` naming the first of ``names`` the file does not hold."""
    have = parquet_columns(path)
    for c in names:
        if c not in have:
            raise SchemaError(f"unknown column {c!r}; columns are: {', '.join(have)}")


def _numeric(arrow_type: Any) -> bool:
    import pyarrow.types as pt

    if pt.is_dictionary(arrow_type):
        return _numeric(arrow_type.value_type)
    return bool(pt.is_integer(arrow_type) or pt.is_floating(arrow_type))


def parquet_schema(
    path: str | Path,
    domains: Mapping[str, Sequence[Any]] | None = None,
    *,
    columns: Sequence[str] | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> Schema:
    """The :class:`Schema` of ``columns`` (default: all) of a Parquet file.

    A column in ``domains`` gets that public, ordered domain (declared); any other has its
    domain read from the data by one pass over the file (undeclared: the operations refuse
    it or warn, as in memory).  Numeric columns (integer or floating Arrow types) are numeric
    attributes, as :meth:`Table.from_pandas` makes them.
    """
    pf = _parquet_file(path)
    names = list(pf.schema_arrow.names)
    dup = [c for c in names if names.count(c) > 1]
    if dup:
        raise SchemaError(
            f"duplicate column name {dup[0]!r} in {path}: every column needs its own name"
        )
    domains = dict(domains or {})
    wanted = names if columns is None else list(columns)
    for c in [*wanted, *domains]:
        if c not in names:
            raise SchemaError(f"unknown column {c!r}; columns are: {', '.join(names)}")
    types = {c: pf.schema_arrow.field(c).type for c in wanted}
    read = [c for c in wanted if c not in domains]
    seen = _distinct(pf, read, _check_batch_rows(batch_rows), path) if read else {}
    attrs = []
    for c in wanted:
        numeric = _numeric(types[c])
        if c in domains:
            dom = list(domains[c])
            if numeric and any(isinstance(v, str) for v in dom):  # e.g. from --domain
                try:
                    dom = [float(v) if "." in str(v) or "e" in str(v).lower() else int(v)
                           for v in dom]  # fmt: skip
                except ValueError:
                    raise SchemaError(
                        f"the declared domain of numeric column {c!r} holds a non-number"
                    ) from None
            attrs.append(Attribute(c, tuple(py_scalar(v) for v in dom), Role.OTHER, numeric, True))
        else:
            values = sorted(seen[c]) if numeric else sorted(str(v) for v in seen[c])
            attrs.append(Attribute(c, tuple(values), Role.OTHER, numeric))
    return Schema(tuple(attrs))


def _distinct(pf: Any, columns: list[str], batch_rows: int, path: Any) -> dict[str, set]:
    """The distinct values of ``columns``, one pass (a missing value is an error)."""
    import pyarrow.compute as pc

    seen: dict[str, set] = {c: set() for c in columns}
    for batch in pf.iter_batches(batch_size=batch_rows, columns=columns):
        for c in columns:
            arr = batch.column(c)
            if arr.null_count:
                raise MissingValuesError(f"{path}: missing values in column {c!r}")
            seen[c].update(pc.unique(arr).to_pylist())
    return seen


class _Encoder:
    """Encodes one Arrow column against an attribute's domain (hash lookup in Arrow when
    the types agree, else :meth:`Attribute.encode`)."""

    def __init__(self, attr: Attribute, arrow_type: Any, where: str) -> None:
        import pyarrow as pa
        import pyarrow.types as pt

        self.attr, self.where, self.value_set = attr, where, None
        value_type = arrow_type.value_type if pt.is_dictionary(arrow_type) else arrow_type
        dom = list(attr.domain)
        ints = all(isinstance(v, int) and not isinstance(v, bool) for v in dom)
        # integers whose domain is lo, lo + 1, ..., lo + K - 1: the code is value - lo
        self.offset = (
            dom[0]
            if ints
            and dom
            and pt.is_integer(arrow_type)
            and dom == list(range(dom[0], dom[0] + len(dom)))
            else None
        )
        nums = all(isinstance(v, int | float) and not isinstance(v, bool) for v in dom)
        try:
            if pt.is_integer(value_type) and ints:
                self.value_set = pa.array(dom, type=pa.int64())
            elif pt.is_floating(value_type) and nums:
                self.value_set = pa.array([float(v) for v in dom], type=pa.float64())
            elif (pt.is_string(value_type) or pt.is_large_string(value_type)) and all(
                isinstance(v, str) for v in dom
            ):
                self.value_set = pa.array(dom, type=pa.string())
        except (pa.ArrowInvalid, OverflowError):
            self.value_set = None

    def __call__(self, arr: Any) -> np.ndarray:
        import pyarrow as pa
        import pyarrow.compute as pc

        if arr.null_count:
            raise MissingValuesError(
                f"{self.where}: missing values in column {self.attr.name!r} (drop those rows "
                "before streaming)"
            )
        if isinstance(arr.type, pa.DictionaryType):
            dict_codes = self(arr.dictionary) if len(arr.dictionary) else np.empty(0, np.int32)
            return dict_codes[arr.indices.to_numpy(zero_copy_only=False)].astype(CODE_DTYPE)
        if self.offset is not None:
            codes = arr.to_numpy(zero_copy_only=False).astype(np.int64) - self.offset
            bad = np.flatnonzero((codes < 0) | (codes >= self.attr.size))
            if bad.size:
                raise SchemaError(
                    f"{self.where}: value {int(codes[bad[0]]) + self.offset!r} is not in the "
                    f"domain of {self.attr.name!r}"
                )
            return codes.astype(CODE_DTYPE)
        if self.value_set is None:
            return self.attr.encode(arr.to_numpy(zero_copy_only=False), where=self.where).astype(
                CODE_DTYPE
            )
        if pa.types.is_large_string(arr.type):
            arr = arr.cast(pa.string())
        elif arr.type != self.value_set.type:
            arr = arr.cast(self.value_set.type)
        idx = pc.index_in(arr, value_set=self.value_set)
        if idx.null_count:
            first = int(pc.index(pc.is_null(idx), True).as_py())
            raise SchemaError(
                f"{self.where}: value {arr[first].as_py()!r} is not in the domain of "
                f"{self.attr.name!r}"
            )
        return idx.to_numpy(zero_copy_only=False).astype(CODE_DTYPE, copy=False)


def iter_codes(
    path: str | Path,
    schema: Schema,
    columns: Sequence[str] | None = None,
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> Iterator[np.ndarray]:
    """Yield the rows of a Parquet file as ``int32`` code arrays ``(rows, len(columns))``,
    ``batch_rows`` rows at a time (the last batch may be shorter), encoded against
    ``schema``'s domains; ``columns`` defaults to the schema's.

    Raises :class:`SchemaError` (naming the column and the value) for a value outside its
    domain and :class:`MissingValuesError` for a missing value.
    """
    batch_rows = _check_batch_rows(batch_rows)
    pf = _parquet_file(path)
    columns = list(schema.names if columns is None else columns)
    attrs = [schema[c] for c in columns]
    names = pf.schema_arrow.names
    for c in columns:
        if c not in names:
            raise SchemaError(f"unknown column {c!r}; columns are: {', '.join(names)}")
    encoders = [_Encoder(a, pf.schema_arrow.field(a.name).type, str(path)) for a in attrs]
    for batch in pf.iter_batches(batch_size=batch_rows, columns=columns):
        out = np.empty((batch.num_rows, len(columns)), dtype=CODE_DTYPE)
        for j, enc in enumerate(encoders):
            out[:, j] = enc(batch.column(j))
        yield out


def parquet_numeric(path: str | Path) -> dict[str, bool]:
    """Whether each column of a Parquet file holds numbers (an integer or floating Arrow
    type, or a dictionary of them), from its footer."""
    schema = _parquet_file(path).schema_arrow
    return {f.name: _numeric(f.type) for f in schema}


def iter_numbers(
    path: str | Path,
    numbers: Sequence[str],
    schema: Schema | None = None,
    columns: Sequence[str] = (),
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield the rows of a Parquet file ``batch_rows`` at a time as ``(values, codes)``, read
    together: the ``float64`` values of the numeric columns ``numbers`` (``(rows,
    len(numbers))``) and the ``int32`` codes of ``columns`` against ``schema``'s domains
    (``(rows, len(columns))``, as :func:`iter_codes` encodes them).  A column may be in both.

    A missing value is a :class:`MissingValuesError` naming the column; a column of
    ``numbers`` that does not hold numbers a :class:`SchemaError`; NaN and infinite numbers
    are returned as they are (the caller decides).
    """
    import pyarrow as pa

    batch_rows = _check_batch_rows(batch_rows)
    pf = _parquet_file(path)
    numbers, columns = list(numbers), list(columns)
    if columns and schema is None:
        raise ParameterError("the schema of the coded columns is needed to encode them")
    names = pf.schema_arrow.names
    for c in [*numbers, *columns]:
        if c not in names:
            raise SchemaError(f"unknown column {c!r}; columns are: {', '.join(names)}")
    for c in numbers:
        if not _numeric(pf.schema_arrow.field(c).type):
            raise SchemaError(f"{path}: column {c!r} does not hold numbers")
    read = list(dict.fromkeys([*numbers, *columns]))
    encoders = [
        _Encoder(schema[c], pf.schema_arrow.field(c).type, str(path))  # type: ignore[index]
        for c in columns
    ]
    for batch in pf.iter_batches(batch_size=batch_rows, columns=read):
        values = np.empty((batch.num_rows, len(numbers)), dtype=np.float64)
        for j, c in enumerate(numbers):
            arr = batch.column(read.index(c))
            if arr.null_count:
                raise MissingValuesError(
                    f"{path}: missing values in column {c!r} (drop those rows before streaming)"
                )
            if isinstance(arr.type, pa.DictionaryType):
                arr = arr.dictionary_decode()
            values[:, j] = arr.to_numpy(zero_copy_only=False)
        codes = np.empty((batch.num_rows, len(columns)), dtype=CODE_DTYPE)
        for j, (c, enc) in enumerate(zip(columns, encoders)):
            codes[:, j] = enc(batch.column(read.index(c)))
        yield values, codes


def stream_counts(
    path: str | Path,
    schema: Schema,
    columns: Sequence[str],
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> np.ndarray:
    """Joint counts of ``columns`` over a Parquet file, in
    :func:`~privlab.data.counts.joint_index` order: the counts of
    :meth:`Table.counts <privlab.data.table.Table.counts>` of the whole file, one batch in
    memory at a time (each counted by the compiled pass when the file is large)."""
    sizes = [schema[c].size for c in columns]
    if float(np.prod(np.asarray(sizes, dtype=float))) >= MAX_RADIX:
        raise ParameterError(f"the joint domain of sizes {sizes} is too large to index")
    cells = int(np.prod(sizes, dtype=np.int64))
    counts = np.zeros(cells, dtype=np.int64)
    kernel = parquet_rows(path) * len(sizes) >= _KERNEL_MIN and len(sizes) > 0
    if kernel:
        from privlab.data._count_kernel import count_cells

        strides = np.ones(len(sizes), dtype=np.int64)
        strides[:-1] = np.cumprod(np.asarray(sizes[:0:-1], dtype=np.int64))[::-1]
        cols = np.arange(len(sizes), dtype=np.int64)
        domain = np.asarray(sizes, dtype=np.int64)
    for codes in iter_codes(path, schema, columns, batch_rows=batch_rows):
        if kernel:
            # encoded by privlab against the schema: a row check only, which cannot fail
            if count_cells(codes, cols, domain, strides, counts, True) >= 0:
                raise SchemaError("a code outside its domain")
        else:
            counts += joint_counts(codes, sizes)
    return counts


def merge_counts(
    keys: np.ndarray, counts: np.ndarray, batch: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Sparse counts accumulated across batches: the sorted distinct ``keys`` with their
    ``counts``, merged with one batch's keys (memory grows with the distinct keys, not the
    rows)."""
    bk, bc = np.unique(batch, return_counts=True)
    keys, inv = np.unique(np.concatenate([keys, bk]), return_inverse=True)
    counts = np.bincount(inv.reshape(-1), weights=np.concatenate([counts, bc]),
                         minlength=keys.size).astype(np.int64)  # fmt: skip
    return keys, counts


@dataclass
class BucketShuffle:
    """Rows (``int32`` code arrays of ``width`` columns, or arrays of ``dtype``: the masking
    engines shuffle ``float64`` rows) scattered to ``buckets`` temporary files under
    ``directory`` by independent uniform labels, read back one bucket at a time in a
    uniformly random order (see the module docstring).

    Use as a context manager: the bucket files are removed on exit, whatever happens.
    """

    directory: Path
    width: int
    buckets: int
    dtype: Any = CODE_DTYPE

    def __post_init__(self) -> None:
        if self.buckets < 1:
            raise ParameterError(f"at least one bucket is needed, got {self.buckets}")
        self.directory = Path(self.directory)
        self.directory.mkdir(parents=True, exist_ok=False)
        self._paths = [self.directory / f"bucket-{b:05d}.bin" for b in range(self.buckets)]
        self._files = [open(p, "wb") for p in self._paths]  # closed in close()
        self.rows = 0

    def __enter__(self) -> BucketShuffle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for f in self._files:
            if not f.closed:
                f.close()
        for p in self._paths:
            if p.exists():
                p.unlink()
        if self.directory.exists():
            os.rmdir(self.directory)

    def add(self, rows: np.ndarray, gen: np.random.Generator) -> None:
        """Append ``rows`` ``(n, width)``, each to the bucket of a uniform label from ``gen``."""
        rows = np.ascontiguousarray(rows, dtype=self.dtype)
        if rows.ndim != 2 or rows.shape[1] != self.width:
            raise ParameterError(f"rows of shape {rows.shape}, expected (n, {self.width})")
        small = self.buckets <= np.iinfo(np.uint16).max  # numpy radix-sorts 16-bit keys
        label = gen.integers(0, self.buckets, rows.shape[0], dtype=np.uint16 if small else np.int64)
        order = np.argsort(label, kind="stable")
        bounds = np.searchsorted(label[order], np.arange(self.buckets + 1))
        grouped = rows[order]
        for b in np.flatnonzero(np.diff(bounds)):
            grouped[bounds[b] : bounds[b + 1]].tofile(self._files[b])
        self.rows += rows.shape[0]

    def drain(self, gens: Sequence[np.random.Generator]) -> Iterator[np.ndarray]:
        """Yield each bucket's rows, permuted by ``gens[b]`` (one generator per bucket), and
        remove its file; the concatenation is the rows in a uniformly random order."""
        if len(gens) != self.buckets:
            raise ParameterError(f"{len(gens)} generators for {self.buckets} buckets")
        for f in self._files:
            f.close()
        for b, p in enumerate(self._paths):
            rows = np.fromfile(p, dtype=self.dtype).reshape(-1, self.width)
            p.unlink()
            if rows.shape[0]:
                yield rows[gens[b].permutation(rows.shape[0])]


@dataclass(frozen=True)
class StreamInput:
    """A Parquet file with the privlab schema of the columns a sanitizer reads: what the
    stream engine's sanitizers take where the in-memory ones take a
    :class:`~privlab.data.table.Table` (the same ``schema`` and ``names``; the rows stay on
    disk and are read ``batch_rows`` at a time by :func:`iter_codes`).

    Attributes
    ----------
    path
        The Parquet file.
    schema
        One attribute per column read (declared domains, or read from the data by one pass).
    n_rows
        The file's rows (from its footer).
    batch_rows
        Rows read at a time.
    """

    path: Path
    schema: Schema
    n_rows: int
    batch_rows: int = DEFAULT_BATCH_ROWS

    @property
    def names(self) -> tuple[str, ...]:
        return self.schema.names

    def batches(self, columns: Sequence[str] | None = None) -> Iterator[np.ndarray]:
        """The rows' codes, a batch at a time (:func:`iter_codes`)."""
        return iter_codes(self.path, self.schema, columns, batch_rows=self.batch_rows)

    def counts(self, names: Sequence[str]) -> np.ndarray:
        """Joint counts over the public domains (:func:`stream_counts`)."""
        return stream_counts(self.path, self.schema, names, batch_rows=self.batch_rows)

    def file_sha256(self) -> str:
        """The SHA-256 of the file (a streamed input's fingerprint in custody and registry)."""
        from privlab._io import sha256_file

        return sha256_file(self.path)


def role_columns(
    schema: Schema | None,
    qi: Sequence[str] | None = None,
    sensitive: str | None = None,
    keep: Sequence[str] | None = None,
) -> list[str] | None:
    """The columns a streamed sanitizer reads (:func:`stream_input`'s ``columns``): those
    named, and those ``schema`` gives a role to (None: every column of the file)."""
    named = [*(qi or ()), *([sensitive] if sensitive else []), *(keep or ())]
    return [*named, *(schema.published if schema is not None else ())] or None


def stream_input(
    data: Any,
    schema: Schema | None = None,
    *,
    columns: Sequence[str] | None = None,
    domains: Mapping[str, Sequence[Any]] | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> StreamInput:
    """``data`` (a :class:`StreamInput` or a Parquet path) with a schema for ``columns``
    (default: all; in the file's order): the domains of ``schema``'s attributes and of
    ``domains`` are declared, the others read from the data by one pass over those columns
    only (:func:`parquet_schema`); roles come from ``schema``."""
    if isinstance(data, StreamInput):
        return data
    if not isinstance(data, str | os.PathLike):
        raise ParameterError(
            f"engine='stream' reads a Parquet file: give its path, not a {type(data).__name__} "
            "(a table in memory needs no streaming: use engine='memory')"
        )
    path = Path(data)
    declared = {a.name: a.domain for a in schema.attributes if a.declared} if schema else {}
    declared.update(domains or {})
    names = parquet_columns(path)
    # in the file's order (a name the file lacks is refused by parquet_schema)
    wanted = names if columns is None else [
        *(c for c in names if c in columns), *(c for c in dict.fromkeys(columns) if c not in names)
    ]  # fmt: skip
    read = parquet_schema(
        path, {c: v for c, v in declared.items() if c in wanted or c in (domains or {})},
        columns=wanted,
        batch_rows=batch_rows,
    )  # fmt: skip
    if schema is not None:  # roles (and numeric flags) from the caller's schema
        from dataclasses import replace

        known = set(schema.names)
        read = Schema(tuple(
            replace(a, role=schema[a.name].role) if a.name in known else a
            for a in read.attributes
        ))  # fmt: skip
    return StreamInput(path, read, parquet_rows(path), _check_batch_rows(batch_rows))
