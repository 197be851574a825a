"""Seed 003, Table 1 and Sec. 3.2: exchangeability learns what random worlds cannot (100/101).

Kifer's Table 1 has 200 tuples with two binary attributes: tuples 1-100 are non-smokers
without lung cancer, tuples 101-199 smokers with lung cancer, tuple 200 a smoker whose
cancer status is missing.  Only two completed tables are possible.

* Random worlds (Sec. 3.1): both completions are equally likely, so ``P = 1/2``: the same
  as before seeing the table.
* Exchangeability (Sec. 3.2): the four joint cell probabilities ``(p_1, ..., p_4)`` are unknown
  with a uniform prior on the simplex; the probability of each completed table is the
  Dirichlet integral ``int p_1^100 p_4^100`` resp. ``int p_1^99 p_3 p_4^100``, equal to
  ``100! 100! / 203!`` resp. ``99! 100! / 203!`` (the paper's display), so
  ``P(tuple 200 has cancer | table) = 100 / 101``.

privlab computes these exactly in rational arithmetic
(:mod:`privlab.experiments._exact_rational`), checks the two integrals against the paper's
factorial expressions, and computes the same posterior under the deFinetti attack's own model
(Naive Bayes, Kifer Eq. 1, uniform priors on ``P(S)`` and ``P(smoker | S)``), both exactly and with
:func:`privlab.attacks.exact.dirichlet_multinomial_loglik` in floating point.  That model
puts a different prior on the joint, so its answer is ``1020000/1030201 = 0.990098``, not
``100/101 = 0.990099``; with ``Dir(2, 2)`` on ``P(S)`` (the marginal the uniform joint prior
implies, by the aggregation property of the Dirichlet) it gives exactly ``100/101``.

The paper writes the prefactor of both integrals as ``1/3!``; the uniform density on the
3-simplex is ``3!``.  The factor cancels in the posterior, so the paper's 100/101 stands.  The
paper's number is a closed form, not a sampling result, so there is no MCMC to rerun.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from privlab.attacks._layout import layout_from_arrays
from privlab.attacks.exact import dirichlet_multinomial_loglik
from privlab.experiments import Context, ExperimentResult, register
from privlab.experiments._exact_rational import (
    joint_table_probability,
    lebesgue_simplex_integral,
    naive_bayes_table_probability,
)

SMOKER, CANCER = ("n", "y"), ("n", "y")
#: The four joint cells in the paper's order p_1..p_4: (smoker, cancer).
CELLS = (("y", "y"), ("n", "y"), ("y", "n"), ("n", "n"))
PAPER_POSTERIOR = Fraction(100, 101)


def table1_rows(last: str) -> list[tuple[str, str]]:
    """Kifer 2009 Table 1 completed with tuple 200's cancer status ``last`` ('y' or 'n')."""
    return [("n", "n")] * 100 + [("y", "y")] * 99 + [("y", last)]


def _posterior(p_yes: Fraction, p_no: Fraction) -> Fraction:
    return p_yes / (p_yes + p_no)


def posterior_random_worlds() -> Fraction:
    """Random worlds: the share of the completions consistent with Table 1 with cancer."""
    worlds = [table1_rows(v) for v in CANCER]
    return Fraction(sum(w[-1][1] == "y" for w in worlds), len(worlds))


def posterior_joint(rows_yes=None, rows_no=None) -> Fraction:
    """Exchangeable model, uniform prior on the joint (Kifer Sec. 3.2)."""
    rows_yes = table1_rows("y") if rows_yes is None else rows_yes
    rows_no = table1_rows("n") if rows_no is None else rows_no
    return _posterior(
        joint_table_probability(rows_yes, CELLS), joint_table_probability(rows_no, CELLS)
    )


def posterior_naive_bayes(prior_s: int = 1, prior_r: int = 1) -> Fraction:
    """Naive-Bayes model (Kifer Eq. 1) with ``Dir(prior_s)`` on P(S), ``Dir(prior_r)`` on P(R|S)."""

    def prob(table: list[tuple[str, str]]) -> Fraction:
        return naive_bayes_table_probability(
            [(s,) for s, _ in table], [c for _, c in table], qi_domains=[SMOKER],
            s_domain=CANCER, prior_s=prior_s, prior_r=prior_r,
        )  # fmt: skip

    return _posterior(prob(table1_rows("y")), prob(table1_rows("n")))


def posterior_naive_bayes_privlab(prior: float = 1.0) -> float:
    """The same Naive-Bayes posterior from privlab's Dirichlet-multinomial log-likelihood."""
    ll = []
    for last in CANCER:
        rows = table1_rows(last)
        qi = np.array([[SMOKER.index(s)] for s, _ in rows])
        s = np.array([CANCER.index(c) for _, c in rows])
        counts = np.zeros((s.size, 2), dtype=np.int64)
        counts[np.arange(s.size), s] = 1  # each completed tuple as its own (known) group
        lay = layout_from_arrays(qi, (2,), np.arange(s.size), counts)
        ll.append(dirichlet_multinomial_loglik(s, lay, prior))
    no, yes = ll  # CANCER = ("n", "y")
    return float(1.0 / (1.0 + np.exp(no - yes)))


def _frac(f: Fraction | None) -> str | None:
    return None if f is None else f"{f.numerator}/{f.denominator}"


def _log10(f: Fraction) -> float:
    return (math.log(f.numerator) - math.log(f.denominator)) / math.log(10)


def _paper_log10_factorials(a: int, b: int, c: int) -> float:
    """log10 of the paper's printed closed form ``a! b! / c!``."""
    return (math.lgamma(a + 1) + math.lgamma(b + 1) - math.lgamma(c + 1)) / math.log(10)


@register(
    "kifer-table1",
    title="Learning from a table: P(tuple 200 has lung cancer) = 100/101",
    source="Kifer 2009, Table 1 and Sec. 3.1-3.2",
)
def run(ctx: Context) -> ExperimentResult:
    int_yes = lebesgue_simplex_integral([99 + 1, 0, 0, 100])  # p1^100 p4^100
    int_no = lebesgue_simplex_integral([99, 0, 1, 100])  # p1^99 p3 p4^100
    paper_yes = Fraction(math.factorial(100) ** 2, math.factorial(203))
    paper_no = Fraction(math.factorial(99) * math.factorial(100), math.factorial(203))
    cases = [
        ("random worlds", posterior_random_worlds(), Fraction(1, 2)),
        ("uniform joint prior, before seeing the table",
         posterior_joint([("y", "y")], [("y", "n")]), Fraction(1, 2)),
        ("exchangeable, uniform joint prior (Sec. 3.2)", posterior_joint(), PAPER_POSTERIOR),
        ("Naive Bayes, uniform priors (deFinetti attack's model)", posterior_naive_bayes(), None),
        ("Naive Bayes, Dir(2,2) on P(S), uniform P(smoker|S)", posterior_naive_bayes(2, 1), None),
    ]  # fmt: skip
    rows = [
        {
            "model": model,
            "p_cancer_200": float(p),
            "fraction": _frac(p),
            "paper_p_cancer_200": None if paper is None else float(paper),
            "paper_fraction": _frac(paper),
        }
        for model, p, paper in cases
    ]
    rows[3]["p_cancer_200_float"] = round(posterior_naive_bayes_privlab(), 12)
    rows[2]["log10_integral_cancer"] = round(_log10(int_yes), 6)
    rows[2]["log10_integral_no_cancer"] = round(_log10(int_no), 6)
    rows[2]["paper_log10_integral_cancer"] = round(_paper_log10_factorials(100, 100, 203), 6)
    rows[2]["paper_log10_integral_no_cancer"] = round(_paper_log10_factorials(99, 100, 203), 6)
    rows[2]["integrals_equal_paper_exactly"] = int_yes == paper_yes and int_no == paper_no
    paper = [
        {"model": m, "p_cancer_200": float(p), "fraction": _frac(p)}
        for m, _, p in cases
        if p is not None
    ]
    notes = (
        "All posteriors are exact fractions (Dirichlet integrals in rational arithmetic). The "
        "two integrals equal the paper's 100!100!/203! and 99!100!/203! exactly; the paper's "
        "1/3! prefactor should be 3! (the uniform density on the simplex) and cancels. The "
        "deFinetti attack's Naive-Bayes model with uniform priors gives 1020000/1030201 "
        "(privlab's float log-likelihood agrees), not 100/101: its prior on the joint is not "
        "uniform; Dir(2,2) on P(S) restores the paper's prior and 100/101 exactly. The paper's "
        "number is a closed form, not a sampling result, so no MCMC run is needed."
    )
    return ExperimentResult(experiment=ctx.id, rows=rows, paper=paper, notes=notes)
