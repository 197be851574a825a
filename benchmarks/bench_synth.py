"""privlab's MST and AIM beside SmartNoise Synth's on Adult (issue 36), run by hand.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_synth.py \
        [--peer /work/snenv/bin/python] [--runs 5] [--epsilons 1,3,10] [--methods mst,aim] \
        [--aim-iters 100] [--out results.jsonl] [--plot docs/img/synth-workload.png]

Both sides get the same input: Adult's 30,162 rows and 15 columns coded by privlab
(:func:`privlab.publish.synthetic_core.coding`: the documented categorical domains, the
numeric columns in 32 bins over Adult's public bounds).  SmartNoise (``smartnoise-synth``,
which pins ``mbi<2``, so it runs in its own environment: ``benchmarks/synth_peers/README.md``)
reads those codes with the domain sizes given, so neither side reads a domain from the data.
Each run draws as many rows as the input has (privlab ``rows=``), at delta = 1e-9.

Measured per run: the workload error (mean total variation distance) of every 1-, 2- and
3-way marginal against the real codes, by the same function on both sides
(:func:`privlab.metrics.workload.workload_error`), and the wall time of the synthesizer's fit
and sample (privlab: the whole ``mst()`` / ``aim()`` call, which also codes the input,
decodes the synthetic values and measures the workload error for its custody; SmartNoise:
``fit`` + ``sample``; no file I/O on either side; each side a separate process run one after
the other, so they do not share the cores).

The non-DP reference: the maximum-entropy distribution matching the *exact* 1-way marginals
and the 2-way marginals of the maximum spanning tree chosen without noise (what MST estimates
from noisy ones; the max-ent estimate of Kifer & Gehrke 2006 from ungeneralized marginals,
fitted by private-pgm), sampled as privlab samples.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
DELTA = 1e-9


def _privlab_run(method: str, table, bounds, eps: float, seed: int, aim_iters: int) -> dict:
    from privlab.publish.synthetic import aim, mst

    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        if method == "mst":
            rel = mst(table, epsilon=eps, delta=DELTA, bounds=bounds, rows=table.n_rows, rng=rng)
        else:
            rel = aim(table, epsilon=eps, delta=DELTA, bounds=bounds, rows=table.n_rows, rng=rng,
                      iters=aim_iters)  # fmt: skip
        seconds = time.perf_counter() - t0
    err = rel.workload_error()
    return {"seconds": seconds, "error": {k: v["mean"] for k, v in err.items()},
            "rho": rel.rho, "epsilon_stated": rel.epsilon}  # fmt: skip


def _peer_run(peer: str, method: str, codes_csv: Path, domain_json: Path, eps: float, seed: int,
              real: np.ndarray, shape, names, aim_iters: int, where: Path,
              sampler: str = "shipped") -> dict:  # fmt: skip
    import pandas as pd

    from privlab.metrics.workload import workload_error

    out = where / f"sn-{method}-{eps:g}-{seed}-{sampler}.csv"
    cmd = [peer, str(HERE / "synth_peers" / "smartnoise_run.py"), "--method", method,
           "--epsilon", str(eps), "--delta", str(DELTA), "--input", str(codes_csv),
           "--domain", str(domain_json), "--out", str(out), "--seed", str(seed)]  # fmt: skip
    if method == "aim":
        cmd += ["--max-iters", str(aim_iters)]
    if sampler != "shipped":
        cmd += ["--sampler", sampler]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if res.returncode != 0:
        raise SystemExit(f"SmartNoise run failed: {res.stderr[-2000:]}")
    info = json.loads(res.stdout.strip().splitlines()[-1])
    syn = pd.read_csv(out)[list(names)].to_numpy()
    err = workload_error(real, syn, shape, names=names).to_dict()
    return {"seconds": info["total_s"], "error": {k: v["mean"] for k, v in err.items()},
            "versions": info.get("versions")}  # fmt: skip


def _maxent_reference(codes: np.ndarray, names, shape) -> dict:
    """Max-ent from the exact 1-way and tree 2-way marginals (no noise), sampled."""
    from scipy.cluster.hierarchy import DisjointSet

    from privlab.metrics.workload import workload_error
    from privlab.publish.synthetic import _float64, import_mbi
    from privlab.publish.synthetic_core import sample_model

    mbi = import_mbi()
    idx = {c: j for j, c in enumerate(names)}
    size = dict(zip(names, shape, strict=True))

    def counts(cl):
        dims = [size[a] for a in cl]
        flat = np.ravel_multi_index(tuple(codes[:, idx[a]] for a in cl), dims)
        return np.bincount(flat, minlength=int(np.prod(dims))).astype(float)

    n = codes.shape[0]
    one = {c: counts((c,)) for c in names}
    weight = {
        (a, b): float(np.abs(counts((a, b)) - np.outer(one[a], one[b]).ravel() / n).sum())
        for a, b in itertools.combinations(names, 2)
    }
    ds, tree = DisjointSet(names), []
    for a, b in sorted(weight, key=weight.__getitem__, reverse=True):
        if not ds.connected(a, b):
            ds.merge(a, b)
            tree.append((a, b))
    ms = [mbi.LinearMeasurement(one[c], (c,), stddev=1.0) for c in names]
    ms += [mbi.LinearMeasurement(counts(e), e, stddev=1.0) for e in tree]
    t0 = time.perf_counter()
    with _float64():
        model = mbi.estimation.MirrorDescent().estimate(
            mbi.Domain(list(names), list(shape)), ms, iters=5000
        )
    drawn = sample_model(model, n, np.random.default_rng(0))
    syn = np.stack([drawn[c] for c in names], axis=1)
    err = workload_error(codes, syn, shape, names=names).to_dict()
    return {"seconds": time.perf_counter() - t0, "error": {k: v["mean"] for k, v in err.items()}}


def _summary(rows: list[dict]) -> list[dict]:
    out = []
    keys = sorted({(r["system"], r["method"], r["epsilon"]) for r in rows},
                  key=lambda k: (k[1], k[2], k[0]))  # fmt: skip
    for system, method, eps in keys:
        rs = [r for r in rows if (r["system"], r["method"], r["epsilon"]) == (system, method, eps)]
        e3 = np.array([r["error"]["3-way"] for r in rs])
        e2 = np.array([r["error"]["2-way"] for r in rs])
        t = np.array([r["seconds"] for r in rs])
        out.append({"system": system, "method": method, "epsilon": eps, "runs": len(rs),
                    "3-way": (e3.mean(), e3.std(ddof=1) if len(rs) > 1 else 0.0),
                    "2-way": (e2.mean(), e2.std(ddof=1) if len(rs) > 1 else 0.0),
                    "seconds": (t.mean(), t.std(ddof=1) if len(rs) > 1 else 0.0)})  # fmt: skip
    return out


def _plot(summary: list[dict], reference: dict | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    styles = {"privlab": "-o", "SmartNoise": "--s", "SmartNoise+shuffle": ":^"}
    for system in styles:
        for method in ("mst", "aim"):
            s = [r for r in summary if r["system"] == system and r["method"] == method]
            if not s:
                continue
            s.sort(key=lambda r: r["epsilon"])
            ax.errorbar([r["epsilon"] for r in s], [r["3-way"][0] for r in s],
                        yerr=[r["3-way"][1] for r in s], fmt=styles[system], capsize=3,
                        label=f"{system} {method.upper()}")  # fmt: skip
    if reference is not None:
        ax.axhline(reference["error"]["3-way"], color="grey", lw=1, ls=":",
                   label="max-ent of exact tree marginals (no DP)")  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlabel("epsilon (delta = 1e-9)")
    ax.set_ylabel("3-way workload error (mean TVD)")
    ax.set_title("DP synthetic Adult: error of all 455 3-way marginals")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", default=None, help="python of the SmartNoise environment")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--epsilons", default="1,3,10")
    ap.add_argument("--methods", default="mst,aim")
    ap.add_argument("--aim-iters", type=int, default=100)
    ap.add_argument("--out", type=Path, default=None, help="JSON lines of every run (appended)")
    ap.add_argument("--plot", type=Path, default=None)
    ap.add_argument("--only", choices=["privlab", "peer", "both"], default="both")
    ap.add_argument("--summarize", type=Path, default=None, help="only summarize this file")
    ap.add_argument(
        "--peer-sampler",
        choices=["shipped", "fixed"],
        default="shipped",
        help="SmartNoise as installed, or with mbi 2's within-group shuffle "
        "(benchmarks/synth_peers/README.md)",
    )
    ap.add_argument("--no-reference", action="store_true")
    args = ap.parse_args()
    if args.summarize is not None:
        rows = [json.loads(x) for x in args.summarize.read_text().splitlines() if x.strip()]
        ref = next((r for r in rows if r["system"] == "reference"), None)
        _report([r for r in rows if r["system"] != "reference"], ref, args.plot)
        return
    from privlab.data.datasets import DATASETS, load_dataset
    from privlab.publish.synthetic_core import coding

    table = load_dataset("adult")
    bounds = dict(DATASETS["adult"].bounds)
    names = list(table.names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cod = coding(table, names, bounds=bounds)
    codes = cod.encode(table)
    shape = cod.shape
    where = Path(tempfile.mkdtemp(prefix="synth-bench-"))
    codes_csv, domain_json = where / "adult-codes.csv", where / "adult-domain.json"
    import pandas as pd

    pd.DataFrame(codes, columns=names).to_csv(codes_csv, index=False)
    domain_json.write_text(json.dumps(dict(zip(names, shape, strict=True))))
    epsilons = [float(e) for e in args.epsilons.split(",")]
    methods = args.methods.split(",")
    rows: list[dict] = []
    sink = args.out.open("a") if args.out else None

    def keep(row: dict) -> None:
        rows.append(row)
        print(json.dumps(row), flush=True)
        if sink:
            sink.write(json.dumps(row) + "\n")
            sink.flush()

    ref = None
    if not args.no_reference:
        ref = {"system": "reference", "method": "maxent", "epsilon": None,
               **_maxent_reference(codes, names, shape)}  # fmt: skip
        keep(ref)
    for method, eps, run in itertools.product(methods, epsilons, range(args.runs)):
        seed = 1000 * run + 17
        if args.only in ("privlab", "both"):
            r = _privlab_run(method, table, bounds, eps, seed, args.aim_iters)
            keep({"system": "privlab", "method": method, "epsilon": eps, "run": run, **r})
        if args.only in ("peer", "both") and args.peer:
            r = _peer_run(args.peer, method, codes_csv, domain_json, eps, seed, codes, shape,
                          names, args.aim_iters, where, args.peer_sampler)  # fmt: skip
            system = "SmartNoise" if args.peer_sampler == "shipped" else "SmartNoise+shuffle"
            keep({"system": system, "method": method, "epsilon": eps, "run": run, **r})
    _report([r for r in rows if r["system"] != "reference"], ref, args.plot)


def _report(rows: list[dict], ref: dict | None, plot: Path | None) -> None:
    summary = _summary(rows)
    print("\n| method | epsilon | system | runs | 3-way error | 2-way error | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- |")

    def pm(v: tuple, f: str, runs: int) -> str:
        return f"{v[0]:{f}}" if runs < 2 else f"{v[0]:{f}} ± {v[1]:{f}}"

    for s in summary:
        n = s["runs"]
        print(f"| {s['method'].upper()} | {s['epsilon']:g} | {s['system']} | {n} | "
              f"{pm(s['3-way'], '.4f', n)} | {pm(s['2-way'], '.4f', n)} | "
              f"{pm(s['seconds'], '.1f', n)} |")  # fmt: skip
    if ref is not None:
        print(f"\nnon-DP reference (max-ent of the exact tree marginals): 3-way "
              f"{ref['error']['3-way']:.4f}, 2-way {ref['error']['2-way']:.4f}")  # fmt: skip
    if plot is not None:
        _plot(summary, ref, plot)
        print(f"plot: {plot}")


if __name__ == "__main__":
    sys.exit(main())
