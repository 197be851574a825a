"""Benchmark: privlab's optimal generalization vs ANJANA and anonypy on Adult (8 QIs).

Run by hand (needs the ``bench`` extra: ``pip install -e '.[bench]'``)::

    .venv/bin/python benchmarks/bench_generalization.py

Prints the ``generalization-peers`` rows (seconds, discernibility, average class size,
suppressed records per tool and k).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from privlab.experiments import run_experiment


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        res = run_experiment("generalization-peers", out=Path(tmp) / "peers", progress=False)
    for r in res.rows:
        print(r)
    print(res.notes)


if __name__ == "__main__":
    main()
