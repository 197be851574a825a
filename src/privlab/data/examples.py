"""Small example tables printed in the source documents (for tests and reproductions)."""

from __future__ import annotations

import pandas as pd

from privlab.data.table import Table

#: Seed 000, Table 1.1 (== Table 3.1): the 12-row microdata of the running example.
TABLE_1_1_COLUMNS = ("gender", "age", "zip", "disease")
TABLE_1_1 = (
    ("M", 25, "90210", "AIDS"),
    ("F", 43, "90211", "AIDS"),
    ("M", 29, "90212", "Cancer"),
    ("M", 41, "90213", "AIDS"),
    ("F", 41, "07620", "Cancer"),
    ("F", 40, "33109", "Cancer"),
    ("F", 40, "07620", "Flu"),
    ("F", 24, "33109", "None"),
    ("M", 48, "07620", "None"),
    ("F", 40, "07620", "Flu"),
    ("M", 48, "33109", "Flu"),
    ("M", 49, "33109", "None"),
)


def table_1_1_frame() -> pd.DataFrame:
    """Seed 000 Table 1.1 as a DataFrame (zip codes as strings, leading zeros kept)."""
    return pd.DataFrame(list(TABLE_1_1), columns=list(TABLE_1_1_COLUMNS))


def table_1_1() -> Table:
    """Seed 000 Table 1.1 encoded, QIs gender/age/zip and sensitive disease."""
    return Table.from_pandas(table_1_1_frame(), qi=list(TABLE_1_1_COLUMNS[:3]), sensitive="disease")
