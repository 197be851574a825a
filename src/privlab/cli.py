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


# --- attacks and evaluation (issue 3) --------------------------------------------------------
attack_app = typer.Typer(
    help="Attack an anatomy release as a learning adversary; write posterior.csv.",
    no_args_is_help=True,
)
app.add_typer(attack_app, name="attack")
ReleaseArg = Annotated[Path, typer.Argument(help="An anatomy release directory.")]
PosteriorOut = Annotated[Path, typer.Option("--out", help="posterior.csv to write.")]


def _load_anatomy(directory: Path):
    from privlab.publish.release import load_release

    release = load_release(directory)
    if getattr(release, "method", None) != "anatomy":
        raise PrivlabError(f"{directory} holds a {release.method!r} release, not anatomy")
    return release


def _report_posterior(posterior, out: Path) -> None:
    d = posterior.diagnostics
    extra = ", ".join(f"{k} = {d[k]}" for k in d if d[k] is not None and not isinstance(d[k], list))
    out_console.print(
        f"{posterior.method} attack on {posterior.n_rows} tuples -> {out}"
        + (f" ({extra})" if extra else "")
    )


@attack_app.command("definetti")
def attack_definetti(
    directory: ReleaseArg,
    out: PosteriorOut,
    iterations: Annotated[
        int, typer.Option("--iterations", help="Gibbs iterations per chain.")
    ] = 5000,
    burn_in: Annotated[
        int | None, typer.Option("--burn-in", help="Discarded iterations (default: half).")
    ] = None,
    chains: Annotated[int, typer.Option("--chains", help="Chains from random starts.")] = 4,
    prior: Annotated[float, typer.Option("--prior", help="Dirichlet prior (1 = uniform).")] = 1.0,
    seed: SeedOpt = None,
    force: ForceOpt = False,
) -> None:
    """The deFinetti attack (Kifer 2009): Gibbs sampling of Naive-Bayes models and permutations."""
    from privlab.attacks.definetti import definetti_attack

    posterior = definetti_attack(
        _load_anatomy(directory), iterations=iterations, burn_in=burn_in, chains=chains,
        prior=prior, rng=seed, progress=True,
    )  # fmt: skip
    posterior.save(out, force=force)
    _report_posterior(posterior, out)


@attack_app.command("em")
def attack_em(
    directory: ReleaseArg,
    out: PosteriorOut,
    restarts: Annotated[int, typer.Option("--restarts", help="Random restarts.")] = 10,
    approximate: Annotated[
        bool, typer.Option("--approximate", help="Approximate E-step (ignores the groups).")
    ] = False,
    calibrate: Annotated[
        bool, typer.Option("--calibrate", help="Calibrated probabilities (seed 000 Ch. 5.3).")
    ] = False,
    probabilities: Annotated[
        str,
        typer.Option(
            "--probabilities",
            help="'assignment' (marginals of Pr(pi) ~ prod gamma, Ch. 5.2) or 'gamma'.",
        ),
    ] = "assignment",
    seed: SeedOpt = None,
    force: ForceOpt = False,
) -> None:
    """The Naive-Bayes EM attack (Mothali, Ch. 4): MAP EM with an exact or approximate E-step."""
    from privlab.attacks.em import em_attack

    posterior = em_attack(
        _load_anatomy(directory), restarts=restarts, approximate=approximate,
        calibrate=calibrate, probabilities=probabilities, rng=seed, progress=True,
    )  # fmt: skip
    posterior.save(out, force=force)
    _report_posterior(posterior, out)


@attack_app.command("random-worlds")
def attack_random_worlds(directory: ReleaseArg, out: PosteriorOut, force: ForceOpt = False) -> None:
    """The random-worlds baseline: each value's share of the tuple's group."""
    from privlab.attacks.random_worlds import random_worlds_attack

    posterior = random_worlds_attack(_load_anatomy(directory))
    posterior.save(out, force=force)
    _report_posterior(posterior, out)


@app.command()
def evaluate(
    posterior: Annotated[Path, typer.Argument(help="A posterior.csv written by an attack.")],
    truth: Annotated[Path, typer.Option("--truth", help="The release's truth.csv.")],
    sample: Annotated[
        int | None, typer.Option("--sample", help="Evaluate this many random tuples.")
    ] = None,
    seed: SeedOpt = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Reliability diagram PNG.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Metrics JSON to write.")] = None,
    force: ForceOpt = False,
) -> None:
    """Judge a posterior against the truth: ABS, SSQ, ACC, Brier = CAL + REF, people at risk."""
    from privlab._io import write_json
    from privlab.attacks.posterior import Posterior
    from privlab.metrics.calibration import (
        calibration_events,
        read_truth_for,
        reliability_diagram,
    )
    from privlab.metrics.calibration import (
        evaluate as run_evaluation,
    )

    post = Posterior.load(posterior)
    codes = read_truth_for(post, truth)
    ev = run_evaluation(post.probs, codes, sample=sample, rng=seed)
    if json_out is not None:
        write_json(json_out, ev.to_dict(), force=force)
    if plot is not None:
        reliability_diagram(
            {posterior.name: calibration_events(post.probs, codes)}, plot, force=force
        )
    d = ev.to_dict()
    d.pop("reliability")
    _print_rows(
        [{"measure": k, "value": v} for k, v in d.items()], title=f"evaluation of {posterior}"
    )


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
