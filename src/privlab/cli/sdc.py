"""The statistics office's masking methods: ``privlab mask microaggregation | noise | swap |
topcode`` (numeric columns) and ``privlab suppress`` (local suppression to k-anonymity)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from privlab.cli._app import (
    BatchRowsOpt,
    CustodyOpt,
    DropMissingOpt,
    EncodingOpt,
    Engine,
    EngineOpt,
    ForceOpt,
    InputArg,
    KeepOpt,
    OutDirOpt,
    ReplayOpt,
    RepublishOpt,
    SeedOpt,
    app,
    open_input,
    print_rows,
    protects,
    release_rng,
    save_engine_release,
    save_release,
    say,
    split,
)
from privlab.errors import PrivlabError

mask_app = typer.Typer(
    help="Mask numeric columns as statistics offices do (sdcMicro's methods): "
    "microaggregation, noise, rank swapping, top and bottom coding. The rows are published "
    "in random order with the columns kept (--keep, --sensitive); the custody holds each "
    "row's original values (the report's record linkage is judged against them), the seed "
    "and the information loss against the input.",
    no_args_is_help=True,
)
app.add_typer(mask_app, name="mask")

ColumnsArg = Annotated[
    str, typer.Option("--columns", help="Comma-separated numeric columns to mask.")
]
WeightsOpt = Annotated[
    str | None,
    typer.Option(
        "--weights",
        help="A column of sampling weights (positive numbers), published unchanged; the "
        "method, the information loss and the report's risk read it.",
    ),
]
MaskSensitiveOpt = Annotated[
    str | None,
    typer.Option("--sensitive", help="A column published unchanged as the sensitive one."),
]


def _mask(input: str, out: Path, custody, seed, replay, drop_missing, encoding, force,
          republish, run: Any, what: str, engine: Engine = Engine.MEMORY,
          batch_rows: int = 1 << 20, read: list[str] | None = None) -> None:  # fmt: skip
    """Read the input, draw the release with ``run(table, rng, **engine_options)``, save it,
    say what was done and print the information loss measured against the input
    (custodian's).  With ``engine`` stream or spark the input is a Parquet file (``read``:
    the columns the command names, for --drop-missing on Spark) and the release an engine's,
    saved as its rows are drawn."""
    if engine is not Engine.MEMORY:
        _mask_engine(input, out, custody, seed, replay, drop_missing, encoding, force,
                     republish, run, what, engine, batch_rows, read or [])  # fmt: skip
        return
    table = open_input(input, out=out, custody=custody, seed=seed, force=force,
                       drop_missing=drop_missing, encoding=encoding, replay=replay)  # fmt: skip
    release = run(table, release_rng(seed, replay, table, "masking"))
    save_release(release, table, out, custody=custody, force=force, republish=republish,
                 check=False)  # fmt: skip
    say(f"{what} of {release.n_rows:,} records ({', '.join(release.masked)}) -> {out}")
    _print_loss(release.custody.input_measures if release.custody else None)


def _mask_engine(input: str, out: Path, custody, seed, replay, drop_missing, encoding, force,
                 republish, run: Any, what: str, engine: Engine, batch_rows: int,
                 read: list[str]) -> None:  # fmt: skip
    """``mask noise|topcode --engine stream|spark``: the library's ``engine=`` of the method
    on a Parquet input (the masked columns are read as numbers, never through a domain),
    saved with the engine's writer."""
    from privlab._io import check_output
    from privlab.cli._app import stream_input

    if replay is not None:
        raise PrivlabError(f"--replay is not available with --engine {engine.value}")
    if seed is not None and custody is None:
        raise PrivlabError("--seed needs --custody DIR (see --help)")
    if encoding is not None:
        raise PrivlabError(f"--encoding is for CSV inputs; --engine {engine.value} reads Parquet")
    check_output(out, force=force, kind="directory")
    if custody is not None:
        check_output(custody, force=force, kind="directory (--custody)")
    if engine is Engine.STREAM:
        from privlab.data.stream import parquet_columns

        path = stream_input(input, drop_missing=drop_missing)
        release = run(path, seed, engine="stream", batch_rows=batch_rows)
        names, where = parquet_columns(path), "streamed"
    else:
        from privlab.data.engine import check_engine
        from privlab.data.spark import spark_frame

        check_engine("spark")
        if not str(input).lower().endswith((".parquet", ".pq")) and not Path(input).is_dir():
            raise PrivlabError(f"--engine spark reads a Parquet file or directory, not {input!r}")
        df = spark_frame(Path(input))
        if drop_missing:
            from privlab.data.spark import drop_missing as drop

            df = drop(df, [c for c in read if c in df.columns])
        release = run(df, seed, engine="spark")
        names, where = list(df.columns), "Spark"
    save_engine_release(release, names, out, custody=custody, force=force, republish=republish)
    say(f"{what} of {release.n_rows:,} records ({', '.join(release.masked)}, {where}) -> {out}")
    _print_loss(release.input_measures)


def _print_loss(measures: dict | None) -> None:
    loss = (measures or {}).get("utility")
    if loss:
        rows = [{"measure": k, "value": v} for k, v in loss.items() if isinstance(v, float)]
        if isinstance(loss.get("pmse"), dict) and loss["pmse"].get("ratio") is not None:
            rows.append({"measure": "pmse / its null", "value": loss["pmse"]["ratio"]})
        print_rows(rows, title="information loss against the input (the custodian's: not "
                   "published)")  # fmt: skip


@mask_app.command("microaggregation")
@protects("input")
def microaggregation(
    input: InputArg,
    columns: ColumnsArg,
    k: Annotated[int, typer.Option("--k", help="The smallest group (>= 2).")],
    out: OutDirOpt,
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help="mdav (multivariate, Domingo-Ferrer & Torra 2005), univariate (each "
            "column apart, the optimum of Hansen & Mukherjee 2003) or medoids (categorical "
            "columns: MDAV on the Hamming distance, each group replaced by its medoid record).",
        ),
    ] = "mdav",
    refine: Annotated[
        bool,
        typer.Option(
            "--refine",
            help="Improve MDAV's groups by local search (moves, swaps, splits and merges "
            "that lower the information loss; not sdcMicro's result any more).",
        ),
    ] = False,
    sdcmicro: Annotated[
        bool,
        typer.Option(
            "--sdcmicro",
            help="mdav in sdcMicro's own arithmetic (single-precision distances, its "
            "Mdav.cpp): the groups and values of sdcMicro's microaggregation(method = "
            '"mdav"), which part from the exact ones where float rounding makes or breaks '
            "a tie. No --weights.",
        ),
    ] = False,
    keep: KeepOpt = None,
    sensitive: MaskSensitiveOpt = None,
    weights: WeightsOpt = None,
    custody: CustodyOpt = None,
    seed: SeedOpt = None,
    replay: ReplayOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
    republish: RepublishOpt = False,
) -> None:
    """Replace each record's values by the mean of its group of at least k records."""
    from privlab.publish.masking import microaggregate

    compat = "sdcmicro" if sdcmicro else "exact"

    def run(table, rng):
        return microaggregate(table, split(columns), k=k, method=method, keep=split(keep),
                              sensitive=sensitive, weights=weights, refine=refine,
                              rng=rng, compat=compat)  # fmt: skip

    how = f"{method}, sdcMicro's arithmetic" if sdcmicro else method
    _mask(input, out, custody, seed, replay, drop_missing, encoding, force, republish, run,
          f"microaggregated ({how}{', refined' if refine else ''}, k = {k})")  # fmt: skip


@mask_app.command("noise")
@protects("input")
def noise(
    input: InputArg,
    columns: ColumnsArg,
    out: OutDirOpt,
    level: Annotated[
        float,
        typer.Option(
            "--noise",
            help="The noise's standard deviation, in percent of each column's (additive) or "
            "alpha x 100 of the covariance (correlated, kim), as sdcMicro's addNoise.",
        ),
    ] = 150.0,
    method: Annotated[
        str, typer.Option("--method", help="additive, correlated (Brand 2002) or kim (Kim 1986).")
    ] = "additive",
    keep: KeepOpt = None,
    sensitive: MaskSensitiveOpt = None,
    weights: WeightsOpt = None,
    custody: CustodyOpt = None,
    seed: SeedOpt = None,
    replay: ReplayOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
    republish: RepublishOpt = False,
    engine: EngineOpt = Engine.MEMORY,
    batch_rows: BatchRowsOpt = 1 << 20,
) -> None:
    """Add random noise to numeric columns.  With --engine stream a Parquet input is read
    batch by batch (a first pass for the columns' deviations, a second for the noise) and
    its rows shuffled out of core; with --engine spark Spark does it: both write
    masked.parquet (custody: truth.parquet); the information loss has no pMSE there."""
    from privlab.publish.masking import add_noise

    def run(table, rng, **engine):
        return add_noise(table, split(columns), noise=level, method=method, keep=split(keep),
                         sensitive=sensitive, weights=weights, rng=rng, **engine)  # fmt: skip

    _mask(input, out, custody, seed, replay, drop_missing, encoding, force, republish, run,
          f"added {method} noise ({level:g})", engine, batch_rows,
          [*split(columns), *split(keep), *filter(None, (sensitive, weights))])  # fmt: skip


@mask_app.command("swap")
@protects("input")
def swap(
    input: InputArg,
    columns: ColumnsArg,
    out: OutDirOpt,
    p: Annotated[
        float,
        typer.Option("--p", help="The largest swap distance, in percent of the records (rank)."),
    ] = 15.0,
    keep: KeepOpt = None,
    sensitive: MaskSensitiveOpt = None,
    weights: WeightsOpt = None,
    custody: CustodyOpt = None,
    seed: SeedOpt = None,
    replay: ReplayOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
    republish: RepublishOpt = False,
) -> None:
    """Rank swapping (Moore 1996): each value exchanged with one of close rank."""
    from privlab.publish.masking import rank_swap

    def run(table, rng):
        return rank_swap(table, split(columns), p=p, keep=split(keep), sensitive=sensitive,
                         weights=weights, rng=rng)  # fmt: skip

    _mask(input, out, custody, seed, replay, drop_missing, encoding, force, republish, run,
          f"rank-swapped (p = {p:g}%)")  # fmt: skip


@mask_app.command("topcode")
@protects("input")
def topcode(
    input: InputArg,
    columns: ColumnsArg,
    out: OutDirOpt,
    top: Annotated[float | None, typer.Option("--top", help="The top code.")] = None,
    bottom: Annotated[float | None, typer.Option("--bottom", help="The bottom code.")] = None,
    top_quantile: Annotated[
        float | None,
        typer.Option(
            "--top-quantile",
            help="The top code as a quantile of the data (read from private data: warned).",
        ),
    ] = None,
    bottom_quantile: Annotated[
        float | None,
        typer.Option("--bottom-quantile", help="The bottom code as a quantile of the data."),
    ] = None,
    keep: KeepOpt = None,
    sensitive: MaskSensitiveOpt = None,
    weights: WeightsOpt = None,
    custody: CustodyOpt = None,
    seed: SeedOpt = None,
    replay: ReplayOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
    republish: RepublishOpt = False,
    engine: EngineOpt = Engine.MEMORY,
    batch_rows: BatchRowsOpt = 1 << 20,
) -> None:
    """Top and bottom coding: values beyond a code replaced by it.  With --engine stream (a
    Parquet input read batch by batch, rows shuffled out of core) or --engine spark the
    codes must be given (--top, --bottom: a quantile needs the column sorted); both write
    masked.parquet (custody: truth.parquet)."""
    from privlab.publish.masking import top_bottom_code

    def run(table, rng, **engine):
        return top_bottom_code(table, split(columns), top=top, bottom=bottom,
                               top_quantile=top_quantile, bottom_quantile=bottom_quantile,
                               keep=split(keep), sensitive=sensitive, weights=weights,
                               rng=rng, **engine)  # fmt: skip

    _mask(input, out, custody, seed, replay, drop_missing, encoding, force, republish, run,
          "top/bottom coded", engine, batch_rows,
          [*split(columns), *split(keep), *filter(None, (sensitive, weights))])  # fmt: skip


@app.command()
@protects("input")
def suppress(
    input: InputArg,
    qi: Annotated[str, typer.Option("--qi", help="Comma-separated quasi-identifiers.")],
    k: Annotated[int, typer.Option("--k", help="Every record compatible with k or more.")],
    out: OutDirOpt,
    sensitive: MaskSensitiveOpt = None,
    keep: KeepOpt = None,
    importance: Annotated[
        str | None,
        typer.Option(
            "--importance",
            help="Comma-separated ranks of the quasi-identifiers, 1 = most important "
            "(suppressed last), as sdcMicro's importance (default: fewer values first).",
        ),
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help="local (sdcMicro's greedy, each record at risk suppressed on its own), "
            "heuristic (the fewest cells: often k-1 records blanked whole) or optimal "
            "(an exact 0-1 program, small tables only).",
        ),
    ] = "local",
    custody: CustodyOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
    republish: RepublishOpt = False,
) -> None:
    """Local suppression to k-anonymity (sdcMicro's localSuppression): the fewest cells of
    the quasi-identifiers published as *, a * matching any value; every record kept."""
    from privlab.publish.generalization import suppress as run

    ranks = None
    if importance is not None:
        try:
            ranks = [int(v) for v in split(importance)]
        except ValueError:
            raise PrivlabError(
                f"--importance must list whole numbers, not {importance!r}"
            ) from None
    table = open_input(input, out=out, custody=custody, force=force, drop_missing=drop_missing,
                       encoding=encoding)  # fmt: skip
    release = run(table, split(qi), k, sensitive=sensitive, keep=split(keep), importance=ranks,
                  method=method)  # fmt: skip
    save_release(release, table, out, custody=custody, force=force, republish=republish,
                 check=False)  # fmt: skip
    done = release.custody.input_measures["local_suppression"]
    say(
        f"suppressed {done['suppressed']:,} cells of {done['records_touched']:,} records "
        f"({method}, k = {k}, smallest fk {done['k_reached']}) -> {out}"
    )
