"""The custodian's thresholds and the audit's plan, read from a TOML file.

Every key is known and every number is checked against its range, so a typo
(``max_at_risk_shre``) or a threshold outside ``[0, 1]`` is one clear error instead of a
silently ignored setting.  A missing key takes the default below.

Example (``privlab audit`` reads all of it; ``privlab report`` reads ``[thresholds]``,
``[attack]``, ``[control]``, ``[utility]``, ``[population]`` and ``[report]``)::

    [thresholds]
    at_risk = 0.8              # a person is at risk when the release removes this share of
                               # the doubt about their value left by what is known without it
    at_risk_rule = "beyond-known"  # or "absolute": when the top value reaches at_risk
    max_at_risk_share = 0.05   # FAIL when more people than this are at risk
    max_prosecutor_risk = 0.2  # FAIL when a published record is re-identified with more
    max_rhat = 1.05            # REVIEW when an attack's chains disagree more than this
    max_epsilon = 1.0          # a DP output (histogram, model) FAILs above this epsilon

    [attack]
    names = ["definetti"]      # definetti, em
    iterations = 4000          # per chain, or "auto"
    chains = 2
    seed = 0                   # mixed with 128 bits of OS entropy kept in the custody
    anneal = 1000              # annealed burn-in (finds the main mode first; 0: none)
    retry = true               # run an unconverged attack's chains on, as long again

    [control]
    public = "adult-test"      # public data of other people: the control baseline

    [utility]
    holdout = "adult-test"     # held-out people to test a model trained on the release

    [report]
    min_count = 20             # no figure about fewer people than this (per value, per bin)

    [audit]
    data = "adult"
    method = "anatomy"
    qi = ["workclass", "relationship", "sex", "salary"]
    sensitive = "occupation"
    grid = { l = [2, 3, 4, 5, 6] }
    keep = ["age"]             # published unchanged (default: no other column)
    weights = "w"              # masked releases: sampling weights, published unchanged
    hierarchies = "hier/"      # generalization, marginals: ARX files <column>.csv
    releases = 3               # independent releases per setting (their spread is measured)

**The attack's seed.**  ``[attack] seed`` is never used alone: the report's attacks draw
from it mixed with a 128-bit salt of OS entropy (:data:`privlab.report.build.ATTACK_SALT`),
which ``privlab report`` keeps in the custody directory on the first report and reuses after
(``privlab audit`` in each setting's custody).  So the same config and custody give the same
report, while nobody holding the published release, the report and the config can rerun the
report's attack to the same draws (a forwarded report whose attack could be rerun exactly
would tell them which people it judged at risk, and its per-value figures which guesses are
right).

**Whom the verdict counts as at risk.**  By default (``at_risk_rule = "beyond-known"``) a
person is at risk when the release removes at least the share ``at_risk`` of the doubt about
their sensitive value that is left by what an attacker knows without it: the control
attacker's guess when ``[control] public`` is given, else the population's shares of the
values (:func:`privlab.metrics.calibration.beyond_known`).  Why: under the absolute rule
(``"absolute"``, Kifer 2009: the best guess reaches ``at_risk``) a skewed attribute fails
every release, since the majority value alone, known to anyone, already reaches the
threshold for most people; the verdict is to judge what the release teaches.  The report
shows both shares.

**Small counts.**  Figures computed over fewer than ``[report] min_count`` people (20 by
default) are not shown: the per-value table pools such values into one row (with the next
smallest values when the pool itself is smaller, so the hidden rows cannot be recovered as
the total minus the rest), a share right or at risk among fewer people is left out, and so
is a reliability-diagram bin with fewer events.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privlab.errors import ParameterError

if TYPE_CHECKING:
    from privlab.attacks.definetti import DefinettiSettings

ATTACKS = ("definetti", "em")
#: the methods an audit runs and the parameter of each one's grid.  Generalization is the
#: optimal global recoding (``privlab generalize``'s default) to k-anonymity, each person
#: linked to their class by the attack (the data is the population); suppression is
#: ``privlab suppress``'s local suppression to k-anonymity, judged the same way.
#: Microaggregation, noise and rank swapping mask the ``qi`` columns (numeric) and keep
#: ``sensitive`` unchanged; noise is a percentage of each column's sd, swapping's ``p`` the
#: largest rank distance of a swap as a percentage of the records.  PRAM randomizes every
#: ``qi`` column and ``sensitive`` (M-category, each column by its own matrix), its ``p`` the
#: probability in percent that a value is replaced (``p = 30``: ``privlab pram randomize --p
#: 0.3``); the release is attacked by the PRAM attack (EM through the published matrices).
#: Top and bottom coding (``topcoding``) codes each tail of each ``qi`` column (numeric):
#: with ``tail = 5`` the values above the column's 95th percentile are replaced by it and
#: those below its 5th by that (``privlab mask topcode --top-quantile 0.95
#: --bottom-quantile 0.05``); judged as the other masked releases.  Alpha-beta
#: (``alphabeta``, Rastogi et al. 2007) publishes a view of the tuples of ``qi`` and
#: ``sensitive`` with fake tuples inserted, its ``gamma`` in percent the most an attacker whose
#: prior is the input's share of real tuples in the domain can be sure that a tuple of the
#: view is real (``privlab alphabeta --d n/m --gamma gamma/100``); judged by the membership
#: attack.  Anonymized marginals (``marginals``, Kifer & Gehrke 2006) publish a k-anonymous,
#: 2-diverse generalized base table and the marginals the greedy search adds
#: (``privlab marginals --k k``), each person read off the max-ent estimate by the max-ent
#: attack.  A differentially private synthetic table (``synthetic``: MST, McKenna, Miklau &
#: Sheldon 2021) of ``qi`` and ``sensitive`` at each ``epsilon`` (``privlab synth mst
#: --epsilon e``), judged as ``privlab report`` judges one: the guarantee against the
#: policy's ``max_epsilon``, and the learning attacker, Anonymeter, distance to the closest
#: record and membership inference, each beyond the ``[control] public`` people.  A
#: differentially private histogram (``dp-histogram``: the joint counts of ``qi`` and
#: ``sensitive`` over their domains, exact geometric noise; ``privlab dp histogram --columns
#: QI,S --epsilon e``) is judged as ``privlab report FILE --custody DIR`` judges one: by its
#: guarantee against ``max_epsilon`` and against the input's epsilon budget, were it
#: published, with the noise it adds (the mechanism's RMSE per cell, a closed form of
#: epsilon) as its cost.  A differentially private classifier of ``sensitive`` from ``qi``
#: (``dp-naive-bayes``: Mothali 2011, Ch. 8, ``privlab dp nb train --target S
#: --features QI --epsilon e``; ``dp-tree``: Friedman & Schuster 2010, ``privlab dp tree
#: train``) is judged the same way, with its accuracy on held-out people as its cost.
METHODS = {"anatomy": ("l",), "generalization": ("k",), "suppression": ("k",),
           "microaggregation": ("k",), "noise": ("noise",), "swap": ("p",),
           "pram": ("p",), "topcoding": ("tail",), "alphabeta": ("gamma",),
           "marginals": ("k",), "synthetic": ("epsilon",),
           "dp-histogram": ("epsilon",), "dp-naive-bayes": ("epsilon",),
           "dp-tree": ("epsilon",)}  # fmt: skip
#: the methods whose grid holds numbers, not integers (each > 0, at most the bound)
FLOAT_GRID = {"synthetic": 100.0, "dp-histogram": 100.0, "dp-naive-bayes": 100.0,
              "dp-tree": 100.0}  # fmt: skip
#: the DP learners: a model file predicting ``sensitive`` from ``qi``
MODELS = ("dp-naive-bayes", "dp-tree")
#: the methods judged by their guarantee alone (no attack can break it): one release a
#: setting, as its verdict is the same for every draw of its noise
GUARANTEED = ("dp-histogram", *MODELS)
#: each method's grid range where it is not ``[2, ...)``: PRAM's percentage, the share of
#: each tail coded (below 50: the top code above the bottom code), alpha-beta's gamma
GRID_RANGE = {"pram": (1, 99), "topcoding": (1, 49), "alphabeta": (1, 99)}
#: the methods whose grid values protect more as they fall (alpha-beta's gamma bounds the
#: attacker's certainty): their grid runs from the largest value down, so that for every
#: method the grid goes from the weakest protection to the strongest
SAFER_LOWER = ("alphabeta", "synthetic", "dp-histogram", *MODELS)
#: the grids given in percent, which a fraction below 1 was surely meant for
PERCENT = {"pram": ("p", 0.3), "alphabeta": ("gamma", 0.5)}
#: the methods whose release publishes nothing beside its own columns (``keep`` refused)
NO_KEEP = ("alphabeta", "marginals", "synthetic", "dp-histogram", *MODELS)
#: the methods that take hierarchies (a folder of ARX files)
HIERARCHICAL = ("generalization", "marginals")
#: the methods whose releases are masked numbers (judged by record linkage and the
#: nearest-neighbour attack; their utility is the information loss IL1s); only their audit
#: takes ``weights``: a column of sampling weights (how many people each record stands
#: for), published unchanged with the masked release, from which the report estimates the
#: population (sdcMicro's individual risk, Benedetti-Franconi)
MASKING = ("microaggregation", "noise", "swap", "topcoding")
#: the methods that draw nothing: one release per setting whatever ``releases`` says
DETERMINISTIC = ("generalization", "suppression", "marginals")


@dataclass(frozen=True)
class Thresholds:
    """What the custodian accepts (each checked in its range)."""

    at_risk: float = 0.8
    max_at_risk_share: float = 0.05
    max_prosecutor_risk: float = 0.2
    max_rhat: float = 1.05
    #: whom the verdict counts as at risk: "beyond-known" (the release moves the person
    #: beyond what is known without it) or "absolute" (Kifer's rule: the best guess reaches
    #: ``at_risk``); see :func:`privlab.metrics.calibration.beyond_known`
    at_risk_rule: str = "beyond-known"
    #: a DP output (histogram, model) passes only with epsilon at most this
    max_epsilon: float = 1.0


#: the values of ``[thresholds] at_risk_rule``
AT_RISK_RULES = ("beyond-known", "absolute")


@dataclass(frozen=True)
class AttackPlan:
    names: tuple[str, ...] = ("definetti",)
    iterations: int | None = 4000  # None: "auto"
    chains: int = 2
    #: mixed with the custody's salt (never used alone: see the module docstring)
    seed: int = 0
    time_budget: float = 300.0
    #: annealed burn-in iterations of the deFinetti attack (capped at a quarter of the
    #: iterations): each chain finds the main mode before it samples (see ``--anneal``)
    anneal: int = 1000
    anneal_restarts: int = 1
    #: a deFinetti attack of fixed length that has not converged runs its chains on for as
    #: many iterations again, and only the new draws are judged
    retry: bool = True

    def definetti(self) -> DefinettiSettings:
        """The deFinetti attack's settings of this plan: its iterations (None: until
        converged, within ``time_budget``) and chains, the annealed burn-in capped where the
        run's burn-in ends (a quarter of the iterations, or half the first stage's until
        converged), with ``anneal_restarts`` restarts where it anneals."""
        from privlab.attacks.definetti import FIRST_STAGE, DefinettiSettings

        cap = FIRST_STAGE // 2 if self.iterations is None else self.iterations // 4
        anneal = min(self.anneal, cap)
        return DefinettiSettings(
            iterations=self.iterations,
            chains=self.chains,
            max_seconds=self.time_budget,
            anneal=anneal,
            restarts=self.anneal_restarts if anneal else 1,
        )


@dataclass(frozen=True)
class AuditPlan:
    data: str = "adult"
    method: str = "anatomy"
    qi: tuple[str, ...] = ()
    sensitive: str = ""
    #: the parameter and its values (integers; numbers for :data:`FLOAT_GRID`'s methods)
    grid: dict[str, tuple[float, ...]] = field(default_factory=dict)
    #: columns published unchanged beside the sanitized ones (every other column is dropped)
    keep: tuple[str, ...] = ()
    #: generalization: a folder of ARX hierarchy files (``<column>.csv``); the others are a
    #: bundled dataset's own or generic ones
    hierarchies: str | None = None
    seed: int = 0
    #: independent releases drawn per setting: their spread is the release's own randomness
    releases: int = 3
    #: a column of sampling weights (a masked release's; see :data:`MASKING`)
    weights: str | None = None
    #: generalization: every published class also holds ``l`` distinct sensitive values
    #: (distinct l-diversity, Machanavajjhala et al. 2007), as ``privlab generalize --l``
    l: int | None = None
    #: generalization: every class's sensitive distribution within ``t`` of the table's
    #: (t-closeness, Li, Li & Venkatasubramanian 2007; equal ground distance: the total
    #: variation), as ``privlab generalize --t``
    t: float | None = None
    #: public domains declared for some columns, ``((column, values in order), ...)``
    #: (``[audit.domains]``, the command line's ``--domain COLUMN=v1|v2``): a DP output's
    #: cells, a model's classes and bounds are then not read from the data
    domains: tuple[tuple[str, tuple[Any, ...]], ...] = ()


@dataclass(frozen=True)
class Config:
    """A report's or an audit's settings (see the module docstring for the file)."""

    thresholds: Thresholds = field(default_factory=Thresholds)
    attack: AttackPlan = field(default_factory=AttackPlan)
    control_public: str | None = None
    holdout: str | None = None
    sampling_fraction: float | None = None
    audit: AuditPlan | None = None
    #: figures about fewer people than this are suppressed (``[report] min_count``)
    min_count: int = 20

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_toml(self) -> str:
        """The config as a TOML file that :func:`load_config` reads back to an equal one."""

        def val(v: Any) -> str:
            if isinstance(v, str):
                return json.dumps(v)
            if isinstance(v, (list, tuple)):
                return "[" + ", ".join(val(x) for x in v) + "]"
            if isinstance(v, bool):
                return "true" if v else "false"
            return repr(v)

        th, at = self.thresholds, self.attack
        lines = ["[thresholds]"]
        lines += [f"{k} = {val(v)}" for k, v in dataclasses.asdict(th).items()]
        lines += ["", "[attack]", f"names = {val(list(at.names))}"]
        lines += [f"iterations = {val('auto' if at.iterations is None else at.iterations)}"]
        lines += [f"chains = {at.chains}", f"seed = {at.seed}", f"time_budget = {at.time_budget!r}"]
        lines += [f"anneal = {at.anneal}", f"anneal_restarts = {at.anneal_restarts}"]
        lines += [f"retry = {val(at.retry)}"]
        if self.control_public is not None:
            lines += ["", "[control]", f"public = {val(self.control_public)}"]
        if self.holdout is not None:
            lines += ["", "[utility]", f"holdout = {val(self.holdout)}"]
        if self.sampling_fraction is not None:
            lines += ["", "[population]", f"sampling_fraction = {self.sampling_fraction!r}"]
        lines += ["", "[report]", f"min_count = {self.min_count}"]
        if self.audit is not None:
            a = self.audit
            ((param, values),) = a.grid.items()
            lines += ["", "[audit]", f"data = {val(a.data)}", f"method = {val(a.method)}"]
            lines += [f"qi = {val(list(a.qi))}", f"sensitive = {val(a.sensitive)}"]
            if a.keep:
                lines += [f"keep = {val(list(a.keep))}"]
            if a.hierarchies is not None:
                lines += [f"hierarchies = {val(a.hierarchies)}"]
            if a.weights is not None:
                lines += [f"weights = {val(a.weights)}"]
            if a.l is not None:
                lines += [f"l = {a.l}"]
            if a.t is not None:
                lines += [f"t = {a.t!r}"]
            lines += [f"grid = {{ {param} = {val(list(values))} }}", f"seed = {a.seed}"]
            lines += [f"releases = {a.releases}"]
            if a.domains:
                lines += ["", "[audit.domains]"]
                lines += [f"{json.dumps(c)} = {val(list(v))}" for c, v in a.domains]
        return "\n".join(lines) + "\n"


_RANGES = {
    "at_risk": (0.0, 1.0, False),  # (low, high, low included)
    "max_at_risk_share": (0.0, 1.0, True),
    "max_prosecutor_risk": (0.0, 1.0, True),
    "max_rhat": (1.0, 10.0, True),
    "max_epsilon": (0.0, 1000.0, False),
}


def _table(doc: dict, name: str, keys: set[str], where: str) -> dict:
    sec = doc.get(name, {})
    if not isinstance(sec, dict):
        raise ParameterError(f"{where}: [{name}] must be a table")
    unknown = set(sec) - keys
    if unknown:
        raise ParameterError(
            f"{where}: unknown key {sorted(unknown)[0]!r} in [{name}] "
            f"(known: {', '.join(sorted(keys))})"
        )
    return sec


def _number(v: Any, key: str, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ParameterError(f"{where}: {key} must be a number, not {v!r}")
    return float(v)


def _int(v: Any, key: str, where: str, low: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise ParameterError(f"{where}: {key} must be a whole number >= {low}, not {v!r}")
    return v


def grid_values(method: str, values: list[Any], label: str) -> list[Any]:
    """The values of a ``method``'s grid, checked (whole numbers from 2, or in the method's
    :data:`GRID_RANGE`; numbers in ``(0, bound]`` for :data:`FLOAT_GRID`'s; a fraction for a
    percentage refused) and ordered from the weakest protection to the strongest
    (:data:`SAFER_LOWER`).  A bad value raises ParameterError, its message led by
    ``label`` (the config's ``[audit] grid p``, the app's ``p``)."""
    low, high = GRID_RANGE.get(method, (2, None))
    if method in PERCENT and any(isinstance(v, float) and 0 < v < 1 for v in values):
        name, example = PERCENT[method]
        raise ParameterError(
            f"{label} of {method} is a percentage: give {round(100 * example)} for "
            f"{name} = {example:g}"
        )
    if method in FLOAT_GRID:
        bound = FLOAT_GRID[method]
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ParameterError(f"{label} must be a number, not {v!r}")
            if not 0 < v <= bound:
                raise ParameterError(f"{label} must lie in (0, {bound:g}], got {v:g}")
        values = [float(v) for v in values]
    else:
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ParameterError(f"{label} must be a whole number >= {low}, not {v!r}")
        if high is not None and max(values) > high:
            raise ParameterError(f"{label} must be at most {high}, got {max(values)}")
    return sorted(set(values), reverse=method in SAFER_LOWER)


def parse_config(doc: dict[str, Any], where: str = "the config") -> Config:
    """A :class:`Config` from a parsed TOML document (unknown keys and bad ranges refused)."""
    sections = {"thresholds", "attack", "control", "utility", "population", "report", "audit"}
    unknown = set(doc) - sections
    if unknown:
        raise ParameterError(
            f"{where}: unknown section or key {sorted(unknown)[0]!r} "
            f"(known: {', '.join(sorted(sections))})"
        )
    th = dict(_table(doc, "thresholds", {*_RANGES, "at_risk_rule"}, where))
    values: dict[str, Any] = {}
    if "at_risk_rule" in th:
        rule = th.pop("at_risk_rule")
        if rule not in AT_RISK_RULES:
            raise ParameterError(
                f"{where}: [thresholds] at_risk_rule must be "
                f"{' or '.join(map(repr, AT_RISK_RULES))}, not {rule!r}"
            )
        values["at_risk_rule"] = rule
    for key, v in th.items():
        x = _number(v, f"[thresholds] {key}", where)
        lo, hi, closed = _RANGES[key]
        if not ((lo <= x if closed else lo < x) and x <= hi):
            span = f"{'[' if closed else '('}{lo:g}, {hi:g}]"
            raise ParameterError(f"{where}: [thresholds] {key} = {x:g} is outside {span}")
        values[key] = x
    thresholds = Thresholds(**values)

    at = _table(doc, "attack", {"names", "iterations", "chains", "seed", "time_budget", "anneal",
                                "anneal_restarts", "retry"}, where)  # fmt: skip
    retry = at.get("retry", True)
    if not isinstance(retry, bool):
        raise ParameterError(f"{where}: [attack] retry must be true or false, not {retry!r}")
    names = at.get("names", ["definetti"])
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not names or any(n not in ATTACKS for n in names):
        raise ParameterError(
            f"{where}: [attack] names must list attacks among {', '.join(ATTACKS)}, not {names!r}"
        )
    it = at.get("iterations", 4000)
    iterations = None if it == "auto" else _int(it, "[attack] iterations", where, 10)
    budget = _number(at.get("time_budget", 300.0), "[attack] time_budget", where)
    if budget <= 0:
        raise ParameterError(f"{where}: [attack] time_budget must be positive")
    attack = AttackPlan(
        names=tuple(dict.fromkeys(names)),
        iterations=iterations,
        chains=_int(at.get("chains", 2), "[attack] chains", where, 1),
        seed=_int(at.get("seed", 0), "[attack] seed", where),
        time_budget=budget,
        anneal=_int(at.get("anneal", 1000), "[attack] anneal", where),
        anneal_restarts=_int(at.get("anneal_restarts", 1), "[attack] anneal_restarts", where, 1),
        retry=retry,
    )
    control = _table(doc, "control", {"public"}, where).get("public")
    holdout = _table(doc, "utility", {"holdout"}, where).get("holdout")
    for key, v in (("[control] public", control), ("[utility] holdout", holdout)):
        if v is not None and (not isinstance(v, str) or not v.strip()):
            raise ParameterError(f"{where}: {key} must be a dataset name or a file path")
    pop = _table(doc, "population", {"sampling_fraction"}, where)
    fraction = None
    if "sampling_fraction" in pop:
        fraction = _number(pop["sampling_fraction"], "[population] sampling_fraction", where)
        if not 0 < fraction <= 1:
            raise ParameterError(
                f"{where}: [population] sampling_fraction = {fraction:g} is outside (0, 1]"
            )
    rep = _table(doc, "report", {"min_count"}, where)
    min_count = _int(rep.get("min_count", 20), "[report] min_count", where, 1)
    audit = None
    if "audit" in doc:
        keys = {"data", "method", "qi", "sensitive", "grid", "keep", "hierarchies", "seed",
                "releases", "weights", "l", "t", "domains"}  # fmt: skip
        audit = _audit(_table(doc, "audit", keys, where), where)
    return Config(thresholds, attack, control, holdout, fraction, audit, min_count)


def _audit(sec: dict, where: str) -> AuditPlan:
    method = sec.get("method", "anatomy")
    if method not in METHODS:
        raise ParameterError(
            f"{where}: [audit] method {method!r} is not one privlab audits yet "
            f"({', '.join(METHODS)})"
        )
    qi = sec.get("qi")
    if not isinstance(qi, list) or not qi or not all(isinstance(q, str) for q in qi):
        raise ParameterError(f"{where}: [audit] qi must be a list of column names")
    sensitive = sec.get("sensitive")
    if not isinstance(sensitive, str) or not sensitive:
        raise ParameterError(f"{where}: [audit] sensitive must name a column")
    keep = sec.get("keep", [])
    if not isinstance(keep, list) or not all(isinstance(c, str) for c in keep):
        raise ParameterError(f"{where}: [audit] keep must be a list of column names")
    both = sorted(set(keep) & {*qi, sensitive})
    if both:
        raise ParameterError(f"{where}: [audit] keep names {both[0]!r}, which has another role")
    hierarchies = sec.get("hierarchies")
    if hierarchies is not None and (not isinstance(hierarchies, str) or not hierarchies):
        raise ParameterError(f"{where}: [audit] hierarchies must be a folder of ARX files")
    if hierarchies is not None and method not in HIERARCHICAL:
        raise ParameterError(
            f"{where}: [audit] hierarchies apply to {' and '.join(HIERARCHICAL)} only"
        )
    if keep and method in NO_KEEP:
        raise ParameterError(
            f"{where}: [audit] keep does not apply to {method}: its release publishes the "
            "quasi-identifiers and the sensitive attribute only (leave keep out)"
        )
    weights = sec.get("weights")
    if weights is not None:
        if not isinstance(weights, str) or not weights:
            raise ParameterError(f"{where}: [audit] weights must name a column")
        if method not in MASKING:
            raise ParameterError(
                f"{where}: [audit] weights apply to {', '.join(MASKING)} (the masked releases "
                "whose report estimates the population from them), not to " + method
            )
        if weights in {*qi, sensitive, *keep}:
            raise ParameterError(
                f"{where}: [audit] weights names {weights!r}, which has another role"
            )
    l, t = check_also(sec, method, where)
    grid = sec.get("grid")
    if not isinstance(grid, dict) or len(grid) != 1:
        raise ParameterError(
            f"{where}: [audit] grid must give one parameter and its values, e.g. "
            f"grid = {{ {METHODS[method][0]} = [2, 3, 4] }}"
        )
    ((param, values),) = grid.items()
    if param not in METHODS[method]:
        raise ParameterError(
            f"{where}: [audit] grid parameter {param!r} does not apply to {method} "
            f"(use {' or '.join(METHODS[method])})"
        )
    if not isinstance(values, list) or not values:
        raise ParameterError(f"{where}: [audit] grid {param} must be a non-empty list")
    values = grid_values(method, values, f"{where}: [audit] grid {param}")
    once = method in DETERMINISTIC or method in GUARANTEED
    releases = _int(sec.get("releases", 1 if once else 3), "[audit] releases", where, 1)
    if method in DETERMINISTIC and releases > 1:
        raise ParameterError(
            f"{where}: [audit] releases = {releases}, but {method} draws nothing: every "
            "release of a setting is the same (leave releases out)"
        )
    if method in GUARANTEED and releases > 1:
        raise ParameterError(
            f"{where}: [audit] releases = {releases}, but a {method} is judged by its "
            "guarantee, the same for every draw of its noise (leave releases out)"
        )
    data = sec.get("data", "adult")
    if not isinstance(data, str) or not data:
        raise ParameterError(f"{where}: [audit] data must be a dataset name or a file path")
    return AuditPlan(
        data=data,
        method=method,
        qi=tuple(qi),
        sensitive=sensitive,
        grid={param: tuple(values)},
        keep=tuple(keep),
        hierarchies=hierarchies,
        seed=_int(sec.get("seed", 0), "[audit] seed", where),
        releases=releases,
        weights=weights,
        l=l,
        t=t,
        domains=declared(sec.get("domains", {}), f"{where}: [audit.domains]"),
    )


def declared(domains: Any, where: str) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """``[audit.domains]``: each column's public values in order (text or numbers, none
    twice), checked; refusals are led by ``where``."""
    if not isinstance(domains, dict):
        raise ParameterError(f"{where} must be a table of column = [values]")
    out = []
    for col, values in domains.items():
        if not isinstance(values, list) or not values:
            raise ParameterError(f'{where}: {col} must list its values, e.g. ["a", "b"]')
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise ParameterError(f"{where}: {col}'s values are text or numbers, not {v!r}")
        seen = set()
        for v in values:
            if v in seen:
                raise ParameterError(f"{where}: {col} lists {v!r} twice")
            seen.add(v)
        out.append((str(col), tuple(values)))
    return tuple(out)


def check_also(sec: dict, method: str, where: str | None) -> tuple[int | None, float | None]:
    """``[audit] l`` and ``t``: the privacy models a generalization's every setting of ``k``
    must also hold (checked; refused for the other methods).  A refusal is led by
    ``where: [audit]`` (the app's form: ``where`` None, the key alone)."""
    lead = "" if where is None else f"{where}: [audit] "
    l, t = sec.get("l"), sec.get("t")
    for key, v in (("l", l), ("t", t)):
        if v is not None and method != "generalization":
            raise ParameterError(
                f"{lead}{key} applies to generalization only (a constraint each setting of k "
                f"must also meet), not to {method}"
            )
    if l is not None and (isinstance(l, bool) or not isinstance(l, int) or l < 2):
        raise ParameterError(f"{lead}l must be a whole number >= 2, not {l!r}")
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < 1):
        raise ParameterError(f"{lead}t must be a number between 0 and 1, not {t!r}")
    return l, None if t is None else float(t)


def load_config(path: str | Path | None) -> Config:
    """Read a TOML config (None: every default)."""
    if path is None:
        return Config()
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ParameterError(f"{path} is not a UTF-8 text file") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ParameterError(f"{path} is not valid TOML: {e}") from None
    return parse_config(doc, str(path))
