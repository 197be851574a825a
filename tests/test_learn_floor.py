"""The learners' common floor (learn/_sklearn.py): one parameter error, scikit-learn's private
API in one module, ``random_state`` beside ``rng``, and one tabular input for the DP learners."""

from __future__ import annotations

import pickle
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils import get_tags

from privlab.errors import ParameterError, PrivacyWarning
from privlab.learn import _sklearn
from privlab.learn.dp_forest import DPRandomForestClassifier
from privlab.learn.dp_naive_bayes import DPNaiveBayes
from privlab.learn.dp_tree import DPDecisionTreeClassifier
from privlab.learn.pram_pocket import PramPocketClassifier

LEARN = Path(_sklearn.__file__).parent

RANDOM_LEARNERS = [
    DPNaiveBayes,
    DPDecisionTreeClassifier,
    DPRandomForestClassifier,
    PramPocketClassifier,
]


# -- step 1: one module for scikit-learn's plumbing ---------------------------------------------
def test_sklearn_private_api_is_imported_only_by_learn_sklearn():
    src = LEARN.parent
    users = sorted(
        str(p.relative_to(src))
        for p in src.rglob("*.py")
        if re.search(r"^\s*from sklearn\.utils\._param_validation", p.read_text(), re.M)
    )
    assert users == ["learn/_sklearn.py"]


def test_one_invalid_parameter_error():
    from privlab.learn import dp_naive_bayes, pram_pocket

    assert dp_naive_bayes._InvalidParameter is pram_pocket._InvalidParameter
    assert dp_naive_bayes._InvalidParameter is _sklearn.InvalidParameter
    assert issubclass(_sklearn.InvalidParameter, ParameterError)
    assert issubclass(_sklearn.InvalidParameter, _sklearn.InvalidParameterError)
    with pytest.raises(_sklearn.InvalidParameter, match="bins"):
        DPNaiveBayes(bins=0).fit(np.zeros((4, 1)), [0, 1, 0, 1])


# -- step 2: random_state --------------------------------------------------------------------------
def _data(n: int = 160, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(seed)
    X = g.integers(0, 4, size=(n, 3)).astype(float)
    y = (X[:, 0] + g.integers(0, 2, size=n) > 2).astype(int)
    return X, y


def _params(cls: type) -> dict:
    if cls is PramPocketClassifier:
        return {"n_iter": 500}
    return {"categories": [4, 4, 4]} if cls is not DPNaiveBayes else {}


def _fit(cls: type, **kw):
    X, y = _data()
    kw = {**_params(cls), **kw}
    if cls is not PramPocketClassifier and cls is not DPNaiveBayes:
        kw.update(categorical_features=[0, 1, 2], classes=[0, 1])
    if cls is DPNaiveBayes:
        kw.update(categories=[range(4)] * 3, classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return cls(**kw).fit(X, y)


@pytest.mark.parametrize("cls", RANDOM_LEARNERS)
def test_random_state_is_rng_byte_for_byte(cls):
    a, b = _fit(cls, rng=7), _fit(cls, random_state=7)
    X, _ = _data()
    assert np.array_equal(a.predict(X), b.predict(X))
    # the fitted models are identical, attribute by attribute (the parameters aside)
    da = {k: v for k, v in vars(a).items() if k.endswith("_")}
    db = {k: v for k, v in vars(b).items() if k.endswith("_")}
    assert pickle.dumps(sorted(da)) == pickle.dumps(sorted(db))
    for k in da:
        if k in ("accountant_", "seed_record_"):
            continue
        assert pickle.dumps(da[k]) == pickle.dumps(db[k]), k


@pytest.mark.parametrize("cls", RANDOM_LEARNERS)
def test_random_state_round_trips_and_tags(cls):
    est = cls(random_state=5)
    assert est.get_params()["random_state"] == 5 and est.get_params()["rng"] is None
    assert clone(est).get_params()["random_state"] == 5
    assert clone(cls(rng=5)).get_params()["rng"] == 5
    assert get_tags(cls()).non_deterministic  # no seed: fresh OS randomness, never a fixed seed
    assert not get_tags(cls(random_state=5)).non_deterministic
    assert not get_tags(cls(rng=5)).non_deterministic


@pytest.mark.parametrize("cls", RANDOM_LEARNERS)
def test_rng_and_random_state_together_is_refused(cls):
    with pytest.raises(ParameterError, match="rng is an alias of random_state"):
        _fit(cls, rng=1, random_state=2)
    _fit(cls, rng=3, random_state=3)  # the same seed twice is one seed


def test_unseeded_learners_differ_between_fits():
    """No seed means fresh OS randomness: two unseeded fits of the DP tree differ (at a small
    epsilon the noisy leaf distributions cannot all coincide)."""
    X, _ = _data()
    probs = [
        _fit(DPDecisionTreeClassifier, epsilon=0.5, max_depth=2).predict_proba(X) for _ in range(3)
    ]
    assert not all(np.array_equal(probs[0], p) for p in probs[1:])
