"""DP Naive Bayes: exact non-private limit (CategoricalNB oracle), batch path, bad input."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score
from sklearn.naive_bayes import CategoricalNB

from privlab.data import load_adult, load_nursery
from privlab.dp import BudgetAccountant, get_estimator
from privlab.errors import BudgetExceededError, ParameterError, PrivacyWarning, SchemaError
from privlab.experiments.dpnb import ADULT_FEATURES, CVData, fold_accuracies, run_cv
from privlab.learn.dp_naive_bayes import (
    DPNaiveBayes,
    batch_correct,
    compress,
    log_parameters,
    nb_layout,
)


@pytest.fixture(scope="module")
def nursery():
    t = load_nursery()
    feats = [n for n in t.names if n != "class"]
    return t.columns(feats).astype(np.int64), t.column("class").astype(np.int64), t


@pytest.fixture(scope="module")
def adult():
    t = load_adult()
    return t.columns(ADULT_FEATURES).astype(np.int64), t.column("salary").astype(np.int64), t


def _public(t, feats, target):
    return dict(
        categories=[list(range(t.schema[f].size)) for f in feats],
        classes=list(range(t.schema[target].size)),
    )


@pytest.mark.parametrize("alpha", [1.0, 0.5])
@pytest.mark.parametrize("data", ["adult", "nursery"])
def test_infinite_epsilon_equals_categorical_nb(data, alpha, adult, nursery, request):
    X, y, t = adult if data == "adult" else nursery
    feats = ADULT_FEATURES if data == "adult" else [n for n in t.names if n != "class"]
    target = "salary" if data == "adult" else "class"
    tr, te = next(StratifiedKFold(2, shuffle=True, random_state=0).split(X, y))
    sizes = [t.schema[f].size for f in feats]
    for estimator in ("eb", "posterior", "consistent"):
        m = DPNaiveBayes(
            epsilon=math.inf, estimator=estimator, alpha=alpha, **_public(t, feats, target)
        ).fit(X[tr], y[tr])
        ref = CategoricalNB(alpha=alpha, min_categories=sizes).fit(X[tr], y[tr])
        assert np.array_equal(m.predict(X[te]), ref.predict(X[te]))
        assert np.allclose(m.predict_log_proba(X[te]), ref.predict_log_proba(X[te]), atol=1e-10)
        assert np.allclose(m.class_log_prior_, ref.class_log_prior_)
        # the prior choice: without noise it is the empirical n_c / N
        assert np.allclose(m.class_count_, np.bincount(y[tr], minlength=len(m.classes_)))


def test_class_prior_is_mean_of_per_feature_totals(nursery):
    X, y, t = nursery
    feats = [n for n in t.names if n != "class"]
    m = DPNaiveBayes(epsilon=0.5, rng=3, **_public(t, feats, "class")).fit(X, y)
    q = m.counts_.reshape(len(m.classes_), -1)
    totals = np.stack([q[:, o : o + k].sum(axis=1) for o, k in
                       zip(m.layout_.offsets, m.layout_.hist_sizes)], axis=1)  # fmt: skip
    n_c = totals.mean(axis=1)
    assert np.allclose(m.class_count_, n_c)
    assert np.allclose(np.exp(m.class_log_prior_), n_c / n_c.sum())
    # a noisy model still has proper per-feature distributions
    for lp in m.feature_log_prob_:
        assert np.allclose(np.exp(lp).sum(axis=1), 1.0)
    assert m.sensitivity_ == 8 and np.all(m.counts_ >= 0)


@pytest.mark.parametrize("alpha", [1.0, 0.0])
@pytest.mark.parametrize("data", ["adult", "nursery"])
def test_batch_scoring_equals_the_classifier(data, alpha, adult, nursery):
    X, y, t = adult if data == "adult" else nursery
    feats = ADULT_FEATURES if data == "adult" else [n for n in t.names if n != "class"]
    target = "salary" if data == "adult" else "class"
    tr, te = np.arange(0, len(y), 2), np.arange(1, len(y), 2)
    sizes = [t.schema[f].size for f in feats]
    lay = nb_layout(sizes, t.schema[target].size)
    pats, pc = compress(X[te], y[te], lay.n_blocks)
    noisy, correct_single = [], []
    for seed in range(4):
        m = DPNaiveBayes(
            epsilon=0.05, estimator="eb", mechanism="laplace", alpha=alpha, rng=seed,
            **_public(t, feats, target),
        ).fit(X[tr], y[tr])  # fmt: skip
        noisy.append(m.noisy_counts_)
        correct_single.append(int(np.sum(m.predict(X[te]) == y[te])))
    est = get_estimator("eb")(np.array(noisy), m.noise_scale_, clip=True, layout=lay)
    lp, lw = log_parameters(est, lay, alpha)
    if alpha == 0.0:
        assert np.isneginf(lw).any()  # the -inf path is exercised
    got = batch_correct(lp, lw, pats, pc, lay.offsets)
    assert got.tolist() == correct_single


def test_fold_accuracies_without_noise_equal_categorical_nb(nursery):
    X, y, t = nursery
    sizes = tuple(t.schema[n].size for n in t.names if n != "class")
    data = CVData(X, y, sizes, 5)
    tr, te = next(KFold(5, shuffle=True, random_state=1).split(X))
    acc = fold_accuracies(data, tr, te, [math.inf, 1.0], 3, ["ml", "eb"], np.random.default_rng(0))
    ref = CategoricalNB(alpha=1.0, min_categories=list(sizes)).fit(X[tr], y[tr]).score(X[te], y[te])
    assert np.all(acc[math.inf]["ml"] == ref) and np.all(acc[math.inf]["eb"] == ref)
    assert acc[1.0]["ml"].shape == (3,)


def test_run_cv_rows(nursery):
    X, y, t = nursery
    sizes = tuple(t.schema[n].size for n in t.names if n != "class")
    rows = run_cv(
        CVData(X, y, sizes, 5), folds=5, epsilons=[0.1, 1.0], repetitions=1, draws=40,
        estimators=["ml", "eb", "js"], rng=np.random.default_rng(0),
    )  # fmt: skip
    assert [r["epsilon"] for r in rows] == [0.1, 1.0]
    for r in rows:
        assert r["eb_gt_ml"] + r["eb_eq_ml"] + r["eb_lt_ml"] == pytest.approx(100.0)
        assert 80 < r["acc_ml"] < 92  # Table 8.6: 87.8 - 90.2
    assert rows[1]["acc_ml"] > rows[0]["acc_ml"]


def test_budget_is_charged_and_overspend_refused(nursery):
    X, y, t = nursery
    feats = [n for n in t.names if n != "class"]
    acc = BudgetAccountant(1.0)
    DPNaiveBayes(epsilon=0.7, accountant=acc, rng=0, **_public(t, feats, "class")).fit(X, y)
    assert acc.spent == pytest.approx(0.7)
    with pytest.raises(BudgetExceededError):
        DPNaiveBayes(epsilon=0.7, accountant=acc, rng=0, **_public(t, feats, "class")).fit(X, y)


def test_bad_input_errors():
    X = np.array([["a", "x"], ["b", "y"], ["a", "y"]], dtype=object)
    y = np.array([0, 1, 0])
    pub = dict(categories=[["a", "b"], ["x", "y"]], classes=[0, 1])
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ParameterError, match="epsilon"):
            DPNaiveBayes(epsilon=bad, **pub).fit(X, y)
    with pytest.raises(ParameterError, match="'nope'"):
        DPNaiveBayes(estimator="nope", **pub).fit(X, y)
    with pytest.raises(ParameterError, match="mechanism"):
        DPNaiveBayes(mechanism="gauss", **pub).fit(X, y)
    m = DPNaiveBayes(epsilon=1.0, rng=0, **pub).fit(X, y)
    with pytest.raises(SchemaError, match=r"'z'.*feature 1"):
        m.predict(np.array([["a", "z"]], dtype=object))
    with pytest.raises(SchemaError, match="'c'"):
        DPNaiveBayes(**pub).fit(np.array([["c", "x"]], dtype=object), [0])
    with pytest.raises(ParameterError, match="features"):
        m.predict(np.array([["a"]], dtype=object))


def test_auto_domains_warn_and_dataframes_keep_names(tmp_path):
    df = pd.DataFrame({"f": ["a", "b", "a", "b"] * 5, "g": ["x", "x", "y", "y"] * 5})
    y = np.array(["p", "q", "p", "q"] * 5)
    with pytest.warns(PrivacyWarning):
        m = DPNaiveBayes(epsilon=2.0, rng=1).fit(df, y)
    assert list(m.feature_names_in_) == ["f", "g"]
    path = tmp_path / "m.json"
    m.save(path)
    m2 = DPNaiveBayes.load(path)
    assert np.array_equal(m2.predict(df), m.predict(df))
    assert np.allclose(m2.predict_proba(df), m.predict_proba(df))
    with pytest.raises(Exception, match="exists"):
        m.save(path)


def test_sklearn_compatibility(nursery):
    X, y, t = nursery
    feats = [n for n in t.names if n != "class"]
    m = DPNaiveBayes(epsilon=1.0, rng=0, **_public(t, feats, "class"))
    assert clone(m).get_params()["epsilon"] == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        scores = cross_val_score(m, X, y, cv=KFold(3, shuffle=True, random_state=0))
    assert np.all(scores > 0.8)
    proba = m.fit(X, y).predict_proba(X[:50])
    assert np.allclose(proba.sum(axis=1), 1.0)
    # clones (cross-validation) share the accountant, so every fit is charged
    acc = BudgetAccountant(2.0)
    m = DPNaiveBayes(epsilon=0.5, rng=0, accountant=acc, **_public(t, feats, "class"))
    cross_val_score(m, X, y, cv=KFold(3, shuffle=True, random_state=0))
    assert acc.spent == pytest.approx(1.5)
    with pytest.raises(BudgetExceededError):
        cross_val_score(m, X, y, cv=KFold(3, shuffle=True, random_state=0), error_score="raise")
