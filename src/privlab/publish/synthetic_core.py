"""The discrete domain DP synthesizers work on, and the records drawn from a fitted model.

MST and AIM (:mod:`privlab.publish.synthetic`) measure marginals of a table of small
integer codes.  This module makes that table from privlab's :class:`~privlab.data.table.Table`
and turns synthetic codes back into values, with nothing read from the private data unless
the caller accepts it:

* a **categorical** column keeps its codes; its domain must be *declared* (public,
  :attr:`~privlab.data.schema.Attribute.declared`), or it is refused unless
  ``domain_from_data`` (then a :class:`~privlab.errors.PrivacyWarning` says that the values
  present are not protected: a value only one record holds would appear in the domain);
* a **numeric** column is cut into ``bins`` equal-width bins over *public* bounds (given, or
  a bundled dataset's documented ones); a value outside them is clipped to the nearest end
  (the clipping is what makes one record's effect on a marginal a single count).  An
  integer-valued column whose range holds at most ``bins`` integers keeps one bin per
  integer.  A synthetic value is drawn uniformly inside its bin (an integer one among the
  bin's integers), so the published numbers carry no value of the input.

The sampler (:func:`sample_model`) draws records from a graphical model fitted by private-pgm
(``mbi``) from privlab's own generator, in the order of the model's junction tree: the first
attribute by its marginal, each next one from its conditional given the attributes already
drawn that share a clique with it (McKenna, Sheldon & Miklau 2019, Section 5, "generating
synthetic data").  Within each group of records with the same parents the uniforms are
stratified (one per ``1/m`` slice, in random order), so a group's counts are the model's
within one record: the randomized rounding of private-pgm's own ``synthetic_data``, whose
draws come from NumPy's global generator and could not be replayed from custody.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privlab.data.table import Table
from privlab.errors import ParameterError, PrivacyWarning, SchemaError

#: Bins of a numeric column unless told (AIM's and MST's experiments use 32 or fewer).
DEFAULT_BINS = 32


@dataclass(frozen=True)
class ColumnCoding:
    """How one column becomes codes: a categorical domain, or numeric bins.

    Attributes
    ----------
    name
        The column.
    values
        A categorical column's domain (code ``i`` is ``values[i]``); empty for numeric.
    edges
        A numeric column's bin edges (``len(edges) - 1`` bins; the last bin is closed).
    integer
        The numeric column holds integers (a synthetic value is then an integer).
    declared
        The domain or bounds are public (declared, given, or documented), not read from data.
    """

    name: str
    values: tuple[Any, ...] = ()
    edges: tuple[float, ...] = ()
    integer: bool = False
    declared: bool = True

    @property
    def numeric(self) -> bool:
        return bool(self.edges)

    @property
    def size(self) -> int:
        return len(self.edges) - 1 if self.numeric else len(self.values)

    def encode(self, table: Table) -> np.ndarray:
        """The column's codes (bins of a numeric column, values clipped to the bounds)."""
        codes = table.column(self.name)
        if not self.numeric:
            return codes.astype(np.int64)
        return self.encode_values(np.asarray(table.schema[self.name].domain)[codes])

    def encode_values(self, values: Any) -> np.ndarray:
        """Codes of raw values: a categorical value's index in :attr:`values` (-1 for a value
        outside it), a number's bin (clipped to the bounds)."""
        if not self.numeric:
            index = {v: i for i, v in enumerate(self.values)}
            return np.array([index.get(v, -1) for v in values], dtype=np.int64)
        x = np.asarray(values, dtype=np.float64)
        lo, hi = self.edges[0], self.edges[-1]
        x = np.clip(x, lo, hi)
        b = np.searchsorted(np.asarray(self.edges), x, side="right") - 1
        return np.clip(b, 0, self.size - 1).astype(np.int64)

    def decode(self, codes: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        """Values of ``codes``: a categorical column's values (an object array), a numeric
        column's drawn uniformly inside each bin."""
        codes = np.asarray(codes, dtype=np.int64)
        if not self.numeric:
            return np.asarray(self.values, dtype=object)[codes]
        e = np.asarray(self.edges)
        lo, hi = e[codes], e[codes + 1]
        if self.integer:
            first = np.ceil(lo)
            # a bin holds the integers in [lo, hi) (the last one [lo, hi])
            last = np.where(codes == self.size - 1, np.floor(hi), np.ceil(hi) - 1)
            last = np.maximum(last, first)
            return first + np.floor(gen.random(codes.size) * (last - first + 1))
        return lo + gen.random(codes.size) * (hi - lo)

    def to_dict(self) -> dict[str, Any]:
        if self.numeric:
            return {
                "kind": "numeric",
                "bounds": [self.edges[0], self.edges[-1]],
                "bins": self.size,
                "integer": self.integer,
                "declared": self.declared,
            }
        return {"kind": "categorical", "size": self.size, "declared": self.declared}


def _edges(lo: float, hi: float, bins: int, integer: bool) -> np.ndarray:
    """Equal-width bin edges, or one bin per integer where the range holds at most ``bins``
    integers of an integer column."""
    if integer and hi - lo + 1 <= bins:
        return np.concatenate([[lo], np.arange(lo, hi) + 0.5, [hi]])
    return np.linspace(lo, hi, bins + 1)


def coding_from_dict(
    name: str, spec: Mapping[str, Any], values: Sequence[Any] = ()
) -> ColumnCoding:
    """The :class:`ColumnCoding` that :meth:`ColumnCoding.to_dict` wrote (``values``: a
    categorical column's domain, which the release's schema holds)."""
    if spec.get("kind") == "numeric":
        lo, hi = (float(b) for b in spec["bounds"])
        edges = _edges(lo, hi, int(spec["bins"]), bool(spec["integer"]))
        return ColumnCoding(
            name,
            edges=tuple(float(e) for e in edges),
            integer=bool(spec["integer"]),
            declared=bool(spec["declared"]),
        )
    return ColumnCoding(name, values=tuple(values), declared=bool(spec.get("declared", True)))


def _integer_values(values: np.ndarray) -> bool:
    return (
        bool(values.size)
        and bool(np.all(np.isfinite(values)))
        and bool(np.all(values == np.round(values)))
    )


def column_coding(
    table: Table,
    name: str,
    *,
    bounds: tuple[float, float] | None,
    bins: int,
    domain_from_data: bool,
) -> ColumnCoding:
    """The coding of column ``name`` (see the module docstring); refused in one sentence when
    its domain or bounds would be read from the data without ``domain_from_data``."""
    attr = table.schema[name]
    if not attr.numeric:
        if not attr.declared and not domain_from_data:
            raise ParameterError(
                f"the domain of {name!r} was read from the data: a value only one record "
                "holds would appear in the synthetic data's domain whatever epsilon; declare "
                "the domain (CLI: --domain COLUMN=v1|v2|..., --domains FILE) or accept the "
                "leak explicitly (--domain-from-data)"
            )
        return ColumnCoding(name, values=tuple(attr.domain), declared=attr.declared)
    values = np.asarray(attr.domain, dtype=np.float64)
    declared = True
    if bounds is None:
        if attr.declared and values.size:
            bounds = (float(values.min()), float(values.max()))
        elif domain_from_data and values.size:
            bounds = (float(values.min()), float(values.max()))
            declared = False
        else:
            raise ParameterError(
                f"{name!r} is numeric and has no public bounds: give them (CLI: --bounds "
                f"{name}=LO:HI) or accept bounds read from the data (--domain-from-data)"
            )
    lo, hi = float(bounds[0]), float(bounds[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ParameterError(f"the bounds of {name!r} must be finite with LO < HI, got {bounds}")
    integer = _integer_values(values) and float(lo).is_integer() and float(hi).is_integer()
    edges = _edges(lo, hi, bins, integer)
    return ColumnCoding(name, edges=tuple(float(e) for e in edges), integer=integer,
                        declared=declared)  # fmt: skip


@dataclass(frozen=True)
class Coding:
    """The codings of the synthesized columns, in order."""

    columns: tuple[ColumnCoding, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(c.size for c in self.columns)

    def encode(self, table: Table) -> np.ndarray:
        """An ``n x d`` int64 array of codes."""
        if not self.columns:
            return np.zeros((table.n_rows, 0), dtype=np.int64)
        return np.stack([c.encode(table) for c in self.columns], axis=1)

    def to_dict(self) -> dict[str, Any]:
        return {c.name: c.to_dict() for c in self.columns}

    def read_from_data(self) -> list[str]:
        return [c.name for c in self.columns if not c.declared]


def coding(
    table: Table,
    columns: Sequence[str],
    *,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    bins: int = DEFAULT_BINS,
    domain_from_data: bool = False,
) -> Coding:
    """The :class:`Coding` of ``columns`` of ``table`` (see the module docstring)."""
    from privlab._params import check_int

    bins = check_int("bins", bins, low=2)
    bounds = dict(bounds or {})
    stray = [c for c in bounds if c not in columns]
    if stray:
        raise SchemaError(f"bounds are given for {stray[0]!r}, which is not synthesized")
    for c in bounds:
        if not table.schema[c].numeric:
            raise ParameterError(f"bounds are given for {c!r}, which is not numeric")
    out = Coding(tuple(
        column_coding(table, c, bounds=bounds.get(c), bins=bins,
                      domain_from_data=domain_from_data)
        for c in columns
    ))  # fmt: skip
    read = out.read_from_data()
    if read:
        warnings.warn(
            f"the domain or bounds of {', '.join(map(repr, read))} were read from the data: "
            "their values are not protected by differential privacy",
            PrivacyWarning,
            stacklevel=3,
        )
    return out


# -- drawing records from a fitted model ------------------------------------------------------
def _stratified_uniforms(parent: np.ndarray, n_parents: int, gen: np.random.Generator):
    """One uniform a row, stratified within each group of equal ``parent``: a group of ``m``
    rows gets one uniform in each slice ``[i/m, (i+1)/m)``, the slices in random order."""
    rows = parent.size
    perm = gen.permutation(rows)
    order = perm[np.argsort(parent[perm], kind="stable")]
    counts = np.bincount(parent, minlength=n_parents)
    starts = np.cumsum(counts) - counts
    rank = np.empty(rows, dtype=np.int64)
    rank[order] = np.arange(rows) - starts[parent[order]]
    return (rank + gen.random(rows)) / counts[parent]


def draw_column(
    conditional: np.ndarray, parent: np.ndarray, gen: np.random.Generator
) -> np.ndarray:
    """One code a row from ``conditional[parent[i]]`` (rows of probabilities; a row of zeros
    is drawn uniformly), stratified within each parent group."""
    p = np.clip(np.asarray(conditional, dtype=np.float64), 0.0, None)
    n_parents, size = p.shape
    total = p.sum(axis=1, keepdims=True)
    p = np.where(total > 0, p / np.where(total > 0, total, 1.0), 1.0 / size)
    cdf = np.cumsum(p, axis=1)
    cdf[:, -1] = 1.0
    u = _stratified_uniforms(parent, n_parents, gen)
    # rows' CDFs laid end to end (row j shifted by j): one searchsorted for every row
    flat = (cdf + np.arange(n_parents)[:, None]).ravel()
    idx = np.searchsorted(flat, u + parent, side="right")
    return np.minimum(idx - parent * size, size - 1)


class ModelMarginals:
    """Marginals of a fitted private-pgm model computed in NumPy.

    private-pgm 2 computes a marginal its cliques do not hold by variable elimination in JAX,
    compiled anew for every shape and model: a tenth of a second each, which AIM pays for
    every candidate marginal of every round (most of its time on CPU).  Here a marginal
    inside a clique of the model is summed out of that clique's marginal, and any other is
    an ``einsum`` (greedy elimination order) of the model's potentials, each shifted by its
    maximum before ``exp`` (a constant factor, normalized away), scaled to the model's
    total; where that product underflows (potentials spanning hundreds of nats), private-pgm
    computes it in log space.
    """

    def __init__(self, model: Any) -> None:
        self.total = float(model.total)
        self._marginals = {
            tuple(cl): np.asarray(model.marginals[cl].values, dtype=np.float64)
            for cl in model.marginals.cliques
        }
        self._factors = []
        for cl in model.potentials.cliques:
            v = np.asarray(model.potentials[cl].values, dtype=np.float64)
            self._factors.append((tuple(cl), np.exp(v - v.max())))
        self.attributes = tuple(model.domain.attributes)
        self._model = model

    def project(self, clique: Sequence[str]) -> np.ndarray:
        """The marginal counts of ``clique`` (axes in its order)."""
        clique = tuple(clique)
        for cl, table in self._marginals.items():
            if set(clique) <= set(cl):
                drop = tuple(i for i, a in enumerate(cl) if a not in clique)
                out = table.sum(axis=drop) if drop else table
                kept = [a for a in cl if a in clique]
                return np.transpose(out, [kept.index(a) for a in clique])
        operands: list[Any] = []
        for cl, f in self._factors:
            operands += [f, [self.attributes.index(a) for a in cl]]
        out = np.einsum(*operands, [self.attributes.index(a) for a in clique], optimize="greedy")
        total = out.sum()
        if not (np.isfinite(total) and total > 1e-200):  # the product underflowed: exact
            with warnings.catch_warnings():  # private-pgm's own elimination, in log space
                warnings.simplefilter("ignore")
                exact = self._model.project(clique).datavector(flatten=False)
            return np.asarray(exact, dtype=np.float64)
        return out * (self.total / total)


def sample_model(model: Any, rows: int, gen: np.random.Generator) -> dict[str, np.ndarray]:
    """``rows`` records drawn from private-pgm's fitted ``model`` (a ``MarkovRandomField``)
    with ``gen`` (see the module docstring): codes by attribute."""
    from mbi import junction_tree

    domain = model.domain
    jtree, elimination = junction_tree.make_junction_tree(domain, [tuple(c) for c in model.cliques])
    cliques = [set(c) for c in jtree.nodes]
    order = list(elimination)[::-1]
    margins = ModelMarginals(model)
    data: dict[str, np.ndarray] = {}
    for col in order:
        near = set().union(*[cl for cl in cliques if col in cl]) if cliques else set()
        parents = tuple(a for a in order if a in near and a in data)
        marg = margins.project((*parents, col))
        size = domain[col]
        cond = marg.reshape(-1, size)
        if parents:
            shape = tuple(domain[a] for a in parents)
            parent = np.ravel_multi_index(tuple(data[a] for a in parents), shape)
        else:
            parent = np.zeros(rows, dtype=np.int64)
        data[col] = draw_column(cond, parent.astype(np.int64), gen)
    return data


__all__ = [
    "DEFAULT_BINS",
    "Coding",
    "ColumnCoding",
    "ModelMarginals",
    "coding",
    "coding_from_dict",
    "column_coding",
    "draw_column",
    "sample_model",
]
