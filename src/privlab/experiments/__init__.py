"""Reproductions of the source documents' tables and figures, registered by id.

Each module in this package registers one or more experiments with :func:`register`::

    @register("definetti-table7", title="deFinetti attack on Adult", source="Kifer 2009, Table 7")
    def run(ctx: Context) -> ExperimentResult:
        ...
        return ExperimentResult(experiment=ctx.id, rows=rows, paper=paper_rows, notes="...")

Rows hold privlab's computed numbers; the paper's numbers for the same setting go in
``paper`` (rows of the same shape) or in fields prefixed ``paper_``.  :func:`run_experiment`
discovers every module here, runs one experiment, writes ``OUT/result.json`` (plus any plots
the experiment saved into ``ctx.out``) atomically, and returns the result.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privlab._io import atomic_dir, write_json
from privlab._rng import spawn
from privlab.errors import ExperimentWarning, PrivlabError


@dataclass(frozen=True)
class Context:
    """What an experiment gets: its id, the quick flag, a seeded generator, an output dir."""

    id: str
    quick: bool
    seed: int
    out: Path
    progress: bool = True

    @property
    def rng(self) -> np.random.Generator:
        """A fresh generator for this experiment's seed (each call restarts the stream)."""
        return np.random.default_rng(self.seed)

    def child_rngs(self, n: int) -> list[np.random.Generator]:
        """``n`` independent generators spawned from the experiment's seed."""
        return spawn(self.seed, n)


@dataclass(frozen=True)
class ExperimentResult:
    """A reproduction's outcome: computed rows, the paper's rows, notes, plots."""

    experiment: str
    rows: list[dict[str, Any]]
    paper: list[dict[str, Any]] = field(default_factory=list)
    notes: str = ""
    plots: tuple[str, ...] = ()
    seconds: float = 0.0
    quick: bool = False
    seed: int | None = None
    #: The fields ``privlab reproduce`` prints (all when empty); result.json keeps every one.
    display: tuple[str, ...] = ()

    def shown_rows(self) -> list[dict[str, Any]]:
        """The rows as ``privlab reproduce`` prints them (the :attr:`display` fields)."""
        if not self.display:
            return self.rows
        return [{k: r[k] for k in self.display if k in r} for r in self.rows]

    def to_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "rows": self.rows,
            "paper": self.paper,
            "notes": self.notes,
            "plots": list(self.plots),
            "seconds": self.seconds,
            "quick": self.quick,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class Experiment:
    id: str
    title: str
    source: str
    func: Callable[[Context], ExperimentResult]


REGISTRY: dict[str, Experiment] = {}


def register(
    experiment_id: str, *, title: str, source: str
) -> Callable[[Callable[[Context], ExperimentResult]], Callable[[Context], ExperimentResult]]:
    """Decorator registering ``func(ctx) -> ExperimentResult`` under ``experiment_id``."""

    def deco(func: Callable[[Context], ExperimentResult]) -> Callable[[Context], ExperimentResult]:
        if experiment_id in REGISTRY and REGISTRY[experiment_id].func is not func:
            raise RuntimeError(f"experiment id registered twice: {experiment_id}")
        REGISTRY[experiment_id] = Experiment(experiment_id, title, source, func)
        return func

    return deco


def side_by_side(
    rows: list[dict[str, Any]], paper: list[dict[str, Any]]
) -> list[dict[str, Any]] | None:
    """privlab's rows with the paper's numbers beside them, for printing.

    A field both row sets carry is a *key* when every value the paper gives it also occurs
    among privlab's values (``group_size``, ``run``, ``folds``, ``epsilon``, ...; never a
    fractional number, which is a measurement even where privlab matches it), or when it
    holds labels some of which privlab's rows share (a paper row of its own, such as Table
    7's ``at-risk``, then matches nothing); the other
    shared fields are measurements, given as ``(privlab, paper)`` pairs.  A privlab row is shown
    when a paper row agrees with it on every key that paper row carries.  Returns None when
    nothing can be matched (the caller then prints the paper's rows on their own).
    """
    if not rows or not paper:
        return None
    shared = [f for f in dict.fromkeys(f for r in rows for f in r) if any(f in p for p in paper)]

    def _values(rs: list[dict[str, Any]], f: str) -> set:
        return {repr(r[f]) for r in rs if f in r}

    def _is_key(f: str) -> bool:
        given = [p[f] for p in paper if f in p]
        if any(isinstance(v, float) and not float(v).is_integer() for v in given):
            return False  # a measurement (0.5, 100/101) even when privlab matches it exactly
        mine, theirs = _values(rows, f), _values(paper, f)
        if theirs <= mine:
            return True
        # a label column (``run``) stays a key when the paper has an extra row of its own
        labels = all(isinstance(p[f], str) for p in paper if f in p)
        return labels and bool(theirs & mine)

    keys = [f for f in shared if _is_key(f)]
    measures = [f for f in shared if f not in keys]
    if not keys or not measures:
        return None
    out = []
    for r in rows:
        match = [p for p in paper if all(repr(p[k]) == repr(r.get(k)) for k in keys if k in p)]
        if not match:
            continue
        p = match[0]
        cells = {k: r[k] for k in keys if r.get(k) is not None}
        for f in measures:
            if f in r and f in p:
                cells[f] = (r[f], p[f])
        if any(f in cells for f in measures):
            out.append(cells)
    return out or None


def discover() -> dict[str, Experiment]:
    """Import every module of this package so that all experiments are registered."""
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    return dict(sorted(REGISTRY.items()))


def catalogue() -> list[dict[str, str]]:
    """Every experiment's id, title and source, without importing any experiment (their
    modules import the compiled kernels: listing them all took 2.4 s).  Read from
    ``_catalogue.py``, which ``tools/experiments_catalogue.py`` writes from the registry."""
    from privlab.experiments._catalogue import CATALOGUE

    return [{"id": i, "title": t, "source": s} for i, (_, t, s) in sorted(CATALOGUE.items())]


def _lookup(experiment_id: str) -> Experiment:
    """The experiment, importing its module only (every module when it is not catalogued)."""
    from privlab.experiments._catalogue import CATALOGUE

    if experiment_id in CATALOGUE:
        importlib.import_module(f"{__name__}.{CATALOGUE[experiment_id][0]}")
    if experiment_id not in REGISTRY:
        experiments = discover()
        if experiment_id not in experiments:
            raise PrivlabError(
                f"unknown experiment {experiment_id!r}; known: {', '.join(experiments) or 'none'}"
            )
    return REGISTRY[experiment_id]


def run_experiment(
    experiment_id: str,
    *,
    quick: bool = False,
    seed: int = 0,
    out: str | Path | None = None,
    force: bool = False,
    progress: bool = True,
) -> ExperimentResult:
    """Run a registered experiment and write ``OUT/result.json`` (default OUT: results/ID)."""
    exp = _lookup(experiment_id)
    out = Path(out) if out is not None else Path("results") / experiment_id
    with atomic_dir(out, force=force) as tmp:
        ctx = Context(id=experiment_id, quick=quick, seed=seed, out=tmp, progress=progress)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            # a reproduction draws from generators spawned from its seed on purpose: its
            # releases are experiments, never saved as publications
            warnings.simplefilter("ignore", ExperimentWarning)
            result = exp.func(ctx)
        seconds = time.perf_counter() - t0
        result = ExperimentResult(
            experiment=experiment_id,
            rows=result.rows,
            paper=result.paper,
            notes=result.notes,
            plots=result.plots,
            seconds=round(seconds, 3),
            quick=quick,
            seed=seed,
            display=result.display,
        )
        write_json(tmp / "result.json", result.to_dict())
    return result
