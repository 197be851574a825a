"""Threat model (b) on a generalized release: flexible Bayes with the target's exact QIs.

Kifer (SIGMOD 2009, Sec. 5.2) describes the attack on global and local recoding in which the
attacker knows the *target's* exact quasi-identifiers and the published table, but not the
exact QIs of anyone else.  Generalization hides how values inside one published cell differ
("we cannot distinguish between ages 16 and 45 from the sanitized data"), so the attacker
postulates that neighbouring values of an ordered attribute act alike and models it with
*flexible Bayes* (John & Langley 1995, Kifer's reference [25]): Naive Bayes whose
per-class distribution of an ordered attribute is a kernel density estimate.

The model (``S`` the sensitive value, ``X_j`` the exact value of QI ``j``)::

    P(S = s, X = x) = pi_s  prod_j theta_j[s, x_j]

is learned from the published rows, whose exact QIs are latent inside their cells
``B_j``: the observed-data likelihood is ``prod_rows pi_{s_r} prod_j theta_j[s_r, B_rj]``
with ``theta_j[s, B] = sum_{v in B} theta_j[s, v]``.  It factorizes over attributes, so EM
needs only each attribute's ``(sensitive value, published cell)`` counts ``N_j[s, l]``:

    E-step:  E_j[s, v] = theta_j[s, v] sum_l cover_j[v, l] N_j[s, l] / theta_j[s, l]
    M-step:  theta_j[s, :] ~ E_j[s, :] + prior       (nominal attributes)
             theta_j[s, :] ~ (E_j[s, :] + prior) K_j  (ordered attributes: a Gaussian kernel
                                                      over the values, Silverman et al.'s
                                                      1990 EMS smoothing step)

``pi`` is the published sensitive marginal.  The posterior of a target with exact QIs
``x``: the target is one of the published rows whose cells cover ``x``, each equally likely
a priori, and row ``r`` (value ``s_r``, cells ``B_r``) produces ``x`` with probability
``prod_j theta_j[s_r, x_j] / theta_j[s_r, B_rj]`` (its exact QIs drawn from the model,
conditioned on lying in its cells).  Summing over the rows of each class ``c``::

    P(S_target = s | x) ~ sum_{c covers x} n_c[s] prod_j theta_j[s, x_j] / theta_j[s, B_cj]

For global recoding exactly one class covers ``x``; with local recoding (Mondrian) several
may, and their overlaps carry information (Kifer Sec. 5.2).  With uniform ``theta`` inside
every cell the posterior is the random-worlds one, ``n_c[s] / |c|``.

Differences from the sources, documented: Kifer gives no estimator; John & Langley fit a
kernel to observed continuous values with width ``1 / sqrt(n)``, here the values are latent
and discrete and the width follows Silverman's rule of thumb on the EM's first expected
distribution (``bandwidth="auto"``), in the attribute's own units.  An attribute is
*ordered* when every value of its exact domain is a number.  The exact domain of an
attribute, which the attacker needs to spread a cell over its values, is public knowledge:
the leaves of the release's hierarchy, the integers a numeric range label spans, the values
published ungeneralized, and the targets' own values.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privlab.attacks._layout import partition_of, values_of
from privlab.attacks.population import _RANGE, class_rows, cover_matrix, read_generalized
from privlab.attacks.posterior import Posterior
from privlab.data.counts import distinct_rows
from privlab.data.hierarchy import Hierarchy
from privlab.data.table import Table
from privlab.errors import ConvergenceWarning, ParameterError, ReleaseError

#: What the posterior of a flexible-Bayes attack says about its attacker.
THREAT_MODEL_B = (
    "the attacker knows the target's exact quasi-identifiers and the published generalized "
    "table, not the exact quasi-identifiers of the others; it learns a flexible naive-Bayes "
    "model (a kernel over ordered values) from the published cells by EM"
)

#: Largest span of integers a numeric range label may add to an attribute's exact domain.
MAX_RANGE_SPAN = 100_000


@dataclass(frozen=True, eq=False)
class FlexibleModel:
    """The learned model: ``pi[s]`` and, per QI, ``theta[j][s, v]`` over ``domains[j]``."""

    names: tuple[str, ...]
    domains: tuple[tuple[str, ...], ...]
    ordered: tuple[bool, ...]
    bandwidths: tuple[float, ...]
    pi: np.ndarray
    theta: tuple[np.ndarray, ...]
    iterations: int
    converged: bool
    loglik: float


def _numbers(values) -> list[float] | None:
    out = []
    for v in values:
        try:
            x = float(v)
        except (TypeError, ValueError):
            return None
        if not math.isfinite(x):
            return None
        out.append(x)
    return out


def _text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def exact_domain(
    labels, targets, hierarchy: Hierarchy | None = None
) -> tuple[tuple[str, ...], bool]:
    """The exact values an attribute's published cells may hide, and whether they are ordered.

    The union of the hierarchy's leaves, the targets' values, the labels published
    ungeneralized, the members of set labels ``{a, b}`` and the integers spanned by integer
    range labels (``20-29``, ``[20, 30)``).  Ordered (numbers) values are sorted by value.
    """
    inner = set() if hierarchy is None else {a for row in hierarchy.rows for a in row[1:]}
    values = {str(t).strip() for t in targets}
    if hierarchy is not None:
        values |= {row[0] for row in hierarchy.rows}
    for label in labels:
        label = str(label).strip()
        m = _RANGE.match(label)
        if label == "*" or label in inner:
            continue
        if label.startswith("{") and label.endswith("}"):
            values |= {x.strip() for x in label[1:-1].split(",")}
        elif m is not None:
            lo, hi = float(m["lo"]), float(m["hi"])
            if lo.is_integer() and hi.is_integer() and 0 <= hi - lo <= MAX_RANGE_SPAN:
                top = int(hi) - 1 if m["close"] == ")" else int(hi)
                start = int(lo) + 1 if m["open"] == "(" else int(lo)
                values |= {str(i) for i in range(start, top + 1)}
        else:
            values.add(label)
    nums = _numbers(values)
    if nums is not None and values:
        # one spelling per number ("45" and "45.0" are one value)
        by_value: dict[float, str] = {}
        for x, v in sorted(zip(nums, values)):
            by_value.setdefault(x, _text(x) if _text(x) in values else v)
        return tuple(by_value[x] for x in sorted(by_value)), True
    return tuple(sorted(values)), False


def _kernel(points: np.ndarray, h: float) -> np.ndarray:
    """Row-stochastic Gaussian kernel ``K[u, v]`` over ``points`` (identity when h = 0)."""
    if h <= 0 or points.size < 2:
        return np.eye(points.size)
    k = np.exp(-0.5 * ((points[:, None] - points[None, :]) / h) ** 2)
    return k / k.sum(axis=1, keepdims=True)


def _silverman(points: np.ndarray, weights: np.ndarray) -> float:
    """Silverman's rule of thumb ``0.9 min(sd, IQR / 1.34) n^(-1/5)`` on a weighted sample."""
    n = float(weights.sum())
    if n <= 1 or points.size < 2:
        return 0.0
    w = weights / n
    mean = float(w @ points)
    sd = math.sqrt(max(float(w @ (points - mean) ** 2), 0.0))
    cdf = np.cumsum(w)
    q1 = float(points[min(np.searchsorted(cdf, 0.25), points.size - 1)])
    q3 = float(points[min(np.searchsorted(cdf, 0.75), points.size - 1)])
    spread = min(sd, (q3 - q1) / 1.34) if q3 > q1 else sd
    return 0.9 * spread * n ** (-0.2)


def learn_flexible(
    cell_counts: list[np.ndarray],
    covers_: list[np.ndarray],
    points: list[np.ndarray | None],
    *,
    bandwidth: float | str | Mapping[str, float] = "auto",
    names: tuple[str, ...] = (),
    prior: float = 0.01,
    max_iter: int = 5000,
    tol: float = 1e-7,
) -> tuple[list[np.ndarray], list[float], int, bool, float]:
    """EM (with the EMS smoothing step on ordered attributes) for every ``theta_j``.

    Parameters
    ----------
    cell_counts
        Per attribute, ``N_j`` ``(m, L_j)``: published rows with sensitive value ``s`` and
        cell ``l``.
    covers_
        Per attribute, ``(V_j, L_j)`` booleans: which exact values each cell covers.
    points
        Per attribute, the numeric exact values (ordered attributes) or None (nominal).
    bandwidth
        ``"auto"`` (Silverman's rule), a number (every ordered attribute, in its units; 0: no
        smoothing) or ``{attribute: h}``.
    prior
        Pseudo-count added to every ``(s, v)`` before smoothing (keeps theta positive).

    Returns
    -------
    (theta, bandwidths, iterations, converged, loglik)
    """
    covers_f = [cov.astype(np.float64) for cov in covers_]  # converted once, not per iteration
    thetas, kernels, hs = [], [], []
    for j, (n_j, covf) in enumerate(zip(cell_counts, covers_f)):
        # first E-step from theta uniform over the values: every cell spread evenly
        width = covf.sum(axis=0)
        e = (n_j / np.where(width > 0, width, 1.0)) @ covf.T
        pts = points[j]
        if pts is None:
            h = 0.0
        elif isinstance(bandwidth, str):
            h = _silverman(pts, e.sum(axis=0))
        elif isinstance(bandwidth, Mapping):
            h = float(bandwidth.get(names[j], 0.0)) if names else 0.0
        else:
            h = float(bandwidth)
        hs.append(h)
        kernels.append(None if pts is None or h <= 0 else _kernel(pts, h))
        thetas.append(_m_step(e, prior, kernels[-1]))
    converged, it, loglik = False, 0, -math.inf
    while it < max_iter:
        it += 1
        change, loglik = 0.0, 0.0
        for j, (n_j, covf) in enumerate(zip(cell_counts, covers_f)):
            t = thetas[j]
            mass = t @ covf  # theta_j[s, l]
            seen = n_j > 0
            loglik += float((n_j[seen] * np.log(mass[seen])).sum())
            ratio = np.divide(n_j, mass, out=np.zeros_like(mass), where=mass > 0)
            new = _m_step(t * (ratio @ covf.T), prior, kernels[j])
            change = max(change, float(np.abs(new - t).max()))
            thetas[j] = new
        if change < tol:
            converged = True
            break
    return thetas, hs, it, converged, loglik


def _m_step(e: np.ndarray, prior: float, kernel: np.ndarray | None) -> np.ndarray:
    t = e + prior
    if kernel is not None:
        t = t @ kernel
    return t / t.sum(axis=1, keepdims=True)


def flexible_attack(
    release,
    targets: Table,
    *,
    hierarchies: Mapping[str, Hierarchy] | str | Path | None = None,
    bandwidth: float | str | Mapping[str, float] = "auto",
    prior: float = 0.01,
    max_iter: int = 5000,
    tol: float = 1e-7,
    warn: bool = True,
    return_baseline: bool = False,
    theta: Mapping[str, np.ndarray] | None = None,
) -> Posterior | tuple[Posterior, Posterior]:
    """Kifer's threat model (b) on a generalized release: one posterior row per target.

    Parameters
    ----------
    release
        A generalization release (global recoding or Mondrian).
    targets
        The targets' exact quasi-identifiers (by name), one row per target; each must fit at
        least one class of the release (the attacker knows the target is in it).
    hierarchies
        The release's public hierarchies (a mapping or an ARX folder): how generalized cells
        are read and the exact domains.
    bandwidth, prior, max_iter, tol
        See :func:`learn_flexible`.  ``tol`` bounds the largest change of any ``theta``
        between two EM iterations; an EM that does not reach it warns
        (:class:`ConvergenceWarning`).
    theta
        Known parameters ``{attribute: (m, V) array}`` over :func:`exact_domain`'s values
        (rows sum to 1): no learning, the posterior is Bayes' rule under them (a test
        oracle, or an attacker with outside knowledge).
    return_baseline
        Also return the random-worlds baseline of threat model (b) over the same targets:
        the target equally likely any published row covering its exact QIs, i.e.
        ``P(s | x) ~ sum_{c covers x} n_c[s]`` (the flexible posterior with theta flat).

    Returns
    -------
    Posterior
        ``method="flexible-bayes"``, ``threat_model`` :data:`THREAT_MODEL_B`; ``group_id`` is
        the target's class when one class covers it, else -1 (overlapping cells).
    """
    if isinstance(bandwidth, str) and bandwidth != "auto":
        raise ParameterError(f"bandwidth must be 'auto' or a number >= 0, not {bandwidth!r}")
    if isinstance(bandwidth, (int, float)) and not (bandwidth >= 0 and math.isfinite(bandwidth)):
        raise ParameterError(f"bandwidth must be a finite number >= 0, not {bandwidth}")
    if not prior > 0:
        raise ParameterError(f"prior must be > 0, not {prior}")
    if max_iter < 1:
        raise ParameterError(f"max_iter must be at least 1, not {max_iter}")
    model, fits = fit_flexible(
        release, targets, hierarchies=hierarchies, bandwidth=bandwidth, prior=prior,
        max_iter=max_iter, tol=tol, theta=theta,
    )  # fmt: skip
    part = partition_of(release)
    probs, group = _posterior(model, fits, part.counts, targets)
    if not model.converged and warn:
        warnings.warn(
            f"the flexible-Bayes EM did NOT converge in {model.iterations} iterations "
            f"(tolerance {tol:g}): its posterior may still move",
            ConvergenceWarning,
            stacklevel=2,
        )
    diag: dict[str, Any] = {
        "iterations": model.iterations,
        "converged": model.converged,
        "loglik": round(model.loglik, 4),
        "bandwidths": {
            n: round(h, 4) for n, h, o in zip(model.names, model.bandwidths, model.ordered) if o
        },
        "classes": part.n_groups,
        "targets_in_several_classes": int((group < 0).sum()),
    }
    if return_baseline:
        baseline, _ = _posterior(model, fits, part.counts, targets, learned=False)
        return (
            _flex_posterior(probs, group, part, release, diag),
            _flex_posterior(baseline, group, part, release, {"baseline": True}, "random-worlds"),
        )
    return _flex_posterior(probs, group, part, release, diag)


def _flex_posterior(probs, group, part, release, diag, method="flexible-bayes") -> Posterior:
    threat = (
        THREAT_MODEL_B
        if method == "flexible-bayes"
        else (
            "random worlds under threat model (b): the target is equally likely any published row "
            "whose cells cover its exact quasi-identifiers"
        )
    )
    return Posterior(
        probs=probs, group_id=group, values=values_of(part), method=method,
        diagnostics=diag, release_kind=getattr(release, "method", None),
        sensitive=part.sensitive.name, threat_model=threat,
    )  # fmt: skip


@dataclass(frozen=True, eq=False)
class _Fits:
    codes: np.ndarray  # (T, A) the targets' exact value codes in model.domains
    cells: np.ndarray  # (G, A) each class's published cell, as a code into cover columns
    covers: tuple[np.ndarray, ...]


def fit_flexible(
    release,
    targets: Table,
    *,
    hierarchies=None,
    bandwidth: float | str | Mapping[str, float] = "auto",
    prior: float = 0.01,
    max_iter: int = 5000,
    tol: float = 1e-7,
    theta: Mapping[str, np.ndarray] | None = None,
) -> tuple[FlexibleModel, _Fits]:
    """Learn the flexible-Bayes model from a generalized release (and read the targets)."""
    part, qi_table, people, hierarchies = read_generalized(
        release, targets, hierarchies, who="targets",
        refusal="the flexible-Bayes attack (threat model b) is for generalized releases; an "
        "Anatomy release publishes exact quasi-identifiers (use definetti or em)",
    )  # fmt: skip
    names = tuple(qi_table.names)
    first = class_rows(part)
    cells = qi_table.codes[first].astype(np.int64)  # (G, A)
    domains, ordered, covers_, points, codes, counts = [], [], [], [], [], []
    m = part.counts.shape[1]
    for j, name in enumerate(names):
        labels = qi_table.schema[name].domain
        hier = hierarchies.get(name)
        shown = people.decode(name)
        domain, is_ordered = exact_domain(labels, shown, hier)
        position = {v: i for i, v in enumerate(domain)}
        if is_ordered:
            position.update({_text(float(v)): i for i, v in enumerate(domain)})
        codes.append(np.array([position[value_text(v, is_ordered)] for v in shown], dtype=np.int64))
        domains.append(domain)
        ordered.append(is_ordered)
        covers_.append(cover_matrix(labels, domain, hier))
        points.append(np.array([float(v) for v in domain]) if is_ordered else None)
        n_j = np.zeros((m, len(labels)))
        np.add.at(n_j.T, cells[:, j], part.counts)
        counts.append(n_j)
        empty = np.flatnonzero(~covers_[-1].any(axis=0) & (n_j.sum(axis=0) > 0))
        if empty.size:
            raise ReleaseError(
                f"the published cell {labels[int(empty[0])]!r} of {name!r} covers no value the "
                "attacker knows: give the release's hierarchies (--hierarchies)"
            )
    if theta is None:
        learned, hs, iterations, converged, loglik = learn_flexible(
            counts, covers_, points, bandwidth=bandwidth, names=names, prior=prior,
            max_iter=max_iter, tol=tol,
        )  # fmt: skip
    else:
        learned = [_given(theta, name, (m, len(d))) for name, d in zip(names, domains)]
        hs, iterations, converged = [0.0] * len(names), 0, True
        loglik = float(
            sum((n * np.log(np.where(n > 0, t @ c, 1.0))).sum()
                for n, t, c in zip(counts, learned, covers_))
        )  # fmt: skip
    theta = learned
    pi = part.counts.sum(axis=0) / part.n_rows
    model = FlexibleModel(
        names=names, domains=tuple(domains), ordered=tuple(ordered), bandwidths=tuple(hs),
        pi=pi, theta=tuple(theta), iterations=iterations, converged=converged, loglik=loglik,
    )  # fmt: skip
    return model, _Fits(np.stack(codes, axis=1), cells, tuple(covers_))


def _given(theta: Mapping[str, np.ndarray], name: str, shape: tuple[int, int]) -> np.ndarray:
    if name not in theta:
        raise ParameterError(f"theta lacks the quasi-identifier {name!r}")
    t = np.asarray(theta[name], dtype=np.float64)
    if t.shape != shape:
        raise ParameterError(f"theta[{name!r}] has shape {t.shape}, expected {shape}")
    if not (np.all(t > 0) and np.allclose(t.sum(axis=1), 1.0)):
        raise ParameterError(f"theta[{name!r}] must be positive with rows summing to 1")
    return t


def value_text(value: Any, is_ordered: bool) -> str:
    """How an exact value is spelled in a model's domain (numbers: ``45.0`` -> ``45``)."""
    text = str(value).strip()
    return _text(float(text)) if is_ordered else text


def _posterior(
    model: FlexibleModel, fits: _Fits, counts: np.ndarray, targets: Table, *, learned=True
) -> tuple[np.ndarray, np.ndarray]:
    """``P(S | x)`` for every target (the module docstring's sum over covering classes);
    ``learned=False``: every covering row equally likely (the random-worlds baseline)."""
    n_classes, m = counts.shape
    # log of prod_j 1 / theta_j[s, B_cj] plus log n_c[s], per class: (G, m)
    log_class = np.log(np.where(counts > 0, counts, 1.0))
    for j, t in enumerate(model.theta):
        if not learned:
            break
        mass = t @ fits.covers[j].astype(np.float64)  # (m, L_j)
        log_class -= np.log(mass[:, fits.cells[:, j]]).T
    log_class = np.where(counts > 0, log_class, -np.inf)
    rep, combo_of, _ = distinct_rows(fits.codes, [len(d) for d in model.domains])
    x = fits.codes[rep]  # (U, A)
    fit = np.ones((rep.size, n_classes), dtype=bool)
    log_x = np.zeros((rep.size, m))
    for j, t in enumerate(model.theta):
        fit &= fits.covers[j][x[:, j]][:, fits.cells[:, j]]
        if learned:
            log_x += np.log(t[:, x[:, j]]).T
    n_fit = fit.sum(axis=1)
    if (n_fit == 0).any():
        u = int(np.argmax(n_fit == 0))
        i = int(np.argmax(combo_of == u))
        desc = ", ".join(f"{n} = {targets.decode(n)[i]}" for n in model.names)
        raise ReleaseError(
            f"target {i} ({desc}) fits no class of the release: the target is not in it, or "
            "a generalized cell cannot be read (give the release's hierarchies)"
        )
    # sum over the covering classes in a stable scale: shift each value's column
    shift = np.max(np.where(np.isfinite(log_class), log_class, -np.inf), axis=0)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    weight = np.exp(log_class - shift)  # (G, m), 0 where n_c[s] = 0
    summed = fit.astype(np.float64) @ weight  # (U, m)
    with np.errstate(divide="ignore"):
        log_post = np.log(summed) + shift + log_x
    log_post -= log_post.max(axis=1, keepdims=True)
    post = np.exp(log_post)
    post /= post.sum(axis=1, keepdims=True)
    group = np.where(n_fit == 1, fit.argmax(axis=1), -1).astype(np.int64)
    return post[combo_of], group[combo_of]


__all__ = [
    "THREAT_MODEL_B",
    "FlexibleModel",
    "exact_domain",
    "fit_flexible",
    "flexible_attack",
    "learn_flexible",
    "value_text",
]
