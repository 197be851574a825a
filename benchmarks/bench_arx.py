"""Benchmark (issue 21): privlab's optimal generalization beside ARX, on ARX's golden Adult cases.

Run by hand (not in CI)::

    .venv/bin/python benchmarks/bench_arx.py [--repeats 7] [--old REV] [--arx-classpath FILE]

The five cases of ARX's test suite (``tests/test_arx_golden.py``; ARX's ``adult.csv`` and
hierarchies in ``tests/data/arx/``).  For each case, one after the other so that all three
share the machine's state:

* **privlab (this tree)**: ``Lattice(...)`` + ``optimal_node(...)`` timed in a fresh Python
  process (imports and CSV reading are not timed), ARX's accounting; and apart, its
  encoding (``Table.from_pandas`` of the strings, the hierarchies compiled), which ARX's
  timed ``anonymize`` does too: "new + encoding" is the like-for-like figure;
* **privlab (old)**: the same on ``--old REV`` (default ``9142714``, before issue 21), exported
  with ``git archive`` to a temporary directory (its search has privlab's own accounting only,
  so its loss differs under suppression; its node is compared);
* **ARX**: ``benchmarks/arx/ArxBench.java`` in one JVM (``anonymize`` timed, after loading the
  data), when ``--arx-classpath`` names the ``classpath.txt`` written by
  ``benchmarks/arx/build_arx.sh`` (ARX built from source with javac).

Each run repeats ``--repeats`` times; "first" is the first (cold) run, "warm" the median of the
others, "cpu" the least CPU time of a warm run (the thread's CPU for ARX, the process's for
privlab), which a loaded machine disturbs less than wall time.
"""

from __future__ import annotations

import argparse
import gzip
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "arx"

# name, k, entropy l, suppression, ARX metric variant, sensitive, ARX node, ARX loss
CASES = [
    ("k5-4%", 5, None, 0.04, "arx-monotonic", None,
     [1, 0, 1, 1, 3, 2, 2, 0, 1], 255559.85455731067),
    ("k100-4%", 100, None, 0.04, "arx-monotonic", None,
     [1, 1, 1, 1, 3, 2, 2, 1, 1], 379417.3460570988),
    ("k5-0%", 5, None, 0.0, "arx-monotonic", None,
     [1, 2, 1, 1, 3, 2, 2, 1, 1], 407289.5388925293),
    ("k100-0%", 100, None, 0.0, "arx-monotonic", None,
     [0, 4, 1, 1, 3, 2, 2, 1, 1], 453196.8932458743),
    ("l5-4%", 1, 5.0, 0.04, "arx", "occupation",
     [1, 0, 1, 1, 2, 2, 2, 1], 228878.2039109517),
]  # fmt: skip


def worker(name: str, repeats: int) -> None:
    """Time privlab's search on one case in this process; print one JSON line."""
    import numpy as np
    import pandas as pd

    from privlab.data import Table
    from privlab.data.hierarchy import read_hierarchy
    from privlab.publish.lattice import Lattice, optimal_node
    from privlab.publish.models import PrivacyModel

    _, k, l_, supp, accounting, sens, _, _ = next(c for c in CASES if c[0] == name)
    df = pd.read_csv(DATA / "adult.csv.gz", sep=";", dtype=str)
    hier = {q: read_hierarchy(DATA / f"adult_hierarchy_{q}.csv", q) for q in df if q != sens}
    model = PrivacyModel(k=k, l=l_, l_variant="entropy")
    times, cpu, enc, enc_cpu = [], [], [], []
    res = None
    for _ in range(repeats):
        # the encoding, as ARX's anonymize encodes the strings it was given
        c0, t0 = time.process_time(), time.perf_counter()
        qi = [c for c in df.columns if c != sens]
        t = Table.from_pandas(df, qi=qi, sensitive=sens)
        comp = [hier[q].compile(t.schema[q]) for q in qi]
        x = t.columns(qi)
        s = t.column(sens) if sens else None
        m = t.schema[sens].size if sens else 0
        enc.append(time.perf_counter() - t0)
        enc_cpu.append(time.process_time() - c0)
        max_supp = int(np.floor(supp * t.n_rows + 1e-9))
        kw = dict(max_suppressed=max_supp, objective="entropy")
        if "accounting" in inspect.signature(optimal_node).parameters:
            kw["accounting"] = accounting
        c0, t0 = time.process_time(), time.perf_counter()
        res = optimal_node(Lattice(x, comp, s, m), model, **kw)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    assert res is not None
    out = {"case": name, "node": list(res.node), "loss": res.cost, "times": times, "cpu": cpu,
           "encode": enc, "encode_cpu": enc_cpu}  # fmt: skip
    out["checked"] = res.evaluated
    print(json.dumps(out))


def _run(cmd: list[str], env: dict[str, str] | None = None) -> dict:
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _with_encoding(r: dict) -> str:
    """privlab's warm median of encoding + search, and the least CPU of the two together."""
    both = sorted(a + b for a, b in zip(r["times"][1:], r["encode"][1:])) or [
        r["times"][0] + r["encode"][0]]  # fmt: skip
    cpu = min(a + b for a, b in zip(r["cpu"], r["encode_cpu"]))
    return f"| {both[len(both) // 2]:.3f} | {cpu:.3f} "


def _summary(r: dict | None) -> str:
    if r is None:
        return "| - | - | - | - "
    warm = sorted(r["times"][1:]) or r["times"]
    med = warm[len(warm) // 2]
    cpu = min(r["cpu"][1:] or r["cpu"])
    return f"| {r['times'][0]:.3f} | {med:.3f} | {cpu:.3f} | {r['checked']} "


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--old", default="9142714", help="git revision of the old search ('' = skip)")
    ap.add_argument("--arx-classpath", type=Path, help="classpath.txt from build_arx.sh")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--cases", default=",".join(c[0] for c in CASES))
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.repeats)
        return
    names = args.cases.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        old_env = None
        if args.old:
            arch = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.old, "src"],
                capture_output=True,
                check=True,
            ).stdout
            (tmp / "old.tar").write_bytes(arch)
            shutil.unpack_archive(tmp / "old.tar", tmp / "old")
            old_env = {**os.environ, "PYTHONPATH": str(tmp / "old" / "src")}
        arx_cp = None
        if args.arx_classpath:
            arx_cp = args.arx_classpath.read_text().strip()
            (tmp / "arx").mkdir()
            with (
                gzip.open(DATA / "adult.csv.gz") as src,
                open(tmp / "arx" / "adult.csv", "wb") as f,
            ):
                shutil.copyfileobj(src, f)
            for h in DATA.glob("adult_hierarchy_*.csv"):
                shutil.copy(h, tmp / "arx" / h.name)
        me = [sys.executable, str(Path(__file__).resolve())]
        rows = []
        for name in names:
            new = _run([*me, "--worker", name, "--repeats", str(args.repeats)])
            old = None
            if old_env is not None:
                old = _run([*me, "--worker", name, "--repeats", str(args.repeats)], env=old_env)
            arx = None
            if arx_cp:
                cmd = ["java", "-cp", arx_cp, "ArxBench", str(tmp / "arx"), str(args.repeats), name]
                arx = _run(cmd)
            rows.append((name, new, old, arx))
            print(json.dumps({"case": name, "new": new, "old": old, "arx": arx}), flush=True)
    print()
    print(
        "| case | ARX node | privlab node | privlab loss | ARX loss "
        "| ARX first s | ARX warm s | ARX cpu s | ARX checked "
        "| new first s | new warm s | new cpu s | new evaluated "
        "| new + encoding warm s | new + encoding cpu s "
        "| old first s | old warm s | old cpu s | old evaluated |"
    )
    print("|" + "---|" * 19)
    for name, new, old, arx in rows:
        case = next(c for c in CASES if c[0] == name)
        same = "same" if new["node"] == case[6] else str(new["node"])
        if old is not None and old["node"] != case[6]:
            same += f" (old: {old['node']})"
        arx_loss = f"{arx['loss']:,.2f}" if arx else f"({case[7]:,.2f})"
        print(
            f"| {name} | {case[6]} | {same} | {new['loss']:,.2f} | {arx_loss} "
            + _summary(arx)
            + _summary(new)
            + _with_encoding(new)
            + _summary(old)
            + "|"
        )


if __name__ == "__main__":
    main()
