"""Time privlab's large-table operations against the source tree of an earlier commit.

Issue 19 asks for speed-ups "against today": this benchmark measures them side by side in
one run.  It checks the earlier commit out into a temporary git worktree, then runs each
workload alternately in fresh processes (new tree, old tree, new, old, ...) with the same
virtual environment, the earlier tree first on ``PYTHONPATH``.  Each process builds its
data (not timed), runs the operation once to load and compile what it needs (not timed),
then times one call (wall and CPU seconds).  Medians per side, and their ratio.

Workloads (1.9 million rows, seed 0, as in ``bench_anatomy.py`` and ``bench_mondrian.py``):

* ``anatomize``: Adult replicated 63 times, l = 2 (``bench_anatomy.py``'s QI and
  sensitive attribute);
* ``mondrian``: ``generalize(method="mondrian", k=5)`` on Adult's 8 QIs, each column drawn
  from Adult's own marginal;
* ``optimal``: ``generalize(k=5)`` (the exact lattice search) on Adult replicated 63 times.

Run by hand: ``nice -n 5 .venv/bin/python benchmarks/bench_versus_commit.py COMMIT
[--runs 3] [--only anatomize,mondrian,optimal]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ("anatomize", "mondrian", "optimal")

CHILD = r"""
import json, sys, time, warnings
import numpy as np
import privlab
from privlab.data.datasets import load_adult
from privlab.data.default_hierarchies import ADULT_QI
from privlab.data.table import Table

warnings.simplefilter("ignore")
name = sys.argv[1]
adult = load_adult()
if name == "mondrian":
    rng = np.random.default_rng(0)
    n = 1_900_000
    codes = np.column_stack([rng.choice(adult.codes[:, j], n) for j in range(adult.n_cols)])
    table = Table(codes, adult.schema)
else:
    table = Table(np.tile(adult.codes, (63, 1)), adult.schema)

if name == "anatomize":
    from privlab.publish.anatomy import anatomize

    def run():
        return anatomize(table, qi=["workclass", "relationship", "sex", "salary"],
                         sensitive="occupation", l=2, rng=np.random.default_rng(0))
else:
    from privlab.publish.generalization import generalize

    method = {"mondrian": "mondrian", "optimal": "optimal"}[name]

    def run():
        return generalize(table, qi=list(ADULT_QI), dataset="adult", k=5, method=method)

run()  # loads and compiles what it needs
t0, c0 = time.perf_counter(), time.process_time()
rel = run()
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"wall": wall, "cpu": cpu, "rows": int(rel.n_rows),
                  "where": privlab.__file__}))
"""


def _worktree(commit: str) -> Path:
    where = Path(tempfile.mkdtemp(prefix="privlab-base-"))
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), commit],
        check=True,
        capture_output=True,
    )
    return where


def _run(src: Path, name: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, name], env=env, capture_output=True, text=True
    )
    if out.returncode:
        raise RuntimeError(f"{name} under {src} failed:\n{out.stderr[-2000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if not res["where"].startswith(str(src)):
        raise RuntimeError(f"imported privlab from {res['where']}, not from {src}")
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("commit")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    args = ap.parse_args()
    base = _worktree(args.commit)
    try:
        print(f"now: {ROOT} ; before: {args.commit} ; {args.runs} alternating runs each")
        print(f"{'workload':<10} {'now wall (cpu)':>18} {'before wall (cpu)':>20} {'speed-up':>16}")
        for name in args.only.split(","):
            now, old = [], []
            for _ in range(args.runs):
                now.append(_run(ROOT / "src", name))
                old.append(_run(base / "src", name))
            if {r["rows"] for r in now} != {r["rows"] for r in old}:
                print(f"  {name}: published row counts differ", now, old)
            med = {
                k: (statistics.median(r[k] for r in now), statistics.median(r[k] for r in old))
                for k in ("wall", "cpu")
            }
            (wn, wo), (cn, co) = med["wall"], med["cpu"]
            print(
                f"{name:<10} {wn:>8.2f} s ({cn:5.2f}) {wo:>10.2f} s ({co:5.2f})"
                f" {wo / wn:>7.1f}x ({co / cn:4.1f}x)",
                flush=True,
            )
    finally:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
            capture_output=True,
        )


if __name__ == "__main__":
    main()
