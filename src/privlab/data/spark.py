"""Spark DataFrames as privlab inputs: the session, public schemas, codes, counts.

The optional Spark engine (``engine="spark"``; ``pip install privlab[spark]``) reads a Spark
DataFrame, or a Parquet path that Spark reads, together with a privlab
:class:`~privlab.data.schema.Schema` that gives each column's ordered domain.  Values become
codes exactly as :meth:`Attribute.encode` makes them (a value matches a domain value when
they print alike, an integral float matching its integer), through a map literal that every
task receives with its plan (a broadcast lookup); a missing value or a value outside the
domain is an error naming the column (and the value), as in memory.

pyspark is imported only inside these functions: ``import privlab`` never imports it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privlab.data.schema import Attribute, Role, Schema, _keys, py_scalar
from privlab.data.table import MISSING_MARKERS
from privlab.errors import MissingValuesError, ParameterError, PrivlabError, SchemaError

#: Suffix of the integer code column made for a data column.
CODE = "__code"


def require_pyspark() -> Any:
    """The ``pyspark.sql`` module, or a :class:`PrivlabError` saying how to install it."""
    import warnings

    # pyspark 4 warns on every start that it "does not yet fully support pandas >= 3.0.0";
    # privlab's Spark tests pass on the pandas it installs, so the warning is expected
    warnings.filterwarnings(
        "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
    )
    try:
        import pyspark.sql as sql
    except ImportError:
        raise PrivlabError(
            "the Spark engine needs pyspark (pip install 'privlab[spark]') and a Java 17 "
            "runtime (Debian: apt-get install openjdk-17-jre-headless)"
        ) from None
    return sql


#: Whether the JVM that :func:`session` starts may write to this process's stderr (its
#: log4j log, the launcher's warnings).  Off by default: a Spark command prints privlab's
#: lines only; ``privlab --debug`` turns it on (:func:`show_jvm_log`).
_JVM_LOG = {"on": False}


def show_jvm_log(on: bool = True) -> None:
    """Let the JVM that :func:`session` starts next write its log to stderr (``on``), or
    send it to the null device (the default)."""
    _JVM_LOG["on"] = bool(on)


def session(master: str | None = None, *, app_name: str = "privlab") -> Any:
    """The active SparkSession, or a new one (``master`` default: ``local[*]``, or what
    ``spark-submit`` configured); the UI is off and the logs are quiet.  Python workers run
    this interpreter unless ``PYSPARK_PYTHON`` names another (on a cluster: one with privlab
    installed on every executor).

    The JVM this starts writes its log (log4j's console appender, the launcher's warnings,
    every task failure's stack trace) to the null device unless :func:`show_jvm_log` was
    called: privlab reports a failure itself, in one line (:func:`spark_failure`).
    """
    import os
    import sys

    sql = require_pyspark()
    active = sql.SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = sql.SparkSession.builder.appName(app_name).config("spark.ui.enabled", "false")
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # read when the context starts
    if master is not None:
        builder = builder.master(master)
    try:
        with _jvm_stderr(quiet=not _JVM_LOG["on"]):
            spark = builder.getOrCreate()
    except Exception as e:  # no Java, a bad master URL ...
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise PrivlabError(f"cannot start Spark: {first}") from None
    spark.sparkContext.setLogLevel("WARN" if _JVM_LOG["on"] else "ERROR")
    return spark


class _jvm_stderr:
    """While the JVM starts (it inherits file descriptor 2 from this process), point that
    descriptor at the null device when ``quiet``; this process's stderr is put back after."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.saved: int | None = None

    def __enter__(self) -> None:
        import os
        import sys

        if not self.quiet:
            return
        try:
            sys.stderr.flush()
            self.saved = os.dup(2)
            null = os.open(os.devnull, os.O_WRONLY)
        except (OSError, ValueError):  # no descriptor 2 to hide
            self.saved = None
            return
        os.dup2(null, 2)
        os.close(null)

    def __exit__(self, *exc: object) -> None:
        import os

        if self.saved is not None:
            os.dup2(self.saved, 2)
            os.close(self.saved)
            self.saved = None


#: Spark's error classes of a file it could not read (a corrupt Parquet part or footer, a
#: file gone since the listing): the input is at fault, not privlab.
_READ_FAILURES = ("FAILED_READ_FILE", "CANNOT_READ_FILE_FOOTER", "PATH_NOT_FOUND",
                  "UNABLE_TO_INFER_SCHEMA", "FILE_NOT_EXIST")  # fmt: skip


def spark_failure(e: BaseException) -> tuple[str, bool] | None:
    """One line for an exception that Spark raised (py4j's ``Py4JJavaError``, pyspark's
    captured exceptions), and whether the input is at fault; None for another exception.

    The JVM's message holds a Java stack trace of tens of lines; the line keeps Spark's
    error class, the file it names and the deepest cause (``Caused by: ...``), e.g.
    ``cannot read /data/in.parquet/part-1.parquet: footer is too large (Spark:
    FAILED_READ_FILE.NO_HINT)``.
    """
    import re

    if type(e).__module__.split(".")[0] not in ("py4j", "pyspark"):
        return None
    text = str(e)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    causes = [ln for ln in lines if ln.startswith("Caused by:")]
    cause = causes[-1].removeprefix("Caused by:").strip() if causes else ""
    cause = re.sub(r"^[\w.$]+(Exception|Error): ", "", cause)  # drop the Java class
    kind = re.search(r"\[([A-Z_]+(?:\.[A-Z_]+)*)\]", text)
    error_class = kind.group(1) if kind else ""
    where = re.search(r"reading file (\S+?)\.?(?:\s|$)", text) or re.search(
        r"Path does not exist: (\S+?)\.?(?:\s|$)", text
    )
    if where or any(error_class.startswith(c) for c in _READ_FAILURES):
        path = where.group(1) if where else ""
        path = re.sub(r"^file:(//)?", "", path)
        reason = cause or _first_message(lines)
        said = f"cannot read {path}" if path else "Spark cannot read the input"
        tag = f" (Spark: {error_class})" if error_class else ""
        return f"{said}: {reason[:200]}{tag}", True
    first = _first_message(lines)
    said = f"the Spark job failed: {first[:200]}"
    if cause and cause not in first:
        said += f"; caused by: {cause[:160]}"
    return said, False


def _first_message(lines: list[str]) -> str:
    """The first line of a Spark error that says something (not py4j's "An error occurred
    while calling o51.collectToPython." nor a stack frame), without its Java class."""
    import re

    for ln in lines:
        if ln.startswith(("An error occurred while calling", "at ", "...")):
            continue
        return re.sub(r"^:?\s*[\w.$]+(Exception|Error): ", "", ln)
    return lines[0] if lines else "no message"


def spark_frame(data: Any, spark: Any = None) -> Any:
    """``data`` as a Spark DataFrame: a DataFrame as is, a path read as Parquet."""
    sql = require_pyspark()
    if isinstance(data, sql.DataFrame):
        return data
    if isinstance(data, str | Path):
        path = Path(data)
        if not path.exists():
            raise PrivlabError(f"input file not found: {path}")
        spark = spark or session()
        try:
            return spark.read.parquet(str(path))
        except Exception as e:
            said = spark_failure(e)
            if said is not None and said[1]:
                raise PrivlabError(said[0]) from None
            first = said[0] if said else str(e).strip().splitlines()[0][:160]
            raise PrivlabError(f"cannot read {path} as Parquet with Spark: {first}") from None
    raise ParameterError(
        f"the Spark engine takes a Spark DataFrame or a Parquet path, not {type(data).__name__}"
    )


def _is_numeric(dtype: Any) -> bool:
    from pyspark.sql import types as T

    return isinstance(dtype, T.NumericType)


def _is_float(dtype: Any) -> bool:
    from pyspark.sql import types as T

    return isinstance(dtype, T.FloatType | T.DoubleType | T.DecimalType)


def spark_schema(
    df: Any,
    *,
    columns: Sequence[str] | None = None,
    domains: Mapping[str, Sequence[Any]] | None = None,
    schema: Schema | None = None,
) -> Schema:
    """The privlab schema of a Spark DataFrame's ``columns`` (default: all).

    A column of ``schema`` keeps its attribute; one named in ``domains`` gets that domain,
    *declared* (public); every other column's domain is read from the data (its distinct
    values, one aggregation for all such columns, sorted as :meth:`Table.from_pandas` sorts
    them) and is not declared, so the operations warn or refuse as they do in memory.
    """
    domains = dict(domains or {})
    fields = {f.name: f.dataType for f in df.schema.fields}
    unknown = [c for c in [*domains, *(columns or ())] if c not in fields]
    if unknown:
        raise SchemaError(f"unknown column {unknown[0]!r}; columns are: {', '.join(fields)}")
    if columns is not None:
        fields = {c: fields[c] for c in columns}
    given = {a.name: a for a in schema.attributes} if schema is not None else {}
    read = [c for c in fields if c not in given and c not in domains]
    values: dict[str, list[Any]] = {}
    if read:
        from pyspark.sql import functions as F

        row = df.agg(*[F.collect_set(F.col(c)).alias(c) for c in read]).collect()[0]
        values = {c: list(row[c]) for c in read}
    attrs = []
    for c, dtype in fields.items():
        numeric = _is_numeric(dtype)
        if c in given:
            attrs.append(given[c])
        elif c in domains:
            dom = [py_scalar(v) for v in domains[c]]
            if numeric and any(isinstance(v, str) for v in dom):
                try:
                    dom = [json.loads(v) if isinstance(v, str) else v for v in dom]
                except ValueError:
                    raise SchemaError(
                        f"the declared domain of numeric column {c!r} holds a non-number"
                    ) from None
            attrs.append(Attribute(c, tuple(dom), Role.OTHER, numeric, True))
        else:
            vals = [v for v in values[c] if v is not None]
            if numeric:
                vals = sorted(py_scalar(v) for v in vals if v == v)  # NaN is missing
            else:
                vals = sorted({str(v) for v in vals} - set(MISSING_MARKERS))
            attrs.append(Attribute(c, tuple(vals), Role.OTHER, numeric))
    return Schema(tuple(attrs))


def key_column(name: str, dtype: Any) -> Any:
    """The text key of a column's values, as :func:`privlab.data.schema._keys` makes it:
    ``str(v)``, integral floats as integers."""
    from pyspark.sql import functions as F

    col = F.col(name)
    if _is_float(dtype):
        whole = (~F.isnan(col)) & (col == F.floor(col))
        return F.when(whole, col.cast("long").cast("string")).otherwise(col.cast("string"))
    return col.cast("string")


def code_map(attr: Attribute) -> Any:
    """A map literal value key -> code of ``attr``'s domain (shipped to every task)."""
    from pyspark.sql import functions as F

    keys = _keys(np.asarray(attr.domain, dtype=object))
    if len(set(keys)) != len(keys):
        raise SchemaError(f"the domain of {attr.name!r} holds two values that print alike")
    if not keys.size:
        return F.create_map().cast("map<string,int>")
    pairs = [x for k, code in zip(keys, range(len(keys))) for x in (F.lit(str(k)), F.lit(code))]
    return F.create_map(*pairs)


def encode(df: Any, schema: Schema, columns: Sequence[str]) -> Any:
    """``df`` with an integer column ``<name>__code`` per column of ``columns``: the code of
    its value in ``schema``'s domain, null for a missing value or one outside the domain
    (:func:`check_codes` turns those into errors)."""
    fields = {f.name: f.dataType for f in df.schema.fields}
    out = df
    for c in columns:
        if c not in fields:
            raise SchemaError(f"unknown column {c!r}; columns are: {', '.join(fields)}")
        out = out.withColumn(c + CODE, code_map(schema[c])[key_column(c, fields[c])])
    return out


def missing_condition(name: str, dtype: Any) -> Any:
    """True where a value is missing: null, NaN, or a text marker (``?``, empty, ``NaN``)."""
    from pyspark.sql import functions as F

    col = F.col(name)
    cond = col.isNull()
    if _is_float(dtype):
        cond = cond | F.isnan(col)
    elif not _is_numeric(dtype):
        cond = cond | col.cast("string").isin(list(MISSING_MARKERS))
    return cond


def drop_missing(df: Any, columns: Sequence[str]) -> Any:
    """``df`` without the rows missing a value in one of ``columns``."""
    fields = {f.name: f.dataType for f in df.schema.fields}
    for c in columns:
        df = df.filter(~missing_condition(c, fields[c]))
    return df


def check_codes(coded: Any, columns: Sequence[str], *, source: Any = None) -> tuple[int, str]:
    """Raise as :meth:`Table.from_pandas` does when a column of ``coded`` (made by
    :func:`encode`) has a missing value or a value outside its domain; else return the row
    count and an order-free fingerprint of the codes (one aggregation)."""
    from pyspark.sql import functions as F

    fields = {f.name: f.dataType for f in coded.schema.fields}
    aggs = [F.count(F.lit(1)).alias("__n")]
    for c in columns:
        miss = missing_condition(c, fields[c])
        aggs.append(F.sum(F.when(miss, 1).otherwise(0)).alias(c + "__missing"))
        bad = F.col(c + CODE).isNull() & ~miss
        aggs.append(F.sum(F.when(bad, 1).otherwise(0)).alias(c + "__unknown"))
    codes = [F.col(c + CODE) for c in columns]
    if codes:  # the sum of 64-bit row hashes: the same whatever the rows' order or partitions
        aggs.append(F.sum(F.xxhash64(*codes).cast("decimal(38,0)")).alias("__hash"))
    row = coded.agg(*aggs).collect()[0]
    missing = {c: int(row[c + "__missing"] or 0) for c in columns}
    if any(missing.values()):
        listed = ", ".join(f"{c!r} ({n})" for c, n in missing.items() if n)
        raise MissingValuesError(
            f"missing values in column(s) {listed}; pass drop_missing=True (CLI: "
            "--drop-missing) to drop those rows"
        )
    for c in columns:
        if row[c + "__unknown"]:
            first = coded.filter(F.col(c + CODE).isNull()).select(c).limit(1).collect()[0][0]
            raise SchemaError(f"value {py_scalar(first)!r} is not in the domain of {c!r}")
    n = int(row["__n"])
    digest = hashlib.sha256(f"{columns}:{n}:{row['__hash'] if codes else 0}".encode())
    return n, "spark-xxhash64-sum:" + digest.hexdigest()


def spark_counts(df: Any, schema: Schema, columns: Sequence[str]) -> np.ndarray:
    """Counts (int64) of every cell of the joint domain of ``columns``, in the layout of
    :func:`privlab.data.counts.joint_counts` (first column slowest), every empty cell
    included: one aggregation of partial counts per partition, the few cells collected to
    the driver.  A missing or unknown value raises as :func:`check_codes` does."""
    from pyspark.sql import functions as F

    sizes = [schema[c].size for c in columns]
    coded = encode(df, schema, columns)
    rows = coded.groupBy(*[F.col(c + CODE) for c in columns]).count().collect()
    counts = np.zeros(int(np.prod(sizes, dtype=np.int64)), dtype=np.int64)
    if any(r[j] is None for r in rows for j in range(len(columns))):
        check_codes(coded, columns)  # raises, naming the column and the value
    if rows:
        cells = np.array([[r[j] for j in range(len(columns))] for r in rows], dtype=np.int64)
        flat = np.ravel_multi_index(tuple(cells.T), sizes) if columns else np.zeros(1, int)
        np.add.at(counts, flat, np.array([r["count"] for r in rows], dtype=np.int64))
    return counts


class SparkInput:
    """A Spark DataFrame with the privlab schema of every column: what the Spark engine's
    sanitizers take where the in-memory ones take a :class:`~privlab.data.table.Table`
    (the same ``schema``, ``names`` and ``counts``; no codes on the driver).

    Parameters
    ----------
    df
        The DataFrame (its rows stay in Spark).
    schema
        One attribute per column of ``df``, in its order.
    """

    def __init__(self, df: Any, schema: Schema) -> None:
        if list(schema.names) != list(df.columns):
            raise SchemaError(
                f"the schema lists {', '.join(schema.names)}; the frame has {', '.join(df.columns)}"
            )
        self.df = df
        self.schema = schema

    @property
    def names(self) -> tuple[str, ...]:
        return self.schema.names

    def counts(self, names: Sequence[str]) -> np.ndarray:
        """Joint counts over the public domain (:func:`spark_counts`)."""
        return spark_counts(self.df, self.schema, names)

    def with_roles(
        self, *, qi: Sequence[str] = (), sensitive: str | None = None, keep: Sequence[str] = ()
    ) -> SparkInput:
        return SparkInput(self.df, self.schema.with_roles(qi=qi, sensitive=sensitive, keep=keep))


def spark_input(
    data: Any,
    schema: Schema | None = None,
    *,
    domains: Mapping[str, Sequence[Any]] | None = None,
    drop_missing_rows: bool = False,
) -> SparkInput:
    """``data`` (a :class:`SparkInput`, a Spark DataFrame or a Parquet path) with a schema
    for every column: the attributes of ``schema``, ``domains`` declared, the rest read from
    the data (:func:`spark_schema`); roles come from ``schema``, whose attributes of
    columns the frame lacks are ignored."""
    if isinstance(data, SparkInput):
        return data
    df = spark_frame(data)
    if drop_missing_rows:
        df = drop_missing(df, df.columns)
    if schema is not None:  # the public schema may describe more columns than the frame has
        schema = Schema(tuple(a for a in schema.attributes if a.name in df.columns))
    return SparkInput(df, spark_schema(df, domains=domains, schema=schema))
