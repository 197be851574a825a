"""Benchmark out-of-core Parquet processing (issue 19, part 2): bounded memory, rows/s.

1. Writes a Parquet file of ``N`` rows x 8 integer columns (domains 2, 3, 4, 5, 6, 8, 10, 16)
   under /tmp, in row groups of 2^20 rows, generated batch by batch (bounded too);
2. runs, each in a fresh subprocess that reports its wall time and peak RSS
   (``resource.getrusage(RUSAGE_SELF).ru_maxrss``):

   * ``stream histogram``: :func:`privlab.dp.histogram.noisy_histogram_parquet` of all 8
     columns (921,600 cells, epsilon 1, declared domains);
   * ``stream pram``: :func:`privlab.publish.streaming.pram_parquet` randomizing 4 columns
     (m-category, p = 0.3), keeping the other 4, shuffled, with custody (truth.parquet);
   * ``stream anatomy``: ``anatomize(engine="stream")`` of 7 QIs with ``x7`` (16 values)
     sensitive at l = 4, saved with custody;
   * ``stream gen``: ``generalize(engine="stream")`` (optimal, generic interval
     hierarchies) of 4 QIs with ``x7`` sensitive, k = 20 and distinct l = 2, the other 3
     kept, saved with custody;

3. at ``--compare`` rows (default 10M) it runs the same operations in memory
   (``read_table`` + ``noisy_histogram``; ``read_table`` + the sanitizer + ``save(format=
   "parquet")``) side by side with the streamed ones, interleaved, medians of ``--runs``
   (``--ops`` chooses among hist, pram, anatomy, gen).

The files are deleted afterwards.  Run by hand (it takes minutes and several GB of /tmp):
``nice -n 5 .venv/bin/python benchmarks/bench_stream.py [--rows 50000000] [--compare 10000000]``.
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

SIZES = [2, 3, 4, 5, 6, 8, 10, 16]
NAMES = [f"x{i}" for i in range(len(SIZES))]
DOMAINS = {c: list(range(k)) for c, k in zip(NAMES, SIZES)}
RANDOMIZED, KEPT = NAMES[:4], NAMES[4:]


def generate(path: Path, n: int, batch: int = 1 << 20) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    schema = pa.schema([pa.field(c, pa.int32()) for c in NAMES])
    with pq.ParquetWriter(path, schema) as w:
        for lo in range(0, n, batch):
            m = min(batch, n - lo)
            cols = [pa.array(rng.integers(0, k, m, dtype=np.int32)) for k in SIZES]
            w.write_table(pa.Table.from_arrays(cols, schema=schema), row_group_size=batch)


def child(op: str, src: str, work: str) -> None:
    """One operation in this (fresh) process; prints JSON with wall seconds and peak RSS."""
    t0 = time.perf_counter()
    if op == "stream-hist":
        from privlab.dp.histogram import noisy_histogram_parquet

        h = noisy_histogram_parquet(src, NAMES, epsilon=1.0, domains=DOMAINS)
        assert h.counts.size == int(np.prod(SIZES))
    elif op == "memory-hist":
        from privlab.data.table import read_table
        from privlab.dp.histogram import noisy_histogram

        table = read_table(src, domains=DOMAINS)
        noisy_histogram(table, NAMES, epsilon=1.0)
    elif op == "stream-pram":
        from privlab.publish.streaming import pram_parquet

        pram_parquet(src, Path(work) / "out", columns=RANDOMIZED, keep=KEPT, p=0.3,
                     domains=DOMAINS, custody=Path(work) / "custody", force=True,
                     republish=True)  # fmt: skip
    elif op == "memory-pram":
        from privlab.data.table import read_table
        from privlab.publish.randomization import pram

        table = read_table(src, domains=DOMAINS)
        release = pram(table, columns=RANDOMIZED, keep=KEPT, p=0.3)
        release.save(Path(work) / "out", custody=Path(work) / "custody", force=True,
                     format="parquet", republish=True)  # fmt: skip
    elif op.endswith(("-anatomy", "-gen")):
        from privlab.data.table import read_table
        from privlab.publish import anatomize, generalize

        data = src if op.startswith("stream") else read_table(src, domains=DOMAINS)
        engine = {"engine": "stream", "schema": _schema()} if op.startswith("stream") else {}
        if op.endswith("-anatomy"):
            release = anatomize(data, qi=NAMES[:7], sensitive=NAMES[7], l=4, **engine)
        else:
            release = generalize(data, qi=NAMES[:4], sensitive=NAMES[7], keep=NAMES[4:7],
                                 k=20, l=2, **engine)  # fmt: skip
        kw = {} if op.startswith("stream") else {"format": "parquet"}
        release.save(Path(work) / "out", custody=Path(work) / "custody", force=True,
                     republish=True, **kw)  # fmt: skip
    else:
        raise SystemExit(f"unknown op {op}")
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    print(json.dumps({"wall": wall, "peak": peak}))


def _schema():  # the declared domains as a Schema (the sanitizers' schema= argument)
    from privlab.data.schema import Attribute, Schema

    return Schema(tuple(Attribute(c, tuple(v), numeric=True, declared=True)
                        for c, v in DOMAINS.items()))  # fmt: skip


def run(op: str, src: Path, work: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", op, str(src), str(work)],
        check=True,
        capture_output=True,
        text=True,
    )
    for name in ("out", "custody"):
        shutil.rmtree(work / name, ignore_errors=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=50_000_000)
    ap.add_argument("--compare", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ops", default="hist,pram,anatomy,gen")
    ap.add_argument("--child", nargs=3, metavar=("OP", "SRC", "WORK"))
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    work = Path(tempfile.mkdtemp(prefix="privlab-bench-stream-", dir="/tmp"))
    # timed releases of one input, again and again: a registry of the run's own, not the
    # custodian's (the children inherit it), and each release acknowledged (republish)
    os.environ["PRIVLAB_REGISTRY"] = str(work / "registry")
    try:
        if args.compare:
            src = work / f"in-{args.compare}.parquet"
            t0 = time.perf_counter()
            generate(src, args.compare)
            print(f"{args.compare:,} rows x 8 columns: written in {time.perf_counter() - t0:.1f} s "
                  f"({os.path.getsize(src) / 2**20:.0f} MiB); in memory vs streamed, median of "
                  f"{args.runs} interleaved runs, each in a fresh process:")  # fmt: skip
            for what in args.ops.split(","):
                res: dict[str, list[dict]] = {f"memory-{what}": [], f"stream-{what}": []}
                for _ in range(args.runs):
                    for op in res:
                        res[op].append(run(op, src, work))
                wall = {op: float(np.median([r["wall"] for r in v])) for op, v in res.items()}
                peak = {op: float(np.median([r["peak"] for r in v])) for op, v in res.items()}
                print("  " + ", ".join(
                    f"{op} {wall[op]:.1f} s ({args.compare / wall[op] / 1e6:.2f} M rows/s, "
                    f"peak {peak[op] / 2**30:.2f} GiB)" for op in res))  # fmt: skip
                m, s = f"memory-{what}", f"stream-{what}"
                print(f"    stream / memory: time {wall[s] / wall[m]:.2f}x, "
                      f"peak memory {peak[s] / peak[m]:.2f}x")  # fmt: skip
            src.unlink()
        if args.rows:
            src = work / f"in-{args.rows}.parquet"
            t0 = time.perf_counter()
            generate(src, args.rows)
            print(f"{args.rows:,} rows x 8 columns: written in {time.perf_counter() - t0:.1f} s "
                  f"({os.path.getsize(src) / 2**20:.0f} MiB); streamed, one run each:")  # fmt: skip
            for op in (f"stream-{what}" for what in args.ops.split(",")):
                r = run(op, src, work)
                ok = "under" if r["peak"] < 2 * 2**30 else "OVER"
                print(f"  {op}: {r['wall']:.1f} s ({args.rows / r['wall'] / 1e6:.2f} M rows/s), "
                      f"peak RSS {r['peak'] / 2**30:.2f} GiB ({ok} the 2 GiB target)")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
