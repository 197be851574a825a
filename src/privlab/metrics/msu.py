"""Minimal sample uniques (MSUs): the smallest sets of a record's quasi-identifier values that
no other record of the sample shares (Elliot, Manning & Ford 2002, "A computational
algorithm for handling the special uniques problem", IJUFKS 10(5); SUDA2: Manning, Haglin &
Keane 2008, "A recursive search algorithm for statistical disclosure assessment", Data Min.
Knowl. Disc. 16).

A record's values on a set ``S`` of columns form a *sample unique* when no other record has
the same values on ``S``; it is *minimal* when no proper subset of ``S`` is already unique
for that record.  A record with an MSU of one or two values is re-identified by anyone who
knows those few facts about the person, whatever the other columns say: SUDA's *special
uniques*.  This module finds every MSU of every record up to ``max_size`` columns.

Uniqueness only grows with the columns (a record unique on ``S`` is unique on every superset),
so a unique set is minimal exactly when none of its subsets one column smaller is unique:
the search goes level by level over the column subsets, counting each subset's value
combinations once (:func:`privlab.data.counts.distinct_rows`) and keeping the previous
level's uniqueness as bits.  SUDA2 finds the same sets by a recursive search that skips most
subsets; this level-wise search does ``sum_{k <= max_size} C(d, k)`` counting passes (1,023 at
``d = 10``), each linear in the records: its time is measured in ``benchmarks/bench_msu.py``.

:func:`suda_scores` turns one such search into the SUDA and DIS-SUDA scores of every record
as sdcMicro's ``suda2()`` computes them (its ``src/Suda2.h`` and ``R/suda2.R``, read at
commit ``cf32510``, sdcMicro 5.7.x): see :class:`SudaScores` for the definitions and the
places where sdcMicro departs from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from privlab._frames import ToFrames
from privlab.errors import ParameterError

#: columns at most (the search visits every subset up to max_size of them)
MAX_COLUMNS = 20


@dataclass(frozen=True, eq=False)
class MinimalSampleUniques(ToFrames):
    """The MSUs of every record (:func:`minimal_sample_uniques`).

    ``counts[i, k - 1]`` is the number of MSUs of size ``k`` of record ``i``; MSU ``m`` is
    record ``record[m]`` on the columns ``subsets[subset[m]]`` (names, in the table's
    order), listed by size, then columns, then record (:meth:`pairs`)."""

    counts: np.ndarray = field(repr=False)
    record: np.ndarray = field(repr=False)
    subset: np.ndarray = field(repr=False)
    subsets: tuple[tuple[str, ...], ...] = field(repr=False)
    names: tuple[str, ...]
    max_size: int

    def pairs(self) -> list[tuple[int, tuple[str, ...]]]:
        """Every MSU as ``(record, columns)``."""
        return [(int(i), self.subsets[j]) for i, j in zip(self.record, self.subset)]

    @property
    def n(self) -> int:
        return int(self.counts.shape[0])

    @property
    def smallest(self) -> np.ndarray:
        """Each record's smallest MSU size (0: none up to ``max_size``)."""
        has = self.counts > 0
        first = np.argmax(has, axis=1) + 1
        return np.where(has.any(axis=1), first, 0)

    def records_with_msu(self, size: int) -> int:
        """Records with an MSU of at most ``size`` columns."""
        return int((self.counts[:, :size].sum(axis=1) > 0).sum())

    def to_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "names": list(self.names),
            "max_size": self.max_size,
            "msus": int(self.record.size),
            "msus_by_size": [int(x) for x in self.counts.sum(axis=0)],
            "records_with_msu_by_size": [
                self.records_with_msu(k) for k in range(1, self.max_size + 1)
            ],
        }

    def to_pandas(self):
        import pandas as pd

        cols = {f"msu_{k}": self.counts[:, k - 1] for k in range(1, self.max_size + 1)}
        return pd.DataFrame({"smallest_msu": self.smallest, **cols})


def minimal_sample_uniques(
    codes: np.ndarray,
    names: tuple[str, ...] | list[str] | None = None,
    *,
    max_size: int | None = None,
) -> MinimalSampleUniques:
    """Every record's minimal sample uniques up to ``max_size`` columns (default: all).

    Parameters
    ----------
    codes
        Integer codes ``(n, d)`` of the quasi-identifiers, one row per record.
    names
        The columns' names (default ``c0, c1, ...``).
    max_size
        The largest MSU searched for (SUDA's threshold; ``1 <= max_size <= d``).
    """
    from privlab._params import check_codes, check_int
    from privlab.data.counts import distinct_rows

    c = check_codes(codes)
    n, d = c.shape
    if d == 0:
        raise ParameterError("no quasi-identifier given")
    if d > MAX_COLUMNS:
        raise ParameterError(
            f"{d} columns: at most {MAX_COLUMNS} (the search visits every subset of them)"
        )
    names = tuple(names) if names is not None else tuple(f"c{j}" for j in range(d))
    if len(names) != d:
        raise ParameterError(f"{len(names)} names for {d} columns")
    if len(set(names)) != d:
        twice = sorted({v for v in names if names.count(v) > 1})
        raise ParameterError(f"column names must differ, got {twice} more than once")
    top = d if max_size is None else check_int("max_size", max_size, low=1)
    if top > d:
        raise ParameterError(f"max_size must be at most the {d} columns, got {top}")
    counts = np.zeros((n, top), dtype=np.int64)
    records: list[np.ndarray] = []
    subset_ids: list[np.ndarray] = []
    subsets: list[tuple[str, ...]] = []
    # the previous level's uniqueness per column subset, as bits (C(10, 5) masks of 1M
    # records: 31 MB, not 252)
    previous: dict[tuple[int, ...], np.ndarray] = {(): np.packbits(np.zeros(n, dtype=bool))}
    for k in range(1, top + 1):
        current: dict[tuple[int, ...], np.ndarray] = {}
        for cols in combinations(range(d), k):
            _, inverse, sizes = distinct_rows(c[:, cols])
            unique = sizes[inverse] == 1
            covered = np.zeros(n, dtype=bool)
            for drop in range(k):  # the subsets one column smaller
                below = previous[cols[:drop] + cols[drop + 1 :]]
                covered |= np.unpackbits(below, count=n).astype(bool)
            rows = np.flatnonzero(unique & ~covered)
            if rows.size:
                counts[rows, k - 1] += 1
                records.append(rows)
                subset_ids.append(np.full(rows.size, len(subsets), dtype=np.int32))
                subsets.append(tuple(names[j] for j in cols))
            if k < top:
                current[cols] = np.packbits(unique)
        previous = current
    record = np.concatenate(records) if records else np.zeros(0, dtype=np.int64)
    subset = np.concatenate(subset_ids) if subset_ids else np.zeros(0, dtype=np.int32)
    return MinimalSampleUniques(counts, record, subset, tuple(subsets), names, top)


#: the upper ends of the DIS-SUDA score table of sdcMicro's ``print.suda2`` (``== 0``,
#: ``(0.0, 0.1]``, ..., ``(0.6, 0.7]``, ``> 0.7``): ``seq(0, 0.7, 0.1) + .Machine$double.eps``
_DIS_EDGES = np.arange(8) / 10 + np.finfo(np.float64).eps
_DIS_LABELS = ("== 0", *(f"({k / 10:.1f}, {(k + 1) / 10:.1f}]" for k in range(7)), "> 0.7")


def suda_weights(d: int, max_size: int, *, original_scores: bool = True) -> np.ndarray:
    """The score of one MSU of each size ``k = 1 .. max_size`` among ``d`` key variables.

    ``original_scores=True`` (sdcMicro's default since 5.0.3): Elliot et al.'s
    ``prod_{i=k}^{M-1} (d - i)`` with ``M = max_size``, ``(d - k)!`` at sdcMicro's ``M = d``
    (``Suda2.h``: ``g_ab[k-1] = prod_{j=k}^{d-1} (d - j)``; an MSU of all ``d`` variables
    scores the empty product, 1).  Elliot, Manning & Ford (2002) write the product up to
    ``M`` with ``M`` the largest size searched and ``d - 1`` at most; that product is this one
    times ``d - M``, a constant factor that no DIS score or contribution share sees.

    ``original_scores=False``: the IHSN implementation's ``(2^(d-k) - 1) / C(d, k)``
    (``g_ab = a * b`` with ``a = 2^(d-k) - 1``, ``b = k! (d-k)! / d!``), which does not depend
    on ``M`` and gives an MSU of all ``d`` variables no weight.
    """
    from math import comb, prod

    sizes = range(1, max_size + 1)
    if original_scores:
        w = [float(prod(d - i for i in range(k, max_size))) for k in sizes]
    else:
        w = [(2.0 ** (d - k) - 1.0) / comb(d, k) for k in sizes]
    return np.asarray(w, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class SudaScores(ToFrames):
    """Every record's SUDA and DIS-SUDA score (:func:`suda_scores`), as sdcMicro's
    ``suda2()`` gives them (``src/Suda2.h``, ``R/suda2.R``).

    **SUDA score** (Elliot, Manning & Ford 2002, IJUFKS 10(5); SUDA2: Manning, Haglin &
    Keane 2008, DMKD 16): ``score[i] = sum over the MSUs m of record i of w(|m|)``, with the
    weights of :func:`suda_weights`.  A record without an MSU scores 0; so does every copy
    of a duplicated record (all its values are shared).

    **Contributions** (sdcMicro's ``contributionPercent``, a share in [0, 1] despite its
    name): ``contribution[i, v] = (sum of w(|m|) over the MSUs m of record i that hold
    variable v) / score[i]`` (0 when ``score[i] = 0``).  A record's shares add up to the
    mean MSU size weighted by ``w``, not to 1: every variable of an MSU gets its whole
    weight.  :attr:`attribute_contributions` is ``100 * sum_i contribution[i, v] score[i] /
    sum_i score[i]`` (``R/suda2.R``); again not a split of 100.  Where SUDA2 merges items
    (variable = value) that cover the same records and counts ``m`` correlated MSUs at once,
    ``Suda2.h`` adds ``m * w`` to each variable of the MSU it found and at most one ``w`` to
    the merged items' own variables, so on such tables its contributions (not its scores)
    differ from these, which follow the definition above.

    **DIS-SUDA score** (Elliot, Skinner & Dale 2005; the IHSN code as ``Suda2.h`` has it):
    with ``U`` the records unique on all ``d`` variables, ``P`` the records whose values on
    all ``d`` occur exactly twice and ``f`` the sampling fraction (``DisFraction``), the
    file-level probability that a sample unique is a population unique (Skinner & Elliot
    2002, JRSS B 64(4), eq. (9): ``f n_1 / (f n_1 + 2 (1 - f) n_2)`` with ``n_2 = P / 2``
    pairs) is ``dis = U f / (U f + P (1 - f))``; it is spread over the records by their
    scores, ``dis_score[i] = 1 / (1 + (U / dis - U) / (score[i]^q sum_j score[j]^-q))``
    over the records with ``score > 0`` (0 for the others), ``q = 1 + (8 - d) / 20``.
    ``U / dis - U = P (1 - f) / f``, which is how it is computed here (no 0/0 when no record
    is unique; then no record has a score either).

    Where this departs from sdcMicro 5.7 (``cf32510``):

    * ``U``: since 2019 (commit ``fb4cf18``) ``Suda2.h`` counts a unique record only when it
      is alone in its 16-bit hash bucket (``else if (k == g_NbPerHash[i])`` cannot hold
      once a bucket has two records), so its ``U`` and DIS scores depend on hash
      collisions; here ``U`` is every unique record, as the code before 2019 counted it.
    * sdcMicro computes ``dis``, ``f`` and ``q`` in single precision (about 1e-7 relative).
    * With one or two key variables sdcMicro pads constant columns up to three (and warns
      that the result may be wrong): its weights and ``q`` are then those of ``d = 3``;
      here ``d`` is the number of variables given.
    * sdcMicro always searches MSUs of every size (``g_MaxK = d``); ``max_size`` here stops
      at SUDA's usual threshold when asked.
    * sdcMicro's ``missing`` code (an item never part of an MSU) has no counterpart: every
      code is a value.  ``DisFraction = 0`` silently becomes 0.5 in sdcMicro; here it is
      refused.
    """

    score: np.ndarray = field(repr=False)
    dis_score: np.ndarray = field(repr=False)
    contribution: np.ndarray = field(repr=False)
    names: tuple[str, ...]
    max_size: int
    original_scores: bool
    dis_fraction: float
    sample_uniques: int
    pair_records: int
    weights: tuple[float, ...]

    @property
    def n(self) -> int:
        return int(self.score.shape[0])

    @property
    def q(self) -> float:
        """The DIS-SUDA exponent ``1 + (8 - d) / 20``."""
        return 1.0 + (8.0 - len(self.names)) / 20.0

    @property
    def dis(self) -> float:
        """The file-level probability that a sample unique is a population unique,
        ``U f / (U f + P (1 - f))`` (nan when ``U = P = 0``)."""
        u, p, f = self.sample_uniques, self.pair_records, self.dis_fraction
        den = u * f + p * (1.0 - f)
        return u * f / den if den > 0 else float("nan")

    @property
    def attribute_contributions(self) -> np.ndarray:
        """Each variable's percentage of the total score (``R/suda2.R``'s
        ``attribute_contributions``; all 0 when no record has an MSU, where sdcMicro gives
        0/0)."""
        total = float(self.score.sum())
        if total == 0:
            return np.zeros(len(self.names))
        return 100.0 * (self.contribution * self.score[:, None]).sum(axis=0) / total

    def dis_table(self) -> dict[str, int]:
        """Records per DIS-SUDA score interval, as sdcMicro's ``print.suda2`` tabulates them."""
        edges = np.concatenate(([-1.0], _DIS_EDGES, [np.inf]))
        bins = np.searchsorted(edges, self.dis_score, side="left") - 1
        counts = np.bincount(bins, minlength=len(_DIS_LABELS))
        return {label: int(c) for label, c in zip(_DIS_LABELS, counts)}

    def to_dict(self) -> dict[str, object]:
        dis = self.dis
        return {
            "n": self.n,
            "names": list(self.names),
            "max_size": self.max_size,
            "original_scores": self.original_scores,
            "dis_fraction": self.dis_fraction,
            "weights": list(self.weights),
            "sample_uniques": self.sample_uniques,
            "pair_records": self.pair_records,
            "dis": dis if np.isfinite(dis) else None,
            "records_scored": int((self.score > 0).sum()),
            "total_score": float(self.score.sum()),
            "max_dis_score": float(self.dis_score.max()) if self.n else 0.0,
            "attribute_contributions": dict(
                zip(self.names, (float(x) for x in self.attribute_contributions))
            ),
            "dis_table": self.dis_table(),
        }

    def to_pandas(self):
        """One row per record: each variable's contribution share, ``score``, ``dis_score``
        (the columns of sdcMicro's ``Res``)."""
        import pandas as pd

        cols = {f"{v}_contribution": self.contribution[:, j] for j, v in enumerate(self.names)}
        return pd.DataFrame({**cols, "score": self.score, "dis_score": self.dis_score})


def suda_scores(
    codes: np.ndarray,
    names: tuple[str, ...] | list[str] | None = None,
    *,
    max_size: int | None = None,
    dis_fraction: float = 0.01,
    original_scores: bool = True,
    msus: MinimalSampleUniques | None = None,
) -> SudaScores:
    """Every record's SUDA score, DIS-SUDA score and variable contributions, as sdcMicro's
    ``suda2(data, DisFraction = 0.01, original_scores = TRUE)`` computes them (definitions
    and departures: :class:`SudaScores`).

    Parameters
    ----------
    codes
        Integer codes ``(n, d)`` of the key variables, one row per record.
    names
        The columns' names (default ``c0, c1, ...``).
    max_size
        The largest MSU scored (default: all ``d``, as sdcMicro).
    dis_fraction
        The sampling fraction ``f`` in (0, 1] of DIS (sdcMicro's ``DisFraction``).
    original_scores
        Elliot et al.'s weights (sdcMicro's default) or, when ``False``, the IHSN
        implementation's (:func:`suda_weights`).
    msus
        The :func:`minimal_sample_uniques` of these ``codes`` when already at hand (their
        names and ``max_size`` are then used); otherwise the search runs here, once.
    """
    from privlab._params import check_codes
    from privlab.data.counts import distinct_rows

    if not isinstance(original_scores, (bool, np.bool_)):
        raise ParameterError(f"original_scores must be True or False, got {original_scores!r}")
    ok = not isinstance(dis_fraction, (bool, np.bool_)) and isinstance(
        dis_fraction, (int, float, np.number)
    )
    if not ok or not 0 < dis_fraction <= 1:
        raise ParameterError(f"dis_fraction must be in (0, 1], got {dis_fraction!r}")
    c = check_codes(codes)
    if msus is None:
        msus = minimal_sample_uniques(c, names, max_size=max_size)
    else:
        if not isinstance(msus, MinimalSampleUniques):
            raise ParameterError(f"msus must be a MinimalSampleUniques, got {type(msus).__name__}")
        if msus.n != c.shape[0] or len(msus.names) != c.shape[1]:
            raise ParameterError(
                f"msus are of {msus.n} records x {len(msus.names)} columns, the codes "
                f"{c.shape[0]} x {c.shape[1]}"
            )
        if names is not None and tuple(names) != msus.names:
            raise ParameterError(f"names {list(names)} differ from the msus' {list(msus.names)}")
        if max_size is not None and max_size != msus.max_size:
            raise ParameterError(f"max_size {max_size} differs from the msus' {msus.max_size}")
    n, d = c.shape
    top = msus.max_size
    w = suda_weights(d, top, original_scores=bool(original_scores))
    score = msus.counts @ w if n else np.zeros(0)
    # each variable's weight over the record's MSUs that hold it: one pass per column subset
    # (the MSUs are listed subset by subset, a record at most once per subset)
    raw = np.zeros((n, d), dtype=np.float64)
    position = {v: j for j, v in enumerate(msus.names)}
    starts = np.searchsorted(msus.subset, np.arange(len(msus.subsets) + 1))
    for s, cols in enumerate(msus.subsets):
        rows = msus.record[starts[s] : starts[s + 1]]
        for v in cols:
            raw[rows, position[v]] += w[len(cols) - 1]
    scored = score > 0
    contribution = np.zeros((n, d), dtype=np.float64)
    contribution[scored] = raw[scored] / score[scored, None]
    # DIS: the records unique on all d variables (U) and those whose values occur twice (P)
    if n:
        _, inverse, sizes = distinct_rows(c)
        per_record = sizes[inverse]
        uniques, pairs = int((per_record == 1).sum()), int((per_record == 2).sum())
    else:
        uniques = pairs = 0
    f = float(dis_fraction)
    q = 1.0 + (8.0 - d) / 20.0
    dis_score = np.zeros(n, dtype=np.float64)
    if scored.any():
        powered = score[scored] ** q
        adjust = float((1.0 / powered).sum())
        dis_score[scored] = 1.0 / (1.0 + pairs * (1.0 - f) / f / (powered * adjust))
    return SudaScores(
        score=score,
        dis_score=dis_score,
        contribution=contribution,
        names=msus.names,
        max_size=top,
        original_scores=bool(original_scores),
        dis_fraction=f,
        sample_uniques=uniques,
        pair_records=pairs,
        weights=tuple(float(x) for x in w),
    )
