"""Run SmartNoise Synth's MST or AIM on a table of integer codes, beside privlab's own.

Runs inside the separate SmartNoise environment (``/work/snenv``, see ``README.md`` beside this
file); it imports nothing from privlab.  Usage::

    /work/snenv/bin/python benchmarks/synth_peers/smartnoise_run.py --method aim \\
        --epsilon 1 --delta 1e-9 --input CODES.csv --domain DOMAIN.json --out SYNTH.csv --seed 0

``CODES.csv`` holds one column per attribute of small non-negative integer codes (already
discretised by privlab, every column categorical); ``DOMAIN.json`` maps each column to its
number of categories (codes ``0 .. size - 1``).  The domain is given to SmartNoise up front as a
fitted ``TableTransformer`` of ``LabelTransformer`` s over ``range(size)``, so SmartNoise neither
infers the categories from the private data nor spends budget on preprocessing: the whole
``(epsilon, delta)`` goes to the synthesizer.  The synthesizer fits, samples as many rows as the
input, and the sample is written to ``SYNTH.csv`` (same columns, codes).

One JSON line goes to stdout::

    {"method": ..., "epsilon": ..., "delta": ..., "rho": ..., "seed": ..., "fit_s": ...,
     "sample_s": ..., "total_s": ..., "rows": ..., "params": {...}, "versions": {...}}

``fit_s`` and ``sample_s`` are ``time.perf_counter`` wall times around ``fit`` and ``sample``
only (no file I/O); everything SmartNoise itself prints goes to stderr.

Options beyond SmartNoise's defaults (``None`` keeps SmartNoise's value):

* ``--max-model-size M`` (AIM): model size limit in MB, SmartNoise's ``max_model_size``
  (default 80, as in the AIM paper);
* ``--max-iters I``: mirror-descent iterations of every ``mbi.estimation.mirror_descent``
  call, which SmartNoise hard-codes (AIM: 1000 for every call; MST: 1000 in the selection
  step, 5000 for the final model).  This is the ``max_iters`` of the reference AIM in
  private-pgm;
* ``--rounds R`` (AIM): maximum number of rounds (SmartNoise default ``16 * columns``);
* ``--degree K`` (AIM): the workload AIM optimises for is every ``K``-way marginal with at most
  ``--max-cells`` cells (SmartNoise defaults 2 and 10000; the AIM paper evaluates on 3-way).

* ``--sampler {shipped,fixed}``: how records are drawn from the fitted model.  mbi 1.1.0's
  ``MarkovRandomField.synthetic_data`` (what SmartNoise calls, ``method="round"``) assigns each
  new column to the rows of a parent group in row-index order, so two columns drawn given the
  same parents come out spuriously comonotone; mbi 2.0 shuffles each group first ("to break
  spurious correlations with previously generated columns that shared the same parent set").
  ``shipped`` (default) is SmartNoise as installed; ``fixed`` applies mbi 2.0's shuffle and
  nothing else.  The fitted model is the same; only sampling differs (on Adult, MST at
  epsilon 1: 3-way workload error about 0.25 shipped against 0.09 fixed);
* ``--verbose``: SmartNoise's own progress messages (on stderr).

Determinism: ``--seed`` seeds numpy's global generator, which SmartNoise uses for the
exponential mechanism (selection), MST's decompression and mbi's sampling of records.  The
Gaussian noise added to marginals comes from OpenDP's ``make_gaussian`` (OpenDP's own
cryptographically secure generator) and cannot be seeded, so two runs with the same seed
differ.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata as md
import json
import platform
import sys
import time
import types

import numpy as np
import pandas as pd


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("smartnoise-synth", "smartnoise-sql", "mbi", "jax", "jaxlib", "opendp", "numpy"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "absent"
    return out


def _domain_transformer(columns: list[str], domain: dict[str, int]):
    """A TableTransformer fitted on the public domain only: column ``c`` maps code ``i`` to
    label ``i`` for ``i in range(domain[c])`` (LabelTransformer sorts its labels, so the map is
    the identity)."""
    from snsynth.transform.label import LabelTransformer
    from snsynth.transform.table import TableTransformer

    tt = TableTransformer([LabelTransformer(nullable=False) for _ in columns])
    longest = max(domain[c] for c in columns)
    public = pd.DataFrame({c: np.arange(longest) % domain[c] for c in columns})
    tt.fit(public, epsilon=0.0)
    assert tt.fit_complete and not tt.needs_epsilon
    assert tt.cardinality == [domain[c] for c in columns], tt.cardinality
    assert tt.odometer.spent[0] == 0.0
    return tt


class _NumpyShuffledTies:
    """numpy, except that ``argsort(x, kind="stable")`` breaks ties in a random order."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def argsort(a, *args, kind=None, **kwargs):
        a = np.asarray(a)
        if kind == "stable" and a.ndim == 1:
            # mbi draws from numpy's global generator too: seeded by --seed
            return np.lexsort((np.random.permutation(a.size), a))  # noqa: NPY002
        return np.argsort(a, *args, kind=kind, **kwargs)


@contextlib.contextmanager
def _mbi_sampler(sampler: str):
    """``shipped``: mbi 1.1.0's ``MarkovRandomField.synthetic_data`` as installed.  ``fixed``:
    the same, but rows that share a parent configuration are visited in a random order (the
    within-group shuffle of mbi 2.0), by handing that module a numpy whose stable argsort
    breaks ties at random (it is called only there, on the parent-group index)."""
    if sampler == "shipped":
        yield
        return
    import mbi.markov_random_field as mrf

    orig = mrf.np
    mrf.np = _NumpyShuffledTies()
    try:
        yield
    finally:
        mrf.np = orig


@contextlib.contextmanager
def _mirror_descent_iters(module, iters: int | None):
    """Override ``iters`` of the ``estimation.mirror_descent`` calls made from ``module``."""
    if iters is None:
        yield
        return
    orig = module.estimation

    def mirror_descent(*args, **kwargs):
        kwargs["iters"] = iters
        return orig.mirror_descent(*args, **kwargs)

    module.estimation = types.SimpleNamespace(mirror_descent=mirror_descent)
    try:
        yield
    finally:
        module.estimation = orig


def run(args: argparse.Namespace) -> dict:
    with open(args.domain) as fh:
        domain = {str(k): int(v) for k, v in json.load(fh).items()}
    data = pd.read_csv(args.input)
    columns = list(data.columns)
    missing = [c for c in columns if c not in domain]
    if missing:
        raise SystemExit(f"columns without a domain size: {missing}")
    for c in columns:
        x = data[c].to_numpy()
        if x.dtype.kind not in "iu" or x.min() < 0 or x.max() >= domain[c]:
            raise SystemExit(f"column {c!r} must hold integer codes in [0, {domain[c]})")
        data[c] = x.astype(np.int64)

    # SmartNoise and mbi draw from numpy's global generator (np.random), not a Generator
    np.random.seed(args.seed)  # noqa: NPY002

    from snsynth import Synthesizer
    from snsynth.utils import cdp_rho

    params: dict = {}
    if args.method == "aim":
        import snsynth.aim.aim as module

        for k in ("max_model_size", "rounds", "degree", "max_cells"):
            v = getattr(args, k)
            if v is not None:
                params[k] = v
    else:
        import snsynth.mst.mst as module

        for k in ("max_model_size", "rounds", "degree", "max_cells"):
            if getattr(args, k) is not None:
                raise SystemExit(f"--{k.replace('_', '-')} applies to AIM only")
    synth = Synthesizer.create(
        args.method, epsilon=float(args.epsilon), delta=args.delta, verbose=args.verbose, **params
    )
    transformer = _domain_transformer(columns, domain)
    if args.max_iters is not None:
        params["max_iters"] = args.max_iters

    with contextlib.redirect_stdout(sys.stderr), _mirror_descent_iters(module, args.max_iters):
        t0 = time.perf_counter()
        synth.fit(data, transformer=transformer, preprocessor_eps=0.0)
        t1 = time.perf_counter()
        with _mbi_sampler(args.sampler):
            synth_df = synth.sample(len(data))
        t2 = time.perf_counter()

    if synth.epsilon != float(args.epsilon):  # the preprocessor would have subtracted its spend
        raise RuntimeError(f"SmartNoise spent budget on preprocessing: {synth.epsilon}")
    synth_df = pd.DataFrame(synth_df, columns=columns).astype(np.int64)
    synth_df.to_csv(args.out, index=False)
    return {
        "method": args.method,
        "epsilon": float(args.epsilon),
        "delta": args.delta,
        "rho": float(cdp_rho(float(args.epsilon), args.delta)),
        "seed": args.seed,
        "sampler": args.sampler,
        "fit_s": t1 - t0,
        "sample_s": t2 - t1,
        "total_s": t2 - t0,
        "rows": len(synth_df),
        "params": params,
        "versions": _versions(),
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--method", choices=("mst", "aim"), required=True)
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, default=1e-9)
    p.add_argument("--input", required=True, help="CSV of integer codes, one column per attribute")
    p.add_argument("--domain", required=True, help="JSON: column -> number of categories")
    p.add_argument("--out", required=True, help="where to write the synthetic codes (CSV)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-model-size", type=float, default=None, help="AIM, MB (default 80)")
    p.add_argument("--max-iters", type=int, default=None, help="mirror-descent iterations")
    p.add_argument("--rounds", type=int, default=None, help="AIM (default 16 * columns)")
    p.add_argument("--degree", type=int, default=None, help="AIM workload degree (default 2)")
    p.add_argument("--max-cells", type=int, default=None, help="AIM workload (default 10000)")
    p.add_argument("--verbose", action="store_true", help="SmartNoise's progress, on stderr")
    p.add_argument(
        "--sampler",
        choices=("shipped", "fixed"),
        default="shipped",
        help="mbi 1.1.0 record sampler as shipped, or with mbi 2.0's within-group shuffle",
    )
    args = p.parse_args(argv)
    print(json.dumps(run(args)), flush=True)


if __name__ == "__main__":
    main()
