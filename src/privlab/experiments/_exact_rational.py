"""Exact rational arithmetic for the tiny examples (Kifer 2009 Table 1, Mothali 2011 Table 3.3).

An oracle independent of :mod:`privlab.attacks.exact`: the same Dirichlet integrals, but in
:class:`fractions.Fraction` with factorials, so that a posterior such as Kifer's 100/101 is
reproduced as that very fraction rather than as a float close to it.

For integer exponents ``c`` and an integer Dirichlet prior ``a``,

``int prod_i p_i^{c_i} Dir(p; a) dp = B(a + c) / B(a)``, with
``B(x) = prod_i (x_i - 1)! / (sum_i x_i - 1)!``

(Kifer 2009 Sec. 3.2; the Dirichlet-multinomial marginal likelihood of one *ordered* table).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Hashable, Sequence
from fractions import Fraction


def beta_function(x: Sequence[int]) -> Fraction:
    """The multivariate Beta function ``B(x) = prod (x_i - 1)! / (sum x_i - 1)!`` (integers)."""
    if any(int(v) != v or v < 1 for v in x):
        raise ValueError(f"beta_function takes positive integers, got {list(x)!r}")
    num = math.prod(math.factorial(int(v) - 1) for v in x)
    return Fraction(num, math.factorial(int(sum(x)) - 1))


def dirichlet_integral(counts: Sequence[int], prior: int | Sequence[int] = 1) -> Fraction:
    """``E[prod p_i^{c_i}]`` under ``p ~ Dir(prior)``: ``B(prior + c) / B(prior)``."""
    a = [prior] * len(counts) if isinstance(prior, int) else list(prior)
    if len(a) != len(counts):
        raise ValueError("prior and counts differ in length")
    return beta_function([ai + c for ai, c in zip(a, counts)]) / beta_function(a)


def lebesgue_simplex_integral(counts: Sequence[int]) -> Fraction:
    """``int_{simplex} prod p_i^{c_i} dp_1 ... dp_{k-1}`` = ``prod c_i! / (sum c_i + k - 1)!``.

    This is the integral Kifer 2009 (Sec. 3.2) writes out for Table 1; the uniform *density*
    on the simplex is ``(k - 1)!`` times Lebesgue measure.
    """
    return beta_function([c + 1 for c in counts])


def joint_table_probability(
    rows: Sequence[tuple[Hashable, ...]], cells: Sequence[tuple[Hashable, ...]], prior: int = 1
) -> Fraction:
    """``P(ordered table)`` with the joint cell probabilities ``~ Dir(prior)`` integrated out."""
    n = Counter(rows)
    if set(n) - set(cells):
        raise ValueError(f"rows outside the cells: {sorted(set(n) - set(cells), key=str)!r}")
    return dirichlet_integral([n[c] for c in cells], prior)


def naive_bayes_table_probability(
    qi_rows: Sequence[Sequence[Hashable]],
    values: Sequence[Hashable],
    *,
    qi_domains: Sequence[Sequence[Hashable]],
    s_domain: Sequence[Hashable],
    prior_s: int = 1,
    prior_r: int = 1,
) -> Fraction:
    """``P(QIT, S)`` of an ordered table under Naive Bayes (Kifer 2009 Eqs. 1 and 4-5).

    ``P(S) ~ Dir(prior_s)`` and every ``P(R_j | S = s) ~ Dir(prior_r)``, all integrated out:
    ``E[prod_n P(s_n) prod_j P(r_nj | s_n)]`` factorizes into one Dirichlet integral for the
    sensitive counts and one per (attribute, sensitive value).
    """
    ns = Counter(values)
    p = dirichlet_integral([ns[s] for s in s_domain], prior_s)
    for j, dom in enumerate(qi_domains):
        for s in s_domain:
            nr = Counter(r[j] for r, v in zip(qi_rows, values) if v == s)
            p *= dirichlet_integral([nr[x] for x in dom], prior_r)
    return p


def naive_bayes_group_posterior(
    qi_rows: Sequence[Sequence[Hashable]],
    groups: Sequence[Sequence[int]],
    group_values: Sequence[Sequence[Hashable]],
    *,
    prior: int = 1,
) -> list[dict[Hashable, Fraction]]:
    """Exact ``P(t.S = s | QIT, ST)`` of an anatomized table (Kifer 2009 Eq. 2), as fractions.

    Enumerates every assignment of each group's listed values to the group's tuples
    (distinct permutations of the multiset), weighting each completed table by
    :func:`naive_bayes_table_probability` with the uniform (``prior = 1``) Dirichlet prior.
    """
    n = len(qi_rows)
    qi_domains = [sorted({r[j] for r in qi_rows}, key=str) for j in range(len(qi_rows[0]))]
    s_domain = sorted({v for vs in group_values for v in vs}, key=str)
    per_group = [sorted(set(itertools.permutations(vs)), key=str) for vs in group_values]
    post: list[dict[Hashable, Fraction]] = [dict.fromkeys(s_domain, Fraction(0)) for _ in range(n)]
    total = Fraction(0)
    for choice in itertools.product(*per_group):
        values: list[Hashable] = [None] * n
        for tuples, perm in zip(groups, choice):
            for t, v in zip(tuples, perm):
                values[t] = v
        w = naive_bayes_table_probability(
            qi_rows, values, qi_domains=qi_domains, s_domain=s_domain, prior_s=prior,
            prior_r=prior,
        )  # fmt: skip
        total += w
        for t, v in enumerate(values):
            post[t][v] += w
    return [{s: p / total for s, p in row.items()} for row in post]
