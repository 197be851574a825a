"""Workload error: how far a synthetic table's marginals are from the real ones.

AIM's metric (McKenna et al., VLDB 2022, Section 6): for every ``k``-way marginal of a
workload, the L1 distance between the real and the synthetic marginal, each normalised to
sum 1, halved (the total variation distance, in [0, 1]); the workload error is their mean.
privlab reports it for all 1-, 2- and 3-way marginals, with the worst marginal of each.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privlab._frames import ToFrames
from privlab.errors import ParameterError


@dataclass(frozen=True)
class WorkloadError(ToFrames):
    """The total variation distance of every marginal of each degree.

    Attributes
    ----------
    names
        The columns.
    errors
        ``{degree: {marginal (tuple of columns): distance}}``.
    """

    names: tuple[str, ...]
    errors: dict[int, dict[tuple[str, ...], float]]

    def mean(self, degree: int) -> float:
        """The workload error: the mean distance over the ``degree``-way marginals."""
        return float(np.mean(list(self.errors[degree].values())))

    def worst(self, degree: int) -> tuple[tuple[str, ...], float]:
        """The ``degree``-way marginal farthest from the real one, and its distance."""
        d = self.errors[degree]
        key = max(d, key=d.__getitem__)
        return key, d[key]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k in sorted(self.errors):
            cl, w = self.worst(k)
            out[f"{k}-way"] = {"mean": self.mean(k), "max": w, "worst": list(cl),
                               "marginals": len(self.errors[k])}  # fmt: skip
        return out

    def to_pandas(self) -> pd.DataFrame:
        rows = [{"degree": k, "marginal": ", ".join(cl), "tvd": v}
                for k, d in sorted(self.errors.items()) for cl, v in d.items()]  # fmt: skip
        return pd.DataFrame(rows, columns=["degree", "marginal", "tvd"])


def _marginal(codes: np.ndarray, cols: tuple[int, ...], dims: tuple[int, ...]) -> np.ndarray:
    if len(cols) == 1:
        x = np.bincount(codes[:, cols[0]], minlength=dims[0])
    else:
        flat = np.ravel_multi_index(tuple(codes[:, c] for c in cols), dims)
        x = np.bincount(flat, minlength=int(np.prod(dims)))
    total = x.sum()
    return x / total if total else x.astype(np.float64)


def workload_error(
    real: np.ndarray,
    synthetic: np.ndarray,
    shape: Sequence[int],
    *,
    names: Sequence[str] | None = None,
    degrees: Sequence[int] = (1, 2, 3),
) -> WorkloadError:
    """The :class:`WorkloadError` of ``synthetic`` against ``real`` over every marginal of
    each of ``degrees``.

    Parameters
    ----------
    real, synthetic
        ``n x d`` arrays of codes (column ``j`` in ``range(shape[j])``); the row counts may
        differ (each marginal is normalised).
    shape
        The domain size of each column.
    names
        The columns' names (default ``c0, c1, ...``).
    """
    real, synthetic = np.asarray(real), np.asarray(synthetic)
    shape = tuple(int(s) for s in shape)
    d = len(shape)
    for what, x in (("real", real), ("synthetic", synthetic)):
        if x.ndim != 2 or x.shape[1] != d:
            raise ParameterError(f"the {what} codes must be an n x {d} array")
        if x.size and (x.min() < 0 or np.any(x.max(axis=0) >= np.array(shape))):
            raise ParameterError(f"the {what} codes fall outside the domain sizes {shape}")
    names = tuple(names) if names is not None else tuple(f"c{j}" for j in range(d))
    if len(names) != d:
        raise ParameterError(f"{len(names)} names for {d} columns")
    errors: dict[int, dict[tuple[str, ...], float]] = {}
    for k in degrees:
        if not 1 <= int(k) <= d:
            raise ParameterError(f"degree {k} needs 1 to {d} columns")
        out = {}
        for cols in itertools.combinations(range(d), int(k)):
            dims = tuple(shape[c] for c in cols)
            p, q = _marginal(real, cols, dims), _marginal(synthetic, cols, dims)
            out[tuple(names[c] for c in cols)] = 0.5 * float(np.abs(p - q).sum())
        errors[int(k)] = out
    return WorkloadError(names, errors)


__all__ = ["WorkloadError", "workload_error"]
