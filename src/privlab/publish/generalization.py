"""Generalization-based anonymization: full-domain global recoding (optimal lattice search)
and Mondrian multidimensional local recoding, under k-anonymity, l-diversity, t-closeness
and delta-disclosure privacy (Mothali 2011, Ch. 1-2; Kifer & Gehrke 2006; Brickell &
Shmatikov 2008; Kifer 2009, Sec. 4).

* ``method="optimal"``: every value of a QI is replaced by its label at one level of the QI's
  hierarchy (the same level for the whole column: *global* / full-domain recoding, Mothali
  Table 2.4); the levels are the node of the generalization lattice of least information loss
  (:mod:`privlab.publish.lattice`) among those whose violating classes hold at most
  ``suppression * n`` records, which are then suppressed (removed from the release).
* ``method="mondrian"``: strict multidimensional partitioning (LeFevre et al. 2006;
  :mod:`privlab.publish.mondrian`), each class's values coarsened on their own (*local*
  recoding, Mothali Table 2.5): numeric QIs to the range ``lo-hi`` of the class, categorical
  QIs to their lowest common ancestor in the hierarchy.

The release (:class:`GeneralizedRelease`) is the generalized table: the QI columns
generalized, the sensitive column and the columns named in ``keep`` unchanged, every other
column dropped, suppressed records removed, rows sorted (so the row order carries nothing
but the content); saved as ``table.csv`` plus ``release.json``.  Its domains list only the
values of published records.  Its :meth:`~GeneralizedRelease.privacy` recomputes k, l, t,
delta and the re-identification risk from the published table alone, over *every* published
non-sensitive column, as pyCANON would; a kept column that re-identifies is flagged.

``release.json`` holds only what its readers could compute from the published rows and the
public parameters: its ``utility`` is :func:`~privlab.metrics.utility.published_utility` of
the published table.  The counts of input and suppressed records, the information loss
measured against the input (non-uniform entropy and KL use the input's value frequencies,
suppressed records included) and the search's costs are aggregates of the raw input: two
inputs that differ by one suppressed person would publish them differently, and the
difference would say who was suppressed and what their quasi-identifiers were.  They stay on
the in-memory release (``n_input``, ``n_suppressed``, ``utility``, ``search``) and in the
custody (``custody.json``'s ``input_measures``), and come back when the release is loaded
with its custody.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privlab._rng import RngLike, SeedRecord
from privlab.data.counts import MAX_RADIX as _MAX_KEY
from privlab.data.engine import ENGINES, check_engine
from privlab.data.frames import as_table
from privlab.data.hierarchy import CompiledHierarchy, Hierarchy
from privlab.data.schema import Attribute, Role, Schema
from privlab.data.spark import spark_input
from privlab.data.stream import DEFAULT_BATCH_ROWS, role_columns, stream_input
from privlab.data.table import CODE_DTYPE, Table
from privlab.errors import EligibilityError, ParameterError
from privlab.metrics.utility import cell_utility
from privlab.publish.generalization_core import (
    GeneralizationSettings,
    GeneralizedRelease,
    may_determine,
    optimal_release,
    search_node,
    warn_dependent,
)
from privlab.publish.lattice import ACCOUNTINGS, OBJECTIVES, Lattice
from privlab.publish.models import PrivacyModel
from privlab.publish.mondrian import mondrian_classes
from privlab.publish.spark_release import SparkRelease
from privlab.publish.stream_generalization import generalize_stream
from privlab.publish.stream_release import StreamedRelease
from privlab.release.base import Custody

METHODS = ("optimal", "mondrian")


def _str(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


# -- the sanitizer --------------------------------------------------------------------------
def generalize(
    data: Any,
    *,
    qi: Sequence[str] | None = None,
    sensitive: str | None = None,
    keep: Sequence[str] | None = None,
    hierarchies: Mapping[str, Hierarchy] | str | Path | None = None,
    dataset: str | None = None,
    k: int = 2,
    l: float | None = None,
    l_variant: str = "distinct",
    c: float | None = None,
    t: float | None = None,
    t_distance: str = "equal",
    delta: float | None = None,
    suppression: float = 0.0,
    method: str = "optimal",
    objective: str = "discernibility",
    accounting: str = "privlab",
    engine: str = "memory",
    schema: Schema | None = None,
    rng: RngLike | SeedRecord = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    buckets: int | None = None,
) -> GeneralizedRelease | SparkRelease | StreamedRelease:
    """Anonymize a table by generalization.

    Parameters
    ----------
    data
        The microdata: a privlab ``Table``, a pandas or polars DataFrame or a pyarrow Table.
    qi, sensitive, keep
        Quasi-identifiers, the sensitive attribute and the columns published unchanged
        (default: the table's roles).  Every other column is dropped.
    hierarchies
        ``{attribute: Hierarchy}`` or a directory of ARX CSV files; missing ones come from the
        bundled ``dataset``'s defaults or a generic hierarchy (intervals / ``*``).
    k, l, l_variant, c, t, t_distance, delta
        The privacy model (:class:`~privlab.publish.models.PrivacyModel`).
    suppression
        Largest share of records that may be suppressed (optimal method only).
    method
        ``"optimal"`` (global recoding) or ``"mondrian"`` (local recoding).
    objective
        What the optimal search minimizes: one of ``discernibility``, ``avg_class_size``,
        ``precision``, ``entropy`` (non-uniform entropy), ``kl``, ``height``.
    accounting
        How the ``entropy`` objective charges suppressed records: ``privlab`` (as fully
        generalized records), ``arx`` (ARX's non-monotonic precomputed non-uniform entropy)
        or ``arx-monotonic`` (ARX's monotonic one, which charges suppression nothing beyond
        the node's generalization); see :meth:`~privlab.publish.lattice.Lattice.cost`.  With
        ``arx-monotonic`` the search returns ARX's optimum and ARX's loss on ARX's own
        benchmark (``tests/test_arx_golden.py``).
    engine, schema
        ``"spark"``: ``data`` is a Spark DataFrame or a Parquet path and ``schema`` its public
        domains (and roles); the optimal method then aggregates the distinct (QI, sensitive)
        counts once, searches the lattice on the driver and recodes on the cluster
        (:func:`privlab.publish.spark_generalization.generalize_spark`), returning a
        :class:`~privlab.publish.spark_release.SparkRelease` whose ``collect()`` is this
        function's in-memory release.  ``"stream"``: ``data`` is a Parquet file read
        ``batch_rows`` rows at a time and ``schema`` its public domains and roles; the same
        three steps out of core (:mod:`privlab.publish.stream_generalization`), returning a
        :class:`~privlab.publish.stream_release.StreamedRelease` whose ``save()`` recodes the
        file.  Mondrian runs in memory only.
    rng, buckets
        The stream engine only: its rows are released in a uniformly random order by an
        external shuffle of ``buckets`` files, drawn from ``rng`` (None: OS entropy; a seed,
        salted; the custody keeps the record).  The other engines sort the rows by their
        published values and draw nothing.

    Raises
    ------
    ParameterError
        Bad parameters, ``k`` larger than the table, ``l`` above the number of sensitive values.
    HierarchyError
        A QI value missing from its hierarchy; a malformed hierarchy.
    EligibilityError
        No generalization satisfies the model (even the fully generalized table).
    """
    if method not in METHODS:
        raise ParameterError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    if objective not in OBJECTIVES:
        raise ParameterError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")
    if accounting not in ACCOUNTINGS:
        raise ParameterError(
            f"accounting must be one of {', '.join(ACCOUNTINGS)}, not {accounting!r}"
        )
    if not 0 <= suppression < 1:
        raise ParameterError(f"suppression must be in [0, 1), got {suppression}")
    if suppression and method == "mondrian":
        raise ParameterError("record suppression applies to the optimal method only")
    engine = check_engine(engine, available=ENGINES, what="generalize")
    if engine != "memory" and method != "optimal":
        where = "Spark" if engine == "spark" else "stream"
        raise ParameterError(
            f"the {where} engine runs the optimal method only: Mondrian's cuts are exact "
            "medians of every partition, recursively, which privlab computes in memory only"
        )
    if engine == "stream":  # the optimal method planned from (QI, sensitive) tuple counts
        read = role_columns(schema, qi, sensitive, keep)
        source: Any = stream_input(data, schema, columns=read, batch_rows=batch_rows)
    elif engine == "spark":
        source = spark_input(data, schema)
    elif schema is not None:
        raise ParameterError("schema= applies to the Spark and stream engines")
    else:
        source = as_table(data)
    settings = GeneralizationSettings(
        qi=tuple(source.schema.qi if qi is None else qi),
        sensitive=source.schema.sensitive if sensitive is None else sensitive,
        keep=tuple(source.schema.insensitive if keep is None else keep),
        model=_model(k, l, l_variant, c, t, t_distance, delta),
        suppression=suppression, objective=objective, accounting=accounting,
        hierarchies=hierarchies, dataset=dataset,
    )  # fmt: skip
    if engine == "stream":
        return generalize_stream(source, settings, rng=rng, buckets=buckets)
    if engine == "spark":
        from privlab.publish.spark_generalization import generalize_spark

        return generalize_spark(source, settings)
    if not settings.qi:
        raise ParameterError("no quasi-identifier given")
    schema = settings.roles(source.schema)
    table = Table(source.codes, schema).require_rows()
    settings.check_size(table.n_rows)
    sensitive = settings.sensitive
    s = table.column(sensitive).astype(np.int64) if sensitive else None
    m = schema[sensitive].size if sensitive else 0
    compiled = settings.compile(schema, s)
    x = table.columns(settings.qi).astype(np.int64)
    _warn_dependent_columns(table, settings.qi, settings.keep)
    use_s = s if settings.model.needs_sensitive else None
    if method == "optimal":
        return _optimal(table, settings, compiled, x, use_s, m)
    return _mondrian(table, settings.qi, sensitive, compiled, x, use_s, m, settings.model)


def _model(k, l, l_variant, c, t, t_distance, delta) -> PrivacyModel:  # type: ignore[no-untyped-def]
    return PrivacyModel(k=k, l=l, l_variant=l_variant, c=c, t=t, t_distance=t_distance, delta=delta)


def _warn_dependent_columns(table: Table, qi: Sequence[str], keep: Sequence[str]) -> None:
    """Warn when a kept column re-labels a QI (e.g. Adult's education-num and education):
    publishing it next to the generalized QI would undo the generalization.

    Distinct values and pairs are counted over the domains (``bincount``), each column once.
    """
    if not keep:
        return
    n = table.n_rows
    names = (*keep, *qi)
    size = {c: table.schema[c].size for c in names}
    distinct = {
        c: int(np.count_nonzero(np.bincount(table.column(c), minlength=size[c]))) for c in names
    }
    for c in keep:
        n_c = distinct[c]
        for q in qi:
            n_q = distinct[q]
            if not may_determine(n_c, n_q):
                continue
            pair = table.column(c).astype(np.int64) * size[q] + table.column(q)
            cells = size[c] * size[q]
            if cells <= max(4 * n, 1 << 20):
                pairs = int(np.count_nonzero(np.bincount(pair, minlength=cells)))
            else:
                pairs = int(pd.unique(pair).size)
            if pairs == n_c:
                warn_dependent(c, q, stacklevel=3)


def _class_labels(table: Table, sensitive: str | None) -> np.ndarray | None:
    """The class labels of the classification metric: the sensitive attribute, the one
    column a generalized release publishes unchanged for every record it keeps."""
    return table.column(sensitive).astype(np.int64) if sensitive else None


def _optimal(
    table: Table,
    settings: GeneralizationSettings,
    compiled: list[Any],
    x: np.ndarray,
    s: np.ndarray | None,
    m: int,
) -> GeneralizedRelease:
    qi, sensitive, model = settings.qi, settings.sensitive, settings.model
    n = table.n_rows
    lattice = Lattice(x, compiled, s, m)
    res = search_node(
        lattice, model, n, settings.suppression, settings.objective, settings.accounting
    )
    node = res.node
    cls, _sizes, ok = lattice.evaluate(node, model)
    keep = ok[cls][lattice.row_of]
    gen = [h.maps[lv][x[:, j]] for j, (h, lv) in enumerate(zip(compiled, node))]
    class_of = np.where(keep, cls[lattice.row_of], -1)
    cover = [
        h.maps[lv][None, :] == np.arange(h.sizes()[lv])[:, None] for h, lv in zip(compiled, node)
    ]
    utility = cell_utility(
        x,
        gen,
        cover,
        class_of,
        k=model.k,
        levels=node,
        heights=[h.height for h in compiled],
        labels=_class_labels(table, sensitive),
    )
    labels = [h.labels[lv] for h, lv in zip(compiled, node)]
    published, custody = _publish(
        table, qi, gen, labels, keep, numeric_kept=[lv == 0 for lv in node]
    )
    return _with_input_measures(optimal_release(
        published, settings, res, n_input=n, n_suppressed=int((~keep).sum()),
        utility=utility, custody=custody,
    ))  # fmt: skip


def _with_input_measures(rel: GeneralizedRelease) -> GeneralizedRelease:
    """``rel`` with its input measures copied into its custody (never into release.json)."""
    if rel.custody is None:
        return rel
    custody = dataclasses.replace(rel.custody, input_measures=rel.input_measures())
    return dataclasses.replace(rel, custody=custody)


def _mondrian(table, qi, sensitive, compiled, x, s, m, model):
    n = table.n_rows
    whole = model.class_ok(
        np.array([n]),
        None if s is None else np.bincount(s, minlength=m)[None, :],
        None if s is None else np.bincount(s, minlength=m) / n,
    )
    if not whole.all():
        raise EligibilityError(f"the whole table does not satisfy {model.describe()}")
    # Order categorical values by their hierarchy (leaf order of the top-down tree).
    order = []
    for j, h in enumerate(compiled):
        a = table.schema[qi[j]]
        if a.numeric:
            rank = np.arange(a.size)
        else:
            keys = np.column_stack([h.maps[lv] for lv in range(h.height, -1, -1)])
            rank = np.empty(a.size, dtype=np.int64)
            rank[np.lexsort(keys.T[::-1])] = np.arange(a.size)
        order.append(rank)
    small = max(r.size for r in order) <= np.iinfo(np.int16).max
    ordinal = np.empty((n, len(qi)), dtype=np.int16 if small else np.int32)
    for j in range(len(qi)):
        ordinal[:, j] = order[j].astype(ordinal.dtype)[x[:, j]]
    widths = [
        _width_matrix(table.schema[q], h, order[j]) for j, (q, h) in enumerate(zip(qi, compiled))
    ]
    part, bounds = mondrian_classes(ordinal, model, s, m, widths)
    gen, labels, cover = [], [], []
    for j, h in enumerate(compiled):
        a = table.schema[qi[j]]
        g, lab, cov = _local_labels(bounds[:, :, j], part, a, h, order[j])
        gen.append(g)
        labels.append(lab)
        cover.append(cov)
    utility = cell_utility(x, gen, cover, part, k=model.k, labels=_class_labels(table, sensitive))
    published, custody = _publish(table, qi, gen, labels, np.ones(n, dtype=bool), numeric_kept=None)
    return _with_input_measures(GeneralizedRelease(
        table=published,
        qi=tuple(qi),
        sensitive=sensitive,
        algorithm="mondrian",
        model=model,
        n_input=n,
        n_suppressed=0,
        utility=utility,
        search={"partitions": int(part.max()) + 1},
        custody=custody,
    ))  # fmt: skip


def _width_matrix(attr: Attribute, h: CompiledHierarchy, rank: np.ndarray) -> np.ndarray:
    """``W[lo, hi]``: normalized width of an ordinal span lo..hi (LeFevre et al. 2006): the
    value range over the domain's for numeric QIs, (leaves under the lowest common ancestor
    - 1) / (domain size - 1) for hierarchical ones."""
    inv = np.argsort(rank)  # ordinal -> domain code
    if attr.numeric:
        vals = np.asarray(attr.domain, dtype=float)[inv]
        span = max(vals[-1] - vals[0], 1e-12)
        return (vals[None, :] - vals[:, None]) / span
    m = attr.size
    w = np.ones((m, m))
    for lv in range(h.height, -1, -1):
        ids = h.maps[lv][inv]
        leaves = np.bincount(h.maps[lv], minlength=h.sizes()[lv])[ids]
        same = ids[:, None] == ids[None, :]
        w = np.where(same, (leaves[:, None] - 1) / max(m - 1, 1), w)
    return w


def _local_labels(
    span: np.ndarray, part: np.ndarray, attr: Attribute, h: CompiledHierarchy, rank: np.ndarray
) -> tuple[np.ndarray, tuple[str, ...], np.ndarray]:
    """Per record, the cell of its class in one QI: the label, and each cell's cover.

    ``span[g]`` is class ``g``'s smallest and largest ordinal code in the QI.  Numeric QIs:
    the range ``lo-hi`` of the class's values; categorical: the lowest common ancestor in
    the hierarchy of the class's values (the LCA of its smallest and largest values in
    hierarchy order)."""
    m = attr.size
    lo = span[:, 0].astype(np.int64)
    hi = span[:, 1].astype(np.int64)
    g = lo.size
    inv = np.argsort(rank)  # ordinal -> domain code
    if attr.numeric:
        key = lo * m + hi
    else:
        maps = np.stack([h.maps[lv][inv] for lv in range(h.height + 1)])
        lv_of = np.full(g, h.height, dtype=np.int64)
        for lv in range(h.height, -1, -1):
            lv_of[maps[lv, lo] == maps[lv, hi]] = lv
        key = lv_of * m + maps[lv_of, lo]
    ukey, cell_of_part = np.unique(key, return_inverse=True)
    labels, covers = [], []
    for kk in ukey:
        if attr.numeric:
            a, b = divmod(int(kk), m)
            la, lb = _str(attr.domain[inv[a]]), _str(attr.domain[inv[b]])
            labels.append(la if a == b else f"{la}-{lb}")
            covers.append((rank >= a) & (rank <= b))
        else:
            lv, ident = divmod(int(kk), m)
            labels.append(h.labels[lv][ident])
            covers.append(h.maps[lv] == ident)
    return cell_of_part.reshape(-1)[part], tuple(labels), np.array(covers)


def _publish(table, qi, gen, labels, keep, numeric_kept) -> tuple[Table, Custody]:
    """The published table (generalized QI columns, the sensitive and kept columns as they
    were, every other column dropped, rows sorted) and the custody: each published row's
    exact quasi-identifiers.

    The rows are sorted by their published values, first column slowest (ties keep the input
    order, which only the custody's truth shows): the published order is a function of the
    published values alone, so it carries nothing but the content.  The sort runs on one
    mixed-radix key of the published codes (:func:`_ranked_rows`), not on the columns.
    """
    attrs, cols = [], []
    qpos = {q: j for j, q in enumerate(qi)}
    for a in table.schema.attributes:
        if not a.role.published:
            continue
        if a.name in qpos:
            j = qpos[a.name]
            if numeric_kept is not None and numeric_kept[j]:
                attrs.append(a)
                cols.append(table.column(a.name))
            else:
                attrs.append(Attribute(a.name, tuple(labels[j]), Role.QI, False))
                cols.append(np.asarray(gen[j]))
        else:
            attrs.append(a)
            cols.append(table.column(a.name))
    rows = np.flatnonzero(keep)
    rank, g, any_row = _ranked_rows(cols, [a.size for a in attrs], rows)
    # Equal ranks are equal published rows: the table is each distinct row repeated.
    codes = np.empty((g, len(cols)), dtype=CODE_DTYPE)
    for j, c in enumerate(cols):
        codes[:, j] = c[any_row]
    codes = np.repeat(codes, np.bincount(rank, minlength=g), axis=0)
    rows = rows[_stable_order(rank, g)]
    truth = np.take(table.codes, rows, axis=0)[:, table.schema.indices(qi)]
    truth = Table(truth, table.schema.select(qi))
    custody = Custody(input_sha256=table.fingerprint(), truth=truth)
    return Table(codes, Schema(tuple(attrs))), custody


#: Distinct keys up to this many are ranked into ``uint16``: numpy sorts those stably by one
#: radix pass (larger integer types by timsort).
_RADIX = 1 << 16


def _dense_rank(key: np.ndarray) -> tuple[np.ndarray, int]:
    """The rank of every entry of ``key`` among its distinct values (0 = smallest), and the
    number of distinct values: hashed (``pandas.factorize``, linear time), then only the
    distinct values sorted."""
    codes, uniq = pd.factorize(key, sort=False)
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[np.argsort(uniq)] = np.arange(uniq.size)
    return rank[codes], int(uniq.size)


def _ranked_rows(
    cols: Sequence[np.ndarray], sizes: Sequence[int], rows: np.ndarray
) -> tuple[np.ndarray, int, np.ndarray]:
    """Rank of the tuple ``(cols[0][r], cols[1][r], ...)`` of every row ``r`` in ``rows``
    among the distinct tuples, first column slowest (lexicographic order); the number ``g``
    of distinct tuples; and for each rank the index (into the columns) of one row holding it.

    The columns (codes over domains of ``sizes``) are folded into one mixed-radix int64 key,
    :mod:`privlab.data.counts`'s layout; when the next column would overflow it, the key so
    far is replaced by its dense rank, which keeps its order.
    """
    n = cols[0].size if len(cols) else 0
    key, radix, j = None, 1, 0
    while j < len(cols):
        # The longest run of columns whose mixed-radix key, after ``key``'s, fits in int64.
        run, width = j, 1
        while run < len(cols) and radix * width * max(int(sizes[run]), 1) < _MAX_KEY:
            width *= max(int(sizes[run]), 1)
            run += 1
        if run == j:  # ``key`` leaves no room for the next column: keep only its order
            key, radix = _dense_rank(key)
            continue
        part = np.ravel_multi_index(
            tuple(cols[j:run]), [max(int(v), 1) for v in sizes[j:run]]
        ).astype(np.int64, copy=False)
        if key is None:
            key = part
        else:
            key *= width
            key += part
        radix *= width
        j = run
    if key is None:
        key = np.zeros(n, dtype=np.int64)
    if rows.size < n:
        key = key[rows]
    rank, g = _dense_rank(key)
    any_row = np.empty(g, dtype=np.int64)
    any_row[rank] = rows
    return rank, g, any_row


def _stable_order(rank: np.ndarray, g: int) -> np.ndarray:
    """``np.argsort(rank, kind="stable")`` for ranks in ``0..g-1``: LSD radix passes of 16
    bits (numpy sorts ``uint16`` stably in linear time, wider integers by timsort)."""
    if g <= _RADIX:
        return np.argsort(rank.astype(np.uint16), kind="stable")
    if g <= _RADIX * _RADIX:
        order = np.argsort((rank & (_RADIX - 1)).astype(np.uint16), kind="stable")
        high = (rank[order] >> 16).astype(np.uint16)
        return order[np.argsort(high, kind="stable")]
    return np.argsort(rank, kind="stable")


# -- local suppression (sdcMicro's localSuppression) -------------------------------------
def suppress(
    data: Any,
    qi: Sequence[str],
    k: int,
    *,
    sensitive: str | None = None,
    keep: Sequence[str] | None = None,
    importance: Sequence[int] | None = None,
    method: str = "local",
) -> GeneralizedRelease:
    """Local suppression as a release: the cells of ``qi`` chosen by
    :func:`privlab.publish.local_suppression.local_suppression` published as ``*``, every
    record kept (a generalized release, ``algorithm = "local-suppression"``, whose k is
    counted with ``*`` matching any value).

    ``method`` defaults to ``"local"``, the sdcMicro-like greedy: ``"heuristic"`` reaches
    k-anonymity with the fewest cells, which under the wildcard count is usually k - 1
    records blanked whole (they match everyone), a k that protects little.  Rows are
    published sorted (their order tells nothing); the custody keeps each row's exact
    quasi-identifiers and what the suppression did.
    """
    import pandas as pd

    from privlab.data.frames import as_table
    from privlab.data.schema import _keys
    from privlab.data.table import Table
    from privlab.publish.local_suppression import STAR, local_suppression
    from privlab.release.base import Custody

    table = as_table(data).require_rows()
    qi = list(qi)
    keep = list(keep or [])
    table.schema.indices([*qi, *keep, *([sensitive] if sensitive else [])])
    both = [c for c in keep if c in qi or c == sensitive]
    if both or (sensitive in qi):
        raise ParameterError(f"column {(both or [sensitive])[0]!r} is given two roles")
    res = local_suppression(table.columns(qi), k, importance=importance, method=method,
                            names=qi)  # fmt: skip
    cols = [c for c in table.names if c in qi or c in keep or c == sensitive]
    frame: dict[str, Any] = {}
    for c in cols:
        if c in qi and res.mask[:, qi.index(c)].any():
            text = _keys(np.asarray(table.decode(c), dtype=object))
            text[res.mask[:, qi.index(c)]] = STAR
            frame[c] = text
        else:
            frame[c] = table.decode(c)
    df = pd.DataFrame(frame)
    order = np.lexsort([df[c].astype(str).to_numpy() for c in reversed(cols)])
    published = Table.from_pandas(df.iloc[order].reset_index(drop=True)).with_roles(
        qi=qi, sensitive=sensitive, keep=keep
    )
    truth = table.select(qi).take(order)
    custody = Custody(input_sha256=table.fingerprint(), truth=truth,
                      input_measures={"local_suppression": res.to_dict()})  # fmt: skip
    return GeneralizedRelease(
        table=published, qi=tuple(qi), sensitive=sensitive, algorithm="local-suppression",
        model=PrivacyModel(k=int(k)), node=None, n_input=table.n_rows, n_suppressed=0,
        custody=custody,
    )  # fmt: skip
