"""The exact posterior of the deFinetti attack's model, by enumeration (tiny tables only).

Under Naive Bayes with symmetric Dirichlet priors (Kifer 2009 Eqs. 1, 4-5) the parameters
integrate out in closed form: the probability of the QI table together with a complete
assignment ``a`` of sensitive values (one permutation per group) is the Dirichlet-multinomial
marginal likelihood

``P(QIT, a) \\propto prod_s B(prior + n_.s)/B(prior) * prod_{j,s} B(prior + n_{j,.,s})/B(prior)``

with ``B`` the multivariate Beta function.  Summing over every within-group assignment gives
Eq. 2 exactly; this is the oracle the MCMC sampler is tested against, and what
``kifer-table6`` reports for the 12-tuple smoker example.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import gammaln

from privlab.attacks._layout import Layout, layout_of, values_of
from privlab.attacks.posterior import Posterior
from privlab.errors import ParameterError
from privlab.release.views import Grouped

MAX_ASSIGNMENTS = 2_000_000


def _log_beta_ratio(counts: np.ndarray, prior: float) -> float:
    """``sum over the last axis's slices of ln B(prior + counts) - ln B(prior)``."""
    a = prior + counts
    k = counts.shape[-1]
    return float(
        (gammaln(a).sum(axis=-1) - gammaln(a.sum(axis=-1))).sum()
        - counts[..., 0].size * (k * gammaln(prior) - gammaln(k * prior))
    )


def dirichlet_multinomial_loglik(
    assign: np.ndarray, lay: Layout, prior: float = 1.0, qi_codes: np.ndarray | None = None
) -> float:
    """``ln P(QIT, assignment)`` with the Naive-Bayes parameters integrated out."""
    m = lay.n_values
    codes = lay.combo_codes[lay.combo_of] if qi_codes is None else qi_codes
    ll = _log_beta_ratio(np.bincount(assign, minlength=m)[None, :].astype(float), prior)
    for j in range(codes.shape[1]):
        lo, hi = lay.attr_ptr[j], lay.attr_ptr[j + 1]
        cnt = np.zeros((m, hi - lo))
        np.add.at(cnt, (assign, codes[:, j] - lo), 1.0)
        ll += _log_beta_ratio(cnt, prior)
    return ll


def exact_posterior(
    release: Grouped, *, prior: float = 1.0, layout: Layout | None = None
) -> Posterior:
    """``P(t.S = s | T)`` for every tuple by enumerating all within-group assignments."""
    lay = layout if layout is not None else layout_of(release)
    if not np.isfinite(prior) or prior <= 0:
        raise ParameterError(f"the Dirichlet prior must be > 0, got {prior!r}")
    per_group = []
    total = 1
    for g in range(lay.n_groups):
        lo, hi = lay.gtup_ptr[g], lay.gtup_ptr[g + 1]
        perms = sorted(set(itertools.permutations(lay.gval[lo:hi].tolist())))
        per_group.append((lay.gtup[lo:hi], np.array(perms, dtype=np.int64)))
        total *= len(perms)
        if total > MAX_ASSIGNMENTS:
            raise ParameterError(
                f"the table has more than {MAX_ASSIGNMENTS} within-group assignments; "
                "exact enumeration is for tiny tables"
            )
    codes = lay.combo_codes[lay.combo_of]
    n, m = lay.n_rows, lay.n_values
    logw = []
    assigns = []
    assign = np.zeros(n, dtype=np.int64)
    for choice in itertools.product(*(range(len(p)) for _, p in per_group)):
        for (tup, perms), k in zip(per_group, choice):
            assign[tup] = perms[k]
        logw.append(dirichlet_multinomial_loglik(assign, lay, prior, codes))
        assigns.append(assign.copy())
    logw = np.array(logw)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    probs = np.zeros((n, m))
    rows = np.arange(n)
    for wk, a in zip(w, assigns):
        probs[rows, a] += wk
    return Posterior(
        probs=probs,
        group_id=lay.group_id,
        values=values_of(release),
        method="exact",
        diagnostics={"assignments": len(assigns), "prior": float(prior)},
    )
