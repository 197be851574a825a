"""The custodian's report on one release: identity risk, attribute risk under learning
attacks, utility, diagnostics, and a verdict against the custodian's thresholds.

:func:`build` computes everything and returns a :class:`Report` (plain data, JSON-ready);
:meth:`Report.to_html` renders it as one self-contained page (inline CSS and SVG plots, no
network) and :meth:`Report.to_json` as the same content in JSON.  Per-person risks are never
in the report: :func:`build` writes them to the custody directory only (``person_risk``).

The verdict (:func:`verdict`) reads three things, each against a threshold of the config:

* **attribute disclosure** -- the share of people whose sensitive value the strongest attack
  names with probability at least ``at_risk`` (Kifer 2009 Def. 2).  FAIL when the share is
  above ``max_at_risk_share``; REVIEW when only its 95% Wilson interval reaches above it;
* **identity disclosure** -- the largest prosecutor risk ``1 / f`` of a published record
  (El Emam & Dankar 2008), FAIL above ``max_prosecutor_risk``.  It is judged only for
  releases whose rows carry the sensitive information: Anatomy publishes the
  quasi-identifiers exactly by design (Xiao & Tao 2006), and finding a person's row reveals
  only their group, whose disclosure the attacks measure; the report shows the figures and
  says so;
* **convergence** -- an attack whose chains disagree (R-hat above ``max_rhat``) or stopped
  short makes the verdict at best REVIEW: its numbers may understate the risk.

A release no attack applies to, or one without its custody (no truth to judge the attack
against), is at best REVIEW: its attribute risk was not measured.

**A report may be forwarded** (the page and its JSON; never the custody directory):

* its attacks draw from the config's ``[attack] seed`` mixed with a 128-bit salt of OS
  entropy (:data:`ATTACK_SALT`, kept in the custody: :func:`read_attack_salt`,
  :func:`write_attack_salt`), so the same config and custody reproduce the report while
  nobody else can rerun its attack to the same draws;
* no figure that compares the attack with the truth covers fewer than ``min_count`` people
  (``[report] min_count``, default 20): values held by fewer people are pooled in the
  per-value table, precisions over fewer people at risk and reliability bins with fewer
  events are left out, each with enough others that the hidden ones cannot be recovered as
  a total minus the rest (:func:`hide_small`);
* the utility it shows is what the release's readers could compute themselves (a
  generalization's published measures; for marginals, the KL the marginals remove, read
  from the published counts), never a measure of the raw input -- with one exception, a
  masked release's information loss (:func:`_masking_loss`): readers cannot measure it, and
  the one number shown (IL1s per cell, the mean standardized absolute change of a value over
  all cells; for medoids the share of cells changed) reveals no record and no moment of the
  input, while the detailed measures (means, covariances, eigenvalues, pMSE) stay in the
  custody.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import math
import secrets
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privlab._frames import ToFrames
from privlab._io import json_ready
from privlab.attacks.convergence import ESS_MIN
from privlab.errors import ConvergenceWarning, ParameterError, PrivlabError
from privlab.release.views import Grouped, MaxEnt, Randomized, ReleaseView
from privlab.report.config import Config

PASS, REVIEW, FAIL = "PASS", "REVIEW", "FAIL"
#: The file in a custody directory that keeps the salt of the report's attacks.
ATTACK_SALT = "report-salt.json"
#: Bits of OS entropy in that salt.
ATTACK_SALT_BITS = 128
_ORDER = {PASS: 0, REVIEW: 1, FAIL: 2}
HIST_BINS = 20
SURVIVAL_X = np.round(np.linspace(0.0, 1.0, 101), 2)


def _survival(top: np.ndarray) -> list[float]:
    """The share of people whose top probability is at least each point of SURVIVAL_X (with
    a 1e-9 slack, so that a probability of exactly 1/3 counts at 0.33... and not below)."""
    t = np.sort(np.asarray(top, dtype=np.float64))
    below = np.searchsorted(t, SURVIVAL_X - 1e-9, side="left")
    return np.round(1.0 - below / t.size, 6).tolist()


#: What a release's main parameter means, and which way protects more.
_STRONGER = {
    "anatomy": ("l", "raise l"),
    "generalization": ("k", "raise k (or l), or generalize further"),
    "pram": ("p", "randomize more (a larger p)"),
    "marginals": ("k", "raise k or l, or publish fewer (or coarser) marginals"),
    "masking": ("k", "mask more (a larger k, more noise, a wider swap window)"),
    "alphabeta": (
        "gamma",
        "choose d at least the share of real tuples in the domain (n/m) and a lower gamma "
        "(Thm 4.3: keep fewer real tuples, insert more)",
    ),
}

#: Release kinds attacked through a model of the release (not a partition of its rows): the
#: attack privlab runs on each, whatever the config's attack names (the config's names are
#: the partition attacks; an explicit ``attacks=`` / ``--attacks`` is checked against this).
MODEL_ATTACKS = {
    "marginals": "maxent", "alphabeta": "membership", "pram": "pram", "masking": "nearest",
}  # fmt: skip
_MODEL_ATTACK_OF = {
    "maxent": "the max-ent attack, for marginals releases",
    "membership": "the membership attack, for alpha-beta releases",
    "pram": "the PRAM attack, for PRAM releases",
    "nearest": "the nearest-neighbour attack, for masked releases",
}
#: the no-learning baseline of a PRAM release: each record's published value through its
#: column's matrix, at the prior estimated from the release (gamma-amplification's attacker)
PRAM_BASELINE = "no learning (the published value and the matrix only)"
#: the PRAM attack's EM cap in a report: its iterations are cheap (one pass over the distinct
#: patterns; on Nursery at p = 0.5 about 6,000 to converge at the default tolerance, the
#: attack's own default cap being 5,000), and an unconverged attack is never judged PASS
PRAM_EM_ITERATIONS = 100_000


def check_attacks(method: str, names: tuple[str, ...] | None) -> None:
    """Refuse, in one line naming it, an attack that does not apply to a ``method`` release.

    A marginals release is attacked only by ``maxent`` and an alpha-beta release only by
    ``membership`` (their releases are counts or a set of tuples, not classes of rows the
    ``definetti`` and ``em`` attacks learn from); those two apply to every other kind.
    ``names=None`` (the config's attacks) is always accepted.
    """
    if names is None:
        return
    from privlab.report.config import ATTACKS

    names = tuple(names)
    if not names:
        raise ParameterError("no attack given: name at least one")
    model = MODEL_ATTACKS.get(method)
    kind = f"{'an' if method[:1] in 'aeiou' else 'a'} {method} release"
    for name in names:
        if model is not None and name != model:
            raise ParameterError(
                f"attack {name!r} does not apply to {kind}: it is attacked "
                f"through its model by {model!r} only (--attacks {model})"
            )
        if model is None and name not in ATTACKS:
            why = _MODEL_ATTACK_OF.get(name, "not an attack")
            raise ParameterError(
                f"attack {name!r} does not apply to {kind} ({why}); "
                f"choose among {', '.join(ATTACKS)}"
            )


@dataclass(frozen=True)
class Report(ToFrames):
    """The report's content: plain data (``to_json``) that ``to_html`` renders."""

    header: dict[str, Any]
    verdict: dict[str, Any]
    identity: dict[str, Any]
    attribute: dict[str, Any]
    utility: dict[str, Any]
    diagnostics: dict[str, Any]
    person_risk: str | None = None
    plots: dict[str, str] = field(default_factory=dict, repr=False)
    #: the salt the attacks ran with (the custodian's: never in to_dict, JSON or HTML)
    attack_salt: int | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The content without the rendered plots."""
        return {
            "header": self.header,
            "verdict": self.verdict,
            "identity": self.identity,
            "attribute": self.attribute,
            "utility": self.utility,
            "diagnostics": self.diagnostics,
            "person_risk": self.person_risk,
        }

    def to_json(self) -> str:
        return json.dumps(json_ready(self.to_dict()), indent=2, allow_nan=False)

    def _repr_html_(self) -> str:
        from privlab.report.render import summary_html

        return summary_html(self)

    def to_html(self) -> str:
        from privlab.report.render import render_report

        return render_report(self)

    def to_pandas(self) -> Any:
        """One row per attack: the attribute-risk figures."""
        import pandas as pd

        return pd.DataFrame(
            [{"attack": k, **v["summary"]} for k, v in self.attribute.get("attacks", {}).items()]
        )


# -- the attacks' seed ------------------------------------------------------------------------
def read_attack_salt(custody: str | Path) -> int | None:
    """The salt of the report's attacks kept in the custody directory ``custody``, or None
    when it holds none yet (a malformed file is a :class:`PrivlabError` naming it)."""
    from privlab._io import read_json

    path = Path(custody) / ATTACK_SALT
    if not path.exists():
        return None
    doc = read_json(path, what="report salt file")
    salt = doc.get("salt") if isinstance(doc, dict) else None
    if isinstance(salt, bool) or not isinstance(salt, int) or salt < 0:
        raise PrivlabError(f"{path}: 'salt' must be a non-negative integer")
    return salt


def write_attack_salt(path: str | Path, salt: int) -> None:
    """Write ``salt`` as the report-salt file at ``path`` (a file inside the custody; the
    caller makes it atomic with the report's other outputs)."""
    from privlab._io import dumps

    doc = {
        "notice": "custodian's file: never publish. With the config's [attack] seed it "
        "reproduces the attacks of this custody's reports",
        "salt": int(salt),
    }
    Path(path).write_text(dumps(doc), encoding="utf-8")


def fresh_attack_salt() -> int:
    """A new salt: :data:`ATTACK_SALT_BITS` bits of OS entropy."""
    return secrets.randbits(ATTACK_SALT_BITS)


def _salted(config: Config, salt: int) -> Config:
    """The config whose attack seed is the config's seed mixed with ``salt`` (a 128-bit
    integer drawn from both by a ``SeedSequence``): what the attacks run with."""
    state = np.random.SeedSequence([int(salt), int(config.attack.seed)]).generate_state(4)
    seed = int.from_bytes(state.astype("<u4").tobytes(), "little")
    return dataclasses.replace(config, attack=dataclasses.replace(config.attack, seed=seed))


# -- the build --------------------------------------------------------------------------------
def build(
    release: Any,
    *,
    custody: str | Path | None = None,
    config: Config | None = None,
    attacks: tuple[str, ...] | None = None,
    person_risk: str | Path | None = None,
    population: Any = None,
    progress: bool = False,
    label: str | None = None,
    attack_salt: int | None = None,
    hierarchies: Any = None,
    header: dict[str, Any] | None = None,
    weights: np.ndarray | None = None,
    plots: bool = True,
) -> Report:
    """Attack ``release`` and judge it: the report's data.

    Parameters
    ----------
    release
        A :class:`~privlab.release.base.Release` or its directory.
    custody
        The release's custody directory (its true values: needed to judge the attacks).
    config
        Thresholds and attack settings (:func:`privlab.report.config.load_config`).
    attacks
        Attacks to run (default: the config's), among ``definetti`` and ``em``.  A marginals
        release is attacked by the max-ent attack (on ``population``), an alpha-beta release
        by the membership attack (at its ``d`` and at the prior estimated from the view);
        for them ``attacks`` may name only ``maxent`` (resp. ``membership``), and any other
        name is refused (:func:`check_attacks`), as is a model attack on another kind.
    person_risk
        CSV to write the per-person risks to (the custodian's only; inside the custody
        directory when the CLI writes it).  None: not written.
    population
        The people an attacker may link to (a privlab ``Table``, a CSV/Parquet path or a
        bundled dataset) with the release's published non-sensitive columns, in their
        published form: gives the exact journalist and marketer risks and population uniques.
    label
        A name for the release in progress bars and titles (default: its directory).
    attack_salt
        The salt mixed with the config's attack seed.  None: the one ``custody`` keeps
        (:func:`read_attack_salt`), else a fresh one from OS entropy, returned as
        :attr:`Report.attack_salt` for the caller to keep (:func:`write_attack_salt`); the
        report is reproducible only from a kept salt.
    hierarchies
        The public hierarchies that read a generalized release's cells for ``population``
        (a mapping or an ARX folder); None: a bundled dataset's own when ``population``
        names one.
    header
        More entries for the report's header (:func:`privlab.report.assess.assess` says
        there how it read an outside file).
    weights
        The sampling weight of each published row, or None: the individual risk of
        sdcMicro's model then estimates each key's population count from them.
    plots
        False: no figures (:attr:`Report.plots` empty; its page has none), for a report that
        is measured and never shown (an audit's further releases of a setting: about half
        of each report's time is drawing them).
    """
    from privlab.release.base import Release, load_release, read_meta

    config = config or Config()
    extra = header
    if attack_salt is None and isinstance(custody, (str, Path)):
        attack_salt = read_attack_salt(custody)
    if attack_salt is None:
        attack_salt = fresh_attack_salt()
    run_config = _salted(config, attack_salt)
    where = None
    input_hash = None
    if not isinstance(release, Release):
        where = Path(release)
        read_meta(where)  # one clear line for a directory that is not a release
        release = load_release(where, custody=custody)
        input_hash = hashlib.sha256((where / "release.json").read_bytes()).hexdigest()
    elif custody is not None:
        release = release.with_custody(custody, None)
    label = label or (where.name if where is not None else release.method)
    check_attacks(release.method, attacks)
    names = tuple(attacks) if attacks is not None else config.attack.names
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", ConvergenceWarning)
        header = _header(release, where, input_hash)
        privacy = release.privacy(threshold=config.thresholds.max_prosecutor_risk)
        part = release.partition()
        # a generalized (or marginals) release's population holds exact values, not the
        # published cells
        exact = release.method in ("generalization", "marginals")
        linkable_population = None if exact else population
        if weights is None and release.method == "masking":
            weights = release.weights()  # the sampling weights it publishes, if any
        identity = _identity(release, privacy, config, linkable_population, weights)
        if release.method == "masking":
            identity = {**identity, **_linkage(release, config)}
            attribute, posteriors, known = _attribute_masked(release, config)
        elif release.method in MODEL_ATTACKS:
            attribute, posteriors, known = _attribute_model(release, privacy, config, population)
        else:
            attribute, posteriors, known = _attribute(
                release, part, privacy, names, run_config, progress, label, population,
                hierarchies,
            )  # fmt: skip
        utility = _utility(release, part, privacy, config)
    caught = list(dict.fromkeys(str(w.message) for w in seen))
    diagnostics = _diagnostics(posteriors, privacy, caught)
    diagnostics["other_releases"] = other_releases(release, input_hash)
    verdict_ = verdict(release.method, identity, attribute, diagnostics, config)
    figures = _plots(identity, attribute, posteriors, config) if plots else {}
    if person_risk is not None and posteriors:
        _write_person_risk(person_risk, posteriors, known)
    return Report(
        header={**header, **(extra or {}), "label": label, "min_count": config.min_count},
        verdict=verdict_,
        identity=identity,
        attribute=attribute,
        utility=utility,
        diagnostics=diagnostics,
        person_risk=str(person_risk) if person_risk is not None and posteriors else None,
        plots=figures,
        attack_salt=attack_salt,
    )


def _version() -> str:
    from privlab import __version__

    return __version__


_THREAT = {
    "anatomy": (
        "The attacker knows the published release and the quasi-identifiers of every person "
        "in it (a voter list, say), and learns the link between quasi-identifiers and the "
        "sensitive value from the release itself (Kifer 2009). Anatomy promises that nobody's "
        "value is guessed with probability above 1/l by an attacker who does not learn."
    ),
    "generalization": (
        "The attacker knows the published table and the quasi-identifiers of the people in "
        "it, and links them through the generalized cells; a learning attacker also learns "
        "the link between quasi-identifiers and the sensitive value from the table itself."
    ),
    "pram": (
        "The attacker knows the published (randomized) records and the randomization "
        "matrices, and estimates each person's true value from them (Ma 2006)."
    ),
    "marginals": (
        "The attacker knows the published base table and marginals and each person's exact "
        "quasi-identifiers; its model of the population is the release's maximum-entropy "
        "estimate (Kifer & Gehrke 2006), from which it reads each person's sensitive value "
        "(Kifer 2009 Sec. 7)."
    ),
    "masking": (
        "The attacker knows the published (masked) records and the true values of the masked "
        "columns of the people in them (a register, say), and links each record to the "
        "person whose values lie nearest (distance-based record linkage, Domingo-Ferrer & "
        "Torra 2001); a linked record discloses everything it publishes about its person."
    ),
    "alphabeta": (
        "A d-independent adversary (Rastogi et al. 2007) sees the view and the public alpha, "
        "beta and domain, and computes for each published tuple the exact probability that "
        "it is a real record rather than an inserted one."
    ),
}


def report_date() -> str:
    """When a report is written, as its header states it (minutes, UTC)."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _header(release: ReleaseView, where: Path | None, input_hash: str | None) -> dict[str, Any]:
    return {
        "release": str(where) if where is not None else None,
        "method": release.method,
        "parameters": release.summary(),
        "privlab_version": _version(),
        "date": report_date(),
        "release_sha256": input_hash,
        "columns": {a.name: a.role.value for a in release.schema.attributes},
        "threat_model": _THREAT.get(
            release.method,
            "The attacker knows the published release; privlab has no learning attack on "
            f"a {release.method!r} release yet, so only its published structure is measured.",
        ),
    }


# -- identity ---------------------------------------------------------------------------------
def _population_codes(population, link) -> np.ndarray:
    """The population's linkable columns in the release's coding (a value the release does
    not hold gets its own code, one past the domain: it matches no published class)."""
    from privlab.data.datasets import load_input
    from privlab.data.table import Table

    table = population if isinstance(population, Table) else load_input(population)
    missing = [c for c in link.names if c not in table.names]
    if missing:
        raise PrivlabError(
            f"the population has no column {missing[0]!r} (it needs the release's published "
            f"non-sensitive columns: {', '.join(link.names)})"
        )
    return np.stack(
        [a.encode(table.decode(a.name), unknown=a.size) for a in link.schema.attributes], axis=1
    )


#: the largest minimal sample unique the report searches for on a release of more published
#: linkable columns than :data:`SUDA_FULL` (SUDA's usual threshold)
MSU_SIZE = 3
#: up to this many published linkable columns the search is full, as sdcMicro's suda2's (on
#: Adult's 8 columns: 0.5 s), and the DIS-SUDA scores are those sdcMicro gives
SUDA_FULL = 8


def _classical(link, weights, config: Config, fraction: float | None) -> dict[str, Any]:
    """sdcMicro's individual and global risk (Benedetti-Franconi; with ``weights`` when
    the release carries them), and SUDA2's minimal sample uniques and DIS-SUDA scores on the
    published linkable columns (every size up to :data:`SUDA_FULL` columns, else up to
    :data:`MSU_SIZE`), at the sampling fraction ``fraction`` when it is known (else
    sdcMicro's default DisFraction, 0.01)."""
    from privlab.metrics.msu import MAX_COLUMNS, minimal_sample_uniques, suda_scores
    from privlab.metrics.sdc_risk import individual_risk

    th = config.thresholds.max_prosecutor_risk
    ind = individual_risk(link.codes, weights, names=link.names)
    out: dict[str, Any] = {
        "individual": {**ind.to_dict(), "threshold": th, "share_above": ind.share_above(th)},
        "msu": None,
        "suda": None,
    }
    d = len(link.names)
    if 0 < d <= MAX_COLUMNS:
        size = d if d <= SUDA_FULL else MSU_SIZE
        msu = minimal_sample_uniques(link.codes, link.names, max_size=size)
        out["msu"] = msu.to_dict()
        dis = fraction if fraction is not None else 0.01
        suda = suda_scores(link.codes, link.names, msus=msu, dis_fraction=dis).to_dict()
        keep = ("max_size", "dis_fraction", "dis", "records_scored", "max_dis_score",
                "attribute_contributions", "sample_uniques")  # fmt: skip
        out["suda"] = {k: suda[k] for k in keep}
        out["suda"]["full"] = size == d
    return out


def _identity(
    release: ReleaseView, privacy, config: Config, population=None, weights=None
) -> dict[str, Any]:
    from privlab.metrics.risk import identity_risk

    link = release.linkable()
    kept = None
    if release.method in ("pram", "masking"):
        # a match on randomized (masked) values is a guess, which the PRAM attack (the record
        # linkage) measures; an exact match is made on the columns published unchanged only
        randomized = set(release.randomized_columns if release.method == "pram" else release.masked)
        kept = [c for c in link.names if c not in randomized]
        if kept:
            link = link.select(kept)
    pop = None if population is None else _population_codes(population, link)
    fraction = config.sampling_fraction
    if fraction is None and pop is None and weights is not None:
        # the weights estimate the population's size: its sum (sdcMicro's N)
        fraction = min(1.0, link.n_rows / float(np.sum(weights)))
    freq = None
    if getattr(release, "algorithm", None) == "local-suppression" and pop is None:
        from privlab.publish.local_suppression import published_frequencies

        freq = published_frequencies(link, link.names)  # * matches any value
    risk = identity_risk(
        link.codes,
        pop,
        sampling_fraction=fraction,
        threshold=config.thresholds.max_prosecutor_risk,
        names=link.names,
        frequencies=freq,
    )
    judged = release.method not in ("anatomy", "alphabeta") and kept != []
    why = {
        "anatomy": "Anatomy publishes the quasi-identifiers exactly, by design: finding a "
        "person's row reveals only their group, whose sensitive values the attacks below "
        "measure. These figures are shown, not judged.",
        "alphabeta": "An alpha-beta view is a set of distinct tuples by construction, so every "
        "row is unique; what it protects is whether a row is a real record at all, which the "
        "membership attack below measures. These figures are shown, not judged.",
    }.get(release.method)
    remedy = None
    if kept == [] and release.method == "masking":
        why = (
            "Every linkable column of this release is masked: masked numbers match no one "
            "exactly, and how often a record is linked to its person from their true values "
            "is what the record linkage above measures and the verdict judges. These figures "
            "are shown, not judged."
        )
    elif kept == []:
        why = (
            "Every linkable column of this PRAM release is randomized: matching a person to a "
            "record on randomized values is a guess, whose success the PRAM attack below "
            "measures. These figures are shown, not judged."
        )
    elif kept is not None:
        names = ", ".join(kept)
        small = int(risk.prosecutor_share_above * risk.n + 0.5)
        how, tool = ("p", "PRAM") if release.method == "pram" else ("masking", "the masking")
        remedy = (
            f"no {how} can pass: the re-identification comes from the columns published "
            f"unchanged ({names}), which {tool} does not touch ({small} record(s) in classes "
            f"of fewer than {1 / config.thresholds.max_prosecutor_risk:g} on them); "
            f"{'randomize' if release.method == 'pram' else 'mask'} {names} too, or publish "
            f"{'it' if len(kept) == 1 else 'them'} coarser or without the rare values, then "
            "report again"
        )
    return {
        "judged": judged,
        "why_not_judged": why,
        "measured_on": (
            None
            if kept is None
            else "the columns published unchanged (a match on "
            f"{'randomized' if release.method == 'pram' else 'masked'} values is a guess)"
        ),
        "remedy": remedy,
        "columns": list(link.names),
        "risk": risk.to_dict(),
        "classical": _classical(link, weights, config, fraction),
        "sentences": risk.summary_lines(),
        "k": privacy.k,
        "flagged": dict(privacy.flagged),
        "warnings": privacy.warnings(),
    }


def _linkage(release, config: Config) -> dict[str, Any]:
    """A masked release's record linkage (:func:`privlab.attacks.record_linkage.
    record_linkage`): every published record linked to the nearest of the people's true
    values (the custody's), the share linked to its own person with its interval, and
    sdcMicro's interval disclosure; without the custody, not measured."""
    from privlab.attacks.record_linkage import hamming_linkage, record_linkage

    if release.custody is None or release.custody.truth is None:
        return {"linkage": None, "linkage_why": "no custody directory was given: the record "
                "linkage needs the true values (give --custody DIR)"}  # fmt: skip
    if release.categorical:
        link = hamming_linkage(release.truth_codes(), release.codes())
    else:
        link = record_linkage(release.truth_values(), release.values())
    return {"linkage": {**link.to_dict(), "columns": list(release.masked)}}


def _attribute_masked(release, config: Config):
    """The attribute section of a masked release: the sensitive column kept unchanged,
    learnt by the nearest-neighbour attacker (:func:`privlab.attacks.nearest.
    nearest_neighbour_attack`) from the people's true values of the masked columns, judged
    against each person's true value (their published one, which masking leaves as it is);
    the no-learning baseline gives everyone the release's shares of the values."""
    from privlab.attacks.nearest import hamming_attack, nearest_neighbour_attack, prior_posterior

    s = release.schema.sensitive
    if s is None:
        why = "no sensitive column: the record linkage under identity is the risk"
        return {"measured": False, "applicable": False, "why": why, "sensitive": s,
                "attacks": {}}, {}, None  # fmt: skip
    values = tuple(str(v) for v in release.schema[s].domain)
    base = {"sensitive": s, "values": list(values), "threshold": config.thresholds.at_risk,
            "max_disclosure": 0.0}  # fmt: skip
    if release.custody is None or release.custody.truth is None:
        why = ("no custody directory was given: the attacker's knowledge (the people's true "
               "values of the masked columns) is in it (give --custody DIR)")  # fmt: skip
        return {**base, "measured": False, "why": why, "attacks": {}}, {}, None
    post = hamming_attack(release) if release.categorical else nearest_neighbour_attack(release)
    truth = release.table.column(s).astype(np.int64)
    baseline = prior_posterior(release, truth.size)
    known, base["rule"] = _known(config, truth, len(values))
    result, curve = _judge(
        post, truth, values, config.thresholds.at_risk, None, min_count=config.min_count,
        baseline=baseline, known=known,
    )  # fmt: skip
    result["diagnostics"] = _scalars(post.diagnostics)
    attribute = _assemble(
        base, {"nearest": result}, {"nearest attack": curve}, truth, None, values, config,
        baseline=("no learning (the release's shares of the values)", baseline), known=known,
    )  # fmt: skip
    return attribute, {"nearest": post}, known


# -- attribute --------------------------------------------------------------------------------
def _truth(release, part) -> np.ndarray | None:
    if part is None:
        return None
    t = getattr(release, "truth", None)
    if t is None or callable(t):
        return None
    return np.asarray(t, dtype=np.int64)


def _people(release, population, part, sensitive=None) -> tuple[Any, np.ndarray]:
    """Threat model (a) on a generalized (or marginals) release: the people (exact
    quasi-identifiers) and their true sensitive codes in the release's domain (``part``'s
    sensitive attribute, or ``sensitive``)."""
    from privlab.data.datasets import load_input
    from privlab.data.table import Table

    people = population if isinstance(population, Table) else load_input(population)
    s = part.sensitive if sensitive is None else sensitive
    if s.name not in people.names:
        raise PrivlabError(
            f"the population has no column {s.name!r}: it needs each person's exact "
            "quasi-identifiers and true sensitive value to judge the attack"
        )
    text = people.decode(s.name)
    truth = s.encode(text, unknown=-1)
    if (truth < 0).any():
        bad = str(text[int(np.flatnonzero(truth < 0)[0])])
        raise PrivlabError(
            f"the population holds {s.name} = {bad!r}, which the release does not publish "
            "(is it the release's population?)"
        )
    return people, truth


def _attribute(
    release, part, privacy, names, config: Config, progress: bool, label: str, population=None,
    hierarchies=None,
):  # fmt: skip
    if part is None:
        return (
            {
                "measured": False,
                "why": f"privlab has no learning attack on a {release.method!r} release yet",
                "attacks": {},
            },
            {},
        )
    truth = _truth(release, part)
    people = None
    if release.method == "generalization":
        truth = None
        if population is not None:
            people, truth = _people(release, population, part)
            names = tuple(n for n in names if n == "definetti") or ("definetti",)
    values = tuple(str(v) for v in part.sensitive.domain)
    sensitive = part.sensitive.name
    th = config.thresholds.at_risk
    base = {
        "sensitive": sensitive,
        "values": list(values),
        "threshold": th,
        "max_disclosure": float(privacy.max_disclosure or 0.0),
    }
    if truth is None:
        why = (
            "a generalized release publishes every row's sensitive value; what it protects "
            "is who is who: give the people (each one's exact quasi-identifiers and true "
            "sensitive value) with --population FILE, and the deFinetti attack links them "
            "(threat model (a) of Kifer 2009)"
            if release.method == "generalization"
            else "no custody directory was given: without the true values the attacks "
            "cannot be judged (give --custody DIR)"
        )
        return ({**base, "measured": False, "why": why, "attacks": {}}, {}, None)
    control = None
    if config.control_public is not None and people is None:
        from privlab.attacks.control import control_attack
        from privlab.data.datasets import load_input

        public = load_input(config.control_public, drop_missing=True)
        control = control_attack(release, public, source=config.control_public).probs
    known, base["rule"] = _known(config, truth, len(values), control)
    at_risk = _thresholds(th, values, known, truth.size)  # every attack's chains, judged alike
    posteriors = {}
    results = {}
    group_of = part.group_of
    curves: dict[str, list[float]] = {}
    for name in names:
        post, per_chain = _run_attack(
            release, name, config, progress, label, people, population,
            per_chain=chain_at_risk(at_risk), hierarchies=hierarchies,
        )  # fmt: skip
        posteriors[name] = post
        if people is not None:
            if post.n_rows != truth.size:
                raise PrivlabError(
                    f"the attack covers {post.n_rows} people, the population has {truth.size}"
                )
            group_of = post.group_id
        if control is not None and known is None and "control" not in curves:
            # (beyond what the control knows, the control itself gains nothing: no curve)
            curves["control"] = _survival(_score(control, known))
        results[name], curves[f"{name} attack"] = _judge(
            post, truth, values, th, group_of, control, min_count=config.min_count,
            per_chain=per_chain, known=known, at_risk=at_risk if known is not None else None,
        )  # fmt: skip
    attribute = _assemble(base, results, curves, truth, group_of, values, config, known=known)
    return attribute, posteriors, known


def _known(config: Config, truth, m: int, control=None) -> tuple[Any, dict[str, Any]]:
    """What an attacker knows of each person without the release, under the config's
    at-risk rule (:func:`privlab.metrics.calibration.beyond_known`): None under the
    absolute rule; else the control attacker's posterior when there is one (it learns from
    public data only), else the population's shares of the sensitive values.  With it, the
    attribute section's ``rule``: its name and the words for what is known."""
    rule = config.thresholds.at_risk_rule
    known, words = None, None
    if rule != "absolute":
        if control is not None:
            known, words = control, "the control attacker's guess (it learns from public data only)"
        else:
            n = max(int(truth.size), 1)
            known = np.bincount(truth, minlength=m)[:m] / n
            words = "the population's shares of the values"
    return known, {"name": rule, "known": words}


def chain_at_risk(b: np.ndarray):
    """The at-risk share of one chain's posterior ``(n, m)`` under the thresholds ``b``
    (``(m,)`` or ``(n, m)``: :func:`_thresholds`), a probability equal to its threshold
    counting, as in the pooled share."""

    def share(chain: np.ndarray) -> float:
        return float((chain >= b).any(axis=1).mean())

    return share


def _thresholds(th, values, known, n: int) -> np.ndarray:
    """The at-risk thresholds: one per value ``(m,)``, or beyond what is ``known`` one per
    person and value ``(n, m)`` (:func:`privlab.metrics.calibration.beyond_known`)."""
    from privlab.metrics.calibration import beyond_known, value_thresholds

    b = value_thresholds(th, len(values), values)
    return b if known is None else beyond_known(b, known, n)


def _score(probs, known, column: int | None = None):
    """Each person's score on the survival plot: the top probability (of ``column`` only,
    when given), or under the beyond-known rule the largest share of the remaining doubt
    removed (:func:`privlab.metrics.calibration.relative_gain`)."""
    from privlab.metrics.calibration import relative_gain

    p = probs if column is None else probs[:, [column]]
    if known is None:
        return p.max(axis=1)
    k = np.asarray(known)
    k = k[..., [column]] if column is not None else k
    return relative_gain(p, k)


def _judge(
    post,
    truth,
    values,
    th,
    group_of,
    control=None,
    *,
    min_count=1,
    per_chain=None,
    baseline=None,
    known=None,
    score_column=None,
    at_risk=None,
):
    """One attack's figures against the truth, and its survival curve of each person's
    score (:func:`_score`); figures over fewer than ``min_count`` people
    are left out (:func:`hide_small`).

    ``per_chain`` (the at-risk share of each of the attack's chains alone, under the same
    thresholds) adds the MCMC's share of the at-risk share's uncertainty:
    :func:`share_uncertainty`.  ``baseline`` (a
    posterior over the same rows) is the no-learning baseline in place of random worlds
    (which needs groups): its figures fill ``random_worlds``.  ``known`` (what is known
    without the release: :func:`_known`) counts a person at risk only when the release
    moves them beyond it, and the figures under the plain thresholds go to the summary's
    ``absolute``; ``score_column`` scores the survival curve on that value alone.
    ``at_risk``: the thresholds beyond what is known (:func:`_thresholds`) when the caller
    has them already (built once per report, not once per use)."""
    from privlab.metrics.calibration import evaluate

    ev = evaluate(
        post.probs, truth, threshold=th, values=values,
        group_id=group_of if baseline is None else None, control=control, known=known,
        baseline=baseline, beyond=at_risk,
    )  # fmt: skip
    no_learning, control_rates = ev.random_worlds, ev.control
    top = _score(post.probs, known, score_column)
    hist, edges = np.histogram(top, bins=HIST_BINS, range=(0.0, 1.0))
    b = at_risk if at_risk is not None else _thresholds(th, values, known, truth.size)
    unc = share_uncertainty(ev.at_risk_share, ev.at_risk_share_ci, per_chain)
    summary = {
        "acc": ev.acc,
        "acc_ci": list(ev.acc_ci),
        "at_risk_share": ev.at_risk_share,
        "at_risk_share_ci": unc["interval"],
        "at_risk_share_uncertainty": unc,
        "at_risk_count": ev.at_risk_count,
        "at_risk_precision": ev.at_risk_precision,
        "at_risk_precision_ci": list(ev.at_risk_precision_ci),
        "brier": ev.brier,
    }
    if ev.absolute is not None:
        summary["absolute"] = {
            k: ev.absolute[k] for k in ("at_risk_share", "at_risk_share_ci", "at_risk_count")
        }
    return {
        "threat_model": post.threat_model,
        "summary": _small_precision(summary, min_count),
        "random_worlds": _small_precision(no_learning, min_count),
        "control": _small_precision(control_rates, min_count),
        "residual_risk": ev.residual_risk,
        "top_histogram": {"edges": edges.tolist(), "counts": hist.tolist()},
        "per_value": _per_value(post.probs, truth, values, b, min_count),
        "reliability": _reliability(ev.reliability, min_count),
    }, _survival(top)


#: the normal quantile of the report's two-sided 95% intervals
Z95 = 1.959963984540054


def share_uncertainty(
    share: float, people_ci: Sequence[float], per_chain: Sequence[float] | None
) -> dict[str, Any]:
    """The at-risk share's 95% interval from its two sources of uncertainty in one release:
    the people (the Wilson interval of a share of ``n``) and the MCMC (the attack's chains).

    The MCMC variance is the between-chain variance of the chains' own at-risk shares over
    the number of chains (the pooled posterior averages them): ``s^2 / C``.  The Wilson
    interval's two sides are each widened in quadrature, ``share -+ sqrt(side^2 +
    (z se_mcmc)^2)``, clipped to [0, 1], so that with one chain, or chains that agree, it
    is the Wilson interval.  Variances are reported on the share's scale (squared
    proportions); ``people`` is the Wilson interval's half-width over z, squared.
    """
    lo, hi = (float(x) for x in people_ci)
    people = ((hi - lo) / (2 * Z95)) ** 2
    chains = None if per_chain is None else [float(x) for x in per_chain]
    mcmc = float(np.var(chains, ddof=1) / len(chains)) if chains and len(chains) > 1 else None
    add = 0.0 if mcmc is None else Z95**2 * mcmc
    interval = [
        max(0.0, share - math.sqrt((share - lo) ** 2 + add)),
        min(1.0, share + math.sqrt((hi - share) ** 2 + add)),
    ]
    return {
        "interval": interval,
        "people_interval": [lo, hi],
        "per_chain": chains,
        "variance": {"people": people, "mcmc": mcmc},
    }


# -- small counts -----------------------------------------------------------------------------
def hide_small(counts: Sequence[int], min_count: int) -> set[int]:
    """Which of a table's cells to hide so that no figure covers fewer than ``min_count``
    people, the total of the table being known.

    Every positive count below ``min_count`` is hidden (primary suppression); then, while
    the hidden cells together cover fewer than ``min_count`` people, the smallest shown one
    is hidden too (secondary suppression): otherwise the total minus the shown cells would
    give the hidden ones back.  Empty cells are never hidden (there is nothing to show).
    """
    counts = [int(c) for c in counts]
    hidden = {i for i, c in enumerate(counts) if 0 < c < min_count}
    if not hidden:
        return hidden
    rest = sorted((c, i) for i, c in enumerate(counts) if c >= min_count)
    while sum(counts[i] for i in hidden) < min_count and rest:
        hidden.add(rest.pop(0)[1])
    return hidden


def _small_precision(d: dict[str, Any] | None, min_count: int) -> dict[str, Any] | None:
    """A summary's precision (right among those at risk) left out below ``min_count``
    people at risk."""
    if d is None or d.get("at_risk_count", 0) >= min_count:
        return d
    return {**d, "at_risk_precision": None, "at_risk_precision_ci": [None, None]}


def _reliability(rel: dict[str, list] | None, min_count: int) -> dict[str, list] | None:
    """The reliability diagram without the bins of fewer than ``min_count`` events (and
    with enough others hidden that the sum of the outcomes, the number of people, cannot
    give them back)."""
    if rel is None:
        return None
    hidden = hide_small(rel["count"], min_count)
    keep = [i not in hidden for i in range(len(rel["count"]))]
    return {
        "forecast": [f if k else None for f, k in zip(rel["forecast"], keep)],
        "frequency": [f if k else None for f, k in zip(rel["frequency"], keep)],
        "count": list(rel["count"]),
        "hidden_bins": len(hidden),
    }


def _assemble(
    base, results, curves, truth, group_of, values, config, score_column=None, baseline=None,
    known=None,
):  # fmt: skip
    """The attribute section: the attacks' figures, the strongest, random worlds (each
    group's shares of the true values; ``score_column`` scores the curve on that value
    alone), or ``baseline``, a no-learning posterior given as ``(label, probs)``; ``known``
    as for :func:`_judge`."""
    from privlab.metrics.calibration import random_worlds_probs

    label = "no learning (random worlds)"
    if baseline is not None:
        label, rw = baseline
    else:
        rw = random_worlds_probs(group_of, truth, len(values))
    rw_top = _score(rw, known, score_column)
    curves = {label: _survival(rw_top), **curves}
    rw_hist, _ = np.histogram(rw_top, bins=HIST_BINS, range=(0.0, 1.0))
    strongest = max(results, key=lambda k: results[k]["summary"]["at_risk_share"])
    return {
        **base,
        "measured": True,
        "n": int(truth.size),
        "attacks": results,
        "strongest": strongest,
        "random_worlds_histogram": rw_hist.tolist(),
        "top_survival": {"x": SURVIVAL_X.tolist(), **curves},
        "control_source": config.control_public,
        "baseline_label": label,
    }


def _attribute_model(release: ReleaseView, privacy, config: Config, population=None):
    """The attribute section of a release attacked through a model of it (no partition):

    * marginals: the max-ent attack on the people (``population``: each one's exact
      quasi-identifiers and true sensitive value), random worlds = the base table's classes;
    * alpha-beta: the membership attack on every published tuple, judged against the
      custody's ``real`` column; a tuple is at risk when its probability of being real
      reaches the threshold (being surely *inserted* discloses no one); random worlds = the
      share of real tuples in the view.
    """
    name = MODEL_ATTACKS[release.method]
    th = config.thresholds.at_risk
    base = {"threshold": th, "max_disclosure": float(privacy.max_disclosure or 0.0)}
    if release.method == "pram":
        return _attribute_pram(release, base, config)
    if release.method == "marginals":
        from privlab.attacks.marginals import marginals_attack

        s = release.attributes[release.names.index(release.sensitive)]
        values = tuple(str(v) for v in s.domain)
        base.update(sensitive=s.name, values=list(values))
        if population is None:
            why = (
                "the marginals are counts, not rows: give the people (each one's exact "
                "quasi-identifiers and true sensitive value) with --population FILE, and the "
                "max-ent attack reads each one's value from the release's max-ent estimate"
            )
            return ({**base, "measured": False, "why": why, "attacks": {}}, {}, None)
        people, truth = _people(release, population, None, sensitive=s)
        post = marginals_attack(release, people)
        base["population_matches_release"] = _fills_base(release, people)
        known, base["rule"] = _known(config, truth, len(values))
        result, curve = _judge(
            post, truth, values, th, post.group_id, min_count=config.min_count, known=known
        )
        group_of = post.group_id
    else:
        from privlab.attacks.alphabeta import VALUES, alphabeta_attack, estimated_prior

        values = VALUES
        base.update(sensitive="real", values=list(values))
        truth_table = None if release.custody is None else release.custody.truth
        if truth_table is None or "real" not in truth_table.names:
            why = (
                "no custody directory was given: without knowing which published tuples are "
                "real the membership attack cannot be judged (give --custody DIR)"
            )
            return ({**base, "measured": False, "why": why, "attacks": {}}, {}, None)
        truth = truth_table.column("real").astype(np.int64)
        cut = {values[0]: 1.0, values[1]: th}
        # the guarantee covers priors up to d; an adversary who estimates the share of real
        # tuples from the view (n~/m) may hold a larger one: both are run, the strongest judged
        posts = {}
        if release.d is not None:
            posts[name] = alphabeta_attack(release)
        posts[f"{name}-estimated-prior"] = alphabeta_attack(release, prior=estimated_prior(release))
        # judged on the absolute rule whatever the config's: the guarantee bounds the
        # posterior itself (Rastogi et al. 2007), and the prior it covers (d) is what is known
        known = None
        base["rule"] = {"name": "absolute", "known": None}
        results, curves = {}, {}
        for key, post in posts.items():
            results[key], curves[f"{key} attack"] = _judge(
                post, truth, values, cut, post.group_id, score_column=1,
                min_count=config.min_count, known=known,
            )  # fmt: skip
            results[key]["threshold_per_value"] = cut
            results[key]["diagnostics"] = _scalars(post.diagnostics)
        attribute = _assemble(
            base, results, curves, truth, post.group_id, values, config, score_column=1,
            known=known,
        )  # fmt: skip
        return attribute, posts, None  # (no person-risk score beyond what is known)
    result["diagnostics"] = _scalars(post.diagnostics)
    attribute = _assemble(
        base, {name: result}, {f"{name} attack": curve}, truth, group_of, values, config,
        known=known,
    )  # fmt: skip
    return attribute, {name: post}, known


def _attribute_pram(release: Randomized, base, config: Config):
    """The attribute section of a PRAM release: every randomized column attacked by the
    PRAM attack (:func:`privlab.attacks.pram.run_pram_attack`: EM deconvolution of the
    column's dependence on the other published columns, through the published matrices),
    judged against the custody's true values; the column whose share at risk is largest is
    the one shown and judged (the others are listed).  The no-learning baseline is the same
    attack with no other column (the published value through its matrix, at the prior the
    release shows: the attacker gamma-amplification bounds, Ma 2006 Sec. 3.1.2)."""
    from privlab.attacks.pram import run_pram_attack

    th = config.thresholds.at_risk
    columns = list(release.randomized_columns)
    truth_table = None if release.custody is None else release.custody.truth
    if not columns:
        why = "no column was randomized (every matrix is the identity): nothing to attack"
        return ({**base, "measured": False, "why": why, "attacks": {}}, {}, None)
    if truth_table is None or not set(columns) <= set(truth_table.names):
        why = (
            "no custody directory was given: without the true values the PRAM attack cannot "
            "be judged (give --custody DIR)"
        )
        return ({**base, "measured": False, "why": why, "attacks": {}}, {}, None)
    judged = {}
    for column in columns:
        values = tuple(str(v) for v in release.table.schema[column].domain)
        truth = truth_table.column(column).astype(np.int64)
        run = run_pram_attack(release, sensitive=column, iterations=PRAM_EM_ITERATIONS)
        prior_only = run_pram_attack(
            release, sensitive=column, qi=[], iterations=PRAM_EM_ITERATIONS
        ).posterior
        known, rule = _known(config, truth, len(values))  # (the same rule for every column)
        result, curve = _judge(
            run.posterior, truth, values, th, None, min_count=config.min_count,
            baseline=prior_only.probs, known=known,
        )  # fmt: skip
        result["diagnostics"] = _scalars(run.posterior.diagnostics)
        judged[column] = (result, curve, values, truth, run.posterior, prior_only, known)
    strongest = max(columns, key=lambda c: judged[c][0]["summary"]["at_risk_share"])
    result, curve, values, truth, post, prior_only, known = judged[strongest]
    others = [
        {"column": c, **{k: judged[c][0]["summary"][k] for k in ("acc", "at_risk_share")},
         "at_risk_share_ci": judged[c][0]["summary"]["at_risk_share_ci"]}
        for c in columns if c != strongest
    ]  # fmt: skip
    base = {**base, "sensitive": strongest, "values": list(values), "other_columns": others,
            "rule": rule}  # fmt: skip
    attribute = _assemble(
        base, {"pram": result}, {"pram attack": curve}, truth, None, values, config,
        baseline=(PRAM_BASELINE, prior_only.probs), known=known,
    )  # fmt: skip
    return attribute, {"pram": post}, known


def _fills_base(release: MaxEnt, people) -> bool:
    """Whether the people are exactly the marginals release's records: their counts over
    the base table's cells (generalized QIs and the sensitive value) equal the published
    ones.  When not, random worlds reads the people's own shares in each class."""
    base = release.marginals[0]
    attrs = {a.name: a for a in release.attributes}
    cells = tuple(
        m[attrs[name].encode(people.decode(name))] for name, m in zip(base.attributes, base.maps)
    )
    counts = np.zeros(base.counts.shape, dtype=np.int64)
    np.add.at(counts, cells, 1)
    return bool(np.array_equal(counts, base.counts))


def _scalars(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if not isinstance(v, (list, dict))}


def _run_attack(
    release, name: str, config: Config, progress: bool, label: str, people=None, source=None,
    per_chain=None, hierarchies=None,
):  # fmt: skip
    """Run one attack with the config's plan: its posterior, and ``per_chain`` (a figure of
    one chain's posterior: the at-risk share) of each chain, or None (EM has no chains)."""
    from privlab._progress import progress_label

    plan = config.attack
    with progress_label(f"{label}: "):
        if name == "definetti":
            from privlab.attacks.definetti import run_definetti

            # an unconverged run of fixed length takes the report's own advice ("run it
            # longer") once: its chains run on for as many iterations again, and only the
            # new draws are judged (run_definetti's retry)
            run = run_definetti(
                release, plan.definetti(), rng=plan.seed, progress=progress,
                chain_statistic=per_chain, warn=plan.iterations is None,
                retry=plan.retry and plan.iterations is not None,
                **_population_kwargs(people, source, hierarchies),
            )  # fmt: skip
            if plan.iterations is not None and not run.posterior.diagnostics["converged"]:
                warnings.warn(
                    run.posterior.diagnostics["convergence"], ConvergenceWarning, stacklevel=2
                )
            return run.posterior, run.posterior.diagnostics.get("statistic_per_chain")
        if name == "em":
            from privlab.attacks.em import em_attack

            return em_attack(release, rng=plan.seed, progress=progress), None
    raise ParameterError(f"unknown attack {name!r} (definetti, em)")


def _population_kwargs(people, source, hierarchies=None) -> dict[str, Any]:
    if people is None:
        return {}
    from privlab.attacks.population import bundled_hierarchies

    hier = hierarchies
    if hier is None and isinstance(source, (str, Path)):
        hier = bundled_hierarchies(source)
    return {"population": people, "hierarchies": hier}


def _per_value(
    probs: np.ndarray, truth: np.ndarray, values, b, min_count: int = 1
) -> list[dict[str, Any]]:
    """For the people of each true value: how many, how often the attack is right, how many
    are at risk (some value ``v`` with probability >= ``b[v]``), and how often an at-risk
    guess is right.

    Values held by fewer than ``min_count`` people are pooled into one last row (with the
    next smallest values when the pool would be smaller: :func:`hide_small`), whose
    ``pooled`` lists them; a precision over fewer than ``min_count`` people at risk is left
    out (None) the same way.
    """
    top = probs.argmax(axis=1)
    b = np.asarray(b, dtype=float)
    risky = (probs >= (b if b.ndim == 2 else b[None, :])).any(axis=1)
    counts = np.bincount(truth, minlength=len(values))
    pooled = hide_small(counts, min_count)
    groups = [([v], str(values[v])) for v in range(len(values)) if counts[v] and v not in pooled]
    if pooled:
        groups.append((sorted(pooled), f"{len(pooled)} other values (pooled)"))
    out = []
    for vs, name in groups:
        who = np.isin(truth, vs)
        n = int(who.sum())
        r = risky & who
        row = {
            "value": name,
            "people": n,
            "acc": float((top[who] == truth[who]).mean()),
            "at_risk_share": float(r.sum() / n),
            "at_risk_count": int(r.sum()),
            "at_risk_precision": float((top[r] == truth[r]).mean()) if r.any() else None,
        }
        if len(vs) > 1 or vs[0] in pooled:
            row["pooled"] = [str(values[v]) for v in vs]
        if n < min_count:  # everyone is in the pool and still too few: nothing to show
            row.update(acc=None, at_risk_share=None, at_risk_count=None, at_risk_precision=None)
        out.append(row)
    hidden = hide_small([row["at_risk_count"] or 0 for row in out], min_count)
    for i in hidden:
        out[i]["at_risk_precision"] = None
    return out


# -- utility ----------------------------------------------------------------------------------
def _utility(release: ReleaseView, part, privacy, config: Config) -> dict[str, Any]:
    out: dict[str, Any] = {"measures": {}}
    if part is not None:
        sizes = part.sizes()
        out["measures"] = {
            "groups": int(part.n_groups),
            "average group size": float(sizes.mean()),
            "discernibility (sum of squared group sizes)": int((sizes.astype(np.int64) ** 2).sum()),
        }
    for k, v in (privacy.details or {}).items():
        if isinstance(v, (int, float)):
            out["measures"][k] = v
    if release.method == "marginals" and len(release.marginals) > 1:
        out["measures"]["KL removed by the marginals (nats)"] = _kl_gain(release)
    published = release.metadata().get("utility")  # a generalization's information loss
    if isinstance(published, dict):  # its own measures replace the generic ones
        out["measures"] = {}
        for k, v in published.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                name = k.replace("_", " ")
                if k == "classification_metric":
                    # Kifer & Gehrke's CM with the one class column a generalized release
                    # publishes unchanged: the sensitive attribute (metrics.utility)
                    name = f"{name} (class {getattr(release, 'sensitive', None)})"
                out["measures"][name] = v
    if release.method == "masking":
        out["measures"].update(_masking_loss(release))
    if config.holdout is None:
        out["learner"] = None
        out["why_no_learner"] = "no held-out data given ([utility] holdout in the config)"
    elif release.method != "anatomy":
        out["learner"] = None
        out["why_no_learner"] = f"no learner is fitted to a {release.method!r} release yet"
    else:
        out["learner"] = _anatomy_learner(release, part, config.holdout)
    return out


def _masking_loss(release) -> dict[str, float]:
    """A masked release's one information-loss figure, from its custody (the module
    docstring says why it may be shown): IL1s per cell, or for categorical masking the
    share of cells changed; nothing without the custody."""
    custody = release.custody
    loss = ((custody.input_measures or {}).get("utility") or {}) if custody is not None else {}
    if loss.get("il1s_mean") is not None:
        return {"information loss IL1s per cell (against the input)": loss["il1s_mean"]}
    if loss.get("changed_cells") is not None:
        return {"cells changed (against the input)": loss["changed_cells"]}
    return {}


def _kl_gain(release: MaxEnt) -> float:
    """``KL(F^ || F^_base)``: how far the max-ent estimate with the marginals lies from the
    base table's alone, from the published counts only.  By the Pythagorean identity of
    nested log-linear (max-ent) fits it equals the drop in ``KL(data || max-ent)`` that the
    marginals bring (Kifer & Gehrke 2006's utility), without reading the data."""
    from privlab.publish.marginals import ipf, kl_divergence

    base = ipf(release.names, release.sizes, release.marginals[:1], tol=1e-12).probs
    return float(kl_divergence(release.maxent(tol=1e-12).probs, base))


def _anatomy_learner(release: Grouped, part, holdout: str) -> dict[str, Any]:
    """Naive Bayes predicting the sensitive value from the quasi-identifiers, trained on the
    release (each row weighted over its group's values: the random-worlds reading of
    Anatomy) and, for comparison, on the true values in custody; both tested on held-out
    people."""
    from sklearn.naive_bayes import CategoricalNB

    from privlab.data.datasets import load_input

    qi = release.quasi_identifiers()
    truth = _truth(release, part)
    m = part.counts.shape[1]
    shares = part.counts / part.sizes()[:, None]
    w = shares[part.group_of]  # (n, m)
    rows, vals = np.nonzero(w)
    X = qi.codes[rows]
    kwargs = {"min_categories": np.asarray(qi.schema.sizes)}
    nb_release = CategoricalNB(alpha=1.0, **kwargs).fit(X, vals, sample_weight=w[rows, vals])
    test = load_input(holdout, drop_missing=True)
    missing = [c for c in (*qi.names, part.sensitive.name) if c not in test.names]
    if missing:
        raise PrivlabError(f"the held-out data {holdout!r} has no column {missing[0]!r}")
    cols = [a.encode(test.decode(a.name), unknown=-1)
            for a in (*qi.schema.attributes, part.sensitive)]  # fmt: skip
    keep = np.all(np.stack(cols) >= 0, axis=0)
    Xt = np.stack(cols[:-1], axis=1)[keep]
    yt = cols[-1][keep]
    out = {
        "model": "naive Bayes (sensitive value from the quasi-identifiers)",
        "holdout": holdout,
        "tested_on": int(keep.sum()),
        "dropped": int((~keep).sum()),
        "accuracy_release": float((nb_release.predict(Xt) == yt).mean()),
        "majority_baseline": float(
            (yt == np.bincount(vals, weights=w[rows, vals], minlength=m).argmax()).mean()
        ),
    }
    if truth is not None:
        nb_true = CategoricalNB(alpha=1.0, **kwargs).fit(qi.codes, truth)
        out["accuracy_original"] = float((nb_true.predict(Xt) == yt).mean())
    return out


# -- diagnostics ------------------------------------------------------------------------------
def _diagnostics(posteriors, privacy, caught: list[str]) -> dict[str, Any]:
    runs = {}
    for name, post in posteriors.items():
        d = post.diagnostics
        runs[name] = {
            k: d.get(k)
            for k in (
                "converged",
                "convergence",
                "rhat_loglik",
                "ess_loglik",
                "rhat_tracked",
                "ess_tracked",
                "iterations",
                "chains",
                "seconds",
                "restarts",
                "restart_rounds",
            )
            if d.get(k) is not None
        }
        first = d.get("retried_after")
        if first:
            runs[name]["retried"] = (
                f"a first run of {first['iterations']:,} iterations per chain did not converge "
                f"(R-hat {first['rhat_loglik']:.3f}, effective sample size "
                f"{first['ess_loglik']:.0f}); its chains ran on for as many iterations again, and "
                "these figures are from the new draws alone"
            )
    shown = {r.get("convergence") for r in runs.values()}
    return {"attacks": runs, "warnings": [w for w in caught if w not in shown] + privacy.warnings()}


# -- the verdict ------------------------------------------------------------------------------
def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def other_releases(release: ReleaseView, release_sha256: str | None = None) -> list[dict[str, Any]]:
    """The custodian's other outputs of this release's input, from the registry
    (:mod:`privlab._registry`): each ``{"kind", "method"}``, oldest first.

    Known only with the custody (it holds the input's fingerprint); the release itself (its
    ``release.json`` SHA-256, from the custody or ``release_sha256``) is left out.  Two
    releases of one input reveal more together than either alone (``PAIR_RISK``), which a
    verdict on one of them cannot see: the verdict then asks for a review.
    """
    from privlab._registry import Registry

    custody = getattr(release, "custody", None)
    if custody is None or custody.input_sha256 is None:
        return []
    own = {s for s in (release_sha256, custody.release_sha256) if s is not None}
    return [
        {"kind": e.get("kind"), "method": e.get("method")}
        for e in Registry().entries(custody.input_sha256)
        if e.get("release_sha256") not in own
    ]


def level_and_reasons(findings: Sequence[tuple[str, str]]) -> tuple[str, list[str]]:
    """A verdict's level, the worst of its findings', and the reasons it gives: the findings
    at that level, or every finding when all pass."""
    level = max((lv for lv, _ in findings), key=_ORDER.__getitem__)
    if level == PASS:
        return level, [r for _, r in findings]
    return level, [r for lv, r in findings if lv == level]


def verdict(
    method: str, identity, attribute, diagnostics, config: Config, share_note: str | None = None
) -> dict[str, Any]:
    """PASS / REVIEW / FAIL with the reasons and the next step, in words.

    The attribute finding judges the strongest attack's at-risk share on its interval
    (PASS when the whole interval is within the limit, FAIL when it is all above, REVIEW
    when it straddles); ``share_note`` is appended to that finding (an audit says there
    over how many releases the share was taken)."""
    from privlab.report.render import attacker

    th = config.thresholds
    findings: list[tuple[str, str]] = []  # (level, reason)
    _param, stronger = _STRONGER.get(method, ("", "protect more"))
    if attribute.get("measured"):
        name = attribute["strongest"]
        s = attribute["attacks"][name]["summary"]
        share, (lo, hi) = s["at_risk_share"], s["at_risk_share_ci"]
        span = f"{_pct(share)} (95% interval {_pct(lo)} to {_pct(hi)})"
        what = (
            f"finds {span} of the published tuples real"
            if method == "alphabeta"
            else f"learns the {attribute['sensitive']} of {span} of people"
        )
        rule = attribute.get("rule") or {}
        if rule.get("known"):  # the beyond-known rule (absolute: nothing known)
            how = f", removing at least {th.at_risk:.0%} of the doubt left by {rule['known']}"
            flat = s.get("absolute")
            if flat is not None:
                how += (
                    f" ({_pct(flat['at_risk_share'])} reach probability {th.at_risk:g} "
                    "outright, counting what is known without the release)"
                )
        else:
            how = f" with probability >= {th.at_risk:g}"
        who = f"{attacker(name)} {what}{how}"
        who = who[0].upper() + who[1:]
        if lo > th.max_at_risk_share:
            findings.append(
                (FAIL, f"{who}; the limit is {_pct(th.max_at_risk_share)}, below the interval")
            )
        elif hi > th.max_at_risk_share:
            where = "within" if share <= th.max_at_risk_share else "above"
            findings.append(
                (
                    REVIEW,
                    f"{who}: {where} the limit of {_pct(th.max_at_risk_share)}, but the "
                    "interval (people and the attack's chains) straddles it",
                )
            )
        else:
            findings.append((PASS, f"{who}: within the limit of {_pct(th.max_at_risk_share)}"))
        if share_note:
            level_, reason = findings[-1]
            findings[-1] = (level_, f"{reason} [{share_note}]")
    elif attribute.get("applicable", True):
        findings.append((REVIEW, f"attribute risk not measured: {attribute.get('why')}"))
    attribute_fails = any(level == FAIL for level, _ in findings)
    link = identity.get("linkage")
    if link is not None:
        r = link["rate"]
        text = (
            f"distance-based record linkage re-identifies {_pct(r['value'])} of the records "
            f"(95% interval {_pct(r['low'])} to {_pct(r['high'])}) from their people's true "
            f"{', '.join(link['columns'])} (by chance: {_pct(link['chance'])})"
        )
        if link.get("releases"):
            text += (
                f" [the mean over {link['releases']} independent releases of this setting, "
                "with a 95% interval for one more release: the releases and the people]"
            )
        limit = th.max_at_risk_share
        if r["low"] > limit:
            attribute_fails = True
            findings.append((FAIL, f"{text}; the limit is {_pct(limit)}, below the interval"))
        elif r["high"] > limit:
            findings.append((REVIEW, f"{text}: the interval straddles the limit of {_pct(limit)}"))
        else:
            findings.append((PASS, f"{text}: within the limit of {_pct(limit)}"))
    elif identity.get("linkage_why"):
        findings.append((REVIEW, f"record linkage not measured: {identity['linkage_why']}"))
    identity_fails = False
    risk = identity["risk"]
    pros = risk.get("prosecutor_max")
    if identity["judged"] and pros is not None:
        if pros > th.max_prosecutor_risk:
            identity_fails = True
            findings.append(
                (
                    FAIL,
                    f"a published record is re-identified with probability {pros:.2f} "
                    f"(prosecutor risk; the limit is {th.max_prosecutor_risk:g})",
                )
            )
        else:
            findings.append(
                (
                    PASS,
                    f"the largest re-identification risk of a record is {pros:.2f}, within "
                    f"the limit of {th.max_prosecutor_risk:g}",
                )
            )
    for name, run in diagnostics["attacks"].items():
        rhat = max(
            (run[k] for k in ("rhat_loglik", "rhat_tracked") if run.get(k) is not None),
            default=None,
        )
        if run.get("converged") is False or (rhat is not None and rhat > th.max_rhat):
            ess = min(
                (run[k] for k in ("ess_loglik", "ess_tracked") if run.get(k) is not None),
                default=None,
            )
            facts = [f"R-hat {rhat:.3f}, limit {th.max_rhat:g}"] if rhat is not None else []
            if ess is not None:
                facts.append(f"effective sample size {ess:.0f}, needed {ESS_MIN:.0f}")
            if not facts and run.get("iterations") is not None:  # EM: no chains to compare
                facts.append(f"stopped at the cap of {run['iterations']} iterations")
            findings.append(
                (
                    REVIEW,
                    f"the {name} attack did not converge"
                    + (f" ({', '.join(facts)})" if facts else "")
                    + ": its figures may understate the risk; run it longer",
                )
            )
    others = diagnostics.get("other_releases") or []
    if others:
        from privlab._registry import PAIR_RISK

        kinds = ", ".join(sorted({str(o.get("method")) for o in others}))
        findings.append(
            (
                REVIEW,
                f"the registry holds {len(others)} other output(s) of this input ({kinds}): "
                "releases of one input reveal more together than each alone "
                f"({PAIR_RISK}), and the figures above judge this release alone",
            )
        )
    level, reasons = level_and_reasons(findings)
    if level == FAIL:
        step = f"{stronger}, then report again (`privlab audit` measures which setting passes)"
        if identity_fails and identity.get("remedy"):
            # the method's parameter cannot help: say why, and what can
            step = identity["remedy"]
            if attribute_fails:
                step += f"; and for the attribute risk, {stronger}"
    elif level == REVIEW:
        todo = []
        text = " ".join(reasons)
        if "converge" in text:
            todo.append("run the attack longer ([attack] iterations in --config)")
        if "custody" in text:
            todo.append("give the custody")
        step = f"resolve the points above ({', '.join(todo) or 'see each reason'}) and report again"
    else:
        step = "the release may be published under these thresholds"
    return {
        "level": level,
        "reasons": reasons,
        "findings": [{"level": lv, "reason": r} for lv, r in findings],
        "next_step": step,
        "thresholds": {
            "at_risk": th.at_risk,
            "max_at_risk_share": th.max_at_risk_share,
            "max_prosecutor_risk": th.max_prosecutor_risk,
            "max_rhat": th.max_rhat,
            "at_risk_rule": th.at_risk_rule,
        },
    }


# -- plots and person risks -------------------------------------------------------------------
def _plots(identity, attribute, posteriors, config: Config) -> dict[str, str]:
    from privlab.report import plots

    out = {"class_sizes": plots.class_sizes(identity["risk"])}
    if attribute.get("measured"):
        out["top_posterior"] = plots.top_posterior(attribute, config.thresholds.at_risk)
        out["per_value"] = plots.per_value(attribute)
        out["calibration"] = plots.calibration(attribute)
    return out


def _write_person_risk(path: str | Path, posteriors, known=None) -> None:
    """Each person's guess per attack: the top value, its probability and, given what is
    known without the release (:func:`_known`), the share of the doubt it removes (at risk
    from the threshold on: :func:`privlab.metrics.calibration.relative_gain`)."""
    import pandas as pd

    from privlab._csv import write_csv
    from privlab._io import atomic_path
    from privlab.metrics.calibration import relative_gain

    first = next(iter(posteriors.values()))
    values = np.asarray(first.values, dtype=object)
    frame = {"row": np.arange(first.n_rows), "group": first.group_id}
    for name, post in posteriors.items():
        frame[f"{name}_top_value"] = values[post.probs.argmax(axis=1)]
        frame[f"{name}_top_probability"] = np.round(post.probs.max(axis=1), 6)
        if known is not None:
            frame[f"{name}_doubt_removed"] = np.round(relative_gain(post.probs, known), 6)
    with atomic_path(Path(path), force=True) as tmp:
        write_csv(pd.DataFrame(frame), tmp, name=Path(path).name)
