"""How good are an attacker's probabilities?  Errors, accuracy, Brier score, reliability.

* **ABS, SSQ, ACC** (Kifer 2009 Sec. 6): over the evaluated tuples ``i`` and all sensitive
  values ``j``, ``ABS = sum_ij |s_ij - p_ij|`` and ``SSQ = sum_ij (s_ij - p_ij)^2`` with
  ``s_ij = 1`` iff tuple ``i`` has value ``j``; ACC is the share of tuples whose most probable
  value is right.  Ties for the top are broken uniformly at random, and ACC counts the
  *expected* hit (1/#tied when the truth is among them), so that the random-worlds baseline
  scores exactly ``1/l``, as in Table 7.
* **Brier score** and its decomposition (Mothali 2011 Eqs. 5.1-5.3):
  ``BS = 1/n sum_j (I_j - p_j)^2``; with the forecasts quantized into bins of ``n_i``
  events, mean forecast ``p_i`` and observed frequency ``r_i``:
  ``CAL = 1/n sum_i n_i (r_i - p_i)^2`` and ``REF = 1/n sum_i n_i r_i (1 - r_i)``.
  ``CAL + REF`` equals the Brier score of the quantized forecasts exactly; with
  ``bins=None`` every distinct probability is its own bin and ``BS = CAL + REF``.
  The events are the (tuple, value) pairs the attacker did not rule out: every ``(i, j)``
  with ``p_ij > 0`` or ``j`` the true value (pairs with ``p_ij = 0`` that are indeed false
  contribute nothing to any error).
* **At risk** (Kifer 2009 Sec. 6): the share of tuples whose top probability is at least 0.8
  and how often that top value is right (Kifer reports 11% and 67% for groups of 4).  With
  per-value thresholds ``b_v`` (Kifer 2009 Definition 2: privacy is kept if the attacker
  cannot infer ``P(x.S = s_i) > b_i`` for any value ``s_i``), a tuple is at risk when the
  probability of *some* value ``v`` reaches ``b_v``; the disclosed value is the most probable
  such value, and the precision is how often it is the true one.  With one threshold for all
  values this is exactly "the top probability reaches it".
* **Intervals and baselines**: Wilson 95% intervals (:mod:`privlab.metrics.intervals`) on
  ACC, the at-risk share and the at-risk precision; the random-worlds baseline, computed from
  the rows' groups and true values alone (a group's multiset of sensitive values is public in
  an Anatomy or generalized release and equals the true values of its rows, so its
  random-worlds posterior is ``counts[g, :] / |g|``); and, given a control posterior (the
  same attacker trained on public data only), its figures and the residual risk
  ``(ACC - ACC_control) / (1 - ACC_control)`` with Anonymeter's interval.
* **Beyond what is known** (:func:`beyond_known`; privlab's rule, not Kifer's): given what
  an attacker knows of each person *without* the release (a posterior ``k``: the
  population's distribution of the sensitive values, or the control attacker's posterior),
  a person is at risk when the release moves some value ``v`` to ``p_v >= b_v + (1 - b_v)
  k_v``, i.e. when it removes at least the share ``b_v`` of the doubt that remained about
  ``v``: ``(p_v - k_v) / (1 - k_v) >= b_v``.  With ``k = 0`` this is Kifer's rule; a value
  already known for certain (``k_v = 1``) puts nobody at risk.  Why: with Kifer's absolute
  rule a skewed attribute fails every release, useful or not (75% of Adult's salaries are
  ``<=50K``, so a threshold of 0.8 is reached by almost any learning from the public data
  alone); the relative rule judges what the release teaches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privlab._csv import restore_frame
from privlab._io import atomic_path
from privlab._params import check_int
from privlab._rng import RngLike, as_generator
from privlab.data.schema import Attribute
from privlab.errors import ParameterError, PrivlabError, SchemaError
from privlab.metrics.intervals import rate, residual_risk, wilson

AT_RISK_THRESHOLD = 0.8


def _check(probs: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    probs = np.asarray(probs, dtype=np.float64)
    truth = np.asarray(truth, dtype=np.int64)
    if probs.ndim != 2 or truth.shape != (probs.shape[0],):
        raise PrivlabError(f"truth has {truth.size} entries for {probs.shape[0]} posterior rows")
    if truth.size and (truth.min() < 0 or truth.max() >= probs.shape[1]):
        raise PrivlabError("a true value lies outside the posterior's columns")
    return probs, truth


def abs_error(probs: np.ndarray, truth: np.ndarray) -> float:
    """``sum_ij |s_ij - p_ij|`` (Kifer 2009 Sec. 6)."""
    probs, truth = _check(probs, truth)
    hit = probs[np.arange(truth.size), truth]
    return float(probs.sum() - hit.sum() + (1.0 - hit).sum())


def ssq_error(probs: np.ndarray, truth: np.ndarray) -> float:
    """``sum_ij (s_ij - p_ij)^2`` (Kifer 2009 Sec. 6)."""
    probs, truth = _check(probs, truth)
    hit = probs[np.arange(truth.size), truth]
    return float((probs**2).sum() - (hit**2).sum() + ((1.0 - hit) ** 2).sum())


def accuracy(probs: np.ndarray, truth: np.ndarray, *, atol: float = 1e-12) -> float:
    """Expected accuracy of the top prediction with ties broken uniformly at random."""
    probs, truth = _check(probs, truth)
    top = probs.max(axis=1, keepdims=True)
    tied = probs >= top - atol
    credit = tied[np.arange(truth.size), truth] / tied.sum(axis=1)
    return float(credit.mean())


def value_thresholds(
    threshold: float | Mapping[Any, float] | np.ndarray,
    n_values: int,
    values: Sequence[str] | None = None,
) -> np.ndarray:
    """The at-risk threshold ``b_v`` of each of ``n_values`` values (Kifer 2009 Def. 2).

    Parameters
    ----------
    threshold
        One number in (0, 1] for every value; or a mapping from value (a name of ``values``,
        or a code) to its threshold, the values it does not name keeping
        :data:`AT_RISK_THRESHOLD`; or an array of ``n_values`` thresholds.
    values
        The value names (the posterior's columns), to look names up in.
    """
    names = [str(v) for v in values] if values is not None else None
    if isinstance(threshold, Mapping):
        b = np.full(n_values, AT_RISK_THRESHOLD)
        for key, t in threshold.items():
            if names is not None and str(key) in names:
                code = names.index(str(key))
            elif isinstance(key, (int, np.integer)) and not isinstance(key, bool):
                code = int(key)
                if not 0 <= code < n_values:
                    raise ParameterError(f"threshold for value code {code}: no such value")
            else:
                known = ""
                if names:
                    more = ", ..." if len(names) > 20 else ""
                    known = f" (values: {', '.join(map(repr, names[:20]))}{more})"
                raise ParameterError(f"threshold for {key!r}: not a sensitive value{known}")
            b[code] = _one_threshold(t, key)
        return b
    if isinstance(threshold, np.ndarray):
        if threshold.shape != (n_values,):
            raise ParameterError(f"{threshold.size} thresholds for {n_values} sensitive values")
        return np.array([_one_threshold(t, i) for i, t in enumerate(threshold)])
    return np.full(n_values, _one_threshold(threshold, None))


def _one_threshold(t: Any, key: Any) -> float:
    ok = not isinstance(t, bool) and isinstance(t, (int, float, np.number))
    if not ok or not (0.0 < float(t) <= 1.0):
        where = f" for value {key!r}" if key is not None else ""
        raise ParameterError(f"an at-risk threshold{where} must lie in (0, 1], got {t!r}")
    return float(t)


def beyond_known(b: np.ndarray, known: np.ndarray, n: int) -> np.ndarray:
    """Each person's threshold of each value beyond what is known: ``b_v + (1 - b_v) k_iv``,
    infinite where ``k_iv = 1`` (nothing left to disclose), as an ``(n, m)`` array.

    Parameters
    ----------
    b
        The value thresholds ``(m,)`` (:func:`value_thresholds`).
    known
        What is known without the release: one distribution over the values ``(m,)`` (the
        same for everyone, e.g. the population's shares) or a posterior ``(n, m)`` (e.g.
        the control attacker's).
    n
        The number of people.
    """
    b = np.asarray(b, dtype=np.float64)
    k = np.asarray(known, dtype=np.float64)
    if k.shape not in ((b.size,), (n, b.size)):
        raise PrivlabError(
            f"what is known has shape {k.shape}: give ({b.size},) or ({n}, {b.size})"
        )
    if k.size and (not np.all(np.isfinite(k)) or k.min() < 0.0 or k.max() > 1.0 + 1e-9):
        raise PrivlabError("what is known must hold probabilities in [0, 1]")
    k = np.broadcast_to(k, (n, b.size))
    return np.where(k < 1.0, b[None, :] + (1.0 - b[None, :]) * k, np.inf)


def relative_gain(probs: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Each person's largest share of the remaining doubt that ``probs`` removes over
    ``known``: ``max_v (p_v - k_v) / (1 - k_v)``, 0 where nothing is gained (or ``k_v = 1``).

    With one threshold ``t`` for every value, a person is at risk beyond what is known
    exactly when this reaches ``t`` (:func:`beyond_known`)."""
    p = np.asarray(probs, dtype=np.float64)
    k = np.broadcast_to(np.asarray(known, dtype=np.float64), p.shape)
    room = 1.0 - k
    # (where nothing is left to remove the division is by 1, its result discarded)
    gain = np.where(room > 0, (p - k) / np.where(room > 0, room, 1.0), 0.0)
    return np.clip(gain, 0.0, 1.0).max(axis=1) if p.shape[1] else np.zeros(p.shape[0])


def _at_risk_counts(probs: np.ndarray, truth: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    """Tuples at risk (some value ``v`` with ``p_v >= b_v``; ``b`` is ``(m,)`` or one row per
    tuple ``(n, m)``) and those whose disclosed value (the most probable value that reaches
    its threshold) is true; ties count as right."""
    flagged = probs >= (b if b.ndim == 2 else b[None, :])
    risky = flagged.any(axis=1)
    rows = np.flatnonzero(risky)
    if rows.size == 0:
        return 0, 0
    p = np.where(flagged[rows], probs[rows], -np.inf)
    disclosed = p.max(axis=1)
    right = p[np.arange(rows.size), truth[rows]] >= disclosed
    return int(rows.size), int(right.sum())


def at_risk(
    probs: np.ndarray,
    truth: np.ndarray,
    threshold: float | Mapping[Any, float] | np.ndarray = AT_RISK_THRESHOLD,
) -> tuple[float, float]:
    """Share of tuples at risk and the precision of the value disclosed about them.

    A tuple is at risk when its probability of some value ``v`` is at least ``v``'s
    threshold (Kifer 2009 Def. 2; see :func:`value_thresholds`); with one threshold, when its
    top probability is.  The precision is nan when nobody is at risk.
    """
    probs, truth = _check(probs, truth)
    b = value_thresholds(threshold, probs.shape[1])
    risky, right = _at_risk_counts(probs, truth, b)
    share = risky / truth.size if truth.size else 0.0
    return share, (right / risky if risky else float("nan"))


def calibration_events(probs: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Forecasts ``p`` and outcomes ``I`` of the (tuple, value) pairs not ruled out."""
    probs, truth = _check(probs, truth)
    outcome = np.zeros(probs.shape, dtype=bool)
    outcome[np.arange(truth.size), truth] = True
    keep = (probs > 0) | outcome
    return probs[keep], outcome[keep].astype(np.float64)


@dataclass(frozen=True)
class BrierDecomposition:
    """``bs`` on the raw forecasts; ``cal + ref = bs_binned`` (Eqs. 5.1-5.3)."""

    bs: float
    cal: float
    ref: float
    bs_binned: float
    n_events: int
    bin_forecast: tuple[float, ...]
    bin_frequency: tuple[float, ...]
    bin_count: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def brier_decomposition(
    p: np.ndarray, outcome: np.ndarray, *, bins: int | None = 10
) -> BrierDecomposition:
    """Brier score and its CAL + REF decomposition (Mothali 2011 Eqs. 5.1-5.3).

    Parameters
    ----------
    p, outcome
        Forecast probabilities and 0/1 outcomes of ``n`` events.
    bins
        Number of equal-width bins on [0, 1] (the thesis uses 10); ``None`` makes every
        distinct forecast its own bin, where ``BS = CAL + REF`` holds exactly.
    """
    p = np.asarray(p, dtype=np.float64).ravel()
    o = np.asarray(outcome, dtype=np.float64).ravel()
    if p.shape != o.shape or p.size == 0:
        raise PrivlabError("forecasts and outcomes must be non-empty and of the same length")
    if np.any((p < -1e-12) | (p > 1 + 1e-12)) or not np.all(np.isin(o, (0.0, 1.0))):
        raise PrivlabError("forecasts must lie in [0, 1] and outcomes be 0 or 1")
    if bins is None:
        _, idx = np.unique(p, return_inverse=True)
    else:
        bins = check_int("bins", bins, low=1)
        idx = np.minimum((np.clip(p, 0, 1) * bins).astype(np.int64), bins - 1)
    idx = idx.ravel()
    k = int(idx.max()) + 1
    n_i = np.bincount(idx, minlength=k).astype(np.float64)
    used = n_i > 0
    p_i = np.bincount(idx, weights=p, minlength=k)[used] / n_i[used]
    r_i = np.bincount(idx, weights=o, minlength=k)[used] / n_i[used]
    n_i = n_i[used]
    n = p.size
    cal = float((n_i * (r_i - p_i) ** 2).sum() / n)
    ref = float((n_i * r_i * (1 - r_i)).sum() / n)
    bs = float(((o - p) ** 2).mean())
    return BrierDecomposition(
        bs=bs,
        cal=cal,
        ref=ref,
        bs_binned=cal + ref,
        n_events=int(n),
        bin_forecast=tuple(float(x) for x in p_i),
        bin_frequency=tuple(float(x) for x in r_i),
        bin_count=tuple(int(x) for x in n_i),
    )


@dataclass(frozen=True)
class Evaluation:
    """An attack's posterior judged against the custodian's truth.

    The ``*_ci`` fields are Wilson intervals at ``level``; ``threshold`` is the at-risk
    threshold (one number, or ``{value: b_v}``).  ``random_worlds`` and ``control`` summarize
    the baselines (``acc``, ``at_risk_share``, ``at_risk_precision``, each with its ``_ci``)
    when they were computed; ``residual_risk`` is ``{value, low, high, level}`` of
    ``(acc - control acc) / (1 - control acc)`` (:func:`privlab.metrics.intervals.residual_risk`).
    """

    n: int
    abs: float
    ssq: float
    acc: float
    brier: float
    cal: float
    ref: float
    at_risk_share: float
    at_risk_precision: float
    abs_per_tuple: float
    ssq_per_tuple: float
    reliability: dict[str, list] | None = None
    level: float = 0.95
    threshold: float | dict[str, float] = AT_RISK_THRESHOLD
    at_risk_count: int = 0
    acc_ci: tuple[float, float] = (0.0, 1.0)
    at_risk_share_ci: tuple[float, float] = (0.0, 1.0)
    at_risk_precision_ci: tuple[float, float] = (0.0, 1.0)
    random_worlds: dict[str, Any] | None = None
    control: dict[str, Any] | None = None
    residual_risk: dict[str, Any] | None = None
    #: given ``known``: the at-risk figures under the plain thresholds (the others count
    #: a person only when the release moves them beyond what is known)
    absolute: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (nan, e.g. the precision when nobody is at risk, becomes None)."""
        from privlab._io import json_ready

        return json_ready(asdict(self))


def _rates(probs: np.ndarray, truth: np.ndarray, b: np.ndarray, level: float) -> dict[str, Any]:
    """ACC, at-risk share and precision with their Wilson intervals (and the counts)."""
    n = truth.size
    acc = accuracy(probs, truth)
    risky, right = _at_risk_counts(probs, truth, b)
    return {
        "acc": acc,
        # ties give fractional expected hits; Wilson's formula takes the rate as it is
        "acc_ci": wilson(acc * n, n, level),
        "at_risk_count": risky,
        "at_risk_share": risky / n,
        "at_risk_share_ci": wilson(risky, n, level),
        "at_risk_precision": right / risky if risky else float("nan"),
        "at_risk_precision_ci": wilson(right, risky, level),
    }


def random_worlds_probs(group_id: np.ndarray, truth: np.ndarray, n_values: int) -> np.ndarray:
    """The random-worlds posterior ``counts[g_i, :] / |g_i|`` from the rows' groups and true
    values (Kifer 2009 Sec. 3.1): in an Anatomy or generalized release each group's multiset
    of sensitive values is published and equals the true values of its rows."""
    gid = np.asarray(group_id)
    if gid.shape != truth.shape:
        raise PrivlabError(f"{gid.size} group ids for {truth.size} rows")
    _, g = np.unique(gid, return_inverse=True)
    g = g.reshape(-1)
    counts = np.zeros((int(g.max()) + 1 if g.size else 0, n_values))
    np.add.at(counts, (g, truth), 1.0)
    return counts[g] / counts.sum(axis=1)[g, None]


def evaluate(
    probs: np.ndarray,
    truth: np.ndarray,
    *,
    sample: int | None = None,
    rng: RngLike = None,
    bins: int = 10,
    threshold: float | Mapping[Any, float] = AT_RISK_THRESHOLD,
    values: Sequence[str] | None = None,
    group_id: np.ndarray | None = None,
    control: np.ndarray | None = None,
    known: np.ndarray | None = None,
    baseline: np.ndarray | None = None,
    level: float = 0.95,
    beyond: np.ndarray | None = None,
) -> Evaluation:
    """ABS, SSQ, ACC, Brier = CAL + REF and the at-risk figures on all or ``sample`` tuples,
    with Wilson intervals and baselines.

    Parameters
    ----------
    probs, truth
        The attack's posterior ``(n, m)`` and the true value code of each row.
    sample
        Evaluate this many tuples drawn without replacement (Kifer evaluated 1,000).
    threshold
        The at-risk threshold: one number in (0, 1] or ``{value: b_v}`` (Kifer 2009 Def. 2;
        see :func:`value_thresholds`, whose ``values`` names the columns).
    group_id
        Each row's group, in a release that publishes each group's multiset of sensitive
        values (Anatomy, generalization): adds the random-worlds baseline
        (:func:`random_worlds_probs`, computed on all rows before any sampling).
    control
        The control attacker's posterior over the same rows and values: adds its figures and
        the residual risk of ACC over it (:func:`privlab.metrics.intervals.residual_risk`).
    known
        What an attacker knows of each person without the release, ``(m,)`` or ``(n, m)``:
        the at-risk figures (the attack's and the baselines') then count a person when the
        release moves them beyond it (:func:`beyond_known`); ``absolute`` keeps the
        attack's at-risk figures under the plain thresholds.
    baseline
        A no-learning posterior over the same rows, where the release has no groups for
        random worlds (a PRAM release: the published value through its matrix alone): its
        figures fill ``random_worlds``; not with ``group_id``.
    level
        Confidence level of the intervals.
    beyond
        With ``known``: the thresholds :func:`beyond_known` gives for ``threshold`` and
        ``known`` ``(n, m)``, when the caller has them already (a report shares one array
        among an attack's chains, its figures and its per-value table: at census size it
        is about 200 MB); not recomputed.
    """
    probs, truth = _check(probs, truth)
    if baseline is not None and group_id is not None:
        raise PrivlabError("give the no-learning baseline or the groups of random worlds, not both")
    b = value_thresholds(threshold, probs.shape[1], values)
    plain = b
    if beyond is not None:
        if known is None:
            raise PrivlabError("the thresholds beyond what is known need what is known (known=)")
        if np.shape(beyond) != (truth.size, b.size):
            raise PrivlabError(
                f"the thresholds beyond what is known have shape {np.shape(beyond)}, "
                f"not ({truth.size}, {b.size})"
            )
        b = np.asarray(beyond, dtype=np.float64)
    elif known is not None:
        b = beyond_known(b, known, truth.size)
    wilson(0, 0, level)  # checks the level
    baselines: dict[str, np.ndarray] = {}
    if group_id is not None:
        baselines["random_worlds"] = random_worlds_probs(group_id, truth, probs.shape[1])
    for name, other in (("random_worlds", baseline), ("control", control)):
        if other is not None:
            other = np.asarray(other, dtype=np.float64)
            if other.shape != probs.shape:
                what = "baseline" if name == "random_worlds" else "control"
                raise PrivlabError(
                    f"the {what} posterior has shape {other.shape}, the posterior {probs.shape}"
                )
            baselines[name] = other
    if sample is not None:
        sample = check_int("sample", sample, low=1)
        if sample > truth.size:
            raise ParameterError(f"sample = {sample} exceeds the {truth.size} tuples")
        rows = np.sort(as_generator(rng).choice(truth.size, size=sample, replace=False))
        probs, truth = probs[rows], truth[rows]
        baselines = {k: v[rows] for k, v in baselines.items()}
        if b.ndim == 2:
            b = b[rows]
    n = int(truth.size)
    if n == 0:
        raise PrivlabError("nothing to evaluate: 0 tuples")
    p, o = calibration_events(probs, truth)
    bd = brier_decomposition(p, o, bins=bins)
    own = _rates(probs, truth, b, level)
    share, prec = own["at_risk_share"], own["at_risk_precision"]
    absolute = None
    if known is not None:
        flat = _rates(probs, truth, plain, level)
        absolute = {k: flat[k] for k in flat if k.startswith("at_risk")}
    a, s = abs_error(probs, truth), ssq_error(probs, truth)
    summaries = {k: _rates(v, truth, b, level) for k, v in baselines.items()}
    residual = None
    if "control" in summaries:
        residual = residual_risk(
            rate(own["acc"] * n, n, level), rate(summaries["control"]["acc"] * n, n, level)
        ).to_dict()
    names = [str(v) for v in values] if values is not None else [str(i) for i in range(plain.size)]
    return Evaluation(
        n=n,
        abs=a,
        ssq=s,
        acc=own["acc"],
        brier=bd.bs,
        cal=bd.cal,
        ref=bd.ref,
        at_risk_share=share,
        at_risk_precision=prec,
        abs_per_tuple=a / n,
        ssq_per_tuple=s / n,
        reliability={
            "forecast": list(bd.bin_forecast),
            "frequency": list(bd.bin_frequency),
            "count": list(bd.bin_count),
        },
        level=float(level),
        threshold=(
            float(plain[0]) if np.all(plain == plain[0]) else dict(zip(names, map(float, plain)))
        ),
        at_risk_count=own["at_risk_count"],
        acc_ci=own["acc_ci"],
        at_risk_share_ci=own["at_risk_share_ci"],
        at_risk_precision_ci=own["at_risk_precision_ci"],
        random_worlds=summaries.get("random_worlds"),
        control=summaries.get("control"),
        residual_risk=residual,
        absolute=absolute,
    )


def reliability_diagram(
    curves: dict[str, tuple[np.ndarray, np.ndarray]],
    path: str | Path,
    *,
    bins: int = 10,
    title: str = "Reliability diagram",
    force: bool = False,
    format: str | None = None,
) -> Path:
    """Plot observed frequency against forecast for each ``label -> (p, outcome)``: a PNG,
    SVG or PDF file by ``path``'s suffix (or ``format``: ``png``, ``svg``, ``pdf``).

    The diagonal is perfect calibration (Mothali 2011 Ch. 5.1.1).  Labels and the title are
    drawn literally (mathtext off: a ``$`` in a file name is not math).
    """
    path = Path(path)
    fmt = format or plot_format(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"text.parse_math": False}):
        fig, ax = plt.subplots(figsize=(5, 5))
        ax.plot([0, 1], [0, 1], color="red", lw=1, label="perfect calibration")
        for label, (p, o) in curves.items():
            bd = brier_decomposition(p, o, bins=bins)
            ax.plot(bd.bin_forecast, bd.bin_frequency, marker="o",
                    label=f"{label} (BS {bd.bs:.3f})")  # fmt: skip
        ax.set_xlabel("predicted probability")
        ax.set_ylabel("observed frequency")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_title(title)
        ax.legend(loc="upper left", fontsize=8)
        fig.tight_layout()
        try:
            with atomic_path(path, force=force) as tmp:
                fig.savefig(tmp, format=fmt, dpi=100)
        finally:
            plt.close(fig)
    return path


PLOT_FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}


def plot_format(path: str | Path) -> str:
    """The image format of a plot file, by its suffix (.png, .svg or .pdf)."""
    fmt = PLOT_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise ParameterError(f"a plot file must end in .png, .svg or .pdf, not {str(path)!r}")
    return fmt


def read_truth_for(posterior, path: str | Path, *, column: str | None = None) -> np.ndarray:
    """True values as codes of ``posterior``'s columns, from a release's ``truth.csv``
    (``row,<sensitive>``) or from a table holding the sensitive ``column`` with one row per
    posterior row in order (e.g. the population file of a threat-model (a) attack).

    Raises :class:`PrivlabError` when the file does not match the posterior (other rows, a
    value that is not one of its columns).
    """
    import pandas as pd

    from privlab.data.datasets import DATASETS

    path = Path(path)
    if not path.is_file() and str(path) in DATASETS and column is not None:
        # a bundled dataset as the population / targets file (e.g. ``--truth adult``)
        from privlab.data.datasets import load_input

        table = load_input(str(path))
        if column not in table.names:
            raise PrivlabError(f"the bundled dataset {path} has no column {column!r}")
        df = pd.DataFrame({column: [str(v) for v in table.decode(column)]})
    elif not path.is_file():
        raise PrivlabError(f"truth file not found: {path}")
    else:
        try:
            df = restore_frame(
                pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
            )
        except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as e:
            raise PrivlabError(f"{path} cannot be read as a table: {str(e)[:120]}") from None
    if len(df.columns) == 2 and df.columns[0] == "row":
        try:
            rows = df["row"].astype(np.int64).to_numpy()
        except ValueError:
            raise PrivlabError(f"{path}: column 'row' must hold integers") from None
    elif column is not None and column in df.columns:
        df = df[[column]].assign(row=np.arange(len(df)))[["row", column]]
        rows = df["row"].to_numpy()
    else:
        want = f"row,<sensitive attribute> or a column {column!r}" if column else (
            "row,<sensitive attribute>"
        )  # fmt: skip
        raise PrivlabError(f"{path} has header {','.join(df.columns)}; expected {want}")
    n = posterior.n_rows
    if len(df) != n or not np.array_equal(np.sort(rows), np.arange(n)):
        raise PrivlabError(
            f"{path} does not match the posterior: it has {len(df)} rows, the posterior {n} "
            f"(rows 0..{n - 1} must appear once each)"
        )
    columns = Attribute(str(df.columns[1]), tuple(posterior.values))
    try:
        codes = columns.encode(df.iloc[:, 1].to_numpy())
    except SchemaError as e:
        raise PrivlabError(f"{path} does not match the posterior's columns: {e}") from None
    out = np.empty(n, dtype=np.int64)
    out[rows] = codes
    check_group_support(posterior, out, path)
    return out


def check_group_support(posterior, truth: np.ndarray, path: Path) -> None:
    """Every true value must be possible in its group (a truth file of another release fails).

    An attack on an anatomy release only ever assigns a group's own sensitive values to its
    tuples, so each value of the group has positive total probability over the group's rows
    (random worlds, the deFinetti samples and the EM marginals all keep the group's counts).
    A tuple whose true value has zero total probability in its group cannot belong to this
    release.
    """
    gid = np.asarray(posterior.group_id, dtype=np.int64)
    _, g = np.unique(gid, return_inverse=True)
    mass = np.zeros((g.max() + 1 if g.size else 0, posterior.probs.shape[1]))
    np.add.at(mass, g, posterior.probs)
    impossible = np.flatnonzero(mass[g, truth] <= 0.0)
    if impossible.size:
        i = int(impossible[0])
        raise PrivlabError(
            f"{path} does not match the posterior: row {i} is {posterior.values[truth[i]]!r}, "
            f"a value its group {int(gid[i])} does not hold ({impossible.size} such rows); "
            "is it the truth of another release?"
        )
