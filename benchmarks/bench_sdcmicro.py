"""privlab beside sdcMicro itself on Adult (issue 35), run by hand where R and sdcMicro are
installed (``Rscript`` on the PATH; sdcMicro built from github.com/sdcTools/sdcMicro).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_sdcmicro.py [--dir DIR]

Writes Adult's five numeric columns and its eight quasi-identifiers as CSV, runs
``benchmarks/sdcmicro/side_by_side.R`` (sdcMicro's MDAV at k = 2..50 with ``dUtility``
IL1s and ``dRisk``; additive noise; ``localSuppression`` at k = 2, 3, 5; ``measure_risk``),
then privlab on the same data, and prints one table:

* MDAV: the largest difference between sdcMicro's microaggregated values and privlab's
  (the same groups give 0 up to rounding), IL1s (sdcMicro's sum) and dRisk of each, and the
  time of each (sdcMicro's ``microaggregation`` call; privlab's ``mdav`` + ``aggregate``: the
  grouping and the means, no I/O on either side);
* additive noise: IL1s and dRisk (random on both sides: the same expectation);
* local suppression on the first 3,000 records (sdcMicro's greedy is slow beyond): cells
  suppressed by each (privlab ``method="local"``, sdcMicro's greedy), and time;
* the global risk (Benedetti-Franconi, no weights) and its time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

NUMERIC = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
QIS = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex",
       "native-country"]  # fmt: skip
HERE = Path(__file__).parent
#: local suppression on the first rows only: sdcMicro's greedy takes 17 s on 3,000 records
#: x 8 keys at k = 2 (so the full 30,162 would take tens of minutes)
SUPP_ROWS = 3000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    if shutil.which("Rscript") is None:
        sys.exit("Rscript not found: install R and sdcMicro first")
    from privlab.attacks.record_linkage import record_linkage
    from privlab.data.datasets import load_dataset
    from privlab.metrics.numeric_utility import numeric_utility
    from privlab.metrics.sdc_risk import individual_risk
    from privlab.publish.local_suppression import local_suppression
    from privlab.publish.masking_core import add_noise
    from privlab.publish.microaggregation_core import aggregate, mdav

    where = args.dir or Path(tempfile.mkdtemp(prefix="sdcmicro-"))
    where.mkdir(parents=True, exist_ok=True)
    adult = load_dataset("adult")
    df = adult.to_pandas()
    x = df[NUMERIC].to_numpy(np.float64)
    df[NUMERIC].to_csv(where / "numeric.csv", index=False)
    df[QIS].astype(str).to_csv(where / "categorical.csv", index=False)
    t0 = time.perf_counter()
    subprocess.run(["Rscript", str(HERE / "sdcmicro" / "side_by_side.R"), str(where)], check=True)
    print(f"sdcMicro run: {time.perf_counter() - t0:.1f} s (R start-up and CSV reading included)")
    sdc = json.loads((where / "sdc.json").read_text())
    print(f"sdcMicro {sdc['version']}, privlab on the same {len(x):,} Adult records")
    rows = []
    for k in (2, 3, 5, 10, 20, 50):
        s = sdc[f"mdav_k{k}"]
        t = time.perf_counter()
        mx = aggregate(x, mdav(x, k))
        secs = time.perf_counter() - t
        theirs = np.loadtxt(where / f"sdc-mdav-k{k}.csv", delimiter=",", skiprows=1)
        util = numeric_utility(x, mx)
        link = record_linkage(x, mx)
        rows.append((f"MDAV k={k}", f"{np.abs(theirs - mx).max():.2g}",
                     f"{s['il1s']:.6g} / {util.il1s:.6g}",
                     f"{s['drisk']:.4f} / {link.interval_share:.4f}",
                     f"{s['seconds']:.2f} / {secs:.2f}"))  # fmt: skip
    gen = np.random.default_rng(0)
    for noise in (10, 25, 50, 100, 200):
        s = sdc[f"noise_{noise}"]
        t = time.perf_counter()
        xm = add_noise(x, noise=float(noise), rng=gen).masked
        secs = time.perf_counter() - t
        util = numeric_utility(x, xm)
        link = record_linkage(x, xm)
        rows.append((f"noise {noise}", "-", f"{s['il1s']:.6g} / {util.il1s:.6g}",
                     f"{s['drisk']:.4f} / {link.interval_share:.4f}",
                     f"{s['seconds']:.2f} / {secs:.2f}"))  # fmt: skip
    codes = np.asarray(adult.codes)[:, [adult.schema.names.index(q) for q in QIS]]
    for k in (2, 3, 5):
        s = sdc[f"supp_k{k}"]
        t = time.perf_counter()
        res = local_suppression(codes[:SUPP_ROWS], k, method="local", names=QIS)
        secs = time.perf_counter() - t
        rows.append((f"local suppression k={k}", "-", f"cells {s['cells']} / {int(res.mask.sum())}",
                     "-", f"{s['seconds']:.2f} / {secs:.2f}"))  # fmt: skip
    t = time.perf_counter()
    ind = individual_risk(codes, None, names=QIS)
    secs = time.perf_counter() - t
    s = sdc["risk"]
    rows.append(("global risk (8 QIs)", "-", f"{s['global']:.6g} / {ind.global_risk:.6g}", "-",
                 f"{s['seconds']:.2f} / {secs:.3f}"))  # fmt: skip
    head = ("case", "max |sdcMicro - privlab|", "IL1s or count: sdcMicro / privlab",
            "dRisk: sdcMicro / privlab", "seconds: sdcMicro / privlab")  # fmt: skip
    print(" | ".join(head))
    for r in rows:
        print(" | ".join(r))


if __name__ == "__main__":
    main()
