"""sdc-tradeoff: risk and information loss of microaggregation and noise on Adult's numbers.

Adult's five numeric columns (age, education-num, capital-gain, capital-loss,
hours-per-week), masked by MDAV microaggregation (k = 2 ... 50) and by uncorrelated additive
noise (10% ... 200% of each column's standard deviation), each release attacked by
distance-based record linkage from the people's true values
(:func:`privlab.attacks.record_linkage.record_linkage`) and measured against the input
(:func:`privlab.metrics.numeric_utility.numeric_utility`: IL1s per cell, the eigenvalue
difference, the propensity-score pMSE against its null).

What the sources lead one to expect (sdcMicro's vignette and Templ, Kowarik & Meindl 2015,
"Statistical Disclosure Control for Micro-Data Using the R Package sdcMicro", JSS 67(4),
Sec. 6; Domingo-Ferrer & Mateo-Sanz 2002): the record-linkage risk falls and the information
loss rises with k and with the noise; microaggregation leaves the means exactly and shrinks
the variances; noise keeps the means in expectation and inflates the variances.  The
experiment measures each; it has no paper numbers to set beside them (Adult is not in those
sources), so ``paper`` states the expected direction only.
"""

from __future__ import annotations

import numpy as np

from privlab.experiments import Context, ExperimentResult, register

COLUMNS = ("age", "education-num", "capital-gain", "capital-loss", "hours-per-week")
KS = (2, 3, 5, 10, 20, 50)
NOISES = (10.0, 25.0, 50.0, 100.0, 200.0)
QUICK_ROWS = 3000


def _row(technique: str, level: float, x: np.ndarray, masked: np.ndarray) -> dict:
    from privlab.attacks.record_linkage import record_linkage
    from privlab.metrics.numeric_utility import numeric_utility

    link = record_linkage(x, masked)
    u = numeric_utility(x, masked)
    return {
        "technique": technique,
        "level": level,
        "linkage_rate": round(link.rate.value, 5),
        "linkage_low": round(link.rate.low, 5),
        "linkage_high": round(link.rate.high, 5),
        "interval_disclosure": round(link.interval_share, 5),
        "il1s_mean": round(float(u.il1s_mean), 5),
        "eigen": round(float(u.eigen), 5),
        "pmse_ratio": float(f"{float(u.pmse_ratio):.3g}"),
    }


@register(
    "sdc-tradeoff",
    title="Record-linkage risk and information loss of microaggregation and noise on Adult",
    source="Templ, Kowarik & Meindl 2015 (sdcMicro, JSS 67(4)), Sec. 6; Domingo-Ferrer & "
    "Torra 2001",
)
def run(ctx: Context) -> ExperimentResult:
    from privlab.data.datasets import load_dataset
    from privlab.publish import masking_core, microaggregation_core

    table = load_dataset("adult")
    gen = ctx.rng
    if ctx.quick:
        table = table.take(np.sort(gen.choice(table.n_rows, QUICK_ROWS, replace=False)))
    x = np.stack(
        [np.asarray(table.schema[c].domain, float)[table.column(c)] for c in COLUMNS], axis=1
    )
    ks = KS[:4] if ctx.quick else KS
    noises = NOISES[::2] if ctx.quick else NOISES
    rows = []
    for k in ks:
        groups = microaggregation_core.mdav(x, k)
        rows.append(_row("mdav", k, x, microaggregation_core.aggregate(x, groups)))
    for level, g in zip(noises, ctx.child_rngs(len(noises)), strict=True):
        masked = masking_core.add_noise(x, method="additive", noise=level, rng=g).masked
        rows.append(_row("additive noise", level, x, masked))
    paper = [
        {"technique": "mdav", "expected": "linkage falls and IL1s rises as k grows"},
        {"technique": "additive noise", "expected": "linkage falls and IL1s rises with the noise"},
    ]
    plots = _plot(ctx, rows)
    notes = (
        f"Adult's {table.n_rows:,} records, columns {', '.join(COLUMNS)}; MDAV on standardized "
        "columns, each group replaced by its mean; additive noise with a standard deviation of "
        "`level` percent of each column's. Linkage: each masked record linked to the nearest "
        "true record (Euclidean on the original's standardized scale), re-identified when it "
        "is its own (ties shared); by chance 1/n. il1s_mean: mean over cells of |x - x'| / "
        "(sqrt(2) sd); pmse_ratio: the propensity-score MSE over its null (Snoke et al. 2018)."
    )
    return ExperimentResult(experiment=ctx.id, rows=rows, paper=paper, notes=notes, plots=plots)


def _plot(ctx: Context, rows: list[dict]) -> tuple[str, ...]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, tech, label in ((axes[0], "mdav", "k"), (axes[1], "additive noise", "noise (% sd)")):
        rs = [r for r in rows if r["technique"] == tech]
        lv = [r["level"] for r in rs]
        ax.plot(lv, [r["linkage_rate"] for r in rs], "o-", color="#c0392b",
                label="record linkage (share re-identified)")  # fmt: skip
        ax.fill_between(lv, [r["linkage_low"] for r in rs], [r["linkage_high"] for r in rs],
                        color="#c0392b", alpha=0.2)  # fmt: skip
        ax.set_xscale("log")
        ax.set_xticks(lv, [f"{v:g}" for v in lv])
        ax.minorticks_off()
        ax.set(xlabel=label, ylabel="share of records re-identified", title=tech, ylim=(0, 1))
        twin = ax.twinx()
        twin.plot(lv, [r["il1s_mean"] for r in rs], "s--", color="#34495e", label="IL1s")
        twin.set_ylabel("information loss (IL1s per cell)")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = twin.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, loc="center right", fontsize=8)
    fig.suptitle("Adult's numbers: risk falls, information loss rises")
    fig.tight_layout()
    path = ctx.out / "sdc_tradeoff.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return (path.name,)
