"""Differentially private synthetic microdata from noisy marginals: MST and AIM.

Seed 001 (Kifer & Gehrke 2006) publishes anonymized marginals and lets the analyst rebuild
the table by maximum entropy (:mod:`privlab.publish.marginals`).  Its provable successor
measures marginals with Gaussian noise, fits a graphical model to them with private-pgm and
draws records from it:

* **MST** (McKenna, Miklau & Sheldon, "Winning the NIST Contest: A scalable and general
  approach to differentially private synthetic data", JPC 2021; winner of the NIST 2018
  challenge): a third of the budget measures every 1-way marginal, a third chooses a maximum
  spanning tree of attribute pairs with the exponential mechanism (the weight of a pair is
  how badly the 1-way model explains its 2-way marginal, L1), a third measures the chosen
  2-way marginals;
* **AIM** (McKenna, Mullins, Sheldon & Miklau, "AIM: An Adaptive and Iterative Mechanism for
  Differentially Private Synthetic Data", VLDB 2022, Algorithm 2): after the 1-way marginals,
  rounds of (exponential mechanism: the workload marginal the current model explains worst,
  among those that keep the model under ``max_model_size`` MB; Gaussian measurement of it;
  re-fit), the noise halved when a measurement stops teaching the model anything, until the
  budget is spent.

The inference is private-pgm's (``mbi``, McKenna, Sheldon & Miklau 2019: mirror descent over
the marginal polytope of a graphical model), called as it is: privlab does not
re-implement it (``pip install privlab[synth]``).  What privlab adds:

* **privacy from the mechanisms**: every count is measured by the exact discrete Gaussian
  (Canonne, Kamath & Steinke 2020; :class:`~privlab.dp.mechanisms.DiscreteGaussian`, L2
  sensitivity 1 under adding or removing one record) and every choice by the exponential
  mechanism charged ``epsilon^2 / 8`` (bounded range: Cesar & Rogers 2021, Lemma 3.2), both
  through a :class:`~privlab.dp.accountant.ZCDPAccountant` whose budget is the largest rho
  that is (epsilon, delta)-DP by CKS 2020 Corollary 13 (tighter than the Bun-Steinke bound
  the papers' code uses, so the same (epsilon, delta) buys slightly less noise).  The
  release states the spent rho and its (epsilon, delta) read off the ledger, never asserted;
* **public domains** (:mod:`privlab.publish.synthetic_core`): declared categorical domains,
  numeric columns binned on public bounds; a domain read from the data is refused unless
  accepted, with a warning;
* **replayable draws**: the noise and the records come from privlab's salted generator, so
  custody replays a release (private-pgm's sampler uses NumPy's global generator);
* a :class:`SyntheticRelease`: the synthetic rows in ``synthetic.csv``; ``release.json``
  states the guarantee, the measured cliques and their noise; the custody holds the seed
  and the workload error against the real data (measured on the input, so never
  published).

Where the papers' code differs: MST's reference code measures the 2-way marginals on the
compressed domain and undoes the compression by a uniform draw among the merged values, as
here.  AIM's reference charges ``0.5 / sigma^2`` per Gaussian measurement of sensitivity 1;
the discrete Gaussian's cost is the same ``1 / (2 sigma^2)`` with ``sigma^2`` rounded up onto
the exact sampler's grid (a relative 2^-46 at most).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from privlab._registry import user_dir
from privlab._rng import RngLike, SeedRecord, publication_rng
from privlab.data.frames import as_table
from privlab.data.schema import Attribute, Role, Schema
from privlab.data.table import Table
from privlab.errors import MissingDependencyError, ParameterError, SchemaError
from privlab.publish.synthetic_core import (
    DEFAULT_BINS,
    Coding,
    ModelMarginals,
    coding,
    sample_model,
)
from privlab.release.base import Custody, PublishedTable, Release, ReleaseError

#: The methods, as ``release.json`` names them.
SYNTHESIZERS = {
    "mst": "MST (McKenna, Miklau & Sheldon 2021)",
    "aim": "AIM (McKenna et al. 2022)",
}
#: Mirror-descent iterations of private-pgm's inference (MST's reference: 10,000 for the
#: final model; AIM's: 1,000 a round).
MST_ITERS = 5000
AIM_ITERS = 1000
#: AIM's largest model (MB of the junction tree's cliques, the paper's default 80).
MAX_MODEL_SIZE = 80.0
#: The largest marginal AIM's workload takes (cells; the reference's ``max_cells``).
MAX_CELLS = 10_000
DEFAULT_DELTA = 1e-9

_INSTALL = "pip install 'privlab[synth]' (private-pgm's mbi and JAX)"


def import_mbi() -> Any:
    """private-pgm's ``mbi`` module (its import-time notes silenced), or a one-line error
    saying how to install it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            import mbi
    except ImportError as e:
        missing = (getattr(e, "name", None) or "mbi").split(".")[0]
        if missing == "mbi":
            raise MissingDependencyError(
                f"private-pgm (mbi) is not installed: {_INSTALL}"
            ) from None
        raise MissingDependencyError(
            f"private-pgm (mbi) needs {missing}, which is not installed: {_INSTALL}"
        ) from None
    _jax_cache()
    return mbi


#: privlab's cache directory (``$PRIVLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/privlab``, else
#: ``~/.cache/privlab``); JAX's compiled programs are kept in its ``jax`` folder
CACHE_ENV = "PRIVLAB_CACHE_DIR"
#: the JAX cache's size, past which its least recently used programs go (an unseeded fit
#: adds about 1 MB of programs that hold its own noisy measurements, which no later fit
#: reuses)
CACHE_MAX_BYTES = 256 * 2**20


def cache_dir() -> Path:
    """The directory privlab keeps its caches in (never data: compiled programs only)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    return user_dir("cache")


@functools.cache
def _jax_cache() -> None:
    """Keep JAX's compiled programs on disk, so that a fit does not compile again what an
    earlier one (in this process or another) compiled: private-pgm's mirror descent
    compiles about 250 small programs per fit, 16 of MST's 25 s on Adult.  JAX's own
    threshold (programs that took 1 s to compile) would keep none of them, so every
    program is kept.  A cache directory the user gave JAX (``JAX_COMPILATION_CACHE_DIR``)
    is left as it is.  The programs hold the model's shapes and the noisy measurements
    (compiled in as constants), which the DP guarantee already covers, never a record."""
    import jax

    if jax.config.jax_compilation_cache_dir is None:
        jax.config.update("jax_compilation_cache_dir", str(cache_dir() / "jax"))
        jax.config.update("jax_compilation_cache_max_size", CACHE_MAX_BYTES)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


@contextlib.contextmanager
def _float64() -> Iterator[None]:
    """JAX in 64-bit floats inside the block (private-pgm's estimates stall in float32 on
    large tables), the caller's setting restored after."""
    import jax

    enable = getattr(jax, "enable_x64", None)
    if enable is None:  # JAX before 0.8 has it under experimental
        from jax.experimental import enable_x64 as enable
    with enable(True):
        yield


# -- the release ------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class SyntheticRelease(Release):
    """Synthetic records drawn from a model fitted to differentially private marginals.

    Attributes
    ----------
    table
        The synthetic rows (the input's roles kept: quasi-identifiers, sensitive, kept).
    synthesizer
        ``"mst"`` or ``"aim"``.
    params
        The public parameters: epsilon, delta, the rho spent and its conversion, bins and
        bounds, the measured cliques with their noise, the inference's iterations.
    custody
        The seed and what was measured on the input (the workload error).
    """

    table: Table
    synthesizer: str
    params: dict[str, Any] = field(default_factory=dict)
    custody: Custody | None = field(default=None, compare=False)

    method: ClassVar[str] = "dp-synthetic"

    def __post_init__(self) -> None:
        if self.synthesizer not in SYNTHESIZERS:
            raise ReleaseError(f"unknown synthesizer {self.synthesizer!r}")

    def published(self) -> dict[str, PublishedTable]:
        return {"synthetic": PublishedTable(self.table)}

    def parameters(self) -> dict[str, Any]:
        return {"synthesizer": self.synthesizer, **self.params}

    def metadata(self) -> dict[str, Any]:
        return {"what": SYNTHESIZERS[self.synthesizer]}

    def summary(self) -> dict[str, Any]:
        return {
            "rows": self.n_rows,
            "synthesizer": self.synthesizer,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "columns": list(self.table.names),
        }

    def _keeps_full_domain(self, attribute: Attribute) -> bool:
        # a declared categorical domain is public and the model's; numeric values are drawn
        return attribute.declared and not attribute.numeric

    def registry_entry(self) -> tuple[str, float | None]:
        return "dp", self.epsilon

    @classmethod
    def _from_published(
        cls, meta: dict[str, Any], tables: dict[str, PublishedTable]
    ) -> SyntheticRelease:
        params = dict(meta["parameters"])
        synthesizer = params.pop("synthesizer", None)
        return cls(tables["synthetic"].table, synthesizer, params=params)

    @property
    def epsilon(self) -> float:
        """The epsilon of the (epsilon, delta)-DP guarantee, from the rho spent."""
        return float(self.params["epsilon"])

    @property
    def delta(self) -> float:
        return float(self.params["delta"])

    @property
    def rho(self) -> float:
        """The rho-zCDP spent (the sum of the ledger)."""
        return float(self.params["rho"])

    def workload_error(self) -> dict[str, Any] | None:
        """The workload error measured on the input (custody), or None without custody."""
        if self.custody is None or not self.custody.input_measures:
            return None
        return self.custody.input_measures.get("workload_error")


# -- inputs -----------------------------------------------------------------------------------
def _columns(table: Table, columns: Sequence[str] | None) -> list[str]:
    if columns is None:
        roles = [a.name for a in table.schema.attributes if a.role != Role.OTHER]
        columns = roles or list(table.names)
    columns = list(columns)
    if len(columns) < 2:
        raise ParameterError("a synthetic table needs at least 2 columns")
    table.schema.indices(columns)  # SchemaError names an unknown column
    dup = [c for c in columns if columns.count(c) > 1]
    if dup:
        raise SchemaError(f"column {dup[0]!r} is listed twice")
    return columns


@dataclass
class _Fit:
    """What a synthesizer hands to :func:`_release`."""

    model: Any
    coding: Coding
    compressed: dict[str, np.ndarray]  # column -> original code of each compressed code
    cliques: list[dict[str, Any]]
    accountant: Any
    iters: int
    extra: dict[str, Any] = field(default_factory=dict)
    noise: list[dict[str, Any]] = field(default_factory=list)  # the noise added (custody)


def _budget(epsilon: float, delta: float):
    from privlab.dp.accountant import ZCDPAccountant
    from privlab.dp.mechanisms import check_epsilon

    eps = check_epsilon(epsilon)
    if math.isinf(eps):
        raise ParameterError("a synthetic table needs a finite epsilon")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise ParameterError(f"delta must be in (0, 1), got {delta!r}")
    return ZCDPAccountant.from_epsilon_delta(eps, float(delta))


def _noisy(mech: Any, x: np.ndarray, gen, accountant, label: str, noise: list) -> np.ndarray:
    """``x`` through ``mech``; the noise actually added is summarized into ``noise`` (the
    custody's: it is a difference from the true counts)."""
    x = np.asarray(x).astype(np.int64)
    y = mech.randomize(x, rng=gen, accountant=accountant, label=label)
    d = (y - x).astype(np.float64)
    noise.append({"marginal": label, "cells": int(x.size), "sigma": mech.sigma,
                  "rms": float(np.sqrt(np.mean(d * d))) if d.size else 0.0,
                  "max_abs": float(np.abs(d).max()) if d.size else 0.0})  # fmt: skip
    return y.astype(np.float64)


def _measure(
    x: np.ndarray, rho: float, gen: np.random.Generator, accountant: Any, label: str,
    noise: list,
) -> tuple[np.ndarray, float]:  # fmt: skip
    """The counts ``x`` with discrete Gaussian noise of cost ``rho``; the noisy counts and
    the noise's sigma."""
    from privlab.dp.mechanisms import DiscreteGaussian

    mech = DiscreteGaussian(rho=rho, sensitivity=1.0)
    return _noisy(mech, x, gen, accountant, label, noise), mech.sigma


def _measure_sigma(
    x: np.ndarray, sigma: float, gen: np.random.Generator, accountant: Any, label: str,
    noise: list,
) -> np.ndarray:  # fmt: skip
    from privlab.dp.mechanisms import DiscreteGaussian

    mech = DiscreteGaussian.from_sigma(sigma, sensitivity=1.0)
    return _noisy(mech, x, gen, accountant, label, noise)


def _counts(codes: np.ndarray, index: dict[str, int], shape: dict[str, int], clique) -> np.ndarray:
    """The marginal counts of ``clique`` (first attribute slowest), flattened."""
    cols = [index[a] for a in clique]
    dims = [shape[a] for a in clique]
    if len(cols) == 1:
        return np.bincount(codes[:, cols[0]], minlength=dims[0])
    flat = np.ravel_multi_index(tuple(codes[:, c] for c in cols), dims)
    return np.bincount(flat, minlength=int(np.prod(dims)))


def _select_exponential(scores: np.ndarray, epsilon: float, sensitivity: float, gen, accountant,
                        label: str) -> int:  # fmt: skip
    from privlab.dp.mechanisms import Exponential

    return Exponential(epsilon, sensitivity).select(scores, rng=gen, accountant=accountant,
                                                    label=label)  # fmt: skip


def _estimate(mbi: Any, domain: Any, measurements: list, iters: int, warm: Any = None, *,
              clear_all: bool = True):  # fmt: skip
    """private-pgm's mirror descent.  Its fused program (compiled per set of measured
    cliques) is dropped after each fit: each of AIM's rounds fits a model of another shape,
    and kept they filled the memory within a few hundred rounds on Adult.  With
    ``clear_all`` every JAX cache goes; without, the small per-shape programs of the eager
    steps stay for the next round (compiling them again was half of a round's time)."""
    import jax

    with _float64():
        model = mbi.estimation.MirrorDescent().estimate(
            domain, measurements, iters=iters, warm_start=warm
        )
    if clear_all:
        jax.clear_caches()
    else:
        mbi.estimation.Estimator._multi_step.clear_cache()
    return model


def _pooled(mbi: Any, measured: dict[tuple[str, ...], list[tuple[np.ndarray, float]]]) -> list:
    """One measurement per clique: repeated noisy measurements of a marginal pooled by
    inverse variance.  private-pgm's loss is sum_i ||mu - y_i||^2 / (2 sigma_i^2), which
    equals ||mu - y||^2 / (2 sigma^2) plus a constant with y the precision-weighted mean and
    1/sigma^2 the summed precision: the same gradients, step size and estimated total, so
    the same fit; and a round that measures a clique again leaves the loss's structure, so
    its compiled program, unchanged."""
    out = []
    for cl, ys in measured.items():
        if len(ys) == 1:
            y, sigma = ys[0]
        else:
            w = np.array([1 / s**2 for _, s in ys])
            y = sum(wi * yi for wi, (yi, _) in zip(w, ys, strict=True)) / w.sum()
            sigma = float(1 / math.sqrt(w.sum()))
        out.append(mbi.LinearMeasurement(y, cl, stddev=sigma))
    return out


# -- MST --------------------------------------------------------------------------------------
def _compress(mbi, codes, names, sizes, ones, gen_unused=None):
    """MST's domain compression: the values whose noisy 1-way count is under 3 sigma merge
    into one code.  Returns the new codes, sizes, the re-expressed 1-way measurements and,
    per column, the original codes of each new code (the merged bucket last)."""
    new_codes = codes.copy()
    new_sizes, measurements, back = {}, [], {}
    for j, c in enumerate(names):
        y, sigma = ones[c]
        keep = y >= 3 * sigma
        if keep.all():
            new_sizes[c] = sizes[c]
            measurements.append(mbi.LinearMeasurement(y, (c,), stddev=sigma))
            back[c] = np.arange(sizes[c])
            continue
        kept = np.flatnonzero(keep)
        mapping = np.full(sizes[c], kept.size, dtype=np.int64)
        mapping[kept] = np.arange(kept.size)
        new_codes[:, j] = mapping[codes[:, j]]
        new_sizes[c] = kept.size + 1
        m = mbi.LinearMeasurement(y, (c,), stddev=sigma).compress(
            {c: mapping}, mbi.Domain([c], [sizes[c]])
        )
        measurements.append(m)
        back[c] = np.concatenate([kept, [-1]])  # -1: a draw among the merged values
    return new_codes, new_sizes, measurements, back


def _spanning_tree(weights: dict, names: list[str], rho: float, gen, accountant) -> list:
    """MST's private maximum spanning tree: ``len(names) - 1`` exponential-mechanism picks of
    the heaviest edge joining two components, each ``epsilon = sqrt(8 rho / (r - 1))``."""
    from scipy.cluster.hierarchy import DisjointSet

    ds = DisjointSet(names)
    r = len(names)
    eps = math.sqrt(8.0 * rho / (r - 1))
    edges = list(weights)
    chosen = []
    for i in range(r - 1):
        edges = [e for e in edges if not ds.connected(*e)]
        w = np.array([weights[e] for e in edges])
        k = _select_exponential(w, eps, 1.0, gen, accountant, f"tree edge {i + 1}")
        chosen.append(edges[k])
        ds.merge(*edges[k])
    return chosen


def _mst_fit(mbi, codes, coding_: Coding, accountant, gen, iters: int, progress: bool) -> _Fit:
    from privlab._progress import track

    names = list(coding_.names)
    sizes = dict(zip(names, coding_.shape, strict=True))
    index = {c: j for j, c in enumerate(names)}
    rho = accountant.rho
    steps = iter(track(range(4), description="MST", total=4, enabled=progress))
    next(steps, None)
    ones = {}
    noise: list[dict[str, Any]] = []
    cliques: list[dict[str, Any]] = []
    for c in names:  # a third: every 1-way marginal
        y, sigma = _measure(_counts(codes, index, sizes, (c,)), rho / 3 / len(names), gen,
                            accountant, f"1-way {c}", noise)  # fmt: skip
        ones[c] = (y, sigma)
        cliques.append({"clique": [c], "sigma": sigma})
    codes2, sizes2, log1, back = _compress(mbi, codes, names, sizes, ones)
    domain = mbi.Domain(names, [sizes2[c] for c in names])
    next(steps, None)
    est = _estimate(mbi, domain, log1, min(iters, 2500))
    # the 1-way model is a product of its marginals: each pair's estimate is their outer
    # product (exact, and without a variable elimination per pair)
    total = float(est.total)
    margins = ModelMarginals(est)
    one = {c: margins.project((c,)) for c in names}
    weights = {}
    for a, b in itertools.combinations(names, 2):  # a third: the tree
        xhat = np.outer(one[a], one[b]).ravel() / total
        x = _counts(codes2, index, sizes2, (a, b))
        weights[a, b] = float(np.abs(x - xhat).sum())
    tree = _spanning_tree(weights, names, rho / 3, gen, accountant)
    next(steps, None)
    log2 = []
    for a, b in tree:  # a third: the tree's 2-way marginals
        y, sigma = _measure(_counts(codes2, index, sizes2, (a, b)), rho / 3 / len(tree), gen,
                            accountant, f"2-way {a}, {b}", noise)  # fmt: skip
        log2.append(mbi.LinearMeasurement(y, (a, b), stddev=sigma))
        cliques.append({"clique": [a, b], "sigma": sigma})
    model = _estimate(mbi, domain, log1 + log2, iters)
    next(steps, None)
    return _Fit(model, coding_, back, cliques, accountant, iters, noise=noise)


# -- AIM --------------------------------------------------------------------------------------
def _downward_closure(workload: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    out = set()
    for cl in workload:
        for r in range(1, len(cl) + 1):
            out.update(itertools.combinations(cl, r))
    return sorted(out, key=len)


def _aim_fit(mbi, codes, coding_: Coding, accountant, gen, *, iters: int, degree: int,
             max_model_size: float, max_cells: int, rounds: int | None,
             progress: bool) -> _Fit:  # fmt: skip
    from mbi import junction_tree

    from privlab._progress import track

    names = list(coding_.names)
    sizes = dict(zip(names, coding_.shape, strict=True))
    index = {c: j for j, c in enumerate(names)}
    domain = mbi.Domain(names, [sizes[c] for c in names])
    workload = [cl for cl in itertools.combinations(names, degree)
                if domain.size(cl) <= max_cells]  # fmt: skip
    if not workload:
        raise ParameterError(
            f"no {degree}-way marginal has at most {max_cells} cells: lower the bins or degree"
        )
    # a candidate's weight: how many workload attributes it shares (AIM, Section 4.2)
    candidates = {cl: float(sum(len(set(cl) & set(w)) for w in workload))
                  for cl in _downward_closure(workload)}  # fmt: skip
    answers = {cl: _counts(codes, index, sizes, cl).astype(np.float64) for cl in candidates}
    rho = accountant.rho
    t_max = rounds or 16 * len(names)
    sigma = math.sqrt(t_max / (2 * 0.9 * rho))
    eps = math.sqrt(8 * 0.1 * rho / t_max)
    measured: dict[tuple[str, ...], list[tuple[np.ndarray, float]]] = {}
    noise: list[dict[str, Any]] = []
    cliques: list[dict[str, Any]] = []
    for c in names:
        y = _measure_sigma(answers[(c,)], sigma, gen, accountant, f"1-way {c}", noise)
        measured[(c,)] = [(y, sigma)]
        cliques.append({"clique": [c], "sigma": sigma})
    model = _estimate(mbi, domain, _pooled(mbi, measured), iters, clear_all=False)
    margins = ModelMarginals(model)  # the model's marginals, built once per model
    bar = track(itertools.count(), description="AIM rounds", total=None, enabled=progress)
    halved = 0
    for t in bar:
        remaining = accountant.remaining
        last = remaining < 2 * (0.5 / sigma**2 + eps**2 / 8)
        if last:  # spend what is left on one final round
            sigma = math.sqrt(1 / (2 * 0.9 * remaining))
            eps = math.sqrt(8 * 0.1 * remaining)
        spent = accountant.spent + 0.5 / sigma**2 + eps**2 / 8
        size_limit = max_model_size * spent / rho
        free = set(_downward_closure([tuple(c) for c in model.cliques]))
        small = [cl for cl in candidates
                 if cl in free or junction_tree.hypothetical_model_size(
                     domain, [*model.cliques, cl]) <= size_limit]  # fmt: skip
        scores = []
        for cl in small:  # AIM's quality score (Algorithm 2, line 8)
            xhat = margins.project(cl).ravel()
            bias = math.sqrt(2 / math.pi) * sigma * domain.size(cl)
            scores.append(candidates[cl] * (np.abs(answers[cl] - xhat).sum() - bias))
        sens = max(candidates[cl] for cl in small)
        cl = small[_select_exponential(np.array(scores), eps, sens, gen, accountant,
                                       f"round {t + 1} select")]  # fmt: skip
        y = _measure_sigma(answers[cl], sigma, gen, accountant,
                           f"round {t + 1} {', '.join(cl)}", noise)  # fmt: skip
        measured.setdefault(cl, []).append((y, sigma))
        cliques.append({"clique": list(cl), "sigma": sigma})
        before = margins.project(cl).ravel()
        model = _estimate(mbi, domain, _pooled(mbi, measured), iters, warm=model,
                          clear_all=last or (t + 1) % 25 == 0)  # fmt: skip
        margins = ModelMarginals(model)  # for this check and the next round's scores
        after = margins.project(cl).ravel()
        if not last and np.abs(after - before).sum() <= sigma * math.sqrt(2 / math.pi) * (
            domain.size(cl)
        ):  # the measurement taught little: finer noise from now on
            sigma /= 2
            eps *= 2
            halved += 1
        if last:
            break
    back = {c: np.arange(sizes[c]) for c in names}
    extra = {"rounds": len(cliques) - len(names), "noise_halved": halved, "degree": degree,
             "max_model_size": max_model_size, "workload_marginals": len(workload)}  # fmt: skip
    return _Fit(model, coding_, back, cliques, accountant, iters, extra, noise=noise)


# -- the release ------------------------------------------------------------------------------
def _release(table: Table, columns: list[str], fit: _Fit, synthesizer: str, delta: float,
             rows: int | None, gen: np.random.Generator, record: SeedRecord, codes: np.ndarray,
             bins: int) -> SyntheticRelease:  # fmt: skip
    from privlab.metrics.workload import workload_error

    n = int(rows) if rows is not None else max(1, round(float(fit.model.total)))
    drawn = sample_model(fit.model, n, gen)
    names = list(fit.coding.names)
    out_codes = np.empty((n, len(names)), dtype=np.int64)
    for j, c in enumerate(names):
        back = fit.compressed[c]
        v = back[drawn[c]]
        merged = v < 0
        if merged.any():  # MST's merged bucket: a value drawn among the merged ones
            pool = np.setdiff1d(np.arange(fit.coding.shape[j]), back[back >= 0])
            v[merged] = pool[gen.integers(0, pool.size, int(merged.sum()))]
        out_codes[:, j] = v
    attrs = []
    published = np.empty((n, len(names)), dtype=np.int32)
    for j, cc in enumerate(fit.coding.columns):
        src = table.schema[cc.name]
        role = src.role if src.role != Role.OTHER else Role.INSENSITIVE
        if cc.numeric:
            values = cc.decode(out_codes[:, j], gen)
            domain, inv = np.unique(values, return_inverse=True)
            vals = tuple(int(v) for v in domain) if cc.integer else tuple(float(v) for v in domain)
            attrs.append(Attribute(cc.name, vals, role=role, numeric=True, declared=False))
            published[:, j] = inv
        else:
            attrs.append(Attribute(cc.name, src.domain, role=role, numeric=False,
                                   declared=src.declared))  # fmt: skip
            published[:, j] = out_codes[:, j]
    out = Table(published, Schema(tuple(attrs)))
    acc = fit.accountant
    conv = acc.to_epsilon_delta(delta)
    params = {
        "epsilon": conv.epsilon,
        "delta": delta,
        "rho": acc.spent,
        "rho_budget": acc.rho,
        "conversion": conv.source,
        "rows": n,
        "bins": bins,
        "columns": fit.coding.to_dict(),
        "measurements": fit.cliques,
        "iterations": fit.iters,
        **fit.extra,
    }
    error = workload_error(codes, out_codes, fit.coding.shape, names=names)
    custody = Custody(seed=record, input_sha256=table.fingerprint(),
                      input_measures={"workload_error": error.to_dict(),
                                      "noise": fit.noise})  # fmt: skip
    return SyntheticRelease(out, synthesizer, params=params, custody=custody)


def _synthesize(data, synthesizer, *, epsilon, delta, columns, bounds, bins, domain_from_data,
                rows, rng, fit_kwargs) -> SyntheticRelease:  # fmt: skip
    from privlab._params import check_int

    mbi = import_mbi()
    table = as_table(data)
    columns = _columns(table, columns)
    if rows is not None:
        rows = check_int("rows", rows, low=1)
    accountant = _budget(epsilon, delta)
    coding_ = coding(table, columns, bounds=bounds, bins=bins, domain_from_data=domain_from_data)
    codes = coding_.encode(table)
    gen, record = publication_rng(rng)
    if synthesizer == "mst":
        fit = _mst_fit(mbi, codes, coding_, accountant, gen, **fit_kwargs)
    else:
        fit = _aim_fit(mbi, codes, coding_, accountant, gen, **fit_kwargs)
    return _release(table, columns, fit, synthesizer, float(delta), rows, gen, record, codes,
                    bins)  # fmt: skip


def mst(
    data: Any,
    *,
    epsilon: float,
    delta: float = DEFAULT_DELTA,
    columns: Sequence[str] | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    bins: int = DEFAULT_BINS,
    domain_from_data: bool = False,
    rows: int | None = None,
    iters: int = MST_ITERS,
    rng: RngLike | SeedRecord = None,
    progress: bool = False,
) -> SyntheticRelease:
    """A synthetic table by MST, (epsilon, delta)-differentially private (see the module
    docstring; McKenna, Miklau & Sheldon 2021, Algorithm 1).

    Parameters
    ----------
    data
        A :class:`~privlab.data.table.Table` or a pandas / polars / Arrow frame.
    epsilon, delta
        The guarantee (under adding or removing one record).
    columns
        The columns to synthesize (default: those with a role, else all); each keeps its role.
    bounds
        Public bounds of numeric columns (``{column: (lo, hi)}``); a numeric column without
        them (and without a declared domain) is refused unless ``domain_from_data``.
    bins
        Equal-width bins of a numeric column.
    domain_from_data
        Accept domains and bounds read from the data (a :class:`PrivacyWarning` says so).
    rows
        Rows to draw (default: the model's estimate of the input's size, itself private).
    iters
        Mirror-descent iterations of the final fit.
    rng
        None (OS entropy), an int seed (salted; custody replays it), or an experiment's own
        generator (see :func:`privlab._rng.publication_rng`).
    progress
        Show a progress bar on a terminal.
    """
    from privlab._params import check_int

    iters = check_int("iters", iters, low=1)
    return _synthesize(data, "mst", epsilon=epsilon, delta=delta, columns=columns,
                       bounds=bounds, bins=bins, domain_from_data=domain_from_data, rows=rows,
                       rng=rng, fit_kwargs={"iters": iters, "progress": progress})  # fmt: skip


def aim(
    data: Any,
    *,
    epsilon: float,
    delta: float = DEFAULT_DELTA,
    columns: Sequence[str] | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    bins: int = DEFAULT_BINS,
    domain_from_data: bool = False,
    rows: int | None = None,
    degree: int = 2,
    max_model_size: float = MAX_MODEL_SIZE,
    max_cells: int = MAX_CELLS,
    rounds: int | None = None,
    iters: int = AIM_ITERS,
    rng: RngLike | SeedRecord = None,
    progress: bool = False,
) -> SyntheticRelease:
    """A synthetic table by AIM, (epsilon, delta)-differentially private (see the module
    docstring; McKenna et al. 2022, Algorithm 2).  The parameters not listed here are
    :func:`mst`'s.

    Parameters
    ----------
    degree
        The workload: every ``degree``-way marginal of at most ``max_cells`` cells, each of
        weight 1 (the paper's default workload is all 3-way marginals of its benchmarks; its
        code's default, and SmartNoise's, is 2-way).
    max_model_size
        The largest model in MB (junction-tree cells x 8 bytes), reached as the budget is
        spent (the paper's 80; smaller runs faster and coarser).
    rounds
        The number of rounds the budget is first split into (default ``16 x columns``);
        rounds end when the budget is spent.
    iters
        Mirror-descent iterations of each re-fit (warm-started).
    """
    from privlab._params import check_int

    iters = check_int("iters", iters, low=1)
    degree = check_int("degree", degree, low=1)
    max_cells = check_int("max_cells", max_cells, low=1)
    if rounds is not None:
        rounds = check_int("rounds", rounds, low=1)
    size = float(max_model_size)
    if not (math.isfinite(size) and size > 0):
        raise ParameterError(f"max_model_size must be a positive number of MB, got {size!r}")
    kwargs = {"iters": iters, "degree": degree, "max_model_size": size, "max_cells": max_cells,
              "rounds": rounds, "progress": progress}  # fmt: skip
    return _synthesize(data, "aim", epsilon=epsilon, delta=delta, columns=columns,
                       bounds=bounds, bins=bins, domain_from_data=domain_from_data, rows=rows,
                       rng=rng, fit_kwargs=kwargs)  # fmt: skip


__all__ = [
    "SYNTHESIZERS",
    "SyntheticRelease",
    "aim",
    "import_mbi",
    "mst",
]
