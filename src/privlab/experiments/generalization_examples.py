"""Seed 000 Tables 1.2, 1.3, 2.4 and 2.5: generalizations of the 12-row Table 1.1.

For each paper table privlab (a) re-measures the paper's table as printed (k, distinct l,
its groups) and (b) computes the table itself: Table 1.2 = Table 2.4 is the optimal global
recoding for k = 4 (hierarchies: gender -> *, age -> 10-year intervals -> *, zip masked
digit by digit); Table 2.5 is Mondrian local recoding for k = 4 (QIs in the order zip, age,
gender, which breaks Mondrian's ties in normalized width); Table 1.3 (4-diverse) is a local
recoding whose ``*``-gender group overlaps the M and F groups, which neither full-domain nor
strict multidimensional recoding can produce: privlab reports its best 4-diverse global and
Mondrian tables next to it.
"""

from __future__ import annotations

import pandas as pd

from privlab.data.counts import group_counts
from privlab.data.examples import TABLE_1_1_COLUMNS, table_1_1
from privlab.data.hierarchy import flat, intervals, masking
from privlab.data.table import Table
from privlab.experiments import Context, ExperimentResult, register
from privlab.metrics.privacy import distinct_l_diversity, k_anonymity
from privlab.publish.generalization import GeneralizedRelease, generalize

COLUMNS = list(TABLE_1_1_COLUMNS)

# The paper's tables as printed (gender, age, zip, disease), rows in the paper's order.
_T12 = [("*", "25-49", z, d) for z, ds in (
    ("9021*", "AIDS AIDS Cancer AIDS"), ("0762*", "Cancer Flu None Flu"),
    ("3310*", "Cancer None Flu None")) for d in ds.split()]  # fmt: skip
_T13 = [(g, "25-49", "*****", d) for g, ds in (
    ("M", "AIDS Flu Cancer None"), ("F", "Cancer AIDS None Flu"),
    ("*", "Cancer AIDS Flu None")) for d in ds.split()]  # fmt: skip
_T25 = [("*", a, z, d) for a, z, ds in (
    ("25-45", "9021*", "AIDS AIDS Cancer AIDS"), ("40-50", "07620", "Cancer Flu None Flu"),
    ("20-50", "33109", "Cancer None Flu None")) for d in ds.split()]  # fmt: skip
PAPER_TABLES = {"1.2": _T12, "1.3": _T13, "2.4": _T12, "2.5": _T25}


def example_hierarchies(table: Table) -> dict:
    s = table.schema
    return {
        "gender": flat(s["gender"]),
        "age": intervals(s["age"], widths=(10,), start=0),
        "zip": masking(s["zip"]),
    }


def measure_printed(rows: list[tuple]) -> dict:
    """k, distinct l and group sizes of a table as printed (QI tuple = class)."""
    df = pd.DataFrame(rows, columns=COLUMNS)
    df["disease"] = df["disease"].str.capitalize().replace({"Aids": "AIDS"})
    t = Table.from_pandas(df.astype({"age": str}), qi=COLUMNS[:3], sensitive="disease")
    cls = pd.factorize(pd.MultiIndex.from_frame(df[COLUMNS[:3]]))[0]
    counts = group_counts(cls, t.column("disease"), t.schema["disease"].size)
    return {
        "k": k_anonymity(counts),
        "distinct_l": distinct_l_diversity(counts),
        "groups": len(counts),
    }


def groups_of(release: GeneralizedRelease) -> list[list[str]]:
    """Each class's diseases, sorted (classes sorted): the 'groups' compared with the paper."""
    df = release.to_pandas()
    g = df.groupby([*release.qi], sort=True)["disease"].apply(lambda s: sorted(s))
    return sorted(g.tolist())


def paper_groups(rows: list[tuple]) -> list[list[str]]:
    df = pd.DataFrame(rows, columns=COLUMNS)
    df["disease"] = df["disease"].replace({"Aids": "AIDS"})
    return sorted(df.groupby(COLUMNS[:3])["disease"].apply(lambda s: sorted(s)).tolist())


def reproduce() -> dict[str, GeneralizedRelease]:
    t = table_1_1()
    h = example_hierarchies(t)
    t_zip = t.select(["zip", "age", "gender", "disease"]).with_roles(
        qi=["zip", "age", "gender"], sensitive="disease"
    )
    return {
        "1.2": generalize(t, hierarchies=h, k=4),
        "2.4": generalize(t, hierarchies=h, k=4),
        "2.5": generalize(t_zip, hierarchies=h, k=4, method="mondrian"),
        "1.3": generalize(t, hierarchies=h, k=4, l=4),
        "1.3-mondrian": generalize(t_zip, hierarchies=h, k=4, l=4, method="mondrian"),
    }


@register(
    "generalization-examples",
    title="k-anonymous and l-diverse generalizations of the 12-row example",
    source="Mothali 2011, Tables 1.2, 1.3, 2.4, 2.5",
)
def run(ctx: Context) -> ExperimentResult:
    releases = reproduce()
    rows, paper = [], []
    for name, rel in releases.items():
        p = rel.privacy()
        key = name.split("-")[0]
        same = groups_of(rel) == paper_groups(PAPER_TABLES[key])
        rows.append(
            {
                "table": name,
                "method": rel.algorithm,
                "k": p.k,
                "distinct_l": p.distinct_l,
                "groups": p.n_classes,
                "discernibility": rel.utility.discernibility,
                "same_groups_as_paper": same,
                "labels": sorted(set(map(tuple, rel.to_pandas()[list(rel.qi)].astype(str).values))),
            }
        )
    for name, tab in PAPER_TABLES.items():
        m = measure_printed(tab)
        sizes = [len(g) for g in paper_groups(tab)]
        paper.append({"table": name, **m, "discernibility": float(sum(s * s for s in sizes))})
    notes = (
        "Tables 1.2/2.4: privlab's optimal k=4 global recoding gives exactly the paper's groups "
        "(zip masked to 4 digits, gender suppressed). The paper prints age as '25-49' although "
        "tuple 8 is 24; no interval hierarchy can give 4-anonymity short of suppressing age, "
        "which privlab does ('*'). Table 2.5: Mondrian (QIs ordered zip, age, gender) gives "
        "the paper's groups, with exact ranges (the paper rounds 25-43 to 25-45, etc.). "
        "Table 1.3 is 4-diverse with groups of 4 but its '*'-gender group overlaps the M and F "
        "groups: no full-domain or strict multidimensional recoding yields it; privlab's best "
        "4-diverse tables split by gender into two groups of 6 (discernibility 72 vs 48)."
    )
    return ExperimentResult(experiment=ctx.id, rows=rows, paper=paper, notes=notes)
