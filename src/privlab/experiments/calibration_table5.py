"""Seed 000, Table 5.1 and Figures 5.7-5.9: Brier score before and after calibration.

For each group size the approximate-EM attack's tuple probabilities (marginals of
``Pr(pi) \\propto prod gamma``, Ch. 5.2) are scored raw and after the calibration of Ch. 5.3
(``Pr(pi) = 1/g! sum_m gamma~_{m pi_m}``): Brier score, CAL and REF (Eqs. 5.1-5.3, ten
equal-width bins).  The events are the (tuple, value) pairs with positive probability or the
true value (see :mod:`privlab.metrics.calibration`).  For comparison the exact-E-step EM's
raw probabilities are scored too (Ch. 5.2.1 finds them already well calibrated), and so
are its responsibilities ``gamma`` themselves (``probabilities = "gamma"``), the model's own
marginals before the sharpening of Ch. 5.2.
"""

from __future__ import annotations

from privlab.attacks.em import assignment_probabilities, restrict_to_groups
from privlab.experiments import Context, ExperimentResult, register
from privlab.experiments._adult import GROUP_SIZES, adult_em_runs
from privlab.metrics.calibration import (
    brier_decomposition,
    calibration_events,
    reliability_diagram,
)

RESTARTS = {False: 5, True: 1}
PAPER = {
    2: ((0.2878, 0.0536, 0.2177), (0.2269, 0.0150, 0.2119)),
    3: ((0.2973, 0.0572, 0.2375), (0.2460, 0.0032, 0.2428)),
    4: ((0.2683, 0.0401, 0.2282), (0.2382, 0.0076, 0.2306)),
}


@register(
    "calibration-table5.1",
    title="Brier score of the EM attack's probabilities, raw and calibrated",
    source="Mothali 2011, Table 5.1 and Figs. 5.7-5.9",
)
def run(ctx: Context) -> ExperimentResult:
    restarts = RESTARTS[ctx.quick]
    rngs = ctx.child_rngs(3 * len(GROUP_SIZES))
    rows = []
    plots = []
    for k, l in enumerate(GROUP_SIZES):
        release, lay, approx, exact = adult_em_runs(
            l, rngs[3 * k : 3 * k + 3], restarts=restarts, exact_init="random-worlds"
        )
        truth = release.truth
        curves = {}
        for e_step, label, probs in (
            ("approximate", "raw", assignment_probabilities(approx.best.gamma, lay)),
            (
                "approximate",
                "calibrated",
                assignment_probabilities(approx.best.gamma, lay, calibrate=True),
            ),
            ("exact", "raw", exact.posterior.probs),
            ("exact", "gamma", restrict_to_groups(exact.best.gamma, lay)),
        ):
            p, o = calibration_events(probs, truth)
            bd = brier_decomposition(p, o, bins=10)
            rows.append(
                {
                    "group_size": l,
                    "e_step": e_step,
                    "probabilities": label,
                    "bs": round(bd.bs, 4),
                    "cal": round(bd.cal, 4),
                    "ref": round(bd.ref, 4),
                }
            )
            curves[f"{e_step} EM, {label}"] = (p, o)
        name = f"reliability_group{l}.png"
        reliability_diagram(
            curves, ctx.out / name, title=f"Reliability, groups of {l} (Adult, EM attack)"
        )
        plots.append(name)
    paper = [
        {"group_size": g, "e_step": "approximate", "probabilities": lab, "bs": v[0],
         "cal": v[1], "ref": v[2]}
        for g, (raw, cal) in PAPER.items()
        for lab, v in (("raw", raw), ("calibrated", cal))
    ]  # fmt: skip
    notes = (
        f"Best of {restarts} EM restarts per group size (approximate EM: the thesis's Dirichlet "
        "start, at most 300 iterations); Brier score on raw forecasts, CAL and "
        "REF with 10 equal-width bins (CAL + REF is the Brier score of the binned forecasts)."
    )
    return ExperimentResult(
        experiment=ctx.id, rows=rows, paper=paper, notes=notes, plots=tuple(plots)
    )
