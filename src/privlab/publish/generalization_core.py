"""Generalization's core, below its engines: the release type, the QIs' hierarchies and the
lattice search (Mothali 2011, Ch. 1-2; :mod:`privlab.publish.generalization` runs them in
memory, :mod:`privlab.publish.spark_generalization` on Spark; each imports this module,
never the reverse).  See :mod:`privlab.publish.generalization` for the method and for what
``release.json`` holds.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from privlab.data.counts import distinct_rows, group_counts, joint_index
from privlab.data.default_hierarchies import resolve_hierarchies
from privlab.data.hierarchy import CompiledHierarchy, Hierarchy
from privlab.data.partition import Partition
from privlab.data.schema import Attribute, Role, Schema
from privlab.data.table import Table
from privlab.errors import (
    EligibilityError,
    ParameterError,
    PrivacyWarning,
    PrivlabError,
    ReleaseError,
)
from privlab.metrics.utility import UtilityReport, cell_utility, published_utility
from privlab.publish.lattice import Lattice, optimal_node
from privlab.publish.models import PrivacyModel
from privlab.release.base import Custody, PublishedTable, Release, refuse_reserved


@dataclass(frozen=True, eq=False, repr=False)
class GeneralizedRelease(Release):
    """A generalized table and how it was made.

    Attributes
    ----------
    table
        The published table: QI columns hold generalized labels, the sensitive column and
        the kept columns their original values; suppressed records are absent; rows sorted.
    qi, sensitive
        The quasi-identifiers (in the order of ``node``) and the sensitive attribute (None
        for k-anonymity alone).
    algorithm
        ``"optimal"`` or ``"mondrian"``.
    model
        The privacy requirements.
    suppression
        The record-suppression limit (a fraction of the input).
    objective
        The utility objective the optimal search minimized.
    accounting
        How the entropy objective charged suppressed records (``privlab``, ``arx``,
        ``arx-monotonic``; :meth:`~privlab.publish.lattice.Lattice.cost`).
    node
        The levels chosen per QI (optimal global recoding), or None.
    n_input, n_suppressed
        Input records; records suppressed (the custodian's: not published; None on a
        release loaded without its custody).
    utility
        Information-loss measures against the input (:class:`UtilityReport`), or None: the
        custodian's (the published measures are :meth:`published_utility`).
    search
        What the lattice search did (nodes, evaluated, feasible, cost), or {}: the
        custodian's.
    custody
        The custodian's files (the input's fingerprint, each published row's exact
        quasi-identifiers and the measures above), or None.
    """

    table: Table
    qi: tuple[str, ...]
    sensitive: str | None
    algorithm: str
    model: PrivacyModel
    suppression: float = 0.0
    objective: str = "discernibility"
    accounting: str = "privlab"
    node: tuple[int, ...] | None = None
    n_input: int | None = 0
    n_suppressed: int | None = 0
    utility: UtilityReport | None = None
    search: dict[str, Any] = field(default_factory=dict)
    custody: Custody | None = field(default=None, compare=False)

    method: ClassVar[str] = "generalization"

    def classes(self) -> np.ndarray:
        """Equivalence class of every published row: rows alike on every published
        non-sensitive column (the QIs and the kept columns)."""
        linkable = self.linkable()
        return distinct_rows(linkable.codes, linkable.schema.sizes)[1]

    def partition(self) -> Partition | None:
        if self.sensitive is None:
            return None
        s = self.table.schema[self.sensitive]
        classes = self.classes()
        counts = group_counts(classes, self.table.column(self.sensitive), s.size)
        return Partition(classes, counts, s, kind="classes")

    # -- the Release interface --------------------------------------------------------------
    def published(self) -> dict[str, PublishedTable]:
        return {"table": PublishedTable(self.table)}

    def parameters(self) -> dict[str, Any]:
        return {
            "algorithm": self.algorithm,
            **self.model.to_dict(),
            "suppression": self.suppression,
            "objective": self.objective,
            "accounting": self.accounting,
        }

    def claims(self) -> list[dict[str, Any]]:
        """The privacy model's k and l over the classes of the published quasi-identifiers
        (t and delta are measured against the input's distribution, which the release does
        not hold: ``check`` reports them, but cannot compare them with the parameters)."""
        qi = self.table.select(list(self.qi))
        if self.algorithm == "local-suppression":  # * matches any value (sdcMicro's count)
            from privlab.publish.local_suppression import published_frequencies

            fk = published_frequencies(self.table, self.qi)
            return [{
                "claim": f"k = {self.model.k} (every record, * matching any value)",
                "holds": bool(fk.min() >= self.model.k) if fk.size else True,
                "measured": f"smallest fk {int(fk.min()) if fk.size else 0}",
            }]  # fmt: skip
        classes = distinct_rows(qi.codes, qi.schema.sizes)[1]
        sizes = np.bincount(classes)
        out = [{
            "claim": f"k = {self.model.k} (every class of the quasi-identifiers)",
            "holds": bool(sizes.min() >= self.model.k) if sizes.size else True,
            "measured": f"smallest class {int(sizes.min()) if sizes.size else 0}",
        }]  # fmt: skip
        if self.model.l is not None and self.sensitive is not None:
            s = self.table.schema[self.sensitive]
            counts = group_counts(classes, self.table.column(self.sensitive), s.size)
            only_l = dataclasses.replace(self.model, k=1, t=None, delta=None)
            ok = only_l.class_ok(sizes, counts, counts.sum(axis=0))
            extra = f", c = {self.model.c}" if self.model.l_variant == "recursive" else ""
            out.append({
                "claim": f"{self.model.l_variant} l = {self.model.l:g}{extra}",
                "holds": bool(ok.all()),
                "measured": f"{int((~ok).sum())} of {ok.size} classes below it",
            })  # fmt: skip
        return out

    def metadata(self) -> dict[str, Any]:
        return {
            "qi": list(self.qi),
            "node": list(self.node) if self.node is not None else None,
            "utility": self.published_utility(),
        }

    def published_utility(self) -> dict[str, Any]:
        """The information-loss measures computed from the published table alone (what
        ``release.json`` holds; :func:`~privlab.metrics.utility.published_utility`)."""
        qi = self.table.select(list(self.qi))
        classes = distinct_rows(qi.codes, qi.schema.sizes)[1]
        labels = self.table.column(self.sensitive) if self.sensitive else None
        return published_utility(classes, labels, k=self.model.k, levels=self.node)

    def input_measures(self) -> dict[str, Any]:
        """What the sanitizer measured on the input (the custodian's; kept in custody)."""
        return {
            "n_input": self.n_input,
            "n_suppressed": self.n_suppressed,
            "utility": self.utility.to_dict() if self.utility else None,
            "search": self.search,
        }

    def with_custody(
        self, custody: str | Path | Custody, release_sha256: str | None
    ) -> GeneralizedRelease:
        """This release with its custody attached, and the input's measures it keeps."""
        rel = super().with_custody(custody, release_sha256)
        kept = rel.custody.input_measures if rel.custody is not None else None
        if not kept:
            return rel  # type: ignore[return-value]
        return dataclasses.replace(rel, **_measures(kept))  # type: ignore[type-var]

    def summary(self) -> dict[str, Any]:
        return {
            "rows": self.n_rows,
            "algorithm": self.algorithm,
            "model": self.model.describe(),
            "node": list(self.node) if self.node is not None else None,
        }

    @classmethod
    def _from_published(
        cls, meta: dict[str, Any], tables: dict[str, PublishedTable]
    ) -> GeneralizedRelease:
        table = tables["table"].table
        params = dict(meta["parameters"])
        model = PrivacyModel(
            **{k: v for k, v in params.items() if k in PrivacyModel.__dataclass_fields__}
        )
        node = meta.get("node")
        qi = tuple(meta.get("qi") or table.schema.qi)
        if sorted(qi) != sorted(table.schema.qi):
            raise ReleaseError("the listed quasi-identifiers differ from the schema's")
        return cls(
            table=table,
            qi=qi,
            sensitive=table.schema.sensitive,
            algorithm=params.get("algorithm", "optimal"),
            model=model,
            suppression=float(params.get("suppression", 0.0)),
            objective=params.get("objective", "discernibility"),
            accounting=params.get("accounting", "privlab"),
            node=tuple(node) if node is not None else None,
            # the input's measures stay in custody (with_custody); a release.json without a
            # digest (as before 0.2, when it held them) is refused before this point
            **_measures({}),
        )


def _measures(kept: Mapping[str, Any]) -> dict[str, Any]:
    """The input's measures as release fields (from custody); None where unknown (a
    release loaded without its custody)."""
    u = kept.get("utility")
    return {
        "n_input": None if kept.get("n_input") is None else int(kept["n_input"]),
        "n_suppressed": None if kept.get("n_suppressed") is None else int(kept["n_suppressed"]),
        "utility": UtilityReport(**u) if isinstance(u, dict) and "n_records" in u else None,
        "search": dict(kept.get("search") or {}),
    }


def may_determine(n_kept: int, n_qi: int) -> bool:
    """Whether a kept column of ``n_kept`` distinct values can determine a quasi-identifier
    of ``n_qi``: the QI has two values at least and the kept column no more values than it
    (then it determines the QI when it has as many distinct (kept, QI) pairs as values)."""
    return n_qi >= 2 and n_kept <= n_qi


def warn_dependent(kept: str, qi: str, stacklevel: int) -> None:
    """Warn that the kept column ``kept`` determines the quasi-identifier ``qi``: published
    ungeneralized beside it, it undoes its generalization (every engine's one sentence;
    ``stacklevel`` counts from the caller)."""
    warnings.warn(
        f"column {kept!r} determines quasi-identifier {qi!r} and is published "
        f"ungeneralized: declare it a quasi-identifier too, or drop it",
        PrivacyWarning,
        stacklevel=stacklevel + 1,
    )


def compile_hierarchies(
    schema: Schema,
    qi: Sequence[str],
    hierarchies: Mapping[str, Hierarchy] | str | Path | None,
    dataset: str | None,
    stacklevel: int = 3,
) -> list[CompiledHierarchy]:
    """Each QI's hierarchy, resolved (given, the dataset's default or built from the domain)
    and compiled over its attribute; warns when one was built from the data's own range
    (in memory, on Spark and out of core alike)."""
    attrs = [schema[q] for q in qi]
    hier = resolve_hierarchies(attrs, hierarchies, dataset=dataset)
    from_data = [q for q in qi if hier[q].from_data]
    if from_data:
        warnings.warn(
            f"the hierarchy of {', '.join(map(repr, from_data))} was built from the data's own "
            "range: its interval labels reveal the minimum and the maximum, even of a "
            "suppressed record; declare a hierarchy (--hierarchies) or the domain (--domains)",
            PrivacyWarning,
            stacklevel=stacklevel,
        )
    return [hier[q].compile(a) for q, a in zip(qi, attrs)]


@dataclass(frozen=True)
class GeneralizationSettings:
    """The settings of :func:`~privlab.publish.generalization.generalize` as it checked
    them: one object that every engine (memory, stream, Spark) takes."""

    qi: tuple[str, ...]
    sensitive: str | None
    keep: tuple[str, ...]
    model: PrivacyModel
    suppression: float = 0.0
    objective: str = "discernibility"
    accounting: str = "privlab"
    hierarchies: Mapping[str, Hierarchy] | str | Path | None = None
    dataset: str | None = None

    def roles(self, schema: Schema) -> Schema:
        """``schema`` with the settings' roles (QIs, sensitive, kept; every other column
        dropped), refusing names privlab reserves."""
        out = schema.with_roles(qi=list(self.qi), sensitive=self.sensitive, keep=list(self.keep))
        refuse_reserved(out.published)
        return out

    def check_size(self, n: int) -> None:
        """Refuse a table of ``n`` rows that no release of the model can come from (every
        engine asks this before reading further)."""
        if n == 0:
            raise PrivlabError("the table is empty (0 rows)")
        if self.model.k > n:
            raise ParameterError(f"k = {self.model.k} is larger than the table ({n} rows)")
        if self.model.needs_sensitive and self.sensitive is None:
            raise ParameterError("l-diversity, t-closeness and delta-disclosure need --sensitive")

    def compile(
        self, schema: Schema, s: np.ndarray | None, stacklevel: int = 3
    ) -> list[CompiledHierarchy]:
        """Check ``l`` against the sensitive codes ``s`` and compile the QIs' hierarchies
        over ``schema`` (:func:`compile_hierarchies`)."""
        check_l(self.model, s, self.sensitive)
        return compile_hierarchies(
            schema, self.qi, self.hierarchies, self.dataset, stacklevel=stacklevel + 1
        )


def check_l(model: PrivacyModel, s: np.ndarray | None, sensitive: str | None) -> None:
    """Refuse an l above the number of distinct sensitive values."""
    if model.l is not None:
        distinct = int(np.unique(s).size)
        if model.l > distinct:
            raise ParameterError(
                f"l = {model.l:g} is above the number of distinct values of {sensitive!r} "
                f"({distinct})"
            )


def search_node(lattice, model, n, suppression, objective, accounting):
    """The optimal node of ``lattice`` with at most ``suppression`` of the ``n`` records
    suppressed (in memory and on Spark), or an :class:`EligibilityError`."""
    max_supp = int(np.floor(suppression * n + 1e-9))
    res = optimal_node(
        lattice, model, max_suppressed=max_supp, objective=objective, accounting=accounting
    )
    if res is None:
        raise EligibilityError(
            f"no generalization satisfies {model.describe()} with at most {max_supp} "
            f"suppressed record(s), not even suppressing every quasi-identifier"
        )
    return res


#: The utility measures expand the distinct tuples to one row per record (their code takes
#: records); above this many records the engines that count tuples leave them out (None).
UTILITY_MAX_ROWS = 20_000_000


@dataclass(frozen=True)
class TuplePlan:
    """The optimal generalization planned from the distinct ``(QI, sensitive)`` tuples and
    their counts (what the Spark and stream engines count in one pass): the chosen node, and
    what recoding each record needs.

    Attributes
    ----------
    node
        The chosen level of each quasi-identifier.
    compiled
        The quasi-identifiers' compiled hierarchies.
    sizes
        The number of generalized values of each quasi-identifier at ``node``.
    failing
        The joint indexes (:func:`~privlab.data.counts.joint_index` over ``sizes``) of the
        generalized classes whose records are suppressed, sorted.
    schema
        The published columns' attributes (a generalized QI has its level's labels).
    probe
        The in-memory release without rows: its ``parameters()``, ``metadata()`` and
        ``input_measures()`` are the release's.
    published
        The published utility measures (from the published records only).
    """

    node: tuple[int, ...]
    compiled: list[Any]
    sizes: list[int]
    failing: np.ndarray
    schema: Schema
    probe: GeneralizedRelease
    published: dict[str, Any]

    def parameters(self) -> dict[str, Any]:
        return self.probe.parameters()

    def metadata(self) -> dict[str, Any]:
        return {**self.probe.metadata(), "utility": self.published}

    def recode(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Records' codes (the quasi-identifiers first, in ``qi`` order) recoded to ``node``
        in place, and the mask of the records kept (not in a failing class)."""
        d = len(self.node)
        for j, (h, lv) in enumerate(zip(self.compiled, self.node)):
            codes[:, j] = h.maps[lv][codes[:, j]]
        if not d or not self.failing.size:
            return codes, np.ones(codes.shape[0], dtype=bool)
        key = joint_index(codes[:, :d].astype(np.int64), self.sizes)
        return codes, ~np.isin(key, self.failing)


def optimal_release(
    table: Table,
    settings: GeneralizationSettings,
    res: Any,
    *,
    n_input: int,
    n_suppressed: int,
    utility: UtilityReport | None,
    custody: Custody | None = None,
) -> GeneralizedRelease:
    """The release of the optimal method: ``table`` (the published rows) with the search's
    result ``res`` (:func:`search_node`) and the input's measures."""
    return GeneralizedRelease(
        table=table,
        qi=tuple(settings.qi),
        sensitive=settings.sensitive,
        algorithm="optimal",
        model=settings.model,
        suppression=float(settings.suppression),
        objective=settings.objective,
        accounting=settings.accounting,
        node=tuple(int(v) for v in res.node),
        n_input=n_input,
        n_suppressed=n_suppressed,
        utility=utility,
        search={
            "nodes": res.n_nodes,
            "evaluated": res.evaluated,
            "feasible": res.feasible_nodes,
            "cost": res.cost,
        },
        custody=custody,
    )


def plan_from_tuples(
    schema: Schema,
    settings: GeneralizationSettings,
    tuples: np.ndarray,
    weights: np.ndarray,
    compiled: list[Any],
) -> TuplePlan:
    """Plan the optimal method of :func:`~privlab.publish.generalization.generalize` from the
    distinct ``tuples`` (QI codes, then the sensitive code; sorted) and their record counts
    ``weights``: the exact lattice search of the in-memory path, with the tuples' counts as
    weights, so the node, the classes and the suppressed classes are the in-memory ones.
    ``schema`` has the roles; ``compiled`` the QIs' hierarchies."""
    qi, sensitive, model = list(settings.qi), settings.sensitive, settings.model
    d = len(qi)
    n = int(weights.sum())
    x = tuples[:, :d]
    s = tuples[:, d] if sensitive else None
    m = schema[sensitive].size if sensitive else 0
    use_s = s if model.needs_sensitive else None
    lattice = Lattice(x, compiled, use_s, m, weights=weights)
    res = search_node(
        lattice, model, n, settings.suppression, settings.objective, settings.accounting
    )
    node = res.node
    cls, _sizes, ok = lattice.evaluate(node, model)
    kept = ok[cls][lattice.row_of]  # per distinct (QI, sensitive) tuple
    gen = [h.maps[lv][x[:, j]] for j, (h, lv) in enumerate(zip(compiled, node))]
    class_of = np.where(kept, cls[lattice.row_of], -1)
    utility = None
    if n <= UTILITY_MAX_ROWS:
        cover = [
            h.maps[lv][None, :] == np.arange(h.sizes()[lv])[:, None]
            for h, lv in zip(compiled, node)
        ]
        utility = cell_utility(
            np.repeat(x, weights, axis=0),
            [np.repeat(g, weights) for g in gen],
            cover,
            np.repeat(class_of, weights),
            k=model.k,
            levels=node,
            heights=[h.height for h in compiled],
            labels=np.repeat(s, weights) if s is not None else None,
        )
    else:
        warnings.warn(
            f"the utility measures are not computed above {UTILITY_MAX_ROWS:,} records",
            RuntimeWarning,
            stacklevel=4,
        )
    labels = [h.labels[lv] for h, lv in zip(compiled, node)]
    pub_attrs = []
    for a in schema.attributes:
        if not a.role.published:
            continue
        if a.name in qi and node[list(qi).index(a.name)] != 0:
            j = list(qi).index(a.name)
            a = Attribute(a.name, tuple(labels[j]), Role.QI, False)
        pub_attrs.append(a)  # a QI at level 0 keeps its attribute and codes (as in memory)
    sizes = [h.sizes()[lv] for h, lv in zip(compiled, node)]
    failing = (
        np.unique(joint_index(np.column_stack(gen)[~kept], sizes))
        if d
        else np.empty(0, dtype=np.int64)
    )
    pub_schema = Schema(tuple(pub_attrs))
    empty = Table(np.empty((0, len(pub_attrs)), dtype=np.int64), pub_schema)
    probe = optimal_release(
        empty, settings, res, n_input=n, n_suppressed=int(weights[~kept].sum()), utility=utility,
    )  # fmt: skip
    # the published measures, from the published rows only: the kept distinct tuples, each
    # with its records, classed by their generalized quasi-identifiers
    pub_classes = distinct_rows(np.column_stack(gen)[kept], sizes)[1] if d else np.zeros(
        int(kept.sum()), dtype=np.int64
    )  # fmt: skip
    published = published_utility(
        pub_classes, s[kept] if s is not None else None, k=model.k, levels=node,
        weights=weights[kept],
    )  # fmt: skip
    return TuplePlan(
        tuple(int(v) for v in node), compiled, sizes, failing, pub_schema, probe, published
    )
