"""``privlab report`` (one release -> a verdict, as HTML and JSON) and ``privlab audit``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from privlab.cli._app import (
    DropMissingOpt,
    EncodingOpt,
    ForceOpt,
    InputArg,
    QiOpt,
    app,
    load_table,
    print_rows,
    protects,
    refuse_inside_release,
    say,
    split,
    write_table_csv,
)
from privlab.errors import PrivlabError

ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="TOML file with the custodian's thresholds ([thresholds]) and the attack, "
        "control and utility settings (see `privlab.report.config`).",
    ),
]


@app.command()
@protects("directory", "config", "population", "original")
def report(
    directory: Annotated[
        Path,
        typer.Argument(
            help="A release directory, or a DP output: a histogram (CSV/Parquet) or a model "
            "file (JSON) of `privlab dp`, with its --custody."
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", help="The report to write (HTML; the JSON goes beside it).")
    ],
    custody: Annotated[
        Path | None,
        typer.Option(
            "--custody",
            help="The release's custody directory: its true values judge the attacks, and "
            "each person's risk is written there (person-risk.csv), never in the report, "
            "with the salt of the attacks' seed (report-salt.json: kept from the first "
            "report, so the same config and custody give the same report).",
        ),
    ] = None,
    population: Annotated[
        str | None,
        typer.Option(
            "--population",
            help="The people (CSV/Parquet or bundled dataset). For a generalized release: "
            "each person's exact quasi-identifiers and true sensitive value, which the "
            "deFinetti attack links to the classes; for a marginals release: the same, read "
            "by the max-ent attack; for the others: the people an attacker "
            "may link to on the published non-sensitive columns (exact journalist and "
            "marketer risk).",
        ),
    ] = None,
    attacks: Annotated[
        str | None,
        typer.Option(
            "--attacks",
            help="Comma-separated attacks: definetti, em (default: config); a marginals "
            "release takes only maxent, an alpha-beta release only membership.",
        ),
    ] = None,
    config: ConfigOpt = None,
    original: Annotated[
        str | None,
        typer.Option(
            "--original",
            help="For a DP histogram: the input it was computed from (CSV/Parquet or bundled "
            "dataset), to measure the noise actually added. For a synthetic release (privlab "
            "synth): the real rows it was made from (required).",
        ),
    ] = None,
    control: Annotated[
        str | None,
        typer.Option(
            "--control",
            help="For a synthetic release: real rows of the same population it was not made "
            "from (CSV/Parquet or bundled dataset, e.g. adult-test), the control of every "
            "attack and the test set of its classifier.",
        ),
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help="Exit with status 3 when the verdict is this level or worse: FAIL, or REVIEW "
            "(REVIEW or FAIL), so that a pipeline can gate on it; the report is written "
            "either way. Default: status 0 whatever the verdict.",
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the verdict on stdout as one JSON object (level, reasons, next step, "
            "the files written); the other lines go to stderr.",
        ),
    ] = False,
    force: ForceOpt = False,
) -> None:
    """Attack a release and judge it: PASS / REVIEW / FAIL with the reasons and the next step,
    identity and attribute risk with intervals, utility and diagnostics, as one HTML page."""
    from privlab.release.base import read_meta
    from privlab.report import build, load_config
    from privlab.report.audit import PERSON_RISK
    from privlab.report.build import MODEL_ATTACKS, check_attacks
    from privlab.report.config import ATTACKS

    gate = _gate(fail_on)
    if out.suffix.lower() not in (".html", ".htm"):
        raise PrivlabError(f"--out {out}: the report is an HTML file (name it .html)")
    refuse_inside_release(out)  # the report (and its JSON) would be published with it
    cfg = load_config(config)
    names = tuple(split(attacks)) if attacks is not None else None
    if names is not None:
        known = (*ATTACKS, *MODEL_ATTACKS.values())
        bad = [n for n in names if n not in known]
        if bad or not names:
            raise PrivlabError(
                f"--attacks: {bad[0] if bad else '(none)'!r} is not an attack ({', '.join(known)})"
            )
    if directory.is_file():  # a DP output: its guarantee, judged without attacking
        if names is not None or population is not None:
            raise PrivlabError(
                f"{directory} is a DP output: it is not attacked (its guarantee bounds every "
                "attack), so --attacks and --population do not apply"
            )
        _report_dp(directory, out, custody, cfg, original, as_json, gate, force)
        return
    meta = read_meta(directory)  # a directory that is not a release: one line, before anything
    if meta["method"] == "dp-synthetic":
        _report_dp_synthetic(directory, out, custody, cfg, original, control, names,
                             population, as_json, gate, force)  # fmt: skip
        return
    if control is not None:
        raise PrivlabError("--control applies to a synthetic release, not to this one")
    if original is not None:
        raise PrivlabError(
            "--original applies to a DP histogram (a file) or a synthetic release, not to this one"
        )
    check_attacks(meta["method"], names)  # an attack the release's kind does not take
    rep = _write_report(
        out, custody, force,
        lambda salt, person_risk: build(
            directory, custody=custody, config=cfg, attacks=names, person_risk=person_risk,
            progress=True, population=population, attack_salt=salt,
        ),
    )  # fmt: skip
    more = {} if custody is None else {"person_risk": str(custody / PERSON_RISK)}
    _say_verdict(rep.verdict, out, as_json, gate, more)


def _report_dp_synthetic(directory: Path, out: Path, custody, cfg, original, control, names,
                         population, as_json: bool, gate, force: bool) -> None:  # fmt: skip
    """``privlab report`` of a DP synthetic release: judged against the real rows it was
    made from (--original) and a control set (--control)."""
    from privlab.report.dp_synthetic import report_dp_synthetic

    if original is None:
        raise PrivlabError(
            f"{directory} is a synthetic release: give --original (the real rows it was made "
            "from) and, for a verdict beyond REVIEW, --control (real rows it was not made from)"
        )
    if names is not None or population is not None:
        raise PrivlabError(
            "a synthetic release is attacked by the synthetic-data assessment (Anonymeter, the "
            "learning attacker, distance to closest record, membership): --attacks and "
            "--population do not apply"
        )
    rep = _write_report(
        out, custody, force,
        lambda salt, person_risk: report_dp_synthetic(
            directory, original, control=control, config=cfg, attack_salt=salt
        ),
    )  # fmt: skip
    _say_verdict(rep.verdict, out, as_json, gate)


def _write_report(out: Path, custody: Path | None, force: bool, make) -> Any:
    """Write a report (its page and JSON, and with a custody the people's risks and a new
    attack salt) atomically: ``make(salt, person_risk_path)`` builds it.  The attacks' salt
    is the custody's, or a new one kept there with this report (so that the same config
    and custody give the same report); without custody it is not kept."""
    import dataclasses

    from privlab._io import atomic_outputs
    from privlab.report.audit import PERSON_RISK
    from privlab.report.build import (
        ATTACK_SALT,
        fresh_attack_salt,
        read_attack_salt,
        write_attack_salt,
    )

    outputs = [(out, "file"), (out.with_suffix(".json"), "file")]
    salt = read_attack_salt(custody) if custody is not None and custody.is_dir() else None
    new_salt = salt is None and custody is not None
    if custody is not None:  # none when no attack gives a per-person risk
        outputs.append((custody / PERSON_RISK, "optional file"))
    if new_salt:
        outputs.append((custody / ATTACK_SALT, "file"))
    salt = fresh_attack_salt() if salt is None else salt
    with atomic_outputs(*outputs, force=force) as tmps:
        rep = make(salt, tmps[2] if custody is not None else None)
        if rep.person_risk is not None:  # the file make() wrote: named where it will be
            rep = dataclasses.replace(rep, person_risk=str(custody / PERSON_RISK))
        tmps[0].write_text(rep.to_html(), encoding="utf-8")
        tmps[1].write_text(rep.to_json(), encoding="utf-8")
        if new_salt:
            write_attack_salt(tmps[3], salt)
    return rep


def _say_verdict(
    v: dict, out: Path, as_json: bool, gate: str | None, more_files: dict | None = None
) -> None:
    """The verdict on the console (stderr with ``--json``, whose stdout holds the JSON
    alone, naming the report, its JSON and ``more_files``), and the exit status of
    ``--fail-on``."""
    say(f"verdict: {v['level']}", stderr=as_json)
    for reason in v["reasons"]:
        say(f"  - {reason}", stderr=as_json)
    say(f"next step: {v['next_step']}", stderr=as_json)
    say(f"report: {out} (and {out.with_suffix('.json')})", stderr=as_json)
    if as_json:
        import json

        files = {"report": str(out), "json": str(out.with_suffix(".json")), **(more_files or {})}
        doc = {"level": v["level"], "reasons": list(v["reasons"]),
               "next_step": v["next_step"], "files": files}  # fmt: skip
        typer.echo(json.dumps(doc))
    if gate is not None and _levels().index(v["level"]) >= _levels().index(gate):
        raise typer.Exit(EXIT_GATE)


def _report_dp(path: Path, out: Path, custody, cfg, original, as_json: bool, gate, force) -> None:
    """``privlab report`` of a DP output (:func:`privlab.report.dp.build_dp`)."""
    from privlab._io import atomic_outputs
    from privlab.report.dp import judge_dp, read_dp_custody

    doc = read_dp_custody(path, custody)  # one line, before anything is written
    with atomic_outputs((out, "file"), (out.with_suffix(".json"), "file"), force=force) as tmps:
        rep = judge_dp(path, doc, config=cfg, original=original)
        tmps[0].write_text(rep.to_html(), encoding="utf-8")
        tmps[1].write_text(rep.to_json(), encoding="utf-8")
    _say_verdict(rep.verdict, out, as_json, gate)


def _levels() -> tuple[str, str, str]:
    """The verdict's levels from the best; ``--fail-on LEVEL`` fails on it and any after
    it (imported when needed: the CLI loads the report only for its commands)."""
    from privlab.report import FAIL, PASS, REVIEW

    return PASS, REVIEW, FAIL


#: The exit status of ``report --fail-on`` when the verdict reaches the level (0 is
#: success, 1 a bug, 2 bad input: see :mod:`privlab.cli`).
EXIT_GATE = 3


def _gate(fail_on: str | None) -> str | None:
    """``--fail-on`` checked before anything runs: FAIL or REVIEW (any case), or None."""
    if fail_on is None:
        return None
    level = fail_on.strip().upper()
    if level not in _levels()[1:]:
        raise PrivlabError(f"--fail-on must be FAIL or REVIEW, not {fail_on!r}")
    return level


@app.command()
@protects("config")
def audit(
    config: Annotated[Path, typer.Argument(help="The audit's TOML file ([audit] and thresholds).")],
    out: Annotated[
        Path, typer.Option("--out", help="Directory to create (releases and reports).")
    ] = Path("audit-out"),
    custody: Annotated[
        Path | None,
        typer.Option(
            "--custody",
            help="Directory to create for the custody (true values, seeds, each person's "
            "risk), apart from --out. Default: OUT.custody beside it.",
        ),
    ] = None,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh",
            help="With --force over an earlier run of the same config: draw new releases and "
            "attacks instead of replaying the earlier ones from its custody.",
        ),
    ] = False,
    force: ForceOpt = False,
) -> None:
    """Sanitize over a grid (l, k), attack and report every setting, recommend the least
    distorting one that passes; writes OUT/report.html.  A rerun with --force over an
    earlier run of the same config replays its releases and attacks from its custody (the
    same reports), unless --fresh."""
    from privlab.report import load_config, run_audit
    from privlab.report.audit import attribute_share, share_of

    cfg = load_config(config)
    if cfg.audit is None:
        raise PrivlabError(f"{config} has no [audit] section (data, method, qi, sensitive, grid)")
    (param,) = cfg.audit.grid

    def step(value, rep) -> None:
        share = ""
        judged = attribute_share(rep.attribute)
        if judged is not None:
            share = f" ({100 * judged[0]:.1f}% of {share_of(cfg.audit.method)})"
        link = (rep.identity.get("linkage") or {}).get("rate")
        if link is not None:
            share += f" ({100 * link['value']:.1f}% of the records linked to their people)"
        say(f"{param} = {value}: {rep.verdict['level']}{share}")

    result = run_audit(cfg, out, custody=custody, force=force, on_step=step, fresh=fresh)
    say(f"releases and attacks {result.draws}")
    say(result.recommendation)
    say(f"audit took {result.seconds:.1f} s; report: {out / 'report.html'}")
    from privlab.cli._app import note

    note(
        f"{result.custody} holds the true values, the seeds and each person's risk: never "
        f"publish it; {out} holds no custody (publish one release of it at most)"
    )


# --- assess ----------------------------------------------------------------------------------
@app.command()
@protects("release", "original", "roles", "config", "control")
def assess(
    release: Annotated[
        Path,
        typer.Argument(
            help="A release privlab did not make: a CSV (, or ; separated) or Parquet file "
            "(generalized cells: ranges, hierarchy labels, *; suppressed records with every "
            "quasi-identifier * or empty, as ARX writes them)."
        ),
    ],
    original: Annotated[
        str,
        typer.Option(
            "--original",
            help="The table it was made from (CSV/Parquet or bundled dataset): each "
            "person's exact quasi-identifiers and true sensitive value.",
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", help="The report to write (HTML; the JSON goes beside it).")
    ],
    roles: Annotated[
        Path | None,
        typer.Option(
            "--roles",
            help="TOML file of the columns' roles: quasi_identifiers = [...], sensitive, "
            "keep, ignore, weights, kind, k, suppressed markers, hierarchies (an ARX folder, "
            "or a table column = file) and [pram] matrices, paths relative to it. Or give "
            "the roles as options (--qi ...).",
        ),
    ] = None,
    qi: Annotated[
        str | None, typer.Option("--qi", help="Without --roles: the quasi-identifiers.")
    ] = None,
    sensitive: Annotated[
        str | None, typer.Option("--sensitive", help="Without --roles: the sensitive column.")
    ] = None,
    keep: Annotated[
        str | None,
        typer.Option("--keep", help="Without --roles: columns published unchanged."),
    ] = None,
    ignore: Annotated[
        str | None,
        typer.Option("--ignore", help="Without --roles: columns the assessment leaves out."),
    ] = None,
    weights: Annotated[
        str | None, typer.Option("--weights", help="Without --roles: the sampling weights.")
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            help="Without --roles: generalization (inferred from the cells) or synthetic.",
        ),
    ] = None,
    hierarchies: Annotated[
        Path | None,
        typer.Option(
            "--hierarchies",
            help="Without --roles: a folder of hierarchies (ARX's <data>_hierarchy_<column>"
            ".csv or <column>.csv; default: a bundled original's own).",
        ),
    ] = None,
    custody: Annotated[
        Path | None,
        typer.Option(
            "--custody",
            help="Directory of the assessor's own files: each person's risk "
            "(person-risk.csv) and the salt of the attacks' seed (report-salt.json: kept "
            "from the first assessment, so the same config gives the same report). "
            "Default: OUT.custody beside the report.",
        ),
    ] = None,
    attacks: Annotated[
        str | None,
        typer.Option("--attacks", help="Comma-separated attacks (default: the config's)."),
    ] = None,
    control: Annotated[
        str | None,
        typer.Option(
            "--control",
            help='For a synthetic table (kind = "synthetic" in the roles): real rows of the '
            "same population it was not made from (CSV/Parquet), the control of every attack.",
        ),
    ] = None,
    config: ConfigOpt = None,
    encoding: EncodingOpt = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help="Exit with status 3 when the verdict is this level or worse (FAIL or REVIEW).",
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the verdict on stdout as one JSON object."),
    ] = False,
    force: ForceOpt = False,
) -> None:
    """Judge a release made outside privlab (ARX, sdcMicro, by hand) against its original:
    the same report and verdict as `privlab report`, the file read into privlab's form."""

    from privlab.report import load_config
    from privlab.report.assess import assess as run_assess
    from privlab.report.assess import load_roles, parse_roles
    from privlab.report.audit import PERSON_RISK

    gate = _gate(fail_on)
    if out.suffix.lower() not in (".html", ".htm"):
        raise PrivlabError(f"--out {out}: the report is an HTML file (name it .html)")
    cfg = load_config(config)
    options = {"quasi_identifiers": split(qi) if qi else None, "sensitive": sensitive,
               "keep": split(keep) if keep else None, "ignore": split(ignore) if ignore else None,
               "weights": weights, "kind": kind,
               "hierarchies": str(hierarchies) if hierarchies else None}  # fmt: skip
    given = {k: v for k, v in options.items() if v is not None}
    if roles is not None and given:
        raise PrivlabError("give the roles in --roles or as options (--qi ...), not both")
    if roles is None and "quasi_identifiers" not in given:
        raise PrivlabError("give the columns' roles: --roles FILE, or --qi (and --sensitive ...)")
    the_roles = load_roles(roles) if roles is not None else parse_roles(given, "the options")
    names = tuple(split(attacks)) if attacks is not None else None
    custody = custody if custody is not None else out.with_suffix(".custody")
    made = not custody.exists()
    custody.mkdir(parents=True, exist_ok=True)
    try:
        rep = _write_report(
            out, custody, force,
            lambda salt, person_risk: run_assess(
                release, original, the_roles, config=cfg, attacks=names, progress=True,
                attack_salt=salt, person_risk=person_risk, encoding=encoding, control=control,
            ),
        )  # fmt: skip
    except BaseException:
        if made and not any(custody.iterdir()):
            custody.rmdir()  # nothing left behind by a refused or interrupted run
        raise
    _say_verdict(rep.verdict, out, as_json, gate, {"person_risk": str(custody / PERSON_RISK)})


# --- risk ------------------------------------------------------------------------------------
@app.command()
@protects("input")
def risk(
    input: InputArg,
    qi: QiOpt,
    weights: Annotated[
        str | None,
        typer.Option(
            "--weights",
            help="Column of sampling weights (numbers >= 1: how many people each record "
            "stands for); without it the file is the population and a record's risk is 1/f.",
        ),
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help="approx (sdcMicro's default) or exact: the risk of keys of 3 or more records.",
        ),
    ] = "approx",
    threshold: Annotated[
        float, typer.Option("--threshold", help="Risk above which a record counts as at risk.")
    ] = 0.2,
    msu_size: Annotated[
        int,
        typer.Option(
            "--msu-size",
            help="Search every record's minimal sample uniques (the fewest of its values no "
            "other record shares; SUDA) up to this many columns (0: none).",
        ),
    ] = 3,
    sampling_fraction: Annotated[
        float | None,
        typer.Option(
            "--sampling-fraction",
            help="The file's share of the population (default: the records over the weights' "
            "sum, or 1): gives the population uniques by Zayatz, Pitman, SNB and Dankar's "
            "rule as ARX computes them, and the DIS-SUDA scores' sampling fraction.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="CSV of every record's risk, fk, Fk and smallest MSU (the custodian's).",
        ),
    ] = None,
    drop_missing: DropMissingOpt = False,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
) -> None:
    """Individual and global re-identification risk of a microdata file on its
    quasi-identifiers, as sdcMicro's measure_risk computes it (Benedetti-Franconi's model
    with sampling weights)."""
    import numpy as np

    from privlab._io import check_output
    from privlab.metrics.sdc_risk import METHODS, individual_risk

    if method not in METHODS:
        raise PrivlabError(f"--method must be one of {', '.join(METHODS)}, not {method!r}")
    if not 0 <= threshold <= 1:
        raise PrivlabError(f"--threshold must be between 0 and 1, not {threshold:g}")
    names = split(qi)
    if not names:
        raise PrivlabError("--qi names no column")
    if msu_size < 0:
        raise PrivlabError(f"--msu-size must be 0 or more, not {msu_size}")
    if sampling_fraction is not None and not 0 < sampling_fraction <= 1:
        raise PrivlabError(f"--sampling-fraction must be in (0, 1], not {sampling_fraction:g}")
    if weights is not None and weights in names:
        raise PrivlabError(f"--weights {weights!r} is also a quasi-identifier")
    if out is not None:
        check_output(out, force=force)
    table = load_table(input, drop_missing=drop_missing, encoding=encoding)
    table.schema.require([*names, *([weights] if weights else [])], purpose="for the risk")
    w = None
    if weights is not None:
        values = table.schema[weights].domain
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            raise PrivlabError(f"--weights column {weights!r} must hold numbers only")
        w = np.asarray(values, dtype=np.float64)[table.column(weights)]
    codes = table.columns(names)
    result = individual_risk(codes, w, method=method, names=names)
    rows = [
        {"measure": "records", "value": result.n},
        {"measure": "keys (distinct quasi-identifier combinations)", "value": result.keys},
        {"measure": "sample uniques (fk = 1)", "value": int((result.fk == 1).sum())},
        {"measure": "expected re-identifications", "value": result.expected_reidentifications},
        {"measure": "global risk", "value": f"{100 * result.global_risk:.3f}%"},
        {"measure": "largest individual risk", "value": float(result.risk.max())},
        {"measure": f"records above {threshold:g}",
         "value": f"{100 * result.share_above(threshold):.2f}%"},
    ]  # fmt: skip
    msus = None
    if msu_size:
        from privlab.metrics.msu import minimal_sample_uniques

        top = min(msu_size, len(names))
        msus = minimal_sample_uniques(codes, names, max_size=top)
        rows += [
            {"measure": f"records with an MSU of at most {k} column(s)",
             "value": msus.records_with_msu(k)}
            for k in range(1, top + 1)
        ]  # fmt: skip
    fraction = sampling_fraction
    if fraction is None and w is not None:
        fraction = min(1.0, result.n / float(w.sum()))  # the weights' sum estimates N
    suda = None
    if msus is not None:
        from privlab.metrics.msu import suda_scores

        suda = suda_scores(codes, names, msus=msus,
                           dis_fraction=fraction if fraction is not None else 0.01)  # fmt: skip
        rows.append({"measure": f"largest DIS-SUDA score (MSUs of at most {msus.max_size})",
                     "value": float(suda.dis_score.max()) if suda.n else 0.0})  # fmt: skip
    if fraction is not None and fraction < 1:
        from privlab.data.counts import distinct_rows
        from privlab.metrics.uniqueness import population_uniques

        pop = population_uniques(distinct_rows(codes)[2], sampling_fraction=fraction)
        for m in ("zayatz", "pitman", "snb"):
            est = getattr(pop, m)
            value = "invalid" if est is None or est.uniques is None else f"{est.uniques:,.1f}"
            rows.append({"measure": f"population uniques, {m}", "value": value})
        rows.append({"measure": f"population uniques, Dankar's rule ({pop.chosen})",
                     "value": f"{pop.uniques:,.1f} ({100 * (pop.fraction or 0):.4f}% of "
                     f"{pop.population_size:,})"})  # fmt: skip
    model = (f"Benedetti-Franconi, sampling weights {weights!r}, method {method}"
             if weights else "no weights: the file is the population, risk 1/f")  # fmt: skip
    print_rows(rows, title=f"re-identification risk on {', '.join(names)} ({model})")
    say(
        f"an intruder who matches every record on {', '.join(names)} re-identifies about "
        f"{result.expected_reidentifications:,.1f} of {result.n:,} records "
        f"({100 * result.global_risk:.2f}%)"
    )
    if msus is not None:
        say(
            f"{msus.records_with_msu(1):,} record(s) singled out by one of their values and "
            f"{msus.records_with_msu(msus.max_size):,} by at most {msus.max_size} "
            "(minimal sample uniques): anyone who knows those values of such a person finds "
            "the record"
        )
    if out is not None:
        frame = result.to_pandas()
        if msus is not None:
            frame["smallest_msu"] = msus.smallest
            frame["suda_score"] = suda.score
            frame["dis_score"] = suda.dis_score
        write_table_csv(frame.rename_axis("row").reset_index(), out, force=force)
        say(f"per-record risk -> {out} (the custodian's file: never publish it)")
