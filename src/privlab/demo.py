"""``privlab demo`` / ``make demo``: the main job on the bundled Adult data.

Anatomizes Adult with the setting of Kifer 2009 Sec. 6 (QI workclass, relationship, sex,
salary; sensitive occupation) for l = 2, 3, 4, then attacks every release with the deFinetti
attack (Kifer 2009 Sec. 5.1) and reports, per group size, what Anatomy promises (random worlds:
accuracy 1/l, nobody above 1/l) against what a learning attacker gets: accuracy, ABS, the
share of people whose top posterior is at least 0.8 ("at risk") and how often that top
value is right.  Writes each release (``anatomy-l<l>/``) and its custody directory
(``custody/anatomy-l<l>/``: the true values the evaluation uses; never publish it), each
posterior, the metrics as JSON and a reliability diagram under ``out``.

The releases are drawn as a custodian's are: ``seed`` is salted with OS entropy kept in each
custody directory (:func:`privlab._rng.publication_rng`), so nobody can replay them from the
seed, and the numbers vary a little from run to run (the attacks' own draws are seeded).

The default run (2 chains of 4,000 iterations per release) takes about a minute on one core.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privlab._io import atomic_dir, write_json
from privlab.attacks.definetti import definetti_attack
from privlab.attacks.random_worlds import random_worlds_attack
from privlab.data.datasets import load_adult
from privlab.metrics.calibration import calibration_events, evaluate, reliability_diagram
from privlab.publish.anatomy import anatomize

DEMO_QI = ("workclass", "relationship", "sex", "salary")
DEMO_SENSITIVE = "occupation"
DEMO_ITERATIONS = 4000
DEMO_CHAINS = 2


def run_demo(
    out: str | Path,
    *,
    seed: int = 0,
    ls: tuple[int, ...] = (2, 3, 4),
    iterations: int = DEMO_ITERATIONS,
    chains: int = DEMO_CHAINS,
    progress: bool = True,
    force: bool = False,
) -> list[dict[str, Any]]:
    """Anatomize Adult for each ``l``, attack each release, save everything under ``out``.

    ``out`` appears whole when the run ends (an existing ``out`` is refused unless
    ``force``).  Returns one summary row per ``l``.
    """
    with atomic_dir(out, force=force) as tmp:
        return _run_demo(tmp, seed=seed, ls=ls, iterations=iterations, chains=chains,
                         progress=progress)  # fmt: skip


def _run_demo(
    out: Path, *, seed: int, ls: tuple[int, ...], iterations: int, chains: int, progress: bool
) -> list[dict[str, Any]]:
    table = load_adult()
    rows = []
    metrics: dict[str, Any] = {
        "attack": "definetti",
        "iterations": iterations,
        "chains": chains,
        "attack_seeds": [seed + 100 + i for i in range(len(ls))],
        "releases": {},
    }
    curves = {}
    for i, l in enumerate(ls):
        release = anatomize(table, qi=DEMO_QI, sensitive=DEMO_SENSITIVE, l=l, rng=seed + i)
        release.save(out / f"anatomy-l{l}", custody=out / "custody" / f"anatomy-l{l}")
        p = release.privacy()
        posterior = definetti_attack(
            release, iterations=iterations, chains=chains, rng=seed + 100 + i, progress=progress
        )
        posterior.save(out / f"posterior-definetti-l{l}.csv")
        ev = evaluate(posterior.probs, release.truth)
        base = evaluate(random_worlds_attack(release).probs, release.truth)
        metrics["releases"][f"l={l}"] = {
            "groups": release.n_groups,
            "smallest_group": p.min_group,
            "random_worlds": base.to_dict(),
            "definetti": ev.to_dict(),
            "diagnostics": posterior.diagnostics,
        }
        curves[f"groups of {l}"] = calibration_events(posterior.probs, release.truth)
        rows.append(
            {
                "l": l,
                "tuples": release.n_rows,
                "groups": release.n_groups,
                "random_worlds_max": round(p.max_disclosure, 4),
                "baseline_acc": round(base.acc, 4),
                "attack_acc": round(ev.acc, 4),
                "baseline_abs": round(base.abs_per_tuple, 4),
                "attack_abs": round(ev.abs_per_tuple, 4),
                "at_risk_share": round(ev.at_risk_share, 4),
                "at_risk_precision": (
                    round(ev.at_risk_precision, 4) if ev.at_risk_share > 0 else None
                ),
            }
        )
    metrics["summary"] = rows
    write_json(out / "metrics.json", metrics)
    reliability_diagram(
        curves,
        out / "reliability.png",
        title="deFinetti attack on anatomized Adult",
    )
    return rows
