"""``privlab demo`` / ``make demo``: a short audit of the bundled Adult data.

Anatomizes Adult with the setting of Kifer 2009 Sec. 6 (QI workclass, relationship, sex,
salary; sensitive occupation) for l = 2, 3, 4, attacks every release with the deFinetti
attack (Kifer 2009 Sec. 5.1), judges each against a lenient limit (FAIL when more than 10%
of people are at risk: the attack removes at least 80% of the doubt about their occupation
that the control attacker leaves; privlab's default limit is 5%, which none of these
settings meets), and writes one report, ``out/report.html``, that recommends the
smallest l that passes (:func:`privlab.report.run_audit`).  The control baseline learns from
``adult-test`` (other people), and so does the utility check (a model trained on each
release, tested on ``adult-test``).

The releases are drawn as a custodian's are: their seeds are salted with OS entropy kept in
each custody directory (:func:`privlab._rng.publication_rng`), so nobody can replay them from
the seed, and the numbers vary a little from run to run (so do the attacks' draws, whose salt
each custody keeps too).  The custody directories go to ``OUT.custody``, beside ``out`` and
never inside it: ``out`` may be shared, the custody never.

Each l draws three independent releases (the first is the one in ``out``, the others stay
in the custody) and attacks each, so that the verdict of a setting holds the spread between
its releases as well as the chains' and the people's (:func:`privlab.report.audit.
between_releases`).  The default run (2 chains of 8,000 iterations per release, 9 releases)
takes 80 to 120 s on two cores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privlab.report.audit import Audit, run_audit
from privlab.report.config import AttackPlan, AuditPlan, Config, Thresholds

DEMO_QI = ("workclass", "relationship", "sex", "salary")
DEMO_SENSITIVE = "occupation"
#: per chain: at 4,000 one attack in 36 stopped short of 400 effective samples (ESS 126), a
#: REVIEW by chance; at 8,000 none of 45 did.  Chains that settle in different modes are not
#: cured by length (2 of 36 attacks at 4,000, 2 of 45 at 8,000) but by pooling the chains'
#: restarts (run_definetti): 2 of 81 since, where only one of a release's 8 annealed
#: burn-ins found its main mode
DEMO_ITERATIONS = 8000
DEMO_CHAINS = 2
#: annealed restarts per chain: with 2, one release in three at l = 4 kept a chain in a
#: minor mode (R-hat 1.07 and 1.94 in one run), which makes the verdict REVIEW by chance;
#: with 4 in a pool, 2 attacks of 81 still did, where one burn-in in ten or fewer found the
#: main mode; more rounds of 4 while fewer than 2 share the best one's mode
#: (run_definetti's restart_rounds) cured 4 of the 5 splits of 10 seeds on such a release
DEMO_RESTARTS = 4
#: The demo's limit on the share of people at risk (beyond what the control knows): twice
#: privlab's default of 5%, so that the audit has a setting to recommend among l = 2, 3, 4
#: (at l = 4 about 6% of people are at risk, with an interval over three releases of about
#: +-4 points; the default passes none of them).
DEMO_MAX_AT_RISK = 0.10


def demo_config(
    *, seed: int = 0, ls=(2, 3, 4), iterations: int = DEMO_ITERATIONS, chains: int = DEMO_CHAINS
) -> Config:
    """The demo's audit as a :class:`~privlab.report.config.Config`."""
    return Config(
        thresholds=Thresholds(max_at_risk_share=DEMO_MAX_AT_RISK),
        attack=AttackPlan(
            names=("definetti",),
            iterations=iterations,
            chains=chains,
            seed=seed,
            anneal_restarts=DEMO_RESTARTS,
        ),
        control_public="adult-test",
        holdout="adult-test",
        audit=AuditPlan(
            data="adult",
            method="anatomy",
            qi=DEMO_QI,
            sensitive=DEMO_SENSITIVE,
            grid={"l": tuple(ls)},
            seed=seed,
        ),
    )


def run_demo(
    out: str | Path,
    *,
    seed: int = 0,
    ls: tuple[int, ...] = (2, 3, 4),
    iterations: int = DEMO_ITERATIONS,
    chains: int = DEMO_CHAINS,
    progress: bool = True,
    force: bool = False,
    on_step: Any = None,
    custody: str | Path | None = None,
) -> Audit:
    """Audit Anatomy on Adult for each ``l`` into ``out``, the custody into ``custody``
    (default ``OUT.custody``, beside ``out``); both written whole at the end, and refused
    when they exist unless ``force``."""
    cfg = demo_config(seed=seed, ls=ls, iterations=iterations, chains=chains)
    return run_audit(cfg, out, custody=custody, progress=progress, force=force, on_step=on_step)


def console_rows(audit: Audit) -> list[dict[str, Any]]:
    """The demo's table: short columns (explained by :data:`LEGEND`) that fit 80 columns."""

    def pct(x) -> str:
        return "-" if x is None else f"{100 * x:.1f}"

    return [
        {
            "l": r["l"],
            "verdict": r["verdict"],
            "risk%": pct(r["at_risk_share"]),
            "abs%": pct(r.get("absolute_at_risk_share")),
            "prec%": pct(r["at_risk_precision"]),
            "acc%": pct(r["acc"]),
            "rw%": pct(r["random_worlds_acc"]),
            "ctrl%": pct(r["control_acc"]),
            "model%": pct(r["model_accuracy"]),
        }
        for r in audit.rows
    ]


LEGEND = (
    "risk%: people of whom the attack removes at least 80% of the doubt about their "
    "occupation that an attacker learning from other people (adult-test) leaves; abs%: "
    "people whose occupation it names with probability >= 0.8 outright; "
    "prec%: how often the at-risk guesses are right; acc%: how often the attack's best guess is "
    "right; rw%: the same without learning (what Anatomy promises, 1/l); ctrl%: an attacker "
    "who learns from other people (adult-test) only; model%: a model trained on the release "
    "predicting occupation for new people (adult-test)"
)
