"""Differential privacy commands: ``dp histogram``, ``dp nb train|predict``,
``dp tree train|predict``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from privlab.cli._app import (
    BatchRowsOpt,
    ColumnsOpt,
    DomainOpt,
    DomainsOpt,
    DropMissingOpt,
    EncodingOpt,
    Engine,
    EngineOpt,
    EpsilonOpt,
    ForceOpt,
    InputArg,
    NotForPublicationOpt,
    ReplayOpt,
    SeedOpt,
    TargetOpt,
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
    write_table_csv,
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
        help="COLUMN=LO:HI: public bounds of a numeric column (repeatable; values outside "
        "are clipped).  A bundled dataset brings its documented bounds (Adult: age 17:90, ...).",
    ),
]
EstimatorOpt = Annotated[
    str, typer.Option("--estimator", help="ml, eb, js, posterior or consistent.")
]
MechanismOpt = Annotated[
    str, typer.Option("--mechanism", help="geometric (integer noise) or laplace.")
]
DpCustodyOpt = Annotated[
    Path | None,
    typer.Option(
        "--custody",
        help="Directory for the custodian's files (the seed and the OS salt mixed into it, "
        "the input's fingerprint): never publish it; needed with --seed to replay the output.",
    ),
]


def dp_noise(
    seed: int | None,
    custody: Path | None,
    replay: Path | None,
    not_for_publication: bool,
    *,
    force: bool,
) -> None:
    """Refuse, before any work, what a DP command's seed options cannot do.

    A seed is salted with OS entropy kept in ``--custody`` (as a release's is), so a seed
    without custody is refused unless ``--not-for-publication`` says the output is an
    experiment (the seed then used as given, the output marked never to be published).
    """
    from privlab._io import check_output

    if replay is not None and seed is not None:
        raise PrivlabError("give --seed or --replay, not both")
    if not_for_publication and (custody is not None or replay is not None):
        raise PrivlabError(
            "--not-for-publication marks an experiment whose seed is used as given: it takes "
            "no --custody or --replay (those are for outputs to publish)"
        )
    if seed is not None and custody is None and not not_for_publication:
        raise PrivlabError(
            "--seed needs --custody DIR: privlab mixes the seed with OS entropy kept in the "
            "custody directory (a seed alone is guessable, and seeded noise can be replayed "
            "by anyone who guesses it); for an experiment that must never be published, "
            "pass --not-for-publication instead"
        )
    if custody is not None:
        check_output(custody, force=force, kind="directory (--custody)")


def dp_rng(
    seed: int | None, replay: Path | None, not_for_publication: bool, fingerprint, method: str
):
    """The ``rng`` of a DP command's noise: the seed (salted by the library), a SeedSequence
    of it for ``--not-for-publication`` (used as given), or ``--replay``'s record (checked to
    belong to an output of this method and input)."""
    import numpy as np

    if not_for_publication:
        return None if seed is None else np.random.SeedSequence(seed).spawn(2)[1]
    if replay is None:
        return seed
    return replay_custody(replay, fingerprint, method).replay()


def replay_custody(replay: Path, fingerprint, method: str):
    """``--replay``'s custody, checked against the method and (unless None) the input's
    fingerprint."""
    from privlab.errors import CustodyError
    from privlab.release.base import Custody

    custody = Custody.load(replay)
    if custody.method != method:
        raise CustodyError(f"{replay} is the custody of a {custody.method!r} output, not {method}")
    if fingerprint is not None and custody.input_sha256 not in (None, fingerprint):
        raise CustodyError(
            f"{replay} belongs to an output of another input (the input's fingerprint differs)"
        )
    return custody


@contextlib.contextmanager
def quiet_experiment(not_for_publication: bool) -> Iterator[None]:
    """Within the block, the library's ExperimentWarning is not repeated for
    ``--not-for-publication``: the command's own note says what it means."""
    import warnings

    from privlab.errors import ExperimentWarning

    with warnings.catch_warnings():
        if not_for_publication:
            warnings.simplefilter("ignore", ExperimentWarning)
        yield


@dp_app.command("histogram")
@protects("input")
def dp_histogram(
    input: InputArg,
    columns: ColumnsOpt,
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
    custody: DpCustodyOpt = None,
    replay: ReplayOpt = None,
    not_for_publication: NotForPublicationOpt = False,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
    engine: EngineOpt = Engine.MEMORY,
    batch_rows: BatchRowsOpt = 1 << 20,
) -> None:
    """Release the joint histogram of COLUMNS with epsilon-differential privacy; its cells
    are the columns' declared (public) domains."""
    from privlab._io import check_output, sha256_file
    from privlab.dp.histogram import noisy_histogram, noisy_histogram_parquet

    check_output(out, force=force)
    dp_noise(seed, custody, replay, not_for_publication, force=force)
    kw = dict(epsilon=epsilon, estimator=estimator, mechanism=mechanism,
              domain_from_data=domain_from_data)  # fmt: skip
    with quiet_experiment(not_for_publication):
        if engine is Engine.STREAM:
            path = stream_input(input, drop_missing=drop_missing, encoding=encoding)
            rng = dp_rng(seed, replay, not_for_publication, sha256_file(path), "dp-histogram")
            hist = noisy_histogram_parquet(
                path, split(columns), domains=declared_domains(domains, domain),
                batch_rows=batch_rows, rng=rng, **kw,
            )  # fmt: skip
        elif engine is Engine.SPARK:  # counted by Spark; the noise is drawn here, once
            df, schema = spark_table(input, domains=domains, domain=domain, replay=replay,
                                     drop_missing=drop_missing, columns=split(columns))  # fmt: skip
            rng = dp_rng(seed, None, not_for_publication, None, "dp-histogram")
            hist = noisy_histogram(df, split(columns), rng=rng, engine="spark", schema=schema,
                                   **kw)  # fmt: skip
        else:
            table = load_table(
                input, drop_missing=drop_missing, domains=domains, domain=domain, encoding=encoding
            )
            rng = dp_rng(seed, replay, not_for_publication, table.fingerprint(), "dp-histogram")
            hist = noisy_histogram(table, split(columns), rng=rng, **kw)
        hist.save(out, custody=custody, force=force, not_for_publication=not_for_publication)
    say(
        f"released {len(hist.counts)} cells of ({', '.join(hist.columns)}) with epsilon = "
        f"{hist.epsilon:g} ({hist.mechanism}, scale {hist.scale:.4g}, estimator "
        f"{hist.estimator}) -> {out}"
    )
    custody_notes(custody, not_for_publication, seed, out)


def custody_notes(custody: Path | None, not_for_publication: bool, seed: int | None,
                  out: Path) -> None:  # fmt: skip
    """The notes of a DP command: what its custody holds, or that its output is an
    experiment never to be published."""
    if custody is not None:
        note(f"{custody} holds the seed, its salt and the input's fingerprint: it is the "
             "custodian's, never publish it")  # fmt: skip
    if not_for_publication:
        seeded = f"its noise is replayable from --seed {seed} alone; " if seed is not None else ""
        note(f"{out} is an experiment ({seeded}the file says so): never publish it")


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
            value = (float(lo), float(hi))
        except ValueError:
            raise PrivlabError(f"--bounds {spec!r} must look like COLUMN=LO:HI") from None
        col = col.strip()
        if bounds.get(col, value) != value:
            first = f"{bounds[col][0]:g}:{bounds[col][1]:g}"
            raise PrivlabError(f"--bounds gives {col!r} twice ({first}, then {rng}): give it once")
        bounds[col] = value
    return bounds


def training_input(
    input: str,
    *,
    method: str,
    out: Path,
    force: bool,
    seed: int | None,
    custody: Path | None,
    replay: Path | None,
    not_for_publication: bool,
    target: str,
    features: str | None,
    bounds: list[str] | None,
    test: str | None,
    holdout: float,
    drop_missing: bool,
    domains: Path | None,
    domain: list[str] | None,
    encoding: str | None,
):
    """What a learner's ``train`` command trains on, once its model file ``out`` is known to
    be writable and its seed options are sound (:func:`dp_noise`): ``(input table, train,
    held_out_or_test, features, public bounds of the features, what custody keeps of the
    held-out split)``."""
    from privlab._io import check_output

    check_output(out, force=force)
    dp_noise(seed, custody, replay, not_for_publication, force=force)
    split_rng, kept = holdout_rng(seed, replay, not_for_publication, holdout, test, method)
    table = load_table(
        input, drop_missing=drop_missing, domains=domains, domain=domain, encoding=encoding
    )
    public = public_bounds(input, bounds)
    feats = split(features) or default_features(table, target, public)
    twice = sorted({f for f in feats if feats.count(f) > 1})
    if twice:
        raise PrivlabError(f"--features lists {twice[0]!r} twice")
    train, held = split_for_accuracy(
        table, test, holdout, split_rng, drop_missing, encoding, [*feats, target]
    )
    return table, train, held, feats, bounds_for(public, bounds, feats), kept


def split_for_accuracy(
    table,
    test: str | None,
    holdout: float,
    rng,
    drop_missing,
    encoding=None,
    columns: list[str] | None = None,
):
    """``(train, test)``: all rows and the given test table (which must hold ``columns``),
    or a random held-out share (drawn from the generator ``rng``; none when too few rows
    hold one out, which the caller says)."""
    from privlab.learn._sklearn import held_out_split

    if test is not None:
        held = load_table(test, drop_missing=drop_missing, encoding=encoding)
        missing = [c for c in columns or [] if c not in held.names]
        if missing:
            raise PrivlabError(f"the test data {test} lacks the column {missing[0]!r}")
        return table, held
    if holdout <= 0:
        return table, None
    cut = round(table.n_rows * holdout)
    if cut >= table.n_rows:
        raise PrivlabError(
            f"--holdout {holdout:g} of {table.n_rows} row(s) leaves no row to train on: lower "
            "--holdout (0 trains on every row)"
        )
    return held_out_split(table, holdout, rng)


def holdout_rng(
    seed: int | None,
    replay: Path | None,
    not_for_publication: bool,
    holdout: float,
    test: str | None,
    method: str,
):
    """The generator of the held-out split and what custody keeps of it
    (``{"holdout": seed record}``, or None).  Which rows were held out is private too: the
    split is salted like the noise (its own salt), replayed from ``--replay``'s custody, or,
    for ``--not-for-publication``, drawn from the seed as given."""
    import numpy as np

    from privlab._io import read_json
    from privlab._rng import SeedRecord, publication_rng
    from privlab.errors import CustodyError

    if replay is not None:
        replay_custody(replay, None, method)  # the custody of an output of this method
    if test is not None or holdout <= 0:
        return None, None
    if not_for_publication:
        if seed is None:
            return np.random.default_rng(), None
        return np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0]), None
    if replay is not None:
        meta = read_json(replay / "custody.json", what="custody file")
        kept = meta.get("holdout") if isinstance(meta, dict) else None
        if kept is None:
            raise CustodyError(
                f"{replay} keeps no held-out split: give the original's --test (or --holdout 0)"
            )
        try:
            record = SeedRecord.from_dict(kept)
            gen = record.generator()
        except PrivlabError as e:
            raise CustodyError(f"{replay}/custody.json has a malformed holdout: {e}") from None
        return gen, {"holdout": record.to_dict()}
    gen, record = publication_rng(seed)
    return gen, {"holdout": record.to_dict()}


def held_out(evaluate, test: str | None):
    """``evaluate()`` (the accuracy on the test data or the held-out rows), computed before
    the model is written; a failure names the test data."""
    try:
        return evaluate()
    except PrivlabError as e:
        where = f"the test data {test}" if test is not None else "the held-out rows"
        raise type(e)(f"{where}: {e}") from None


def no_accuracy_note(held, test: str | None, holdout: float) -> None:
    """Say so when ``--holdout`` held out no row (too few rows): no accuracy was reported."""
    if held is None and test is None and holdout > 0:
        note(f"--holdout {holdout:g} holds out no row of so small a table: no accuracy is "
             "reported (give --test, or more rows)")  # fmt: skip


def training_notes(accuracy: float | None, held, test: str | None, holdout: float,
                   custody: Path | None, not_for_publication: bool, seed: int | None,
                   out: Path) -> None:  # fmt: skip
    """What a learner's ``train`` command says after its model line: the accuracy (or why
    there is none) and the notes of :func:`custody_notes`."""
    if accuracy is not None:
        say(accuracy_line(accuracy, test, holdout))
    no_accuracy_note(held, test, holdout)
    custody_notes(custody, not_for_publication, seed, out)


def accuracy_line(accuracy: float, test: str | None, holdout: float) -> str:
    """The accuracy, labelled: it is computed exactly on rows of the custodian's, so it is
    not covered by the model's epsilon."""
    where = test if test is not None else f"the {holdout:.0%} held-out rows"
    return (
        f"accuracy on {where}: {100 * accuracy:.2f}% (computed exactly on those rows: outside "
        "the privacy budget, not differentially private; do not publish it with the model)"
    )


@nb_app.command("train")
@protects("input", "test")
def nb_train(
    input: InputArg,
    target: TargetOpt,
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
    custody: DpCustodyOpt = None,
    replay: ReplayOpt = None,
    not_for_publication: NotForPublicationOpt = False,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
) -> None:
    """Train a differentially private naive Bayes classifier and save it as JSON; report its
    accuracy on held-out rows or a test file (never on its training rows)."""
    from privlab.learn.dp_naive_bayes import predict_table, train_from_table

    table, train, held, feats, public, kept = training_input(
        input, method="dp-naive-bayes", out=out, force=force, seed=seed, custody=custody,
        replay=replay, not_for_publication=not_for_publication, target=target,
        features=features, bounds=bounds, test=test, holdout=holdout,
        drop_missing=drop_missing, domains=domains, domain=domain, encoding=encoding,
    )  # fmt: skip
    with quiet_experiment(not_for_publication):
        model = train_from_table(
            train, target=target, features=feats, epsilon=epsilon, estimator=estimator,
            mechanism=mechanism, bounds=public, bins=bins,
            rng=dp_rng(seed, replay, not_for_publication, table.fingerprint(), "dp-naive-bayes"),
        )  # fmt: skip
        # the ledger's key: the input the command read, held-out rows included
        model.input_sha256_ = table.fingerprint()
        # the accuracy first: a command that fails writes nothing, its model included
        accuracy = None if held is None else held_out(lambda: predict_table(model, held)[1], test)
        model.save(out, custody=custody, force=force, not_for_publication=not_for_publication,
                   custody_extra=kept)  # fmt: skip
    say(
        f"trained DP naive Bayes with {model.n_features_in_} features (epsilon = "
        f"{model.epsilon_:g}, estimator {model.estimator}) -> {out}"
    )
    training_notes(accuracy, held, test, holdout, custody, not_for_publication, seed, out)


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
    from privlab.learn.dp_naive_bayes import predict_table

    table = load_table(input, drop_missing=drop_missing, encoding=encoding)
    df, accuracy = predict_table(model, table)
    write_table_csv(df, out, force=force)
    msg = f"wrote {len(df)} predictions to {out}"
    if accuracy is not None:
        msg += f"; accuracy {100 * accuracy:.2f}%"
    say(msg)


@tree_app.command("train")
@protects("input", "test")
def tree_train(
    input: InputArg,
    target: TargetOpt,
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
    custody: DpCustodyOpt = None,
    replay: ReplayOpt = None,
    not_for_publication: NotForPublicationOpt = False,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
) -> None:
    """Train a DP decision tree, write it to a model file and print it; report its accuracy
    on held-out rows or a test file (never on its training rows)."""
    from privlab.learn.dp_tree import fit_table

    table, train, held, feats, public, kept = training_input(
        input, method="dp-tree", out=out, force=force, seed=seed, custody=custody,
        replay=replay, not_for_publication=not_for_publication, target=target,
        features=features, bounds=bounds, test=test, holdout=holdout,
        drop_missing=drop_missing, domains=domains, domain=domain, encoding=encoding,
    )  # fmt: skip
    with quiet_experiment(not_for_publication):
        rng = dp_rng(seed, replay, not_for_publication, table.fingerprint(), "dp-tree")
        model = fit_table(train, target, epsilon=epsilon, max_depth=max_depth,
                          criterion=criterion, features=feats, n_records=n_records, rng=rng,
                          bounds=public)  # fmt: skip
        # the ledger's key: the input the command read, held-out rows included
        model.input_sha256 = table.fingerprint()
        # the accuracy first: a command that fails writes nothing, its model included
        acc = None if held is None else held_out(lambda: tree_accuracy(model, held), test)
        model.save(out, custody=custody, force=force, not_for_publication=not_for_publication,
                   custody_extra=kept)  # fmt: skip
    out_console.print(model.export_text(), highlight=False, soft_wrap=True, markup=False)
    t = model.tree
    say(
        f"DP tree ({criterion}, epsilon = {t.accountant_.spent:g} spent, depth {t.depth_}, "
        f"{t.n_nodes_} nodes) -> {out}"
    )
    training_notes(acc, held, test, holdout, custody, not_for_publication, seed, out)


def tree_accuracy(model, held) -> float:
    """The share of ``held``'s rows whose class the DP tree ``model`` predicts right."""
    return model.accuracy(held.to_pandas())


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
    from privlab.learn.dp_tree import DPTreeModel

    m = DPTreeModel.load(model)
    df = load_table(input, drop_missing=drop_missing, encoding=encoding).to_pandas()
    pred = m.predict(df)
    col = f"predicted_{m.target}"
    write_table_csv(df.assign(**{col: pred}), out, force=force)
    msg = f"wrote {len(df)} predictions ({col}) to {out}"
    if m.target in df.columns:
        acc = m.accuracy(df, pred)
        msg += f"; accuracy {acc:.4f}"
    say(msg)
