"""Benchmark the command line's start-up: CPU time of ``privlab --help`` and friends.

Each command runs in a fresh process (bytecode caches allowed, as on a user's machine);
the CPU time (user + system) of the child is read from ``getrusage``, median of ``runs``.
With ``--before REV`` the same commands also run on privlab's sources at git revision
``REV`` (exported to a temporary directory), interleaved with today's, so the two are
measured side by side under the same load.

Run by hand: ``.venv/bin/python benchmarks/bench_cli_startup.py [--before REV] [--runs N]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "import privlab": ["-c", "import privlab"],
    "privlab --help": ["-c", "from privlab.cli import main; main(['--help'])"],
    "privlab pram --help": ["-c", "from privlab.cli import main; main(['pram', '--help'])"],
    "privlab --version": ["-c", "from privlab.cli import main; main(['--version'])"],
}


def _cpu(args: list[str], src: Path) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(src)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, *args], env=env, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="git revision to compare with")
    parser.add_argument("--runs", type=int, default=15)
    opts = parser.parse_args()
    trees = {"now": ROOT / "src"}
    with tempfile.TemporaryDirectory() as tmp:
        if opts.before:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", opts.before, "src"],
                                     check=True, capture_output=True).stdout  # fmt: skip
            Path(tmp, "src.tar").write_bytes(archive)
            with tarfile.open(Path(tmp, "src.tar")) as tar:
                tar.extractall(tmp, filter="data")
            trees = {opts.before: Path(tmp, "src"), **trees}
        for src in trees.values():  # warm up: write the bytecode caches
            for args in CASES.values():
                _cpu(args, src)
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(opts.runs):
            for name, args in CASES.items():
                for tree, src in trees.items():
                    times.setdefault((name, tree), []).append(_cpu(args, src))
    print(f"CPU seconds per fresh process (user + system), median of {opts.runs} runs:")
    base = {t: float(np.median(times[("import privlab", t)])) for t in trees}
    for name in CASES:
        cells = []
        for tree in trees:
            m = float(np.median(times[(name, tree)]))
            cells.append(f"{tree}: {m * 1000:.0f} ms ({m / base[tree]:.1f}x import privlab)")
        if opts.before:
            old = float(np.median(times[(name, opts.before)]))
            new = float(np.median(times[(name, "now")]))
            cells.append(f"now / {opts.before}: {new / old:.2f}")
        print(f"  {name:22s} " + "; ".join(cells))


if __name__ == "__main__":
    main()
