"""Estimated counts from a PRAM release, with normal intervals (Ma 2006, Sec. 2.4).

:func:`estimate_release` plans the estimate (:func:`privlab.estimate.pram.release_plan`),
computes it by the moment estimator (:mod:`privlab.estimate.pram`) or the certified EM
(:mod:`privlab.estimate.pram_em`) and returns an :class:`Estimate`.  It sits above both
modules, so that neither imports the other's caller (before, ``pram`` imported ``pram_em``
lazily and ``pram_em`` imported ``pram``: an import circle).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from privlab.errors import ConvergenceWarning, ParameterError
from privlab.estimate import pram_em
from privlab.estimate.pram import moment_estimate, release_plan


# -- estimation from a release --------------------------------------------------------------------
@dataclass(frozen=True)
class Estimate:
    """Estimated joint counts of some attributes of a PRAM release, with normal intervals.

    ``counts``, ``sd``, ``lower``, ``upper`` and ``observed`` are flat, first column slowest;
    ``sd`` comes from Theorem 2 with the estimate plugged in for the true counts.
    ``summed_out`` names the columns that were estimated with them (the rest of a jointly
    randomized block that does not reduce exactly to the requested columns) and summed out.
    """

    columns: tuple[str, ...]
    domains: tuple[tuple[Any, ...], ...]
    method: str
    counts: np.ndarray
    sd: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    observed: np.ndarray
    level: float
    summed_out: tuple[str, ...] = ()

    def to_rows(self) -> list[dict[str, Any]]:
        rows = []
        for i, cell in enumerate(np.ndindex(*[len(d) for d in self.domains])):
            row = {c: self.domains[k][cell[k]] for k, c in enumerate(self.columns)}
            row.update(
                observed=float(self.observed[i]),
                estimate=float(self.counts[i]),
                sd=float(self.sd[i]),
                lower=float(self.lower[i]),
                upper=float(self.upper[i]),
            )
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns),
            "method": self.method,
            "level": self.level,
            "summed_out": list(self.summed_out),
            "cells": self.to_rows(),
        }


def estimate_release(
    release: Any, columns: Sequence[str], *, method: str = "moment", level: float = 0.95
) -> Estimate:
    """Estimate the true joint counts of ``columns`` from a :class:`PramRelease`.

    ``method`` is ``moment`` (Theorem 2; unbiased, may be negative) or ``em`` (the MLE, never
    negative).  Intervals are ``estimate +- z sd`` with the Theorem-2 sd at the estimate.
    Part of a jointly randomized block whose matrix does not reduce exactly to it is
    estimated with its whole block, the rest summed out and the sd propagated through the
    sum (:class:`EstimationPlan`); the uniform-prior marginal used before was biased
    (privlab issue 31).
    """
    if method not in ("moment", "em"):
        raise ParameterError(f"unknown estimation method {method!r}; use 'moment' or 'em'")
    if not 0 < level < 1:
        raise ParameterError(f"confidence level {level} is outside (0, 1)")
    plan = release_plan(release, columns)
    schema = release.table.schema
    obs_full = plan.observed(release)
    if method == "moment":
        full = moment_estimate(obs_full, plan.factors)
    else:
        fit = pram_em.em_certified(obs_full, plan.factors)
        if not fit.converged:
            warnings.warn(
                f"the EM estimate of {', '.join(columns)} has NOT converged after "
                f"{fit.iterations} steps: the log-likelihood can still gain up to "
                f"{fit.gap:.3g} nats, so the counts are not the maximum-likelihood estimate",
                ConvergenceWarning,
                stacklevel=2,
            )
        full = fit.counts
    est, sd, obs = plan.reduce(full), np.sqrt(plan.variance(full)), plan.reduce(obs_full)
    z = NormalDist().inv_cdf(0.5 + level / 2)
    return Estimate(
        columns=tuple(columns),
        domains=tuple(schema[c].domain for c in columns),
        method=method,
        counts=est,
        sd=sd,
        lower=est - z * sd,
        upper=est + z * sd,
        observed=obs,
        level=level,
        summed_out=plan.extra,
    )
