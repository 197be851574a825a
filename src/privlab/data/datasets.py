"""Bundled UCI datasets (CC BY 4.0; see DATA_LICENSES.md at the repository root).

The raw UCI files ship gzip-compressed in ``privlab/data/files``.  Loaders return an encoded
:class:`~privlab.data.table.Table` with no roles set; give roles with
``table.with_roles(qi=..., sensitive=...)``.

Missing values: UCI marks them with ``?``.  :func:`load_adult` drops those rows by default
(30,162 training rows, the size every source document uses).  The small datasets keep ``?``
as an explicit category by default (so that the row counts are the documented 8,124 and 286)
and drop those rows with ``drop_missing=True``.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privlab.data.schema import Schema
from privlab.data.table import Table, read_table
from privlab.errors import ParameterError, PrivlabError

ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "salary",
)
NURSERY_COLUMNS = (
    "parents",
    "has_nurs",
    "form",
    "children",
    "housing",
    "finance",
    "social",
    "health",
    "class",
)
#: Nursery's values in the order of the UCI description (ordinal attributes).
NURSERY_DOMAINS = {
    "parents": ("usual", "pretentious", "great_pret"),
    "has_nurs": ("proper", "less_proper", "improper", "critical", "very_crit"),
    "form": ("complete", "completed", "incomplete", "foster"),
    "children": ("1", "2", "3", "more"),
    "housing": ("convenient", "less_conv", "critical"),
    "finance": ("convenient", "inconv"),
    "social": ("nonprob", "slightly_prob", "problematic"),
    "health": ("recommended", "priority", "not_recom"),
    "class": ("not_recom", "recommend", "very_recom", "priority", "spec_prior"),
}
MUSHROOM_COLUMNS = (
    "class",
    "cap-shape",
    "cap-surface",
    "cap-color",
    "bruises",
    "odor",
    "gill-attachment",
    "gill-spacing",
    "gill-size",
    "gill-color",
    "stalk-shape",
    "stalk-root",
    "stalk-surface-above-ring",
    "stalk-surface-below-ring",
    "stalk-color-above-ring",
    "stalk-color-below-ring",
    "veil-type",
    "veil-color",
    "ring-number",
    "ring-type",
    "spore-print-color",
    "population",
    "habitat",
)
BREAST_CANCER_COLUMNS = (
    "class",
    "age",
    "menopause",
    "tumor-size",
    "inv-nodes",
    "node-caps",
    "deg-malig",
    "breast",
    "breast-quad",
    "irradiat",
)
LENSES_COLUMNS = ("age", "spectacle-prescription", "astigmatic", "tear-production-rate", "class")
_LENSES_LABELS = {
    "age": {1: "young", 2: "pre-presbyopic", 3: "presbyopic"},
    "spectacle-prescription": {1: "myope", 2: "hypermetrope"},
    "astigmatic": {1: "no", 2: "yes"},
    "tear-production-rate": {1: "reduced", 2: "normal"},
    "class": {1: "hard", 2: "soft", 3: "none"},
}


def _read_text(filename: str) -> str:
    ref = resources.files("privlab.data") / "files" / f"{filename}.gz"
    with ref.open("rb") as fh, gzip.open(fh, "rt", encoding="utf-8") as gz:
        return gz.read()


def _read_csv(filename: str, columns: tuple[str, ...], **kw) -> pd.DataFrame:
    return pd.read_csv(
        io.StringIO(_read_text(filename)),
        header=None,
        names=list(columns),
        skipinitialspace=True,
        keep_default_na=False,
        **kw,
    )


def _finish(df: pd.DataFrame, drop_missing: bool, domains=None) -> Table:
    if drop_missing:
        text = df[[c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])]]
        df = df.loc[~(text == "?").any(axis=1)].reset_index(drop=True)
    return Table.from_pandas(df, domains=domains, missing_markers=())


def adult_documented_domains() -> dict[str, tuple[str, ...]]:
    """The categorical domains adult.names documents (public: they come with the data set,
    not from its records)."""
    domains: dict[str, tuple[str, ...]] = {}
    for line in _read_text("adult.names").splitlines():
        name, sep, rest = line.partition(":")
        if sep and name in ADULT_COLUMNS and "continuous" not in rest:
            domains[name] = tuple(v.strip() for v in rest.strip().rstrip(".").split(","))
        if line.startswith(">50K"):
            domains["salary"] = tuple(v.strip() for v in line.rstrip(".").split(","))
    return domains


def _declare(table: Table, documented: dict[str, tuple[str, ...]]) -> Table:
    """Give an attribute its whole documented domain and mark it declared, when every value
    it holds is a documented one.

    The domain is the documented values sorted as :meth:`Table.from_pandas` sorts, so the
    values the records hold keep their relative order; a documented value no record holds
    (Adult's ``Never-worked`` once the ``?`` rows are dropped, ``Holand-Netherlands`` in the
    test split) is part of the domain too: a release over it (a DP histogram's cells, a
    learner's categories) then does not reveal which documented values are absent, and both
    splits share one coding."""
    attrs = list(table.schema.attributes)
    codes = np.array(table.codes)
    for j, a in enumerate(attrs):
        doc = documented.get(a.name)
        if doc is None or not set(map(str, a.domain)) <= set(doc):
            continue
        domain = tuple(sorted(doc))
        position = {v: i for i, v in enumerate(domain)}
        remap = np.array([position[str(v)] for v in a.domain], dtype=codes.dtype)
        if len(remap):
            codes[:, j] = remap[codes[:, j]]
        attrs[j] = replace(a, domain=domain, declared=True)
    return Table(codes, Schema(tuple(attrs)))


def load_adult(*, split: str = "train", drop_missing: bool = True) -> Table:
    """UCI Adult (Kohavi & Becker 1996).

    The categorical columns are *declared* (:attr:`Attribute.declared`): their values are
    those adult.names documents; their order is sorted as before.  The numeric ones are not.

    Parameters
    ----------
    split
        ``"train"`` (adult.data: 30,162 rows without missing values), ``"test"`` (adult.test:
        15,060) or ``"all"`` (their union: 45,222).  Test labels lose their trailing ``.``.
    drop_missing
        Drop rows with a ``?`` (default).  With False, ``?`` is kept as a category.
    """
    if split not in ("train", "test", "all"):
        raise ParameterError(f"split must be 'train', 'test' or 'all', not {split!r}")
    parts = []
    if split in ("train", "all"):
        parts.append(_read_csv("adult.data", ADULT_COLUMNS))
    if split in ("test", "all"):
        test = _read_csv("adult.test", ADULT_COLUMNS, skiprows=1)
        test["salary"] = test["salary"].str.rstrip(".")
        parts.append(test)
    df = pd.concat(parts, ignore_index=True).dropna(how="all")
    df = df[df["salary"].astype(str).str.len() > 0].reset_index(drop=True)
    return _declare(_finish(df, drop_missing), adult_documented_domains())


def load_nursery() -> Table:
    """UCI Nursery (Rajkovic et al. 1997): 12,960 rows, 8 attributes and the 5-valued class."""
    df = _read_csv("nursery.data", NURSERY_COLUMNS, dtype=str)
    return Table.from_pandas(df, domains=NURSERY_DOMAINS)


def load_mushroom(*, drop_missing: bool = False) -> Table:
    """UCI Mushroom (Schlimmer 1987): 8,124 rows; ``stalk-root`` has ``?`` for missing."""
    return _finish(_read_csv("agaricus-lepiota.data", MUSHROOM_COLUMNS, dtype=str), drop_missing)


def load_breast_cancer(*, drop_missing: bool = False) -> Table:
    """UCI Breast Cancer, Ljubljana (Zwitter & Soklic 1988): 286 rows, 9 rows with ``?``."""
    df = _read_csv("breast-cancer.data", BREAST_CANCER_COLUMNS, dtype=str)
    return _finish(df, drop_missing)


def load_lenses() -> Table:
    """UCI Lenses (Cendrowska 1987): 24 rows; codes mapped to the UCI labels."""
    df = pd.read_csv(io.StringIO(_read_text("lenses.data")), sep=r"\s+", header=None)
    df = df.iloc[:, 1:]
    df.columns = list(LENSES_COLUMNS)
    for c, labels in _LENSES_LABELS.items():
        df[c] = df[c].map(labels)
    return Table.from_pandas(df, domains={c: tuple(v.values()) for c, v in _LENSES_LABELS.items()})


#: Public bounds of Adult's numeric attributes, none read from the data: the lower ends are
#: the extraction rule of ``adult.names`` (AAGE > 16, AFNLWGT > 1, HRSWK > 0; money >= 0),
#: the upper ends the census top codes (age 90, capital gain 99,999, 99 hours) or a round
#: number chosen in advance (fnlwgt 1,500,000, capital loss 5,000).
ADULT_PUBLIC_BOUNDS: dict[str, tuple[float, float]] = {
    "age": (17.0, 90.0),
    "fnlwgt": (1.0, 1_500_000.0),
    "education-num": (1.0, 16.0),
    "capital-gain": (0.0, 99_999.0),
    "capital-loss": (0.0, 5_000.0),
    "hours-per-week": (1.0, 99.0),
}


@dataclass(frozen=True)
class DatasetInfo:
    """A bundled dataset: its loader, size and provenance, and the public bounds of its
    numeric columns (documented, not read from the records)."""

    name: str
    loader: Callable[[], Table]
    rows: int
    description: str
    source: str
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "rows": self.rows,
            "description": self.description,
            "source": self.source,
        }


#: The bundled datasets by name, each with its loader, source and roles.
DATASETS: dict[str, DatasetInfo] = {
    d.name: d
    for d in (
        DatasetInfo(
            "adult",
            load_adult,
            30162,
            "Census income, training split, rows with '?' dropped",
            "UCI Adult (Kohavi & Becker 1996), CC BY 4.0",
            ADULT_PUBLIC_BOUNDS,
        ),
        DatasetInfo(
            "adult-test",
            lambda: load_adult(split="test"),
            15060,
            "Census income, test split (adult.test), rows with '?' dropped",
            "UCI Adult (Kohavi & Becker 1996), CC BY 4.0",
            ADULT_PUBLIC_BOUNDS,
        ),
        DatasetInfo(
            "adult-all",
            lambda: load_adult(split="all"),
            45222,
            "Census income, train+test union, rows with '?' dropped",
            "UCI Adult (Kohavi & Becker 1996), CC BY 4.0",
            ADULT_PUBLIC_BOUNDS,
        ),
        DatasetInfo(
            "nursery",
            load_nursery,
            12960,
            "Nursery-school applications, 8 attributes + 5-valued class",
            "UCI Nursery (Rajkovic et al. 1997), CC BY 4.0",
        ),
        DatasetInfo(
            "mushroom",
            load_mushroom,
            8124,
            "Mushroom records, class (e/p) + 22 attributes",
            "UCI Mushroom (Schlimmer 1987), CC BY 4.0",
        ),
        DatasetInfo(
            "breast-cancer",
            load_breast_cancer,
            286,
            "Breast cancer recurrence, Ljubljana",
            "UCI Breast Cancer (Zwitter & Soklic 1988), CC BY 4.0",
        ),
        DatasetInfo(
            "lenses",
            load_lenses,
            24,
            "Contact lens fitting",
            "UCI Lenses (Cendrowska 1987), CC BY 4.0",
        ),
    )
}


def load_dataset(name: str) -> Table:
    """Load a bundled dataset by name (see :data:`DATASETS`)."""
    try:
        return DATASETS[name].loader()
    except KeyError:
        raise PrivlabError(
            f"unknown dataset {name!r}; bundled datasets: {', '.join(DATASETS)}"
        ) from None


def load_input(
    spec: str | Path,
    *,
    qi: Sequence[str] = (),
    sensitive: str | None = None,
    drop_missing: bool = False,
    domains: Mapping[str, Sequence[Any]] | None = None,
    encoding: str | None = None,
) -> Table:
    """A bundled dataset by name (``adult``, ``nursery``, ...) or a CSV/Parquet path.

    ``domains`` declares public, ordered domains for some columns (see
    :meth:`Table.from_pandas`).
    """
    if str(spec) in DATASETS and not Path(spec).exists():
        table = _bundled_missing(load_dataset(str(spec)), drop_missing)
        if domains:  # re-encode, keeping the domains the dataset declares (and their order)
            kept = {a.name: a.domain for a in table.schema.attributes if a.declared}
            table = Table.from_pandas(table.to_pandas(), domains={**kept, **domains})
        return table.with_roles(qi=qi, sensitive=sensitive)
    return read_table(
        spec,
        qi=qi,
        sensitive=sensitive,
        drop_missing=drop_missing,
        domains=domains,
        encoding=encoding,
    )


def _bundled_missing(table: Table, drop_missing: bool) -> Table:
    """A bundled dataset's ``?`` cells (Mushroom, Breast Cancer) are missing values.

    As for a CSV input: an error naming each column and its count, or (``drop_missing``)
    the rows dropped and ``?`` removed from the domains, whose order is kept.
    """
    if not any(not a.numeric and "?" in a.domain for a in table.schema.attributes):
        return table
    domains = {
        a.name: tuple(v for v in a.domain if v != "?")
        for a in table.schema.attributes
        if not a.numeric
    }
    return Table.from_pandas(table.to_pandas(), drop_missing=drop_missing, domains=domains)
