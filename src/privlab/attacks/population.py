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
release and is refused with the first mismatch named.  (Local recoding whose boxes overlap
can fit one person to several classes: that case is refused, not guessed.)
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
    """The attack layout of a population: its people grouped by the class they fit."""

    layout: Layout
    class_of: np.ndarray  # (P,) the class of each population row
    n_people: int


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
) -> PopulationLayout:
    """Group the population's people by the class of ``release`` each one fits.

    ``population`` holds (at least) the release's quasi-identifiers; its rows are the
    people.  Raises :class:`ReleaseError` when a person fits no class or several, or when a
    class receives another number of people than it has published rows.
    """
    part = partition_of(release)
    if part.kind != "classes":
        raise ReleaseError(
            "a population file is for generalized releases (threat model a); an Anatomy "
            "release publishes its quasi-identifiers already"
        )
    qi_table = release.quasi_identifiers()
    names = list(qi_table.names)
    missing = [q for q in names if q not in population.names]
    if missing:
        raise ReleaseError(
            f"the population lacks the quasi-identifier {missing[0]!r} of the release "
            f"(it needs {', '.join(names)})"
        )
    if isinstance(hierarchies, (str, Path)):
        hierarchies = read_hierarchies(hierarchies)
    hierarchies = dict(hierarchies or {})
    people = population.require_rows().select(names)
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
    if (n_fit > 1).any():
        i = int(np.argmax(n_fit > 1))
        raise ReleaseError(
            f"person {i} of the population ({_describe(people, i)}) fits {int(n_fit[i])} "
            "classes (overlapping cells, e.g. local recoding): threat model (a) needs each "
            "person's class"
        )
    class_of = fits.argmax(axis=1).astype(np.int64)[combo_of]
    sizes = np.bincount(class_of, minlength=part.n_groups)
    published = part.sizes()
    if not np.array_equal(sizes, published):
        g = int(np.flatnonzero(sizes != published)[0])
        raise ReleaseError(
            f"class {g} of the release has {int(published[g])} published rows but "
            f"{int(sizes[g])} people of the population fit it: the population does not "
            "belong to this release"
        )
    layout = layout_from_arrays(people.codes, people.schema.sizes, class_of, part.counts)
    return PopulationLayout(layout=layout, class_of=class_of, n_people=n_people)


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
]
