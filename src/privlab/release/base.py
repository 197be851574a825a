"""What every release shares: saving and loading, custody, the privacy report, the partition.

A *release* is what a sanitizer publishes.  Every kind (Anatomy, generalization, PRAM)
subclasses :class:`Release`, which writes and reads it once for all:

=====================  ========================================================================
``DIR/release.json``   method, privlab version, public parameters, the schema of the published
                       columns (each with its role and its *published* domain) and, per table
                       file, its columns, row count and SHA-256
``DIR/<table>.csv``    the published tables (``format="parquet"``: ``.parquet``)
=====================  ========================================================================

Nothing else is published.  What only the custodian may see goes to a separate **custody
directory** (``save(dir, custody=CDIR)``; CLI ``--custody CDIR``), which must never be
published:

=====================  ========================================================================
``CDIR/custody.json``  the method, the SHA-256 of the release's ``release.json`` (so a custody
                       directory of another release is refused), the seed *and the salt* that
                       replay the release (:class:`~privlab._rng.SeedRecord`), the SHA-256 of
                       the input table, the truth's schema
``CDIR/truth.csv``     ``row`` then the true value of every column the release hides or
                       perturbs (Anatomy: the sensitive value of each QIT row; PRAM: the
                       randomized columns; generalization: the exact quasi-identifiers)
=====================  ========================================================================

Every save of a publishable release is checked against and recorded in the custodian's
registry (:mod:`privlab._registry`): a new release of an input already released is refused
unless ``republish=True``.  A release drawn from the caller's own generator or a bare seed
record is an experiment (:func:`privlab._rng.publication_rng`), written only with
``not_for_publication=True``.

Published domains are public by construction: a column's domain lists only the values that
appear in the published tables, unless it was *declared* (:attr:`Attribute.declared`) or the
release cannot be used without it (a PRAM matrix's rows); a value that only a suppressed or
unpublished record holds never reaches ``release.json``.
"""

from __future__ import annotations

import dataclasses
import html
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from privlab._csv import restore_frame, warn_neutralized, write_csv
from privlab._frames import ToFrames
from privlab._io import atomic_dir, atomic_outputs, read_json, sha256_file, sha256_path
from privlab._release_files import (
    CUSTODY_FILE,
    DIGEST_FIELD,
    RELEASE_FILE,
    meta_digest,
    write_custody_json,
    write_release_json,
)
from privlab._rng import SeedRecord
from privlab.data.partition import Partition
from privlab.data.schema import Attribute, Schema, _keys
from privlab.data.table import Table
from privlab.errors import (
    CustodyError,
    ParameterError,
    PrivlabError,
    ReleaseError,
    SchemaError,
)
from privlab.metrics.privacy import PrivacyReport, privacy_report
from privlab.metrics.risk import DEFAULT_THRESHOLD

TRUTH_FILE = "truth.csv"
FORMATS = ("csv", "parquet")
#: Version of the on-disk layout written by :meth:`Release.save`.
LAYOUT_VERSION = 2

#: The release kinds privlab knows: method -> module defining its class.
METHODS = {
    "anatomy": "privlab.publish.anatomy",
    "generalization": "privlab.publish.generalization",
    "pram": "privlab.publish.randomization",
    "alphabeta": "privlab.publish.alpha_beta",
    "marginals": "privlab.publish.marginals",
    "masking": "privlab.publish.masking",
    "dp-synthetic": "privlab.publish.synthetic",
}
_CLASSES: dict[str, type[Release]] = {}

#: Column names the release format adds itself (the custody's ``row``, Anatomy's
#: ``group_id`` and ``count``): a data column may not take them, or the release would not
#: read back.
RESERVED_NAMES = ("row", "group_id", "count")


def refuse_reserved(names: Any) -> None:
    """Raise :class:`SchemaError` when a column to publish has a reserved name."""
    for name in names:
        if name in RESERVED_NAMES:
            raise SchemaError(
                f"column {name!r} has a name reserved by the release format "
                f"({', '.join(RESERVED_NAMES)}): rename it before publishing"
            )


# -- published tables -----------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PublishedTable:
    """One published file: categorical columns (codes through the release's schema) and
    integer columns (group ids, counts), in ``header`` order."""

    table: Table
    integers: Mapping[str, np.ndarray] = field(default_factory=dict)
    header: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        header = self.header or (*self.table.names, *self.integers)
        object.__setattr__(self, "header", tuple(header))
        if sorted(header) != sorted([*self.table.names, *self.integers]):
            raise ReleaseError(f"header {list(header)} does not list the table's columns")

    @property
    def n_rows(self) -> int:
        return self.table.n_rows

    def frame(self, *, text: bool = False) -> pd.DataFrame:
        """Decoded values (``text``: as the strings a CSV holds)."""
        cols: dict[str, Any] = {}
        for name in self.header:
            if name in self.integers:
                cols[name] = np.asarray(self.integers[name], dtype=np.int64)
                continue
            a = self.table.schema[name]
            if text:  # as Attribute.encode reads them back: an integral float as an integer
                dom = _keys(np.asarray(a.domain, dtype=object))
            elif a.numeric:
                dom = np.asarray(a.domain)
            else:
                dom = np.asarray(a.domain, dtype=object)
            cols[name] = dom[self.table.column(name)] if a.size else np.empty(0, dtype=object)
        return pd.DataFrame(cols, columns=list(self.header))


# -- custody ----------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Custody:
    """What only the custodian of a release may see; never published.

    Attributes
    ----------
    seed
        The seed and the OS salt that replay the release's random draws.
    input_sha256
        Fingerprint of the input table (:meth:`Table.fingerprint`).
    truth
        The true value of every hidden or perturbed column, one row per published row, or
        None.
    release_sha256
        The SHA-256 of the ``release.json`` this custody belongs to (set when saved or
        loaded beside a release).
    input_measures
        What the sanitizer measured on the input rather than on the published rows (a
        generalization's record counts and information loss over every input record,
        suppressed ones included; a marginals release's KL path), or None: aggregates of
        the raw input, so never in ``release.json``.
    """

    seed: SeedRecord = field(default_factory=SeedRecord)
    input_sha256: str | None = None
    truth: Table | None = None
    release_sha256: str | None = None
    method: str | None = None
    input_measures: dict[str, Any] | None = None

    def replay(self) -> SeedRecord:
        """The seed record to pass as ``rng`` to draw this custody's release again (the only
        seed record a sanitizer draws a publishable release from: ``rng=custody.seed`` or a
        record rebuilt from ``custody.json`` is an experiment, which ``save()`` refuses).

        Only the same input and parameters give the same release; anything else drawn from
        the same stream would be correlated with it (the same row permutation, the same
        groups), so :meth:`Release.save` refuses to write a replayed release that differs
        from the original.
        """
        if not self.seed.replayable:
            raise CustodyError(
                "this release was drawn from the caller's own generator: custody cannot replay it"
            )
        if self.release_sha256 is None:
            raise CustodyError(
                "this custody belongs to a release not saved yet: a replay is checked against "
                "the saved release, so save it first (or load it with its custody)"
            )
        return dataclasses.replace(self.seed, replays=self.release_sha256)

    def save(self, directory: str | Path, *, force: bool = False) -> Path:
        """Write ``custody.json`` (and ``truth.csv``) atomically."""
        directory = Path(directory)
        with atomic_dir(directory, force=force) as tmp:
            warn_neutralized(self._write(tmp))
        return directory

    def _write(self, tmp: Path) -> dict[str, int]:
        """Write the custody's files into ``tmp``; return the cells neutralized per CSV
        (:mod:`privlab._csv`)."""
        neutralized: dict[str, int] = {}
        meta: dict[str, Any] = {
            "notice": "custodian's files: never publish this directory",
            "method": self.method,
            "release_sha256": self.release_sha256,
            "seed": self.seed.to_dict(),
            "input_sha256": self.input_sha256,
        }
        if self.input_measures is not None:
            meta["input_measures"] = self.input_measures
        if self.truth is not None:
            df = PublishedTable(self.truth).frame(text=True)
            df.insert(0, "row", np.arange(self.truth.n_rows))
            neutralized[TRUTH_FILE] = write_csv(df, tmp / TRUTH_FILE)
            meta["truth"] = {
                "file": TRUTH_FILE,
                "schema": self.truth.schema.to_dict(),
                "sha256": sha256_file(tmp / TRUTH_FILE),
            }
        write_custody_json(tmp, meta)
        return neutralized

    @classmethod
    def load(cls, directory: str | Path) -> Custody:
        directory = Path(directory)
        if not directory.is_dir():
            raise CustodyError(f"not a custody directory: {directory} does not exist")
        meta = read_json(directory / CUSTODY_FILE, what="custody file")
        if not isinstance(meta, dict) or "release_sha256" not in meta:
            raise CustodyError(f"{directory}/{CUSTODY_FILE} is not a privlab custody file")
        truth = None
        if meta.get("truth"):
            try:
                if not isinstance(meta["truth"], dict):
                    raise TypeError("'truth' is not an object")
                schema = Schema.from_dict(meta["truth"]["schema"])
            except (KeyError, TypeError, PrivlabError) as e:
                raise CustodyError(
                    f"{directory}/{CUSTODY_FILE} has a malformed truth: {e}"
                ) from None
            # truth.csv, or truth.parquet for a release streamed out of core
            name = meta["truth"].get("file", TRUTH_FILE)
            if name not in (TRUTH_FILE, "truth.parquet"):
                raise CustodyError(f"{directory}/{CUSTODY_FILE} names an unknown truth file")
            fmt = "parquet" if name.endswith(".parquet") else "csv"
            # the Spark engine's truth is a dataset directory in the release's row order
            in_order = meta.get("engine") == "spark" and (directory / name).is_dir()
            header = tuple(schema.names) if in_order else ("row", *schema.names)
            if not (directory / name).exists():
                raise CustodyError(f"{directory} has no {name}")
            if sha256_path(directory / name) != meta["truth"].get("sha256"):
                raise CustodyError(f"{directory}/{name} was modified after the custody was written")
            frame = _read_frame(directory / name, header, fmt)
            codes = _decode(frame, schema, name)
            if in_order:
                truth = Table(codes, schema)
            else:
                rows = _int_column(frame, "row", name)
                if not np.array_equal(np.sort(rows), np.arange(rows.size)):
                    raise CustodyError(f"{directory}/{name}: 'row' must list 0..n-1 once each")
                truth = Table(codes[np.argsort(rows)], schema)
        try:
            seed = SeedRecord.from_dict(meta.get("seed") or {})
        except PrivlabError as e:
            raise CustodyError(f"{directory}/{CUSTODY_FILE} has a malformed seed: {e}") from None
        measures = meta.get("input_measures")
        if measures is not None and not isinstance(measures, dict):
            raise CustodyError(f"{directory}/{CUSTODY_FILE}: 'input_measures' is not an object")
        return cls(
            seed=seed,
            input_sha256=meta.get("input_sha256"),
            truth=truth,
            release_sha256=meta.get("release_sha256"),
            method=meta.get("method"),
            input_measures=measures,
        )


# -- the base class ---------------------------------------------------------------------------
class Release(ToFrames):
    """Base of every release (Anatomy, generalization, PRAM).

    Subclasses are frozen dataclasses whose last field is ``custody`` and implement
    :meth:`published` (the tables), :meth:`parameters`, :meth:`_from_published` (the inverse),
    and, when the release groups its rows, :meth:`partition`.
    """

    method: ClassVar[str] = ""
    custody: Custody | None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("method"):
            if cls.method not in METHODS:
                raise TypeError(f"release method {cls.method!r} is not listed in METHODS")
            _CLASSES[cls.method] = cls

    # -- what a subclass provides ---------------------------------------------------------
    def published(self) -> dict[str, PublishedTable]:
        """The published tables by file stem, the main one first."""
        raise NotImplementedError

    def parameters(self) -> dict[str, Any]:
        """The public parameters (never the seed)."""
        raise NotImplementedError

    def metadata(self) -> dict[str, Any]:
        """Further public structure written to ``release.json`` (matrices, chosen node...)."""
        return {}

    @classmethod
    def _from_published(cls, meta: dict[str, Any], tables: dict[str, PublishedTable]) -> Release:
        raise NotImplementedError

    def registry_entry(self) -> tuple[str, float | None]:
        """How the registry counts a save: ``("release", None)`` (a second release of the
        input is refused without ``republish``), or ``("dp", epsilon)`` for a
        differentially private release (added to the input's epsilon ledger)."""
        return "release", None

    def partition(self) -> Partition | None:
        """The rows' groups with their sensitive counts (None when the release has none)."""
        return None

    def claims(self) -> list[dict[str, Any]]:
        """What ``release.json``'s parameters promise, measured on the published rows:
        ``{"claim": "l = 2", "holds": bool, "measured": "..."}`` each (``privlab check``
        refuses a release that breaks one: edited, or not written by privlab).  None by
        default."""
        return []

    def _keeps_full_domain(self, attribute: Attribute) -> bool:
        """Whether ``attribute``'s whole domain may be published (default: when declared)."""
        return attribute.declared

    # -- shared views ---------------------------------------------------------------------
    @property
    def schema(self) -> Schema:
        """The published columns with their roles (as held in memory: full domains)."""
        seen: dict[str, Attribute] = {}
        for t in self.published().values():
            for a in t.table.schema.attributes:
                seen.setdefault(a.name, a)
        return Schema(tuple(seen.values()))

    def _main(self) -> Table:
        """The main published table (the first): one row per published record."""
        return next(iter(self.published().values())).table

    @property
    def n_rows(self) -> int:
        """Published rows (of the main table)."""
        return self._main().n_rows

    @property
    def table_names(self) -> tuple[str, ...]:
        return tuple(self.published())

    def to_pandas(self, name: str | None = None) -> pd.DataFrame:
        """A published table as a DataFrame (default: the main one; see :attr:`table_names`)."""
        tables = self.published()
        if name is None:
            name = next(iter(tables))
        if name not in tables:
            raise ParameterError(f"no published table {name!r}; tables: {', '.join(tables)}")
        return tables[name].frame()

    def linkable(self) -> Table:
        """The published non-sensitive columns of every published row (what an adversary
        can link a person to a row on)."""
        main = self._main()
        return main.select(main.schema.linkable)

    def quasi_identifiers(self) -> Table:
        """The published quasi-identifier columns of every published row (what the learning
        attacks model)."""
        main = self._main()
        return main.select(main.schema.qi)

    def privacy(self, *, threshold: float = DEFAULT_THRESHOLD) -> PrivacyReport:
        """The release's :class:`~privlab.metrics.privacy.PrivacyReport`."""
        linkable = self.linkable()
        return privacy_report(
            self.method,
            linkable,
            self.partition(),
            kept=[c for c in self.schema.insensitive if c in linkable.names],
            threshold=threshold,
        )

    def summary(self) -> dict[str, Any]:
        """A few facts for ``repr`` and notebooks."""
        return {"rows": self.n_rows, **self.parameters()}

    def __repr__(self) -> str:
        facts = ", ".join(f"{k}={v!r}" for k, v in self.summary().items())
        return f"{type(self).__name__}({facts})"

    def _repr_html_(self) -> str:
        facts = "".join(
            f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
            f"<td>{html.escape(str(v))}</td></tr>"
            for k, v in self.summary().items()
        )
        heads = "".join(
            f"<p><b>{html.escape(name)}</b> ({t.n_rows} rows)</p>{t.frame().head(5).to_html()}"
            for name, t in self.published().items()
        )
        return f"<p><b>{type(self).__name__}</b></p><table>{facts}</table>{heads}"

    # -- persistence ----------------------------------------------------------------------
    def public_schema(self) -> Schema:
        """The schema written to ``release.json``: each domain cut to the values that appear
        in the published tables, unless it may be published whole."""
        used: dict[str, np.ndarray] = {}
        for t in self.published().values():
            mark_used(used, t.table)
        return cut_domains(self.schema, used, self._keeps_full_domain)

    def save(
        self,
        directory: str | Path,
        *,
        custody: str | Path | None = None,
        force: bool = False,
        format: str = "csv",
        republish: bool = False,
        not_for_publication: bool = False,
        draft: bool = False,
    ) -> Path:
        """Write the release to ``directory`` and, with ``custody``, the custodian's files to
        that (separate) directory; both appear whole or not at all.

        Without ``custody`` the seed, the salt and the truth are not written anywhere: the
        release can then not be replayed or evaluated later.

        Parameters
        ----------
        republish
            Acknowledge that the input already has a release in the custodian's registry
            (:mod:`privlab._registry`): two releases of one input reveal more together than
            either alone, so a new one is refused without it.  The same release again (a
            replay, another save of the same draw) needs no acknowledgement.
        not_for_publication
            Write a release drawn from the caller's own generator or seed record (an
            experiment, refused otherwise); ``release.json`` then says it must never be
            published, and the registry neither checks nor records it.
        draft
            A candidate, not a publication (``privlab audit``'s): the registry neither
            checks nor records it.
        """
        from privlab._registry import NOT_FOR_PUBLICATION, publication

        if format not in FORMATS:
            raise ParameterError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
        directory = Path(directory)
        if custody is not None:
            _check_apart(directory, Path(custody))
            if self.custody is None:
                raise CustodyError("this release holds no custody (it was loaded without one)")
        record = SeedRecord() if self.custody is None else self.custody.seed
        check_experiment(record, not_for_publication)
        outputs = [(directory, "directory")]
        if custody is not None:
            outputs.append((Path(custody), "directory"))
        mark = NOT_FOR_PUBLICATION if not_for_publication else None
        kind, epsilon = self.registry_entry()
        # both outputs are checked (existing, an input) before anything is written, and
        # appear together; the registry's check and record happen under its input lock
        with (
            publication(
                None if self.custody is None else self.custody.input_sha256,
                kind=kind, method=self.method, parameters=self.parameters(), epsilon=epsilon,
                record=record, republish=republish, enabled=not (draft or not_for_publication),
            ) as pub,
            atomic_outputs(*outputs, force=force) as temps,
        ):  # fmt: skip
            tables: dict[str, int] = {}
            fingerprint = self._write(temps[0], format, mark, tables)
            neutralized = {f"{directory.name}/{k}": v for k, v in tables.items()}
            check_replay(record, fingerprint)
            pub.check(fingerprint)
            if custody is not None:
                assert self.custody is not None
                kept = dataclasses.replace(
                    self.custody, release_sha256=fingerprint, method=self.method
                )._write(temps[1])
                neutralized.update({f"{Path(custody).name}/{k}": v for k, v in kept.items()})
            pub.record()
        warn_neutralized(neutralized)
        return directory

    def _write(
        self, tmp: Path, format: str, mark: str | None = None, neutralized: dict | None = None
    ) -> str:
        """Write the tables and ``release.json`` into ``tmp``; return release.json's SHA-256
        (``mark``: the not-for-publication notice release.json then carries first;
        ``neutralized`` collects the cells :mod:`privlab._csv` neutralized per file)."""
        schema = self.public_schema()
        files: dict[str, Any] = {}
        neutralized = {} if neutralized is None else neutralized
        for name, t in self.published().items():
            files[name] = write_published(tmp, name, t, format, neutralized)
        meta = release_meta(
            self.method, self.parameters(), schema, files, self.metadata(), mark=mark
        )
        return write_release_json(tmp, meta)

    @classmethod
    def load(cls, directory: str | Path, *, custody: str | Path | None = None) -> Release:
        """Read a release written by :meth:`save` (any method when called on
        :class:`Release`); with ``custody``, attach the custodian's files after checking they
        belong to this release."""
        directory = Path(directory)
        meta = read_meta(directory)
        method = meta["method"]
        target = release_class(method, directory) if cls is Release else cls
        if method != target.method:
            raise ReleaseError(f"{directory} holds a {method!r} release, not {target.method}")
        try:
            schema = Schema.from_dict(meta["schema"])
            specs = dict(meta["tables"])
        except (KeyError, TypeError, PrivlabError) as e:
            raise ReleaseError(f"{directory}/{RELEASE_FILE} is malformed: {e}") from None
        tables = {name: _read_table(directory, name, spec, schema) for name, spec in specs.items()}
        try:
            release = target._from_published(meta, tables)
        except (KeyError, TypeError, ValueError) as e:
            if isinstance(e, PrivlabError):
                raise ReleaseError(f"{directory}: {e}") from None
            raise ReleaseError(f"{directory}/{RELEASE_FILE} is malformed: {e!r}") from None
        if custody is not None:
            release = release.with_custody(custody, sha256_file(directory / RELEASE_FILE))
        return release

    def with_custody(self, custody: str | Path | Custody, release_sha256: str | None) -> Release:
        """This release with the custodian's files attached (checked against it)."""
        c = custody if isinstance(custody, Custody) else Custody.load(custody)
        where = custody if not isinstance(custody, Custody) else "the custody"
        if c.method is not None and c.method != self.method:
            raise CustodyError(f"{where} belongs to a {c.method!r} release, not {self.method}")
        if release_sha256 is not None and c.release_sha256 != release_sha256:
            raise CustodyError(
                f"{where} belongs to another release (its release.json fingerprint differs)"
            )
        if c.truth is not None and c.truth.n_rows != self.n_rows:
            raise CustodyError(
                f"{where} holds the truth of {c.truth.n_rows} rows, the release has {self.n_rows}"
            )
        return dataclasses.replace(self, custody=c)  # type: ignore[type-var]


# -- helpers ----------------------------------------------------------------------------------
def check_experiment(record: SeedRecord, not_for_publication: bool) -> None:
    """Refuse to save an experiment's draw (a release from the caller's own generator or
    seed record) unless it is marked not for publication: every engine's save asks this."""
    if record.experiment and not not_for_publication:
        raise CustodyError(
            "this release was drawn from the caller's own generator or seed record (an "
            "experiment: anyone who guesses the seed replays it, and a custody's seed "
            "record redraws a release correlated with the original); pass "
            "not_for_publication=True to write it marked as such, use "
            "custody.replay() to draw a saved release again, or draw with rng=None or an "
            "int seed (salted with OS entropy) to publish"
        )


def check_replay(record: SeedRecord, fingerprint: str) -> None:
    """Refuse a replay (a draw with the seed and salt of a saved release) whose
    ``release.json`` (SHA-256 ``fingerprint``) differs from the one it replays: the two
    releases would be correlated.  Every engine's save asks this before writing."""
    if record.replays is not None and fingerprint != record.replays:
        raise CustodyError(
            "this release was drawn with the seed and salt of another release but "
            "differs from it (another input, other parameters, format or privlab "
            "version): the two would be correlated, so it is not written; replay "
            "with exactly the original input and parameters, or draw afresh"
        )


def release_meta(
    method: str,
    parameters: Mapping[str, Any],
    schema: Schema,
    tables: Mapping[str, Any],
    metadata: Mapping[str, Any],
    *,
    mark: str | None = None,
    engine: str | None = None,
) -> dict[str, Any]:
    """The fields of ``release.json``, in their order, for every engine: the
    not-for-publication ``mark`` first (where there is one), the method, the layout, the
    privlab version, the ``engine`` (Spark's only), the parameters, the public schema, the
    tables and the release's metadata."""
    return {
        **({"not_for_publication": mark} if mark else {}),
        "method": method,
        "layout": LAYOUT_VERSION,
        "privlab": _version(),
        **({"engine": engine} if engine else {}),
        "parameters": parameters,
        "schema": schema.to_dict(),
        "tables": tables,
        **metadata,
    }


def mark_used(used: dict[str, np.ndarray], table: Table) -> None:
    """Mark in ``used`` (a mask per column over its domain) the codes ``table`` holds."""
    for j, a in enumerate(table.schema.attributes):
        seen = np.bincount(table.codes[:, j], minlength=a.size) > 0
        used[a.name] = used.get(a.name, np.zeros(a.size, dtype=bool)) | seen


def cut_domains(
    schema: Schema, used: Mapping[str, np.ndarray], whole: Callable[[Attribute], bool]
) -> Schema:
    """``schema`` with each domain cut to the codes ``used`` marks (a value no published row
    holds is not published), except where ``whole(attribute)``: those go whole."""
    attrs = []
    for a in schema.attributes:
        if not whole(a):
            keep = used.get(a.name, np.zeros(a.size, dtype=bool))
            a = dataclasses.replace(a, domain=tuple(np.asarray(a.domain, dtype=object)[keep]))
        attrs.append(a)
    return Schema(tuple(attrs))


def write_published(
    tmp: Path,
    name: str,
    t: PublishedTable,
    format: str = "parquet",
    neutralized: dict | None = None,
) -> dict[str, Any]:
    """Write the published table ``t`` as ``tmp/<name>.<format>``; returns what
    ``release.json`` says of it (file, columns, integer columns, rows, SHA-256).  A CSV's
    cells that a spreadsheet would evaluate are neutralized (counted in ``neutralized``)."""
    path = tmp / f"{name}.{format}"
    frame = t.frame(text=format == "csv")
    if format == "csv":
        written = write_csv(frame, path)
        if neutralized is not None:
            neutralized[path.name] = written
    else:
        frame.to_parquet(path, index=False)
    return {
        "file": path.name,
        "columns": list(t.header),
        "integers": list(t.integers),
        "rows": t.n_rows,
        "sha256": sha256_file(path),
    }


class EngineRelease:
    """Base of a release whose rows an engine holds outside memory: the stream engine's
    (:class:`~privlab.publish.stream_release.StreamedRelease`, rows drawn from a Parquet file
    when saved) and Spark's (:class:`~privlab.publish.spark_release.SparkRelease`, rows in a
    Spark DataFrame).  With :class:`Release` (the memory engine's) it is the one release
    family every sanitizer returns, whatever its ``engine``:

    * ``method``, ``schema``, ``parameters`` and ``metadata``: what ``release.json`` says,
      as the in-memory release of the same draws says it;
    * :meth:`save`: the release directory (and the custody's), through the one writer of
      ``release.json`` and ``custody.json`` (:mod:`privlab._release_files`);
    * :meth:`collect`: the in-memory :class:`Release` of the same class, with its custody
      (every row comes into memory); :meth:`to_pandas` is its ``to_pandas``.
    """

    engine: ClassVar[str] = ""
    #: the ``engine`` field of ``release.json`` and ``custody.json`` (Spark's only: a
    #: streamed release is the file the memory engine writes)
    engine_field: ClassVar[str | None] = None
    method: str
    schema: Any
    parameters: dict[str, Any]
    metadata: dict[str, Any]
    seed: SeedRecord
    truth: Schema | None
    input_measures: dict[str, Any] | None

    def save(
        self,
        directory: str | Path,
        *,
        custody: str | Path | None = None,
        force: bool = False,
        republish: bool = False,
        not_for_publication: bool = False,
        draft: bool = False,
    ) -> Path:
        """Write the release directory (``release.json`` and one Parquet file or dataset per
        table) and, with ``custody``, the custodian's (``custody.json`` and the truth,
        ``truth.parquet``, in the released row order) apart from it; both appear whole or
        not at all.  ``republish``, ``not_for_publication`` and ``draft``: as
        :meth:`Release.save`; the registry knows the input by :meth:`_input_sha256`."""
        from privlab._registry import NOT_FOR_PUBLICATION, publication

        directory = Path(directory)
        check_experiment(self.seed, not_for_publication)
        outputs = [(directory, "directory")]
        if custody is not None:
            _check_apart(directory, Path(custody))
            outputs.append((Path(custody), "directory"))
        with (
            publication(self._input_sha256(), kind="release", method=self.method,
                        parameters=dict(self.parameters), record=self.seed,
                        republish=republish, enabled=not (draft or not_for_publication)) as pub,
            atomic_outputs(*outputs, force=force) as temps,
        ):  # fmt: skip
            custody_tmp = temps[1] if custody is not None else None
            files, schema = self._write_tables(temps[0], custody_tmp)
            mark = NOT_FOR_PUBLICATION if not_for_publication else None
            meta = release_meta(self.method, self.parameters, schema, files, self.metadata,
                                mark=mark, engine=self.engine_field)  # fmt: skip
            fingerprint = write_release_json(temps[0], meta)
            check_replay(self.seed, fingerprint)
            pub.check(fingerprint)
            if custody_tmp is not None:
                write_custody_json(custody_tmp, self._custody_meta(custody_tmp, fingerprint))
            pub.record()
        return directory

    def _input_sha256(self) -> str | None:  # pragma: no cover - abstract
        """The input's SHA-256 as the custodian's registry knows it."""
        raise NotImplementedError

    def _write_tables(
        self, tmp: Path, custody_tmp: Path | None
    ) -> tuple[dict[str, Any], Schema]:  # pragma: no cover - abstract
        """Write the published tables into ``tmp`` (and, where the engine writes it in the
        same pass, the truth into ``custody_tmp``); return ``release.json``'s table entries
        and its public schema."""
        raise NotImplementedError

    def _input_fields(self) -> dict[str, Any]:  # pragma: no cover - abstract
        """``custody.json``'s fields that name the input."""
        raise NotImplementedError

    def _write_truth(self, tmp: Path) -> dict[str, Any]:  # pragma: no cover - abstract
        """Write the truth into the custody's ``tmp`` where :meth:`_write_tables` did not;
        return ``custody.json``'s ``truth`` entry."""
        raise NotImplementedError

    def _custody_meta(self, tmp: Path, release_sha256: str) -> dict[str, Any]:
        """``custody.json``: the notice, the method, the release it belongs to, the seed
        record, the input, its measures and the truth's file."""
        meta: dict[str, Any] = {
            "notice": "custodian's files: never publish this directory",
            "method": self.method,
            **({"engine": self.engine_field} if self.engine_field else {}),
            "release_sha256": release_sha256,
            "seed": self.seed.to_dict(),
            **self._input_fields(),
        }
        if self.input_measures is not None:
            meta["input_measures"] = self.input_measures
        if self.truth is not None:
            meta["truth"] = self._write_truth(tmp)
        return meta

    def collect(self) -> Release:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_pandas(self, name: str | None = None) -> pd.DataFrame:
        """A published table as a DataFrame (decoded values): :meth:`collect`, then its
        ``to_pandas`` (every row comes into memory)."""
        return self.collect().to_pandas(name)

    def __repr__(self) -> str:  # never the seed record: custody material
        columns = ", ".join(self.schema.names)
        return f"<{type(self).__name__} {self.method} (engine {self.engine!r}): {columns}>"


def release_class(method: str, where: Any = "release.json") -> type[Release]:
    """The class of a release method (importing its module on first use)."""
    if method not in METHODS:
        raise ReleaseError(
            f"unknown release method {method!r} in {where}; privlab knows: {', '.join(METHODS)}"
        )
    if method not in _CLASSES:
        importlib.import_module(METHODS[method])
    return _CLASSES[method]


def read_meta(directory: str | Path) -> dict[str, Any]:
    """Read and minimally validate ``DIR/release.json``."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ReleaseError(f"not a release directory: {directory} does not exist")
    path = directory / RELEASE_FILE
    if not path.is_file():
        raise ReleaseError(f"not a release: {directory} has no {RELEASE_FILE}")
    try:
        meta = read_json(path, what="release file")
    except PrivlabError as e:
        raise ReleaseError(f"not a release: {e}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("method"), str):
        raise ReleaseError(f"not a release: {path} has no 'method' field")
    if meta.get("layout") != LAYOUT_VERSION:
        raise ReleaseError(
            f"{path} was written in layout {meta.get('layout', 1)!r}; this privlab reads layout "
            f"{LAYOUT_VERSION}, which keeps the seed and the truth out of the release: "
            "sanitize the table again"
        )
    _check_digest(meta, path)
    return meta


def _check_digest(meta: dict[str, Any], path: Path) -> None:
    d = meta.get(DIGEST_FIELD)
    if not isinstance(d, dict) or not isinstance(d.get("sha256"), str):
        raise ReleaseError(
            f"{path} carries no digest of its content ('{DIGEST_FIELD}.sha256'): it was "
            "edited, or written by an earlier privlab; sanitize the table again"
        )
    if d["sha256"] != meta_digest(meta):
        raise ReleaseError(
            f"{path} was modified after the release was written (the SHA-256 of its fields "
            f"differs from its '{DIGEST_FIELD}')"
        )


def load_release(directory: str | Path, *, custody: str | Path | None = None) -> Release:
    """Load any release saved by privlab, whatever its method."""
    return Release.load(directory, custody=custody)


def _check_apart(release: Path, custody: Path) -> None:
    r, c = release.resolve(), custody.resolve()
    if r == c or r in c.parents or c in r.parents:
        raise ParameterError(
            f"the custody directory {custody} and the release {release} must be apart (neither "
            "inside the other): the custody files must never be published with the release"
        )


def _read_frame(path: Path, header: tuple[str, ...], format: str) -> pd.DataFrame:
    # a Parquet table may be a dataset directory (the Spark engine's; part files in order)
    if not (path.is_file() or (format == "parquet" and path.is_dir())):
        raise ReleaseError(f"not a release: {path.parent} has no {path.name}")
    try:
        if format == "parquet" and path.is_dir():  # part files in name order: the row order
            parts = sorted(q for q in path.glob("*.parquet") if q.is_file())
            if not parts:
                raise ReleaseError(f"{path} holds no Parquet part file")
            df = pd.concat([pd.read_parquet(q) for q in parts], ignore_index=True)
        elif format == "parquet":
            df = pd.read_parquet(path)
        else:
            df = restore_frame(pd.read_csv(path, dtype=str, keep_default_na=False))
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError) as e:
        raise ReleaseError(f"{path} cannot be read: {str(e).splitlines()[0][:120]}") from None
    if list(map(str, df.columns)) != list(header):
        raise ReleaseError(
            f"{path} has header {','.join(map(str, df.columns))}; expected {','.join(header)}"
        )
    return df


def _decode(frame: pd.DataFrame, schema: Schema, where: str) -> np.ndarray:
    cols = [schema[n].encode(frame[n].to_numpy(), where=where) for n in schema.names]
    return np.column_stack(cols) if cols else np.empty((len(frame), 0), dtype=np.int64)


def _int_column(frame: pd.DataFrame, name: str, where: str) -> np.ndarray:
    try:
        return frame[name].astype(np.int64).to_numpy()
    except (ValueError, TypeError, OverflowError):
        raise ReleaseError(f"{where}: column {name!r} must hold integers") from None


def _read_table(directory: Path, name: str, spec: dict[str, Any], schema: Schema) -> PublishedTable:
    try:
        file, header = str(spec["file"]), tuple(spec["columns"])
        integers = [str(c) for c in spec.get("integers", [])]
    except (KeyError, TypeError):
        raise ReleaseError(f"{directory}/{RELEASE_FILE}: table {name!r} is malformed") from None
    path = directory / file
    if Path(file).name != file:
        raise ReleaseError(f"{directory}/{RELEASE_FILE}: table file {file!r} is not a file name")
    fmt = "parquet" if path.suffix == ".parquet" else "csv"
    frame = _read_frame(path, header, fmt)
    rows = spec.get("rows")
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int)):
        raise ReleaseError(f"{directory}/{RELEASE_FILE}: tables.{name}.rows must be an integer")
    if rows is not None and rows != len(frame):
        raise ReleaseError(f"{path} has {len(frame)} rows; {RELEASE_FILE} says {rows}")
    if spec.get("sha256") and sha256_path(path) != spec["sha256"]:
        raise ReleaseError(
            f"{path} was modified after the release was written (its SHA-256 differs from "
            f"the one in {RELEASE_FILE})"
        )
    names = [c for c in header if c not in integers]
    unknown = [c for c in names if c not in schema]
    if unknown:
        raise ReleaseError(f"{directory}/{RELEASE_FILE} has no domain for {unknown[0]!r}")
    sub = schema.select(names)
    return PublishedTable(
        Table(_decode(frame, sub, file), sub),
        {c: _int_column(frame, c, file) for c in integers},
        header,
    )


def _version() -> str:
    from privlab import __version__

    return __version__
