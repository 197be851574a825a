"""DP Naive Bayes: exact non-private limit (CategoricalNB oracle), batch path, bad input,
scikit-learn's estimator checks, unseen values, numeric features, noise laws, invariants."""

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold, cross_val_score
from sklearn.naive_bayes import CategoricalNB
from sklearn.preprocessing import KBinsDiscretizer
from sklearn.utils import get_tags
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import check_estimator

from privlab.data import load_adult, load_nursery
from privlab.dp import BudgetAccountant, get_estimator
from privlab.errors import (
    BudgetExceededError,
    MissingValuesError,
    ParameterError,
    PrivacyWarning,
    PrivlabError,
    SchemaError,
)
from privlab.experiments.dpnb import ADULT_FEATURES, CVData, fold_accuracies, run_cv
from privlab.learn.dp_naive_bayes import (
    MECHANISMS,
    DPNaiveBayes,
    batch_correct,
    bin_codes,
    compress,
    count_query,
    expected_failed_checks,
    log_parameters,
    nb_layout,
    predict_table,
    train_from_table,
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
    with pytest.raises(PrivlabError, match="not_for_publication=True"):
        m.save(path)  # seeded noise of the caller's: an experiment
    assert not path.exists()
    m.save(path, not_for_publication=True)
    assert "not for publication" in json.loads(path.read_text())["not_for_publication"]
    m2 = DPNaiveBayes.load(path)
    assert np.array_equal(m2.predict(df), m.predict(df))
    assert np.allclose(m2.predict_proba(df), m.predict_proba(df))
    with pytest.raises(Exception, match="exists"):
        m.save(path, not_for_publication=True)


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


# --- scikit-learn estimator checks -----------------------------------------------------------
@pytest.mark.parametrize(
    "params",
    [dict(random_state=0), dict(random_state=0, mechanism="laplace", estimator="ml", alpha=0.5)],
)
def test_check_estimator_passes_with_seeded_noise(params):
    est = DPNaiveBayes(**params)
    assert expected_failed_checks(est) == {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # the checks' data has no public domain
        results = check_estimator(est, on_fail=None)
    failed = {r["check_name"]: repr(r["exception"]) for r in results if r["status"] == "failed"}
    assert failed == {}
    assert sum(r["status"] == "passed" for r in results) >= 50


def test_check_estimator_with_fresh_noise_passes_every_check():
    """Unseeded (OS CSPRNG noise, a different model on every fit): the checks that compare
    two fits seed random_state themselves (set_random_state), so every check passes."""
    est = DPNaiveBayes()
    assert get_tags(est).non_deterministic
    assert not get_tags(DPNaiveBayes(rng=0)).non_deterministic
    assert not get_tags(DPNaiveBayes(random_state=0)).non_deterministic
    assert expected_failed_checks(est) == {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        results = check_estimator(est, on_fail=None)
    assert [r["check_name"] for r in results if r["status"] in ("failed", "xfail")] == []
    assert sum(r["status"] == "passed" for r in results) >= 50
    assert "check_classifiers_train" in expected_failed_checks(DPNaiveBayes(epsilon=0.1))


def test_predict_before_fit_raises_not_fitted():
    m = DPNaiveBayes()
    X = np.array([["a"], ["b"]], dtype=object)
    for method in (m.predict, m.predict_proba, m.predict_log_proba, m.predict_joint_log_proba):
        with pytest.raises(NotFittedError):
            method(X)
    with pytest.raises(NotFittedError):
        m.to_dict()


def test_invalid_parameters_are_privlab_and_sklearn_errors():
    X, y = np.array([["a"], ["b"]], dtype=object), np.array([0, 1])
    for bad in (dict(bins=0), dict(alpha=-1.0), dict(rng="seed"), dict(mechanism="gauss"),
                dict(bounds="nope"), dict(categories="none")):  # fmt: skip
        with pytest.raises(ParameterError) as err:
            DPNaiveBayes(**bad).fit(X, y)
        assert isinstance(err.value, InvalidParameterError)
        assert repr(next(iter(bad.values()))) in str(err.value)


def test_missing_values_are_refused_and_named():
    y = [0, 1, 0]
    for X, msg in [
        # pandas 3 stores the None of a string column as NaN: the message names what is there
        (pd.DataFrame({"f": ["a", None, "b"]}), r"feature 'f'.*(None|nan).*row 1"),
        (pd.DataFrame({"f": pd.array([1, 2, None], dtype="Int64")}), r"feature 'f'.*row 2"),
        (np.array([["a"], ["b"], [None]], dtype=object), r"feature 0.*None.*row 2"),
        (np.array([[1.0], [np.nan], [2.0]]), "NaN"),
    ]:
        with pytest.raises(MissingValuesError, match=msg):
            DPNaiveBayes(rng=0, classes=[0, 1]).fit(X, y)


# --- values unseen in training ---------------------------------------------------------------
def test_unseen_category_of_a_learned_domain_is_no_evidence():
    X = np.array([["a", "x"], ["b", "y"], ["a", "y"], ["b", "x"], ["a", "x"]], dtype=object)
    y = np.array([0, 1, 0, 1, 1])
    with pytest.warns(PrivacyWarning, match="feature 0, feature 1"):
        m = DPNaiveBayes(epsilon=1.0, rng=0, classes=[0, 1]).fit(X, y)
    test = np.array([["zzz", "y"], ["a", "new"], ["q", "r"]], dtype=object)
    jll = m.predict_joint_log_proba(test)
    lp, (w0, w1) = m.class_log_prior_, m.feature_log_prob_
    # the unseen factor is left out: exactly the posterior given the other features
    assert np.allclose(jll[0], lp + w1[:, 1])
    assert np.allclose(jll[1], lp + w0[:, 0])
    assert np.allclose(jll[2], lp)
    proba = m.predict_proba(test)
    assert np.all(np.isfinite(proba)) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.allclose(proba[2], np.exp(lp))


def test_unseen_value_of_a_declared_domain_is_named():
    pub = dict(categories={1: ["x", "y"]}, classes=[0, 1])
    X = np.array([["a", "x"], ["b", "y"]], dtype=object)
    with pytest.warns(PrivacyWarning, match="feature 0"):  # feature 0 is not declared
        # no noise: two records at a finite epsilon can clip a class away entirely, which
        # would make its log prior -inf whatever this test is about
        m = DPNaiveBayes(epsilon=np.inf, **pub).fit(X, [0, 1])
    assert m.is_declared_.tolist() == [False, True]
    with pytest.raises(SchemaError, match=r"'w'.*feature 1"):
        m.predict(np.array([["a", "w"]], dtype=object))
    assert np.isfinite(m.predict_log_proba(np.array([["c", "x"]], dtype=object))).all()


def _adult_cat():
    df = load_adult().to_pandas()
    return df[list(ADULT_FEATURES)], df["salary"]


def test_cross_validation_and_grid_search_on_adult_are_finite():
    X, y = _adult_cat()
    cv = KFold(5)  # its last fold holds 'Holand-Netherlands', which no other fold has
    unseen = [sorted(set(X.iloc[te][f]) - set(X.iloc[tr][f])) for tr, te in cv.split(X) for f in X]
    assert any(unseen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # learned domains (the case that failed)
        scores = cross_val_score(DPNaiveBayes(epsilon=0.1, rng=0), X, y, cv=cv)
        default_cv = cross_val_score(DPNaiveBayes(epsilon=1.0, rng=1), X, y, cv=5)
        grid = GridSearchCV(
            DPNaiveBayes(rng=2, classes=["<=50K", ">50K"]),
            {"epsilon": [0.1, 1.0], "estimator": ["ml", "eb"]},
            cv=cv,
        ).fit(X, y)
    for s in (scores, default_cv, grid.cv_results_["mean_test_score"]):
        assert np.all(np.isfinite(s)) and np.all((s > 0.7) & (s < 0.85)), s
    assert np.isfinite(grid.best_score_) and grid.best_params_["epsilon"] == 1.0
    # public (documented) domains: nothing is read from the data, nothing is unseen
    domains = {f: list(load_adult(split="all").schema[f].domain) for f in ADULT_FEATURES}
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        public = DPNaiveBayes(epsilon=0.1, rng=3, categories=domains, classes=["<=50K", ">50K"])
        s = cross_val_score(public, X, y, cv=cv, error_score="raise")
    assert np.all((s > 0.7) & (s < 0.85))


# --- numeric features ------------------------------------------------------------------------
def _mixed(n=400, seed=0):
    g = np.random.default_rng(seed)
    y = g.integers(0, 2, n)
    df = pd.DataFrame({
        "age": g.normal(40 + 8 * y, 10),
        "colour": g.choice(["red", "green", "blue"], n),
        "hours": g.uniform(0, 60, n) + 10 * y,
    })  # fmt: skip
    return df, np.where(y == 1, "yes", "no")


def test_numeric_without_bounds_equals_kbins_discretizer_and_categorical_nb():
    """Oracle: scikit-learn's uniform KBinsDiscretizer (fitted on the same data range) and
    CategoricalNB on the binned codes, without noise."""
    X, y = _mixed()
    num = X[["age", "hours"]].to_numpy()
    for bins in (3, 10):
        with pytest.warns(PrivacyWarning, match="'age', feature 'hours': numeric without"):
            m = DPNaiveBayes(epsilon=math.inf, bins=bins, categories={"colour": ["red", "green",
                             "blue"]}, classes=["no", "yes"]).fit(X, y)  # fmt: skip
        kb = KBinsDiscretizer(n_bins=bins, encode="ordinal", strategy="uniform").fit(num)
        codes = kb.transform(num).astype(int)
        colour = pd.Index(["red", "green", "blue"]).get_indexer(X["colour"])
        ref_X = np.column_stack([codes[:, 0], colour, codes[:, 1]])
        ref = CategoricalNB(alpha=1.0, min_categories=[bins, 3, bins]).fit(ref_X, y)
        assert m.is_numeric_.tolist() == [True, False, True]
        assert m.n_categories_.tolist() == [bins, 3, bins]
        assert np.allclose(m.bin_edges_[0], kb.bin_edges_[0])
        assert np.allclose(m.predict_log_proba(X), ref.predict_log_proba(ref_X), atol=1e-10)
        assert np.array_equal(m.predict(X), ref.predict(ref_X))


def test_numeric_with_public_bounds_bins_and_clips():
    X, y = _mixed()
    pub = dict(categories={"colour": ["red", "green", "blue"]}, classes=["no", "yes"],
               bounds={"age": (0, 100), "hours": (0, 80)}, bins=4)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)  # everything is declared
        m = DPNaiveBayes(epsilon=math.inf, **pub).fit(X, y)
    assert m.is_declared_.all() and m.sensitivity_ == 3
    assert m.bin_edges_[0].tolist() == [0, 25, 50, 75, 100]
    # exact counts: bin k of age holds the records with 25 k <= age < 25 (k + 1), clipped
    age_bin = np.clip(np.floor(X["age"].to_numpy() / 25), 0, 3).astype(int)
    exact = np.array([[np.sum((age_bin == k) & (y == c)) for k in range(4)] for c in ("no", "yes")])
    q = m.counts_.reshape(2, -1)
    assert np.array_equal(q[:, :4], exact) and np.array_equal(m.noisy_counts_, m.counts_)
    assert bin_codes(np.array([-5.0, 0.0, 24.99, 25.0, 100.0, 1e9]), m.bin_edges_[0]).tolist() \
        == [0, 0, 0, 1, 3, 3]  # fmt: skip
    # values outside the public bounds fall into the edge bins
    far = X.iloc[:2].assign(age=[-1e6, 1e6], hours=[500.0, -3.0])
    edge = X.iloc[:2].assign(age=[0.0, 100.0], hours=[80.0, 0.0])
    assert np.allclose(m.predict_joint_log_proba(far), m.predict_joint_log_proba(edge))
    # bad bounds are named
    for bounds, msg in [({"age": (5, 5)}, "'age'"), ({"age": (0, np.inf)}, "'age'"),
                        ({"nope": (0, 1)}, "'nope'")]:  # fmt: skip
        with pytest.raises(PrivlabError, match=msg):
            DPNaiveBayes(**{**pub, "bounds": bounds}).fit(X, y)
    with pytest.raises(ParameterError, match="both"):
        DPNaiveBayes(**{**pub, "categories": {"age": [1, 2]}}).fit(X, y)


def test_adult_numeric_columns_never_become_thousands_of_categories(tmp_path):
    df = load_adult().to_pandas()
    X, y = df[["fnlwgt", "education"]], df["salary"]
    edu = list(load_adult(split="all").schema["education"].domain)
    with pytest.warns(PrivacyWarning, match="'fnlwgt': numeric without public bounds"):
        m = DPNaiveBayes(
            epsilon=1.0, rng=0, categories={"education": edu}, classes=["<=50K", ">50K"]
        ).fit(X, y)
    assert m.n_categories_[0] == 10 and m.counts_.size == 2 * (10 + 16)
    assert m.predict(load_adult(split="test").to_pandas()[["fnlwgt", "education"]]).size == 15060
    # the CLI's path: public bounds for the numeric columns, declared domains for the others
    model = train_from_table(load_adult(), target="salary", epsilon=1.0, rng=0, bins=8,
                             bounds={"age": (17, 90), "fnlwgt": (0, 1.5e6), "education-num":
                                     (1, 16), "capital-gain": (0, 1e5), "capital-loss": (0, 5000),
                                     "hours-per-week": (1, 99)})  # fmt: skip
    assert model.is_declared_.all() and model.is_numeric_.sum() == 6
    assert model.n_categories_.max() == 41  # native-country; every numeric column has 8 bins
    model.save(tmp_path / "m.json")
    assert (tmp_path / "m.json").stat().st_size < 20_000
    test = load_adult(split="test")
    _, acc = predict_table(tmp_path / "m.json", test)
    assert 0.78 < acc < 0.86


def test_saved_model_with_numeric_features_round_trips(tmp_path):
    X, y = _mixed()
    with pytest.warns(PrivacyWarning):
        m = DPNaiveBayes(epsilon=2.0, rng=4, bounds={"age": (0, 100)}).fit(X, y)
    m.save(tmp_path / "m.json", not_for_publication=True)  # seeded: an experiment
    m2 = DPNaiveBayes.load(tmp_path / "m.json")
    assert m2.is_numeric_.tolist() == [True, False, True]
    assert m2.is_declared_.tolist() == [True, False, False]
    test = pd.concat([X, X.iloc[:1].assign(colour="unseen")])
    assert np.array_equal(m2.predict(test), m.predict(test))
    assert np.allclose(m2.predict_proba(test), m.predict_proba(test))
    # a model file written before numeric features (no bin edges) still loads
    small = DPNaiveBayes(rng=0, categories=[["a", "b"]], classes=[0, 1])
    new = small.fit(np.array([["a"], ["b"]], dtype=object), [0, 1]).to_dict()
    old = {k: v for k, v in new.items() if k not in ("bin_edges", "declared")}
    old_model = DPNaiveBayes.from_dict(old)
    with pytest.raises(SchemaError, match="'c'"):
        old_model.predict(np.array([["c"]], dtype=object))


# --- deterministic limits, statistics, invariants --------------------------------------------
def test_infinite_epsilon_releases_the_exact_counts():
    X, y = _mixed()
    pub = dict(categories={"colour": ["red", "green", "blue"]}, bounds={"age": (0, 100),
               "hours": (0, 80)}, classes=["no", "yes"])  # fmt: skip
    for mechanism in MECHANISMS:
        m = DPNaiveBayes(epsilon=math.inf, mechanism=mechanism, **pub).fit(X, y)
        codes = np.column_stack([
            bin_codes(X["age"], m.bin_edges_[0]),
            pd.Index(["red", "green", "blue"]).get_indexer(X["colour"]),
            bin_codes(X["hours"], m.bin_edges_[2]),
        ])  # fmt: skip
        exact = count_query(codes, (y == "yes").astype(int), m.n_categories_, 2)
        assert np.array_equal(m.noisy_counts_, exact) and np.array_equal(m.counts_, exact)
        assert m.noise_scale_ == 0.0
        assert np.allclose(m.class_count_, [np.sum(y == "no"), np.sum(y == "yes")])


def _noise_sample(mechanism, epsilon, fits=40):
    """Noise of ``fits`` seeded fits on a 2-feature table (50 and 40 categories, 2 classes):
    ``fits * 180`` values, and the model's Laplace-equivalent scale."""
    g = np.random.default_rng(11)
    X = np.column_stack([g.integers(0, 50, 300), g.integers(0, 40, 300)])
    y = g.integers(0, 2, 300)
    pub = dict(categories=[range(50), range(40)], classes=[0, 1], mechanism=mechanism)
    exact = DPNaiveBayes(epsilon=math.inf, **pub).fit(X, y).noisy_counts_
    noise, scale = [], None
    for seed in range(fits):
        m = DPNaiveBayes(epsilon=epsilon, rng=seed, estimator="ml", **pub).fit(X, y)
        noise.append(m.noisy_counts_ - exact)
        scale = m.noise_scale_
    assert m.sensitivity_ == 2
    return np.concatenate(noise), scale


def test_laplace_noise_has_scale_sensitivity_over_epsilon():
    noise, scale = _noise_sample("laplace", 0.5)
    assert scale == pytest.approx(2 / 0.5, rel=1e-5)  # L1 sensitivity = 2 features
    assert noise.size == 7200
    assert stats.kstest(noise, stats.laplace(scale=scale).cdf).pvalue > 0.01
    assert stats.kstest(noise, stats.laplace(scale=1.3 * scale).cdf).pvalue < 1e-4
    assert stats.kstest(noise, stats.laplace(scale=scale / 1.3).cdf).pvalue < 1e-4


def test_geometric_noise_has_the_two_sided_geometric_law():
    eps = 0.5
    noise, scale = _noise_sample("geometric", eps)
    assert np.array_equal(noise, np.rint(noise))

    def chi2_pvalue(a):
        # cells -k..k and the two tails beyond
        k = 8
        ks = np.arange(-k, k + 1)
        p = (1 - a) / (1 + a) * a ** np.abs(ks)
        tail = (1 - p.sum()) / 2
        obs = [np.sum(noise < -k)] + [np.sum(noise == v) for v in ks] + [np.sum(noise > k)]
        exp = noise.size * np.concatenate([[tail], p, [tail]])
        return stats.chisquare(obs, exp).pvalue

    a = math.exp(-eps / 2)
    assert scale == pytest.approx(math.sqrt(a) / (1 - a), rel=1e-5)
    assert chi2_pvalue(a) > 0.01
    assert chi2_pvalue(math.exp(-eps / 2 / 1.3)) < 1e-4  # a 30% larger scale is rejected
    assert chi2_pvalue(math.exp(-eps / 2 * 1.3)) < 1e-4


@settings(max_examples=30)
@given(
    n=st.integers(1, 40),
    eps=st.sampled_from([0.01, 0.3, 2.0, math.inf]),
    alpha=st.sampled_from([0.0, 0.5, 1.0]),
    seed=st.integers(0, 10**6),
)
def test_invariants(n, eps, alpha, seed):
    g = np.random.default_rng(seed)
    X = pd.DataFrame({
        "c": g.choice(["a", "b", "c"], n),
        "x": g.normal(0, 5, n),
        "z": g.exponential(3, n),
    })  # fmt: skip
    y = g.choice(["p", "q", "r"], n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        m = DPNaiveBayes(epsilon=eps, alpha=alpha, rng=seed, bounds={"z": (0, 10)},
                         classes=["p", "q", "r"]).fit(X, y)  # fmt: skip
    assert m.sensitivity_ == 3 and m.n_categories_.tolist()[1:] == [10, 10]
    assert np.all(m.counts_ >= 0)
    for lp in m.feature_log_prob_:
        assert np.allclose(np.exp(lp).sum(axis=1), 1.0)
    assert np.isclose(np.exp(m.class_log_prior_).sum(), 1.0)
    # any test record, unseen categories and far-out numbers included
    test = pd.DataFrame({
        "c": g.choice(["a", "b", "c", "never"], 25),
        "x": g.normal(0, 1e3, 25),
        "z": g.normal(5, 50, 25),
    })  # fmt: skip
    proba = m.predict_proba(test)
    assert np.all(np.isfinite(proba)) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(m.predict(test), m.classes_[np.argmax(proba, axis=1)])
    assert np.allclose(np.exp(m.predict_log_proba(test)), proba)
