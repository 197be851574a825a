"""The ``privlab`` command line: thin wrappers, one library function per subcommand.

Errors from privlab (:class:`privlab.errors.PrivlabError`) print as one line on stderr and
exit with status 2; outputs are written atomically and existing outputs are refused unless
``--force`` is given.  Inputs are never modified.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table as RichTable

from privlab.errors import PrivlabError

app = typer.Typer(
    name="privlab",
    help="Privacy-preserving data publishing and mining: sanitize, attack, learn, reproduce.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
datasets_app = typer.Typer(help="The bundled UCI datasets.", no_args_is_help=True)
app.add_typer(datasets_app, name="datasets")

out_console = Console()
err_console = Console(stderr=True)

ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite an existing output.")]
SeedOpt = Annotated[int | None, typer.Option("--seed", help="Random seed (default: OS entropy).")]


def _split(names: str) -> list[str]:
    return [n.strip() for n in names.split(",") if n.strip()]


def _print_rows(rows: list[dict], title: str | None = None) -> None:
    """Print a list of dicts as a table (floats to 4 significant digits)."""
    if not rows:
        out_console.print("(no rows)")
        return
    cols = list(dict.fromkeys(k for r in rows for k in r))
    t = RichTable(title=title)
    for c in cols:
        t.add_column(str(c), justify="right")
    for r in rows:
        t.add_row(*(_fmt(r.get(c, "")) for c in cols))
    out_console.print(t)


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


# --- datasets --------------------------------------------------------------------------------
@datasets_app.command("list")
def datasets_list() -> None:
    """List the bundled datasets."""
    from privlab.data.datasets import DATASETS

    _print_rows([d.to_dict() for d in DATASETS.values()], title="bundled datasets")


@datasets_app.command("export")
def datasets_export(
    name: Annotated[str, typer.Argument(help="Dataset name (see `privlab datasets list`).")],
    out: Annotated[Path, typer.Option("--out", help="CSV or Parquet file to write.")],
    force: ForceOpt = False,
) -> None:
    """Write a bundled dataset to CSV (or Parquet, by the file's suffix)."""
    from privlab._io import atomic_path
    from privlab.data.datasets import load_dataset

    df = load_dataset(name).to_pandas()
    with atomic_path(out, force=force) as tmp:
        if out.suffix.lower() in (".parquet", ".pq"):
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False)
    out_console.print(f"wrote {len(df)} rows of {name} to {out}")


# --- anatomy ---------------------------------------------------------------------------------
@app.command()
def anatomize(
    input: Annotated[str, typer.Argument(help="CSV/Parquet path or bundled dataset name.")],
    qi: Annotated[str, typer.Option("--qi", help="Comma-separated quasi-identifiers.")],
    sensitive: Annotated[str, typer.Option("--sensitive", help="The sensitive attribute.")],
    l: Annotated[int, typer.Option("--l", help="Diversity: distinct values per group (>= 2).")],
    out: Annotated[Path, typer.Option("--out", help="Release directory to create.")],
    seed: SeedOpt = None,
    drop_missing: Annotated[
        bool, typer.Option("--drop-missing", help="Drop rows with missing values.")
    ] = False,
    keep_truth: Annotated[
        bool,
        typer.Option("--keep-truth", help="Also write truth.csv (custodian only, never publish)."),
    ] = False,
    force: ForceOpt = False,
) -> None:
    """Publish a table with Anatomy (Xiao & Tao 2006): qit.csv, st.csv, release.json."""
    from privlab.data.table import load_input
    from privlab.publish.anatomy import anatomize as run

    table = load_input(input, drop_missing=drop_missing)
    release = run(table, qi=_split(qi), sensitive=sensitive, l=l, rng=seed)
    release.save(out, keep_truth=keep_truth, force=force)
    p = release.privacy()
    out_console.print(
        f"anatomized {release.n_rows} tuples into {release.n_groups} groups "
        f"(k = {p.k}, distinct l = {p.distinct_l}) -> {out}"
    )
    if keep_truth:
        err_console.print(
            f"[yellow]note:[/] {out}/truth.csv holds every tuple's true sensitive value: it is "
            "the custodian's file for evaluating attacks and must never be published."
        )


@app.command()
def check(directory: Annotated[Path, typer.Argument(help="A release directory.")]) -> None:
    """Print a release's privacy measures (k, l-diversity, ...)."""
    from privlab.publish.release import load_release

    release = load_release(directory)
    rows = [{"measure": k, "value": v} for k, v in release.privacy().to_dict().items()]
    _print_rows(rows, title=f"{release.method} release {directory}")


# --- reproductions ---------------------------------------------------------------------------
@app.command()
def experiments() -> None:
    """List the registered reproductions."""
    from privlab.experiments import discover

    _print_rows(
        [{"id": e.id, "title": e.title, "source": e.source} for e in discover().values()],
        title="reproductions (run with `privlab reproduce ID`)",
    )


@app.command()
def reproduce(
    experiment_id: Annotated[str, typer.Argument(metavar="ID", help="See `privlab experiments`.")],
    quick: Annotated[bool, typer.Option("--quick", help="A shorter run (about a minute).")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
    out: Annotated[
        Path | None, typer.Option("--out", help="Output directory (default results/ID).")
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Reproduce a table or figure of the source documents; writes OUT/result.json."""
    from privlab.experiments import run_experiment

    res = run_experiment(experiment_id, quick=quick, seed=seed, out=out, force=force)
    _print_rows(res.rows, title=f"{experiment_id}: privlab")
    if res.paper:
        _print_rows(res.paper, title=f"{experiment_id}: paper")
    if res.notes:
        out_console.print(res.notes)
    where = out or Path("results") / experiment_id
    out_console.print(f"{experiment_id} took {res.seconds:.1f} s; results in {where}")


# --- demo ------------------------------------------------------------------------------------
@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="Where to write the demo's files.")] = Path(
        "demo-out"
    ),
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
) -> None:
    """Anatomize the bundled Adult data with l = 2, 3, 4 and summarize the releases."""
    from privlab.demo import run_demo

    _print_rows(
        run_demo(out, seed=seed),
        title="Anatomy on Adult (QI workclass, relationship, sex, salary; sensitive occupation)",
    )
    out_console.print(f"releases written under {out}/")


# --- differential privacy (issue 4) ----------------------------------------------------------
dp_app = typer.Typer(
    help="Differential privacy: noisy histograms and DP naive Bayes.", no_args_is_help=True
)
app.add_typer(dp_app, name="dp")
EpsilonOpt = Annotated[
    float, typer.Option("--epsilon", help="Privacy budget (> 0; 'inf' for no noise).")
]


@dp_app.command("histogram")
def dp_histogram(
    input: Annotated[str, typer.Argument(help="CSV/Parquet path or bundled dataset name.")],
    columns: Annotated[str, typer.Option("--columns", help="Comma-separated columns.")],
    epsilon: EpsilonOpt,
    out: Annotated[Path, typer.Option("--out", help="CSV (or Parquet) file to write.")],
    estimator: Annotated[
        str, typer.Option("--estimator", help="ml, eb, js, posterior or consistent.")
    ] = "ml",
    mechanism: Annotated[
        str, typer.Option("--mechanism", help="geometric (integer noise) or laplace.")
    ] = "geometric",
    seed: SeedOpt = None,
    drop_missing: Annotated[
        bool, typer.Option("--drop-missing", help="Drop rows with missing values.")
    ] = False,
    force: ForceOpt = False,
) -> None:
    """Release the joint histogram of COLUMNS with epsilon-differential privacy."""
    from privlab.data.table import load_input
    from privlab.dp.histogram import noisy_histogram

    table = load_input(input, drop_missing=drop_missing)
    hist = noisy_histogram(
        table, _split(columns), epsilon=epsilon, estimator=estimator, mechanism=mechanism,
        rng=seed,
    )  # fmt: skip
    hist.save(out, force=force)
    out_console.print(
        f"released {len(hist.counts)} cells of ({', '.join(hist.columns)}) with epsilon = "
        f"{hist.epsilon:g} ({hist.mechanism}, scale {hist.scale:.4g}, estimator "
        f"{hist.estimator}) -> {out}"
    )
    if seed is not None:
        err_console.print("[yellow]note:[/] seeded noise is reproducible: never publish it.")


@dp_app.command("nb-train")
def dp_nb_train(
    input: Annotated[str, typer.Argument(help="CSV/Parquet path or bundled dataset name.")],
    target: Annotated[str, typer.Option("--target", help="The class column.")],
    epsilon: EpsilonOpt,
    out: Annotated[Path, typer.Option("--out", help="Model file (JSON) to write.")],
    features: Annotated[
        str | None, typer.Option("--features", help="Comma-separated features (default: all).")
    ] = None,
    estimator: Annotated[
        str, typer.Option("--estimator", help="ml, eb, js, posterior or consistent.")
    ] = "eb",
    mechanism: Annotated[
        str, typer.Option("--mechanism", help="geometric (integer noise) or laplace.")
    ] = "geometric",
    seed: SeedOpt = None,
    drop_missing: Annotated[
        bool, typer.Option("--drop-missing", help="Drop rows with missing values.")
    ] = False,
    force: ForceOpt = False,
) -> None:
    """Train a differentially private naive Bayes classifier and save it as JSON."""
    from privlab.learn.dp_naive_bayes import train_from_table

    model = train_from_table(
        input, target=target, features=_split(features) if features else None,
        epsilon=epsilon, estimator=estimator, mechanism=mechanism, rng=seed,
        drop_missing=drop_missing,
    )  # fmt: skip
    model.save(out, force=force)
    out_console.print(
        f"trained DP naive Bayes on {model.n_features_in_} features (epsilon = "
        f"{model.epsilon_:g}, estimator {model.estimator}) -> {out}"
    )
    err_console.print(
        "[yellow]note:[/] the model stores the columns' value domains as read from the data; "
        "they are not protected by differential privacy."
    )


@dp_app.command("nb-predict")
def dp_nb_predict(
    model: Annotated[Path, typer.Argument(help="A model file written by `dp nb-train`.")],
    input: Annotated[str, typer.Argument(help="CSV/Parquet path or bundled dataset name.")],
    out: Annotated[Path, typer.Option("--out", help="CSV file of predictions to write.")],
    force: ForceOpt = False,
) -> None:
    """Predict with a saved DP naive Bayes model; prints accuracy when the class is present."""
    from privlab._io import atomic_path
    from privlab.learn.dp_naive_bayes import predict_table

    df, accuracy = predict_table(model, input)
    with atomic_path(out, force=force) as tmp:
        df.to_csv(tmp, index=False)
    msg = f"wrote {len(df)} predictions to {out}"
    if accuracy is not None:
        msg += f"; accuracy {100 * accuracy:.2f}%"
    out_console.print(msg)


def main() -> None:
    """Entry point: run the app, turning privlab errors into one line and exit status 2."""
    try:
        app()
    except PrivlabError as e:
        err_console.print(f"[red]error:[/] {e}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except (FileNotFoundError, PermissionError, IsADirectoryError) as e:
        err_console.print(f"[red]error:[/] {e}", highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
