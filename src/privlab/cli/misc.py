"""Other commands: ``datasets``, ``experiments``, ``reproduce``, ``demo``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from privlab.cli._app import ForceOpt, app, note, print_rows, say

datasets_app = typer.Typer(help="The bundled UCI datasets.", no_args_is_help=True)
app.add_typer(datasets_app, name="datasets")


# --- datasets --------------------------------------------------------------------------------
@datasets_app.command("list")
def datasets_list() -> None:
    """List the bundled datasets."""
    from privlab.data.datasets import DATASETS

    print_rows([d.to_dict() for d in DATASETS.values()], title="bundled datasets")


@datasets_app.command("export")
def datasets_export(
    name: Annotated[str, typer.Argument(help="Dataset name (see `privlab datasets list`).")],
    out: Annotated[Path, typer.Option("--out", help="CSV or Parquet file to write.")],
    force: ForceOpt = False,
) -> None:
    """Write a bundled dataset to CSV (or Parquet, by the file's suffix)."""
    from privlab._csv import write_csv
    from privlab._io import atomic_path
    from privlab.data.datasets import load_dataset

    df = load_dataset(name).to_pandas()
    with atomic_path(out, force=force) as tmp:
        if out.suffix.lower() in (".parquet", ".pq"):
            df.to_parquet(tmp, index=False)
        else:
            write_csv(df, tmp, name=out.name)
    say(f"wrote {len(df)} rows of {name} to {out}")


# --- reproductions ---------------------------------------------------------------------------
#: The --seed of `reproduce` and `demo`.
ExperimentSeedOpt = Annotated[int, typer.Option("--seed", help="Random seed.")]


@app.command()
def experiments() -> None:
    """List the registered reproductions."""
    from privlab.experiments import catalogue

    print_rows(catalogue(), title="reproductions (run with `privlab reproduce ID`)")


@app.command()
def reproduce(
    experiment_id: Annotated[str, typer.Argument(metavar="ID", help="See `privlab experiments`.")],
    quick: Annotated[bool, typer.Option("--quick", help="A shorter run (about a minute).")] = False,
    seed: ExperimentSeedOpt = 0,
    out: Annotated[
        Path | None, typer.Option("--out", help="Output directory (default results/ID).")
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Reproduce a table or figure of the source documents; writes OUT/result.json."""
    from privlab.experiments import run_experiment, side_by_side

    res = run_experiment(experiment_id, quick=quick, seed=seed, out=out, force=force)
    print_rows(res.shown_rows(), title=f"{experiment_id}: privlab")
    beside = side_by_side(res.shown_rows(), res.paper)
    if beside is not None:
        print_rows(beside, title=f"{experiment_id}: privlab / paper")
    elif res.paper:
        print_rows(res.paper, title=f"{experiment_id}: paper")
    if res.notes:
        say(res.notes)
    where = out or Path("results") / experiment_id
    say(f"{experiment_id} took {res.seconds:.1f} s; results in {where}")


# --- demo ------------------------------------------------------------------------------------
@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="Where to write the demo's files.")] = Path(
        "demo-out"
    ),
    seed: ExperimentSeedOpt = 0,
    custody: Annotated[
        Path | None,
        typer.Option(
            "--custody",
            help="Where to write the custody directories (the true values, seeds, each "
            "person's risk), apart from --out. Default: OUT.custody beside it.",
        ),
    ] = None,
    force: ForceOpt = False,
    iterations: Annotated[
        int,
        typer.Option(
            "--iterations",
            help="Iterations per chain of each attack (default 8,000; fewer is quicker and "
            "more often REVIEW: an attack that has not converged is never a PASS).",
            min=100,
            max=1_000_000,
        ),
    ] = 8000,
) -> None:
    """A short audit of Adult: Anatomy at l = 2, 3, 4, each attacked and judged; one report."""
    import textwrap

    from privlab.demo import LEGEND, console_rows, run_demo

    def step(value, rep) -> None:
        reasons = "; ".join(rep.verdict["reasons"])
        for line in textwrap.wrap(f"l = {value}: {rep.verdict['level']}: {reasons}", 78,
                                  subsequent_indent="    "):  # fmt: skip
            say(line)

    from privlab.demo import DEMO_MAX_AT_RISK

    say("Anatomy on Adult (QI workclass, relationship, sex, salary; sensitive occupation)")
    say(f"limit: at most {DEMO_MAX_AT_RISK:.0%} of people at risk (a demo's; the default is 5%)")
    audit = run_demo(
        out, seed=seed, force=force, on_step=step, custody=custody, iterations=iterations
    )
    print_rows(console_rows(audit), title="the attack on each release (percent)")
    for line in textwrap.wrap(LEGEND, 78):
        say(line)
    for line in textwrap.wrap(audit.recommendation, 78):
        say(line)
    say(f"report: {out / 'report.html'}")
    say(f"rerun or edit: privlab audit {out / 'audit.toml'} --out audit-out")
    note(
        f"{audit.custody} holds the true values, the seeds and each person's risk: never "
        f"publish it; {out} holds no custody (publish one release of it at most)"
    )
