"""``privlab synth mst | aim``: differentially private synthetic microdata."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from privlab.cli._app import (
    CustodyOpt,
    DomainOpt,
    DomainsOpt,
    DropMissingOpt,
    EncodingOpt,
    ForceOpt,
    InputArg,
    OutDirOpt,
    ReplayOpt,
    SeedOpt,
    app,
    note,
    open_input,
    print_rows,
    protects,
    release_rng,
    save_release,
    say,
    split,
)
from privlab.cli.dp import BoundsOpt, public_bounds

synth_app = typer.Typer(
    help="Differentially private synthetic microdata: noisy marginals (discrete Gaussian, "
    "zCDP), a graphical model fitted by private-pgm, records drawn from it. Needs "
    "pip install 'privlab[synth]'.",
    no_args_is_help=True,
)
app.add_typer(synth_app, name="synth")

SynthEpsilonOpt = Annotated[
    float, typer.Option("--epsilon", help="The privacy budget epsilon (> 0, finite).")
]
DeltaOpt = Annotated[
    float,
    typer.Option("--delta", help="The delta of (epsilon, delta)-DP (default 1e-9)."),
]
ColumnsOpt = Annotated[
    str | None,
    typer.Option(
        "--columns", help="Comma-separated columns to synthesize (default: every column)."
    ),
]
QiOpt = Annotated[
    str | None,
    typer.Option("--qi", help="Columns marked quasi-identifiers in the release (for the report)."),
]
SensitiveOpt = Annotated[
    str | None, typer.Option("--sensitive", help="The column marked sensitive (for the report).")
]
BinsOpt = Annotated[
    int, typer.Option("--bins", help="Equal-width bins of a numeric column (default 32).")
]
DomainFromDataOpt = Annotated[
    bool,
    typer.Option(
        "--domain-from-data",
        help="Accept domains and bounds read from the data (their values are then not "
        "protected: a value one record holds appears in the synthetic data's domain).",
    ),
]
RowsOpt = Annotated[
    int | None,
    typer.Option(
        "--rows", help="Rows to draw (default: the model's noisy estimate of the input's)."
    ),
]
ItersOpt = Annotated[
    int | None,
    typer.Option("--iters", help="Mirror-descent iterations of private-pgm's fit."),
]


def _roles(table: Any, columns: list[str] | None, qi: str | None, sensitive: str | None) -> Any:
    """The input with the roles the release will carry: ``--qi`` and ``--sensitive`` as
    given, every other synthesized column kept (insensitive)."""
    from privlab.data.table import Table

    names = columns or list(table.names)
    q = split(qi) if qi else []
    keep = [c for c in names if c not in q and c != sensitive]
    return Table(table.codes, table.schema.with_roles(qi=q, sensitive=sensitive, keep=keep)), names


def _run(input, out, custody, seed, replay, drop_missing, encoding, force, domains, domain,
         columns, qi, sensitive, bounds, run, what: str) -> None:  # fmt: skip
    from privlab.publish.synthetic import import_mbi

    import_mbi()  # without the synth extra: one line saying how to install it, before any work
    table = open_input(input, out=out, custody=custody, seed=seed, force=force,
                       drop_missing=drop_missing, domains=domains, domain=domain,
                       encoding=encoding, replay=replay)  # fmt: skip
    table, names = _roles(table, split(columns) if columns else None, qi, sensitive)
    public = {c: b for c, b in public_bounds(input, bounds).items() if c in names}
    release = run(table, names, public, release_rng(seed, replay, table, "dp-synthetic"))
    save_release(release, table, out, custody=custody, force=force, check=False,
                 why_dropped="not synthesized",
                 custody_holds="the seed, its salt and the workload error against the input",
                 keep_hint=False)  # fmt: skip
    p = release.params
    say(
        f"{what}: {release.n_rows:,} synthetic records of {len(names)} columns, "
        f"(epsilon = {p['epsilon']:.4g}, delta = {p['delta']:g})-DP from rho = {p['rho']:.4g} "
        f"({len(p['measurements'])} marginals measured) -> {out}"
    )
    err = release.workload_error()
    if err:
        print_rows(
            [{"marginals": k, "mean error (TVD)": v["mean"], "worst": v["max"],
              "worst marginal": ", ".join(v["worst"])} for k, v in err.items()],
            title="workload error against the input (the custodian's: not published)",
        )  # fmt: skip
    if custody is None:
        note("without --custody the release cannot be replayed, nor its workload error kept")


@synth_app.command("mst")
@protects("input")
def mst_cmd(
    input: InputArg,
    epsilon: SynthEpsilonOpt,
    out: OutDirOpt,
    delta: DeltaOpt = 1e-9,
    columns: ColumnsOpt = None,
    qi: QiOpt = None,
    sensitive: SensitiveOpt = None,
    bounds: BoundsOpt = None,
    bins: BinsOpt = 32,
    domain_from_data: DomainFromDataOpt = False,
    rows: RowsOpt = None,
    iters: ItersOpt = None,
    domains: DomainsOpt = None,
    domain: DomainOpt = None,
    custody: CustodyOpt = None,
    seed: SeedOpt = None,
    replay: ReplayOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
) -> None:
    """MST (McKenna, Miklau & Sheldon 2021): every 1-way marginal, a private maximum
    spanning tree of 2-way marginals, a graphical model through them."""
    from privlab.publish.synthetic import MST_ITERS, mst

    def run(table, names, public, rng):
        return mst(table, epsilon=epsilon, delta=delta, columns=names, bounds=public, bins=bins,
                   domain_from_data=domain_from_data, rows=rows, iters=iters or MST_ITERS,
                   rng=rng, progress=True)  # fmt: skip

    _run(input, out, custody, seed, replay, drop_missing, encoding, force, domains, domain,
         columns, qi, sensitive, bounds, run, "MST")  # fmt: skip


@synth_app.command("aim")
@protects("input")
def aim_cmd(
    input: InputArg,
    epsilon: SynthEpsilonOpt,
    out: OutDirOpt,
    delta: DeltaOpt = 1e-9,
    columns: ColumnsOpt = None,
    qi: QiOpt = None,
    sensitive: SensitiveOpt = None,
    bounds: BoundsOpt = None,
    bins: BinsOpt = 32,
    domain_from_data: DomainFromDataOpt = False,
    rows: RowsOpt = None,
    degree: Annotated[
        int, typer.Option("--degree", help="The workload: every DEGREE-way marginal (default 2).")
    ] = 2,
    max_model_size: Annotated[
        float,
        typer.Option(
            "--max-model-size",
            help="The largest model in MB (the paper's 80; smaller is faster and coarser).",
        ),
    ] = 80.0,
    iters: ItersOpt = None,
    domains: DomainsOpt = None,
    domain: DomainOpt = None,
    custody: CustodyOpt = None,
    seed: SeedOpt = None,
    replay: ReplayOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
) -> None:
    """AIM (McKenna et al. 2022): rounds of choosing the workload marginal the model explains
    worst and measuring it, until the budget is spent (minutes on CPU)."""
    from privlab.publish.synthetic import AIM_ITERS, aim

    def run(table, names, public, rng):
        return aim(table, epsilon=epsilon, delta=delta, columns=names, bounds=public, bins=bins,
                   domain_from_data=domain_from_data, rows=rows, degree=degree,
                   max_model_size=max_model_size, iters=iters or AIM_ITERS, rng=rng,
                   progress=True)  # fmt: skip

    _run(input, out, custody, seed, replay, drop_missing, encoding, force, domains, domain,
         columns, qi, sensitive, bounds, run, "AIM")  # fmt: skip


__all__ = ["synth_app"]
