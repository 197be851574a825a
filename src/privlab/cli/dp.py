"""Differential privacy commands: ``dp histogram``, ``dp nb train|predict``,
``dp tree train|predict``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from privlab.cli._app import (
    DomainOpt,
    DomainsOpt,
    DropMissingOpt,
    EpsilonOpt,
    ForceOpt,
    InputArg,
    SeedOpt,
    app,
    load_table,
    note,
    out_console,
    protects,
    say,
    split,
)

dp_app = typer.Typer(
    help="Differential privacy: noisy histograms, DP naive Bayes (Mothali 2011) and DP "
    "decision trees (Friedman & Schuster 2010).",
    no_args_is_help=True,
)
app.add_typer(dp_app, name="dp")
nb_app = typer.Typer(help="DP naive Bayes (Mothali 2011, Ch. 8).", no_args_is_help=True)
dp_app.add_typer(nb_app, name="nb")
tree_app = typer.Typer(help="DP decision trees (Friedman & Schuster 2010).", no_args_is_help=True)
dp_app.add_typer(tree_app, name="tree")

ModelOut = Annotated[Path, typer.Option("--out", help="Model file (JSON) to write.")]
FeaturesOpt = Annotated[
    str | None, typer.Option("--features", help="Comma-separated features (default: all).")
]
EstimatorOpt = Annotated[
    str, typer.Option("--estimator", help="ml, eb, js, posterior or consistent.")
]
MechanismOpt = Annotated[
    str, typer.Option("--mechanism", help="geometric (integer noise) or laplace.")
]


@dp_app.command("histogram")
@protects("input")
def dp_histogram(
    input: InputArg,
    columns: Annotated[str, typer.Option("--columns", help="Comma-separated columns.")],
    epsilon: EpsilonOpt,
    out: Annotated[Path, typer.Option("--out", help="CSV (or Parquet) file to write.")],
    estimator: EstimatorOpt = "ml",
    mechanism: MechanismOpt = "geometric",
    domain: DomainOpt = None,
    domains: DomainsOpt = None,
    domain_from_data: Annotated[
        bool,
        typer.Option(
            "--domain-from-data",
            help="Allow cells read from the data (a rare value then reveals its record).",
        ),
    ] = False,
    seed: SeedOpt = None,
    drop_missing: DropMissingOpt = False,
    force: ForceOpt = False,
) -> None:
    """Release the joint histogram of COLUMNS with epsilon-differential privacy; its cells
    are the columns' declared (public) domains."""
    from privlab.dp.histogram import noisy_histogram

    table = load_table(input, drop_missing=drop_missing, domains=domains, domain=domain)
    hist = noisy_histogram(
        table, split(columns), epsilon=epsilon, estimator=estimator, mechanism=mechanism,
        rng=seed, domain_from_data=domain_from_data,
    )  # fmt: skip
    hist.save(out, force=force)
    say(
        f"released {len(hist.counts)} cells of ({', '.join(hist.columns)}) with epsilon = "
        f"{hist.epsilon:g} ({hist.mechanism}, scale {hist.scale:.4g}, estimator "
        f"{hist.estimator}) -> {out}"
    )
    if seed is not None:
        note("seeded noise is reproducible: never publish it.")


@nb_app.command("train")
@protects("input")
def nb_train(
    input: InputArg,
    target: Annotated[str, typer.Option("--target", help="The class column.")],
    epsilon: EpsilonOpt,
    out: ModelOut,
    features: FeaturesOpt = None,
    estimator: EstimatorOpt = "eb",
    mechanism: MechanismOpt = "geometric",
    seed: SeedOpt = None,
    drop_missing: DropMissingOpt = False,
    force: ForceOpt = False,
) -> None:
    """Train a differentially private naive Bayes classifier and save it as JSON."""
    from privlab.learn.dp_naive_bayes import train_from_table

    model = train_from_table(
        load_table(input, drop_missing=drop_missing), target=target,
        features=split(features) or None, epsilon=epsilon, estimator=estimator,
        mechanism=mechanism, rng=seed,
    )  # fmt: skip
    model.save(out, force=force)
    say(
        f"trained DP naive Bayes on {model.n_features_in_} features (epsilon = "
        f"{model.epsilon_:g}, estimator {model.estimator}) -> {out}"
    )
    note(
        "the model stores the columns' value domains as read from the data; they are not "
        "protected by differential privacy."
    )


@nb_app.command("predict")
@protects("model", "input")
def nb_predict(
    model: Annotated[Path, typer.Argument(help="A model file written by `dp nb train`.")],
    input: InputArg,
    out: Annotated[Path, typer.Option("--out", help="CSV file of predictions to write.")],
    drop_missing: DropMissingOpt = False,
    force: ForceOpt = False,
) -> None:
    """Predict with a saved DP naive Bayes model; prints accuracy when the class is present."""
    from privlab._io import atomic_path
    from privlab.learn.dp_naive_bayes import predict_table

    df, accuracy = predict_table(model, load_table(input, drop_missing=drop_missing))
    with atomic_path(out, force=force) as tmp:
        df.to_csv(tmp, index=False)
    msg = f"wrote {len(df)} predictions to {out}"
    if accuracy is not None:
        msg += f"; accuracy {100 * accuracy:.2f}%"
    say(msg)


@tree_app.command("train")
@protects("input")
def tree_train(
    input: InputArg,
    target: Annotated[str, typer.Option("--target", help="The class column.")],
    epsilon: Annotated[float, typer.Option("--epsilon", help="Privacy budget (inf: no noise).")],
    out: ModelOut,
    max_depth: Annotated[int, typer.Option("--max-depth", help="Depth limit.")] = 5,
    criterion: Annotated[
        str, typer.Option("--criterion", help="info_gain, gini, max or noisy_counts.")
    ] = "max",
    features: FeaturesOpt = None,
    seed: SeedOpt = None,
    drop_missing: DropMissingOpt = False,
    force: ForceOpt = False,
) -> None:
    """Train a DP decision tree, write it to a model file and print it."""
    from privlab.learn.dp_tree import fit_table

    table = load_table(input, drop_missing=drop_missing)
    model = fit_table(table, target, epsilon=epsilon, max_depth=max_depth,
                      criterion=criterion, features=split(features) or None, rng=seed)  # fmt: skip
    model.save(out, force=force)
    out_console.print(model.export_text(), highlight=False, soft_wrap=True, markup=False)
    t = model.tree
    say(
        f"DP tree ({criterion}, epsilon = {t.accountant_.spent:g} spent, depth {t.depth_}, "
        f"{t.n_nodes_} nodes) trained on {table.n_rows} rows -> {out}"
    )


@tree_app.command("predict")
@protects("model", "input")
def tree_predict(
    model: Annotated[Path, typer.Argument(help="A model file from `privlab dp tree train`.")],
    input: InputArg,
    out: Annotated[Path, typer.Option("--out", help="CSV to write (input + prediction).")],
    drop_missing: DropMissingOpt = False,
    force: ForceOpt = False,
) -> None:
    """Predict with a DP tree; prints the accuracy when the input has the class column."""
    from privlab._io import atomic_path
    from privlab.learn.dp_tree import DPTreeModel

    m = DPTreeModel.load(model)
    df = load_table(input, drop_missing=drop_missing).to_pandas()
    pred = m.predict(df)
    col = f"predicted_{m.target}"
    with atomic_path(out, force=force) as tmp:
        df.assign(**{col: pred}).to_csv(tmp, index=False)
    msg = f"wrote {len(df)} predictions ({col}) to {out}"
    if m.target in df.columns:
        acc = float((df[m.target].astype(str).to_numpy() == pred.astype(str)).mean())
        msg += f"; accuracy {acc:.4f}"
    say(msg)
