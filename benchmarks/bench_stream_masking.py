"""Benchmark the stream engine of the per-row masking methods against the memory engine.

1. Writes a Parquet file of ``--rows`` rows (default 2M) x 5 float64 columns (correlated
   normals on different scales and offsets) under /tmp, in row groups of 2^20 rows;
2. runs, each in a fresh subprocess that reports its wall time and peak RSS
   (``resource.getrusage(RUSAGE_SELF).ru_maxrss``), interleaved, medians of ``--runs``:

   * ``memory-noise``: ``read_table`` + ``add_noise`` (additive, noise 50) of the 5 columns +
     ``save(format="parquet")`` with custody (the information loss includes the pMSE, a
     logistic fit over 2n rows);
   * ``memory-noise-nopmse``: the same with the pMSE's fit replaced by a stub, i.e. the
     memory engine doing what the stream engine does (it measures the loss from moments,
     without the pMSE);
   * ``stream-noise``: ``add_noise(path, engine="stream")`` + ``save()`` with custody (a
     first pass for the moments, a second for the noise and the shuffle's buckets, the
     drain, the file's SHA-256);
   * with ``--ops noise,topcode``: ``memory-topcode`` / ``stream-topcode`` (given codes at
     the columns' quartiles, with custody);

3. prints each case's wall time, rows/s and peak RSS, and the stream / memory ratios.

The file is deleted afterwards.  Run by hand (about a minute at 2M rows on 2 cores):
``nice -n 5 .venv/bin/python benchmarks/bench_stream_masking.py [--rows 2000000] [--runs 3]
[--ops noise,topcode] [--batch-rows 1048576]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

NAMES = [f"v{i}" for i in range(5)]
#: the top and bottom codes of the topcode cases (about each column's quartiles)
TOP = [1.0e4 + 2.0, 50.0 + 1.0, 0.674, 6.7, 1e6 + 674.0]
BOTTOM = [1.0e4 - 2.0, 50.0 - 1.0, -0.674, -6.7, 1e6 - 674.0]


def generate(path: Path, n: int, batch: int = 1 << 20) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    schema = pa.schema([pa.field(c, pa.float64()) for c in NAMES])
    scale = np.array([3.0, 1.5, 1.0, 10.0, 1000.0])
    offset = np.array([1e4, 50.0, 0.0, 0.0, 1e6])
    with pq.ParquetWriter(path, schema) as w:
        for lo in range(0, n, batch):
            m = min(batch, n - lo)
            z = rng.standard_normal((m, 5))
            z[:, 1] = 0.6 * z[:, 0] + 0.8 * z[:, 1]  # two correlated columns
            x = offset + scale * z
            cols = [pa.array(x[:, j]) for j in range(5)]
            w.write_table(pa.Table.from_arrays(cols, schema=schema), row_group_size=batch)


def child(op: str, src: str, work: str, batch_rows: int) -> None:
    """One operation in this (fresh) process; prints JSON with wall seconds and peak RSS."""
    t0 = time.perf_counter()
    out, custody = Path(work) / "out", Path(work) / "custody"
    save = {"custody": custody, "force": True, "republish": True}
    if op == "memory-noise-nopmse":
        import privlab.metrics.numeric_utility as nu

        nu._pmse = lambda x, xm, w, interactions: (float("nan"), x.shape[1] + 1, False)
    if op.startswith("memory"):
        from privlab.data.table import read_table
        from privlab.publish.masking import add_noise, top_bottom_code

        table = read_table(src)
        if op.startswith("memory-noise"):
            release = add_noise(table, NAMES, noise=50.0)
        else:
            release = top_bottom_code(table, NAMES, top=TOP, bottom=BOTTOM)
        release.save(out, format="parquet", **save)
    elif op.startswith("stream"):
        from privlab.publish.masking import add_noise, top_bottom_code

        kw = {"engine": "stream", "batch_rows": batch_rows}
        if op == "stream-noise":
            release = add_noise(src, NAMES, noise=50.0, **kw)
        else:
            release = top_bottom_code(src, NAMES, top=TOP, bottom=BOTTOM, **kw)
        release.save(out, **save)
    else:
        raise SystemExit(f"unknown op {op}")
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    print(json.dumps({"wall": wall, "peak": peak}))


def run(op: str, src: Path, work: Path, batch_rows: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", op, str(src), str(work), "--batch-rows",
         str(batch_rows)],
        check=True,
        capture_output=True,
        text=True,
    )  # fmt: skip
    for name in ("out", "custody"):
        shutil.rmtree(work / name, ignore_errors=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ops", default="noise")
    ap.add_argument("--batch-rows", type=int, default=1 << 20)
    ap.add_argument("--child", nargs=3, metavar=("OP", "SRC", "WORK"))
    args = ap.parse_args()
    if args.child:
        child(*args.child, args.batch_rows)
        return
    work = Path(tempfile.mkdtemp(prefix="privlab-bench-stream-masking-", dir="/tmp"))
    # timed releases of one input, again and again: a registry of the run's own, not the
    # custodian's (the children inherit it), and each release acknowledged (republish)
    os.environ["PRIVLAB_REGISTRY"] = str(work / "registry")
    try:
        src = work / f"in-{args.rows}.parquet"
        t0 = time.perf_counter()
        generate(src, args.rows)
        print(f"{args.rows:,} rows x {len(NAMES)} float64 columns: written in "
              f"{time.perf_counter() - t0:.1f} s ({os.path.getsize(src) / 2**20:.0f} MiB); "
              f"batch_rows {args.batch_rows:,}; median of {args.runs} interleaved runs, each "
              "in a fresh process, saved with custody:")  # fmt: skip
        for what in args.ops.split(","):
            ops = [f"memory-{what}", f"stream-{what}"]
            if what == "noise":
                ops.insert(1, "memory-noise-nopmse")
            res: dict[str, list[dict]] = {op: [] for op in ops}
            for _ in range(args.runs):
                for op in res:
                    res[op].append(run(op, src, work, args.batch_rows))
            wall = {op: float(np.median([r["wall"] for r in v])) for op, v in res.items()}
            peak = {op: float(np.median([r["peak"] for r in v])) for op, v in res.items()}
            for op in res:
                print(f"  {op:22s} {wall[op]:7.2f} s  ({args.rows / wall[op] / 1e6:.2f} M rows/s)"
                      f"  peak RSS {peak[op] / 2**30:.2f} GiB")  # fmt: skip
            s = f"stream-{what}"
            for m in (op for op in ops if op.startswith("memory")):
                print(f"    {s} / {m}: time {wall[s] / wall[m]:.2f}x, "
                      f"peak memory {peak[s] / peak[m]:.2f}x")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
