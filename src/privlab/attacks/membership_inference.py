"""An empirical membership-inference test of a synthetic table, judged against the bound that
an (epsilon, delta)-DP synthesizer puts on every such test.

**The attack** (distance to the closest synthetic record: Chen, Yu, Zhang & Fritz, "GAN-Leaks:
A Taxonomy of Membership Inference Attacks against Generative Models", CCS 2020, the
full black-box attack; Hilprecht, Härterich & Bernau, "Monte Carlo and Reconstruction
Membership Inference Attacks against Generative Models", PoPETs 2019(4), whose Monte-Carlo
attack counts the generated records within a small distance of the target).  A generator that
memorized its training records puts synthetic rows at or near them, so a real record is called
a *member* (one the synthetic table was made from) when its distance to the closest synthetic
row is small.  The distance is privlab's (:mod:`privlab.metrics.synthetic`: Gower's, capped
per column, SDMetrics' ``calculate_dcr``), on the *synthetic* table's ranges, the one table
the attacker holds (:func:`privlab.metrics.synthetic.distance_to_nearest`).

**Honest protocol.**  The members (real records the table was made from) and non-members (a
control: real records of the same population it was not made from) are each split at random
into two halves.  The threshold is chosen on the first halves, where it maximizes
``TPR - FPR``; the advantage is measured on the second halves with that threshold fixed, so the
choice, made to look good on the first halves, does not bias the estimate upward (choosing and
measuring on the same records would report a positive advantage even for a table independent
of everyone).

**Ties.**  On categorical columns many distances are equal, and the rule must say what a
record at the threshold is.  The rule calls a record a member when its distance is *strictly*
below the threshold, and the threshold lies halfway between two distinct distances of the
first halves: the records at one distance are called alike, and a record of the second halves
exactly at the threshold counts as a non-member.  A randomized threshold (calling the records
at the tied distance members with some probability ``q``) is not needed: ``TPR - FPR`` on the
first halves is linear in ``q``, so the best randomized rule there is at ``q = 0`` or ``1``, a
deterministic one.  When no threshold gives a positive advantage on the first halves, the rule
calls no one a member (threshold 0): advantage 0.

**Figures** (on the second halves).  ``TPR``, the share of members called members; ``FPR``,
the share of non-members called members; the advantage ``TPR - FPR`` (Yeom, Giacomelli,
Fredrikson & Jha, "Privacy Risk in Machine Learning: Analyzing the Connection to Overfitting",
CSF 2018) with Newcombe's hybrid score interval for the difference of two independent
proportions (Newcombe 1998, method 10; :func:`privlab.metrics.intervals.difference`); and the
AUC of the distance as a score of membership, the Mann-Whitney statistic over all
member/non-member pairs, ties counted 1/2 (Hanley & McNeil 1982): 0.5 is chance.

**The bound** (:func:`dp_advantage_bound`).  No test can tell whether a record was in the
input of an (epsilon, delta)-DP mechanism with ``TPR - FPR`` above
``(e^epsilon - 1 + 2 delta) / (e^epsilon + 1)``.  An interval whose low end is above it is
evidence (at the interval's level, one-sided 97.5%) that the table does not deliver the
guarantee its synthesizer claims.  The bound is for Yeom et al.'s experiment: the member drawn
from the training records, the non-member from the same population, records independent of one
another.  Dependent records (relatives, duplicated records) weaken what DP promises about
membership (Humphries et al. 2023); the intervals also treat the records as independent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privlab._frames import ToFrames
from privlab._rng import RngLike, as_generator
from privlab.errors import ParameterError
from privlab.metrics.intervals import Estimate, difference


def dp_advantage_bound(epsilon: float, delta: float = 0.0) -> float:
    """The largest membership advantage ``TPR - FPR`` any test reaches against an
    (epsilon, delta)-DP mechanism.

    Parameters
    ----------
    epsilon
        The guarantee's epsilon, finite and > 0.
    delta
        Its delta, in [0, 1).

    Returns
    -------
    float
        ``min(1, (e^epsilon - 1 + 2 delta) / (e^epsilon + 1))``.

    Notes
    -----
    Kairouz, Oh & Viswanath ("The Composition Theorem for Differential Privacy", ICML 2015,
    Theorem 2.1; after Wasserman & Zhou 2010) characterize (epsilon, delta)-DP as a limit on
    hypothesis tests: every test between two neighbouring inputs has false positive rate
    ``a`` and false negative rate ``b`` with ``a + e^epsilon b >= 1 - delta`` and
    ``e^epsilon a + b >= 1 - delta``.  ``TPR - FPR = 1 - a - b`` is largest where both hold
    with equality, ``a = b = (1 - delta) / (1 + e^epsilon)``, which gives the bound; it is
    tight (randomized response on one bit reaches it at delta = 0).  Humphries et al.
    ("Investigating Membership Inference Attacks under Data Dependencies", CSF 2023) state it
    for the membership experiment of Yeom et al. ("Privacy Risk in Machine Learning:
    Analyzing the Connection to Overfitting", CSF 2018), whose own bound ``e^epsilon - 1``
    (delta = 0) is weaker: it exceeds this one for every epsilon > 0 and exceeds 1 beyond
    epsilon = ln 2.  The bound is below 1 for every finite epsilon and delta < 1; the cap
    only guards rounding for very large epsilon.
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.number)):
        raise ParameterError(f"epsilon must be a number, got {epsilon!r}")
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.number)):
        raise ParameterError(f"delta must be a number, got {delta!r}")
    eps, dlt = float(epsilon), float(delta)
    if not (math.isfinite(eps) and eps > 0):
        raise ParameterError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    if not 0.0 <= dlt < 1.0:
        raise ParameterError(f"delta must lie in [0, 1), got {delta!r}")
    # (e^eps - 1 + 2 delta) / (e^eps + 1) = 1 - 2 (1 - delta) / (e^eps + 1), without overflow
    tail = math.exp(-eps) / (1.0 + math.exp(-eps))
    return min(1.0, 1.0 - 2.0 * (1.0 - dlt) * tail)


@dataclass(frozen=True, eq=False)
class MembershipInference(ToFrames):
    """The result of :func:`membership_inference` (see the module docstring).

    ``distance[i]``: record ``i``'s distance to the closest synthetic row, the members first
    then the non-members, each in its input order; ``member[i]``: whether it is a member;
    ``measured[i]``: whether it is in the second halves (the advantage's), else in the first
    (the threshold's).  ``threshold``: a record is called a member when its distance is
    strictly below it.  ``tpr``, ``fpr``, ``advantage`` (with its Newcombe interval) and
    ``auc`` are on the second halves; ``selected_advantage`` is the threshold's on the first
    halves (biased upward by the choice: not an estimate).
    """

    distance: np.ndarray = field(repr=False)
    member: np.ndarray = field(repr=False)
    measured: np.ndarray = field(repr=False)
    threshold: float
    tpr: float
    fpr: float
    advantage: Estimate
    auc: float
    selected_advantage: float
    n_members_select: int
    n_nonmembers_select: int
    n_members: int
    n_nonmembers: int
    columns: tuple[str, ...]

    @property
    def called(self) -> np.ndarray:
        """Whether the rule calls each record a member (distance below the threshold)."""
        return self.distance < self.threshold

    def within(self, epsilon: float, delta: float = 0.0) -> dict[str, Any]:
        """The advantage against an (epsilon, delta)-DP guarantee: ``bound``
        (:func:`dp_advantage_bound`), ``consistent`` (the interval's low end is at most the
        bound) and ``violated`` (its low end is above it: the table discloses membership
        beyond what the guarantee allows)."""
        bound = dp_advantage_bound(epsilon, delta)
        violated = bool(self.advantage.low > bound)
        return {
            "epsilon": float(epsilon),
            "delta": float(delta),
            "bound": bound,
            "consistent": not violated,
            "violated": violated,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no per-record arrays: :meth:`to_pandas` has them)."""
        return {
            "attack": "distance to the closest synthetic record",
            "columns": list(self.columns),
            "n": {
                "members_select": self.n_members_select,
                "nonmembers_select": self.n_nonmembers_select,
                "members": self.n_members,
                "nonmembers": self.n_nonmembers,
            },
            "threshold": self.threshold,
            "selected_advantage": self.selected_advantage,
            "tpr": self.tpr,
            "fpr": self.fpr,
            "advantage": self.advantage.to_dict(),
            "auc": self.auc,
            "ties": "a record at the threshold counts as a non-member",
        }

    def to_pandas(self) -> pd.DataFrame:
        """One row per record (members, then non-members, each in input order):
        ``member``, ``half`` (``"select"`` or ``"measure"``), ``distance``, ``called``."""
        return pd.DataFrame(
            {
                "member": self.member,
                "half": np.where(self.measured, "measure", "select"),
                "distance": self.distance,
                "called": self.called,
            }
        )


def _select_threshold(dm: np.ndarray, dn: np.ndarray) -> tuple[float, float]:
    """The threshold of largest ``TPR - FPR`` on the first halves (the first of equal ones),
    halfway between two distinct distances, with that advantage; 0 (no one called) when none
    is positive."""
    values = np.unique(np.concatenate([dm, dn]))
    tpr = np.searchsorted(np.sort(dm), values, side="right") / dm.size
    fpr = np.searchsorted(np.sort(dn), values, side="right") / dn.size
    adv = tpr - fpr
    k = int(np.argmax(adv))
    if adv[k] <= 0:
        return 0.0, 0.0
    # adv is 0 at the largest value (everyone called), so k is not the last
    return float((values[k] + values[k + 1]) / 2.0), float(adv[k])


def _auc(dm: np.ndarray, dn: np.ndarray) -> float:
    """P(member's distance < non-member's) + P(equal) / 2 (Mann-Whitney, mid-ranks)."""
    from scipy.stats import rankdata

    ranks = rankdata(np.concatenate([dm, dn]), method="average")
    u = ranks[dm.size :].sum() - dn.size * (dn.size + 1) / 2.0
    return float(u / (dm.size * dn.size))


def membership_inference(
    synthetic: pd.DataFrame,
    members: pd.DataFrame,
    nonmembers: pd.DataFrame,
    *,
    columns: list[str] | tuple[str, ...] | None = None,
    numeric: list[str] | tuple[str, ...] | None = None,
    rng: RngLike = None,
) -> MembershipInference:
    """The distance-to-closest-record membership-inference attack on a synthetic table, its
    threshold chosen on half the records and its advantage measured on the other half.

    Definitions, the protocol and how ties count: :mod:`privlab.attacks.membership_inference`.

    Parameters
    ----------
    synthetic
        The synthetic table (a pandas DataFrame, at least one row).
    members
        Real records the synthetic table was made from (at least two: one per half).
    nonmembers
        Real records of the same population it was not made from (at least two).
    columns
        The columns compared (default: the synthetic table's); every table must have them.
    numeric
        Which of them are numeric (range-scaled over the synthetic table's range); the rest
        are categorical (0/1 mismatch).  Default: the synthetic table's columns of numbers.
    rng
        The random split into halves: a seed, a :class:`numpy.random.Generator` or None.

    Returns
    -------
    MembershipInference
        The rule, its advantage with Newcombe's interval, the AUC; ``within(epsilon, delta)``
        compares the advantage with :func:`dp_advantage_bound`.

    References
    ----------
    Chen, Yu, Zhang & Fritz, CCS 2020 (GAN-Leaks); Hilprecht, Härterich & Bernau, PoPETs
    2019(4); Yeom et al., CSF 2018; Newcombe, Statistics in Medicine 17 (1998).
    """
    from privlab.metrics.synthetic import distance_to_nearest

    tables = {"synthetic": synthetic, "members": members, "nonmembers": nonmembers}
    for what, t in tables.items():
        if not isinstance(t, pd.DataFrame):
            raise ParameterError(
                f"the {what} table must be a pandas DataFrame, not {type(t).__name__}"
            )
    if len(synthetic) < 1:
        raise ParameterError("the synthetic table is empty")
    for what in ("members", "nonmembers"):
        if len(tables[what]) < 2:
            raise ParameterError(
                f"the {what} table has {len(tables[what])} rows: it needs at least 2 (one "
                "for each half)"
            )
    cols = tuple(str(c) for c in synthetic.columns) if columns is None else tuple(columns)
    gen = as_generator(rng)
    dm = distance_to_nearest(members, synthetic, columns=cols, numeric=numeric)
    dn = distance_to_nearest(nonmembers, synthetic, columns=cols, numeric=numeric)
    measured_m = _second_half(dm.size, gen)
    measured_n = _second_half(dn.size, gen)
    threshold, selected = _select_threshold(dm[~measured_m], dn[~measured_n])
    dm2, dn2 = dm[measured_m], dn[measured_n]
    k_m, k_n = int((dm2 < threshold).sum()), int((dn2 < threshold).sum())
    adv = difference(k_m, dm2.size, k_n, dn2.size)
    return MembershipInference(
        distance=np.concatenate([dm, dn]),
        member=np.concatenate([np.ones(dm.size, bool), np.zeros(dn.size, bool)]),
        measured=np.concatenate([measured_m, measured_n]),
        threshold=threshold,
        tpr=k_m / dm2.size,
        fpr=k_n / dn2.size,
        advantage=adv,
        auc=_auc(dm2, dn2),
        selected_advantage=selected,
        n_members_select=int(dm.size - dm2.size),
        n_nonmembers_select=int(dn.size - dn2.size),
        n_members=int(dm2.size),
        n_nonmembers=int(dn2.size),
        columns=cols,
    )


def _second_half(n: int, gen: np.random.Generator) -> np.ndarray:
    """A random half of ``n`` records (``n - n // 2`` of them) as a mask."""
    mask = np.zeros(n, dtype=bool)
    mask[gen.permutation(n)[n // 2 :]] = True
    return mask


__all__ = ["MembershipInference", "dp_advantage_bound", "membership_inference"]
