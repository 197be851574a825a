"""Workload error of a synthetic table: mean and max total variation over all k-way marginals.

This is the error measure of AIM (McKenna, Mullins, Sheldon & Miklau, "AIM: An Adaptive and
Iterative Mechanism for Differentially Private Synthetic Data", VLDB 2022, Sec. 6): for each
marginal ``r`` of the workload, ``0.5 * || M_r(D) / |D| - M_r(D_hat) / |D_hat| ||_1``, i.e. the
total variation distance between the real and synthetic normalised marginal counts.  Here the
workload is every ``degree``-way marginal over the given columns, unweighted.

Pure numpy / pandas, no privlab import: it is imported both from privlab's environment and from
the separate SmartNoise environment (``benchmarks/synth_peers/README.md``).

Inputs are tables of small non-negative integer codes, one column per attribute, with
``domain[c]`` the number of categories of column ``c`` (codes ``0 .. domain[c] - 1``).  Each
marginal is counted with one ``np.bincount`` over mixed-radix cell indices.

``python workload.py`` runs a self-check on a hand example.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = ["marginal_tv", "workload_error"]


def _codes(table: pd.DataFrame, domain: Mapping[str, int]) -> dict[str, np.ndarray]:
    out = {}
    for c, size in domain.items():
        if c not in table.columns:
            raise KeyError(f"column {c!r} of the domain is not in the table")
        x = table[c].to_numpy()
        if x.dtype.kind not in "iu":
            if x.dtype.kind == "f" and np.all(np.isfinite(x)) and np.all(x == np.round(x)):
                x = x.astype(np.int64)
            else:
                raise TypeError(f"column {c!r} must hold integer codes, got dtype {x.dtype}")
        x = x.astype(np.int64, copy=False)
        if x.size and (x.min() < 0 or x.max() >= int(size)):
            raise ValueError(
                f"column {c!r} has codes outside [0, {int(size)}): min {x.min()}, max {x.max()}"
            )
        out[c] = x
    return out


def _marginal(codes: dict[str, np.ndarray], cols: tuple[str, ...], sizes: tuple[int, ...], n: int):
    """Normalised counts of the marginal over ``cols`` (flattened, C order)."""
    cells = int(np.prod(sizes, dtype=np.int64))
    idx = np.zeros(n, dtype=np.int64)
    for c, s in zip(cols, sizes):
        idx *= s
        idx += codes[c]
    counts = np.bincount(idx, minlength=cells).astype(np.float64)
    total = counts.sum()
    return counts / total if total > 0 else counts


def marginal_tv(
    real_codes: pd.DataFrame,
    synth_codes: pd.DataFrame,
    domain: Mapping[str, int],
    cols: tuple[str, ...],
) -> float:
    """Total variation distance between the real and synthetic marginals over ``cols``."""
    sub = {c: domain[c] for c in cols}
    r, s = _codes(real_codes, sub), _codes(synth_codes, sub)
    sizes = tuple(int(domain[c]) for c in cols)
    p = _marginal(r, cols, sizes, len(real_codes))
    q = _marginal(s, cols, sizes, len(synth_codes))
    return 0.5 * float(np.abs(p - q).sum())


def workload_error(
    real_codes: pd.DataFrame,
    synth_codes: pd.DataFrame,
    domain: dict[str, int],
    degree: int,
) -> tuple[float, float]:
    """(mean, max) over all ``degree``-way marginals of the columns in ``domain`` of the total
    variation distance ``0.5 * ||p - q||_1`` between real and synthetic normalised counts.

    Columns are taken in the order of ``domain``; extra columns of the tables are ignored.
    """
    cols = list(domain)
    if not 1 <= degree <= len(cols):
        raise ValueError(f"degree must be in [1, {len(cols)}], got {degree}")
    if len(real_codes) == 0 or len(synth_codes) == 0:
        raise ValueError("both tables must have at least one row")
    r, s = _codes(real_codes, domain), _codes(synth_codes, domain)
    nr, ns = len(real_codes), len(synth_codes)
    errors = []
    for combo in itertools.combinations(cols, degree):
        sizes = tuple(int(domain[c]) for c in combo)
        p = _marginal(r, combo, sizes, nr)
        q = _marginal(s, combo, sizes, ns)
        errors.append(0.5 * float(np.abs(p - q).sum()))
    e = np.asarray(errors)
    return float(e.mean()), float(e.max())


def _self_check() -> None:
    import time

    # Hand example: a in {0,1}, b in {0,1,2}.
    real = pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 2, 2]})
    synth = pd.DataFrame({"a": [0, 1, 1, 1], "b": [0, 0, 2, 1]})
    dom = {"a": 2, "b": 3}
    # 1-way: a real (1/2, 1/2), synth (1/4, 3/4) -> TV 1/4;
    #        b real (1/4, 1/4, 1/2), synth (1/2, 1/4, 1/4) -> TV 1/4.
    mean1, max1 = workload_error(real, synth, dom, 1)
    assert abs(mean1 - 0.25) < 1e-12 and abs(max1 - 0.25) < 1e-12, (mean1, max1)
    # 2-way: real cells (0,0) (0,1) (1,2) (1,2) -> 1/4, 1/4, 1/2 at indices 0, 1, 5;
    # synth cells (0,0) (1,0) (1,2) (1,1) -> 1/4 each at indices 0, 3, 5, 4.
    # |p - q| = 0 + 1/4 + 1/4 + 1/4 + 1/4 = 1 -> TV 1/2.
    mean2, max2 = workload_error(real, synth, dom, 2)
    assert abs(mean2 - 0.5) < 1e-12 and abs(max2 - 0.5) < 1e-12, (mean2, max2)
    # Identical tables (different row order and size) -> 0.
    assert workload_error(real, pd.concat([real, real[::-1]]), dom, 2) == (0.0, 0.0)
    # Codes out of the domain are refused.
    try:
        workload_error(real, synth, {"a": 2, "b": 2}, 1)
    except ValueError:
        pass
    else:
        raise AssertionError("out-of-domain codes were accepted")

    # Speed: 15 columns x 3-way (455 marginals) on 30k rows.
    rng = np.random.default_rng(0)
    sizes = [2, 16, 7, 14, 6, 5, 2, 41, 9, 10, 10, 10, 10, 10, 74]
    dom15 = {f"c{i}": s for i, s in enumerate(sizes)}
    big_r = pd.DataFrame({c: rng.integers(0, s, 30_000) for c, s in dom15.items()})
    big_s = pd.DataFrame({c: rng.integers(0, s, 30_000) for c, s in dom15.items()})
    t0 = time.perf_counter()
    m, x = workload_error(big_r, big_s, dom15, 3)
    dt = time.perf_counter() - t0
    assert 0.0 < m <= x <= 1.0
    print(f"self-check ok; 15 columns x 3-way (455 marginals) on 30k rows: {dt:.2f} s")


if __name__ == "__main__":
    _self_check()
