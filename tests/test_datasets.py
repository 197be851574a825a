import numpy as np
import pytest

from privlab.data import (
    DATASETS,
    load_adult,
    load_breast_cancer,
    load_dataset,
    load_lenses,
    load_mushroom,
    load_nursery,
)
from privlab.data.datasets import ADULT_COLUMNS
from privlab.errors import ParameterError, PrivlabError


def test_adult_train_has_30162_rows_and_uci_columns():
    t = load_adult()
    assert t.n_rows == 30162
    assert t.names == ADULT_COLUMNS
    assert "?" not in t.schema["workclass"].domain
    assert t.schema["salary"].domain == ("<=50K", ">50K")
    assert t.schema["age"].numeric and not t.schema["workclass"].numeric


def test_adult_union_and_test_split():
    assert load_adult(split="test").n_rows == 15060
    t = load_adult(split="all")
    assert t.n_rows == 45222
    # test labels lose their trailing dot
    assert t.schema["salary"].domain == ("<=50K", ">50K")


def test_adult_keep_missing_keeps_all_rows():
    t = load_adult(drop_missing=False)
    assert t.n_rows == 32561
    assert "?" in t.schema["occupation"].domain


def test_adult_bad_split():
    with pytest.raises(ParameterError, match="bogus"):
        load_adult(split="bogus")


def test_small_dataset_sizes_and_class_counts():
    nursery = load_nursery()
    assert nursery.n_rows == 12960
    counts = dict(zip(nursery.schema["class"].domain, np.bincount(nursery.column("class"))))
    assert counts == {
        "not_recom": 4320,
        "recommend": 2,
        "very_recom": 328,
        "priority": 4266,
        "spec_prior": 4044,
    }
    assert sum(a.size for a in nursery.schema.attributes[:-1]) == 27
    assert load_mushroom().n_rows == 8124
    assert load_mushroom(drop_missing=True).n_rows == 8124 - 2480
    assert load_breast_cancer().n_rows == 286
    assert load_breast_cancer(drop_missing=True).n_rows == 277
    lenses = load_lenses()
    assert lenses.n_rows == 24
    assert dict(zip(lenses.schema["class"].domain, np.bincount(lenses.column("class")))) == {
        "hard": 4,
        "soft": 5,
        "none": 15,
    }


def test_registry_row_counts_match_loaders():
    for name, info in DATASETS.items():
        assert load_dataset(name).n_rows == info.rows, name


def test_unknown_dataset():
    with pytest.raises(PrivlabError, match="nope"):
        load_dataset("nope")


def test_bundled_question_marks_are_missing_values_for_inputs():
    """By name (CLI INPUT), Mushroom's and Breast Cancer's '?' cells are missing values."""
    from privlab.data.datasets import load_input
    from privlab.errors import MissingValuesError

    with pytest.raises(MissingValuesError, match=r"'node-caps' \(8\), 'breast-quad' \(1\)"):
        load_input("breast-cancer")
    bc = load_input("breast-cancer", drop_missing=True, sensitive="class")
    assert bc.n_rows == 286 - 9
    assert "?" not in bc.schema["node-caps"].domain
    assert bc.schema["age"].domain == load_breast_cancer().schema["age"].domain  # order kept
    with pytest.raises(MissingValuesError, match=r"'stalk-root' \(2480\)"):
        load_input("mushroom")
    assert load_input("mushroom", drop_missing=True).n_rows == 8124 - 2480
    assert load_input("nursery").n_rows == 12960  # no '?' at all: unchanged
