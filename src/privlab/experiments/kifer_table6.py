"""Seed 003, Table 6 and Sec. 5: the 12-tuple smoker example.

Six groups of two; smokers always share a group with cancer, groups of non-smokers never
do.  Random worlds gives tuple 12 (a non-smoker in group 6, with cancer and no disease)
cancer with probability 0.5; Kifer computed about 0.16 for a learning attacker.  privlab
computes it exactly (enumerating the 2^6 within-group assignments with the Naive-Bayes
parameters integrated out under the uniform prior) and with the deFinetti sampler.
"""

from __future__ import annotations

from privlab.attacks.definetti import definetti_attack
from privlab.attacks.exact import exact_posterior
from privlab.attacks.random_worlds import random_worlds_attack
from privlab.experiments import Context, ExperimentResult, register
from privlab.publish.anatomy import AnatomyRelease

# (tuple id, smoker?, group id); Kifer 2009 Table 6, QIT
TABLE6_QIT = [
    (1, "y", 1), (2, "y", 1), (3, "n", 2), (4, "n", 2), (5, "y", 3), (6, "n", 3),
    (7, "y", 4), (8, "y", 4), (9, "n", 5), (10, "n", 5), (11, "y", 6), (12, "n", 6),
]  # fmt: skip
# (group id, disease); Kifer 2009 Table 6, ST
TABLE6_ST = [
    (1, "Cancer"), (1, "Flu"), (2, "Flu"), (2, "None"), (3, "Cancer"), (3, "None"),
    (4, "Cancer"), (4, "None"), (5, "Flu"), (5, "None"), (6, "Cancer"), (6, "None"),
]  # fmt: skip
PAPER_P12_CANCER = 0.16


def table6_release() -> AnatomyRelease:
    return AnatomyRelease.from_rows(
        [(s,) for _, s, _ in TABLE6_QIT],
        ["smoker"],
        [g for _, _, g in TABLE6_QIT],
        TABLE6_ST,
        "disease",
    )


@register(
    "kifer-table6",
    title="deFinetti attack on the 12-tuple smoker example",
    source="Kifer 2009, Table 6 and Sec. 5",
)
def run(ctx: Context) -> ExperimentResult:
    rel = table6_release()
    cancer = rel.sensitive.domain.index("Cancer")
    exact = exact_posterior(rel)
    iters = 20_000 if ctx.quick else 200_000
    mcmc = definetti_attack(rel, iterations=iters, chains=4, rng=ctx.seed)
    rw = random_worlds_attack(rel)
    rows = []
    for t in (11, 12):
        i = t - 1
        rows.append(
            {
                "tuple": t,
                "smoker": TABLE6_QIT[i][1],
                "p_cancer_exact": round(float(exact.probs[i, cancer]), 4),
                "p_cancer_definetti": round(float(mcmc.probs[i, cancer]), 4),
                "p_cancer_random_worlds": float(rw.probs[i, cancer]),
            }
        )
    # Kifer's "about 0.16" is the posterior itself: beside the exact and the sampled one
    paper = [
        {
            "tuple": 12,
            "p_cancer_exact": PAPER_P12_CANCER,
            "p_cancer_definetti": PAPER_P12_CANCER,
            "p_cancer_random_worlds": 0.5,
        }
    ]
    notes = (
        f"Exact posterior: enumeration of {exact.diagnostics['assignments']} assignments with "
        f"the uniform-prior Dirichlet-multinomial likelihood; deFinetti: {iters} iterations x 4 "
        "chains."
    )
    return ExperimentResult(experiment=ctx.id, rows=rows, paper=paper, notes=notes)
