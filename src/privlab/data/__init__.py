"""Data layer: schema, encoded tables, readers and the bundled datasets."""

from privlab.data.datasets import (
    DATASETS,
    load_adult,
    load_breast_cancer,
    load_dataset,
    load_input,
    load_lenses,
    load_mushroom,
    load_nursery,
)
from privlab.data.frames import as_table
from privlab.data.partition import Partition
from privlab.data.schema import Attribute, Role, Schema
from privlab.data.table import Table, read_table

__all__ = [
    "DATASETS",
    "Attribute",
    "Partition",
    "Role",
    "Schema",
    "Table",
    "as_table",
    "load_adult",
    "load_breast_cancer",
    "load_dataset",
    "load_input",
    "load_lenses",
    "load_mushroom",
    "load_nursery",
    "read_table",
]
