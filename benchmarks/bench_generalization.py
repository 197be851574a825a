"""Benchmark: privlab's optimal generalization vs ANJANA on Adult resampled to 300k and 1M rows.

Run by hand (needs the ``bench`` extra: ``pip install -e '.[bench]'``)::

    nice -n 5 .venv/bin/python benchmarks/bench_generalization.py [--repeats 3] [--k 10]
    .venv/bin/python benchmarks/bench_generalization.py --peers   # the 30k-row experiment

The table is Adult's 30,162 rows drawn with replacement (``default_rng(0)``) up to each size;
the 8 usual quasi-identifiers with privlab's default hierarchies, given to ANJANA in its
format (:func:`privlab.experiments.generalization_peers.anjana_hierarchies`), the same ``k``,
no suppression.  Per size, the two tools run alternately ``repeats`` times; the medians and
their ratio are printed side by side, with the information loss of each output by the same
measures, computed from the output tables alone (:func:`~privlab.experiments.
generalization_peers.class_stats`): discernibility ``sum |E|^2`` and the average class size
``C_avg``.

Both publish the same 15 columns: ANJANA keeps every column it is not told is an identifier,
so privlab is given the 7 other columns as ``keep`` (its warning that ``education-num``
re-labels ``education`` is silenced here).  privlab is timed from its encoded ``Table`` to the
release (``generalize``), with the release decoded to a DataFrame (``+ to_pandas``), and as
ANJANA is, from a DataFrame to a DataFrame (``Table.from_pandas`` of the same frame included;
the issue's target: at least 10x faster than ANJANA at every size).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from privlab.data.datasets import load_adult
from privlab.data.default_hierarchies import ADULT_QI
from privlab.data.table import Table
from privlab.errors import PrivacyWarning
from privlab.experiments import run_experiment
from privlab.experiments.generalization_peers import class_stats, run_anjana
from privlab.publish.generalization import generalize

SIZES = (300_000, 1_000_000)
#: Seconds from which ANJANA runs once per case.
SLOW = 20.0


def resampled(n: int) -> Table:
    """Adult's rows drawn with replacement up to ``n`` rows (fixed generator)."""
    adult = load_adult()
    rows = np.random.default_rng(0).integers(0, adult.n_rows, n)
    return Table(adult.codes[rows], adult.schema)


def compare(n: int, k: int, repeats: int) -> None:
    table = resampled(n)
    df = table.to_pandas()
    qi = list(ADULT_QI)
    keep = [c for c in table.schema.names if c not in qi]
    t_gen, t_pd, t_df, t_anj = [], [], [], []
    rel = out = None
    for r in range(repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)
            t0 = time.perf_counter()
            rel = generalize(table, qi=qi, keep=keep, k=k, dataset="adult")
            t1 = time.perf_counter()
            ours = rel.to_pandas()
            t_gen.append(t1 - t0)
            t_pd.append(time.perf_counter() - t0)
            t0 = time.perf_counter()  # as ANJANA is timed: a DataFrame in, a DataFrame out
            encoded = Table.from_pandas(df)
            from_df = generalize(encoded, qi=qi, keep=keep, k=k, dataset="adult").to_pandas()
            t_df.append(time.perf_counter() - t0)
        assert from_df.equals(ours), "the release of the DataFrame differs"
        if r and t_anj[0] > SLOW:
            continue  # a run of ANJANA this long is not repeated: the ratio is plain
        res = run_anjana(df, k)
        if res is None:
            raise SystemExit("ANJANA is not installed: pip install -e '.[bench]'")
        t_anj.append(res[0])
        out = res[1]
    a, b, d, c = (float(np.median(t)) for t in (t_gen, t_pd, t_df, t_anj))
    mine = class_stats(ours, qi, n, k)
    theirs = class_stats(out, qi, n, k) if len(out) else None
    print(
        f"n = {n:,}, k = {k} (medians of {repeats} privlab, {len(t_anj)} ANJANA runs, alternating)"
    )
    print(f"  {'':24s} {'seconds':>8s} {'ANJANA/x':>9s} {'discernibility':>15s} {'C_avg':>8s}")
    print(f"  {'privlab generalize':24s} {a:8.3f} {c / a:8.2f}x {mine['discernibility']:15.4g} "
          f"{mine['avg_class_size']:8.3f}  node {rel.node}")  # fmt: skip
    print(f"  {'privlab + to_pandas':24s} {b:8.3f} {c / b:8.2f}x")
    print(f"  {'privlab DataFrame to DF':24s} {d:8.3f} {c / d:8.2f}x  (from_pandas included)")
    if theirs is None:
        print(f"  {'ANJANA k_anonymity':24s} {c:8.3f} {'':9s} (suppressed every record)")
        return
    print(f"  {'ANJANA k_anonymity':24s} {c:8.3f} {1:8.2f}x {theirs['discernibility']:15.4g} "
          f"{theirs['avg_class_size']:8.3f}")  # fmt: skip
    dm = mine["discernibility"] / theirs["discernibility"]
    ca = mine["avg_class_size"] / theirs["avg_class_size"]
    print(f"  loss privlab / ANJANA: discernibility {dm:.3f}, C_avg {ca:.3f}")


def peers() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        res = run_experiment("generalization-peers", out=Path(tmp) / "peers", progress=False)
    for r in res.rows:
        print(r)
    print(res.notes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--k", type=int, nargs="+", default=[10])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--peers", action="store_true", help="run the 30k-row peers experiment")
    args = ap.parse_args()
    if args.peers:
        peers()
        return
    for n in args.sizes:
        for k in args.k:
            compare(n, k, args.repeats)


if __name__ == "__main__":
    main()
