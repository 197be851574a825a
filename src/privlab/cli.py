"""The ``privlab`` command line: thin wrappers, one library function per subcommand.

Errors from privlab (:class:`privlab.errors.PrivlabError`) print as one line on stderr and
exit with status 2; outputs are written atomically and existing outputs are refused unless
``--force`` is given.  Inputs are never modified.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

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
if not out_console.is_terminal:  # pipes, files, make: never truncate table cells
    out_console = Console(width=240)
err_console = Console(stderr=True)

ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite an existing output.")]
SeedOpt = Annotated[int | None, typer.Option("--seed", help="Random seed (default: OS entropy).")]
DropMissingOpt = Annotated[
    bool, typer.Option("--drop-missing", help="Drop rows with missing values.")
]


def _protects(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
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
        t.add_column(str(c), justify="right", overflow="fold")
    for r in rows:
        t.add_row(*(_fmt(r.get(c, "")) for c in cols))
    out_console.print(t)


def _fmt(v: object) -> str:
    if isinstance(v, tuple):  # (privlab, paper) pairs of `reproduce`
        return " / ".join(_fmt(x) for x in v)
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
@_protects("input")
def anatomize(
    input: Annotated[str, typer.Argument(help="CSV/Parquet path or bundled dataset name.")],
    qi: Annotated[str, typer.Option("--qi", help="Comma-separated quasi-identifiers.")],
    sensitive: Annotated[str, typer.Option("--sensitive", help="The sensitive attribute.")],
    l: Annotated[int, typer.Option("--l", help="Diversity: distinct values per group (>= 2).")],
    out: Annotated[Path, typer.Option("--out", help="Release directory to create.")],
    seed: SeedOpt = None,
    drop_missing: DropMissingOpt = False,
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
    from privlab.experiments import run_experiment, side_by_side

    res = run_experiment(experiment_id, quick=quick, seed=seed, out=out, force=force)
    _print_rows(res.rows, title=f"{experiment_id}: privlab")
    beside = side_by_side(res.rows, res.paper)
    if beside is not None:
        _print_rows(beside, title=f"{experiment_id}: privlab / paper")
    elif res.paper:
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
    force: ForceOpt = False,
) -> None:
    """Anatomize Adult (l = 2, 3, 4), attack each release with deFinetti, report the risk."""
    from privlab.demo import run_demo

    _print_rows(
        run_demo(out, seed=seed, force=force),
        title="Anatomy on Adult (QI workclass, relationship, sex, salary; sensitive occupation)",
    )
    out_console.print(
        f"releases, posteriors, metrics.json and reliability.png written under {out}/"
    )


# --- pram (issue 7) ---------------------------------------------------------------------------
from typer.core import TyperGroup  # noqa: E402


class _DefaultRandomizeGroup(TyperGroup):
    """``privlab pram INPUT ...`` means ``privlab pram randomize INPUT ...``.

    Any first argument that is not a subcommand name (``randomize``, ``estimate``, ``privacy``)
    or a help flag is taken as the input of ``randomize``; an input file literally named like
    a subcommand is reached with ``privlab pram randomize ./estimate``.
    """

    def parse_args(self, ctx, args):  # type: ignore[no-untyped-def]
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["randomize", *args]
        return super().parse_args(ctx, args)


pram_app = typer.Typer(
    cls=_DefaultRandomizeGroup,
    help="PRAM (Ma 2006): `privlab pram INPUT --columns .. --scheme .. --p .. --out DIR`, "
    "then `privlab pram estimate DIR --columns a,b` and `privlab pram privacy DIR`.",
    no_args_is_help=True,
)
app.add_typer(pram_app, name="pram")


def _parse_groups(specs: list[str]) -> dict[str, list[list[str]]]:
    groups: dict[str, list[list[str]]] = {}
    for spec in specs:
        col, sep, vals = spec.partition("=")
        if not sep or not col.strip() or not vals.strip():
            raise PrivlabError(f"--group {spec!r} must look like COLUMN=v1|v2|v3")
        groups.setdefault(col.strip(), []).append([v.strip() for v in vals.split("|")])
    return groups


@pram_app.command("randomize")
@_protects("input")
def pram_randomize(
    input: Annotated[str, typer.Argument(help="CSV/Parquet path or bundled dataset name.")],
    columns: Annotated[
        str, typer.Option("--columns", help="Comma-separated columns to randomize.")
    ],
    p: Annotated[float, typer.Option("--p", help="Randomization parameter in [0, 1].")],
    out: Annotated[Path, typer.Option("--out", help="Release directory to create.")],
    scheme: Annotated[
        str,
        typer.Option(
            "--scheme",
            help="m-category | binary | binary-symmetric | ternary-symmetric | identity.",
        ),
    ] = "m-category",
    p2: Annotated[
        float | None, typer.Option("--p2", help="Second parameter (binary, ternary).")
    ] = None,
    group: Annotated[
        list[str] | None,
        typer.Option(
            "--group",
            help="One group of an m-category column, COLUMN=v1|v2|v3 (repeatable); "
            "values in no group are not randomized.",
        ),
    ] = None,
    simultaneous: Annotated[
        bool, typer.Option("--simultaneous", help="Randomize the columns jointly.")
    ] = False,
    invariant: Annotated[
        bool, typer.Option("--invariant", help="Invariant PRAM (the matrix reveals frequencies).")
    ] = False,
    seed: SeedOpt = None,
    drop_missing: DropMissingOpt = False,
    force: ForceOpt = False,
) -> None:
    """Randomize columns with PRAM; writes randomized.csv and release.json (every matrix)."""
    from privlab.data.table import load_input
    from privlab.publish.pram import pram

    table = load_input(input, drop_missing=drop_missing)
    release = pram(
        table,
        columns=_split(columns),
        scheme=scheme,
        p=p,
        p2=p2,
        groups=_parse_groups(group or []),
        simultaneous=simultaneous,
        invariant=invariant,
        rng=seed,
    )
    release.save(out, force=force)
    out_console.print(
        f"randomized {', '.join(release.randomized_columns) or 'no column'} of "
        f"{release.n_rows} records ({scheme}, p = {p:g}) -> {out}"
    )


@pram_app.command("estimate")
@_protects("directory")
def pram_estimate(
    directory: Annotated[Path, typer.Argument(help="A PRAM release directory.")],
    columns: Annotated[str, typer.Option("--columns", help="Comma-separated columns.")],
    method: Annotated[str, typer.Option("--method", help="moment | em.")] = "moment",
    level: Annotated[float, typer.Option("--level", help="Confidence level.")] = 0.95,
    out: Annotated[
        Path | None, typer.Option("--out", help="Also write the table to this CSV.")
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Estimate the true joint counts of columns, with normal confidence intervals."""
    from privlab.publish.pram import PramRelease
    from privlab.publish.pram_estimation import estimate_release

    est = estimate_release(PramRelease.load(directory), _split(columns), method=method, level=level)
    rows = est.to_rows()
    _print_rows(rows, title=f"{method} estimate, {level:.0%} intervals ({directory})")
    if out is not None:
        import pandas as pd

        from privlab._io import atomic_path

        with atomic_path(out, force=force) as tmp:
            pd.DataFrame(rows).to_csv(tmp, index=False)


@pram_app.command("privacy")
def pram_privacy(
    directory: Annotated[Path, typer.Argument(help="A PRAM release directory.")],
    rho1: Annotated[float, typer.Option("--rho1", help="Prior for the breach bound.")] = 0.1,
) -> None:
    """gamma, breach bound rho2*, H(X|X~) and (K_p, Dist_K) of each randomized attribute."""
    from privlab.publish.pram import PramRelease

    rows = PramRelease.load(directory).privacy(rho1=rho1).rows
    _print_rows(
        [{**r, "columns": "+".join(r["columns"])} for r in rows],
        title=f"PRAM privacy of {directory} (rho1 = {rho1:g})",
    )


# --- generalization (issue 6) ---------------------------------------------------------------
@app.command()
@_protects("input")
def generalize(
    input: Annotated[str, typer.Argument(help="CSV/Parquet path or bundled dataset name.")],
    qi: Annotated[str, typer.Option("--qi", help="Comma-separated quasi-identifiers.")],
    out: Annotated[Path, typer.Option("--out", help="Release directory to create.")],
    k: Annotated[int, typer.Option("--k", help="k-anonymity: minimum class size.")] = 2,
    sensitive: Annotated[
        str | None, typer.Option("--sensitive", help="The sensitive attribute.")
    ] = None,
    hierarchies: Annotated[
        Path | None,
        typer.Option("--hierarchies", help="Directory of ARX hierarchy CSVs (<attribute>.csv)."),
    ] = None,
    l: Annotated[float | None, typer.Option("--l", help="l-diversity.")] = None,
    l_variant: Annotated[
        str, typer.Option("--l-variant", help="distinct | entropy | recursive.")
    ] = "distinct",
    c: Annotated[float | None, typer.Option("--c", help="c of recursive (c,l)-diversity.")] = None,
    t: Annotated[float | None, typer.Option("--t", help="t-closeness (EMD).")] = None,
    t_distance: Annotated[
        str, typer.Option("--t-distance", help="EMD ground distance: equal | ordered.")
    ] = "equal",
    delta: Annotated[float | None, typer.Option("--delta", help="delta-disclosure.")] = None,
    suppression: Annotated[
        float, typer.Option("--suppression", help="Largest share of records to suppress.")
    ] = 0.0,
    method: Annotated[
        str, typer.Option("--method", help="optimal (global) | mondrian (local).")
    ] = "optimal",
    objective: Annotated[
        str, typer.Option("--objective", help="Utility objective of the optimal search.")
    ] = "discernibility",
    drop_missing: DropMissingOpt = False,
    force: ForceOpt = False,
) -> None:
    """Generalize a table (k-anonymity, l-diversity, t-closeness): table.csv, release.json."""
    from privlab.data.datasets import DATASETS
    from privlab.data.table import load_input
    from privlab.publish.generalization import generalize as run

    table = load_input(input, drop_missing=drop_missing)
    dataset = input if input in DATASETS and not Path(input).exists() else None
    release = run(
        table, qi=_split(qi), sensitive=sensitive, hierarchies=hierarchies, dataset=dataset,
        k=k, l=l, l_variant=l_variant, c=c, t=t, t_distance=t_distance, delta=delta,
        suppression=suppression, method=method, objective=objective,
    )  # fmt: skip
    release.save(out, force=force)
    p = release.privacy()
    node = f" at levels {list(release.node)}" if release.node is not None else ""
    out_console.print(
        f"generalized {release.n_input} records ({release.algorithm}{node}): "
        f"{p.n_classes} classes, k = {p.k}, {release.n_suppressed} suppressed -> {out}"
    )


# --- differential privacy (issue 4) ----------------------------------------------------------
dp_app = typer.Typer(
    help="Differential privacy: noisy histograms and DP naive Bayes.", no_args_is_help=True
)
app.add_typer(dp_app, name="dp")
EpsilonOpt = Annotated[
    float, typer.Option("--epsilon", help="Privacy budget (> 0; 'inf' for no noise).")
]


@dp_app.command("histogram")
@_protects("input")
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
    drop_missing: DropMissingOpt = False,
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
@_protects("input")
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
    drop_missing: DropMissingOpt = False,
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
@_protects("model", "input")
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


# --- DP decision trees (issue 5) ---
dptree_app = typer.Typer(
    help="Differentially private decision trees (Friedman & Schuster 2010).", no_args_is_help=True
)
app.add_typer(dptree_app, name="dptree")


@dptree_app.command("train")
@_protects("input")
def dptree_train(
    input: Annotated[str, typer.Argument(help="CSV/Parquet path or bundled dataset name.")],
    target: Annotated[str, typer.Option("--target", help="The class column.")],
    epsilon: Annotated[float, typer.Option("--epsilon", help="Privacy budget (inf: no noise).")],
    out: Annotated[Path, typer.Option("--out", help="Model file (JSON) to write.")],
    max_depth: Annotated[int, typer.Option("--max-depth", help="Depth limit.")] = 5,
    criterion: Annotated[
        str, typer.Option("--criterion", help="info_gain, gini, max or noisy_counts.")
    ] = "max",
    features: Annotated[
        str | None, typer.Option("--features", help="Comma-separated features (default: all).")
    ] = None,
    seed: SeedOpt = None,
    drop_missing: DropMissingOpt = False,
    force: ForceOpt = False,
) -> None:
    """Train a DP decision tree, write it to a model file and print it."""
    import warnings

    from privlab.data.table import load_input
    from privlab.errors import PrivacyWarning
    from privlab.learn.dp_tree import fit_table

    table = load_input(input, drop_missing=drop_missing)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivacyWarning)
        model = fit_table(table, target, epsilon=epsilon, max_depth=max_depth,
                          criterion=criterion, features=_split(features) if features else None,
                          rng=seed)  # fmt: skip
    model.save(out, force=force)
    out_console.print(model.export_text(), highlight=False, soft_wrap=True)
    t = model.tree
    out_console.print(
        f"DP tree ({criterion}, epsilon = {t.accountant_.spent:g} spent, depth {t.depth_}, "
        f"{t.n_nodes_} nodes) trained on {table.n_rows} rows -> {out}"
    )
    for w in caught:
        if issubclass(w.category, PrivacyWarning):
            err_console.print(f"[yellow]note:[/] {w.message}", highlight=False, soft_wrap=True)


@dptree_app.command("predict")
@_protects("model", "input")
def dptree_predict(
    model: Annotated[Path, typer.Argument(help="A model file from `privlab dptree train`.")],
    input: Annotated[str, typer.Argument(help="CSV/Parquet path or bundled dataset name.")],
    out: Annotated[Path, typer.Option("--out", help="CSV to write (input + prediction).")],
    drop_missing: DropMissingOpt = False,
    force: ForceOpt = False,
) -> None:
    """Predict with a DP tree; prints the accuracy when the input has the class column."""
    from privlab._io import atomic_path
    from privlab.data.table import load_input
    from privlab.learn.dp_tree import DPTreeModel

    m = DPTreeModel.load(model)
    df = load_input(input, drop_missing=drop_missing).to_pandas()
    pred = m.predict(df)
    col = f"predicted_{m.target}"
    with atomic_path(out, force=force) as tmp:
        df.assign(**{col: pred}).to_csv(tmp, index=False)
    msg = f"wrote {len(df)} predictions ({col}) to {out}"
    if m.target in df.columns:
        acc = float((df[m.target].astype(str).to_numpy() == pred.astype(str)).mean())
        msg += f"; accuracy {acc:.4f}"
    out_console.print(msg)


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
@_protects("directory")
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
@_protects("directory")
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
    init: Annotated[
        str,
        typer.Option(
            "--init",
            help="Starting point: 'random-worlds' (privlab's default) or 'dirichlet' (the "
            "thesis's Dirichlet-random parameters, Table 4.1).",
        ),
    ] = "random-worlds",
    seed: SeedOpt = None,
    force: ForceOpt = False,
) -> None:
    """The Naive-Bayes EM attack (Mothali, Ch. 4): MAP EM with an exact or approximate E-step."""
    from privlab.attacks.em import em_attack

    posterior = em_attack(
        _load_anatomy(directory), restarts=restarts, approximate=approximate,
        calibrate=calibrate, probabilities=probabilities, init=init, rng=seed, progress=True,
    )  # fmt: skip
    posterior.save(out, force=force)
    _report_posterior(posterior, out)


@attack_app.command("random-worlds")
@_protects("directory")
def attack_random_worlds(directory: ReleaseArg, out: PosteriorOut, force: ForceOpt = False) -> None:
    """The random-worlds baseline: each value's share of the tuple's group."""
    from privlab.attacks.random_worlds import random_worlds_attack

    posterior = random_worlds_attack(_load_anatomy(directory))
    posterior.save(out, force=force)
    _report_posterior(posterior, out)


@app.command()
@_protects("posterior", "truth")
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
