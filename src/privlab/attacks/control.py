"""The control baseline: the same attacker, trained on public data only.

Anonymeter (Giomi et al. 2023, PoPETs 2023(2), Sec. 4) measures an attack's *residual* risk
against a control: what an attacker achieves without the information under test.  Here the
information under test is what the release teaches about ``P(sensitive | QI)``.  The control
attacker knows what the learning attacks know (the published release, and the quasi-identifiers
of every person in it) but learns the Naive-Bayes model only from a public table of other
people (e.g. Adult's test split for a release of the training split):

* ``psi_s = (N_s + alpha) / (N + m alpha)`` and
  ``w_{j,x,s} = (N_{j,x,s} + alpha) / (N_{j,s} + |R_j| alpha)``: Naive Bayes with Laplace
  smoothing ``alpha``, counted on the public rows (Mothali 2011 Ch. 4's model, with the
  counts of the M-step taken from public data instead of the release);
* each release row gets the score ``psi_s prod_j w_{j, q_j, s}`` of its own QIs, and, as in
  the EM attack's exact E-step (Mothali 2011 Table 4.1), the release's groups constrain the
  assignment: ``Pr(pi) \\propto prod_t score_{t, pi_t}`` over the assignments ``pi`` of the
  group's published values to its rows, and each row's posterior is its marginal.  The
  marginals are exact for groups of at most ``exact_max`` rows (every assignment enumerated)
  and for larger groups whose multiset of values is small enough for a dynamic programme over
  the values not yet assigned (``prod_v (c_v + 1)`` states, :data:`DP_MAX_CELLS`).  Beyond
  that (large generalized classes holding many values) they are approximated by scaling the
  score matrix to the group's margins (Sinkhorn 1964: rows sum to 1, each value's column to
  its count): the form ``P(t gets v) \\propto score_{t,v} lambda_v`` that the exact marginals
  approach when every value is held by many rows; exact when the scores factorize, too little
  confident in small groups (largest error against the exact marginals on random scores:
  0.09 at 10 rows, 0.06 at 20, 0.03 at 40).

The residual risk ``(acc - acc_control) / (1 - acc_control)`` then says how much of what the
control gets wrong the release gives away (:func:`privlab.metrics.intervals.residual_risk`).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from privlab._params import check_int
from privlab.attacks._layout import partition_of, values_of
from privlab.attacks.posterior import Posterior
from privlab.data.schema import Attribute, _keys
from privlab.data.table import Table
from privlab.errors import ParameterError, SchemaError

#: Largest group whose assignments are enumerated (7! = 5,040 per group).
EXACT_MAX = 7
#: Largest ``states x (rows + 1)`` of a group's dynamic programme (larger: Sinkhorn).
DP_MAX_CELLS = 2_000_000
_CHUNK = 2_000_000  # (groups x permutations x size) entries per enumeration block


def threat_model(source: str | None = None) -> str:
    """The control attacker's threat model, in words."""
    src = f"the public file {source}" if source else "a public file"
    return (
        "the attacker knows the published release and the quasi-identifiers of every person "
        f"in it, but learns P(sensitive | quasi-identifiers) only from {src}; the release's "
        "groups only restrict which values each person can have"
    )


def _code_map(src: Attribute, dst: Attribute) -> np.ndarray:
    """For each code of ``src``, the code of the same value in ``dst`` (-1 when absent);
    values match as :meth:`Attribute.encode` matches them (by their text)."""
    position = {k: i for i, k in enumerate(_keys(np.asarray(dst.domain, dtype=object)))}
    keys = _keys(np.asarray(src.domain, dtype=object))
    return np.array([position.get(k, -1) for k in keys], dtype=np.int64)


def naive_bayes_scores(
    qi: Table, sensitive: Attribute, public: Table, *, alpha: float = 1.0
) -> tuple[np.ndarray, dict[str, Any]]:
    """``(n, m)`` log Naive-Bayes scores ``ln psi_s + sum_j ln w_{j, q_ij, s}`` of the rows of
    ``qi`` (encoded in the release's domains), the model learned from ``public``.

    A public value outside the release's domain is ignored (a public row whose sensitive value
    is outside it is dropped); a quasi-identifier or the sensitive attribute missing from the
    public table, or a quasi-identifier none of whose public values the release holds, is an
    error naming it.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha > 0:
        raise ParameterError(f"the Laplace smoothing alpha must be > 0, got {alpha!r}")
    if not math.isfinite(alpha):
        raise ParameterError(f"the Laplace smoothing alpha must be finite, got {alpha!r}")
    for name in (*qi.names, sensitive.name):
        if name not in public.schema:
            role = "sensitive attribute" if name == sensitive.name else "quasi-identifier"
            raise SchemaError(
                f"the public table has no column {name!r} (the release's {role}); its "
                f"columns are: {', '.join(public.names)}"
            )
    m = sensitive.size
    s = _code_map(public.schema[sensitive.name], sensitive)[public.column(sensitive.name)]
    known = s >= 0
    if not known.any():
        raise SchemaError(f"no public row has a value of {sensitive.name!r} that the release holds")
    s = s[known]
    n_s = np.bincount(s, minlength=m).astype(np.float64)
    scores = np.tile(np.log((n_s + alpha) / (n_s.sum() + m * alpha)), (qi.n_rows, 1))
    ignored: dict[str, int] = {}
    for j, attr in enumerate(qi.schema.attributes):
        x = _code_map(public.schema[attr.name], attr)[public.column(attr.name)[known]]
        ok = x >= 0
        if not ok.any():
            raise SchemaError(
                f"none of the public table's values of {attr.name!r} occurs in the release "
                f"(e.g. {public.decode(attr.name)[0]!r} against the release's "
                f"{attr.domain[0]!r}): give the public file the release's values (generalize "
                "it the way the release is)"
            )
        ignored[attr.name] = int((~ok).sum())
        cnt = np.zeros((attr.size, m))
        np.add.at(cnt, (x[ok], s[ok]), 1.0)
        logw = np.log((cnt + alpha) / (cnt.sum(axis=0, keepdims=True) + attr.size * alpha))
        scores += logw[qi.codes[:, j]]
    info = {
        "public_rows": int(known.sum()),
        "public_rows_dropped": int((~known).sum()),
        "public_values_ignored": ignored,
    }
    return scores, info


def _exact_marginals(
    logscore: np.ndarray, tup: np.ndarray, vals: np.ndarray, out: np.ndarray
) -> None:
    """Add to ``out`` the marginals of ``Pr(pi) \\propto prod_t score[t, pi_t]`` for groups
    of one size ``k``: ``tup`` and ``vals`` are ``(groups, k)`` rows and published values.

    Every permutation of the ``k`` positions is enumerated; a value listed twice makes each
    distinct assignment appear equally often, which leaves the marginals unchanged.
    """
    k = tup.shape[1]
    perms = np.array(list(itertools.permutations(range(k))), dtype=np.int64)  # (k!, k)
    onehot = (perms[:, :, None] == np.arange(k)[None, None, :]).astype(np.float64)
    step = max(1, _CHUNK // (perms.shape[0] * k))
    for lo in range(0, tup.shape[0], step):
        t, v = tup[lo : lo + step], vals[lo : lo + step]
        ls = logscore[t[:, :, None], v[:, None, :]]  # (g, k, k): row position x value position
        lw = ls[:, np.arange(k)[None, :], perms].sum(axis=2)  # (g, k!)
        w = np.exp(lw - lw.max(axis=1, keepdims=True))
        w /= w.sum(axis=1, keepdims=True)
        marg = np.einsum("gp,pij->gij", w, onehot)  # P(row position i gets value position j)
        # np.add.at's sums in its order (each row is in one group: its cells start at 0),
        # by bincount, which is an order of magnitude faster
        flat = (t[:, :, None] * out.shape[1] + v[:, None, :]).ravel()
        out += np.bincount(flat, weights=marg.ravel(), minlength=out.size).reshape(out.shape)


def _dp_marginals(logscore: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Exact marginals of ``Pr(pi) \\propto prod_t score[t, pi_t]`` for one group whose ``k``
    rows take the ``d`` values of ``logscore``'s columns, value ``v`` ``counts[v]`` times.

    Forward-backward over the rows; the state is the multiset of values not yet assigned
    (``prod_v (counts[v] + 1)`` states, in mixed radix).  ``F_i`` sums the weights of giving
    rows ``< i`` their values, ``B_i`` those of giving rows ``>= i`` the rest, and
    ``P(row i gets v) \\propto sum_r F_i[r] score[i, v] B_{i+1}[r - e_v]``.  Each layer is
    rescaled (the scale cancels in each row's normalization).  Compiled
    (:func:`privlab.attacks._kernels.multiset_marginals`): the vectorized loop over each
    layer's values was a quarter of attacks-beyond-anatomy's quick run.
    """
    from privlab.attacks._kernels import multiset_marginals

    k, d = logscore.shape
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    stride = np.cumprod(np.concatenate([[1], counts[:-1] + 1])).astype(np.int64)
    s = np.exp(logscore - logscore.max(axis=1, keepdims=True))
    out = np.empty((k, d))
    multiset_marginals(np.ascontiguousarray(s), counts, stride, out)
    return out


def _sinkhorn_marginals(
    logscore: np.ndarray,
    rows: np.ndarray,
    group: np.ndarray,
    counts: np.ndarray,
    *,
    tol: float = 1e-10,
    max_iter: int = 10_000,
) -> tuple[np.ndarray, int]:
    """Scale ``score[rows]`` (restricted to each row's group values) until every row sums to
    1 and every group's column ``v`` sums to ``counts[g, v]`` (Sinkhorn 1964)."""
    used, group = np.unique(group, return_inverse=True)
    target = counts[used].astype(np.float64)
    ls = np.where(target[group] > 0, logscore[rows], -np.inf)
    p = np.ascontiguousarray(np.exp(ls - ls.max(axis=1, keepdims=True)))
    # the sweeps, compiled: each row divided by its sum, each group's column sums (added in
    # row order, as np.add.at adds them), stop when they are within tol of the counts, else
    # scale each row by its group's ratios (the vectorized loop was 15% of a report's
    # control attack; tests/test_attack_statistics.py compares the two bit for bit)
    from privlab.attacks._kernels import sinkhorn_sweeps

    it = sinkhorn_sweeps(p, group.astype(np.int64), np.ascontiguousarray(target), tol, max_iter)
    return p, int(it)


def control_attack(
    release,
    public_table: Table,
    *,
    alpha: float = 1.0,
    exact_max: int = EXACT_MAX,
    source: str | None = None,
) -> Posterior:
    """The control baseline: Naive Bayes learned from ``public_table`` only, applied to the
    release's rows within their groups (see the module docstring).

    Parameters
    ----------
    release
        A release with a partition (Anatomy's groups, a generalized table's classes).
    public_table
        Public data about other people, with the release's quasi-identifiers and sensitive
        attribute as columns (by name; extra columns are ignored).  Values are matched to the
        release's domains by their text; values the release does not hold are ignored.
    alpha
        Laplace smoothing (> 0) of every Naive-Bayes count.
    exact_max
        Groups of at most this many rows (1..8) are enumerated; larger ones go through the
        dynamic programme (exact) or, beyond :data:`DP_MAX_CELLS`, the Sinkhorn approximation.
    source
        The public data's name, for the threat model in the diagnostics.

    Returns
    -------
    Posterior
        Method ``"control"``: one row per published row, one column per sensitive value;
        its diagnostics hold the threat model and how the public table was used.
    """
    check_int("exact_max", exact_max, low=1, high=8)
    part = partition_of(release)
    logscore, info = naive_bayes_scores(
        release.quasi_identifiers(), part.sensitive, public_table, alpha=alpha
    )
    n, m = logscore.shape
    sizes = part.sizes()
    order = np.argsort(part.group_of, kind="stable")
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    gval = np.repeat(np.tile(np.arange(m), part.n_groups), part.counts.reshape(-1))
    probs = np.zeros((n, m))
    for k in np.unique(sizes[sizes <= exact_max]):
        groups = np.flatnonzero(sizes == k)
        idx = ptr[groups][:, None] + np.arange(k)[None, :]
        _exact_marginals(logscore, order[idx], gval[idx], probs)
    approx = np.zeros(part.n_groups, dtype=bool)
    for g in np.flatnonzero(sizes > exact_max):
        held = np.flatnonzero(part.counts[g])
        c = part.counts[g, held]
        if math.prod(int(x) + 1 for x in c) * (int(sizes[g]) + 1) > DP_MAX_CELLS:
            approx[g] = True
            continue
        rows = order[ptr[g] : ptr[g + 1]]
        probs[rows[:, None], held[None, :]] = _dp_marginals(logscore[rows][:, held], c)
    large = approx[part.group_of]
    sweeps = 0
    if large.any():
        rows = np.flatnonzero(large)
        probs[rows], sweeps = _sinkhorn_marginals(logscore, rows, part.group_of[rows], part.counts)
    probs /= probs.sum(axis=1, keepdims=True)  # rounding only
    return Posterior(
        probs=probs,
        group_id=part.group_of,
        values=values_of(part),
        method="control",
        release_kind=getattr(release, "method", None),
        sensitive=part.sensitive.name,
        threat_model=threat_model(source),
        diagnostics={
            "public": source,
            **info,
            "alpha": float(alpha),
            "exact_rows": int(n - large.sum()),
            "sinkhorn_rows": int(large.sum()),
            "sinkhorn_sweeps": int(sweeps),
            "threat_model": threat_model(source),
        },
    )
