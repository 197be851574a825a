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

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from privlab._io import atomic_outputs, dumps, sha256_file
from privlab._rng import RngLike, SeedRecord, publication_rng
from privlab.data.counts import joint_index
from privlab.data.schema import Role, Schema
from privlab.data.stream import (
    DEFAULT_BATCH_ROWS,
    BucketShuffle,
    iter_codes,
    parquet_rows,
    parquet_schema,
)
from privlab.data.table import CODE_DTYPE, Table
from privlab.errors import ParameterError, SchemaError
from privlab.publish.base import (
    CUSTODY_FILE,
    LAYOUT_VERSION,
    RELEASE_FILE,
    _check_apart,
    _version,
    refuse_reserved,
)
from privlab.publish.randomization import (
    _KERNEL_MIN,
    Block,
    PramRelease,
    _check_p,
    _cumulative,
    _draw_kernel,
    _draw_numpy,
    _is_identity,
    _warn_data_domains,
    randomize_columns,
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
    """
    import pyarrow.parquet as pq

    path, out = Path(path), Path(out)
    names = list(pq.ParquetFile(path).schema_arrow.names) if path.is_file() else []
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
    children = gen.spawn(n_batches + (n_buckets if shuffle else 0))

    outputs = [(out, "directory")]
    if custody is not None:
        _check_apart(out, Path(custody))
        outputs.append((Path(custody), "directory"))
    with atomic_outputs(*outputs, force=force) as temps:
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
        fingerprint = _write_release_json(temps[0], release, out_schema, n_rows)
        if custody is not None:
            _write_custody(temps[1], record, fingerprint, path, schema.select(randomized))
    return StreamedRelease(
        out,
        n_rows,
        tuple(release.randomized_columns),
        tuple(blocks),
        None if custody is None else Path(custody),
    )


def _write_release_json(tmp: Path, release: PramRelease, schema: Schema, n_rows: int) -> str:
    """``release.json`` as :meth:`Release.save` writes it; returns its SHA-256."""
    meta = {
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
    (tmp / RELEASE_FILE).write_text(dumps(meta))
    return sha256_file(tmp / RELEASE_FILE)


def _write_custody(
    tmp: Path, record: SeedRecord, release_sha256: str, source: Path, truth: Schema
) -> None:
    h = hashlib.sha256()
    with open(source, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    meta = {
        "notice": "custodian's files: never publish this directory",
        "method": "pram",
        "release_sha256": release_sha256,
        "seed": record.to_dict(),
        "input_sha256": None,
        "input_file_sha256": h.hexdigest(),
        "truth": {
            "file": TRUTH_PARQUET,
            "schema": truth.to_dict(),
            "sha256": sha256_file(tmp / TRUTH_PARQUET),
        },
    }
    (tmp / CUSTODY_FILE).write_text(dumps(meta))
