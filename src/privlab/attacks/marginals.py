"""The learning attack on an anonymized-marginals release (Kifer & Gehrke 2006; Kifer 2009,
Sec. 7).

Threat model.  The attacker knows the published release (the generalized base table and
the generalized marginals) and each target's exact quasi-identifiers, nothing else.  Kifer
& Gehrke (Sec. 4) argue that the analyst's best model of the data is the maximum-entropy
distribution ``F^_2`` consistent with every published marginal; Kifer (2009, Sec. 7) points
out that an attacker may use that very model.  This attacker does: its belief about a
target with quasi-identifiers ``q`` is::

    P(S = s | q) = F^_2(q, s) / sum_s' F^_2(q, s')

where ``F^_2`` is the release's max-ent estimate over the leaf domain (iterative
proportional fitting; :meth:`MarginalsRelease.maxent`, reached through the release object:
the attacks see releases only through the ``Release`` base).  When the targets give only
some quasi-identifiers (``qi=``), the others are summed out of ``F^_2``.

Baseline.  The same attacker on the release cut to its base table (the single anonymized
table): the max-ent estimate of one generalized table spreads each class's count evenly
over its leaves, so ``F^_2(S | q)`` is then the share of each sensitive value in ``q``'s
class, the random-worlds posterior of the other attacks (Kifer 2009, Sec. 4).  The gap
between the two posteriors is what the added marginals disclose beyond the base table.

A target whose quasi-identifiers have no mass under ``F^_2`` (a combination some published
marginal counts as 0) is not a person of the release: it is refused, named.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from privlab.attacks.posterior import Posterior
from privlab.data.frames import as_table
from privlab.errors import ParameterError, ReleaseError, SchemaError
from privlab.release.views import MaxEnt

__all__ = ["THREAT_MODEL", "THREAT_MODEL_BASELINE", "marginals_attack"]

#: The threat model, in words, stored with every posterior.
THREAT_MODEL = (
    "the attacker knows the published base table and marginals and each target's exact "
    "quasi-identifiers; its model of the population is the maximum-entropy estimate F2 of "
    "the release (Kifer & Gehrke 2006), and it gives each target F2(sensitive | QI)"
)
THREAT_MODEL_BASELINE = (
    "the attacker knows the published base table and each target's exact quasi-identifiers, "
    "but not the marginals: each value's share of the target's class (random worlds)"
)

#: Mass below which a QI combination counts as absent from the max-ent estimate.
ZERO_MASS = 1e-12


def _check(release: object) -> str:
    """The sensitive attribute of an anonymized-marginals release (the :class:`MaxEnt`
    view); anything else is refused."""
    if getattr(release, "method", None) != "marginals" or not isinstance(release, MaxEnt):
        kind = getattr(release, "method", type(release).__name__)
        raise ReleaseError(
            f"the max-ent attack needs an anonymized-marginals release, not a {kind!r} one"
        )
    s = release.sensitive
    if s is None:
        raise ReleaseError("the marginals release has no sensitive attribute to attack")
    return s


def _target_codes(release: MaxEnt, targets, qi: Sequence[str]) -> np.ndarray:
    """The targets' leaf codes of ``qi`` (one row per target), in the release's domains."""
    table = as_table(targets)
    if table.n_rows == 0:
        raise ParameterError("the targets table is empty (0 rows)")
    missing = [c for c in qi if c not in table.names]
    if missing:
        raise SchemaError(
            f"the targets have no column {missing[0]!r} (the release's quasi-identifiers: "
            f"{', '.join(qi)})"
        )
    attrs = {a.name: a for a in release.attributes}
    return np.stack(
        [attrs[c].encode(table.decode(c), where="the targets") for c in qi], axis=1
    ).astype(np.int64)


def _posterior_from_fit(probs: np.ndarray, names, sensitive: str, qi, codes) -> np.ndarray:
    """``F(S | q)`` for each row of ``codes`` (the ``qi`` columns), summing out the rest."""
    axes = [names.index(c) for c in qi]
    s_axis = names.index(sensitive)
    rest = tuple(j for j in range(len(names)) if j not in axes and j != s_axis)
    joint = probs.sum(axis=rest) if rest else probs
    kept = [j for j in range(len(names)) if j not in rest]  # the order joint keeps
    joint = np.moveaxis(joint, [kept.index(j) for j in (*axes, s_axis)], range(len(kept)))
    q_shape = joint.shape[:-1]
    flat = joint.reshape(-1, joint.shape[-1])
    cell = np.ravel_multi_index(tuple(codes.T), q_shape) if axes else np.zeros(len(codes), int)
    rows = flat[cell]
    mass = rows.sum(axis=1)
    bad = np.flatnonzero(mass <= ZERO_MASS)
    if bad.size:
        i = int(bad[0])
        raise ReleaseError(
            f"target row {i} has quasi-identifiers with no mass under the release's max-ent "
            f"estimate (a published marginal counts them as 0): not a person of the release "
            f"({bad.size} such targets)"
        )
    return rows / mass[:, None]


def _classes(release: MaxEnt, qi, codes) -> np.ndarray:
    """Each target's class in the base table (over the given QI columns), numbered 0..G-1."""
    base = release.marginals[0]
    on = [(j, base.attributes.index(c)) for j, c in enumerate(qi) if c in base.attributes]
    cells = [base.maps[i][codes[:, j]] for j, i in on]
    shape = tuple(len(base.labels[i]) for _, i in on)
    key = np.ravel_multi_index(tuple(cells), shape) if on else np.zeros(len(codes), int)
    return np.unique(key, return_inverse=True)[1].astype(np.int64)


def marginals_attack(
    release,
    targets: Any,
    *,
    qi: Sequence[str] | None = None,
    return_baseline: bool = False,
    tol: float = 1e-10,
) -> Posterior | tuple[Posterior, Posterior]:
    """Each target's posterior of the sensitive value under the release's max-ent estimate.

    Parameters
    ----------
    release
        A :class:`~privlab.publish.marginals.MarginalsRelease`.
    targets
        The targets (a privlab ``Table`` or a DataFrame), one row each, with the exact leaf
        values of ``qi`` (other columns, the sensitive one included, are ignored).
    qi
        The quasi-identifiers the attacker knows (default: every non-sensitive attribute of
        the release); the others are summed out of ``F^_2``.
    return_baseline
        Also return the baseline: the same attack on the base table alone (the random-worlds
        posterior of the target's class).
    tol
        IPF's tolerance (largest change of a marginal cell's share over one cycle).

    Returns
    -------
    Posterior
        One row per target; ``group_id`` is the target's class of the base table.
    """
    sensitive = _check(release)
    names = tuple(release.names)
    insensitive = tuple(c for c in names if c != sensitive)
    qi = insensitive if qi is None else tuple(qi)
    for c in qi:
        if c not in insensitive:
            raise SchemaError(
                f"{c!r} is not a quasi-identifier of the release ({', '.join(insensitive)})"
            )
    if len(set(qi)) != len(qi):
        raise SchemaError(f"qi lists an attribute twice: {list(qi)}")
    codes = _target_codes(release, targets, qi)
    values = tuple(str(v) for v in release.attributes[names.index(sensitive)].domain)
    groups = _classes(release, qi, codes)

    def run(rel, method: str, threat: str) -> Posterior:
        fit = rel.maxent(tol=tol)
        probs = _posterior_from_fit(fit.probs, names, sensitive, qi, codes)
        top = probs.max(axis=1)
        return Posterior(
            probs=probs,
            group_id=groups,
            values=values,
            method=method,
            diagnostics={
                "marginals": [m.describe() for m in rel.marginals],
                "qi": list(qi),
                "targets": int(codes.shape[0]),
                "ipf_iterations": fit.iterations,
                "converged": bool(fit.converged),
                "ipf_max_error": float(fit.max_error),
                "max_posterior": float(top.max()),
                "mean_top_posterior": float(top.mean()),
            },
            release_kind="marginals",
            sensitive=sensitive,
            threat_model=threat,
        )

    post = run(release, "maxent", THREAT_MODEL)
    if not return_baseline:
        return post
    base_only = dataclasses.replace(release, marginals=release.marginals[:1])
    return post, run(base_only, "random-worlds", THREAT_MODEL_BASELINE)
