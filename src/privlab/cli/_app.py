"""The root command, the consoles and the options every subcommand shares (declared once).

Subcommand modules import typer and rich only; whatever a command needs beyond that it
imports inside the command, so ``privlab --help`` stays fast.
"""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from privlab.errors import PrivlabError

app = typer.Typer(
    name="privlab",
    help="Privacy-preserving data publishing and mining: sanitize, attack, learn, reproduce.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

out_console = Console()
if not out_console.is_terminal:  # pipes, files, make: never truncate table cells
    out_console = Console(width=240)
err_console = Console(stderr=True)

# -- options shared by the subcommands --------------------------------------------------------
InputArg = Annotated[str, typer.Argument(help="CSV/Parquet path or bundled dataset name.")]
ReleaseArg = Annotated[Path, typer.Argument(help="A release directory.")]
OutDirOpt = Annotated[Path, typer.Option("--out", help="Release directory to create.")]
QiOpt = Annotated[str, typer.Option("--qi", help="Comma-separated quasi-identifiers.")]
SensitiveOpt = Annotated[str, typer.Option("--sensitive", help="The sensitive attribute.")]
TargetOpt = Annotated[str, typer.Option("--target", help="The class column.")]
ColumnsOpt = Annotated[str, typer.Option("--columns", help="Comma-separated columns.")]
KeepOpt = Annotated[
    str | None,
    typer.Option(
        "--keep",
        help="Comma-separated columns to publish unchanged (insensitive); every column not "
        "named by a role is dropped.",
    ),
]
CustodyOpt = Annotated[
    Path | None,
    typer.Option(
        "--custody",
        help="Directory for the custodian's files (seed and salt, true values): never "
        "publish it; needed to replay or evaluate the release.",
    ),
]
ReplayOpt = Annotated[
    Path | None,
    typer.Option(
        "--replay",
        help="A release's custody directory: draw exactly that release again (same input).",
    ),
]
SeedOpt = Annotated[
    int | None, typer.Option("--seed", help="Random seed (default: OS entropy).", min=0)
]
RepublishOpt = Annotated[
    bool,
    typer.Option(
        "--republish",
        help="Publish although the registry holds a release of this input: two releases of "
        "one input reveal more together than either alone (see the README).",
    ),
]
NotForPublicationOpt = Annotated[
    bool,
    typer.Option(
        "--not-for-publication",
        help="An experiment: --seed is used as given (reproducible, not salted, no custody "
        "needed), the output says it must never be published, and the registry's epsilon "
        "ledger does not count it.",
    ),
]
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite an existing output.")]
DomainsOpt = Annotated[
    Path | None,
    typer.Option(
        "--domains",
        help="JSON file {column: [values, in order]} declaring public domains: a release "
        "may publish a declared domain whole (one read from the data it cuts or warns about).",
    ),
]
DomainOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--domain",
        help="COLUMN=v1|v2|... declares a public domain, in order (repeatable).",
    ),
]
DropMissingOpt = Annotated[
    bool, typer.Option("--drop-missing", help="Drop rows with missing values.")
]
EncodingOpt = Annotated[
    str | None,
    typer.Option(
        "--encoding",
        help="Text encoding of a CSV input (default UTF-8): latin-1, cp1252, utf-16, ...",
    ),
]
EpsilonOpt = Annotated[
    float, typer.Option("--epsilon", help="Privacy budget (> 0; 'inf' for no noise).")
]


class Engine(enum.StrEnum):
    """How a command reads its input: whole into memory, a Parquet file in batches, or Spark."""

    MEMORY = "memory"
    STREAM = "stream"
    SPARK = "spark"


EngineOpt = Annotated[
    Engine,
    typer.Option(
        "--engine",
        help="memory: read the whole input; stream: read a Parquet input --batch-rows rows "
        "at a time (out of core, bounded memory; domains as --domains/--domain declare); "
        "spark: a Parquet input that Spark reads (pip install 'privlab[spark]'; local[*] "
        "unless spark-submit sets the master), the outputs Parquet datasets.",
        case_sensitive=False,
    ),
]
BatchRowsOpt = Annotated[
    int, typer.Option("--batch-rows", help="Rows read at a time with --engine stream.", min=1)
]


# -- helpers ---------------------------------------------------------------------------------
def protects(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a command: its arguments ``names`` are inputs that no output may replace."""

    def deco(func: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(func)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            from privlab._io import protect_inputs

            bound = sig.bind_partial(*args, **kwargs)
            with protect_inputs(*(bound.arguments.get(n) for n in names)):
                return func(*args, **kwargs)

        return wrapper

    return deco


def split(names: str | None) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]`` (None -> [])."""
    return [n.strip() for n in (names or "").split(",") if n.strip()]


def one_line(message: str) -> str:
    """``message`` with every line-breaking or control character escaped (``\\x1e``), so
    that a value from a file (a column name, a cell) cannot split or forge an output line."""
    import unicodedata

    return "".join(
        c
        if c == " " or unicodedata.category(c)[0] not in "CZ"
        else c.encode("unicode_escape").decode("ascii")
        for c in message
    )


def note(message: str) -> None:
    """A one-line note on stderr (markup in ``message`` is printed as text)."""
    err_console.print(
        f"[yellow]note:[/] {escape(one_line(message))}", highlight=False, soft_wrap=True
    )


def say(message: str, *, stderr: bool = False) -> None:
    """A line on stdout, or on stderr when ``stderr`` (a command whose stdout is for a
    machine: ``report --json``); markup in ``message`` is printed as text."""
    console = err_console if stderr else out_console
    console.print(escape(message), highlight=False, soft_wrap=True)


def print_rows(rows: list[dict], title: str | None = None) -> None:
    """Print a list of dicts as a table (floats to 4 significant digits)."""
    if not rows:
        out_console.print("(no rows)")
        return
    from rich.table import Table as RichTable

    cols = list(dict.fromkeys(k for r in rows for k in r))
    t = RichTable(title=escape(title) if title else None)
    for c in cols:
        t.add_column(escape(str(c)), justify="right", overflow="fold")
    for r in rows:
        t.add_row(*(escape(fmt(r.get(c, ""))) for c in cols))
    out_console.print(t)


def fmt(v: object) -> str:
    if isinstance(v, tuple):  # (privlab, paper) pairs of `reproduce`
        return " / ".join(fmt(x) for x in v)
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def write_table_csv(frame: Any, out: Path, *, force: bool) -> None:
    """Write a pandas frame to the CSV file ``out``, atomically (an existing file only with
    ``force``)."""
    from privlab._csv import write_csv
    from privlab._io import atomic_path

    with atomic_path(out, force=force) as tmp:
        write_csv(frame, tmp, name=out.name)


def load_table(
    spec: str,
    *,
    drop_missing: bool = False,
    domains: Path | None = None,
    domain: list[str] | None = None,
    encoding: str | None = None,
) -> Any:
    """A bundled dataset by name or a CSV/Parquet path, as a privlab Table, with the public
    domains a ``--domains`` JSON file and ``--domain COLUMN=v1|v2`` options declare."""
    from privlab.data.datasets import load_input

    return load_input(
        spec,
        drop_missing=drop_missing,
        domains=declared_domains(domains, domain) or None,
        encoding=encoding,
    )


def spark_table(
    spec: str,
    *,
    domains: Path | None = None,
    domain: list[str] | None = None,
    drop_missing: bool = False,
    replay: Path | None = None,
    columns: list[str] | None = None,
) -> Any:
    """A Parquet path as a Spark input with the declared public domains (``columns``: only
    those, for a histogram; else every column, the undeclared read from the data)."""
    from privlab.data.engine import check_engine
    from privlab.data.spark import spark_frame, spark_input, spark_schema

    check_engine("spark")
    if replay is not None:
        raise PrivlabError("--replay is not supported with --engine spark")
    if not str(spec).lower().endswith((".parquet", ".pq")) and not Path(spec).is_dir():
        raise PrivlabError(f"--engine spark reads a Parquet file or directory, not {spec!r}")
    declared = declared_domains(domains, domain)
    df = spark_frame(Path(spec))
    if columns is not None:
        if drop_missing:
            from privlab.data.spark import drop_missing as drop

            df = drop(df, columns)
        known = [c for c in columns if c in declared and c in df.columns]
        return df, spark_schema(df, columns=known, domains=declared)
    return spark_input(df, domains=declared, drop_missing_rows=drop_missing)


def save_engine_release(release: Any, names: Any, out: Path, *, custody: Path | None,
                        force: bool, republish: bool = False) -> None:  # fmt: skip
    """Save a release of the Spark or stream engine (an ``EngineRelease``: its rows are
    drawn or computed as it is written) and its custody, with the notes of
    :func:`save_release` (``names``: the input's columns); its privacy report is left to
    ``privlab check OUT``."""
    release.save(out, custody=custody, force=force, republish=republish)
    dropped = [c for c in names if c not in release.schema.names]
    if dropped:
        note(f"not published (no role): {', '.join(dropped)}")
    if custody is not None:
        note(f"{custody} holds the seed, its salt and the true values: never publish it")
    where = "on Spark" if release.engine == "spark" else "while streaming"
    note(f"the privacy report is not computed {where}: run `privlab check {out}`")


def refuse_inside_release(path: Path, option: str = "--out") -> None:
    """Refuse an output inside a release folder (one that holds ``release.json``, at any
    depth above it): it would add a file to what will be published, and a release folder
    holds only what may be."""
    from privlab._release_files import RELEASE_FILE

    where = Path(path).resolve().parent
    for folder in (where, *where.parents):
        if (folder / RELEASE_FILE).is_file():
            raise PrivlabError(
                f"{option} {path} is inside the release folder {folder}: it would add a file to "
                "what will be published; write it elsewhere"
            )


def declared_domains(path: Path | None, specs: list[str] | None) -> dict[str, list]:
    """``{column: [values]}`` from a JSON file and ``COLUMN=v1|v2|...`` specs."""
    from privlab._io import read_json

    declared: dict[str, list] = {}
    if path is not None:
        declared = read_json(path, what="domains file")
        scalar = (str, int, float, bool)
        if not isinstance(declared, dict) or not all(
            isinstance(v, list) and all(isinstance(x, scalar) for x in v) for v in declared.values()
        ):
            raise PrivlabError(
                f"{path} must hold a JSON object {{column: [value, ...]}} with plain values"
            )
    given: dict[str, list] = {}
    for spec in specs or []:
        col, sep, vals = spec.partition("=")
        if not sep or not col.strip() or not vals.strip():
            raise PrivlabError(f"--domain {spec!r} must look like COLUMN=v1|v2|v3")
        col, values = col.strip(), [v.strip() for v in vals.split("|")]
        if given.get(col, values) != values:
            raise PrivlabError(f"--domain declares {col!r} twice, with other values: give it once")
        if col in declared and [str(v) for v in declared[col]] != values:
            raise PrivlabError(f"--domain declares {col!r}, which {path} declares otherwise")
        given[col] = values
    return {**declared, **given}


def open_input(
    spec: str,
    *,
    out: Path,
    custody: Path | None = None,
    seed: int | None = None,
    force: bool = False,
    drop_missing: bool = False,
    domains: Path | None = None,
    domain: list[str] | None = None,
    encoding: str | None = None,
    engine: str = "memory",
    replay: Path | None = None,
) -> Any:
    """The input of a sanitizing command, once its outputs are known to be writable.

    A seed alone never replays a release (privlab salts it with OS entropy kept in the
    custody directory), so ``--seed`` without ``--custody`` is refused; so is an existing
    output, before any work is done.  With ``engine="spark"`` the input is a Parquet path
    read by Spark (a :class:`privlab.data.spark.SparkInput`).
    """
    from privlab._io import check_output

    if seed is not None and custody is None:
        raise PrivlabError(
            "--seed needs --custody DIR: privlab mixes the seed with OS entropy kept in the "
            "custody directory (a seed alone is guessable), and only the two together replay "
            "the release"
        )
    check_output(out, force=force, kind="directory")
    if custody is not None:
        check_output(custody, force=force, kind="directory (--custody)")
    if engine == "spark":
        return spark_table(spec, domains=domains, domain=domain, drop_missing=drop_missing,
                           replay=replay)  # fmt: skip
    return load_table(
        spec, drop_missing=drop_missing, domains=domains, domain=domain, encoding=encoding
    )


def stream_input(spec: str, *, drop_missing: bool = False, encoding: str | None = None) -> Path:
    """The Parquet file ``--engine stream`` reads; other inputs and the options it does not
    serve are refused in one line."""
    path = Path(spec)
    if not path.is_file() or path.suffix.lower() not in (".parquet", ".pq"):
        raise PrivlabError(f"--engine stream reads a Parquet file (.parquet), not {spec!r}")
    if drop_missing:
        raise PrivlabError("--engine stream does not drop rows: remove missing values first")
    if encoding is not None:
        raise PrivlabError("--encoding is for CSV inputs; --engine stream reads Parquet")
    return path


def open_stream(
    spec: str,
    columns: list[str],
    *,
    domains: Path | None,
    domain: list[str] | None,
    drop_missing: bool = False,
    encoding: str | None = None,
    batch_rows: int | None = None,
    seed: int | None = None,
    custody: Path | None = None,
    replay: Path | None = None,
) -> tuple[Any, list[str]]:
    """The input of ``--engine stream``: a :class:`~privlab.data.stream.StreamInput` of the
    Parquet file's ``columns`` (declared domains from ``--domains``/``--domain``), and the
    file's column names; the options it does not serve are refused in one line."""
    from privlab.data.stream import DEFAULT_BATCH_ROWS, parquet_columns
    from privlab.data.stream import stream_input as stream_source

    if replay is not None:
        raise PrivlabError("--replay is not available with --engine stream")
    if seed is not None and custody is None:
        raise PrivlabError("--seed needs --custody DIR (see --help)")
    path = stream_input(spec, drop_missing=drop_missing, encoding=encoding)
    source = stream_source(
        path, domains=declared_domains(domains, domain), columns=columns,
        batch_rows=DEFAULT_BATCH_ROWS if batch_rows is None else batch_rows,
    )  # fmt: skip
    return source, parquet_columns(path)


def release_rng(seed: int | None, replay: Path | None, table: Any, method: str) -> Any:
    """The ``rng`` of a sanitizer: the seed, or the seed record of ``--replay``'s custody
    (checked to belong to a release of this method and this input)."""
    if replay is None:
        return seed
    if seed is not None:
        raise PrivlabError("give --seed or --replay, not both")
    from privlab.errors import CustodyError
    from privlab.release.base import Custody

    custody = Custody.load(replay)
    if custody.method != method:
        raise CustodyError(f"{replay} is the custody of a {custody.method!r} release, not {method}")
    if custody.input_sha256 not in (None, table.fingerprint()):
        raise CustodyError(
            f"{replay} belongs to a release of another input (the input's fingerprint differs)"
        )
    return custody.replay()


def save_release(
    release: Any,
    table: Any,
    out: Path,
    *,
    custody: Path | None,
    force: bool,
    check: bool = True,
    covers: Any = None,
    why_dropped: str = "no role",
    keep_hint: bool = True,
    custody_holds: str = "the seed, its salt and the true values",
    republish: bool = False,
) -> Any:
    """Save a release (and its custody), say which input columns it does not publish, and,
    with ``check``, return its privacy report after printing the report's warnings.

    ``covers`` names the input columns the release publishes in some form (default: its
    published columns; a marginals release publishes generalized columns under other
    names); ``why_dropped`` says why the others are left out, ``keep_hint`` whether the
    command has ``--keep``, ``custody_holds`` what the custody directory keeps,
    ``republish`` whether the custodian acknowledges an earlier release of the input.
    """
    release.save(out, custody=custody, force=force, republish=republish)
    covered = set(release.schema.names if covers is None else covers)
    dropped = [c for c in table.names if c not in covered]
    if dropped:
        hint = "; name a column with --keep to publish it unchanged" if keep_hint else ""
        note(f"not published ({why_dropped}): {', '.join(dropped)}{hint}")
    if custody is not None:
        note(f"{custody} holds {custody_holds}: it is the custodian's, never publish it")
    if not check:
        return None
    report = release.privacy()
    report_privacy_warnings(report)
    return report


def report_privacy_warnings(report: Any) -> None:
    for w in report.warnings():
        err_console.print(f"[red]warning:[/] {escape(w)}", highlight=False, soft_wrap=True)
