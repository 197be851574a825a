"""The learners' common floor (learn/_sklearn.py): one parameter error, scikit-learn's private
API in one module, ``random_state`` beside ``rng``, and one tabular input for the DP learners."""

from __future__ import annotations

import hashlib
import pickle
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.utils import get_tags

from privlab.errors import ParameterError, PrivacyWarning, SchemaError
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


# -- step 3: one tabular input for naive Bayes, the DP tree and the forest -----------------------
DOMAINS = {
    "workclass": ["Private", "Self-emp", "Gov", "Never-worked"],
    "education": ["HS-grad", "Bachelors", "Masters", "Doctorate"],
    "sex": ["Female", "Male"],
}
BOUNDS = {"age": (17, 90), "hours": (1, 99)}
CLASSES = ["<=50K", ">50K"]


def _adult_like(n: int = 600, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    g = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "age": g.integers(17, 91, n),
            "workclass": g.choice(DOMAINS["workclass"][:3], n),
            "education": g.choice(DOMAINS["education"], n),
            "sex": g.choice(DOMAINS["sex"], n),
            "hours": g.integers(1, 100, n).astype(float),
        }
    )
    rich = (df["age"] > 40) & df["education"].isin(["Masters", "Doctorate"])
    return df, np.where(rich, ">50K", "<=50K")


TABLE_LEARNERS = [DPNaiveBayes, DPDecisionTreeClassifier, DPRandomForestClassifier]


@pytest.mark.parametrize("cls", TABLE_LEARNERS)
def test_one_string_dataframe_and_one_domain_dict_fit_every_dp_learner(cls):
    df, y = _adult_like()
    kw = {"n_estimators": 3} if cls is DPRandomForestClassifier else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)  # everything declared: no warning
        est = cls(epsilon=8.0, categories=DOMAINS, bounds=BOUNDS, classes=CLASSES,
                  random_state=0, **kw).fit(df, y)  # fmt: skip
        pred = est.predict(df)
        proba = est.predict_proba(df.head(5))
    assert set(pred) <= set(CLASSES) and proba.shape == (5, 2)
    assert list(est.feature_names_in_) == list(df.columns)
    assert (pred == y).mean() > 0.7  # epsilon = 8 on 600 records: the rule is learnt
    # the same seed, the same model: the table input is deterministic given the seed
    again = cls(epsilon=8.0, categories=DOMAINS, bounds=BOUNDS, classes=CLASSES,
                random_state=0, **kw).fit(df, y)  # fmt: skip
    assert np.array_equal(again.predict_proba(df), est.predict_proba(df))


def _randomized(df: pd.DataFrame, y: np.ndarray, p: float, seed: int = 1):
    """``df`` and ``y`` with workclass, education, sex and the class each randomized by
    M-category PRAM over its declared domain; the matrices by column name (and ``"y"``)."""
    from privlab.publish.randomization import m_category_matrix, randomize_codes

    g = np.random.default_rng(seed)
    out, mats = df.copy(), {}
    for c, dom in {**DOMAINS, "y": CLASSES}.items():
        mats[c] = m_category_matrix(len(dom), p)
        col = y if c == "y" else df[c].to_numpy()
        codes = pd.Index(dom).get_indexer(col)
        drawn = np.asarray(dom, dtype=object)[randomize_codes(codes, mats[c], g)]
        if c == "y":
            y = drawn.astype(str)
        else:
            out[c] = drawn.astype(str)
    return out, y, mats


def _codes_of(df: pd.DataFrame) -> np.ndarray:
    """The table as integer codes: a declared column's index in its domain, another's own
    value (so the array fit reads the same domain from it)."""
    return np.column_stack([
        pd.Index(DOMAINS[c]).get_indexer(df[c]) if c in DOMAINS else df[c].to_numpy()
        for c in df.columns
    ]).astype(float)  # fmt: skip


def test_the_pram_id3_fits_the_same_table_and_domains_as_its_array_form():
    """The tabular fit (string columns, the domain dict, matrices by column name, the class
    values in ``classes``) grows the tree the array fit grows on the codes."""
    from privlab.learn.pram_id3 import PramID3Classifier

    df, y = _adult_like(900, seed=3)
    df = df.assign(age=df["age"] // 10)  # ID3 is nominal: age in decades
    rdf, ry, mats = _randomized(df, y, p=0.2)
    table = PramID3Classifier(categories=DOMAINS, classes=CLASSES).fit(
        rdf, ry, matrices={c: mats[c] for c in DOMAINS}, class_matrix=mats["y"]
    )
    ycodes = pd.Index(CLASSES).get_indexer(ry)
    order = [mats.get(c) for c in df.columns]
    array = PramID3Classifier().fit(_codes_of(rdf), ycodes, matrices=order,
                                    class_matrix=mats["y"])  # fmt: skip
    assert table.to_dict() == array.to_dict() and table.n_nodes_ > 1
    assert list(table.classes_) == CLASSES and list(table.feature_names_in_) == list(df.columns)
    pred = table.predict(df)
    assert np.array_equal(pred, np.asarray(CLASSES)[array.predict(_codes_of(df))])
    # the rule (age over 40 with a Masters or a Doctorate) is learnt through the noise
    assert (pred == y).mean() > 0.9
    assert "split on education" in table.export_text()
    # a declared value the randomized data never hold is still a branch of its split;
    # a value outside the domain stops at the node that splits on it
    unseen = table.predict(df.assign(workclass="Astronaut"))
    assert unseen.shape == (900,) and set(unseen) <= set(CLASSES)


def test_the_pram_pocket_fits_the_same_table_and_domains_as_its_array_form():
    df, y = _adult_like(400, seed=4)
    rdf, ry, mats = _randomized(df, y, p=0.2)
    by_name = {"workclass": mats["workclass"], ("education", "sex"): np.kron(
        mats["education"], mats["sex"]), "y": mats["y"]}  # fmt: skip
    table = PramPocketClassifier(categories=DOMAINS, n_iter=500, random_state=5).fit(
        rdf, ry, matrices=by_name
    )
    cols = list(df.columns)
    by_index = {cols.index("workclass"): mats["workclass"],
                (cols.index("education"), cols.index("sex")): by_name[("education", "sex")],
                "y": mats["y"]}  # fmt: skip
    cats = [np.arange(len(DOMAINS[c])) if c in DOMAINS else np.unique(rdf[c]) for c in cols]
    array = PramPocketClassifier(categories=cats, n_iter=500, random_state=5).fit(
        _codes_of(rdf), ry, matrices=by_index
    )
    assert np.array_equal(table.coef_, array.coef_) and table.intercept_ == array.intercept_
    assert np.array_equal(table.predict(df), array.predict(_codes_of(df)))
    assert table.domains_[cols.index("workclass")] == tuple(DOMAINS["workclass"])
    # the hyperplane sees the codes of the strings and the numbers of the numeric columns
    assert np.array_equal(table.values_[cols.index("sex")], [0.0, 1.0])
    assert np.array_equal(table.values_[cols.index("age")], np.unique(rdf["age"]))
    # values= gives the strings' numbers (a value per domain entry)
    edu = [9.0, 13.0, 14.0, 16.0]
    v = PramPocketClassifier(categories=DOMAINS, values={"education": edu}, n_iter=50,
                             random_state=5).fit(rdf, ry, matrices=by_name)  # fmt: skip
    assert np.array_equal(v.values_[cols.index("education")], edu)
    with pytest.raises(SchemaError, match="'Astronaut' of feature 'workclass'"):
        table.predict(df.assign(workclass="Astronaut"))


def test_every_learner_fits_one_string_dataframe_with_one_domain_dict():
    """Issue 32's check: the three DP learners and the two PRAM classifiers take the same
    DataFrame of strings and numbers and the same ``{column: values}`` dict."""
    from privlab.learn.pram_id3 import PramID3Classifier

    df, y = _adult_like(300, seed=6)
    kw = {"categories": DOMAINS, "bounds": BOUNDS, "classes": CLASSES, "random_state": 0}
    learners = [
        DPNaiveBayes(epsilon=8.0, **kw),
        DPDecisionTreeClassifier(epsilon=8.0, **kw),
        DPRandomForestClassifier(epsilon=8.0, n_estimators=3, **kw),
        PramID3Classifier(categories=DOMAINS, classes=CLASSES, max_depth=2),
        PramPocketClassifier(categories=DOMAINS, n_iter=200, random_state=0),
    ]
    for est in learners:
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyWarning)
            pred = est.fit(df, y).predict(df.assign(workclass="Never-worked"))
        assert list(est.feature_names_in_) == list(df.columns), type(est).__name__
        assert pred.shape == (300,) and set(pred) <= set(CLASSES), type(est).__name__


def test_the_pram_learners_name_the_column_of_a_wrong_matrix_or_domain():
    from privlab.errors import MatrixError
    from privlab.learn.pram_id3 import PramID3Classifier

    df, y = _adult_like(60)
    with pytest.raises(ParameterError, match=r"feature 'workclass' has 3 rows but its domain 4"):
        PramID3Classifier(categories=DOMAINS).fit(df, y, matrices={"workclass": np.eye(3)})
    with pytest.raises(MatrixError, match=r"the matrix of workclass is \(3, 3\)"):
        PramPocketClassifier(categories=DOMAINS).fit(df, y, matrices={"workclass": np.eye(3)})
    for est in (PramID3Classifier, PramPocketClassifier):
        with pytest.raises(ParameterError, match=r"names a feature 'race' that X does not"):
            est(categories={"race": ["x"]}).fit(df, y)
    with pytest.raises(ParameterError, match="matrix key 'race' is neither a column of X"):
        PramPocketClassifier().fit(df, y, matrices={"race": np.eye(2)})
    with pytest.raises(SchemaError, match="'Astronaut' of the class is not among"):
        PramID3Classifier(classes=CLASSES).fit(df, np.where(y == ">50K", "Astronaut", y))


@pytest.mark.parametrize("cls", TABLE_LEARNERS)
def test_an_unknown_column_in_the_domain_dict_is_a_parameter_error(cls):
    df, y = _adult_like(50)
    for kw in ({"categories": {**DOMAINS, "race": ["x"]}}, {"bounds": {"agee": (17, 90)}}):
        with pytest.raises(ParameterError, match=r"names a feature .* that X does not have"):
            cls(classes=CLASSES, **kw).fit(df, y)


@pytest.mark.parametrize("cls", [DPDecisionTreeClassifier, DPRandomForestClassifier])
def test_the_tree_reads_undeclared_domains_with_a_privacy_warning(cls):
    df, y = _adult_like(200)
    with pytest.warns(PrivacyWarning) as rec:
        est = cls(classes=CLASSES, random_state=1).fit(df, y)
    text = " ".join(str(w.message) for w in rec)
    assert "'workclass'" in text and "'age'" in text  # domains and ranges read from the data
    assert est.predict(df).shape == (200,)
    with pytest.raises(SchemaError, match="'Never-worked' of feature 'workclass'"):
        est.predict(df.assign(workclass="Never-worked"))  # not in the domain read from data
    # a declared domain takes a value the training data lacks
    est = cls(categories=DOMAINS, bounds=BOUNDS, classes=CLASSES, random_state=1).fit(df, y)
    assert est.predict(df.assign(workclass="Never-worked")).shape == (200,)


def test_the_bug_report_table_fits_the_tree():
    """The issue's failures: 'could not convert string to float' and KeyError: 0 with
    bounds={"age": (17, 90)}."""
    df, y = _adult_like(100)
    est = DPDecisionTreeClassifier(bounds={"age": (17, 90)}, categories=DOMAINS,
                                   classes=CLASSES, random_state=0)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # hours: range from the data
        est.fit(df, y)
    assert est.columns_.nominal == [1, 2, 3]
    # export_text names the domains' values, not their codes
    values = {v for d in DOMAINS.values() for v in d}
    for line in est.export_text().splitlines():
        if " = " in line:
            assert line.split(" = ")[1].rstrip(":").split("  ")[0] in values, line


def test_array_inputs_are_unchanged_byte_for_byte():
    """Arrays of codes with sizes and (lo, hi) arrays keep the array path (no columns_), and
    a seeded fit gives the very probabilities it gave before the tabular input existed
    (digests taken at commit 4360a92; Naive Bayes' to 9 decimals, see below)."""
    g = np.random.default_rng(3)
    n = 160
    X = g.integers(0, 4, size=(n, 3)).astype(float)
    X[:, 2] += g.normal(size=n)
    y = (X[:, 0] + g.integers(0, 2, size=n) > 2).astype(int)
    arrays = dict(categorical_features=[0, 1], categories=[4, 4], bounds=([0, 0, -3], [3, 3, 6]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        t = DPDecisionTreeClassifier(epsilon=2, classes=[0, 1], rng=4, **arrays).fit(X, y)
        f = DPRandomForestClassifier(
            epsilon=2, n_estimators=4, classes=[0, 1], rng=4, **arrays
        ).fit(X, y)
        nb = DPNaiveBayes(
            epsilon=2, categories=[range(4), range(4), None], bounds=[None, None, (-3, 6)],
            classes=[0, 1], rng=4,
        ).fit(X, y)  # fmt: skip

    def digest(a: np.ndarray) -> str:
        return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]

    assert not hasattr(t, "columns_") and not hasattr(f, "columns_")
    assert digest(t.predict_proba(X)) == "aa7ee8a1c749a703"
    assert digest(f.predict_proba(X)) == "854279d85e956e35"
    # Naive Bayes' Gaussian likelihoods go through exp and log, whose last bits may differ
    # between machines (numpy picks a SIMD path by CPU): the raw digest dda702f480bec6af
    # taken at 4360a92 is 7f299821df5a38cb on an AVX2 machine without AVX-512, so its
    # probabilities are compared to 9 decimals
    assert digest(np.round(nb.predict_proba(X), 9)) == "8b78fc11dc6725a6"


def test_a_table_refuses_the_array_parameters():
    df, y = _adult_like(20)
    with pytest.raises(ParameterError, match="categorical_features"):
        DPDecisionTreeClassifier(categorical_features=[1]).fit(df, y)
    with pytest.raises(ParameterError, match="give categories as"):
        DPDecisionTreeClassifier(categories=[3, 4, 2]).fit(df, y)


# -- step 4: check_estimator passes unseeded on every scikit-learn learner ------------------------
def _unseeded_learners() -> list:
    from privlab.learn.pram_id3 import PramID3Classifier

    return [
        DPNaiveBayes(),
        DPDecisionTreeClassifier(),
        DPRandomForestClassifier(),
        PramPocketClassifier(n_iter=3000),
        PramID3Classifier(),
    ]


@pytest.mark.parametrize("est", _unseeded_learners(), ids=lambda e: type(e).__name__)
def test_check_estimator_passes_unseeded(est):
    """No rng, no random_state (fresh OS randomness on every fit): no check fails and none is
    declared as expected to fail; the checks that compare two fits seed random_state."""
    from sklearn.utils.estimator_checks import check_estimator

    assert est.get_params().get("rng") is None and est.get_params().get("random_state") is None
    module = __import__(type(est).__module__, fromlist=["_"])
    if hasattr(module, "expected_failed_checks"):
        assert module.expected_failed_checks(est) == {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # the checks' data have no public domain
        results = check_estimator(est, on_fail=None)
    bad = {r["check_name"]: repr(r["exception"]) for r in results if r["status"] != "passed"}
    bad = {k: v for k, v in bad.items() if k != "check_array_api_input"}  # needs SCIPY_ARRAY_API
    assert {k: v for k, v in bad.items() if "non deterministic" not in v} == {}
    assert sum(r["status"] == "passed" for r in results) >= 40


def test_a_table_fitted_tree_round_trips_through_its_json_model():
    import json

    df, y = _adult_like(300)
    est = DPDecisionTreeClassifier(epsilon=4.0, categories=DOMAINS, bounds=BOUNDS,
                                   classes=CLASSES, random_state=2).fit(df, y)  # fmt: skip
    d = json.loads(json.dumps(est.to_dict()))
    assert d["columns"]["names"] == list(df.columns)
    assert d["columns"]["features"][1] == {"domain": DOMAINS["workclass"], "declared": True}
    back = DPDecisionTreeClassifier.from_dict(d)
    assert np.array_equal(back.predict_proba(df), est.predict_proba(df))
    assert back.export_text() == est.export_text()
    d["columns"]["features"][1]["domain"] = ["Private"]  # a domain of the wrong size
    with pytest.raises(Exception, match="columns"):
        DPDecisionTreeClassifier.from_dict(d)
    X, yy = _data()
    arr = DPDecisionTreeClassifier(
        categorical_features=[0], categories=[4], bounds=([0] * 3, [3] * 3), classes=[0, 1], rng=1
    ).fit(X, yy)
    assert "columns" not in arr.to_dict()
