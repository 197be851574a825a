"""Threat model (a) on a generalized release: the attacker knows everyone's exact QIs.

Kifer (2009, Sec. 5.2) notes that the learning attack on Anatomy applies unchanged to global
and local recoding: an equivalence class of a generalized table is a group whose multiset of
sensitive values is public (the class's published rows show them) while who holds which is
hidden, and an attacker who knows each person's exact quasi-identifiers learns the
Naive-Bayes model from them exactly as from Anatomy's QIT.

The custodian supplies that knowledge as a *population* table: the QI columns (by name), one
row per person of the release.  Each person's class follows from the published generalized
cells: a cell *covers* an exact value when it is the value itself, ``*``, a numeric range
(``20-29``, ``[20, 30)``, ``[20, 29]``) holding it, a set ``{a, b}``, or an ancestor of the
value in a generalization hierarchy (the public hierarchies the release was made with:
``hierarchies=`` a mapping or an ARX folder; a bundled dataset's defaults when the
population is one).  A person must fit exactly one class, and every class must receive as
many people as it has published rows; otherwise the population does not belong to the
release and is refused with the first mismatch named.  Local recoding whose boxes overlap
can fit one person to several classes: each person's class is then latent, and the
deFinetti attack samples it too (people swapped between classes they both fit,
:mod:`privlab.attacks._membership`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privlab.attacks._layout import Layout, layout_from_arrays, partition_of
from privlab.data.counts import distinct_rows
from privlab.data.hierarchy import Hierarchy, read_hierarchies
from privlab.data.table import Table
from privlab.errors import ReleaseError

_RANGE = re.compile(
    r"^\s*(?P<open>[\[(]?)\s*(?P<lo>-?\d+(?:\.\d+)?)\s*(?:-|,|\.\.|to)\s*"
    r"(?P<hi>-?\d+(?:\.\d+)?)\s*(?P<close>[\])]?)\s*$"
)

#: What the posterior of a population attack says about its attacker.
THREAT_MODEL_A = (
    "the attacker knows the exact quasi-identifiers of every person in the release (the "
    "population file) and the published generalized table, and learns the model from them"
)


@dataclass(frozen=True, eq=False)
class PopulationLayout:
    """The attack layout of a population: its people grouped by the class they fit.

    With overlapping cells (local recoding) a person may fit several classes: ``class_of``
    is then one assignment of people to classes that fills every class (a matching), and
    ``fit_ptr`` / ``fit_cls`` list, in CSR form, every class each person fits (the sampler
    moves people between them, :func:`privlab.attacks._membership.membership_moves`).
    """

    layout: Layout
    class_of: np.ndarray  # (P,) the class of each population row (one feasible assignment)
    n_people: int
    fit_ptr: np.ndarray | None = None  # (P+1,) CSR offsets of the classes each person fits
    fit_cls: np.ndarray | None = None  # the classes, sorted per person

    @property
    def overlapping(self) -> bool:
        """Whether some person fits several classes (membership is then latent)."""
        return self.fit_ptr is not None and bool((np.diff(self.fit_ptr) > 1).any())

    def exchangeable(self) -> bool:
        """Whether two people can exchange classes: some ``p`` in class ``g1`` fits ``g2``
        while someone in ``g2`` fits ``g1``.  When none can, the filling is the only one and
        membership is not latent after all (people who fit several classes all share QIs
        with the class they were matched to, e.g. Mondrian's overlaps on Adult)."""
        if not self.overlapping:
            return False
        n_fit = np.diff(self.fit_ptr)
        owner = np.repeat(np.arange(n_fit.size), n_fit)
        frm = self.class_of[owner]
        to = self.fit_cls
        moves = frm != to
        pairs = set(zip(frm[moves].tolist(), to[moves].tolist()))
        return any((b, a) in pairs for a, b in pairs)

    def group_id(self) -> np.ndarray:
        """Each person's class when they fit exactly one, else -1."""
        if self.fit_ptr is None:
            return self.class_of
        return np.where(np.diff(self.fit_ptr) == 1, self.class_of, -1).astype(np.int64)


def covers(label: str, value: Any, ancestors: Mapping[str, set[str]] | None = None) -> bool:
    """Whether a published generalized cell ``label`` covers the exact ``value``."""
    text = str(value).strip()
    label = str(label).strip()
    if label in ("*", text):
        return True
    if ancestors is not None and label in ancestors.get(text, ()):
        return True
    if label.startswith("{") and label.endswith("}"):
        return text in {x.strip() for x in label[1:-1].split(",")}
    m = _RANGE.match(label)
    if m is not None:
        try:
            x = float(text)
        except ValueError:
            return False
        lo, hi = float(m["lo"]), float(m["hi"])
        upper_open = m["close"] == ")"
        return lo <= x and (x < hi if upper_open else x <= hi) and not math.isnan(x)
    return False


def _ancestors(hierarchy: Hierarchy | None) -> dict[str, set[str]] | None:
    if hierarchy is None:
        return None
    return {row[0]: set(row[1:]) for row in hierarchy.rows}


def cover_matrix(labels, values, hierarchy: Hierarchy | None = None) -> np.ndarray:
    """``(len(values), len(labels))`` booleans: whether published cell ``labels[l]`` covers
    the exact ``values[v]`` (:func:`covers`, through ``hierarchy``'s ancestors)."""
    anc = _ancestors(hierarchy)
    return np.array([[covers(lab, v, anc) for lab in labels] for v in values], dtype=bool).reshape(
        len(values), len(labels)
    )


def read_generalized(release, people: Table, hierarchies, *, who: str, refusal: str):
    """A generalized release's partition and published QIs, the ``people``'s exact QIs in
    the same columns, and the hierarchies as a mapping; refusing another kind of release
    (``refusal``) or people without a quasi-identifier of the release (named)."""
    part = partition_of(release)
    if part.kind != "classes":
        raise ReleaseError(refusal)
    qi_table = release.quasi_identifiers()
    names = list(qi_table.names)
    missing = [q for q in names if q not in people.names]
    if missing:
        raise ReleaseError(
            f"the {who} lack{'s' if who == 'population' else ''} the quasi-identifier "
            f"{missing[0]!r} of the release (it needs {', '.join(names)})"
        )
    if isinstance(hierarchies, (str, Path)):
        hierarchies = read_hierarchies(hierarchies)
    return part, qi_table, people.require_rows().select(names), dict(hierarchies or {})


def class_rows(part) -> np.ndarray:
    """The first published row of every class of a partition: where its cells are read."""
    first = np.zeros(part.n_groups, dtype=np.int64)
    first[part.group_of[::-1]] = np.arange(part.n_rows)[::-1]
    return first


def population_layout(
    release,
    population: Table,
    *,
    hierarchies: Mapping[str, Hierarchy] | str | Path | None = None,
    overlap: bool = False,
) -> PopulationLayout:
    """Group the population's people by the class of ``release`` each one fits.

    ``population`` holds (at least) the release's quasi-identifiers; its rows are the
    people.  Raises :class:`ReleaseError` when a person fits no class, or several (unless
    ``overlap``: then people are matched to classes so that every class is filled, and
    the classes each person fits are kept), or when the classes cannot receive as many
    people as they have published rows.
    """
    part, qi_table, people, hierarchies = read_generalized(
        release, population, hierarchies, who="population",
        refusal="a population file is for generalized releases (threat model a); an "
        "Anatomy release publishes its quasi-identifiers already",
    )  # fmt: skip
    names = list(qi_table.names)
    n_people = people.n_rows
    first = class_rows(part)
    # which classes each distinct exact QI combination fits: attribute by attribute, through
    # a (exact values x published labels) coverage table
    rep, combo_of, _ = distinct_rows(people.codes, people.schema.sizes)
    fits = np.ones((rep.size, part.n_groups), dtype=bool)
    for j, name in enumerate(names):
        class_label = qi_table.codes[first, j]  # (G,) label code of each class
        cover = cover_matrix(
            qi_table.schema[name].domain, people.schema[name].domain, hierarchies.get(name)
        )
        fits &= cover[people.codes[rep, j]][:, class_label]
    n_fit = fits.sum(axis=1)[combo_of]
    if (n_fit == 0).any():
        i = int(np.argmax(n_fit == 0))
        raise ReleaseError(
            f"person {i} of the population ({_describe(people, i)}) fits no class of the "
            "release: the population is not the release's, or a generalized cell cannot be "
            "read (give the release's hierarchies)"
        )
    if (n_fit > 1).any() and not overlap:
        i = int(np.argmax(n_fit > 1))
        raise ReleaseError(
            f"person {i} of the population ({_describe(people, i)}) fits {int(n_fit[i])} "
            "classes (overlapping cells, e.g. local recoding): threat model (a) needs each "
            "person's class"
        )
    published = part.sizes()
    fit_ptr = fit_cls = None
    if (n_fit > 1).any():
        combo_fit_ptr = np.concatenate([[0], np.cumsum(fits.sum(axis=1))]).astype(np.int64)
        combo_fit_cls = np.nonzero(fits)[1].astype(np.int64)  # row-major: sorted per combo
        counts = np.diff(combo_fit_ptr)[combo_of]
        fit_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        take = np.repeat(combo_fit_ptr[combo_of], counts) + (
            np.arange(fit_ptr[-1]) - np.repeat(fit_ptr[:-1], counts)
        )
        fit_cls = combo_fit_cls[take]
        class_of = _match(fit_ptr, fit_cls, published, people)
    else:
        class_of = fits.argmax(axis=1).astype(np.int64)[combo_of]
    sizes = np.bincount(class_of, minlength=part.n_groups)
    if not np.array_equal(sizes, published):
        g = int(np.flatnonzero(sizes != published)[0])
        raise ReleaseError(
            f"class {g} of the release has {int(published[g])} published rows but "
            f"{int(sizes[g])} people of the population fit it: the population does not "
            "belong to this release"
        )
    layout = layout_from_arrays(people.codes, people.schema.sizes, class_of, part.counts)
    return PopulationLayout(
        layout=layout, class_of=class_of, n_people=n_people, fit_ptr=fit_ptr, fit_cls=fit_cls
    )


def _match(fit_ptr, fit_cls, sizes, people) -> np.ndarray:
    """One assignment of people to classes they fit that fills every class exactly.

    People who fit one class take it; the others are matched to the remaining places by a
    maximum bipartite matching (Hopcroft-Karp, :func:`scipy.sparse.csgraph.
    maximum_bipartite_matching`) of people to the free places of the classes they fit.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    n_fit = np.diff(fit_ptr)
    class_of = np.full(n_fit.size, -1, dtype=np.int64)
    single = n_fit == 1
    class_of[single] = fit_cls[fit_ptr[:-1][single]]
    free = sizes - np.bincount(class_of[single], minlength=sizes.size)
    if (free < 0).any():
        g = int(np.flatnonzero(free < 0)[0])
        raise ReleaseError(
            f"class {g} of the release has {int(sizes[g])} published rows but more people "
            "of the population fit only it: the population does not belong to this release"
        )
    multi = np.flatnonzero(~single)
    place_ptr = np.concatenate([[0], np.cumsum(free)]).astype(np.int64)
    rows, cols = [], []
    for r, i in enumerate(multi):
        for g in fit_cls[fit_ptr[i] : fit_ptr[i + 1]]:
            places = np.arange(place_ptr[g], place_ptr[g + 1])
            rows.append(np.full(places.size, r))
            cols.append(places)
    if multi.size:
        r = np.concatenate(rows)
        c = np.concatenate(cols)
        graph = csr_matrix(
            (np.ones(r.size, dtype=np.int8), (r, c)), shape=(multi.size, int(place_ptr[-1]))
        )
        place = maximum_bipartite_matching(graph, perm_type="column")
        if (place < 0).any():
            i = int(multi[int(np.argmax(place < 0))])
            raise ReleaseError(
                f"the people of the population cannot fill the release's classes (person {i}, "
                f"{_describe(people, i)}, finds no free place): the population does not "
                "belong to this release"
            )
        class_of[multi] = np.searchsorted(place_ptr, place, side="right") - 1
    return class_of


def _describe(people: Table, i: int) -> str:
    return ", ".join(f"{n} = {people.decode(n)[i]}" for n in people.names)


def bundled_hierarchies(spec: str | Path) -> dict[str, Hierarchy] | None:
    """The default hierarchies of a bundled dataset named by ``spec`` (else None)."""
    from privlab.data.datasets import DATASETS

    name = str(spec)
    if name not in DATASETS or Path(name).exists():
        return None
    from privlab.data.default_hierarchies import dataset_hierarchies

    return dict(dataset_hierarchies("adult" if name.startswith("adult") else name))


__all__ = [
    "THREAT_MODEL_A",
    "PopulationLayout",
    "bundled_hierarchies",
    "class_rows",
    "cover_matrix",
    "covers",
    "population_layout",
    "read_generalized",
]
