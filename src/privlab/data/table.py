"""The encoded table: integer codes plus a :class:`~privlab.data.schema.Schema`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privlab._csv import restore_frame
from privlab._frames import ToFrames
from privlab.data.counts import joint_counts
from privlab.data.schema import Attribute, Role, Schema, py_scalar
from privlab.errors import MissingValuesError, ParameterError, PrivlabError, SchemaError

#: Strings treated as missing values (UCI files mark them with ``?``).  Words such as
#: ``None`` or ``NA`` are *not* markers: they are legitimate categories ("None" is a disease
#: value in Mothali's (2011) examples).
MISSING_MARKERS = ("?", "", "NaN", "nan")

CODE_DTYPE = np.int32
#: Bytes of codes from which :meth:`Table.fingerprint_soon` hashes in a thread.
FINGERPRINT_THREAD_MIN = 8 << 20


def _column_range(codes: np.ndarray, rows: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """Per-column minimum and maximum of a C-contiguous 2-D array (at least one row).

    ``rows`` rows at a time are read as one long row, reduced element-wise, then folded
    back: numpy reduces a long contiguous axis about 8x faster than an axis of 8 columns.
    """
    n, d = codes.shape
    full = n - n % rows
    lows, highs = [], []
    if full:
        wide = codes[:full].reshape(-1, rows * d)
        lows.append(wide.min(axis=0).reshape(rows, d).min(axis=0))
        highs.append(wide.max(axis=0).reshape(rows, d).max(axis=0))
    if full < n:
        lows.append(codes[full:].min(axis=0))
        highs.append(codes[full:].max(axis=0))
    return np.min(lows, axis=0), np.max(highs, axis=0)


@dataclass(frozen=True, eq=False)
class Table(ToFrames):
    """A categorical table: ``codes[i, j]`` indexes attribute ``j``'s domain for row ``i``.

    ``codes`` is a read-only ``int32`` array of shape ``(n_rows, n_cols)``.
    """

    codes: np.ndarray
    schema: Schema

    def __post_init__(self) -> None:
        codes = np.asarray(self.codes)
        if codes.ndim != 2 or codes.shape[1] != len(self.schema):
            raise SchemaError(
                f"codes have shape {codes.shape}, expected (n, {len(self.schema)}) for the schema"
            )
        if codes.size and not np.issubdtype(codes.dtype, np.integer):
            raise SchemaError(f"codes must be integers, not {codes.dtype}")
        codes = np.ascontiguousarray(codes, dtype=CODE_DTYPE)
        if codes.size:  # two reductions, no temporary the size of the table
            lo, hi = _column_range(codes)
            bad = (lo < 0) | (hi >= np.asarray(self.schema.sizes))
            if bad.any():
                j = int(np.argmax(bad))
                raise SchemaError(f"column {self.schema.names[j]!r} has codes outside its domain")
        codes.setflags(write=False)
        object.__setattr__(self, "codes", codes)

    @classmethod
    def checked(cls, codes: np.ndarray, schema: Schema) -> Table:
        """A table of int32 codes already known to lie in ``schema``'s domains (a
        sanitizer's draws from a checked table's codes): its shape and type are checked, its
        codes are not read again (validate once, where the data enters: the second check
        was a tenth of PRAM's whole release at 10 million rows, issue 38)."""
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[1] != len(schema) or codes.dtype != CODE_DTYPE:
            return cls(codes, schema)  # anything unusual takes the full check
        table = object.__new__(cls)
        codes = np.ascontiguousarray(codes)
        codes.setflags(write=False)
        object.__setattr__(table, "codes", codes)
        object.__setattr__(table, "schema", schema)
        return table

    # -- shape and lookup -------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        return int(self.codes.shape[0])

    @property
    def n_cols(self) -> int:
        return int(self.codes.shape[1])

    def __len__(self) -> int:
        return self.n_rows

    @property
    def names(self) -> tuple[str, ...]:
        return self.schema.names

    def column(self, name: str) -> np.ndarray:
        """The codes of one column (a read-only view)."""
        return self.codes[:, self.schema.index(name)]

    def columns(self, names: Sequence[str]) -> np.ndarray:
        """The codes of several columns as an ``(n, len(names))`` array."""
        return self.codes[:, self.schema.indices(names)]

    def decode(self, name: str) -> np.ndarray:
        """The values of one column, decoded through its domain (an object array)."""
        return self.schema[name].decode(self.column(name))

    def counts(self, names: Sequence[str]) -> np.ndarray:
        """Joint counts of ``names`` over their joint domain, first column slowest
        (:func:`privlab.data.counts.joint_counts`; its codes were checked when the table
        was made, so the count checks none again)."""
        idx = self.schema.indices(names)
        sizes = [self.schema.attributes[i].size for i in idx]
        return joint_counts(self.codes, sizes, columns=idx, trusted=True)

    def fingerprint(self) -> str:
        """SHA-256 of the schema and the codes: identifies the exact input of a release
        (kept in its custody directory and the custodian's registry, never published).

        The roles are left out: they are a release's parameters, not the input's content,
        so releases of one table with other quasi-identifiers share its fingerprint (and the
        registry sees them as releases of one input).

        Computed once a table: its codes are read-only, so a second release of one table
        (an audit's grid, the app's runs) does not hash them again (SHA-256 reads about
        1.5 GB/s: 0.2 s for 10M rows x 8 columns, most of a DP histogram of a few cells)."""
        cached = self.__dict__.get("_fingerprint")
        if cached is not None:
            return cached
        import hashlib
        import json

        attrs = [
            {k: v for k, v in a.items() if k != "role"} for a in self.schema.to_dict()["attributes"]
        ]
        h = hashlib.sha256(json.dumps(attrs, sort_keys=True).encode())
        h.update(memoryview(np.ascontiguousarray(self.codes, dtype=np.int32)))
        digest = h.hexdigest()
        self.__dict__["_fingerprint"] = digest  # frozen: past __setattr__, as cached_property

        return digest

    def fingerprint_soon(self) -> Callable[[], str]:
        """:meth:`fingerprint`, started now: a large table (:data:`FINGERPRINT_THREAD_MIN`
        bytes of codes and more) is hashed in a thread while the caller goes on (hashlib
        lets go of the GIL, so on two cores a sanitizer's pass over the data and the hash
        take the longer of the two, not their sum); the returned function waits for it and
        returns it, or raises what the hash raised.  A small table is hashed at once."""
        if self.codes.nbytes < FINGERPRINT_THREAD_MIN or "_fingerprint" in self.__dict__:
            digest = self.fingerprint()
            return lambda: digest
        import threading

        box: list[Any] = []

        def run() -> None:
            try:
                box.append(self.fingerprint())
            except BaseException as e:  # handed to the caller by result()
                box.append(e)

        worker = threading.Thread(target=run, name="privlab-fingerprint", daemon=True)
        worker.start()

        def result() -> str:
            worker.join()
            if isinstance(box[0], BaseException):
                raise box[0]
            return box[0]

        return result

    # -- derivation -------------------------------------------------------------------------
    def select(self, names: Sequence[str]) -> Table:
        """The table restricted to ``names``, in that order."""
        return Table(self.columns(names), self.schema.select(names))

    def take(self, rows: np.ndarray | Sequence[int]) -> Table:
        """The table restricted to ``rows`` (indices or a boolean mask)."""
        return Table(self.codes[np.asarray(rows)], self.schema)

    def with_roles(
        self, *, qi: Sequence[str] = (), sensitive: str | None = None, keep: Sequence[str] = ()
    ) -> Table:
        """The same codes with roles set (see :meth:`Schema.with_roles`)."""
        return Table(self.codes, self.schema.with_roles(qi=qi, sensitive=sensitive, keep=keep))

    def require_rows(self) -> Table:
        """Raise :class:`PrivlabError` when the table is empty; return self otherwise."""
        if self.n_rows == 0:
            raise PrivlabError("the table is empty (0 rows)")
        return self

    # -- pandas -----------------------------------------------------------------------------
    def to_pandas(self, *, decode: bool = True) -> pd.DataFrame:
        """A DataFrame of decoded values (or of codes with ``decode=False``)."""
        if not decode:
            return pd.DataFrame(self.codes.copy(), columns=list(self.names))
        text = _arrow_text_dtype()
        data: dict[str, Any] = {}
        for j, a in enumerate(self.schema.attributes):
            col = self.codes[:, j]
            if not a.size:
                data[a.name] = np.empty(0, dtype=object)
            elif a.numeric:
                data[a.name] = np.asarray(a.domain)[col]
            elif text is not None and all(isinstance(v, str) for v in a.domain):
                # pandas' own text columns (pyarrow strings): the domain taken by the codes
                # in pyarrow, 3.5x faster than the Python strings pandas converts one by one
                import pyarrow as pa

                taken = pa.array(list(a.domain), type=pa.large_string()).take(pa.array(col))
                data[a.name] = pd.array(taken, dtype=text)
            else:
                data[a.name] = np.asarray(a.domain, dtype=object)[col]
        return pd.DataFrame(data, columns=list(self.names))

    @classmethod
    def from_pandas(
        cls,
        df: pd.DataFrame,
        *,
        qi: Sequence[str] = (),
        sensitive: str | None = None,
        drop_missing: bool = False,
        domains: Mapping[str, Sequence[Any]] | None = None,
        missing_markers: Sequence[str] = MISSING_MARKERS,
    ) -> Table:
        """Encode a DataFrame.

        Parameters
        ----------
        df
            Input; every column becomes an attribute.  Numeric columns keep numeric values
            (their domain is sorted ascending); others become strings sorted
            lexicographically unless ``domains`` gives an order.
        qi, sensitive
            Roles to assign (see :meth:`Schema.with_roles`).
        drop_missing
            Drop rows with a missing value instead of raising :class:`MissingValuesError`
            (which names each column with missing values and its count).
        missing_markers
            Strings that mean "missing" in text columns, besides NaN/None.
        domains
            Optional explicit, ordered domains for some columns; a value outside the given
            domain raises :class:`SchemaError`.  Such a domain is *declared*
            (:attr:`Attribute.declared`): a release may publish it whole.
        """
        dup = df.columns[df.columns.astype(str).duplicated()]
        if len(dup):
            raise SchemaError(
                f"duplicate column name {str(dup[0])!r}: every column needs its own name"
            )
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
        names = [str(c) for c in df.columns]
        markers = list(missing_markers)
        series = [df.iloc[:, j] for j in range(df.shape[1])]  # views, no copy of the frame
        kinds = [_column_kind(x) for x in series]
        numeric = [_is_number(x) for x in series]
        for name, x, kind, num in zip(names, series, kinds, numeric):
            if not num or kind == "int":
                continue  # an integer column holds no infinity
            values = x.to_numpy() if kind == "float" else x.to_numpy(np.float64, na_value=np.nan)
            inf = np.isinf(values)
            if inf.any():
                raise SchemaError(
                    f"column {name!r} holds {int(inf.sum())} infinite value(s) (first in row "
                    f"{int(np.argmax(inf))}): a numeric column needs finite numbers"
                )
        # each column factorized once (missing values and markers as -1), its domain sorted:
        # a text column's distinct values are read as text, not its every cell; a declared
        # domain's column keeps its values (markers as None) for its codes
        declared = {
            name: x.to_numpy() if num else _text_or_none(x, markers)
            for name, x, num in zip(names, series, numeric)
            if name in domains
        }
        coded = [
            (np.where(pd.isna(declared[name]), -1, 0), None)
            if name in domains
            else _factorized(x, kind, num, markers)
            for name, x, kind, num in zip(names, series, kinds, numeric)
        ]
        missing = [int(np.count_nonzero(c < 0)) for c, _ in coded]
        keep = None
        if any(missing):
            if not drop_missing:
                bad = ", ".join(f"{c!r} ({k})" for c, k in zip(names, missing) if k)
                raise MissingValuesError(
                    f"missing values in column(s) {bad}; pass drop_missing=True "
                    "(CLI: --drop-missing) to drop those rows"
                )
            keep = np.ones(len(df), dtype=bool)
            for c, _ in coded:
                keep &= c >= 0
        n = len(df) if keep is None else int(keep.sum())
        columns_out: list[np.ndarray] = []
        attrs = []
        for name, num, (col, uniques) in zip(names, numeric, coded):
            if uniques is None:  # a declared domain
                dom = list(domains[name])
                if num and any(isinstance(v, str) for v in dom):  # e.g. from --domain
                    try:
                        dom = list(pd.to_numeric(pd.Series(dom)))
                    except (ValueError, TypeError):
                        raise SchemaError(
                            f"the declared domain of numeric column {name!r} holds a non-number"
                        ) from None
                attr = Attribute(name, tuple(py_scalar(v) for v in dom), Role.OTHER, num, True)
                values = declared[name]
                columns_out.append(attr.encode(values if keep is None else values[keep]))
            else:
                if keep is not None:  # the domain of the rows kept
                    col = col[keep]
                    present = np.bincount(col, minlength=len(uniques)) > 0
                    if not present.all():
                        col = (np.cumsum(present) - 1)[col]
                        uniques = [u for u, p in zip(uniques, present) if p]
                columns_out.append(col)
                attr = Attribute(name, tuple(py_scalar(v) for v in uniques), Role.OTHER, num)
            attrs.append(attr)
        schema = Schema(tuple(attrs)).with_roles(qi=qi, sensitive=sensitive)
        return cls(_columns_to_rows(columns_out, n), schema)


def _columns_to_rows(columns: list[np.ndarray], n: int, block: int = 16384) -> np.ndarray:
    """The ``(n, len(columns))`` C-ordered codes of ``columns``, filled a block of rows at a
    time: a block's rows stay in cache while each column writes its stride into them (2.4x
    faster than one column at a time at 1M rows x 15 columns)."""
    codes = np.empty((n, len(columns)), dtype=CODE_DTYPE)
    for lo in range(0, n, block):
        hi = min(n, lo + block)
        for j, col in enumerate(columns):
            codes[lo:hi, j] = col[lo:hi]
    return codes


def _arrow_text_dtype() -> Any:
    """The dtype pandas gives a column of Python strings when it is pyarrow's strings
    (pandas 3; an option of pandas 2), else None (object columns)."""
    dt = pd.Series(["a"]).dtype
    if isinstance(dt, pd.StringDtype) and dt.storage == "pyarrow":
        return dt
    return None


def _column_kind(x: pd.Series) -> str:
    """How :meth:`Table.from_pandas` codes a column: ``int`` and ``float`` (numbers),
    ``text`` (pandas' string dtype: strings and missing values), ``object`` (Python
    objects, read as text), ``other`` (booleans, categories, dates...: the general path)."""
    dt = x.dtype
    if isinstance(dt, np.dtype):
        if dt.kind in "iu":
            return "int"
        if dt.kind == "f":
            return "float"
        if dt.kind == "O":
            return "object"
        return "other"
    if isinstance(dt, pd.StringDtype):
        return "text"
    return "other"


def _is_number(x: pd.Series) -> bool:
    """A numeric column (booleans are not)."""
    return bool(pd.api.types.is_numeric_dtype(x)) and not pd.api.types.is_bool_dtype(x)


def _text_or_none(x: pd.Series, markers: list[str]) -> np.ndarray:
    """A text column's values as objects, the missing markers as None."""
    return x.astype(object).where(~x.isin(markers), None).to_numpy()


def _factorized(
    x: pd.Series, kind: str, numeric: bool, markers: list[str]
) -> tuple[np.ndarray, list]:
    """A column's codes (-1: missing) and its sorted distinct values, as the values read
    as numbers (a numeric column) or as text (``str`` of each; the missing markers and
    pandas' missing values are missing).

    Text columns are factorized as they are and only their distinct values are read as
    text and sorted (two values that print alike become one): the cells' codes then follow
    by one look-up, where reading every cell as text cost 3x the factorization."""
    if numeric:
        col, uniques = pd.factorize(x, sort=True)
        return col, np.asarray(uniques).tolist()  # Python numbers, in one call
    if kind == "other":  # booleans, categories, dates...: every cell as text
        x = x.astype(object).where(~x.isin(markers), None)
        x = x.where(x.isna(), x.astype(str))
    col, raw = pd.factorize(x, sort=False)
    raw = np.asarray(raw, dtype=object)
    text = [None if (isinstance(v, str) and v in markers) else str(v) for v in raw]
    kept = sorted({t for t in text if t is not None})
    rank = {t: i for i, t in enumerate(kept)}
    lookup = np.array([-1 if t is None else rank[t] for t in text] + [-1], dtype=np.int64)
    return lookup[col], kept


def read_table(
    path: str | Path,
    *,
    qi: Sequence[str] = (),
    sensitive: str | None = None,
    drop_missing: bool = False,
    domains: Mapping[str, Sequence[Any]] | None = None,
    encoding: str | None = None,
) -> Table:
    """Read a CSV (header row; ``?`` and empty cells are missing) or Parquet file.

    A CSV is read as UTF-8 (a byte-order mark is skipped) unless ``encoding`` names another
    (``latin-1``, ``cp1252``, ``utf-16``, ...).  Refused with one line naming the file: a
    binary file, text that is not in the encoding (the byte and its line are named), rows
    with more fields than the header (the line is named), a header with an empty or repeated
    column name, a header without rows, and infinite numbers.
    """
    path = Path(path)
    df = read_frame(path, encoding=encoding)
    try:
        return Table.from_pandas(
            df, qi=qi, sensitive=sensitive, drop_missing=drop_missing, domains=domains
        )
    except PrivlabError as e:
        raise type(e)(f"{path}: {e}") from None


def read_frame(
    path: str | Path, *, encoding: str | None = None, sniff: bool = False
) -> pd.DataFrame:
    """The DataFrame :func:`read_table` encodes, with the same checks and one-line refusals
    (``?`` and empty cells are NaN).  ``sniff``: a CSV whose header holds more ``;`` than
    ``,`` is read as ``;``-separated (ARX's and many spreadsheets' exports)."""
    path = Path(path)
    if not path.exists():
        raise PrivlabError(f"input file not found: {path}")
    if path.is_dir():
        raise PrivlabError(f"input is a directory, not a table file: {path}")
    if encoding is not None:
        import codecs

        try:
            codecs.lookup(encoding)
        except LookupError:
            raise ParameterError(f"unknown encoding {encoding!r} (e.g. utf-8, latin-1)") from None
    suffix = "".join(path.suffixes[-2:]).lower()
    try:
        if suffix.endswith(".parquet") or suffix.endswith(".pq"):
            df = pd.read_parquet(path)
            _check_names([str(c) for c in df.columns], path)
        else:
            enc = encoding or "utf-8-sig"
            _check_text(path, enc)
            sep = ","
            if sniff:
                line = _first_line(path, enc)
                sep = ";" if line.count(";") > line.count(",") else ","
            _check_names(_csv_header(path, enc, sep), path)
            df = restore_frame(  # the escaping of privlab's own CSVs (privlab._csv)
                pd.read_csv(
                    path,
                    sep=sep,
                    na_values=list(MISSING_MARKERS),
                    keep_default_na=False,
                    skipinitialspace=True,
                    encoding=enc,
                )
            )
    except pd.errors.EmptyDataError:
        raise PrivlabError(f"input file is empty: {path}") from None
    except UnicodeDecodeError as e:
        raise PrivlabError(_decode_error(path, e, encoding)) from None
    except PrivlabError:
        raise
    except (ValueError, OSError) as e:  # pandas' ParserError, pyarrow's ArrowInvalid, ...
        first = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise PrivlabError(f"cannot read {path} as a table: {first}") from None
    if len(df) == 0:
        raise PrivlabError(f"{path} has a header but no rows")
    return df


def _first_line(path: Path, encoding: str) -> str:
    with open(path, encoding=encoding) as fh:
        return fh.readline()


def _check_text(path: Path, encoding: str) -> None:
    """A file with NUL bytes in its first 64 KiB is binary, not a CSV (unless the encoding
    is one whose characters hold zero bytes, such as UTF-16)."""
    import codecs

    if codecs.lookup(encoding).name.startswith(("utf-16", "utf-32")):
        return
    with open(path, "rb") as fh:
        head = fh.read(1 << 16)
    at = head.find(b"\x00")
    if at < 0:
        return
    wide = wide_unicode(head)
    if wide is not None:  # a spreadsheet's "Unicode text" export, not a binary file
        name = wide.upper().replace("-LE", "LE").replace("-BE", "BE")
        raise PrivlabError(
            f"{path} is {name} text, not {_encoding_name(encoding)}: give --encoding {wide} "
            f"or save it as UTF-8 (e.g. iconv -f {name} -t UTF-8 {path.name} > utf8.csv)"
        )
    raise PrivlabError(
        f"{path} is not a text table: it holds a NUL byte at offset {at} (a binary file?)"
    )


def _encoding_name(encoding: str) -> str:
    import codecs

    name = codecs.lookup(encoding).name
    return "UTF-8" if name.startswith("utf-8") or name == "utf_8" else encoding


#: Byte-order marks of the wide Unicode encodings, longest first (UTF-32LE's starts as
#: UTF-16LE's does).
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)


def wide_unicode(head: bytes) -> str | None:
    """The encoding of text in UTF-16 or UTF-32 (``"utf-16"``, ``"utf-16-le"``, ...) from
    the first bytes of a file: a byte-order mark, or (without one) text whose every second
    (fourth) byte is zero and which decodes; ``None`` for anything else."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    sample = head[: 1 << 12]
    for name, width, zero_at in (
        ("utf-32-le", 4, (1, 2, 3)),
        ("utf-32-be", 4, (0, 1, 2)),
        ("utf-16-le", 2, (1,)),
        ("utf-16-be", 2, (0,)),
    ):
        sample_w = sample[: len(sample) - len(sample) % width]
        units = [sample_w[i : i + width] for i in range(0, len(sample_w), width)]
        if len(units) < 4:
            continue
        ascii_like = sum(all(u[j] == 0 for j in zero_at) for u in units)
        if ascii_like < 0.9 * len(units):
            continue
        try:
            sample_w.decode(name)
        except UnicodeDecodeError:
            continue
        return name
    return None


NEWLINE = b"\n"


def _decode_error(path: Path, e: UnicodeDecodeError, encoding: str | None) -> str:
    byte = e.object[e.start : e.start + 1].hex() if isinstance(e.object, bytes) else "?"
    line = ""
    try:
        with open(path, "rb") as fh:
            before = fh.read(e.start) if e.start < (1 << 26) else None
        if before is not None:
            line = f" on line {before.count(NEWLINE) + 1}"
    except OSError:
        pass
    if encoding is None:
        return (
            f"{path} is not UTF-8 text (byte 0x{byte}{line}); give its encoding with "
            "--encoding (e.g. --encoding latin-1) or save it as UTF-8"
        )
    return f"{path} is not {encoding} text (byte 0x{byte}{line}); check --encoding"


def _csv_header(path: Path, encoding: str, sep: str = ",") -> list[str]:
    import csv

    with open(path, newline="", encoding=encoding) as fh:
        return next(csv.reader(fh, delimiter=sep), [])


def _check_names(header: list[str], path: Path) -> None:
    """pandas renames a repeated CSV header (``sex``, ``sex.1``) and an empty one
    (``Unnamed: 1``): refuse both instead, or a column of ages could be published under the
    name ``sex``."""
    names = [h.strip() for h in header]
    for i, h in enumerate(names):
        if not h:
            raise SchemaError(
                f"empty column name (column {i + 1}) in {path}: every column needs a name"
            )
    dup = [h for h in names if names.count(h) > 1]
    if dup:
        raise SchemaError(
            f"duplicate column name {dup[0]!r} in {path}: every column needs its own name"
        )
