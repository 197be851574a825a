"""``privlab audit``: sanitize over a grid of parameters, attack every release, report, and
recommend the least-distorting setting that passes.

The pipeline, per value of the grid's parameter (Anatomy's ``l``; a generalization's ``k``;
microaggregation's ``k``; the noise's percentage; PRAM's ``p`` in percent; the share of
each tail top and bottom coding codes): sanitize the data, save the release and its custody,
run :func:`privlab.report.build` (attacks, identity risk, utility, verdict; a generalized
release's classes linked to the people of the data), and write that setting's report.  It
ends with one page (``report.html``, and ``report.json``) holding the grid's verdicts, the
risk-utility trade-off plot and the full report of the recommended setting.

For a PRAM release (every ``qi`` column and ``sensitive`` randomized, ``p`` in percent) the
utility column is the share of those values published changed, read from the custody's truth
(about ``p`` itself: an M-category matrix changes a value with probability ``p``).

For a masked release (microaggregation, noise) the utility column is the information loss
IL1s per cell, measured against the input: the one figure of the raw input a page shows
(:mod:`privlab.report.build` says why it may be); the detailed measures stay in the custody.

A DP histogram (``dp-histogram``, a grid of epsilons) is not attacked: its guarantee bounds
every attack.  Each setting is written as ``out/<name>/histogram.csv`` with its custody (a
candidate: not added to the registry's epsilon ledger) and judged as ``privlab report FILE
--custody DIR`` judges one (:func:`privlab.report.dp.judge_dp`), its budget as it would
stand were it published; the utility column is the noise it adds, the mechanism's RMSE per
cell (a closed form of epsilon: a figure measured against the true counts would depend on
the data, and the folder's pages may be shared beside the histogram).  The largest epsilon
of the grid that passes adds the least noise.

A DP classifier of ``sensitive`` from ``qi`` (``dp-naive-bayes``, ``dp-tree``) is judged the
same way, written as ``out/<name>/model.json``.  It is trained on the input less a fifth of
its people (:data:`HOLDOUT`) held out by a generator salted with OS entropy, one split for
every setting, whose record each custody keeps (``privlab dp nb train --replay`` holds out
the same people), or on every row when ``[utility] holdout`` names people apart; its cost is
its accuracy on the held-out people beside always guessing their commonest class.  That
accuracy is computed exactly on those people, outside the budget: the page says to publish
the model without the reports.

*Least distorting* is read as the weakest protecting parameter that passes (the smallest
``l`` or ``k``): every measure of distortion privlab has (group sizes, discernibility, the
accuracy of a model trained on the release) worsens as ``l`` or ``k`` grows, and the grid
shows them so that a custodian can overrule the choice.

Layout (``out`` and ``custody`` written whole when the audit ends; nothing is left when it
fails)::

    out/report.html, out/report.json         the audit
    out/audit.toml                           the config it ran (`privlab audit` reruns it)
    out/<method>-<param><v>/                 each release (publish one of them at most)
    out/reports/<method>-<param><v>.html|json  each setting's report
    custody/<method>-<param><v>/             each custody, with person-risk.csv and the
                                             report's salt: never publish

``custody`` is a directory apart from ``out`` (by default ``out``'s sibling ``OUT.custody``),
so that ``out`` can be shared whole without the truth.  Each setting's report draws its
attacks from the config's seed mixed with a salt of OS entropy kept in that setting's custody
(:data:`privlab.report.build.ATTACK_SALT`): ``privlab report out/<name> --custody
custody/<name> --config out/audit.toml`` reproduces it, and nothing in ``out`` does.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privlab._frames import ToFrames
from privlab.errors import ParameterError, PrivlabError
from privlab.report.build import (
    ATTACK_SALT,
    FAIL,
    PASS,
    REVIEW,
    Report,
    build,
    fresh_attack_salt,
    write_attack_salt,
)
from privlab.report.config import DETERMINISTIC, GUARANTEED, MASKING, MODELS, SAFER_LOWER, Config

PERSON_RISK = "person-risk.csv"


@dataclass(frozen=True)
class UtilityColumn:
    """What a method's setting costs, as the audit's grid shows it: one figure per setting.

    ``key`` is the grid row's column, ``label`` its header, ``axis`` the trade-off plot's
    axis; ``percent`` figures are shares written in percent, the others with ``decimals``;
    ``loss`` says that less is better; ``counted`` figures are counted by the audit from the
    setting's release and custody (:func:`_loss`), the others read from its report.
    """

    key: str
    label: str
    axis: str
    percent: bool = False
    decimals: int = 1
    loss: bool = False
    counted: bool = False

    def text(self, value: float | None) -> str:
        """The figure as the audit page and the app write it ("-" when not measured)."""
        if value is None:
            return "-"
        return f"{100 * value:.1f}%" if self.percent else f"{value:.{self.decimals}f}"


#: each method's utility column (:func:`utility_column`)
UTILITY = {
    **{m: UtilityColumn("il1s", "information loss (IL1s per cell)", "IL1s per cell (loss)",
                        decimals=4, loss=True, counted=True) for m in MASKING},
    "generalization": UtilityColumn("avg_class_size", "records per combination (mean)",
                                    "records per combination"),
    "suppression": UtilityColumn("suppressed_share", "quasi-identifier cells suppressed",
                                 "cells suppressed (%)", percent=True, loss=True, counted=True),
    "pram": UtilityColumn("changed_share", "randomized values changed", "values changed (%)",
                          percent=True, loss=True, counted=True),
    "alphabeta": UtilityColumn("real_kept", "real tuples published",
                               "real tuples published (%)", percent=True, counted=True),
    "marginals": UtilityColumn("kl", "KL divergence of the max-ent estimate from the data (nats)",
                               "KL from the data (nats)", decimals=4, loss=True, counted=True),
    "synthetic": UtilityColumn("total_variation", "total variation of the 2-way marginals (mean)",
                               "total variation (loss)", decimals=4, loss=True),
    "dp-histogram": UtilityColumn("rmse_per_cell", "noise per cell (RMSE, records)",
                                  "noise per cell (RMSE, records)", decimals=2, loss=True),
    **{m: UtilityColumn("held_out_accuracy", "accuracy on held-out people",
                        "accuracy on held-out people (%)", percent=True) for m in MODELS},
}  # fmt: skip
#: the utility of the other methods: a model trained on the release, tested on the holdout
MODEL_ACCURACY = UtilityColumn("model_accuracy", "model trained on it is right",
                               "model accuracy (%)", percent=True)  # fmt: skip


def utility_column(method: str) -> UtilityColumn:
    """The audit grid's utility column of a ``method``'s settings."""
    return UTILITY.get(method, MODEL_ACCURACY)


#: what the share a ``method``'s verdict judges counts, where it is not people at risk (the
#: page's column, the CLI's line per setting)
SHARE_OF = {
    "alphabeta": "published tuples found real",
    "synthetic": "people at risk beyond the control",
}


def share_of(method: str) -> str:
    """What the judged share of a ``method``'s settings counts, in a few words."""
    return SHARE_OF.get(method, "people at risk")


def attacked(rows: list[dict[str, Any]]) -> bool:
    """Whether an attack measured any of the grid's ``rows`` (a share at risk, or a masked
    release's record linkage): the one place the audit, its page, its plot and the app ask."""
    return any(r.get("at_risk_share") is not None or r.get("linkage") is not None for r in rows)


def default_custody(out: str | Path) -> Path:
    """Where an audit (or the demo) writing ``out`` keeps its custody by default: the
    sibling ``OUT.custody`` (``demo-out`` -> ``demo-out.custody``)."""
    out = Path(out)
    if not out.name or out.name in (".", ".."):
        out = out.resolve()
    return out.parent / f"{out.name}.custody"


def check_apart(out: Path, custody: Path) -> None:
    """Refuse a custody directory inside the output folder, or the reverse (one line)."""
    o, c = out.resolve(), custody.resolve()
    if o == c or o in c.parents or c in o.parents:
        raise ParameterError(
            f"the custody directory {custody} and the output folder {out} must be apart "
            "(neither inside the other): the folder may be shared, the custody never"
        )


@dataclass(frozen=True)
class Audit(ToFrames):
    """An audit's results: one row and one :class:`Report` per setting."""

    title: str
    method: str
    param: str
    values: tuple[int, ...]
    rows: list[dict[str, Any]]
    reports: dict[int, Report] = field(repr=False)
    recommended: int | None
    shown: int
    recommendation: str
    seconds: float
    skipped: dict[int, str] = field(default_factory=dict)
    tradeoff_svg: str = field(default="", repr=False)
    #: the custody directory, as given (apart from the output folder)
    custody: str = ""
    #: whether the releases and attacks were drawn fresh or replayed from an earlier run
    draws: str = "drawn fresh"

    @property
    def attacked(self) -> bool:
        """Whether any setting was attacked (a DP output is judged by its guarantee alone:
        its page shows no attack column, its plot the utility alone)."""
        return attacked(self.rows)

    @property
    def utility(self) -> UtilityColumn:
        """The grid's utility column (:func:`utility_column`)."""
        return utility_column(self.method)

    @property
    def utility_key(self) -> str:
        return self.utility.key

    @property
    def utility_label(self) -> str:
        return self.utility.label

    @property
    def share_label(self) -> str:
        """What the grid's share column counts (:func:`share_of`)."""
        return share_of(self.method)

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "method": self.method,
            "param": self.param,
            "values": list(self.values),
            "rows": self.rows,
            "recommended": self.recommended,
            "shown_value": self.shown,
            "recommendation": self.recommendation,
            "seconds": self.seconds,
            "utility_key": self.utility_key,
            "utility_label": self.utility_label,
            "share_label": self.share_label,
            "attacked": self.attacked,
            "skipped": {str(k): v for k, v in self.skipped.items()},
            "custody": self.custody,
            "draws": self.draws,
        }

    def to_json(self) -> str:
        from privlab._io import json_ready

        doc = self.to_dict()
        doc["reports"] = {str(v): r.to_dict() for v, r in self.reports.items()}
        return json.dumps(json_ready(doc), indent=2, allow_nan=False)

    def to_html(self) -> str:
        from privlab.report.render import render_audit

        return render_audit(self)

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows)


#: What a rerun replays: the config it ran and, per setting, the release's seed record and
#: the attacks' salt, read from the earlier run's ``out/audit.toml`` and custody.
@dataclass(frozen=True)
class _Earlier:
    records: dict[str, Any]  # setting name -> SeedRecord of Custody.replay()
    salts: dict[str, int]  # setting name -> the attacks' salt
    holdout: Any = None  # the SeedRecord of the DP models' held-out split


def _earlier_run(
    config: Config, out: Path, custody: Path, *, force: bool, fresh: bool
) -> tuple[_Earlier | None, str]:
    """The draws of an earlier run of the same config into ``out`` and ``custody`` (which a
    rerun with ``force`` replaces, unless ``fresh``), and a sentence saying whether they are
    replayed."""
    from privlab.release.base import Custody
    from privlab.report.build import read_attack_salt

    if fresh:
        return None, "drawn fresh (--fresh)"
    ran = out / "audit.toml"
    if not (force and ran.is_file() and custody.is_dir()):
        return None, (
            "drawn fresh (the custody holds what replays them: rerun with --force over "
            "these folders)"
        )
    if ran.read_text(encoding="utf-8") != config.to_toml():
        return None, "drawn fresh: the earlier run in this folder had another config"
    records, salts, holdout = {}, {}, None
    for d in sorted(p for p in custody.iterdir() if p.is_dir()):
        # a further draw of a setting keeps its custody in NAME.drawR/custody
        d_custody = d / "custody" if (d / "custody").is_dir() else d
        try:
            kept = Custody.load(d_custody)
        except PrivlabError:
            continue
        try:
            records[d.name] = kept.replay()
        except PrivlabError:  # a release that draws nothing (generalization): its salt only
            if config.audit is None or config.audit.method not in DETERMINISTIC:
                continue
        salt = read_attack_salt(d_custody)
        if salt is not None:
            salts[d.name] = salt
        holdout = _kept_holdout(d_custody) if holdout is None else holdout
    if not records and not salts:
        return None, "drawn fresh: the earlier run's custody holds no release to replay"
    return _Earlier(records, salts, holdout), (
        f"replayed from the earlier run's custody ({custody.name}): the same config and "
        "custody give the same releases, attacks and reports"
    )


def _kept_holdout(custody: Path):
    """The seed record of the held-out split a DP model's custody keeps (None: none)."""
    from privlab._io import read_json
    from privlab._rng import SeedRecord

    try:
        doc = read_json(custody / "custody.json", what="custody file")
        return SeedRecord.from_dict(doc["holdout"])
    except (PrivlabError, KeyError, TypeError):
        return None


#: the share of the input an audit holds out to test its DP models (the command line's
#: ``--holdout`` default), unless ``[utility] holdout`` names people apart
HOLDOUT = 0.2


@dataclass(frozen=True)
class _Split:
    """The people an audit's DP models train on and those they are tested on."""

    train: Any  # the Table they train on
    held: Any  # the Table they are tested on
    what: str  # the held-out people, in words
    kept: dict[str, Any] | None  # what each model's custody keeps of the split (or None)


def _model_split(table, config: Config, seq, earlier: _Earlier | None) -> _Split:
    """The people the DP models of an audit train on and are tested on: the input and the
    people of ``[utility] holdout``, else the input less a share :data:`HOLDOUT` held out
    by a generator salted with OS entropy (which rows were held out is private: each
    model's custody keeps the record, so ``privlab dp nb train --replay`` replays it)."""
    from privlab._rng import publication_rng
    from privlab.learn._sklearn import held_out_split

    plan = config.audit
    if config.holdout is not None:
        from privlab.data.datasets import load_input

        held = load_input(config.holdout, drop_missing=True)
        missing = [c for c in (*plan.qi, plan.sensitive) if c not in held.names]
        if missing:
            raise PrivlabError(
                f"[utility] holdout {config.holdout} lacks the column {missing[0]!r}"
            )
        return _Split(table, held, f"{config.holdout} ([utility] holdout)", None)
    if earlier is not None and earlier.holdout is not None:
        record = earlier.holdout
        gen = record.generator()
    else:
        gen, record = publication_rng(int(seq.generate_state(1)[0]))
    train, held = held_out_split(table, HOLDOUT, gen)
    if held is None or train.n_rows == 0:
        raise PrivlabError(
            f"{plan.data} has {table.n_rows} row(s): too few to hold {HOLDOUT:.0%} out to test "
            "a model on (give [utility] holdout, people apart from the data)"
        )
    what = (
        f"the {held.n_rows:,} people held out ({HOLDOUT:.0%} of {Path(plan.data).name}, drawn "
        "at random, never trained on)"
    )
    return _Split(train, held, what, {"holdout": record.to_dict()})


def _bundled(plan) -> bool:
    """Whether the audit's data is a bundled dataset (its name, and no file of that name),
    whose declared hierarchies and bounds then serve the release."""
    from privlab.data.datasets import DATASETS

    return plan.data in DATASETS and not Path(plan.data).exists()


def _sanitize(table, plan, value: int, rng, distinct: int | None = None,
              split: _Split | None = None):  # fmt: skip
    """The release of one setting, as its command would make it; ``distinct`` is the
    input's number of distinct tuples (alpha-beta's, counted once per audit); ``split`` the
    people a DP model trains on and is tested on."""
    if plan.method == "anatomy":
        from privlab.publish.anatomy import anatomize

        return anatomize(table, qi=plan.qi, sensitive=plan.sensitive, keep=plan.keep, l=value,
                         rng=rng)  # fmt: skip
    if plan.method == "generalization":  # as `privlab generalize DATA --k value` (draws nothing)
        from privlab.publish.generalization import generalize

        return generalize(table, qi=plan.qi, sensitive=plan.sensitive, keep=plan.keep, k=value,
                          l=plan.l, t=plan.t, hierarchies=plan.hierarchies,
                          dataset=plan.data if _bundled(plan) else None)  # fmt: skip
    if plan.method == "suppression":  # as `privlab suppress DATA --k value` (draws nothing)
        from privlab.publish.generalization import suppress

        return suppress(table, plan.qi, value, sensitive=plan.sensitive, keep=plan.keep)
    if plan.method in MASKING:
        from privlab.publish.masking import (
            add_noise,
            microaggregate,
            rank_swap,
            top_bottom_code,
        )

        kw = {"keep": plan.keep, "sensitive": plan.sensitive, "rng": rng,
              "weights": plan.weights}  # fmt: skip
        if plan.method == "microaggregation":
            return microaggregate(table, plan.qi, k=value, **kw)
        if plan.method == "swap":
            return rank_swap(table, plan.qi, p=float(value), **kw)
        if plan.method == "topcoding":  # value percent of each tail coded
            return top_bottom_code(table, plan.qi, top_quantile=1 - value / 100,
                                   bottom_quantile=value / 100, **kw)  # fmt: skip
        return add_noise(table, plan.qi, noise=float(value), **kw)
    if plan.method == "alphabeta":  # as `privlab alphabeta --d n/m --gamma value/100`
        from privlab.publish.alpha_beta import alphabeta

        columns = [*plan.qi, plan.sensitive]
        d = real_share(table, columns, distinct)
        if value / 100 <= d:
            raise ParameterError(
                f"gamma = {value}% is not above the input's share of real tuples in the domain "
                f"({100 * d:.2g}%), the attacker's prior: no view can hold the posterior there"
            )
        return alphabeta(table, columns=columns, d=d, gamma=value / 100, rng=rng)
    if plan.method == "marginals":  # as `privlab marginals DATA --k value` (draws nothing)
        from privlab.publish.marginals import publish_marginals

        return publish_marginals(table, qi=plan.qi, sensitive=plan.sensitive, k=value,
                                 hierarchies=plan.hierarchies,
                                 dataset=plan.data if _bundled(plan) else None)  # fmt: skip
    if plan.method == "synthetic":  # as `privlab synth mst DATA --epsilon value`
        from privlab.data.datasets import DATASETS
        from privlab.publish.synthetic import mst

        columns = [*plan.qi, plan.sensitive]
        bundled = _bundled(plan)
        public = DATASETS[plan.data].bounds if bundled else {}
        roled = table.select(columns).with_roles(qi=plan.qi, sensitive=plan.sensitive)
        # a file's own bounds are read from it (the report's REVIEW says epsilon does not
        # cover them; the CLI's --domain-from-data)
        return mst(roled, epsilon=float(value), columns=columns,
                   bounds={c: b for c, b in public.items() if c in columns},
                   domain_from_data=not bundled, rng=rng)  # fmt: skip
    if plan.method == "dp-histogram":  # as `privlab dp histogram --columns QI,S --epsilon v`
        from privlab.dp.histogram import noisy_histogram

        # a file's domains are read from it (its report's REVIEW: epsilon does not cover
        # them; the CLI's --domain-from-data); a bundled dataset's are declared
        return noisy_histogram(table, [*plan.qi, plan.sensitive], epsilon=float(value),
                               domain_from_data=not _bundled(plan), rng=rng)  # fmt: skip
    if plan.method in MODELS:  # as `privlab dp nb|tree train DATA --target S --features QI`
        from privlab.data.datasets import DATASETS

        features = list(plan.qi)
        # a bundled dataset's documented bounds (the command line's); a file's are read
        # from it (its report's REVIEW)
        public = DATASETS[plan.data].bounds if _bundled(plan) else {}
        bounds = {c: b for c, b in public.items() if c in features}
        if plan.method == "dp-naive-bayes":
            from privlab.learn.dp_naive_bayes import train_from_table

            model = train_from_table(split.train, target=plan.sensitive, features=features,
                                     epsilon=float(value), bounds=bounds, rng=rng)  # fmt: skip
            model.input_sha256_ = table.fingerprint()  # the input read, held-out rows too
            return model
        from privlab.learn.dp_tree import fit_table

        model = fit_table(split.train, plan.sensitive, epsilon=float(value), features=features,
                          bounds=bounds, rng=rng)  # fmt: skip
        model.input_sha256 = table.fingerprint()
        return model
    if plan.method == "pram":  # as `privlab pram randomize --columns QI,S --p value/100`
        from privlab.publish.randomization import pram

        return pram(table, columns=[*plan.qi, plan.sensitive], keep=plan.keep, p=value / 100,
                    rng=rng)  # fmt: skip
    raise PrivlabError(f"privlab does not audit {plan.method!r} releases yet")  # pragma: no cover


def real_share(table, columns, distinct: int | None = None) -> float:
    """The share ``n/m`` of the tuples of the domain of ``columns`` that the input holds
    (distinct), rounded up to two significant digits: the prior an alpha-beta audit protects
    against (Rastogi et al. 2007, Thm 4.3 needs ``d >= n/m``; anyone can estimate ``n/m``
    from the view, so a lower ``d`` would be vacuous).  Rounded up, so that the guarantee
    still covers ``n/m`` and the release does not record the input's exact count.
    ``distinct``: ``n``, when the caller counted it already (:func:`_distinct`)."""
    import math

    n = _distinct(table, columns) if distinct is None else distinct
    share = n / math.prod(table.select(list(columns)).schema.sizes)
    scale = 10.0 ** (1 - math.floor(math.log10(share)))
    return min(math.ceil(share * scale) / scale, 1.0)


def _distinct(table, columns) -> int:
    """How many distinct tuples of ``columns`` the table holds."""
    from privlab.data.counts import joint_index

    sub = table.select(list(columns))
    return int(np.unique(joint_index(sub.codes, list(sub.schema.sizes))).size)


def _loss(release, distinct: int | None = None) -> float | None:
    """The setting's counted utility figure (:class:`UtilityColumn` ``counted``): a masked
    release's information loss IL1s per cell, from its custody; a locally suppressed one's
    share of quasi-identifier cells published as ``*`` (which the release itself shows); a
    PRAM release's share of randomized values published changed (from the custody's truth);
    an alpha-beta view's share of the input's ``distinct`` tuples it publishes (the
    custody's ``real`` column); the KL divergence of a marginals release's max-ent estimate from the
    data (its custody's KL path); None else."""
    custody = getattr(release, "custody", None)
    truth = getattr(custody, "truth", None)
    if release.method == "alphabeta" and truth is not None and distinct:
        return int(np.count_nonzero(truth.column(truth.names[0]))) / distinct
    if release.method == "marginals":
        path = getattr(release, "kl_path", None)
        return float(path[-1]) if path else None
    if release.method == "pram" and truth is not None and truth.n_rows:
        # the share of randomized values published changed (the custody's truth, in the
        # published row order, on the same domains)
        changed = sum(
            int(np.count_nonzero(release.table.column(c) != truth.column(c))) for c in truth.names
        )
        return changed / (truth.n_rows * len(truth.names))
    measures = (custody.input_measures or {}) if custody is not None else {}
    done = measures.get("local_suppression")
    if done is not None:
        return done["suppressed"] / max(1, done["n"] * len(done["names"]))
    return (measures.get("utility") or {}).get("il1s_mean")


def run_audit(
    config: Config,
    out: str | Path,
    *,
    custody: str | Path | None = None,
    progress: bool = True,
    force: bool = False,
    on_step: Any = None,
    fresh: bool = False,
) -> Audit:
    """Run the audit of ``config`` (which must have an ``[audit]`` section) into ``out``,
    with every custody in ``custody`` (default :func:`default_custody`), apart from it.

    ``on_step(value, report)`` is called after each setting (the CLI prints a line).

    A rerun (``force``) over an earlier run of the same config replays it: each setting's
    release is drawn again from the seed record its custody keeps (:meth:`Custody.replay`)
    and its attacks from the salt kept there, so the releases, the reports and the JSON are
    the same (the dates and timings aside).  ``fresh=True``, another config or no earlier
    custody draws anew; the page says which (``draws``).
    """
    from privlab._io import atomic_outputs

    if config.audit is None:
        raise PrivlabError("the config has no [audit] section (data, method, qi, grid)")
    out = Path(out)
    custody = default_custody(out) if custody is None else Path(custody)
    check_apart(out, custody)
    earlier, draws = _earlier_run(config, out, custody, force=force, fresh=fresh)
    with atomic_outputs((out, "directory"), (custody, "directory"), force=force) as tmps:
        return _run(config, tmps[0], tmps[1], str(custody), progress=progress, on_step=on_step,
                    earlier=earlier, draws=draws)  # fmt: skip


def _run(
    config: Config,
    out: Path,
    custody_root: Path,
    custody_name: str,
    *,
    progress: bool,
    on_step,
    earlier: _Earlier | None = None,
    draws: str = "drawn fresh",
) -> Audit:
    import dataclasses

    from privlab.data.datasets import load_input

    plan = config.audit
    ((param, values),) = plan.grid.items()
    start = time.perf_counter()
    table = load_input(plan.data, drop_missing=True, domains=dict(plan.domains) or None)
    named = (*plan.qi, plan.sensitive, *plan.keep, *([plan.weights] if plan.weights else []))
    missing = [c for c in named if c not in table.names]
    if missing:
        raise PrivlabError(
            f"[audit] names column {missing[0]!r}, which {plan.data!r} does not have "
            f"(columns: {', '.join(table.names)})"
        )
    seeds = np.random.SeedSequence(plan.seed).spawn(len(values))
    # alpha-beta's n (its d, n/m, and its utility, the share of the n published)
    distinct = _distinct(table, [*plan.qi, plan.sensitive]) if plan.method == "alphabeta" else None
    # the DP models' people: those they train on and those that test them (one split for
    # every setting, drawn apart from the settings' noise)
    split = (
        _model_split(table, config, np.random.SeedSequence([plan.seed, 1]), earlier)
        if plan.method in MODELS
        else None
    )
    reports: dict[int, Report] = {}
    rows: list[dict[str, Any]] = []
    skipped: dict[int, str] = {}
    losses: dict[int, float | None] = {}
    (out / "reports").mkdir()
    (out / "audit.toml").write_text(config.to_toml(), encoding="utf-8")  # what ran
    for value, seq in zip(values, seeds):
        name = f"{plan.method}-{param}{value}"
        # the release's seed is salted by the sanitizer (publication_rng); the attacks' by a
        # salt of their own, kept in the custody (never derived from the config's seeds)
        release_seeds = [int(seq.generate_state(1)[0])]
        release_seeds += [int(c.generate_state(1)[0]) for c in seq.spawn(plan.releases - 1)]
        draws_of: list[Report] = []
        for r, release_seed in enumerate(release_seeds):
            # draw 1 is the setting's release (out/NAME); the further draws measure the spread
            # between releases and stay in the custody (NAME.drawR/release and /custody)
            key = name if r == 0 else f"{name}.draw{r + 1}"
            where = out / name if r == 0 else custody_root / key / "release"
            custody = custody_root / key if r == 0 else custody_root / key / "custody"
            replay = earlier.records.get(key) if earlier is not None else None
            try:
                release = _sanitize(table, plan, value, release_seed if replay is None else replay,
                                    distinct, split)  # fmt: skip
            except (ParameterError, PrivlabError) as e:
                skipped[value] = str(e)
                break
            if plan.method in GUARANTEED:  # judged by its guarantee: nothing to attack
                judged = _judge_guaranteed(release, where, custody, config,
                                           label=f"{param}={value}", split=split)  # fmt: skip
                draws_of.append(judged)
                continue
            if r == 0:
                losses[value] = _loss(release, distinct)
            release.save(where, custody=custody, draft=True)  # a candidate: not registered
            salt = earlier.salts.get(key) if earlier is not None else None
            salt = fresh_attack_salt() if salt is None else salt
            write_attack_salt(custody / ATTACK_SALT, salt)
            label = f"{param}={value}" if plan.releases == 1 else f"{param}={value} #{r + 1}"
            if plan.method == "synthetic":  # judged as `privlab report` judges a DP table
                from privlab.report.dp_synthetic import report_dp_synthetic

                draws_of.append(report_dp_synthetic(
                    where, table.to_pandas(), control=config.control_public, config=config,
                    attack_salt=salt,
                ))  # fmt: skip
                continue
            draws_of.append(build(
                where, custody=custody, config=config, person_risk=custody / PERSON_RISK,
                progress=progress, label=label, attack_salt=salt,
                # a generalized release's classes are linked to the people of the data
                population=table if plan.method in DETERMINISTIC else None,
                hierarchies=plan.hierarchies,
                # only the first release's report is shown: the others are measured
                plots=r == 0,
            ))  # fmt: skip
        if value in skipped:
            continue
        rep = draws_of[0]
        # name the files as they will be, not as they are in the temporary directory
        rep = dataclasses.replace(
            rep,
            header={**rep.header, "release": name},
            person_risk=(str(Path(custody_name) / name / PERSON_RISK) if rep.person_risk else None),
        )
        pooled = linkage_between_releases(draws_of)
        if pooled is not None:  # the linkage judged over every release of the setting
            rep = dataclasses.replace(rep, identity={**rep.identity, "linkage": pooled})
        spread = between_releases(draws_of)
        if spread is not None and plan.method == "synthetic":
            rep = dataclasses.replace(rep, verdict=_worst_verdict(draws_of, spread))
        elif spread is not None:
            rep = dataclasses.replace(rep, verdict=_setting_verdict(rep, draws_of, spread, config))
        elif pooled is not None:
            from privlab.report.build import verdict

            rep = dataclasses.replace(rep, verdict=verdict(
                rep.header.get("method", ""), rep.identity, rep.attribute, rep.diagnostics, config
            ))  # fmt: skip
        reports[value] = rep
        # the setting's counted utility figure (IL1s, a suppression's share of cells
        # published as *, ...): its own column
        util = utility_column(plan.method)
        counted = {util.key: losses.get(value)} if util.counted else {}
        rows.append(_row(param, value, rep, f"reports/{name}.html", spread, counted))
        if on_step is not None:
            on_step(value, rep)
    if not reports:
        why = "; ".join(f"{param} = {v}: {e}" for v, e in skipped.items())
        raise PrivlabError(f"no setting of the grid yields a release: {why}")
    # the rows run from the weakest protection to the strongest (the config orders the grid):
    # the first that passes distorts least; with none, the strongest is shown
    passing = [r[param] for r in rows if r["verdict"] == PASS]
    recommended = passing[0] if passing else None
    shown = recommended if recommended is not None else rows[-1][param]
    from privlab.report import plots

    for row in rows:  # each setting's report: its next step, measured on the grid
        value = row[param]
        rep = reports[value]
        step = _next_step(param, row, rows, recommended, plan, config)
        if step is not None:
            rep = dataclasses.replace(rep, verdict={**rep.verdict, "next_step": step})
            reports[value] = rep
        name = Path(row["report"]).stem
        (out / "reports" / f"{name}.html").write_text(rep.to_html(), encoding="utf-8")
        (out / "reports" / f"{name}.json").write_text(rep.to_json(), encoding="utf-8")

    util = utility_column(plan.method)
    audit = Audit(
        title=f"{plan.method}{_also(plan)} of {plan.data} (sensitive {plan.sensitive})",
        method=plan.method,
        param=param,
        values=tuple(values),
        rows=rows,
        reports=reports,
        recommended=recommended,
        shown=shown,
        recommendation=_recommend(param, rows, recommended, plan, config, skipped),
        seconds=time.perf_counter() - start,
        skipped=skipped,
        tradeoff_svg=plots.tradeoff(
            rows,
            param,
            config.thresholds.max_at_risk_share,
            util.key,
            axis=util.axis,
            percent=util.percent,
            descending=plan.method in SAFER_LOWER,
            attacked=attacked(rows),
        ),
        custody=custody_name,
        draws=draws,
    )
    (out / "report.html").write_text(audit.to_html(), encoding="utf-8")
    (out / "report.json").write_text(audit.to_json(), encoding="utf-8")
    return audit


def _judge_guaranteed(release, where: Path, custody: Path, config: Config, *, label: str,
                      split: _Split | None = None):  # fmt: skip
    """A DP output's candidate (a histogram, a model): written as ``where/histogram.csv``
    or ``where/model.json`` with its custody (not added to the registry's ledger) and
    judged as ``privlab report`` judges a DP output, the input's budget as it would stand
    were it published.

    A histogram's noise is the mechanism's expected RMSE per cell: nothing measured against
    the true counts goes into the report (it may be shared beside the histogram, whose
    guarantee would not cover it).  A model's cost is its accuracy on the ``split``'s
    held-out people (computed exactly on them, which its report says)."""
    from privlab._io import read_json
    from privlab.report.dp import judge_dp

    where.mkdir()
    if split is None:  # a DP histogram
        path = where / "histogram.csv"
        release.save(path, custody=custody, draft=True)
        candidate, held = release.to_dict(), None
    else:
        path = where / "model.json"
        release.save(path, custody=custody, draft=True, custody_extra=split.kept)
        candidate, held = release.public_parameters(), (split.held, split.what)
    doc = read_json(custody / "custody.json", what="custody file")
    return judge_dp(path, doc, config=config, label=label, candidate=candidate, held=held)


def between_releases(draws: list[Report]) -> dict[str, Any] | None:
    """The at-risk share of a setting over its independent releases, with its variance
    components (None with one release, or where no attack measured the share).

    With ``R`` releases whose (strongest attack's) shares are ``s_r``: the centre is their
    mean; the observed between-release variance ``B = var(s_r)`` (ddof 1) holds the
    release's randomness and the MCMC's; the components reported are

    * ``release``: ``max(0, B - mean(mcmc_r))`` (one-way random effects, moments),
    * ``mcmc``: the mean of each release's between-chain variance (``share_uncertainty``),
    * ``people``: the mean of each release's Wilson variance;

    and the 95% interval, a prediction interval for the share of one more release drawn
    with this setting, is ``mean -+ z sqrt(B (1 + 1/R) + people)`` clipped to [0, 1] (the
    people's sampling is the same in every release, so ``B`` cannot hold it).
    """
    from privlab.report.build import Z95

    parts = [attribute_share(d.attribute) for d in draws]
    if len(draws) < 2 or any(p is None for p in parts):
        return None
    shares, flat, mcmc, people = (list(x) for x in zip(*parts))
    r = len(shares)
    mean = float(np.mean(shares))
    b = float(np.var(shares, ddof=1))
    half = Z95 * float(np.sqrt(b * (1 + 1 / r) + np.mean(people)))
    return {
        "releases": r,
        "shares": shares,
        "mean": mean,
        "interval": [max(0.0, mean - half), min(1.0, mean + half)],
        # the mean share under the absolute rule, where the share judged is beyond what is known
        "absolute_mean": None if None in flat else float(np.mean(flat)),
        "variance": {
            "release": max(0.0, b - float(np.mean(mcmc))),
            "mcmc": float(np.mean(mcmc)),
            "people": float(np.mean(people)),
            "between_observed": b,
        },
    }


def attribute_share(a: dict[str, Any]) -> tuple[float, float | None, float, float] | None:
    """The at-risk share a report's attribute section (as its JSON holds it) judges, as
    ``(share, absolute share or None, MCMC variance, people's variance)``; None where no
    attack measured it.  A synthetic table's is the learning attacker's residual share (the
    people it was made from minus the control), its people's variance read off its 95%
    interval (no chains)."""
    from privlab.report.build import Z95

    if not a.get("measured"):
        return None
    if "learning" in a:  # a synthetic table (privlab.report.synthetic)
        r = a["learning"]["at_risk"].get("residual")
        if r is None or r.get("value") is None:  # no control: nothing beyond it measured
            return None
        return float(r["value"]), None, 0.0, ((r["high"] - r["low"]) / (2 * Z95)) ** 2
    s = a["attacks"][a["strongest"]]["summary"]
    v = (s.get("at_risk_share_uncertainty") or {}).get("variance") or {}
    absolute = (s.get("absolute") or {}).get("at_risk_share")
    return float(s["at_risk_share"]), absolute, v.get("mcmc") or 0.0, v.get("people") or 0.0


def _worst_verdict(draws: list[Report], spread: dict[str, Any]) -> dict[str, Any]:
    """A synthetic setting's verdict: its worst release's (a setting passes only when each
    of its independent releases does), with the share over every release in words."""
    order = {PASS: 0, REVIEW: 1, FAIL: 2}
    worst = max(draws, key=lambda d: order.get(d.verdict["level"], 1))
    i = draws.index(worst)
    lo, hi = spread["interval"]
    note = (
        f"the verdict of release {i + 1} of {spread['releases']} independent releases of this "
        f"setting, the worst; over them the learning attacker puts {100 * spread['mean']:.1f}% "
        f"of people at risk beyond the control (95% interval for one more release "
        f"{100 * lo:.1f}% to {100 * hi:.1f}%)"
    )
    return {**worst.verdict, "reasons": [*worst.verdict["reasons"], note]}


def linkage_between_releases(draws: list[Report]) -> dict[str, Any] | None:
    """A masked setting's record linkage over its ``R`` independent releases: the first
    release's linkage with its rate replaced by the mean over the releases and the 95%
    prediction interval of :func:`between_releases` (the observed between-release variance
    ``B`` and each release's Wilson variance for the people: ``mean -+ z sqrt(B (1 + 1/R) +
    people)``); None with one release or where a release has no linkage."""
    from privlab.report.build import Z95

    links = [d.identity.get("linkage") for d in draws]
    if len(draws) < 2 or any(link is None for link in links):
        return None
    rates = [float(link["rate"]["value"]) for link in links]
    people = [((link["rate"]["high"] - link["rate"]["low"]) / (2 * Z95)) ** 2 for link in links]
    r, mean = len(rates), float(np.mean(rates))
    half = Z95 * float(np.sqrt(np.var(rates, ddof=1) * (1 + 1 / r) + np.mean(people)))
    rate = {**links[0]["rate"], "value": mean, "low": max(0.0, mean - half),
            "high": min(1.0, mean + half)}  # fmt: skip
    return {**links[0], "rate": rate, "releases": r, "per_release": rates}


def _setting_verdict(rep: Report, draws: list[Report], spread, config: Config) -> dict:
    """The setting's verdict: the first release's findings, its attribute finding judged on
    the interval over every release of the setting, and any release's unconverged attack."""
    from privlab.report.build import verdict

    a = rep.attribute
    name = a["strongest"]
    summary = {
        **a["attacks"][name]["summary"],
        "at_risk_share": spread["mean"],
        "at_risk_share_ci": spread["interval"],
    }
    if spread.get("absolute_mean") is not None:  # the absolute share: its mean too
        summary["absolute"] = {"at_risk_share": spread["absolute_mean"]}
    attribute = {**a, "attacks": {**a["attacks"], name: {**a["attacks"][name], "summary": summary}}}
    runs = {}
    for r, d in enumerate(draws):
        for k, run in d.diagnostics["attacks"].items():
            runs[k if r == 0 else f"{k} (release {r + 1})"] = run
    diagnostics = {**rep.diagnostics, "attacks": runs}
    note = (
        f"over {spread['releases']} independent releases of this setting (mean, with a 95% "
        "interval for one more release: the releases, the attack's chains and the people)"
    )
    return verdict(rep.header.get("method", ""), rep.identity, attribute, diagnostics, config, note)


def _row(
    param: str,
    value: int,
    rep: Report,
    link: str,
    spread: dict[str, Any] | None = None,
    counted: dict[str, float | None] | None = None,
) -> dict[str, Any]:
    """A grid row: the setting's verdict, shares and intervals from its report, and its
    counted utility figure (``counted``: the :class:`UtilityColumn` key and the figure)."""
    a = rep.attribute
    measured = a.get("measured") and "attacks" in a
    s = a["attacks"][a["strongest"]]["summary"] if measured else {}
    learner = rep.utility.get("learner") or {}
    first = a["attacks"][a["strongest"]] if measured else {}
    if a.get("measured") and "learning" in a:  # a synthetic table: beyond the control
        learning = a["learning"]
        residual = learning["at_risk"].get("residual") or {}
        low, high = residual.get("low"), residual.get("high")
        s = {"at_risk_share": residual.get("value"),
             "at_risk_share_ci": None if low is None else [low, high],
             "acc": (learning["accuracy"].get("members") or {}).get("value")}  # fmt: skip
        first = {"control": {"acc": (learning["accuracy"].get("control") or {}).get("value")}}
    return {
        param: value,
        "verdict": rep.verdict["level"],
        "at_risk_share": s.get("at_risk_share") if spread is None else spread["mean"],
        "at_risk_share_ci": s.get("at_risk_share_ci") if spread is None else spread["interval"],
        "absolute_at_risk_share": (
            (s.get("absolute") or {}).get("at_risk_share")
            if spread is None
            else spread.get("absolute_mean")
        ),
        "releases": 1 if spread is None else spread["releases"],
        "at_risk_share_per_release": None if spread is None else spread["shares"],
        "variance": (
            (s.get("at_risk_share_uncertainty") or {}).get("variance")
            if spread is None
            else spread["variance"]
        ),
        "at_risk_precision": s.get("at_risk_precision"),
        "acc": s.get("acc"),
        "random_worlds_acc": (first.get("random_worlds") or {}).get("acc"),
        "control_acc": (first.get("control") or {}).get("acc"),
        "model_accuracy": learner.get("accuracy_release"),
        # a masked release: its record linkage and its information loss (custody's input)
        "linkage": ((rep.identity.get("linkage") or {}).get("rate") or {}).get("value"),
        "linkage_ci": _ends((rep.identity.get("linkage") or {}).get("rate")),
        # the counted utility figures (UTILITY): a masked release's IL1s, a suppression's
        # share of cells suppressed, a PRAM release's share of values changed, ...
        "il1s": None,
        "suppressed_share": None,
        "changed_share": None,
        **(counted or {}),
        # a generalized release: how many records share each published combination of
        # quasi-identifiers (not the measures' C_avg, which divides this by k)
        "avg_class_size": _per_class(rep.utility.get("measures") or {}),
        # a synthetic table: the mean total variation distance of its 2-way marginals from
        # the data's (the workload error, AIM's measure)
        "total_variation": _two_way(rep.utility),
        # a DP histogram: the noise its mechanism adds to each count (RMSE, a closed form)
        "rmse_per_cell": rep.utility.get("expected_rmse_per_cell"),
        # a DP model: its accuracy on held-out people, and always guessing their commonest
        # class (its report's)
        **_model_figures(rep.utility),
        "reasons": rep.verdict["reasons"],
        "report": link,
    }


def _also(plan) -> str:
    """The models a generalization also holds, for the audit's title ("" when none)."""
    also = [f"{n} = {v:g}" for n, v in (("l", plan.l), ("t", plan.t)) if v is not None]
    return f" ({', '.join(also)})" if also else ""


def _model_figures(utility: dict[str, Any]) -> dict[str, float | None]:
    """A DP model's accuracy on held-out people and always guessing their commonest class
    (none for the other methods)."""
    if utility.get("kind") != "model":
        return {}
    return {"held_out_accuracy": utility.get("accuracy"), "majority": utility.get("majority")}


def _two_way(utility: dict[str, Any]) -> float | None:
    way = ((utility.get("workload") or {}).get("2-way")) or {}
    value = way.get("mean") if isinstance(way, dict) else None
    return None if value is None else float(value)


def _per_class(measures: dict[str, Any]) -> float | None:
    n, classes = measures.get("n published"), measures.get("n classes")
    return n / classes if n is not None and classes else None


def _ends(rate: dict[str, Any] | None) -> list[float] | None:
    return None if rate is None else [rate["low"], rate["high"]]


def _recommend(param, rows, recommended, plan, config, skipped) -> str:
    sens = plan.sensitive
    th = config.thresholds
    by = {r[param]: r for r in rows}
    first = rows[0]

    def share(r) -> str:
        return "-" if r["at_risk_share"] is None else f"{100 * r['at_risk_share']:.1f}%"

    if recommended is None:
        last = rows[-1]
        worst = last["verdict"]
        how = "fails" if worst == FAIL else "needs review"
        text = (
            f"No setting passes. Even at {param} = {last[param]} the release {how}: "
            f"{'; '.join(last['reasons'])}. "
        )
        if plan.method in GUARANTEED:  # the guarantee's own terms: each report's next step
            text += "Each setting's report says what to change."
        else:
            text += (
                f"Try {'smaller' if plan.method in SAFER_LOWER else 'larger'} values of "
                f"{param} or another method."
            )
        return text + _not_eligible(param, skipped)
    r = by[recommended]
    if plan.method in GUARANTEED:  # judged by its guarantee: the largest epsilon that passes
        text = (
            f"Publish with {param} = {recommended}: the largest {param} of the grid within the "
            f"policy ({param} <= {th.max_epsilon:g}) and the input's budget, so the least noise "
            "among them"
        )
        if r.get("rmse_per_cell") is not None:
            text += (
                f"; the noise moves each cell's count by {r['rmse_per_cell']:.2f} records (RMSE)"
            )
        if r.get("held_out_accuracy") is not None:
            text += (
                f"; the model predicts {sens} right for {100 * r['held_out_accuracy']:.1f}% of "
                "the held-out people"
            )
            if r.get("majority") is not None:
                text += f" (always guessing the commonest {sens}: {100 * r['majority']:.1f}%)"
        return text + "." + _not_eligible(param, skipped)
    if r.get("linkage") is not None:  # a masked release: linkage first, then the attack
        text = (
            f"Publish with {param} = {recommended}: record linkage re-identifies "
            f"{100 * r['linkage']:.1f}% of the records, within the limit of "
            f"{100 * th.max_at_risk_share:g}%"
        )
        if recommended != first[param] and first.get("linkage") is not None:
            text += f" (at {param} = {first[param]} it is {100 * first['linkage']:.1f}%)"
        text += f"; the share {_share_of(plan, th)} is {share(r)}"
    else:
        text = (
            f"Publish with {param} = {recommended}: the share {_share_of(plan, th)} is "
            f"{share(r)}, within the limit of "
            f"{100 * th.max_at_risk_share:g}%"
        )
        if recommended != first[param]:
            text += f" (at {param} = {first[param]} it is {share(first)})"
    if r.get("il1s") is not None:
        text += f"; the information loss IL1s is {r['il1s']:.3f} per cell"
    if r.get("suppressed_share") is not None:
        text += f"; {100 * r['suppressed_share']:.2f}% of the quasi-identifier cells are suppressed"
    if r.get("avg_class_size") is not None:
        text += (
            f"; each published combination describes {r['avg_class_size']:.1f} records on average"
        )
    if r.get("model_accuracy") is not None:
        text += (
            f"; a model trained on it predicts {sens} right "
            f"{100 * r['model_accuracy']:.1f}% of the time"
        )
    util = utility_column(plan.method)
    if util.key in ("changed_share", "real_kept", "kl") and r.get(util.key) is not None:
        text += f"; {util.label}: {util.text(r[util.key])}"
    text += "."
    return text + _not_eligible(param, skipped)


def _not_eligible(param: str, skipped: dict) -> str:
    if not skipped:
        return ""
    return " Not eligible: " + "; ".join(f"{param} = {v} ({e})" for v, e in skipped.items())


def _next_step(param, row, rows, recommended, plan, config) -> str | None:
    """A failing setting's next step in numbers: the recommended setting and what it
    changes (None: keep the generic step)."""
    order = [r[param] for r in rows]  # from the weakest protection to the strongest
    if row["verdict"] == PASS or recommended is None:
        return None
    if order.index(row[param]) > order.index(recommended):
        return None
    rec = next(r for r in rows if r[param] == recommended)
    move = "lower" if plan.method in SAFER_LOWER else "raise"
    if plan.method in GUARANTEED:
        util = utility_column(plan.method)
        if row.get(util.key) is None or rec.get(util.key) is None:
            return None
        if plan.method in MODELS:
            return (
                f"{move} {param} to {recommended}: within the policy, the model is right for "
                f"{util.text(rec[util.key])} of the held-out people (at {param} = {row[param]}: "
                f"{util.text(row[util.key])})"
            )
        return (
            f"{move} {param} to {recommended}: within the policy, the noise per cell grows "
            f"from {row['rmse_per_cell']:.2f} to {rec['rmse_per_cell']:.2f} records (RMSE)"
        )
    if row.get("linkage") is not None and rec.get("linkage") is not None:
        return (
            f"{move} {param} to {recommended}: the records linked to their people fall from "
            f"{100 * row['linkage']:.1f}% to {100 * rec['linkage']:.1f}%"
        )
    if row["at_risk_share"] is None or rec["at_risk_share"] is None:
        return None
    return (
        f"{move} {param} to {recommended}: the share {_share_of(plan, config.thresholds)} "
        "falls from "
        f"{100 * row['at_risk_share']:.1f}% to {100 * rec['at_risk_share']:.1f}%"
    )


def _share_of(plan, th) -> str:
    """Whose share the verdict judges, in a sentence (:func:`share_of` in a few words)."""
    if plan.method == "alphabeta":
        return f"of published tuples the attacker finds real with probability >= {th.at_risk:g}"
    if plan.method == "synthetic":
        return (
            f"of people whose {plan.sensitive} the learning attacker guesses with probability "
            f">= {th.at_risk:g}, beyond the control people"
        )
    return f"of people {_at_risk_words(plan.sensitive, th)}"


def _at_risk_words(sensitive: str, th) -> str:
    """Who is at risk, in words, under the thresholds' rule."""
    if th.at_risk_rule == "absolute":
        return f"whose {sensitive} the attacker names with probability >= {th.at_risk:g}"
    return (
        f"of whom the attacker learns {sensitive} beyond what is known without the release "
        f"(removing at least {th.at_risk:.0%} of the doubt)"
    )
