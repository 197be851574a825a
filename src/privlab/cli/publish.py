"""Sanitizers: ``anatomize``, ``generalize``, ``pram``, ``alphabeta``, ``marginals``, ``check``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from privlab.cli._app import (
    BatchRowsOpt,
    ColumnsOpt,
    CustodyOpt,
    DomainOpt,
    DomainsOpt,
    DropMissingOpt,
    EncodingOpt,
    Engine,
    EngineOpt,
    ForceOpt,
    InputArg,
    KeepOpt,
    OutDirOpt,
    QiOpt,
    ReleaseArg,
    ReplayOpt,
    RepublishOpt,
    SeedOpt,
    SensitiveOpt,
    TargetOpt,
    app,
    declared_domains,
    note,
    open_input,
    open_stream,
    print_rows,
    protects,
    release_rng,
    report_privacy_warnings,
    save_engine_release,
    save_release,
    say,
    split,
    write_table_csv,
)
from privlab.errors import PrivlabError

HierarchiesOpt = Annotated[
    Path | None,
    typer.Option("--hierarchies", help="Directory of ARX hierarchy CSVs (<attribute>.csv)."),
]


# --- anatomy ---------------------------------------------------------------------------------
@app.command()
@protects("input")
def anatomize(
    input: InputArg,
    qi: QiOpt,
    sensitive: SensitiveOpt,
    l: Annotated[int, typer.Option("--l", help="Diversity: distinct values per group (>= 2).")],
    out: OutDirOpt,
    keep: KeepOpt = None,
    custody: CustodyOpt = None,
    seed: SeedOpt = None,
    replay: ReplayOpt = None,
    domains: DomainsOpt = None,
    domain: DomainOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    engine: EngineOpt = Engine.MEMORY,
    batch_rows: BatchRowsOpt = 1 << 20,
    force: ForceOpt = False,
    republish: RepublishOpt = False,
) -> None:
    """Publish a table with Anatomy (Xiao & Tao 2006): qit.csv, st.csv, release.json.
    With --engine stream a Parquet input is read batch by batch: writes qit.parquet and
    st.parquet."""
    from privlab.publish.anatomy import anatomize as run

    if engine is Engine.STREAM:
        table, names = open_stream(
            input, [*split(qi), sensitive, *split(keep)], domains=domains, domain=domain,
            drop_missing=drop_missing, encoding=encoding, batch_rows=batch_rows, seed=seed,
            custody=custody, replay=replay,
        )  # fmt: skip
        rng = seed
    else:
        table = open_input(input, out=out, custody=custody, seed=seed, force=force,
                           drop_missing=drop_missing, domains=domains, domain=domain,
                           encoding=encoding, engine=engine, replay=replay)  # fmt: skip
        rng, names = release_rng(seed, replay, table, "anatomy"), table.names
    release = run(table, qi=split(qi), sensitive=sensitive, keep=split(keep), l=l, rng=rng,
                  engine=engine)  # fmt: skip
    if engine != "memory":
        save_engine_release(release, names, out, custody=custody, force=force,
                            republish=republish)  # fmt: skip
        where = "Spark" if engine == "spark" else "streamed"
        say(f"anatomized into {release.metadata['n_groups']} groups ({where}) -> {out}")
        return
    p = save_release(release, table, out, custody=custody, force=force, republish=republish)
    say(
        f"anatomized {release.n_rows} tuples into {release.n_groups} groups of at least "
        f"{p.min_group} (distinct l = {p.distinct_l}) -> {out}"
    )


# --- generalization --------------------------------------------------------------------------
@app.command()
@protects("input")
def generalize(
    input: InputArg,
    qi: QiOpt,
    out: OutDirOpt,
    k: Annotated[int, typer.Option("--k", help="k-anonymity: minimum class size.")] = 2,
    sensitive: Annotated[
        str | None, typer.Option("--sensitive", help="The sensitive attribute.")
    ] = None,
    keep: KeepOpt = None,
    hierarchies: HierarchiesOpt = None,
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
    accounting: Annotated[
        str,
        typer.Option(
            "--accounting",
            help="How the entropy objective charges suppressed records: privlab | arx | "
            "arx-monotonic (ARX's precomputed non-uniform entropy, non-monotonic / monotonic).",
        ),
    ] = "privlab",
    custody: CustodyOpt = None,
    domains: DomainsOpt = None,
    domain: DomainOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    engine: EngineOpt = Engine.MEMORY,
    batch_rows: BatchRowsOpt = 1 << 20,
    force: ForceOpt = False,
    republish: RepublishOpt = False,
) -> None:
    """Generalize a table (k-anonymity, l-diversity, t-closeness): table.csv, release.json.
    With --engine stream (optimal method) a Parquet input is read batch by batch: writes
    table.parquet."""
    from privlab.data.datasets import DATASETS
    from privlab.publish.generalization import generalize as run

    if engine is Engine.STREAM:
        read = [*split(qi), *([sensitive] if sensitive else []), *split(keep)]
        table, names = open_stream(input, read, domains=domains, domain=domain,
                                   drop_missing=drop_missing, encoding=encoding,
                                   batch_rows=batch_rows)  # fmt: skip
    else:
        table = open_input(input, out=out, custody=custody, force=force,
                           drop_missing=drop_missing, domains=domains, domain=domain,
                           encoding=encoding, engine=engine)  # fmt: skip
        names = table.names
    dataset = input if input in DATASETS and not Path(input).exists() else None
    release = run(
        table, qi=split(qi), sensitive=sensitive, keep=split(keep), hierarchies=hierarchies,
        dataset=dataset, k=k, l=l, l_variant=l_variant, c=c, t=t, t_distance=t_distance,
        delta=delta, suppression=suppression, method=method, objective=objective,
        accounting=accounting, engine=engine,
    )  # fmt: skip
    if engine != "memory":
        save_engine_release(release, names, out, custody=custody, force=force,
                            republish=republish)  # fmt: skip
        meta, kept = release.metadata, release.input_measures or {}
        where = "Spark" if engine == "spark" else "streamed"
        say(
            f"generalized {kept.get('n_input')} records (optimal at levels {meta['node']}, "
            f"{where}): {kept.get('n_suppressed')} suppressed -> {out}"
        )
        return
    p = save_release(release, table, out, custody=custody, force=force, republish=republish)
    node = f" at levels {list(release.node)}" if release.node is not None else ""
    say(
        f"generalized {release.n_input} records ({release.algorithm}{node}): "
        f"{p.n_classes} classes, k = {p.k}, {release.n_suppressed} suppressed -> {out}"
    )


# --- pram ------------------------------------------------------------------------------------
def _default_group(default: str) -> type[TyperGroup]:
    """A command group whose first argument, when it is not a subcommand name or a help flag,
    is the input of the ``default`` subcommand: ``privlab pram INPUT ...`` means ``privlab
    pram randomize INPUT ...`` (an input file literally named like a subcommand is reached
    with ``privlab pram randomize ./estimate``)."""

    class _Group(TyperGroup):
        default_command = default  # read by the repeated-option check of privlab.cli

        def parse_args(self, ctx, args):  # type: ignore[no-untyped-def]
            if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
                args = [default, *args]
            return super().parse_args(ctx, args)

    return _Group


pram_app = typer.Typer(
    cls=_default_group("randomize"),
    help="PRAM (Ma 2006): `privlab pram INPUT --columns .. --scheme .. --p .. --out DIR`, "
    "then `privlab pram estimate DIR --columns a,b`, `privlab pram privacy DIR` and "
    "`privlab pram learn-bn DIR --structure FILE|--k2 --out model.json`, "
    "`privlab pram id3 DIR --target COLUMN` and "
    "`privlab pram pocket DIR --target COLUMN [--test FILE]`; items for Apriori: "
    "`privlab pram items INPUT --columns .. --group A=x|B=y --p .. --out DIR`, then "
    "`privlab pram apriori DIR --min-support 0.05`.",
    no_args_is_help=True,
)
app.add_typer(pram_app, name="pram")

PramPOpt = Annotated[float, typer.Option("--p", help="Randomization parameter in [0, 1].")]


def _parse_groups(specs: list[str]) -> dict[str, list[list[str]]]:
    groups: dict[str, list[list[str]]] = {}
    for spec in specs:
        col, sep, vals = spec.partition("=")
        if not sep or not col.strip() or not vals.strip():
            raise PrivlabError(f"--group {spec!r} must look like COLUMN=v1|v2|v3")
        groups.setdefault(col.strip(), []).append([v.strip() for v in vals.split("|")])
    return groups


@pram_app.command("randomize")
@protects("input")
def pram_randomize(
    input: InputArg,
    columns: Annotated[
        str, typer.Option("--columns", help="Comma-separated columns to randomize.")
    ],
    p: PramPOpt,
    out: OutDirOpt,
    keep: KeepOpt = None,
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
    custody: CustodyOpt = None,
    seed: SeedOpt = None,
    replay: ReplayOpt = None,
    domains: DomainsOpt = None,
    domain: DomainOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
    republish: RepublishOpt = False,
    engine: EngineOpt = Engine.MEMORY,
    batch_rows: BatchRowsOpt = 1 << 20,
) -> None:
    """Randomize columns with PRAM; writes randomized.csv and release.json (every matrix).
    With --engine stream a Parquet input is randomized batch by batch and its rows shuffled
    out of core: writes randomized.parquet (custody: truth.parquet)."""
    from privlab.publish.randomization import pram, require_matrix_sizes

    options = dict(
        columns=split(columns), keep=split(keep), scheme=scheme, p=p, p2=p2,
        groups=_parse_groups(group or []), simultaneous=simultaneous, invariant=invariant,
    )  # fmt: skip
    # a matrix that the declared domains already make too large: refused before any read
    declared = declared_domains(domains, domain)
    sizes = {c: len(v) for c, v in declared.items()}
    require_matrix_sizes(sizes, split(columns), simultaneous, scheme=scheme)
    if engine is Engine.STREAM:
        _pram_stream(input, out, options, custody=custody, seed=seed, replay=replay,
                     domains=domains, domain=domain, drop_missing=drop_missing,
                     encoding=encoding, force=force, batch_rows=batch_rows,
                     republish=republish)  # fmt: skip
        return
    table = open_input(input, out=out, custody=custody, seed=seed, force=force,
                       drop_missing=drop_missing, domains=domains, domain=domain,
                       encoding=encoding, engine=engine, replay=replay)  # fmt: skip
    release = pram(table, **options, rng=release_rng(seed, replay, table, "pram"), engine=engine)
    if engine == "spark":
        save_engine_release(
            release, table.names, out, custody=custody, force=force, republish=republish
        )
        say(f"randomized {', '.join(split(columns))} ({scheme}, p = {p:g}, Spark) -> {out}")
        return
    save_release(release, table, out, custody=custody, force=force, republish=republish,
                 check=False)  # fmt: skip
    say(
        f"randomized {', '.join(release.randomized_columns) or 'no column'} of "
        f"{release.n_rows} records ({scheme}, p = {p:g}) -> {out}"
    )


def _pram_stream(
    input: str,
    out: Path,
    options: dict[str, Any],
    *,
    custody: Path | None,
    seed: int | None,
    replay: Path | None,
    domains: Path | None,
    domain: list[str] | None,
    drop_missing: bool,
    encoding: str | None,
    force: bool,
    batch_rows: int,
    republish: bool,
) -> None:
    """``pram randomize --engine stream``: the library's ``pram(engine="stream")``, saved."""
    from privlab.publish.randomization import pram

    source, names = open_stream(
        input, [*options["columns"], *options["keep"]], domains=domains, domain=domain,
        drop_missing=drop_missing, encoding=encoding, batch_rows=batch_rows, seed=seed,
        custody=custody, replay=replay,
    )  # fmt: skip
    release = pram(source, **options, rng=seed, engine="stream")
    save_engine_release(release, names, out, custody=custody, force=force,
                        republish=republish)  # fmt: skip
    say(
        f"randomized {', '.join(release.randomized_columns) or 'no column'} of "
        f"{release.n_rows} records ({options['scheme']}, p = {options['p']:g}, streamed) -> {out}"
    )


@pram_app.command("estimate")
@protects("directory")
def pram_estimate(
    directory: ReleaseArg,
    columns: ColumnsOpt,
    method: Annotated[str, typer.Option("--method", help="moment | em.")] = "moment",
    level: Annotated[float, typer.Option("--level", help="Confidence level.")] = 0.95,
    out: Annotated[
        Path | None, typer.Option("--out", help="Also write the table to this CSV.")
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Estimate the true joint counts of columns, with normal confidence intervals."""
    from privlab.estimate.pram_release import estimate_release
    from privlab.publish.randomization import PramRelease

    est = estimate_release(PramRelease.load(directory), split(columns), method=method, level=level)
    if est.summed_out:
        note(
            f"estimated with {', '.join(est.summed_out)} (randomized jointly with them through "
            "a matrix that does not reduce to the columns asked for), then summed out"
        )
    rows = est.to_rows()
    print_rows(rows, title=f"{method} estimate, {level:.0%} intervals ({directory})")
    if out is not None:
        import pandas as pd

        write_table_csv(pd.DataFrame(rows), out, force=force)


@pram_app.command("privacy")
def pram_privacy(
    directory: ReleaseArg,
    rho1: Annotated[float, typer.Option("--rho1", help="Prior for the breach bound.")] = 0.1,
) -> None:
    """gamma, breach bound rho2*, H(X|X~) and (K_p, Dist_K) of each randomized attribute."""
    from privlab.publish.randomization import PramRelease

    rows = PramRelease.load(directory).privacy(rho1=rho1).details["blocks"]
    print_rows(
        [{**r, "columns": "+".join(r["columns"])} for r in rows],
        title=f"PRAM privacy of {directory} (rho1 = {rho1:g})",
    )


def _original_codes(release, columns: list[str]):
    """The original records of a PRAM release with its custody: each randomized column's
    true values (custody), each kept column as published; codes in the release's domains
    (-1 for a value the release's domain lacks)."""
    import numpy as np

    truth = release.custody.truth
    schema = release.table.schema
    cols = []
    for c in columns:
        table = truth if truth is not None and c in truth.names else release.table
        cols.append(schema[c].encode(table.decode(c), unknown=-1))
    return np.column_stack(cols)


@pram_app.command("id3")
@protects("directory", "custody")
def pram_id3(
    directory: ReleaseArg,
    target: TargetOpt,
    attributes: Annotated[
        str | None, typer.Option("--attributes", help="Comma-separated features (default: all).")
    ] = None,
    min_count: Annotated[
        float,
        typer.Option("--min-count", help="A node with fewer estimated records is empty."),
    ] = 1.0,
    purity: Annotated[
        float, typer.Option("--purity", help="A node whose top class share reaches this is pure.")
    ] = 1.0,
    max_depth: Annotated[
        int | None, typer.Option("--max-depth", help="Depth limit (default: none, as ID3).")
    ] = None,
    custody: Annotated[
        Path | None,
        typer.Option(
            "--custody", help="The release's custody: the tree's accuracy on the original records."
        ),
    ] = None,
) -> None:
    """Learn an ID3 tree from a PRAM release (Ma 2006, Sec. 7.2); print it."""

    from privlab.learn.pram_id3 import PramID3Classifier
    from privlab.release.base import load_release

    release = load_release(directory, custody=custody)
    if not 0 < purity <= 1:
        raise PrivlabError(f"--purity must lie in (0, 1], got {purity}")
    if min_count < 0:
        raise PrivlabError(f"--min-count must be >= 0, got {min_count:g}")
    if max_depth is not None and max_depth < 0:
        raise PrivlabError(f"--max-depth must be >= 0, got {max_depth}")
    tree = PramID3Classifier(min_count=min_count, purity=purity, max_depth=max_depth)
    tree.fit_release(release, target, split(attributes) or None)
    say(tree.export_text())
    say(f"{tree.n_nodes_} nodes, depth {tree.depth_} (estimated class counts in brackets)")
    if custody is not None:
        original = _original_codes(release, [*tree.feature_names_, target])
        X, y = original[:, :-1], original[:, -1]
        acc = float((tree.predict(X) == y).mean())
        say(f"accuracy on the {y.size} original records: {acc:.4f}")


@pram_app.command("learn-bn")
@protects("directory", "structure")
def pram_learn_bn(
    directory: ReleaseArg,
    out: Annotated[Path, typer.Option("--out", help="Model JSON file to write.")],
    structure: Annotated[
        Path | None,
        typer.Option("--structure", help='DAG as JSON: {"node": ["parent", ...], ...}.'),
    ] = None,
    k2: Annotated[bool, typer.Option("--k2", help="Learn the structure with K2.")] = False,
    order: Annotated[
        str | None, typer.Option("--order", help="K2 node order (default: the columns).")
    ] = None,
    max_parents: Annotated[
        int | None, typer.Option("--max-parents", help="K2: at most U parents (default 3).")
    ] = None,
    score: Annotated[str, typer.Option("--score", help="K2 score: k2 | bic.")] = "k2",
    penalty: Annotated[float, typer.Option("--penalty", help="BIC penalty multiplier C*.")] = 1.0,
    eta: Annotated[
        str, typer.Option("--eta", help="K2 acceptance threshold in (0, 1] or 'variable'.")
    ] = "1",
    eta_rule: Annotated[str, typer.Option("--eta-rule", help="relative | product.")] = "relative",
    estimator: Annotated[str, typer.Option("--estimator", help="moment | em.")] = "moment",
    prior: Annotated[
        float | None, typer.Option("--prior", help="Dirichlet pseudo-count (MAP); none: ML.")
    ] = None,
    negative: Annotated[
        str, typer.Option("--negative", help="Negative estimated counts: clip | error.")
    ] = "clip",
    force: ForceOpt = False,
) -> None:
    """Learn a Bayesian network from a PRAM release (Ma 2006, Ch. 5): CPTs with their sds."""
    from privlab._io import check_output, read_json, write_json
    from privlab.learn.pram_bn import PramData, learn_parameters
    from privlab.learn.pram_k2 import k2_search
    from privlab.release.base import load_release

    if (structure is None) == (not k2):
        raise PrivlabError("give either --structure FILE or --k2")
    if not k2 and (order is not None or max_parents is not None):
        raise PrivlabError("--order and --max-parents go with --k2")
    if max_parents is not None and max_parents < 0:
        raise PrivlabError(f"--max-parents must be >= 0, got {max_parents}")
    check_output(out, force=force)
    release = load_release(directory)
    data = PramData.from_release(release)
    search = None
    if k2:
        try:
            eta_value: float | str = float(eta)
        except ValueError:
            eta_value = eta
        search = k2_search(
            data, split(order) or None, max_parents=3 if max_parents is None else max_parents,
            score=score, penalty=penalty, eta=eta_value, eta_rule=eta_rule,
            p=getattr(release, "p", None) if eta_value == "variable" else None,
            estimator=estimator,
        )  # fmt: skip
        dag = search.parents
    else:
        dag = read_json(structure, what="structure file")
        if not isinstance(dag, dict) or not all(
            isinstance(v, list) and all(isinstance(x, str) for x in v) for v in dag.values()
        ):
            raise PrivlabError(
                f"structure file {structure} must map each node to a list of parents, "
                'e.g. {"B": ["A"]}'
            )
    net = learn_parameters(data, dag, estimator=estimator, prior=prior, negative=negative)
    model = net.to_dict()
    if search is not None:
        model["structure_search"] = search.to_dict()
    write_json(out, model, force=force)
    rows = [{k: v for k, v in r.items() if k != "count"} for r in net.to_rows()]
    print_rows(rows, title=f"Bayesian network from {directory} ({estimator}; sd: Ma Sec. 5.4.2)")
    say(f"learned {len(net.nodes)} nodes, {len(net.edges)} links -> {out}")


#: The most pocket draws `pram pocket` runs: the draws are drawn at once (8 bytes each).
MAX_POCKET_DRAWS = 10_000_000
POCKET_DRAWS_WHY = "500 times the default of 20,000 (the draws are held in memory at once)"


@pram_app.command("pocket")
@protects("directory")
def pram_pocket(
    directory: ReleaseArg,
    target: TargetOpt,
    features: Annotated[
        str | None, typer.Option("--features", help="Comma-separated features (default: all).")
    ] = None,
    plain: Annotated[
        bool, typer.Option("--plain", help="The plain pocket on the randomized rows (baseline).")
    ] = False,
    n_iter: Annotated[int, typer.Option("--n-iter", help="Pocket draws.", min=1)] = 20_000,
    no_ratchet: Annotated[
        bool, typer.Option("--no-ratchet", help="Gallant's pocket without the ratchet check.")
    ] = False,
    test: Annotated[
        str | None,
        typer.Option("--test", help="Original records (CSV/Parquet or dataset) for accuracy."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Also write the model to this JSON file.")
    ] = None,
    seed: SeedOpt = None,
    force: ForceOpt = False,
) -> None:
    """Learn a linear classifier from a PRAM release: the weighted Pocket (Ma 2006, Ch. 6)."""
    import numpy as np

    from privlab._io import check_output, write_json
    from privlab._memory import require_at_most
    from privlab.data.datasets import load_input
    from privlab.learn.pram_pocket import PramPocketClassifier
    from privlab.release.base import load_release

    require_at_most("--n-iter", n_iter, MAX_POCKET_DRAWS, POCKET_DRAWS_WHY)
    if out is not None:
        check_output(out, force=force)
    release = load_release(directory)
    clf = PramPocketClassifier(
        weighted=not plain,
        n_iter=n_iter,
        ratchet=not no_ratchet,
        target=target,
        features=split(features) or None,
        rng=seed,
    ).fit(release)
    model = clf.to_dict()
    rows = []
    for pk in model["pockets"]:
        for name, w in [*pk["weights"].items(), ("(bias)", pk["bias"])]:
            rows.append({"positive class": pk["positive_class"], "feature": name, "weight": w})
    kind = "plain" if plain else "weighted (EM posterior)"
    print_rows(rows, title=f"{kind} pocket from {directory}, class {target!r}")
    say(f"training accuracy (EM-weighted cells): {clf.train_accuracy_:.4f}")
    if test is not None:
        schema = release.table.schema
        domains = {c: list(schema[c].domain) for c in [*clf.features_, target]}
        records = load_input(test, domains=domains)
        if target not in records.schema:
            raise PrivlabError(f"--test {test}: no class column {target!r}")
        truth = np.asarray(records.schema[target].domain, dtype=object)[
            records.columns([target])[:, 0]
        ]
        pred = clf.predict(clf.encode(records))
        accuracy = float(np.mean([str(a) == str(b) for a, b in zip(pred, truth)]))
        model["test"] = {"records": records.n_rows, "accuracy": accuracy}
        say(f"accuracy on {records.n_rows} original records of {test}: {accuracy:.4f}")
    if out is not None:
        write_json(out, model, force=force)
        say(f"model -> {out}")


@pram_app.command("items")
@protects("input")
def pram_items_cmd(
    input: InputArg,
    columns: Annotated[
        str, typer.Option("--columns", help="Comma-separated columns whose values become items.")
    ],
    p: PramPOpt,
    out: OutDirOpt,
    group: Annotated[
        list[str] | None,
        typer.Option(
            "--group",
            help="Items randomized together, ITEM|ITEM|... with items named COLUMN=VALUE "
            "(repeatable; one owner's items); items in no group are randomized alone.",
        ),
    ] = None,
    binary: Annotated[
        bool, typer.Option("--binary", help="The columns already are 0/1 items.")
    ] = False,
    custody: CustodyOpt = None,
    seed: SeedOpt = None,
    replay: ReplayOpt = None,
    domains: DomainsOpt = None,
    domain: DomainOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
    republish: RepublishOpt = False,
) -> None:
    """Items for Apriori, randomized group by group (Ma 2006, Sec. 7.1.2): every value of the
    columns becomes an item, each group's presence pattern goes through the M-category
    matrix; writes randomized.csv and release.json (every group's matrix)."""
    from privlab.publish.randomization import pram_items

    table = open_input(input, out=out, custody=custody, seed=seed, force=force,
                       drop_missing=drop_missing, domains=domains, domain=domain,
                       encoding=encoding)  # fmt: skip
    groups = []
    for spec in group or []:
        items = [x.strip() for x in spec.split("|")]
        if not all(items):
            raise PrivlabError(f"--group {spec!r} must look like COLUMN=v1|COLUMN=v2|OTHER=v")
        groups.append(items)
    cols = split(columns)
    release = pram_items(table, columns=cols, groups=groups, p=p, binary=binary,
                         rng=release_rng(seed, replay, table, "pram"))  # fmt: skip
    save_release(release, table, out, custody=custody, force=force, republish=republish,
                 check=False, covers=cols, why_dropped="not turned into items",
                 keep_hint=False)  # fmt: skip
    sizes = sorted((len(b.columns) for b in release.blocks), reverse=True)
    say(
        f"randomized {len(release.table.names)} items of {release.n_rows} records in "
        f"{len(sizes)} groups (sizes {', '.join(map(str, sizes))}; m-category, p = {p:g}) "
        f"-> {out}"
    )


@pram_app.command("apriori")
@protects("directory", "custody")
def pram_apriori(
    directory: ReleaseArg,
    min_support: Annotated[
        float, typer.Option("--min-support", help="sup_min in (0, 1]: the support share.")
    ] = 0.05,
    max_len: Annotated[
        int | None, typer.Option("--max-len", help="Largest itemset size (default: none).")
    ] = None,
    items: Annotated[
        str | None, typer.Option("--items", help="Comma-separated items (default: all).")
    ] = None,
    show: Annotated[
        int, typer.Option("--show", help="Print at most this many itemsets.", min=0)
    ] = 40,
    custody: Annotated[
        Path | None,
        typer.Option(
            "--custody",
            help="The release's custody: true supports and Ma's four measures (Sec. 7.1.4).",
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write every itemset found to this CSV.")
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Frequent itemsets from an item release with estimated supports (Ma 2006, Sec. 7.1)."""
    from privlab._io import check_output
    from privlab.learn.pram_apriori import PramApriori, score_itemsets
    from privlab.release.base import load_release

    if max_len is not None and max_len < 1:
        raise PrivlabError(f"--max-len must be >= 1, got {max_len}")
    model = PramApriori(min_support=min_support, max_len=max_len, progress=True).check_params()
    if out is not None:
        check_output(out, force=force)
    release = load_release(directory, custody=custody)
    found = model.fit_release(release, split(items) or None).itemsets_
    frame = found.to_pandas()
    n = found.n_records
    if custody is not None:
        original = _original_codes(release, list(found.items))
        truth = PramApriori(min_support=min_support, max_len=max_len).fit(original, p=0.0)
        scores, frame["true_support"] = score_itemsets(found, original, truth.itemsets_.itemsets)
    order = frame.sort_values(["size", "support"], ascending=[True, False])
    rows = order.head(show).to_dict("records")
    print_rows(rows, title=f"frequent itemsets of {directory} (sup_min = {min_support:g})")
    if len(frame) > show:
        say(f"... {len(frame) - show} more (--show N, or --out FILE for all)")
    levels = ", ".join(f"{f}/{c} of size {k}" for k, c, f in found.levels)
    say(f"{len(found)} frequent itemsets from {n} records (frequent/candidates: {levels})")
    if custody is not None:
        say(
            f"against the original records: {scores.truly_frequent} truly frequent; "
            f"{scores.false_positives} false positives ({scores.false_positive_pct:.1f}%), "
            f"{scores.false_negatives} false negatives ({scores.false_negative_pct:.1f}%), "
            f"average support error {scores.avg_support_error:.4f}"
        )
    if out is not None:
        write_table_csv(frame, out, force=force)
        say(f"itemsets -> {out}")


# --- check -----------------------------------------------------------------------------------
@app.command()
def check(directory: ReleaseArg) -> None:
    """Privacy of a release: k, uniques, risk, l, t, delta; flags re-identifying columns;
    refuses a release that does not hold what its parameters claim (k, l)."""
    from privlab.release.base import load_release

    release = load_release(directory)
    claims = release.claims()
    broken = [c for c in claims if not c["holds"]]
    if broken:  # before any table: a release that breaks its own claim is not checked
        c = broken[0]
        raise PrivlabError(
            f"{directory} claims {c['claim']} in its parameters but does not hold it "
            f"({c['measured']}): edited, or not written by privlab; do not publish it"
        )
    report = release.privacy()
    rows = [{"measure": k, "value": v} for k, v in report.measures().items()]
    rows += [{"measure": "linkable columns", "value": ", ".join(report.linkable)}]
    rows += [{"measure": f"claims {c['claim']}", "value": f"holds ({c['measured']})"}
             for c in claims]  # fmt: skip
    print_rows(rows, title=f"{release.method} release {directory}")
    blocks = report.details.get("blocks")
    if blocks:
        print_rows(
            [{**r, "columns": "+".join(r["columns"])} for r in blocks],
            title="randomized columns (Ma 2006, Sec. 3.1)",
        )
    if release.method == "alphabeta":
        # every row of a view is unique by design (V is a set); what protects a person is
        # that a row may be inserted: show the exact posteriors instead of the k warnings
        details = dict(report.details)
        vacuous = details.get("guarantee_vacuous") and details.get("gamma") is not None
        if vacuous:
            # the (d, gamma) guarantee holds formally, for priors up to d; the view itself
            # shows a share of real tuples above d, so it covers no realistic adversary
            details["private"] = (
                f"{details['private']} only for priors <= d = {details['d']:g}: vacuous, the "
                f"view estimates the share of real tuples at "
                f"{details['estimated_real_share']:.3g}"
            )
        rows = [{"measure": k, "value": v} for k, v in details.items()]
        print_rows(rows, title="alpha-beta membership privacy (Rastogi et al. 2007)")
        if vacuous:
            note(
                f"the ({details['d']:g}, {details['gamma']:.4g})-privacy of this view is "
                "vacuous: an adversary who estimates the share of real tuples from the view "
                "holds a prior above d; `privlab report` measures the membership attack at "
                "that prior"
            )
        return
    if release.method == "marginals":
        rows = [
            {"measure": k, "value": "; ".join(v) if isinstance(v, list) else v}
            for k, v in report.details.items()
        ]
        print_rows(
            rows,
            title="k-link, k-combinatorial and MaxEnt l-diversity (Kifer & Gehrke 2006)",
        )
    report_privacy_warnings(report)
    if report.max_disclosure is not None:
        note(
            f"max_disclosure {report.max_disclosure:.3g} is what the release promises against "
            "an attacker who does not learn; `privlab report` attacks it as a learner would "
            "and decides whether it may be published"
        )


# --- alpha-beta ------------------------------------------------------------------------------
alphabeta_app = typer.Typer(
    cls=_default_group("publish"),
    help="The alpha-beta algorithm (Rastogi, Suciu & Hong 2007): `privlab alphabeta INPUT "
    "--columns a,b --d 0.05 --gamma 0.5 --custody C --out DIR`, then `privlab alphabeta "
    "estimate DIR --where a=x,b=y`.",
    no_args_is_help=True,
)
app.add_typer(alphabeta_app, name="alphabeta")


@alphabeta_app.command("publish")
@protects("input")
def alphabeta_publish(
    input: InputArg,
    columns: Annotated[
        str, typer.Option("--columns", help="Comma-separated attributes of the domain D.")
    ],
    out: OutDirOpt,
    alpha: Annotated[float | None, typer.Option("--alpha", help="alpha in (0, 1].")] = None,
    beta: Annotated[
        float | None, typer.Option("--beta", help="beta in [0, 1), alpha + beta <= 1.")
    ] = None,
    d: Annotated[
        float | None, typer.Option("--d", help="The adversary's prior bound (Thm 4.3).")
    ] = None,
    gamma: Annotated[
        float | None, typer.Option("--gamma", help="The posterior bound, > d (Thm 4.3).")
    ] = None,
    custody: CustodyOpt = None,
    seed: SeedOpt = None,
    replay: ReplayOpt = None,
    domains: DomainsOpt = None,
    domain: DomainOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
    republish: RepublishOpt = False,
) -> None:
    """Publish an alpha-beta view over the product of the columns' (declared) domains."""
    from privlab.publish.alpha_beta import alphabeta, check_parameters, choose_parameters

    # parameters are checked before the input is read or anything is written
    if alpha is not None and beta is not None:
        check_parameters(alpha, beta)
    elif alpha is not None or beta is not None:
        raise PrivlabError("give both --alpha and --beta (or --d and --gamma instead)")
    elif d is None or gamma is None:
        raise PrivlabError("give --alpha and --beta, or --d and --gamma")
    if d is not None or gamma is not None:
        if d is None or gamma is None:
            raise PrivlabError("give both --d and --gamma")
        choose_parameters(d, gamma)
    table = open_input(input, out=out, custody=custody, seed=seed, force=force,
                       drop_missing=drop_missing, domains=domains, domain=domain,
                       encoding=encoding)  # fmt: skip
    release = alphabeta(
        table, columns=split(columns), alpha=alpha, beta=beta, d=d, gamma=gamma,
        rng=release_rng(seed, replay, table, "alphabeta"),
    )  # fmt: skip
    # not checked: a view is a set of distinct tuples, every row unique by construction
    # (its privacy is the membership posterior: `privlab check` and `privlab report`)
    save_release(
        release, table, out, custody=custody, force=force, republish=republish, check=False,
        why_dropped="not in --columns", keep_hint=False,
        custody_holds="the seed, its salt and which rows are real",
    )  # fmt: skip
    say(
        f"published an alpha-beta view of {release.n_rows} tuples over a domain of "
        f"{release.domain_size:,} (alpha = {release.alpha:.4g}, beta = {release.beta:.4g}) "
        f"-> {out}"
    )


@alphabeta_app.command("estimate")
@protects("directory")
def alphabeta_estimate(
    directory: ReleaseArg,
    where: Annotated[
        list[str] | None,
        typer.Option(
            "--where",
            help="COL=VAL[,COL=VAL..] (a value may be v1|v2); conditions are ANDed; "
            "repeatable; none: count every tuple.",
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Also write the estimate to this CSV.")
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Estimate a counting query from an alpha-beta view, with its sd (Rastogi et al. 4.2)."""
    from privlab.publish.alpha_beta import AlphaBetaRelease, parse_where

    query = parse_where(where or [])
    est = AlphaBetaRelease.load(directory).estimate(query)
    frame = est.to_pandas()
    print_rows(frame.to_dict("records"), title=f"alpha-beta estimate ({directory})")
    if out is not None:
        write_table_csv(frame, out, force=force)


# --- anonymized marginals --------------------------------------------------------------------
@app.command()
@protects("input")
def marginals(
    input: InputArg,
    qi: QiOpt,
    sensitive: SensitiveOpt,
    out: OutDirOpt,
    k: Annotated[int, typer.Option("--k", help="k-anonymity of the base, k-link of all.")] = 10,
    l: Annotated[float, typer.Option("--l", help="l-diversity (MaxEnt).")] = 2.0,
    l_variant: Annotated[
        str, typer.Option("--l-variant", help="entropy | recursive | distinct (MaxEnt).")
    ] = "entropy",
    c: Annotated[float, typer.Option("--c", help="c of recursive (c,l)-diversity.")] = 1.0,
    width: Annotated[
        int, typer.Option("--width", help="Largest number of attributes of a marginal.")
    ] = 2,
    combinatorial: Annotated[
        str,
        typer.Option(
            "--combinatorial",
            help="k-combinatorial anonymity: auto (checked by ILP where the leaf domain "
            "allows, else a note) | require (else refused) | off.",
        ),
    ] = "auto",
    max_marginals: Annotated[
        int, typer.Option("--max-marginals", help="Most marginals added to the base.")
    ] = 5,
    hierarchies: HierarchiesOpt = None,
    custody: CustodyOpt = None,
    domains: DomainsOpt = None,
    domain: DomainOpt = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
    republish: RepublishOpt = False,
) -> None:
    """Anonymized marginals (Kifer & Gehrke 2006): a k-anonymous base table plus the
    marginals that lower KL(data || max-ent) most while k-link anonymity, MaxEnt (entropy)
    l-diversity and, where the ILP may run, k-combinatorial anonymity hold."""
    from privlab.data.datasets import DATASETS
    from privlab.publish.marginals import publish_marginals

    for option, value, least in (("--k", k, 1), ("--width", width, 2),
                                 ("--max-marginals", max_marginals, 0)):  # fmt: skip
        if value < least:
            raise PrivlabError(f"need {option} >= {least}, got {value}")
    table = open_input(input, out=out, custody=custody, force=force, drop_missing=drop_missing,
                       domains=domains, domain=domain, encoding=encoding)  # fmt: skip
    dataset = input if input in DATASETS and not Path(input).exists() else None
    release = publish_marginals(
        table, qi=split(qi), sensitive=sensitive, k=k, l=l, l_variant=l_variant, c=c,
        width=width, max_marginals=max_marginals, combinatorial=combinatorial,
        hierarchies=str(hierarchies) if hierarchies else None, dataset=dataset,
    )  # fmt: skip
    save_release(
        release, table, out, custody=custody, force=force, republish=republish,
        covers=release.names,
        why_dropped="neither --qi nor --sensitive", keep_hint=False,
        custody_holds="the input's fingerprint",
    )  # fmt: skip
    path = release.kl_path
    say(
        f"published a base table and {len(release.marginals) - 1} marginal(s): KL "
        f"{path[0]:.4g} -> {path[-1]:.4g} nats -> {out}"
    )
