"""Anatomy (Xiao & Tao, VLDB 2006), as seed 000 Ch. 3 and seed 003 Sec. 4 describe it.

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

Every group then holds distinct sensitive values, so each value has probability at most
``1/l`` in its group under the random-worlds model.  The QIT rows are shuffled and group ids
are assigned at random, so neither row order nor id order carries the sensitive value.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment

from privlab._io import atomic_dir
from privlab._rng import RngLike, as_generator, seed_of
from privlab.data.schema import Attribute, Role, Schema
from privlab.data.table import Table
from privlab.errors import EligibilityError, ParameterError, PrivlabError, ReleaseError
from privlab.metrics.privacy import PartitionPrivacy, partition_privacy
from privlab.publish.release import RELEASE_FILE, read_meta, release_method

QIT_FILE = "qit.csv"
ST_FILE = "st.csv"
TRUTH_FILE = "truth.csv"


@release_method("anatomy")
@dataclass(frozen=True, eq=False)
class AnatomyRelease:
    """An anatomized table: what is published, plus (optionally) the custodian's truth.

    Attributes
    ----------
    qit
        The quasi-identifier table: one row per tuple, QI columns only, rows shuffled.
    group_id
        ``group_id[i]`` is the group (``0..n_groups-1``) of QIT row ``i``.
    st_group, st_value, st_count
        The sensitive table: one row per (group, value present in the group) with its count,
        sorted by group then value code.
    sensitive
        The sensitive attribute (name and domain).
    l, seed
        Parameters of the run (``seed`` is None when the run was not seeded).
    truth
        The custodian's true sensitive code of each QIT row, or None.  Never published:
        :meth:`save` writes it only with ``keep_truth=True``, to evaluate attacks.
    """

    qit: Table
    group_id: np.ndarray
    st_group: np.ndarray
    st_value: np.ndarray
    st_count: np.ndarray
    sensitive: Attribute
    l: int
    seed: int | None = None
    truth: np.ndarray | None = field(default=None, repr=False)

    method: ClassVar[str] = "anatomy"

    def __post_init__(self) -> None:
        for name in ("group_id", "st_group", "st_value", "st_count"):
            arr = np.ascontiguousarray(getattr(self, name), dtype=np.int64)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        if self.truth is not None:
            t = np.ascontiguousarray(self.truth, dtype=np.int64)
            t.setflags(write=False)
            object.__setattr__(self, "truth", t)
        self._validate()

    # -- derived views ----------------------------------------------------------------------
    @property
    def qi(self) -> tuple[str, ...]:
        return self.qit.names

    @property
    def n_rows(self) -> int:
        return self.qit.n_rows

    @property
    def n_groups(self) -> int:
        return int(self.group_counts().shape[0])

    @property
    def n_values(self) -> int:
        return self.sensitive.size

    def group_counts(self) -> np.ndarray:
        """``(n_groups, n_values)`` matrix of the ST counts."""
        n_groups = int(self.st_group.max()) + 1 if self.st_group.size else 0
        c = np.zeros((n_groups, self.n_values), dtype=np.int64)
        c[self.st_group, self.st_value] = self.st_count
        return c

    def group_sizes(self) -> np.ndarray:
        return np.bincount(self.group_id, minlength=self.n_groups)

    def privacy(self) -> PartitionPrivacy:
        """k, distinct / entropy / recursive l-diversity of the published partition."""
        return partition_privacy(self.group_counts())

    def qit_frame(self) -> pd.DataFrame:
        df = self.qit.to_pandas()
        df["group_id"] = self.group_id
        return df

    def st_frame(self) -> pd.DataFrame:
        dom = np.asarray(self.sensitive.domain, dtype=object)
        return pd.DataFrame(
            {
                "group_id": self.st_group,
                self.sensitive.name: dom[self.st_value],
                "count": self.st_count,
            }
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``release.json`` content."""
        attrs = [*self.qit.schema.attributes, self.sensitive]
        return {
            "method": self.method,
            "parameters": {"l": self.l, "seed": self.seed},
            "qi": list(self.qi),
            "sensitive": self.sensitive.name,
            "domains": {a.name: list(a.domain) for a in attrs},
            "numeric": [a.name for a in attrs if a.numeric],
            "n_rows": self.n_rows,
            "n_groups": self.n_groups,
        }

    # -- persistence ------------------------------------------------------------------------
    def save(self, directory: str | Path, *, keep_truth: bool = False, force: bool = False) -> Path:
        """Write ``qit.csv``, ``st.csv``, ``release.json`` (and ``truth.csv``) atomically.

        ``truth.csv`` (header ``row,<sensitive>``) is the custodian's file for evaluating
        attacks; it is never part of what is published.
        """
        if keep_truth and self.truth is None:
            raise PrivlabError("this release carries no truth to keep (it was loaded without it)")
        directory = Path(directory)
        with atomic_dir(directory, force=force) as tmp:
            self.qit_frame().to_csv(tmp / QIT_FILE, index=False)
            self.st_frame().to_csv(tmp / ST_FILE, index=False)
            (tmp / RELEASE_FILE).write_text(json.dumps(self.to_dict(), indent=2) + "\n")
            if keep_truth:
                dom = np.asarray(self.sensitive.domain, dtype=object)
                pd.DataFrame(
                    {"row": np.arange(self.n_rows), self.sensitive.name: dom[self.truth]}
                ).to_csv(tmp / TRUTH_FILE, index=False)
        return directory

    @classmethod
    def load(cls, directory: str | Path, *, with_truth: bool = True) -> AnatomyRelease:
        """Read a release written by :meth:`save` (or by an outside tool in the same layout).

        ``truth.csv`` is read when present and ``with_truth`` is true.
        """
        directory = Path(directory)
        meta = read_meta(directory)
        if meta.get("method") != cls.method:
            raise ReleaseError(f"{directory} holds a {meta.get('method')!r} release, not anatomy")
        try:
            qi = list(meta["qi"])
            sens_name = meta["sensitive"]
            domains = meta["domains"]
            numeric = set(meta.get("numeric", []))
            params = meta.get("parameters", {})
        except KeyError as e:
            raise ReleaseError(
                f"{directory}/{RELEASE_FILE} lacks the field {e.args[0]!r}"
            ) from None
        for name in (*qi, sens_name):
            if name not in domains:
                raise ReleaseError(f"{directory}/{RELEASE_FILE} has no domain for {name!r}")
        attrs = {n: Attribute(n, tuple(d), Role.OTHER, n in numeric) for n, d in domains.items()}
        qit_df = _read_csv(directory / QIT_FILE, [*qi, "group_id"])
        st_df = _read_csv(directory / ST_FILE, ["group_id", sens_name, "count"])
        cols = [_encode(qit_df[q], attrs[q], QIT_FILE) for q in qi]
        codes = np.column_stack(cols) if cols else np.empty((len(qit_df), 0), dtype=np.int32)
        qit = Table(codes, Schema(tuple(attrs[q] for q in qi)).with_roles(qi=qi))
        sens = Attribute(sens_name, attrs[sens_name].domain, Role.SENSITIVE)
        truth = None
        if with_truth and (directory / TRUTH_FILE).is_file():
            truth = read_truth(directory / TRUTH_FILE, sens, len(qit_df))
        return cls(
            qit=qit,
            group_id=_int_column(qit_df["group_id"], QIT_FILE),
            st_group=_int_column(st_df["group_id"], ST_FILE),
            st_value=_encode(st_df[sens_name], sens, ST_FILE),
            st_count=_int_column(st_df["count"], ST_FILE),
            sensitive=sens,
            l=int(params.get("l", 0)),
            seed=params.get("seed"),
            truth=truth,
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
        pairs = self.st_group * self.n_values + self.st_value
        if np.unique(pairs).size != pairs.size:
            raise ReleaseError("the sensitive table lists a (group, value) pair twice")
        if self.truth is not None:
            if self.truth.shape != (n,):
                raise ReleaseError(f"truth has {self.truth.size} entries for {n} QIT rows")
            t = np.zeros((n_groups, self.n_values), dtype=np.int64)
            np.add.at(t, (self.group_id, self.truth), 1)
            st = np.zeros_like(t)
            st[self.st_group, self.st_value] = self.st_count
            if not np.array_equal(t, st):
                raise ReleaseError("the truth does not match the sensitive table's counts")


def read_truth(path: str | Path, sensitive: Attribute, n_rows: int) -> np.ndarray:
    """Read a ``truth.csv`` (header ``row,<sensitive>``) into codes ordered by row."""
    df = _read_csv(Path(path), ["row", sensitive.name])
    rows = _int_column(df["row"], Path(path).name)
    if len(df) != n_rows or not np.array_equal(np.sort(rows), np.arange(n_rows)):
        raise ReleaseError(
            f"{path} does not match the release: it must list rows 0..{n_rows - 1} once each"
        )
    codes = np.empty(n_rows, dtype=np.int64)
    codes[rows] = _encode(df[sensitive.name], sensitive, Path(path).name)
    return codes


def _read_csv(path: Path, header: list[str]) -> pd.DataFrame:
    if not path.is_file():
        raise ReleaseError(f"not a release: {path.parent} has no {path.name}")
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    if list(df.columns) != header:
        raise ReleaseError(f"{path} has header {','.join(df.columns)}; expected {','.join(header)}")
    return df


def _encode(col: pd.Series, attr: Attribute, where: str) -> np.ndarray:
    lookup = {str(v): i for i, v in enumerate(attr.domain)}
    codes = col.map(lookup)
    if codes.isna().any():
        bad = col[codes.isna()].iloc[0]
        raise ReleaseError(f"{where}: value {bad!r} is not in the domain of {attr.name!r}")
    return codes.to_numpy(dtype=np.int64)


def _int_column(col: pd.Series, where: str) -> np.ndarray:
    try:
        return col.astype(np.int64).to_numpy()
    except ValueError:
        raise ReleaseError(f"{where}: column {col.name!r} must hold integers") from None


def check_eligibility(values: np.ndarray, l: int, domain: Sequence[Any] | None = None) -> None:
    """Raise :class:`EligibilityError` unless every value occurs in at most ``N / l`` tuples."""
    n = values.size
    counts = np.bincount(values)
    v = int(np.argmax(counts))
    if counts[v] * l > n:
        name = domain[v] if domain is not None else v
        raise EligibilityError(
            f"the table is not {l}-eligible: value {name!r} occurs in {counts[v]} of {n} "
            f"tuples, more than N/l = {n / l:.1f}"
        )


def anatomize(
    table: Table,
    *,
    l: int,
    qi: Sequence[str] | None = None,
    sensitive: str | None = None,
    rng: RngLike = None,
) -> AnatomyRelease:
    """Publish ``table`` with Anatomy at diversity ``l``.

    Parameters
    ----------
    table
        The microdata.
    l
        Group diversity (>= 2): every group holds ``l`` (or ``l + 1``) distinct values.
    qi, sensitive
        The quasi-identifiers and the sensitive attribute; default: the table's roles.
    rng
        Seed or generator; None draws from the OS.

    Returns
    -------
    AnatomyRelease
        With ``truth`` set (the custodian's copy; :meth:`AnatomyRelease.save` leaves it out
        unless asked).

    Raises
    ------
    SchemaError
        Unknown column, or the sensitive attribute also listed as a QI.
    ParameterError
        ``l < 2`` or ``l`` above the number of distinct sensitive values.
    EligibilityError
        A value occurs in more than ``N / l`` tuples.
    """
    qi = list(table.schema.qi if qi is None else qi)
    sensitive = table.schema.sensitive if sensitive is None else sensitive
    if sensitive is None:
        raise ParameterError("no sensitive attribute given")
    if not qi:
        raise ParameterError("no quasi-identifier given")
    schema = table.schema.with_roles(qi=qi, sensitive=sensitive)
    if isinstance(l, bool) or not isinstance(l, (int, np.integer)):
        raise ParameterError(f"l must be an integer, got {l!r}")
    l = int(l)
    if l < 2:
        raise ParameterError(f"l must be at least 2, got {l}")
    table.require_rows()
    s = table.column(sensitive).astype(np.int64)
    n_distinct = int(np.unique(s).size)
    if l > n_distinct:
        raise ParameterError(
            f"l = {l} is above the number of distinct values of {sensitive!r} ({n_distinct})"
        )
    check_eligibility(s, l, schema[sensitive].domain)
    gen = as_generator(rng)
    group = _anatomize_groups(s, l, gen)

    # Publish: shuffle rows, relabel groups at random.
    n_groups = int(group.max()) + 1
    relabel = gen.permutation(n_groups)
    perm = gen.permutation(s.size)
    gid = relabel[group[perm]]
    truth = s[perm]
    m = schema[sensitive].size
    counts = np.zeros((n_groups, m), dtype=np.int64)
    np.add.at(counts, (gid, truth), 1)
    st_group, st_value = np.nonzero(counts)
    qit = Table(table.codes[perm][:, schema.indices(qi)], schema.select(qi))
    return AnatomyRelease(
        qit=qit,
        group_id=gid,
        st_group=st_group,
        st_value=st_value,
        st_count=counts[st_group, st_value],
        sensitive=schema[sensitive],
        l=l,
        seed=seed_of(rng),
        truth=truth,
    )


def _anatomize_groups(s: np.ndarray, l: int, gen: np.random.Generator) -> np.ndarray:
    """Group label of every tuple (in input order), by the Anatomize algorithm."""
    n = s.size
    m = int(s.max()) + 1
    # Buckets: each value's tuples in random order; popping from the end draws at random.
    order = gen.permutation(n)
    order = order[np.argsort(s[order], kind="stable")]
    counts = np.bincount(s, minlength=m)
    starts = np.concatenate(([0], np.cumsum(counts)))
    remaining = counts.copy()
    # Max-heap on remaining count, random tie-break.
    tie = gen.permutation(m)
    heap = [(-int(counts[v]), int(tie[v]), v) for v in range(m) if counts[v] > 0]
    heapq.heapify(heap)
    group = np.full(n, -1, dtype=np.int64)
    members: list[np.ndarray] = []
    g = 0
    while len(heap) >= l:
        picked = [heapq.heappop(heap) for _ in range(l)]
        rows = []
        for _, _, v in picked:
            remaining[v] -= 1
            rows.append(order[starts[v] + remaining[v]])
        group[rows] = g
        members.append(np.array([v for _, _, v in picked]))
        g += 1
        for negc, t, v in picked:
            if negc + 1 < 0:
                heapq.heappush(heap, (negc + 1, t, v))
    if g == 0:
        raise EligibilityError("no group of l distinct values could be formed")
    # Residue: each leftover tuple joins a random group lacking its value.  Residues are
    # matched to *distinct* groups when such a matching exists (a min-cost bipartite matching
    # with random costs, so the choice is random); otherwise the rest join any lacking group.
    has = np.zeros((g, m), dtype=bool)
    has[np.repeat(np.arange(g), l), np.concatenate(members)] = True
    res_rows = [order[starts[v] + k] for _, _, v in heap for k in range(remaining[v])]
    res_vals = [v for _, _, v in heap for _ in range(remaining[v])]
    if res_rows:
        lacking = ~has[:, res_vals].T  # (residues, groups)
        if not lacking.any(axis=1).all():  # impossible for an eligible table (Xiao & Tao)
            v = res_vals[int(np.argmin(lacking.any(axis=1)))]
            raise EligibilityError(f"no group lacks sensitive code {v} for a residual tuple")
        cost = np.where(lacking, gen.random(lacking.shape), 2.0 * len(res_rows) + 1.0)
        matched = dict(zip(*linear_sum_assignment(cost)))
        for r, (row, v) in enumerate(zip(res_rows, res_vals)):
            target = matched.get(r, -1)
            if target < 0 or not lacking[r, target]:  # no distinct matching: any lacking group
                target = int(gen.choice(np.flatnonzero(~has[:, v])))
            group[row] = target
            has[target, v] = True
    return group
