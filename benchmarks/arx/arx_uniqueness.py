"""Regenerate ``tests/data/arx_population_uniqueness.csv``: ARX's population-uniqueness
estimates (Zayatz, Pitman, SNB, Dankar et al.'s rule), the oracle of
``tests/test_population_uniqueness.py``.

Run by hand (needs a JDK; ARX built from source first)::

    sh benchmarks/arx/build_arx.sh /work/.mirror/arx-deidentifier+arx/repo /tmp/arxbuild
    .venv/bin/python benchmarks/arx/arx_uniqueness.py --arx-build /tmp/arxbuild \\
        --arx-git /work/.mirror/arx-deidentifier+arx/repo [--out FILE]

Cases: ARX's Adult (``tests/data/arx/adult.csv.gz``) on three quasi-identifier sets, its class
sizes grouped by ARX itself, and synthetic class-size histograms (chosen so that every branch
of Dankar's rule and of the models' validity occurs, among them ones where ARX's SNB solver
converges), each at several sampling fractions.  ``benchmarks/arx/ArxUniqueness.java`` does
ARX's side; this script writes its numbers with a header saying how they were made, and
prints ARX's time per case (median of 7, all four estimates).
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
OUT = ROOT / "tests" / "data" / "arx_population_uniqueness.csv"

ADULT_FRACTIONS = (0.01, 0.05, 0.1, 0.2, 0.5)
QI_SETS = {
    "adult-3": ("age", "sex", "race"),
    "adult-4": ("age", "sex", "race", "marital-status"),
    "adult-all": ("sex", "age", "race", "marital-status", "education", "native-country",
                  "workclass", "occupation", "salary-class"),
}  # fmt: skip
SYNTHETIC_FRACTIONS = (0.01, 0.1, 0.2, 0.5, 0.9, 1.0)
SYNTHETIC = {
    "tiny": {1: 3, 2: 2, 4: 1},
    "no-pairs": {1: 40, 3: 20, 5: 10},
    "all-unique": {1: 50},
    "no-uniques": {2: 10, 3: 5},
    "snb-a": {1: 196, 2: 8, 7: 114},
    "snb-b": {1: 109, 2: 30, 3: 85},
    "snb-c": {1: 183, 2: 9, 3: 116, 6: 45, 7: 72},
    "snb-d": {1: 166, 2: 9, 3: 158, 10: 89},
    "geometric": {1: 1000, 2: 500, 3: 250, 4: 125, 5: 62, 6: 31, 7: 16, 8: 8, 9: 4, 10: 2},
}


def zipf_sample_histogram(records: int, seed: int = 7) -> dict[int, int]:
    """Class-size histogram of ``records`` drawn from a Zipf(1.1) population over 2 million
    keys (the benchmark's large case)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    keys = 2_000_000
    w = 1.0 / np.arange(1, keys + 1) ** 1.1
    draws = rng.choice(keys, size=records, p=w / w.sum())
    sizes = np.bincount(draws)
    sizes = sizes[sizes > 0]
    s, c = np.unique(sizes, return_counts=True)
    return dict(zip(s.tolist(), c.tolist(), strict=True))


def run_arx(build: Path, lines: list[str]) -> list[list[str]]:
    """ARX's rows for the input lines (ArxUniqueness.java compiled against ``build``)."""
    cp = (build / "classpath.txt").read_text().strip()
    classes = build / "uniqueness-classes"
    classes.mkdir(exist_ok=True)
    subprocess.run(
        ["javac", "-nowarn", "-d", str(classes), "-cp", cp, str(HERE / "ArxUniqueness.java")],
        check=True,
    )
    out = subprocess.run(
        ["java", "-cp", f"{classes}:{cp}", "ArxUniqueness"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [row.split(";") for row in out.splitlines() if row.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arx-build", type=Path, required=True, help="build_arx.sh's output dir")
    ap.add_argument("--arx-git", type=Path, required=True, help="ARX's git dir (for its commit)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    commit = subprocess.run(
        ["git", "--git-dir", str(args.arx_git), "rev-parse", "HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        adult = Path(tmp) / "adult.csv"
        with (
            gzip.open(ROOT / "tests" / "data" / "arx" / "adult.csv.gz") as src,
            adult.open("wb") as dst,
        ):
            shutil.copyfileobj(src, dst)
        fr = ",".join(map(str, ADULT_FRACTIONS))
        lines = [f"data;{name};{adult};{','.join(qi)};{fr}" for name, qi in QI_SETS.items()]
        sfr = ",".join(map(str, SYNTHETIC_FRACTIONS))
        for name, h in SYNTHETIC.items():
            lines.append(f"hist;{name};{' '.join(f'{s}:{c}' for s, c in h.items())};{sfr}")
        rows = run_arx(args.arx_build, lines)
    header = [
        "# ARX's population-uniqueness estimates (RiskModelPopulationUniqueness, default",
        "# ARXSolverConfiguration): numbers of population uniques; an invalid estimate is 0.",
        f"# ARX git commit {commit} (github.com/arx-deidentifier/arx), built with",
        "# benchmarks/arx/build_arx.sh; produced by",
        "#   python benchmarks/arx/arx_uniqueness.py --arx-build BUILD --arx-git ARX_GIT_DIR",
        "# (benchmarks/arx/ArxUniqueness.java). N = Math.round(n / fraction) (ARXPopulationModel);",
        "# histogram: class size:number of classes, as ARX grouped the records (adult-*: ARX's",
        "# tests/data/arx/adult.csv.gz on the named quasi-identifiers, see arx_uniqueness.py).",
        "case;fraction;n;N;histogram;zayatz;pitman;snb;dankar;dankar_model",
    ]
    args.out.write_text("\n".join(header + [";".join(r[:10]) for r in rows]) + "\n")
    print(f"wrote {len(rows)} rows to {args.out}", file=sys.stderr)
    print("case;fraction;ARX ms (median of 7, all four estimates)")
    for r in rows:
        print(f"{r[0]};{r[1]};{r[10]}")


if __name__ == "__main__":
    main()
