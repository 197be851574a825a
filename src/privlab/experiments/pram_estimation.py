"""pram-estimation: E2.1 (Fig. 2.2) and the Fig. 3.4a accuracy/privacy trade-off (Ma 2006).

Two 5-category variables with Table 2.1's joint PMF, each randomized independently by the
M-category scheme; the 25 joint counts are estimated by the moment estimator (Theorem 2, with
normal 95% intervals) and by EM.  Table 2.1's printed entries sum to 0.95 (an entry was
probably lost in extraction, notes Sec. 2.5); privlab divides them by 0.95.
"""

from __future__ import annotations

import numpy as np

from privlab.estimate.pram import (
    em_estimate,
    moment_estimate,
    moment_variance,
    observed_counts,
)
from privlab.experiments import Context, ExperimentResult, register
from privlab.metrics.pram import kl_divergence
from privlab.publish.randomization import m_category_matrix, randomize_codes

TABLE_2_1 = np.array(
    [
        [1 / 40, 3 / 10, 0, 1 / 60, 0],
        [3 / 40, 0, 1 / 30, 1 / 20, 1 / 20],
        [0, 1 / 10, 1 / 30, 0, 0],
        [1 / 20, 0, 0, 1 / 60, 1 / 10],
        [1 / 20, 0, 1 / 30, 1 / 60, 0],
    ]
)
PMF = (TABLE_2_1 / TABLE_2_1.sum()).ravel()  # renormalized: printed entries sum to 0.95


def sample_and_randomize(n: int, p: float, rng: np.random.Generator):
    """Draw ``n`` records from the PMF, randomize both variables; true and observed counts."""
    cells = rng.choice(25, size=n, p=PMF)
    x1, x2 = np.divmod(cells, 5)
    m = m_category_matrix(5, p)
    y1, y2 = randomize_codes(x1, m, rng), randomize_codes(x2, m, rng)
    true = np.bincount(cells, minlength=25).astype(float)
    obs = observed_counts(np.column_stack([y1, y2]), (5, 5))
    return true, obs, [m, m]


@register(
    "pram-estimation",
    title="PRAM frequency estimation: moment vs EM (E2.1) and the KL trade-off (Fig. 3.4a)",
    source="Ma 2006, Sec. 2.5 E2.1, Table 2.1, Fig. 2.2; Sec. 3.3, Fig. 3.4a",
)
def run(ctx: Context) -> ExperimentResult:
    rng_main, rng_sweep = ctx.child_rngs(2)
    true, obs, factors = sample_and_randomize(5000, 0.5, rng_main)
    mom = moment_estimate(obs, factors)
    sd = np.sqrt(moment_variance(mom, factors))
    em = em_estimate(obs, factors, tol=1e-10, max_iter=200_000)
    em_sd = np.sqrt(moment_variance(em.counts, factors))
    rows: list[dict] = []
    for c in range(25):
        rows.append(
            {
                "part": "E2.1", "cell": c + 1, "x1": c // 5 + 1, "x2": c % 5 + 1,
                "pmf": round(float(PMF[c]), 5), "true": int(true[c]), "observed": int(obs[c]),
                "moment": round(float(mom[c]), 1),
                "moment_lo": round(float(mom[c] - 1.96 * sd[c]), 1),
                "moment_hi": round(float(mom[c] + 1.96 * sd[c]), 1),
                "em": round(float(em.counts[c]), 1),
                "em_lo": round(float(em.counts[c] - 1.96 * em_sd[c]), 1),
                "em_hi": round(float(em.counts[c] + 1.96 * em_sd[c]), 1),
            }
        )  # fmt: skip
    covered = np.abs(mom - true) <= 1.96 * sd
    rows.append(
        {
            "part": "E2.1 summary",
            "n": 5000,
            "p": 0.5,
            "negative_moment_cells": int((mom < 0).sum()),
            "min_moment": round(float(mom.min()), 1),
            "moment_interval_coverage": round(float(covered.mean()), 3),
            "kl_moment": round(kl_divergence(true, mom), 5),
            "kl_em": round(kl_divergence(true, em.counts), 5),
            "l1_moment": round(float(np.abs(mom - true).sum() / 5000), 4),
            "l1_em": round(float(np.abs(em.counts - true).sum() / 5000), 4),
            "em_iterations": em.iterations,
            "em_converged": em.converged,
        }
    )
    # Fig. 3.4a: KL(true PMF || EM estimate) vs retention 1-p and N.
    retentions = [0.25, 0.45, 0.65, 0.85, 0.95] if ctx.quick else [
        0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95
    ]  # fmt: skip
    sizes = [1000, 4000, 16000] if ctx.quick else [1000, 2000, 4000, 8000, 16000, 32000]
    runs = 2 if ctx.quick else 5
    sweep = np.zeros((len(retentions), len(sizes), runs))
    sweep_l1 = np.zeros_like(sweep)
    for i, ret in enumerate(retentions):
        for j, n in enumerate(sizes):
            for r in range(runs):
                _, o, f = sample_and_randomize(n, 1 - ret, rng_sweep)
                est = em_estimate(o, f, tol=1e-8, max_iter=50_000, init="moment")
                sweep[i, j, r] = kl_divergence(PMF, est.theta)
                sweep_l1[i, j, r] = np.abs(PMF - est.theta).sum()
    for i, ret in enumerate(retentions):
        for j, n in enumerate(sizes):
            rows.append(
                {
                    "part": "Fig 3.4a", "retention": ret, "p": round(1 - ret, 2), "n": n,
                    "kl_mean": round(float(sweep[i, j].mean()), 5),
                    "kl_sd": round(float(sweep[i, j].std(ddof=1)), 5),
                    "l1_mean": round(float(sweep_l1[i, j].mean()), 4), "runs": runs,
                }
            )  # fmt: skip
    paper = [
        {"part": "E2.1", "finding": "both estimators estimate the PMF accurately (Fig. 2.2)"},
        {"part": "E2.1", "finding": "the moment estimator may produce negative counts"},
        {"part": "Fig 3.4a", "finding": "KL falls with N and with the retention probability"},
    ]
    plots = _plots(ctx, true, mom, sd, em.counts, retentions, sizes, sweep)
    notes = (
        "Table 2.1's entries sum to 0.95; privlab renormalizes them (divides by 0.95). "
        "5,000 records, M-category p = 0.5 on each variable (p/4 = 0.125 to each other value). "
        "Intervals: estimate +- 1.96 sd with Theorem 2's sd at the estimate. "
        "KL is KL(true || estimate) in nats; E2.1 compares to the sample's true counts, "
        "Fig. 3.4a to the PMF (sampling + randomization error). Under heavy randomization "
        "the MLE sits on the simplex boundary and may give a truly positive cell almost no "
        "mass, which KL(true || estimate) punishes without bound: l1_mean is reported too. "
        "The thesis gives Fig. 2.2 and Fig. 3.4a only as plots, so its findings are listed "
        "qualitatively. EM in the sweep "
        "starts at the clipped moment estimate (same unique maximum)."
    )
    return ExperimentResult(experiment=ctx.id, rows=rows, paper=paper, notes=notes, plots=plots)


def _plots(ctx, true, mom, sd, em, retentions, sizes, sweep) -> tuple[str, ...]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 4))
    ax = axes[0]
    x = np.arange(1, 26)
    ax.bar(x - 0.25, true, 0.25, label="true")
    ax.bar(x, mom, 0.25, yerr=1.96 * sd, label="moment (95% CI)")
    ax.bar(x + 0.25, em, 0.25, label="EM")
    ax.axhline(0, color="k", lw=0.5)
    ax.set(xlabel="joint category", ylabel="count", title="Fig. 2.2: 5,000 records, p = 0.5")
    ax.legend()
    ax = axes[1]
    for j, n in enumerate(sizes):
        ax.semilogy(retentions, sweep[:, j].mean(axis=1), marker="o", label=f"N = {n}")
    ax.set(xlabel="retention 1-p", ylabel="KL(true || EM)", title="Fig. 3.4a")
    ax.legend()
    fig.tight_layout()
    fig.savefig(ctx.out / "pram_estimation.png", dpi=100)
    plt.close(fig)
    return ("pram_estimation.png",)
