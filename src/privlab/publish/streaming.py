"""PRAM out of core: a Parquet file randomized batch by batch into a release directory.

:func:`pram_parquet` is :func:`~privlab.publish.randomization.pram` for a file larger than
memory.  It reads ``batch_rows`` rows at a time (:mod:`privlab.data.stream`), draws each
batch's released values through the same compiled kernel as the in-memory path, and
releases the rows in a uniformly random order by an external shuffle
(:class:`~privlab.data.stream.BucketShuffle`: bucket files, each permuted in memory), so
row order reveals nothing, with memory bounded by a batch and a bucket.

Randomness: one generator from :func:`~privlab._rng.publication_rng` (the seed salted with
OS entropy, the record kept in custody) spawns one child stream per input batch (its
uniforms, then its rows' bucket labels) and one per bucket (its permutation), so a batch's
draws do not depend on how much another batch consumed.  For a given generator the release
is therefore not the in-memory ``pram``'s (that draws one stream over the whole table), but
it has the same distribution: every record's value is drawn from its matrix row, the rows
in a uniformly random order.

Outputs, written atomically (temporary directories renamed into place; nothing is left
behind on an error or a signal, the bucket files included):

* ``OUT/randomized.parquet`` and ``OUT/release.json`` (the layout :meth:`Release.save`
  writes with ``format="parquet"``, readable by :meth:`Release.load`);
* with ``custody``: ``CDIR/custody.json`` (seed and salt, the SHA-256 of the input *file*
  under ``input_file_sha256``) and ``CDIR/truth.parquet`` (``row``, then the original
  values of the randomized columns, in the released row order).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from privlab._io import atomic_outputs, sha256_file
from privlab._registry import NOT_FOR_PUBLICATION, publication
from privlab._release_files import write_custody_json, write_release_json
from privlab._rng import RngLike, SeedRecord, publication_rng
from privlab.data.counts import joint_index
from privlab.data.schema import Role, Schema
from privlab.data.stream import (
    DEFAULT_BATCH_ROWS,
    BucketShuffle,
    iter_codes,
    parquet_columns,
    parquet_rows,
    parquet_schema,
)
from privlab.data.table import CODE_DTYPE, Table
from privlab.errors import CustodyError, ParameterError, SchemaError
from privlab.publish.base import (
    LAYOUT_VERSION,
    _check_apart,
    _version,
    refuse_reserved,
)
from privlab.publish.pram_core import (
    _KERNEL_MIN,
    Block,
    _cumulative,
    _draw_kernel,
    _draw_numpy,
    _is_identity,
    randomize_columns,
)
from privlab.publish.randomization import (
    PramRelease,
    _check_p,
    _warn_data_domains,
    require_matrix_sizes,
    scheme_matrices,
)

RANDOMIZED_FILE = "randomized.parquet"
TRUTH_PARQUET = "truth.parquet"


@dataclass(frozen=True)
class StreamedRelease:
    """What :func:`pram_parquet` wrote: the release directory, its rows, the randomized
    columns and their blocks (matrices), and the custody directory (or None)."""

    directory: Path
    n_rows: int
    randomized_columns: tuple[str, ...]
    blocks: tuple[Block, ...]
    custody: Path | None = None


def _arrow_domain(domain: Sequence[Any]) -> Any:
    import pyarrow as pa

    return pa.array(list(domain))


class _Writer:
    """A Parquet file written batch by batch from codes, decoded through the domains."""

    def __init__(self, path: Path, schema: Schema, row_index: bool = False) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.domains = [_arrow_domain(a.domain) for a in schema.attributes]
        fields = [pa.field(a.name, d.type) for a, d in zip(schema.attributes, self.domains)]
        if row_index:
            fields.insert(0, pa.field("row", pa.int64()))
        self.schema = pa.schema(fields)
        self.row_index, self.rows = row_index, 0
        self.writer = pq.ParquetWriter(path, self.schema)

    def write(self, codes: np.ndarray) -> None:
        import pyarrow as pa

        cols = [d.take(pa.array(codes[:, j])) for j, d in enumerate(self.domains)]
        if self.row_index:
            cols.insert(0, pa.array(np.arange(self.rows, self.rows + codes.shape[0])))
        self.writer.write_table(pa.Table.from_arrays(cols, schema=self.schema))
        self.rows += codes.shape[0]

    def close(self) -> None:
        self.writer.close()


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
    rng: RngLike | SeedRecord = None,
    shuffle: bool = True,
    custody: str | Path | None = None,
    force: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    buckets: int | None = None,
    republish: bool = False,
    not_for_publication: bool = False,
) -> StreamedRelease:
    """Randomize ``columns`` of a Parquet file with PRAM, out of core (see the module
    docstring), into the release directory ``out``.

    Parameters
    ----------
    path
        The input Parquet file.
    out, custody
        The release directory and (optional) the custodian's directory, both created
        atomically; ``force`` replaces existing ones.
    columns, p, keep, scheme, p2, groups, simultaneous
        As for :func:`~privlab.publish.randomization.pram` (``invariant`` is not offered:
        it needs the frequencies before the first draw).
    domains
        Public, ordered domains ``{column: [values]}``; a published column without one has
        its domain read from the data by a first pass (a randomized one then gets the
        :class:`~privlab.errors.PrivacyWarning` of the in-memory path).
    rng
        As for :func:`~privlab.publish.randomization.randomize`.
    shuffle
        Release the rows in a uniformly random order (default) by the external shuffle.
    batch_rows
        Rows read (and randomized) at a time.
    buckets
        Bucket files of the shuffle (default: about one per ``batch_rows`` rows, so a
        bucket holds about one batch).
    republish, not_for_publication
        As for :meth:`~privlab.publish.base.Release.save`; the registry knows a streamed
        input by its file's SHA-256.
    """
    path, out = Path(path), Path(out)
    names = parquet_columns(path)
    n_rows = parquet_rows(path)
    if n_rows == 0:
        raise ParameterError(f"{path} has no rows")
    columns, keep = list(columns), list(keep)
    if not columns:
        raise ParameterError("no column given to randomize")
    refuse_reserved([*columns, *keep])
    p = _check_p("p", p)
    for c in [*columns, *keep]:
        if c not in names:
            raise SchemaError(f"unknown column {c!r}; columns are: {', '.join(names)}")
    both = [c for c in keep if c in columns]
    if both:
        raise SchemaError(f"column {both[0]!r} is both randomized and kept unchanged (--keep)")
    identity = scheme.lower().replace("_", "-") == "identity" and not simultaneous
    published = [c for c in names if c in columns or c in keep]
    # a matrix that the declared domains already make too large: refused before any read
    declared = {c: len(v) for c, v in (domains or {}).items()}
    require_matrix_sizes(declared, columns, simultaneous, scheme=scheme)
    schema = parquet_schema(path, domains, columns=published, batch_rows=batch_rows)
    for g in groups or {}:
        if g not in columns:
            raise ParameterError(f"groups given for {g!r}, which is not randomized")
    matrices = {} if identity else scheme_matrices(
        schema, columns, scheme=scheme, p=p, p2=p2, groups=groups, simultaneous=simultaneous
    )  # fmt: skip
    blocks = [Block((k,) if isinstance(k, str) else tuple(k), m, scheme)
              for k, m in matrices.items()]  # fmt: skip
    randomized = [c for c in published if c in columns]
    done = set(columns)
    attrs = [replace(a, role=Role.QI if a.name in done else Role.INSENSITIVE)
             for a in schema.attributes]  # fmt: skip
    out_schema = Schema(tuple(attrs))
    empty = Table(np.empty((0, len(published)), dtype=CODE_DTYPE), out_schema)
    _warn_data_domains(empty, [c for b in blocks if not _is_identity(b.matrix) for c in b.columns])
    params: dict[str, Any] = {"columns": columns, "simultaneous": simultaneous, "invariant": False}
    if p2 is not None:
        params["p2"] = p2
    if groups:
        params["groups"] = {c: [list(g) for g in gs] for c, gs in groups.items()}
    release = PramRelease(empty, tuple(blocks), scheme=scheme, p=p, params=params)

    col = {c: j for j, c in enumerate(published)}
    joint = [([col[c] for c in b.columns], [schema[c].size for c in b.columns], b.matrix)
             for b in blocks if len(b.columns) > 1]  # fmt: skip
    single = {b.columns[0]: b.matrix for b in blocks if len(b.columns) == 1}
    cums = [_cumulative(single[c]) if c in single and not _is_identity(single[c]) else None
            for c in published]  # fmt: skip
    truth_idx = [col[c] for c in randomized]

    batch_rows = int(batch_rows)
    # one path for every batch (the kernel's and numpy's draws are the same, bit for bit)
    draw = _draw_kernel if n_rows * len(published) >= _KERNEL_MIN else _draw_numpy
    n_batches = math.ceil(n_rows / batch_rows)
    n_buckets = max(1, math.ceil(n_rows / batch_rows)) if buckets is None else int(buckets)
    gen, record = publication_rng(rng)
    if record.experiment and not not_for_publication:
        raise CustodyError(
            "this release would be drawn from the caller's own generator or seed record (an "
            "experiment); pass not_for_publication=True to write it marked as such"
        )
    children = gen.spawn(n_batches + (n_buckets if shuffle else 0))

    outputs = [(out, "directory")]
    if custody is not None:
        _check_apart(out, Path(custody))
        outputs.append((Path(custody), "directory"))
    source_sha256 = sha256_file(path)
    with (
        publication(source_sha256, kind="release", method="pram",
                    parameters=release.parameters(), record=record, republish=republish,
                    enabled=not not_for_publication) as pub,
        atomic_outputs(*outputs, force=force) as temps,
    ):  # fmt: skip
        release_writer = _Writer(temps[0] / RANDOMIZED_FILE, out_schema)
        truth_writer = (
            _Writer(temps[1] / TRUTH_PARQUET, schema.select(randomized), row_index=True)
            if custody is not None
            else None
        )
        width = len(published)

        def emit(rows: np.ndarray) -> None:
            release_writer.write(rows[:, :width])
            if truth_writer is not None:
                truth_writer.write(rows[:, width:])

        try:
            shuffler = (
                BucketShuffle(temps[0] / ".shuffle", width + len(truth_idx), n_buckets)
                if shuffle
                else None
            )
            try:
                batches = iter_codes(path, schema, published, batch_rows=batch_rows)
                for i, codes in enumerate(batches):
                    src = codes
                    if joint:  # jointly randomized blocks first, through their joint index
                        src = codes.copy()
                        for idx, sizes, m in joint:
                            flat = joint_index(src[:, idx], sizes).reshape(-1, 1)
                            randomize_columns(flat, {0: m}, children[i])
                            src[:, idx] = np.column_stack(np.unravel_index(flat[:, 0], sizes))
                    drawn = draw(src, list(range(width)), cums, children[i], None)
                    rows = np.concatenate([drawn, codes[:, truth_idx]], axis=1)
                    if shuffler is None:
                        emit(rows)
                    else:
                        shuffler.add(rows, children[i])
                if shuffler is not None:
                    for rows in shuffler.drain(children[n_batches:]):
                        emit(rows)
            finally:
                if shuffler is not None:
                    shuffler.close()
        finally:
            release_writer.close()
            if truth_writer is not None:
                truth_writer.close()
        if release_writer.rows != n_rows:  # the footer and the data disagree
            raise ParameterError(f"{path}: read {release_writer.rows} rows, expected {n_rows}")
        fingerprint = _write_release_json(
            temps[0], release, out_schema, n_rows,
            NOT_FOR_PUBLICATION if not_for_publication else None,
        )  # fmt: skip
        if record.replays is not None and fingerprint != record.replays:
            raise CustodyError(
                "this release was drawn with the seed and salt of another release but differs "
                "from it: the two would be correlated, so it is not written"
            )
        pub.check(fingerprint)
        if custody is not None:
            _write_custody(temps[1], record, fingerprint, source_sha256, schema.select(randomized))
        pub.record()
    return StreamedRelease(
        out,
        n_rows,
        tuple(release.randomized_columns),
        tuple(blocks),
        None if custody is None else Path(custody),
    )


def _write_release_json(
    tmp: Path, release: PramRelease, schema: Schema, n_rows: int, mark: str | None = None
) -> str:
    """``release.json`` as :meth:`Release.save` writes it; returns its SHA-256."""
    meta = {
        **({"not_for_publication": mark} if mark else {}),
        "method": release.method,
        "layout": LAYOUT_VERSION,
        "privlab": _version(),
        "parameters": release.parameters(),
        "schema": schema.to_dict(),
        "tables": {
            "randomized": {
                "file": RANDOMIZED_FILE,
                "columns": list(schema.names),
                "integers": [],
                "rows": n_rows,
                "sha256": sha256_file(tmp / RANDOMIZED_FILE),
            }
        },
        **release.metadata(),
    }
    return write_release_json(tmp, meta)


def _write_custody(
    tmp: Path, record: SeedRecord, release_sha256: str, source_sha256: str, truth: Schema
) -> None:
    meta = {
        "notice": "custodian's files: never publish this directory",
        "method": "pram",
        "release_sha256": release_sha256,
        "seed": record.to_dict(),
        "input_sha256": None,
        "input_file_sha256": source_sha256,
        "truth": {
            "file": TRUTH_PARQUET,
            "schema": truth.to_dict(),
            "sha256": sha256_file(tmp / TRUTH_PARQUET),
        },
    }
    write_custody_json(tmp, meta)


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
        bk, bc = np.unique(_class_keys(codes, compiled, node, sizes, m, s_col), return_counts=True)
        keys, inv = np.unique(np.concatenate([keys, bk]), return_inverse=True)
        counts = np.bincount(inv.reshape(-1), weights=np.concatenate([counts, bc]),
                             minlength=keys.size).astype(np.int64)  # fmt: skip
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
        writer = _Writer(tmp, out_schema)
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
