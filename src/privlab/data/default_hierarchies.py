"""Default generalization hierarchies of the bundled datasets (built in code).

Adult's follow the hierarchies ARX ships for its Adult example (and the k-anonymity
literature, e.g. LeFevre et al. 2005/2006): age in 5-, 10- and 20-year intervals; workclass
by sector; education by stage; marital status by "spouse present"; occupation in three
broad groups; native country by continent; race and sex suppressed in one step.  Nursery's
ordinal attributes merge neighbouring values pairwise.  Attributes
not listed get :func:`privlab.data.hierarchy.default_hierarchy` (intervals or ``*``).
``privlab generalize --hierarchies DIR`` overrides any of them; write one out with
``Hierarchy.to_csv`` to start from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

from privlab.data.hierarchy import (
    Hierarchy,
    default_hierarchy,
    flat,
    from_mapping,
    intervals,
    ordered,
    read_hierarchies,
)
from privlab.data.schema import Attribute
from privlab.errors import HierarchyError

ADULT_WORKCLASS = {
    "Private": ("Non-Government",),
    "Self-emp-not-inc": ("Non-Government",),
    "Self-emp-inc": ("Non-Government",),
    "Federal-gov": ("Government",),
    "Local-gov": ("Government",),
    "State-gov": ("Government",),
    "Without-pay": ("Unemployed",),
    "Never-worked": ("Unemployed",),
}
ADULT_EDUCATION = {
    "Preschool": ("Primary School", "Primary education"),
    "1st-4th": ("Primary School", "Primary education"),
    "5th-6th": ("Primary School", "Primary education"),
    "7th-8th": ("Primary School", "Primary education"),
    "9th": ("High School", "Secondary education"),
    "10th": ("High School", "Secondary education"),
    "11th": ("High School", "Secondary education"),
    "12th": ("High School", "Secondary education"),
    "HS-grad": ("High School", "Secondary education"),
    "Some-college": ("Undergraduate", "Higher education"),
    "Bachelors": ("Undergraduate", "Higher education"),
    "Assoc-acdm": ("Professional Education", "Higher education"),
    "Assoc-voc": ("Professional Education", "Higher education"),
    "Prof-school": ("Professional Education", "Higher education"),
    "Masters": ("Graduate", "Higher education"),
    "Doctorate": ("Graduate", "Higher education"),
}
ADULT_MARITAL = {
    "Married-civ-spouse": ("spouse present",),
    "Married-AF-spouse": ("spouse present",),
    "Divorced": ("spouse not present",),
    "Never-married": ("spouse not present",),
    "Separated": ("spouse not present",),
    "Widowed": ("spouse not present",),
    "Married-spouse-absent": ("spouse not present",),
}
ADULT_OCCUPATION = {
    "Tech-support": ("Technical",),
    "Craft-repair": ("Technical",),
    "Prof-specialty": ("Technical",),
    "Machine-op-inspct": ("Technical",),
    "Sales": ("Nontechnical",),
    "Exec-managerial": ("Nontechnical",),
    "Handlers-cleaners": ("Nontechnical",),
    "Other-service": ("Other",),
    "Adm-clerical": ("Other",),
    "Farming-fishing": ("Other",),
    "Transport-moving": ("Other",),
    "Priv-house-serv": ("Other",),
    "Protective-serv": ("Other",),
    "Armed-Forces": ("Other",),
}
_CONTINENT = {
    "North America": (
        "United-States Canada Outlying-US(Guam-USVI-etc) Puerto-Rico Mexico Cuba Jamaica Haiti "
        "Dominican-Republic Honduras Guatemala Nicaragua El-Salvador Trinadad&Tobago"
    ),
    "South America": "Columbia Ecuador Peru",
    "Europe": (
        "England France Germany Greece Holand-Netherlands Hungary Ireland Italy Poland "
        "Portugal Scotland Yugoslavia"
    ),
    "Asia": "Cambodia China Hong India Iran Japan Laos Philippines South Taiwan Thailand Vietnam",
}
ADULT_COUNTRY = {c: (cont,) for cont, cs in _CONTINENT.items() for c in cs.split()}
ADULT_RACE = ("White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other")
ADULT_SEX = ("Male", "Female")

#: The 8 quasi-identifiers of the Adult benchmark (LeFevre et al.; ARX's example; ANJANA).
ADULT_QI = (
    "age",
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "race",
    "sex",
    "native-country",
)


@cache
def _adult() -> dict[str, Hierarchy]:
    return {
        "age": intervals("age", list(range(0, 100)), widths=(5, 10, 20), start=0),
        "workclass": from_mapping("workclass", ADULT_WORKCLASS),
        "education": from_mapping("education", ADULT_EDUCATION),
        "marital-status": from_mapping("marital-status", ADULT_MARITAL),
        "occupation": from_mapping("occupation", ADULT_OCCUPATION),
        "race": flat("race", ADULT_RACE),
        "sex": flat("sex", ADULT_SEX),
        "native-country": from_mapping("native-country", ADULT_COUNTRY),
    }


@cache
def _nursery() -> dict[str, Hierarchy]:
    """Nursery's attributes are ordinal: consecutive values merge pairwise, then ``*``."""
    from privlab.data.datasets import NURSERY_DOMAINS

    return {a: ordered(a, list(v), fanouts=(2,)) for a, v in NURSERY_DOMAINS.items()}


_DATASETS = {"adult": _adult, "adult-all": _adult, "nursery": _nursery}


def dataset_hierarchies(name: str) -> dict[str, Hierarchy]:
    """The default hierarchies of a bundled dataset (empty for datasets without any)."""
    f = _DATASETS.get(name)
    return dict(f()) if f is not None else {}


def resolve_hierarchies(
    schema_attrs: Sequence[Attribute],
    hierarchies: Mapping[str, Hierarchy] | str | Path | None,
    *,
    dataset: str | None = None,
) -> dict[str, Hierarchy]:
    """The hierarchy of each attribute: given, else the dataset's default, else generic."""
    if isinstance(hierarchies, (str, Path)):
        folder = hierarchies
        hierarchies = read_hierarchies(folder)
        if schema_attrs and not any(a.name in hierarchies for a in schema_attrs):
            names = ", ".join(f"{a.name}.csv" for a in schema_attrs)
            raise HierarchyError(
                f"{folder} holds no hierarchy of the quasi-identifiers (expected {names})"
            )
    given = dict(hierarchies or {})
    defaults: dict[str, Hierarchy] = {}
    if dataset is not None:
        defaults = dataset_hierarchies(dataset)
    out = {}
    for a in schema_attrs:
        h = given.get(a.name) or defaults.get(a.name) or default_hierarchy(a)
        if h.attribute != a.name:
            h = Hierarchy(a.name, h.rows)
        out[a.name] = h
    return out
