"""SmartNoise Synth's MST or AIM on a table of integer codes, for ``bench_synth.py``.

Runs in SmartNoise's own environment (it pins ``mbi<2``; see ``README.md`` here), imports
nothing from privlab.  The codes are privlab's (``benchmarks/bench_synth.py`` writes them)
and the domain sizes are given (``--domain``), so SmartNoise's synthesizer is called on an
``mbi.Dataset`` of that domain: its own ``MST`` / ``AIM`` methods, past the transformer
that would read each column's categories from the data.  Prints one JSON line with the
wall time of fitting and of sampling (no I/O).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from importlib.metadata import version

import numpy as np
import pandas as pd


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--method", choices=["mst", "aim"], required=True)
    ap.add_argument("--epsilon", type=float, required=True)
    ap.add_argument("--delta", type=float, default=1e-9)
    ap.add_argument("--input", required=True)
    ap.add_argument("--domain", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-model-size", type=float, default=80.0)
    ap.add_argument("--max-iters", type=int, default=None, help="AIM's mirror-descent "
                    "iterations a fit (SmartNoise's own: 1,000, fixed in its code; given, "
                    "its calls are made with this many instead)")  # fmt: skip
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    from mbi import Dataset, Domain
    from snsynth import Synthesizer
    from snsynth.utils import cdp_rho

    if args.method == "aim" and args.max_iters is not None:
        import types

        import snsynth.aim.aim as aim_module

        real = aim_module.estimation

        def mirror_descent(*a, **kw):
            kw["iters"] = args.max_iters
            return real.mirror_descent(*a, **kw)

        aim_module.estimation = types.SimpleNamespace(mirror_descent=mirror_descent)
    np.random.seed(args.seed)  # noqa: NPY002 - SmartNoise draws from the global generator
    codes = pd.read_csv(args.input)
    sizes = json.loads(open(args.domain).read())
    names = list(codes.columns)
    data = Dataset(codes[names], Domain(names, [int(sizes[c]) for c in names]))
    synth = Synthesizer.create(args.method, epsilon=args.epsilon, delta=args.delta)
    t0 = time.perf_counter()
    if args.method == "mst":
        synth.MST(data, args.epsilon, args.delta)
    else:
        synth.max_model_size = args.max_model_size
        synth.rho = cdp_rho(args.epsilon, args.delta)
        workload = synth.get_workload(data, degree=synth.degree, max_cells=synth.max_cells)
        synth.AIM(data, workload)
    t1 = time.perf_counter()
    out = synth.synthesizer.synthetic_data(rows=len(codes))
    if args.method == "mst":
        out = synth.undo_compress_fn(out)
    t2 = time.perf_counter()
    out.df[names].to_csv(args.out, index=False)
    print(json.dumps({
        "method": args.method, "epsilon": args.epsilon, "fit_s": t1 - t0, "sample_s": t2 - t1,
        "total_s": t2 - t0, "rows": len(out.df),
        "versions": {p: version(p) for p in ("smartnoise-synth", "mbi", "jax", "numpy")},
    }))  # fmt: skip


if __name__ == "__main__":
    main()
