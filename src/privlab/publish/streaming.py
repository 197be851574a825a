"""The stream engine's entry points that write their output at once.

* :func:`pram_parquet`: PRAM of a Parquet file larger than memory into a release directory,
  i.e. ``pram(path, engine="stream", ...)`` (:mod:`privlab.publish.stream_pram`), then its
  ``save()``.
* :func:`check_node_parquet` and :func:`recode_parquet`: the k / l check of one lattice node
  of a generalization over a streamed file, and its recoding into a Parquet file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privlab._io import atomic_outputs
from privlab._rng import RngLike, SeedRecord, publication_rng
from privlab.data.counts import joint_index
from privlab.data.schema import Role, Schema
from privlab.data.stream import (
    DEFAULT_BATCH_ROWS,
    BucketShuffle,
    iter_codes,
    merge_counts,
    parquet_schema,
    stream_input,
)
from privlab.errors import ParameterError
from privlab.publish.randomization import pram, require_matrix_sizes
from privlab.publish.stream_pram import StreamedPramRelease
from privlab.publish.stream_release import ParquetSink


def pram_parquet(
    path: str | Path,
    out: str | Path,
    *,
    columns: Sequence[str],
    p: float,
    keep: Sequence[str] = (),
    domains: Mapping[str, Sequence[Any]] | None = None,
    scheme: str = "m-category",
    p2: float | None = None,
    groups: Mapping[str, Sequence[Sequence[Any]]] | None = None,
    simultaneous: bool = False,
    invariant: bool = False,
    rng: RngLike | SeedRecord = None,
    shuffle: bool = True,
    custody: str | Path | None = None,
    force: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    buckets: int | None = None,
    republish: bool = False,
    not_for_publication: bool = False,
) -> StreamedPramRelease:
    """Randomize ``columns`` of a Parquet file with PRAM, out of core
    (:mod:`privlab.publish.stream_pram`), into the release directory ``out``: the release
    of ``pram(path, engine="stream", ...)``, saved; returns it.

    Parameters
    ----------
    path
        The input Parquet file.
    out, custody
        The release directory and (optional) the custodian's directory, both created
        atomically; ``force`` replaces existing ones.
    columns, p, keep, scheme, p2, groups, simultaneous, invariant
        As for :func:`~privlab.publish.randomization.pram` (``invariant`` reads the
        frequencies by one more pass).
    domains
        Public, ordered domains ``{column: [values]}``; a published column without one has
        its domain read from the data by a first pass (a randomized one then gets the
        :class:`~privlab.errors.PrivacyWarning` of the in-memory path).
    rng, shuffle
        As for :func:`~privlab.publish.randomization.randomize`.
    batch_rows, buckets
        Rows read (and randomized) at a time; bucket files of the shuffle (default: about
        one per ``batch_rows`` rows, so a bucket holds about one batch).
    republish, not_for_publication
        As for :meth:`~privlab.release.base.Release.save`; the registry knows a streamed
        input by its file's SHA-256.
    """
    columns, keep = list(columns), list(keep)
    # a matrix that the declared domains already make too large: refused before any read
    declared = {c: len(v) for c, v in (domains or {}).items()}
    require_matrix_sizes(declared, columns, simultaneous, scheme=scheme)
    source = stream_input(path, domains=domains, columns=[*columns, *keep], batch_rows=batch_rows)
    release = pram(
        source, columns=columns, keep=keep, scheme=scheme, p=p, p2=p2, groups=groups,
        simultaneous=simultaneous, invariant=invariant, rng=rng, shuffle=shuffle,
        engine="stream", buckets=buckets,
    )  # fmt: skip
    assert isinstance(release, StreamedPramRelease)
    release.save(out, custody=custody, force=force, republish=republish,
                 not_for_publication=not_for_publication)  # fmt: skip
    return release


# -- generalization: the k / l check of a chosen lattice node, and its recoding ------------------
@dataclass(frozen=True)
class NodeCheck:
    """The equivalence classes of one lattice node over a streamed file.

    ``class_sizes[i]`` records share the generalized quasi-identifiers ``classes[i]`` (the
    joint index over the node's levels, first QI slowest); ``distinct[i]`` of them hold
    distinct sensitive values (0 without a sensitive attribute).  ``bad`` marks the classes
    smaller than ``k`` or with fewer than ``l`` distinct sensitive values (distinct
    l-diversity): the records a release of this node suppresses.
    """

    node: tuple[int, ...]
    n_rows: int
    classes: np.ndarray
    class_sizes: np.ndarray
    distinct: np.ndarray
    bad: np.ndarray

    @property
    def k(self) -> int:
        """The smallest class (the k the node achieves without suppression)."""
        return int(self.class_sizes.min())

    @property
    def l(self) -> int:  # noqa: E743 (the model's name)
        """The fewest distinct sensitive values of a class (0 without a sensitive attribute)."""
        return int(self.distinct.min())

    @property
    def n_suppressed(self) -> int:
        return int(self.class_sizes[self.bad].sum())


def _node_plan(
    path: Path,
    qi: Sequence[str],
    node: Sequence[int],
    sensitive: str | None,
    hierarchies: Any,
    dataset: str | None,
    domains: Mapping[str, Sequence[Any]] | None,
    extra: Sequence[str],
    batch_rows: int,
    l: int | None = None,
) -> tuple[Schema, list[Any], list[int], int]:
    """Schema of the columns read (the QIs, the sensitive attribute, then ``extra``), the
    compiled hierarchies, the node's level sizes and the number of sensitive values (1
    without one)."""
    from privlab.publish.generalization_core import compile_hierarchies

    if l is not None and sensitive is None:
        raise ParameterError("l-diversity needs a sensitive attribute")
    qi, node = list(qi), [int(v) for v in node]
    if not qi or len(node) != len(qi):
        raise ParameterError(f"a node gives one level per quasi-identifier: {node} for {qi}")
    names = [*qi, *([sensitive] if sensitive else []), *[c for c in extra if c not in qi]]
    schema = parquet_schema(path, domains, columns=list(dict.fromkeys(names)),
                            batch_rows=batch_rows)  # fmt: skip
    # frames: compile_hierarchies, _node_plan, the public function, its caller
    compiled = compile_hierarchies(schema, qi, hierarchies, dataset, stacklevel=4)
    for q, h, lv in zip(qi, compiled, node):
        if not 0 <= lv <= h.height:
            raise ParameterError(f"level {lv} of {q!r} is outside its hierarchy (0..{h.height})")
    sizes = [h.sizes()[lv] for h, lv in zip(compiled, node)]
    m = schema[sensitive].size if sensitive else 1
    if float(np.prod(np.asarray(sizes, dtype=float))) * m >= 2.0**62:
        raise ParameterError(f"the node's classes ({sizes}) are too many to index")
    return schema, compiled, sizes, m


def _class_keys(codes: np.ndarray, compiled: list[Any], node: Sequence[int],
                sizes: list[int], m: int, s_col: int | None) -> np.ndarray:  # fmt: skip
    """Per row: (class index) * m + sensitive code (or the class index when m == 1)."""
    g = np.column_stack([h.maps[lv][codes[:, j]] for j, (h, lv) in enumerate(zip(compiled, node))])
    key = joint_index(g, sizes)
    return key * m + codes[:, s_col] if s_col is not None else key


def check_node_parquet(
    path: str | Path,
    *,
    qi: Sequence[str],
    node: Sequence[int],
    sensitive: str | None = None,
    k: int = 2,
    l: int | None = None,
    hierarchies: Any = None,
    dataset: str | None = None,
    domains: Mapping[str, Sequence[Any]] | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> NodeCheck:
    """k-anonymity and distinct l-diversity of the lattice ``node`` (one level per QI) over a
    Parquet file, one batch in memory at a time: the (class, sensitive value) counts are
    accumulated sparsely across batches (memory grows with the classes, not the rows).

    ``hierarchies``/``dataset`` as for :func:`~privlab.publish.generalization.generalize`.
    """
    path = Path(path)
    plan = _node_plan(path, qi, node, sensitive, hierarchies, dataset, domains, (), batch_rows, l)
    return _check_node(path, plan, len(qi), node, sensitive, k, l, batch_rows)


def _check_node(
    path: Path,
    plan: tuple[Schema, list[Any], list[int], int],
    n_qi: int,
    node: Sequence[int],
    sensitive: str | None,
    k: int,
    l: int | None,
    batch_rows: int,
) -> NodeCheck:
    """:func:`check_node_parquet` from a :func:`_node_plan` (reading its QI and sensitive
    columns only)."""
    schema, compiled, sizes, m = plan
    s_col = n_qi if sensitive else None
    schema = schema.select(schema.names[: n_qi + (s_col is not None)])
    keys = np.empty(0, dtype=np.int64)
    counts = np.empty(0, dtype=np.int64)
    n = 0
    for codes in iter_codes(path, schema, batch_rows=batch_rows):
        n += codes.shape[0]
        keys, counts = merge_counts(
            keys, counts, _class_keys(codes, compiled, node, sizes, m, s_col)
        )
    if n == 0:
        raise ParameterError(f"{path} has no rows")
    classes, first = np.unique(keys // m, return_index=True)
    class_sizes = np.add.reduceat(counts, first)
    distinct = np.diff(np.append(first, keys.size)) if sensitive else np.zeros_like(class_sizes)
    bad = class_sizes < int(k)
    if l is not None:
        bad |= distinct < l
    return NodeCheck(tuple(int(v) for v in node), n, classes, class_sizes, distinct, bad)


def recode_parquet(
    path: str | Path,
    out: str | Path,
    *,
    qi: Sequence[str],
    node: Sequence[int],
    sensitive: str | None = None,
    keep: Sequence[str] = (),
    k: int = 2,
    l: int | None = None,
    suppression: float = 0.0,
    hierarchies: Any = None,
    dataset: str | None = None,
    domains: Mapping[str, Sequence[Any]] | None = None,
    rng: RngLike = None,
    force: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    buckets: int | None = None,
) -> NodeCheck:
    """Recode a Parquet file to the lattice ``node`` (global recoding, the chosen node of
    :func:`~privlab.publish.generalization.generalize`), out of core, into the Parquet file
    ``out`` (atomically): generalized quasi-identifiers (a QI at level 0 keeps its values),
    then the sensitive and ``keep`` columns unchanged; the records of the classes that
    violate ``k`` / distinct ``l`` are suppressed (at most ``suppression`` of them, else an
    :class:`~privlab.errors.EligibilityError`).

    Two passes: :func:`check_node_parquet`, then the recoding, its rows released in a
    uniformly random order by the external shuffle (the in-memory release sorts them;
    either way the input's order is not revealed).  Returns the check.
    """
    from privlab.data.schema import Attribute
    from privlab.errors import EligibilityError

    path, out = Path(path), Path(out)
    if not 0 <= suppression < 1:
        raise ParameterError(f"suppression must be in [0, 1), got {suppression}")
    keep = [c for c in keep if c not in (*qi, sensitive)]
    plan = _node_plan(path, qi, node, sensitive, hierarchies, dataset, domains, keep,
                      batch_rows, l)  # fmt: skip
    check = _check_node(path, plan, len(qi), node, sensitive, k, l, batch_rows)
    allowed = int(np.floor(suppression * check.n_rows + 1e-9))
    if check.n_suppressed > allowed:
        raise EligibilityError(
            f"node {list(check.node)} leaves {check.n_suppressed} record(s) in classes that "
            f"violate k = {k}"
            + (f" / l = {l}" if l is not None else "")
            + f"; at most {allowed} may be suppressed"
        )
    schema, compiled, sizes, m = plan
    read = list(schema.names)
    s_col = read.index(sensitive) if sensitive else None
    bad_classes = check.classes[check.bad]
    attrs = []
    for q, h, lv in zip(qi, compiled, check.node):
        attrs.append(schema[q] if lv == 0 else Attribute(q, tuple(h.labels[lv]), Role.QI))
    attrs += [schema[c] for c in read[len(qi) :]]
    out_schema = Schema(tuple(attrs))
    gen, _ = publication_rng(rng)
    n_batches = math.ceil(check.n_rows / batch_rows)
    n_buckets = max(1, n_batches) if buckets is None else int(buckets)
    children = gen.spawn(n_batches + n_buckets)
    with atomic_outputs((out, "file"), force=force) as (tmp,):
        writer = ParquetSink(tmp, out_schema)
        try:
            with BucketShuffle(Path(f"{tmp}.shuffle"), len(read), n_buckets) as shuffler:
                for i, codes in enumerate(iter_codes(path, schema, batch_rows=batch_rows)):
                    cls = _class_keys(codes, compiled, check.node, sizes, m, s_col) // m
                    ok = ~np.isin(cls, bad_classes)
                    rec = codes[ok].copy()
                    for j, (h, lv) in enumerate(zip(compiled, check.node)):
                        rec[:, j] = h.maps[lv][rec[:, j]]
                    shuffler.add(rec, children[i])
                for rows in shuffler.drain(children[n_batches:]):
                    writer.write(rows)
        finally:
            writer.close()
    return check
