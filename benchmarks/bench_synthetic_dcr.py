"""Benchmark the distance to closest record (:func:`privlab.metrics.synthetic.
distance_to_closest_record`), with a control (two nearest-record searches: 2 neighbours in
the original, 1 in the control), against the search it replaced, kept here for this
comparison only: scikit-learn's ``NearestNeighbors(metric="manhattan")`` k-d tree on
one-hot features for the rows inside the original's range plus a blocked numpy pass for the
pairs with a row outside (:func:`old_nearest`).  Both give the same distances (checked to
1e-12 here).  Measured side by side in one run (interleaved, medians, wall and CPU seconds;
the compiled kernel is compiled, or loaded from numba's cache, before timing):

* **adult**: the Adult training set (30,162 rows, 6 numeric and 9 categorical columns) as
  the original, its columns each shuffled independently as a synthetic stand-in, the Adult
  test set (15,060 rows) as the control;
* **mixed** ``rows``: ``rows`` rows of a table of 3 numeric columns and 3 categorical ones
  of 2, 5 and 8 values, for the original, the control and the synthetic table.

Run by hand: ``nice -n 5 .venv/bin/python benchmarks/bench_synthetic_dcr.py [runs] [rows...]``
(default: 1 run, Adult only; rows given add the mixed tables of those sizes).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
from sklearn.neighbors import NearestNeighbors

from _timing import side_by_side
from privlab.metrics import synthetic as synthetic_module
from privlab.metrics.synthetic import _Encoded, distance_to_closest_record

#: distances held at once by the old exact pass (rows x reference rows): 2^21 doubles
BLOCK = 1 << 21


def _features(e: _Encoded, rows: np.ndarray, n_cats: np.ndarray) -> np.ndarray:
    """Numeric values over their range, then each categorical column one-hot times 1/2:
    their L1 distance is ``p D`` for rows inside the original's range."""
    out = np.zeros((rows.size, e.num.shape[1] + int(n_cats.sum())), dtype=np.float64)
    out[:, : e.num.shape[1]] = e.num[rows]
    offset = e.num.shape[1]
    for j, k in enumerate(n_cats):
        out[np.arange(rows.size), offset + e.cat[rows, j]] = 0.5
        offset += int(k)
    return out


def _exact(q: _Encoded, q_rows: np.ndarray, r: _Encoded, r_rows: np.ndarray, k: int) -> np.ndarray:
    """The old blocked numpy pass: the ``k`` smallest capped ``p D``."""
    best = np.full((q_rows.size, k), np.inf)
    if q_rows.size == 0 or r_rows.size == 0:
        return best
    step_r = max(1, min(r_rows.size, BLOCK // 64))
    step_q = max(1, BLOCK // step_r)
    for qs in range(0, q_rows.size, step_q):
        qi = q_rows[qs : qs + step_q]
        for rs in range(0, r_rows.size, step_r):
            ri = r_rows[rs : rs + step_r]
            dist = np.zeros((qi.size, ri.size))
            for j in range(q.num.shape[1]):
                dist += np.minimum(np.abs(q.num[qi, j][:, None] - r.num[ri, j][None, :]), 1.0)
            for j in range(q.cat.shape[1]):
                dist += q.cat[qi, j][:, None] != r.cat[ri, j][None, :]
            both = np.concatenate([best[qs : qs + step_q], dist], axis=1)
            if both.shape[1] > k:
                both = np.partition(both, k - 1, axis=1)[:, :k]
            best[qs : qs + step_q] = np.sort(both, axis=1)
    return best


def old_nearest(
    q: _Encoded, r: _Encoded, k: int, n_cats: np.ndarray, algorithm: str = "kd_tree"
) -> np.ndarray:
    """The search ``privlab.metrics.synthetic._nearest`` made before its compiled kernel."""
    q_in, q_out = np.flatnonzero(q.inside), np.flatnonzero(~q.inside)
    r_in, r_out = np.flatnonzero(r.inside), np.flatnonzero(~r.inside)
    best = np.full((q.num.shape[0], k), np.inf)
    if q_in.size and r_in.size:
        kk = min(k, r_in.size)
        nn = NearestNeighbors(n_neighbors=kk, metric="manhattan", algorithm=algorithm)
        nn.fit(_features(r, r_in, n_cats))
        step = max(1, BLOCK // 64)
        for s in range(0, q_in.size, step):
            rows = q_in[s : s + step]
            dist, _ = nn.kneighbors(_features(q, rows, n_cats))
            best[rows, :kk] = dist
    if r_out.size:
        merged = np.concatenate([best[q_in], _exact(q, q_in, r, r_out, k)], axis=1)
        best[q_in] = np.sort(merged, axis=1)[:, :k]
    best[q_out] = _exact(q, q_out, r, np.arange(r.num.shape[0]), k)
    return best


def with_old_search(f):
    """``f`` run with the old search in place of the compiled one."""

    def run():
        new = synthetic_module._nearest
        synthetic_module._nearest = old_nearest
        try:
            return f()
        finally:
            synthetic_module._nearest = new

    return run


def mixed(rows: int, rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame({
        "age": np.round(rng.normal(45, 15, rows)),
        "income": rng.gamma(2.0, 20_000.0, rows),
        "hours": rng.uniform(0, 80, rows),
        "sex": rng.choice(["f", "m"], rows),
        "region": rng.choice(list("abcde"), rows),
        "job": rng.choice(list("ABCDEFGH"), rows, p=[0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05]),
    })  # fmt: skip


def compare(label: str, synthetic, original, control, numeric, runs: int) -> None:
    def new():
        return distance_to_closest_record(synthetic, original, control=control, numeric=numeric)

    new()  # compile the kernel (or load it from numba's cache) before timing
    cases = {"old": with_old_search(new), "new": new}
    wall, cpu, out = side_by_side(cases, runs)
    print(f"{label}: {len(synthetic):,} synthetic x {len(original):,} original "
          f"+ {len(control):,} control rows, {original.shape[1]} columns "
          f"({len(numeric)} numeric); medians of {runs} runs")  # fmt: skip
    for name, what in (("old", "k-d tree + numpy pass"), ("new", "compiled exact pass")):
        print(f"  {name} ({what:<22}) {wall[name]:8.2f} s wall {cpu[name]:8.2f} s CPU")
    print(f"  speed-up {wall['old'] / wall['new']:.1f}x wall")
    a, b = out["old"], out["new"]
    for f in ("dcr", "second", "dcr_control"):
        np.testing.assert_allclose(getattr(b, f), getattr(a, f), rtol=0, atol=1e-12)
    print(f"  same distances (1e-12); exact matches {b.exact_match_share:.4f}, "
          f"closer to training {b.closer_to_training[0]:.4f} (old "
          f"{a.closer_to_training[0]:.4f})")  # fmt: skip


def main(runs: int = 1, *sizes: int) -> None:
    from privlab.data.datasets import load_dataset

    adult = load_dataset("adult").to_pandas()
    test = load_dataset("adult-test").to_pandas()
    rng = np.random.default_rng(0)
    shuffled = pd.DataFrame({c: rng.permutation(adult[c].to_numpy()) for c in adult.columns})
    numeric = [c for c in adult.columns if pd.api.types.is_integer_dtype(adult[c])]
    compare("adult", shuffled, adult, test, numeric, runs)
    for rows in sizes:
        original, control, synthetic = mixed(rows, rng), mixed(rows, rng), mixed(rows, rng)
        compare(f"mixed {rows:,}", synthetic, original, control, ["age", "income", "hours"], runs)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
