"""Anatomy (Xiao & Tao, VLDB 2006), as Mothali (2011, Ch. 3) and Kifer (2009, Sec. 4) use it.

The table is split into a quasi-identifier table (QIT: the exact QI values and a group id)
and a sensitive table (ST: group id, sensitive value, count).  Groups are built by the
*Anatomize* algorithm:

1. **Eligibility.**  No sensitive value may occur in more than ``N / l`` tuples, otherwise no
   l-diverse partition exists (Xiao & Tao, Lemma 1).
2. **Group creation.**  Tuples are hashed into buckets by sensitive value.  While at least
   ``l`` buckets are non-empty, one tuple chosen uniformly at random is removed from each of
   the ``l`` currently largest buckets (ties broken at random) and the ``l`` tuples form a
   group.
3. **Residue assignment.**  The at most ``l - 1`` tuples left over (each of a distinct value)
   each join a random group that lacks their value.  privlab prefers groups no residue has
   joined yet: the residues are matched to *distinct* lacking groups whenever such a matching
   exists (a min-cost bipartite matching with random costs), so group sizes are ``l`` or
   ``l + 1`` (Xiao & Tao allow any lacking group; this only tightens the sizes).  On tiny
   tables where no such matching exists a group can grow up to ``2l - 1``.

Steps 1-3 are the algorithm's core, shared by the engines (:mod:`privlab.publish.
anatomy_core`); this module runs them in memory, :mod:`privlab.publish.spark_anatomy` on
Spark.  Large tables run step 2 in a compiled kernel (:mod:`privlab.publish._anatomy_kernel`,
a port of :mod:`heapq`): the same groups, from the same draws, as the Python heap loop.

Every group then holds distinct sensitive values, so each value has probability at most
``1/l`` in its group under the random-worlds model.  The QIT rows are shuffled and group ids
are assigned at random, so neither row order nor id order carries the sensitive value.

The QIT holds the quasi-identifiers and any column kept unchanged (``keep``); every other
column of the input is dropped.  The seed, its salt and each QIT row's true sensitive value
go to the custody directory (:mod:`privlab.release.base`), never to the release: replaying
the seed of an Anatomy release from its public value counts determines the sensitive value
of most rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import InitVar, dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from privlab._params import check_int
from privlab._rng import RngLike, SeedRecord, publication_rng
from privlab.data.counts import group_counts, require_count_memory
from privlab.data.engine import ENGINES, check_engine
from privlab.data.frames import as_table
from privlab.data.partition import Partition
from privlab.data.schema import Attribute, Role, Schema
from privlab.data.shuffle import shuffled_rows
from privlab.data.spark import SparkInput, spark_input
from privlab.data.stream import DEFAULT_BATCH_ROWS, StreamInput, role_columns, stream_input
from privlab.data.table import Table
from privlab.errors import ParameterError, ReleaseError
from privlab.publish import anatomy_core
from privlab.publish.anatomy_core import Groups, anatomize_groups, check_eligibility
from privlab.publish.spark_release import SparkRelease
from privlab.publish.stream_anatomy import anatomize_stream
from privlab.publish.stream_release import StreamedRelease
from privlab.release.base import Custody, PublishedTable, Release, refuse_reserved


@dataclass(frozen=True, eq=False, repr=False)
class AnatomyRelease(Release):
    """An anatomized table: the QIT and the ST, plus (in memory) the custodian's files.

    Attributes
    ----------
    qit
        The quasi-identifier table: one row per tuple, the QI columns (and kept columns),
        rows shuffled.
    group_id
        ``group_id[i]`` is the group (``0..n_groups-1``) of QIT row ``i``.
    st_group, st_value, st_count
        The sensitive table: one row per (group, value present in the group) with its count,
        sorted by group then value code.
    sensitive
        The sensitive attribute (name and domain).
    l
        The diversity parameter of the run.
    custody
        The custodian's files (seed, salt, each row's true sensitive value), or None;
        :meth:`~privlab.release.base.Release.save` writes them only to ``custody=DIR``.
    """

    qit: Table
    group_id: np.ndarray
    st_group: np.ndarray
    st_value: np.ndarray
    st_count: np.ndarray
    sensitive: Attribute
    l: int
    custody: Custody | None = field(default=None, compare=False)
    #: Skip the consistency checks: only :func:`anatomize`, whose groups are l-diverse and
    #: counted by construction, passes True (the checks were 29% of its time at 1.9M rows;
    #: a release read from files or built by hand is always checked).
    _built: InitVar[bool] = False

    method: ClassVar[str] = "anatomy"

    def __post_init__(self, _built: bool) -> None:
        for name in ("group_id", "st_group", "st_value", "st_count"):
            arr = np.ascontiguousarray(getattr(self, name), dtype=np.int64)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        if self.sensitive.role is not Role.SENSITIVE:
            object.__setattr__(self, "sensitive", replace(self.sensitive, role=Role.SENSITIVE))
        if not _built:
            self._validate()

    # -- derived views ----------------------------------------------------------------------
    @property
    def qi(self) -> tuple[str, ...]:
        """The quasi-identifiers (QIT columns kept unchanged are not among them)."""
        return self.qit.schema.qi

    @property
    def n_groups(self) -> int:
        return int(self.st_group.max()) + 1

    @property
    def n_values(self) -> int:
        return self.sensitive.size

    @property
    def truth(self) -> np.ndarray | None:
        """The custodian's true sensitive code of each QIT row, or None without custody."""
        if self.custody is None or self.custody.truth is None:
            return None
        return self.custody.truth.column(self.sensitive.name).astype(np.int64)

    def group_counts(self) -> np.ndarray:
        """``(n_groups, n_values)`` matrix of the ST counts."""
        c = np.zeros((self.n_groups, self.n_values), dtype=np.int64)
        c[self.st_group, self.st_value] = self.st_count
        return c

    def group_sizes(self) -> np.ndarray:
        return np.bincount(self.group_id, minlength=self.n_groups)

    def partition(self) -> Partition:
        return Partition(self.group_id, self.group_counts(), self.sensitive, kind="groups")

    def qit_frame(self) -> Any:
        return self.to_pandas("qit")

    def st_frame(self) -> Any:
        return self.to_pandas("st")

    # -- the Release interface --------------------------------------------------------------
    def published(self) -> dict[str, PublishedTable]:
        st = Table(self.st_value.reshape(-1, 1), Schema((self.sensitive,)))
        return {
            "qit": PublishedTable(
                self.qit, {"group_id": self.group_id}, (*self.qit.names, "group_id")
            ),
            "st": PublishedTable(
                st,
                {"group_id": self.st_group, "count": self.st_count},
                ("group_id", self.sensitive.name, "count"),
            ),
        }

    def parameters(self) -> dict[str, Any]:
        return {"l": self.l}

    def claims(self) -> list[dict[str, Any]]:
        """Anatomy's l (Xiao & Tao 2006): every group holds each sensitive value in at most
        a share 1/l of its rows, so no one's value is disclosed with probability above 1/l."""
        counts = self.group_counts()
        sizes = counts.sum(axis=1)
        nonempty = np.flatnonzero(sizes > 0)  # a hand-made release may skip group ids
        share = counts.max(axis=1)[nonempty] / sizes[nonempty]
        worst = int(nonempty[np.argmax(share)]) if share.size else 0
        top = float(share.max()) if share.size else 0.0
        return [{
            "claim": f"l = {self.l} (each group's most frequent sensitive value <= 1/{self.l} "
                     "of its rows)",
            "holds": bool(top <= 1.0 / self.l + 1e-12),
            "measured": f"largest share {top:.4g} (group {worst})",
        }]  # fmt: skip

    def metadata(self) -> dict[str, Any]:
        return {"n_groups": self.n_groups}

    def summary(self) -> dict[str, Any]:
        return {
            "rows": self.n_rows,
            "groups": self.n_groups,
            "l": self.l,
            "qi": list(self.qi),
            "sensitive": self.sensitive.name,
        }

    @classmethod
    def _from_published(
        cls, meta: dict[str, Any], tables: dict[str, PublishedTable]
    ) -> AnatomyRelease:
        qit, st = tables["qit"], tables["st"]
        sens = [a for a in st.table.schema.attributes if a.role is Role.SENSITIVE]
        if len(sens) != 1:
            raise ReleaseError("the sensitive table must hold exactly one sensitive column")
        return cls(
            qit=qit.table,
            group_id=qit.integers["group_id"],
            st_group=st.integers["group_id"],
            st_value=st.table.column(sens[0].name),
            st_count=st.integers["count"],
            sensitive=sens[0],
            l=int(meta["parameters"]["l"]),
        )

    @classmethod
    def from_rows(
        cls,
        qi_rows: Sequence[Sequence[Any]],
        qi_names: Sequence[str],
        group_id: Sequence[int],
        st_rows: Sequence[tuple[int, Any]],
        sensitive: str,
        truth: Sequence[Any] | None = None,
    ) -> AnatomyRelease:
        """A release written by hand: QIT rows, their group ids, ST rows ``(group, value)``
        (one per tuple) and optionally each QIT row's true value (kept in custody).

        Domains are the sorted values that appear; group labels may be any integers.
        """
        qi_rows = [tuple(map(str, r)) for r in qi_rows]
        attrs, cols = [], []
        for j, name in enumerate(qi_names):
            dom = tuple(sorted({r[j] for r in qi_rows}))
            attrs.append(Attribute(name, dom, Role.QI))
            cols.append([dom.index(r[j]) for r in qi_rows])
        sattr = Attribute(
            sensitive,
            tuple(sorted({str(v) for _, v in st_rows} | {str(v) for v in truth or ()})),
            Role.SENSITIVE,
        )
        gmap = {g: i for i, g in enumerate(sorted(set(group_id)))}
        counts = group_counts(
            np.array([gmap[g] for g, _ in st_rows]), sattr.encode([str(v) for _, v in st_rows]),
            sattr.size,
        )  # fmt: skip
        st_group, st_value = np.nonzero(counts)
        custody = None
        if truth is not None:
            codes = sattr.encode([str(v) for v in truth]).reshape(-1, 1)
            custody = Custody(truth=Table(codes, Schema((sattr,))))
        return cls(
            qit=Table(
                np.array(cols, dtype=np.int64).T.reshape(len(qi_rows), -1), Schema(tuple(attrs))
            ),
            group_id=np.array([gmap[g] for g in group_id]),
            st_group=st_group,
            st_value=st_value,
            st_count=counts[st_group, st_value],
            sensitive=sattr,
            l=int(counts.sum(axis=1).min()),
            custody=custody,
        )

    # -- checks -----------------------------------------------------------------------------
    def _validate(self) -> None:
        n = self.qit.n_rows
        if self.group_id.shape != (n,):
            raise ReleaseError(f"group_id has {self.group_id.size} entries for {n} QIT rows")
        if not (self.st_group.shape == self.st_value.shape == self.st_count.shape):
            raise ReleaseError("the sensitive table's columns differ in length")
        if n == 0:
            raise ReleaseError("the release is empty (0 QIT rows)")
        if not self.qi:
            raise ReleaseError("the QIT has no quasi-identifier column")
        if self.group_id.min() < 0 or self.st_group.min() < 0:
            raise ReleaseError("group ids must be non-negative integers")
        if np.any(self.st_count <= 0):
            raise ReleaseError("the sensitive table has a count <= 0")
        if np.any(self.st_value >= self.n_values) or np.any(self.st_value < 0):
            raise ReleaseError("the sensitive table has a value outside its domain")
        n_groups = int(max(self.group_id.max(), self.st_group.max())) + 1
        sizes = np.bincount(self.group_id, minlength=n_groups)
        st_sizes = np.bincount(self.st_group, weights=self.st_count, minlength=n_groups)
        bad = np.flatnonzero(sizes != st_sizes)
        if bad.size:
            g = int(bad[0])
            raise ReleaseError(
                f"group {g} has {sizes[g]} QIT rows but its ST counts sum to {int(st_sizes[g])}"
            )
        m = self.n_values
        pairs = self.st_group * m + self.st_value
        # sorted by group then value (as anatomize writes it): one pass, else a sort
        if not np.all(pairs[1:] > pairs[:-1]) and np.unique(pairs).size != pairs.size:
            raise ReleaseError("the sensitive table lists a (group, value) pair twice")
        truth = self.truth
        if truth is not None:
            if truth.shape != (n,):
                raise ReleaseError(f"truth has {truth.size} entries for {n} QIT rows")
            # The truth's count of every (group, value) cell equals the ST's.  Checked on
            # the ST's cells only: they are distinct, and both sides total n (the group
            # sizes agree), so no truth count can lie outside them.
            if truth.min() < 0 or truth.max() >= m:
                raise ReleaseError("the truth does not match the sensitive table's counts")
            t = np.bincount(self.group_id * m + truth, minlength=n_groups * m)
            if not np.array_equal(t[pairs], self.st_count):
                raise ReleaseError("the truth does not match the sensitive table's counts")


def anatomize(
    data: Any,
    *,
    l: int,
    qi: Sequence[str] | None = None,
    sensitive: str | None = None,
    keep: Sequence[str] | None = None,
    rng: RngLike | SeedRecord = None,
    engine: str = "memory",
    schema: Schema | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    buckets: int | None = None,
) -> AnatomyRelease | SparkRelease | StreamedRelease:
    """Publish a table with Anatomy at diversity ``l`` (Xiao & Tao 2006).

    Parameters
    ----------
    data
        The microdata: a privlab ``Table``, a pandas or polars DataFrame or a pyarrow Table.
    l
        Group diversity (>= 2): every group holds ``l`` (or ``l + 1``) distinct values.
    qi, sensitive, keep
        The quasi-identifiers, the sensitive attribute and the columns published unchanged
        in the QIT; default: the table's roles.  Every other column is dropped.
    rng
        None (OS entropy), a seed (salted with 128 bits of OS entropy: see
        :func:`privlab._rng.publication_rng`), a custody's seed record (replays that
        release), or a generator of the caller's (used as given).
    engine, schema
        ``"spark"``: ``data`` is a Spark DataFrame or a Parquet path and ``schema`` its
        public domains (and roles); the groups are scheduled on the driver from the value
        counts and the rows assigned on the cluster by random rank within each value
        (:func:`privlab.publish.spark_anatomy.anatomize_spark`); returns a
        :class:`~privlab.publish.spark_release.SparkRelease`.  ``"stream"``: ``data`` is a
        Parquet file read ``batch_rows`` rows at a time and ``schema`` its public domains
        (and roles); the groups are scheduled from one pass of value counts and the ranks
        drawn by an external shuffle of ``buckets`` files
        (:mod:`privlab.publish.stream_anatomy`); returns a
        :class:`~privlab.publish.stream_release.StreamedRelease` whose ``save()`` writes the
        QIT and ``collect()`` is the in-memory release.
    batch_rows, buckets
        The stream engine's batches and bucket files.

    Returns
    -------
    AnatomyRelease
        With ``custody`` set (seed, salt, input fingerprint, each QIT row's true value);
        :meth:`~privlab.release.base.Release.save` writes it only to ``custody=DIR``.

    Raises
    ------
    SchemaError
        Unknown column, a column given two roles.
    ParameterError
        No QI or sensitive attribute, ``l < 2`` or ``l`` above the number of distinct
        sensitive values.
    EligibilityError
        A value occurs in more than ``N / l`` tuples.
    """
    engine = check_engine(engine, available=ENGINES, what="anatomize")
    if schema is not None and engine == "memory":
        raise ParameterError("schema= applies to the Spark and stream engines")
    if engine == "spark":
        table = spark_input(data, schema)
    elif engine == "stream":
        read = role_columns(schema, qi, sensitive, keep)
        table = stream_input(data, schema, columns=read, batch_rows=batch_rows)
    else:
        table = as_table(data)
    schema = table.schema
    qi = list(schema.qi if qi is None else qi)
    keep = list(schema.insensitive if keep is None else keep)
    sensitive = schema.sensitive if sensitive is None else sensitive
    if sensitive is None:
        raise ParameterError("no sensitive attribute given")
    if not qi:
        raise ParameterError("no quasi-identifier given")
    schema = schema.with_roles(qi=qi, sensitive=sensitive, keep=keep)
    refuse_reserved(schema.published)
    l = check_int("l", l, low=2)
    if isinstance(table, SparkInput):
        from privlab.publish.spark_anatomy import anatomize_spark

        return anatomize_spark(table, l=l, qi=qi, sensitive=sensitive, keep=keep, rng=rng)
    if isinstance(table, StreamInput):
        return anatomize_stream(table, l=l, qi=qi, sensitive=sensitive, keep=keep, rng=rng,
                                buckets=buckets)  # fmt: skip
    table.require_rows()
    s = table.column(sensitive).astype(np.int64)
    n_values = schema[sensitive].size
    n_distinct = int(np.count_nonzero(np.bincount(s, minlength=n_values)))
    if l > n_distinct:
        raise ParameterError(
            f"l = {l} is above the number of distinct values of {sensitive!r} ({n_distinct})"
        )
    check_eligibility(s, l, schema[sensitive].domain)
    require_count_memory(s.size // l, n_values)  # before any work
    gen, record = publication_rng(rng)
    fingerprint = table.fingerprint_soon()  # hashed beside the grouping
    groups = anatomize_groups(s, l, gen)

    # Publish: shuffle rows, relabel groups at random.
    n_groups = groups.members.shape[0]
    relabel = gen.permutation(n_groups)
    cols = [*qi, *keep]
    qit_codes, gid, truth = _publish_rows(
        table.codes, schema.indices(cols), groups, relabel, s, gen
    )
    st_group, st_value, st_count = _sensitive_table(groups, relabel, n_values)
    qit = Table.checked(qit_codes, schema.select(cols))  # the input's codes, moved
    sens = schema[sensitive]
    custody = Custody(
        seed=record,
        input_sha256=fingerprint(),
        truth=Table.checked(truth.reshape(-1, 1).astype(np.int32), Schema((sens,))),
    )
    return AnatomyRelease(
        qit=qit,
        group_id=gid,
        st_group=st_group,
        st_value=st_value,
        st_count=st_count,
        sensitive=sens,
        l=l,
        custody=custody,
        _built=True,
    )


def _publish_rows(
    codes: np.ndarray,
    cols: list[int],
    groups: Groups,
    relabel: np.ndarray,
    s: np.ndarray,
    gen: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The release's rows in a uniformly random order: input row ``perm[i]``'s ``cols``
    codes, its published group ``relabel[group]`` and its sensitive code, for every ``i``,
    with ``perm = privlab.data.shuffle.permutation(gen, n)``: the rows, their groups and
    values moved together by :func:`~privlab.data.shuffle.shuffled_rows` (from a million
    rows, two passes that stay in the cache, instead of numpy's permutation and a gather at
    random; with the grouping's own order drawn so too, the whole of ``anatomize`` at 1.9
    million rows took 1.3-2.0x less CPU, issue 38)."""
    rows, aux = shuffled_rows(gen, codes, cols, np.column_stack((groups.group, s)))
    return rows, np.take(relabel, aux[:, 0]), np.ascontiguousarray(aux[:, 1])


def _sensitive_table(
    groups: Groups, relabel: np.ndarray, n_values: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ST: ``(group, value, count)`` of every value present in a group, sorted by the
    published group id then the value code, as ``np.nonzero`` of the groups x values count
    matrix lists them, without that matrix or a pass over the tuples.

    Group ``g`` (published as ``relabel[g]``) holds the values ``members[g]`` and those of
    the residues that joined it.
    """
    members = groups.members
    n_groups = members.shape[0]
    order = np.empty(n_groups, dtype=np.int64)
    order[relabel] = np.arange(n_groups)  # published id -> group
    rows = np.take(members, order, axis=0)  # (np.take: 6x faster than members[order])
    if members.size >= anatomy_core.KERNEL_MIN:  # (read here: a test lowers it)
        from privlab.publish._anatomy_kernel import sensitive_table

        size = members.size + groups.res_value.size
        st = [np.empty(size, dtype=np.int64) for _ in range(3)]
        used = sensitive_table(rows, relabel[groups.res_group], groups.res_value, *st)
        return st[0][:used], st[1][:used], st[2][:used]
    rows = np.sort(rows, axis=1)
    keys = (np.arange(n_groups, dtype=np.int64)[:, None] * n_values + rows).reshape(-1)
    if groups.res_group.size:
        extra = np.sort(relabel[groups.res_group] * n_values + groups.res_value)
        keys = np.insert(keys, np.searchsorted(keys, extra, side="right"), extra)
    new = np.empty(keys.size, dtype=bool)
    new[0] = True
    np.not_equal(keys[1:], keys[:-1], out=new[1:])
    first = np.flatnonzero(new)
    count = np.diff(np.append(first, keys.size))
    key = keys[first]
    return key // n_values, key % n_values, count
