"""Differential privacy commands: ``dp histogram``, ``dp nb train|predict``,
``dp tree train|predict``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from privlab.cli._app import (
    BatchRowsOpt,
    DomainOpt,
    DomainsOpt,
    DropMissingOpt,
    EncodingOpt,
    Engine,
    EngineOpt,
    EpsilonOpt,
    ForceOpt,
    InputArg,
    SeedOpt,
    app,
    declared_domains,
    load_table,
    note,
    out_console,
    protects,
    say,
    spark_table,
    split,
    stream_input,
)
from privlab.errors import PrivlabError

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
    str | None,
    typer.Option(
        "--features",
        help="Comma-separated features (default: the categorical columns and the numeric "
        "ones with a declared domain).",
    ),
]
BoundsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--bounds",
        help="COLUMN=LO:HI: public bounds of a numeric feature (repeatable; values outside "
        "are clipped).  A bundled dataset brings its documented bounds (Adult: age 17:90, ...).",
    ),
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
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
    engine: EngineOpt = Engine.MEMORY,
    batch_rows: BatchRowsOpt = 1 << 20,
) -> None:
    """Release the joint histogram of COLUMNS with epsilon-differential privacy; its cells
    are the columns' declared (public) domains."""
    from privlab.dp.histogram import noisy_histogram, noisy_histogram_parquet

    if engine is Engine.STREAM:
        hist = noisy_histogram_parquet(
            stream_input(input, drop_missing=drop_missing, encoding=encoding), split(columns),
            epsilon=epsilon, domains=declared_domains(domains, domain), batch_rows=batch_rows,
            estimator=estimator, mechanism=mechanism, rng=seed, domain_from_data=domain_from_data,
        )  # fmt: skip
    elif engine is Engine.SPARK:  # counted by Spark; the noise is drawn here, once
        df, schema = spark_table(input, domains=domains, domain=domain,
                                 drop_missing=drop_missing, columns=split(columns))  # fmt: skip
        hist = noisy_histogram(
            df, split(columns), epsilon=epsilon, estimator=estimator, mechanism=mechanism,
            rng=seed, domain_from_data=domain_from_data, engine="spark", schema=schema,
        )  # fmt: skip
    else:
        table = load_table(
            input, drop_missing=drop_missing, domains=domains, domain=domain, encoding=encoding
        )
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


TestOpt = Annotated[
    str | None,
    typer.Option(
        "--test",
        help="CSV/Parquet path or bundled name (e.g. adult-test) to report the accuracy on.",
    ),
]
HoldoutOpt = Annotated[
    float,
    typer.Option(
        "--holdout",
        help="Without --test: the share of rows held out (not trained on) to report the "
        "accuracy on; 0 trains on every row and reports none.",
        min=0.0,
        max=0.9,
    ),
]


def default_features(table, target: str, bounds: dict | None = None) -> list[str]:
    """The categorical columns and the numeric ones with a declared domain or public bounds."""
    bounds = bounds or {}
    return [
        c
        for c in table.names
        if c != target and (not table.schema[c].numeric or table.schema[c].declared or c in bounds)
    ]


def public_bounds(input: str, specs: list[str] | None) -> dict[str, tuple[float, float]]:
    """A bundled dataset's documented bounds, then ``--bounds COLUMN=LO:HI`` options."""
    from privlab.data.datasets import DATASETS

    bounds: dict[str, tuple[float, float]] = {}
    if input in DATASETS and not Path(input).exists():
        bounds.update(DATASETS[input].bounds)
    return {**bounds, **given_bounds(specs)}


def bounds_for(public: dict, specs: list[str] | None, feats: list[str]) -> dict:
    """The public bounds of the features; a ``--bounds`` column that is no feature is an
    error (a bundled dataset's bounds of other columns are not)."""
    stray = [c for c in given_bounds(specs) if c not in feats]
    if stray:
        raise PrivlabError(f"--bounds names {stray[0]!r}, which is not a feature")
    return {f: b for f, b in public.items() if f in feats}


def given_bounds(specs: list[str] | None) -> dict[str, tuple[float, float]]:
    """``--bounds COLUMN=LO:HI`` options."""
    bounds: dict[str, tuple[float, float]] = {}
    for spec in specs or []:
        col, sep, rng = spec.partition("=")
        lo, sep2, hi = rng.partition(":")
        try:
            if not (sep and sep2 and col.strip()):
                raise ValueError
            bounds[col.strip()] = (float(lo), float(hi))
        except ValueError:
            raise PrivlabError(f"--bounds {spec!r} must look like COLUMN=LO:HI") from None
    return bounds


def training_input(
    input: str,
    *,
    target: str,
    features: str | None,
    bounds: list[str] | None,
    test: str | None,
    holdout: float,
    seed: int | None,
    out: Path,
    force: bool,
    drop_missing: bool,
    domains: Path | None,
    domain: list[str] | None,
    encoding: str | None,
):
    """What a learner's ``train`` command trains on: ``(train, held_out_or_test, features,
    public bounds of the features)``, the output checked first."""
    from privlab._io import check_output

    check_output(out, force=force)
    table = load_table(
        input, drop_missing=drop_missing, domains=domains, domain=domain, encoding=encoding
    )
    public = public_bounds(input, bounds)
    feats = split(features) or default_features(table, target, public)
    train, held = split_for_accuracy(
        table, test, holdout, seed, drop_missing, encoding, [*feats, target]
    )
    return train, held, feats, bounds_for(public, bounds, feats)


def split_for_accuracy(
    table,
    test: str | None,
    holdout: float,
    seed: int | None,
    drop_missing,
    encoding=None,
    columns: list[str] | None = None,
):
    """``(train, test)``: all rows and the given test table (which must hold ``columns``),
    or a random held-out share."""
    import numpy as np

    if test is not None:
        held = load_table(test, drop_missing=drop_missing, encoding=encoding)
        missing = [c for c in columns or [] if c not in held.names]
        if missing:
            raise PrivlabError(f"the test data {test} lacks the column {missing[0]!r}")
        return table, held
    if holdout <= 0:
        return table, None
    order = np.random.default_rng(seed).permutation(table.n_rows)
    cut = round(table.n_rows * holdout)
    return table.take(np.sort(order[cut:])), table.take(np.sort(order[:cut]))


@nb_app.command("train")
@protects("input", "test")
def nb_train(
    input: InputArg,
    target: Annotated[str, typer.Option("--target", help="The class column.")],
    epsilon: EpsilonOpt,
    out: ModelOut,
    features: FeaturesOpt = None,
    estimator: EstimatorOpt = "eb",
    mechanism: MechanismOpt = "geometric",
    test: TestOpt = None,
    holdout: HoldoutOpt = 0.2,
    bounds: BoundsOpt = None,
    bins: Annotated[
        int, typer.Option("--bins", help="Bins of a numeric feature over its bounds.", min=2)
    ] = 10,
    domain: DomainOpt = None,
    domains: DomainsOpt = None,
    seed: SeedOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
) -> None:
    """Train a differentially private naive Bayes classifier and save it as JSON; report its
    accuracy on held-out rows or a test file (never on its training rows)."""
    from privlab.learn.dp_naive_bayes import predict_table, train_from_table

    train, held, feats, public = training_input(
        input, target=target, features=features, bounds=bounds, test=test, holdout=holdout,
        seed=seed, out=out, force=force, drop_missing=drop_missing, domains=domains,
        domain=domain, encoding=encoding,
    )  # fmt: skip
    model = train_from_table(
        train, target=target, features=feats, epsilon=epsilon, estimator=estimator,
        mechanism=mechanism, bounds=public, bins=bins, rng=seed,
    )  # fmt: skip
    model.save(out, force=force)
    say(
        f"trained DP naive Bayes on {train.n_rows} rows, {model.n_features_in_} features "
        f"(epsilon = {model.epsilon_:g}, estimator {model.estimator}) -> {out}"
    )
    if held is not None:
        _, accuracy = predict_table(out, held)
        where = test if test is not None else f"{held.n_rows} held-out rows"
        if accuracy is not None:
            say(f"accuracy on {where}: {100 * accuracy:.2f}%")


@nb_app.command("predict")
@protects("model", "input")
def nb_predict(
    model: Annotated[Path, typer.Argument(help="A model file written by `dp nb train`.")],
    input: InputArg,
    out: Annotated[Path, typer.Option("--out", help="CSV file of predictions to write.")],
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
) -> None:
    """Predict with a saved DP naive Bayes model; prints accuracy when the class is present."""
    from privlab._io import atomic_path
    from privlab.learn.dp_naive_bayes import predict_table

    table = load_table(input, drop_missing=drop_missing, encoding=encoding)
    df, accuracy = predict_table(model, table)
    with atomic_path(out, force=force) as tmp:
        df.to_csv(tmp, index=False)
    msg = f"wrote {len(df)} predictions to {out}"
    if accuracy is not None:
        msg += f"; accuracy {100 * accuracy:.2f}%"
    say(msg)


@tree_app.command("train")
@protects("input", "test")
def tree_train(
    input: InputArg,
    target: Annotated[str, typer.Option("--target", help="The class column.")],
    epsilon: Annotated[float, typer.Option("--epsilon", help="Privacy budget (inf: no noise).")],
    out: ModelOut,
    max_depth: Annotated[int, typer.Option("--max-depth", help="Depth limit.")] = 5,
    criterion: Annotated[
        str, typer.Option("--criterion", help="info_gain, gini, max or noisy_counts.")
    ] = "max",
    n_records: Annotated[
        int | None,
        typer.Option(
            "--n-records",
            help="A public upper bound on the number of rows (needed by info_gain).",
            min=1,
        ),
    ] = None,
    features: FeaturesOpt = None,
    test: TestOpt = None,
    holdout: HoldoutOpt = 0.2,
    bounds: BoundsOpt = None,
    domain: DomainOpt = None,
    domains: DomainsOpt = None,
    seed: SeedOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
) -> None:
    """Train a DP decision tree, write it to a model file and print it; report its accuracy
    on held-out rows or a test file (never on its training rows)."""
    from privlab.learn.dp_tree import fit_table

    train, held, feats, public = training_input(
        input, target=target, features=features, bounds=bounds, test=test, holdout=holdout,
        seed=seed, out=out, force=force, drop_missing=drop_missing, domains=domains,
        domain=domain, encoding=encoding,
    )  # fmt: skip
    model = fit_table(train, target, epsilon=epsilon, max_depth=max_depth, criterion=criterion,
                      features=feats, n_records=n_records, rng=seed, bounds=public)  # fmt: skip
    model.save(out, force=force)
    out_console.print(model.export_text(), highlight=False, soft_wrap=True, markup=False)
    t = model.tree
    say(
        f"DP tree ({criterion}, epsilon = {t.accountant_.spent:g} spent, depth {t.depth_}, "
        f"{t.n_nodes_} nodes) trained on {train.n_rows} rows -> {out}"
    )
    if held is not None:
        df = held.to_pandas()
        missing = [f for f in [*model.features, target] if f not in df.columns]
        if missing:
            raise PrivlabError(f"the test data lacks the column {missing[0]!r}")
        pred = model.predict(df)
        acc = float((df[target].astype(str).to_numpy() == pred.astype(str)).mean())
        where = test if test is not None else f"{held.n_rows} held-out rows"
        say(f"accuracy on {where}: {100 * acc:.2f}%")


@tree_app.command("predict")
@protects("model", "input")
def tree_predict(
    model: Annotated[Path, typer.Argument(help="A model file from `privlab dp tree train`.")],
    input: InputArg,
    out: Annotated[Path, typer.Option("--out", help="CSV to write (input + prediction).")],
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
) -> None:
    """Predict with a DP tree; prints the accuracy when the input has the class column."""
    from privlab._io import atomic_path
    from privlab.learn.dp_tree import DPTreeModel

    m = DPTreeModel.load(model)
    df = load_table(input, drop_missing=drop_missing, encoding=encoding).to_pandas()
    pred = m.predict(df)
    col = f"predicted_{m.target}"
    with atomic_path(out, force=force) as tmp:
        df.assign(**{col: pred}).to_csv(tmp, index=False)
    msg = f"wrote {len(df)} predictions ({col}) to {out}"
    if m.target in df.columns:
        acc = float((df[m.target].astype(str).to_numpy() == pred.astype(str)).mean())
        msg += f"; accuracy {acc:.4f}"
    say(msg)
