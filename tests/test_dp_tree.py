"""DP decision trees (Friedman & Schuster 2010, seed 004): exact limits, statistics, budget."""

from __future__ import annotations

import json
import math
import warnings
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from privlab.dp.accountant import BudgetAccountant
from privlab.dp.mechanisms import Exponential
from privlab.errors import BudgetExceededError, ParameterError, PrivacyWarning, PrivlabError
from privlab.learn.dp_tree import (
    FRESH_NOISE_CHECKS,
    DPDecisionTreeClassifier,
    DPTreeModel,
    continuous_ranges,
    expected_failed_checks,
    fit_table,
    quality,
    sensitivity,
)

INF = math.inf

# Most tests fit on synthetic data whose labels are not secret; the warning for labels read
# from the data is checked in test_classes_public_or_warned.
pytestmark = [
    pytest.mark.filterwarnings("ignore:the class labels are taken:privlab.errors.PrivacyWarning"),
]


# -- an independent, loop-based oracle for the quality functions --------------------------
def oracle_quality(groups: list[list[int]], criterion: str) -> float:
    """q(T, A) from the slide's table, for the class labels of each child ``groups[j]``."""
    total = 0.0
    for g in groups:
        cnt = Counter(g)
        n_j = len(g)
        if criterion in ("info_gain", "noisy_counts"):
            total += sum(c * math.log2(c / n_j) for c in cnt.values())
        elif criterion == "gini":
            if n_j:
                total -= n_j * (1 - sum((c / n_j) ** 2 for c in cnt.values()))
        elif criterion == "max":
            total += max(cnt.values(), default=0)
    return total


# The slides' "Decision Trees" example (14 patients).
BP = "L L N H H H N L L H L N N H".split()
WEIGHT = "O O O N U U U N U N N N O N".split()
SICK = [1, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1]


@pytest.mark.parametrize("criterion", ["info_gain", "gini", "max"])
def test_quality_matches_loop_oracle_on_slide_example(criterion):
    for attr in (BP, WEIGHT):
        values = sorted(set(attr))
        groups = [[c for a, c in zip(attr, SICK) if a == v] for v in values]
        tab = np.array([[g.count(0), g.count(1)] for g in groups])
        assert quality(tab, criterion) == pytest.approx(oracle_quality(groups, criterion))
    # blood pressure: L -> 4 sick of 5, N -> 0 of 4, H -> 2 of 5
    tab = np.array([[1, 4], [4, 0], [3, 2]])
    assert quality(tab, "max") == 4 + 4 + 3
    assert quality(tab, "gini") == pytest.approx(-(5 * 0.32 + 0 + 5 * 0.48))


def test_sensitivities_are_the_slides():
    assert sensitivity("max", 10) == 1.0
    assert sensitivity("gini", 10) == 2.0
    assert sensitivity("info_gain", 1023) == pytest.approx(10 + 1 / math.log(2))


# -- the slide's two-phase continuous example ------------------------------------------------
SLIDE_X = np.array([2, 3, 5, 7, 10, 11], dtype=float)
SLIDE_Y = np.array([0, 0, 1, 1, 0, 1])
SLIDE_EDGES = [0, 2, 3, 5, 7, 10, 11, 12]
SLIDE_SCORES = [3, 4, 5, 4, 3, 4, 3]
SLIDE_WEIGHTS = [40.2, 54.6, 296.8, 109.2, 60.3, 54.6, 20.1]
SLIDE_PROBS = [0.063, 0.085, 0.467, 0.172, 0.095, 0.086, 0.032]


def test_two_phase_split_reproduces_the_slide_table():
    """att in [0, 12], Max criterion: ranges, scores, exp(q)|R| and probabilities of the slide.

    The slide prints weights exp(q_i)|R_i| for "ε = 1.0", i.e. ε/(2Δ) = 1: with Δ = 1 the
    mechanism's ε is 2 (the slide omits the 1/2 of the exponential mechanism).  Its 0.085 for
    [2, 3) is a rounding slip (54.6/635.8 = 0.0859; the identical range [10, 11) is printed
    0.086), hence the 0.001 tolerance.
    """
    edges, scores = continuous_ranges(SLIDE_X, SLIDE_Y, 2, 0.0, 12.0, "max")
    assert edges.tolist() == SLIDE_EDGES
    assert scores.tolist() == SLIDE_SCORES
    weights = np.exp(scores) * np.diff(edges)
    np.testing.assert_allclose(weights, SLIDE_WEIGHTS, atol=0.05)
    p = Exponential(2.0, sensitivity("max", 6)).range_probabilities(edges, scores)
    np.testing.assert_allclose(p, SLIDE_PROBS, atol=0.001)
    assert int(np.argmax(p)) == 2


def _root_range(tree: DPDecisionTreeClassifier, edges) -> int:
    """Index of the slide range holding the root's split point (-1: the root is a leaf)."""
    if tree.tree_.feature < 0:
        return -1
    s = tree.tree_.threshold
    return min(int(np.searchsorted(edges, s, side="right")) - 1, len(edges) - 2)


def test_tree_samples_split_points_with_the_slide_probabilities():
    """The fitted tree's root split point falls in each range with the slide's probability.

    max_depth = 1 gives ε' = ε/4; ε = 8 makes ε'/(2Δ) = 1 as on the slide.  Chi-square over
    the 7 ranges accepts the slide's table and rejects a 30% larger ε.
    """
    rng = np.random.default_rng(7)
    X = SLIDE_X.reshape(-1, 1)
    hits = []
    for _ in range(3000):
        t = DPDecisionTreeClassifier(epsilon=8.0, max_depth=1, bounds=([0], [12]), rng=rng)
        hits.append(_root_range(t.fit(X, SLIDE_Y), SLIDE_EDGES))
    hits = np.array(hits)
    split = hits[hits >= 0]
    assert split.size > 2000  # N_T = 6 + noise passes θ = 2.83 most of the time
    obs = np.bincount(split, minlength=7)
    edges, scores = np.array(SLIDE_EDGES, float), np.array(SLIDE_SCORES, float)
    p_true = Exponential(2.0, 1.0).range_probabilities(edges, scores)
    p_wrong = Exponential(2.6, 1.0).range_probabilities(edges, scores)
    assert stats.chisquare(obs, p_true * obs.sum()).pvalue > 1e-3
    assert stats.chisquare(obs, p_wrong * obs.sum()).pvalue < 1e-3


def test_split_points_lie_on_a_public_grid_for_neighbouring_data():
    """Mironov (2012) for thresholds: a point drawn as ``a + u (b - a)`` between two data
    values takes a set of doubles that depends on the data.  privlab's root thresholds are
    grid points ``lo + (hi - lo) k / 2^20`` of the public bounds, for every data set: the
    outputs of two neighbouring data sets share one support."""
    from privlab.learn.dp_tree import THRESHOLD_GRID, _grid_point

    X = SLIDE_X.reshape(-1, 1).astype(float)
    X2 = X.copy()
    X2[0, 0] = 7.3  # a neighbour: one record moved to a non-grid value
    for data in (X, X2):
        for seed in range(300):
            t = DPDecisionTreeClassifier(epsilon=8.0, max_depth=1, bounds=([0], [12]), rng=seed)
            thr = t.fit(data, SLIDE_Y).tree_.threshold
            if np.isnan(thr):
                continue
            k = round(thr / 12.0 * THRESHOLD_GRID)
            assert 0 <= k <= THRESHOLD_GRID and _grid_point(k, 0.0, 12.0) == thr


# -- exponential-mechanism attribute selection vs theory -----------------------------------
def _selection_data(rng):
    """200 records: binary attributes with Max scores 104, 102, 100; a continuous one (104)."""
    n = 200
    y = np.repeat([0, 1], n // 2)
    cols = []
    for k in (96, 98, 100):  # flipping k of y gives Max score 200 - k (k < 100) or 100
        a = y.copy()
        idx = rng.choice(n, size=k, replace=False)
        a[idx] = 1 - a[idx]
        if k == 100:
            a = np.tile([0, 1], n // 2)
        cols.append(a)
    # continuous: 52 of class 0 and 48 of class 1 at 0.2, the rest at 0.8 -> a split inside
    # [0.2, 0.8) scores 104, the two one-sided ranges 100
    x = np.where(np.arange(n) % 100 < 52, 0.2, 0.8)
    x[y == 1] = np.where(np.arange(n // 2) < 48, 0.2, 0.8)
    cols.append(rng.permutation(x[: n // 2]).tolist() + rng.permutation(x[n // 2 :]).tolist())
    return np.column_stack(cols).astype(float), y


def _theory(X, y, eps_prime, criterion):
    """P(root splits on attribute j): nominal outcomes weigh exp(ε'q/2Δ), continuous ranges
    (|R|/W) exp(ε'q/2Δ) (the joint two-phase mechanism), all computed with loops."""
    delta = sensitivity(criterion, len(y))
    logw = []
    for j in range(3):
        groups = [[int(c) for a, c in zip(X[:, j], y) if a == v] for v in (0, 1)]
        logw.append([eps_prime * oracle_quality(groups, criterion) / (2 * delta)])
    vals = np.sort(np.unique(X[:, 3]))
    edges = [0.0, *vals, 1.0]
    cont = []
    for i in range(len(edges) - 1):
        w = edges[i + 1] - edges[i]
        if w <= 0:
            continue
        left = [int(c) for a, c in zip(X[:, 3], y) if a <= edges[i] and i > 0]
        right = [int(c) for a, c in zip(X[:, 3], y) if not (a <= edges[i] and i > 0)]
        q = oracle_quality([left, right], criterion)
        cont.append(math.log(w) + eps_prime * q / (2 * delta))
    logw.append(cont)
    m = max(max(v) for v in logw)
    w = np.array([sum(math.exp(x - m) for x in v) for v in logw])
    return w / w.sum()


@pytest.mark.parametrize("criterion, eps", [("max", 4.0), ("gini", 120.0)])
def test_attribute_selection_frequencies_match_theory(criterion, eps):
    rng = np.random.default_rng(11)
    X, y = _selection_data(rng)
    common = dict(categorical_features=[0, 1, 2], categories=[2, 2, 2], bounds=([0] * 4, [1] * 4))
    feats = []
    for _ in range(2500):
        t = DPDecisionTreeClassifier(epsilon=eps, max_depth=1, criterion=criterion, rng=rng,
                                     **common).fit(X, y)  # fmt: skip
        feats.append(t.tree_.feature)
    feats = np.array(feats)
    assert np.all(feats >= 0)  # N_T ~ 200 always clears θ
    obs = np.bincount(feats, minlength=4)
    p = _theory(X, y, eps / 4, criterion)
    assert p.min() > 0.05 and p.max() < 0.7  # a discriminating setting
    assert stats.chisquare(obs, p * obs.sum()).pvalue > 1e-3
    p_wrong = _theory(X, y, 1.3 * eps / 4, criterion)
    assert stats.chisquare(obs, p_wrong * obs.sum()).pvalue < 1e-3


# -- epsilon = inf is non-private ID3 --------------------------------------------------------
def _random_data(rng, n, n_nom, n_cont, J=3):
    Xn = rng.integers(0, J, (n, n_nom))
    Xc = np.round(rng.random((n, n_cont)), 2)  # ties in values on purpose
    y = ((Xn[:, :1].sum(1) + (Xc[:, :1].sum(1) > 0.5) + rng.integers(0, 2, n)) % 3).astype(int)
    return np.hstack([Xn, Xc]).astype(float), y


def _majority(labels, C):
    cnt = Counter(labels)
    return max(range(C), key=lambda c: (cnt.get(c, 0), -c))  # ties -> lowest class


def _id3_check(node, X, y, rows, depth, used, dom, *, max_depth, nominal, criterion, C,
               parent_majority=None):  # fmt: skip
    """Walk the DP tree beside an exact ID3 on the same records (independent loops).

    ID3 (Quinlan 1986): a node is a leaf when its records share one class, when no attribute
    is left or at the depth limit; an empty node is a leaf labelled with its parent's
    majority class.
    """
    labels = [int(y[i]) for i in rows]
    cand_nom = [j for j in nominal if j not in used and nominal[j] > 1]
    cand_cont = [j for j in dom if dom[j][1] > dom[j][0]]
    if not rows:
        assert node.feature < 0, "ID3 makes an empty node a leaf"
        assert node.label == parent_majority
        assert node.counts.tolist() == [0] * C
        return
    if depth >= max_depth or not (cand_nom or cand_cont) or len(set(labels)) == 1:
        assert node.feature < 0, "ID3 stops here"
        assert node.label == _majority(labels, C)
        assert node.counts.tolist() == [labels.count(c) for c in range(C)]
        return

    def groups_of(j, thr=None):
        if j in nominal:
            return [[i for i in rows if X[i, j] == v] for v in range(nominal[j])]
        return [[i for i in rows if X[i, j] <= thr], [i for i in rows if X[i, j] > thr]]

    def q(groups):
        return oracle_quality([[int(y[i]) for i in g] for g in groups], criterion)

    best = max(q(groups_of(j)) for j in cand_nom) if cand_nom else -INF
    for j in cand_cont:
        lo, hi = dom[j]
        thresholds = [lo - 1.0, *sorted({X[i, j] for i in rows})]  # lo-1: everything right
        best = max(best, *(q(groups_of(j, t)) for t in thresholds))
    assert node.feature >= 0, "ID3 splits here"
    j = node.feature
    chosen = groups_of(j, None if j in nominal else node.threshold)
    assert q(chosen) == pytest.approx(best, abs=1e-9), "not an ID3-optimal split"
    for v, (child, g) in enumerate(zip(node.children, chosen)):
        kw = dict(max_depth=max_depth, nominal=nominal, criterion=criterion, C=C,
                  parent_majority=_majority(labels, C))  # fmt: skip
        if j in nominal:
            _id3_check(child, X, y, g, depth + 1, used | {j}, dom, **kw)
        else:
            lo, hi = dom[j]
            d2 = {**dom, j: (lo, node.threshold) if v == 0 else (node.threshold, hi)}
            _id3_check(child, X, y, g, depth + 1, used, d2, **kw)


def _predict_node(node, Xs, nominal):
    out = []
    for x in Xs:
        nd = node
        while nd.feature >= 0:
            j = nd.feature
            nd = nd.children[int(x[j]) if j in nominal else int(x[j] > nd.threshold)]
        out.append(nd.label)
    return out


@pytest.mark.parametrize("criterion", ["info_gain", "gini", "max", "noisy_counts"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_epsilon_inf_is_exact_id3(criterion, seed):
    rng = np.random.default_rng(seed)
    n_cont = 0 if criterion == "noisy_counts" else 2  # SuLQ bins continuous attributes
    X, y = _random_data(rng, 60, 3, n_cont)
    nom = {0: 3, 1: 3, 2: 3}
    t = DPDecisionTreeClassifier(epsilon=INF, max_depth=3, criterion=criterion,
                                 categorical_features=[0, 1, 2], categories=[3, 3, 3],
                                 bounds=([0] * X.shape[1], [1] * X.shape[1]), rng=seed)  # fmt: skip
    t.fit(X, y)
    dom = {j: (0.0, 1.0) for j in range(3, 3 + n_cont)}
    _id3_check(t.tree_, X, y, list(range(len(y))), 0, frozenset(), dom, max_depth=3,
               nominal=nom, criterion=criterion, C=3)  # fmt: skip
    assert _predict_node(t.tree_, X, nom) == t.predict(X).tolist()
    # the structures are equal, so predictions agree everywhere: check on fresh points that
    # cover every combination of the nominal values (empty branches included)
    grid = np.array(np.meshgrid(*[range(3)] * 3)).reshape(3, -1).T
    fresh = np.hstack([grid, rng.random((len(grid), n_cont))]).astype(float)
    assert _predict_node(t.tree_, fresh, nom) == t.predict(fresh).tolist()
    np.testing.assert_array_equal(t.predict_proba(fresh).argmax(1), t.predict(fresh))


@pytest.mark.parametrize("criterion, sk", [("info_gain", "entropy"), ("gini", "gini")])
def test_epsilon_inf_matches_sklearn_on_continuous_data(criterion, sk):
    """An independent library: scikit-learn's tree makes the same predictions on the data."""
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(5)
    X = rng.random((300, 4))
    y = ((X[:, 0] > 0.4) ^ (X[:, 1] + 0.3 * rng.random(300) > 0.6)).astype(int)
    ours = DPDecisionTreeClassifier(epsilon=INF, max_depth=4, criterion=criterion,
                                    bounds=([0] * 4, [1] * 4), rng=0).fit(X, y)  # fmt: skip
    ref = DecisionTreeClassifier(criterion=sk, max_depth=4, random_state=0).fit(X, y)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


# -- budget ------------------------------------------------------------------------------------
@pytest.mark.parametrize("criterion", ["info_gain", "gini", "max", "noisy_counts"])
@pytest.mark.parametrize("eps, depth", [(0.3, 2), (1.0, 4), (5.0, 3)])
def test_budget_adds_up_to_epsilon(criterion, eps, depth):
    rng = np.random.default_rng(3)
    X, y = _random_data(rng, 3000, 3, 2)
    acc = BudgetAccountant(10.0)
    t = DPDecisionTreeClassifier(epsilon=eps, max_depth=depth, criterion=criterion,
                                 categorical_features=[0, 1, 2], categories=[3, 3, 3],
                                 bounds=([0] * 5, [1] * 5), n_records=5000, accountant=acc,
                                 rng=1)  # fmt: skip
    t.fit(X, y)
    assert t.epsilon_prime_ == eps / (2 * (depth + 1))
    assert math.isclose(t.accountant_.spent, eps, rel_tol=1e-12)
    assert math.isclose(acc.spent, eps, rel_tol=1e-15)
    # every root-to-leaf path spends eps: the leaves' class-count budget is what is left
    labels = [s.label for s in t.accountant_.ledger]
    assert labels[0] == "N_T depth 0" and labels[1].startswith(("split", "SuLQ"))
    assert t.n_nodes_ > 1


def test_leaf_budget_rule():
    """A depth-d leaf gets 2ε'; a root that is a leaf by the threshold gets ε - ε'."""
    X = np.array([[0.0], [1.0]])
    y = np.array([0, 1])
    t = DPDecisionTreeClassifier(epsilon=0.5, max_depth=3, bounds=([0], [1]), rng=0).fit(X, y)
    assert t.tree_.feature < 0  # 2 records never clear θ = √2·2·2/ε'
    led = t.accountant_.ledger
    assert [s.label for s in led] == ["N_T depth 0", "class counts depth 0"]
    assert led[0].epsilon == 0.5 / 8 and math.isclose(led[1].epsilon, 0.5 - 0.5 / 8)
    # depth 0: a forced leaf spends everything on class counts, no N_T
    t0 = DPDecisionTreeClassifier(epsilon=0.5, max_depth=0, bounds=([0], [1]), rng=0).fit(X, y)
    assert [(s.label, s.epsilon) for s in t0.accountant_.ledger] == [("class counts depth 0", 0.5)]


def test_overspend_is_refused_before_any_noise():
    X, y = _random_data(np.random.default_rng(0), 100, 2, 1)
    acc = BudgetAccountant(0.5)
    t = DPDecisionTreeClassifier(epsilon=1.0, accountant=acc, bounds=([0] * 3, [3] * 3), rng=0)
    with pytest.raises(BudgetExceededError, match="1"):
        t.fit(X, y)
    assert acc.spent == 0 and not hasattr(t, "tree_")


def test_noise_reaches_the_leaves():
    """Finite ε: leaf counts are noisy (not the exact class counts), yet close to them."""
    rng = np.random.default_rng(0)
    X = rng.random((4000, 1))
    y = (X[:, 0] > 0.5).astype(int)
    t = DPDecisionTreeClassifier(epsilon=2.0, max_depth=1, bounds=([0], [1]), rng=1).fit(X, y)
    leaves = [c for c in t.tree_.children] if t.tree_.children else [t.tree_]
    counts = np.concatenate([lf.counts for lf in leaves])
    assert np.all(counts == np.round(counts))  # geometric noise: integers
    assert abs(counts.sum() - 4000) < 60  # 4 cells, each Lap-like with scale 1/(2ε') = 0.5
    assert t.score(X, y) > 0.95


# -- errors, warnings, persistence, printing ---------------------------------------------------
def test_bad_parameters_name_the_value():
    X, y = np.array([[0.0], [1.0]]), np.array([0, 1])
    b = {"bounds": ([0], [1])}
    with pytest.raises(ParameterError, match="-1"):
        DPDecisionTreeClassifier(epsilon=-1, **b).fit(X, y)
    with pytest.raises(ParameterError, match="'entropy'"):
        DPDecisionTreeClassifier(criterion="entropy", **b).fit(X, y)
    with pytest.raises(ParameterError, match=r"2\.5"):
        DPDecisionTreeClassifier(max_depth=2.5, **b).fit(X, y)
    with pytest.raises(ParameterError, match=r"0\.5"):
        DPDecisionTreeClassifier(categorical_features=[0], categories=[2]).fit(X + 0.5, y)
    with pytest.raises(ParameterError, match="feature 0"):
        DPDecisionTreeClassifier(bounds=([1], [0])).fit(X, y)
    t = DPDecisionTreeClassifier(epsilon=INF, categorical_features=[0], categories=[2], rng=0)
    t.fit(X, y)
    with pytest.raises(ParameterError, match="7"):
        t.predict(np.array([[7.0]]))


def test_privacy_warnings_for_data_derived_domains():
    X, y = np.array([[0.0, 1.0], [1.0, 2.0]]), np.array([0, 1])
    with pytest.warns(PrivacyWarning, match="bounds"):
        DPDecisionTreeClassifier(rng=0).fit(X, y)
    with pytest.warns(PrivacyWarning, match="categories"):
        DPDecisionTreeClassifier(categorical_features=[0], bounds=([0, 0], [1, 3]), rng=0).fit(X, y)


def test_roundtrip_and_readable_text():
    from privlab.data.datasets import load_lenses

    table = load_lenses()  # every Lenses domain is declared by the loader: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = fit_table(table, "class", epsilon=INF, max_depth=3, criterion="info_gain", rng=0)
    assert model.read_from_data == []
    text = model.export_text()
    assert text.startswith("tear-production-rate = reduced:")  # ID3's root on Lenses
    assert "(noisy counts hard: " in text and "spectacle-prescription = myope" in text
    df = table.to_pandas()
    reduced = df["tear-production-rate"] == "reduced"
    assert set(model.predict(df[reduced])) == {"none"}
    back = DPTreeModel(DPDecisionTreeClassifier.from_dict(model.tree.to_dict()), model.features,
                       model.target, model.domains)  # fmt: skip
    np.testing.assert_array_equal(back.predict(df), model.predict(df))
    assert (model.predict(df) == df["class"].to_numpy()).mean() > 0.9
    with pytest.raises(PrivlabError, match="'huge'"):
        model.predict(df.assign(age="huge"))


# -- public metadata in fit_table and the model file -------------------------------------------
def _toy_frame(n=400, seed=0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"colour": rng.choice(["red", "blue"], n), "size": rng.integers(3, 90, n)})
    df["label"] = np.where((df["colour"] == "red") | (df["size"] > 70), "yes", "no")
    return df


def test_fit_table_keeps_declared_domains_public(tmp_path):
    """Declared domains and bounds are stored without a warning; the bounds are the declared
    ones (0..100), not the data's range (3..89), and the unseen 'green' is a leaf value."""
    from privlab.data.table import Table

    df = _toy_frame()
    declared = {"colour": ["blue", "green", "red"], "size": list(range(101)),
                "label": ["no", "yes"]}  # fmt: skip
    table = Table.from_pandas(df, domains=declared)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = fit_table(table, "label", epsilon=1.0, max_depth=2, rng=0)
    assert model.read_from_data == []
    assert model.domains == {"colour": ["blue", "green", "red"]}
    assert model.tree.bounds_[0][1] == 0 and model.tree.bounds_[1][1] == 100
    assert model.tree.nominal_features_ == {0: 3}
    path = tmp_path / "m.json"
    model.save(path)
    d = json.loads(path.read_text())
    assert d["read_from_data"] == [] and "privacy_note" not in d
    assert d["model"]["bounds"] == [[0.0, 0.0], [0.0, 100.0]]
    assert DPTreeModel.load(path).read_from_data == []


def test_fit_table_names_data_derived_domains_in_warning_and_file(tmp_path):
    from privlab.data.table import Table

    df = _toy_frame()
    table = Table.from_pandas(df, domains={"colour": ["blue", "green", "red"]})
    with pytest.warns(PrivacyWarning, match="size, label are taken from the input") as rec:
        model = fit_table(table, "label", epsilon=1.0, max_depth=2, rng=0)
    assert len(rec) == 1 and "must be public" in str(rec[0].message)
    assert model.read_from_data == ["size", "label"]
    assert model.tree.bounds_[0][1] == df["size"].min() and model.tree.bounds_[1][1] == 89
    path = tmp_path / "m.json"
    model.save(path)
    d = json.loads(path.read_text())
    assert d["read_from_data"] == ["size", "label"]
    assert "size, label were read from the training data" in d["privacy_note"]
    back = DPTreeModel.load(path)
    assert back.read_from_data == ["size", "label"]
    np.testing.assert_array_equal(back.predict(df), model.predict(df))
    # a model file written before the field existed loads as "not recorded"
    del d["read_from_data"], d["privacy_note"]
    path.write_text(json.dumps(d))
    assert DPTreeModel.load(path).read_from_data is None


def test_fit_table_info_gain_needs_a_public_record_bound():
    """The table's row count is private: info_gain at finite ε is refused without n_records
    (before any warning or noise), accepted with one, and the sensitivity uses the bound."""
    from privlab.data.table import Table

    df = _toy_frame()
    table = Table.from_pandas(df, domains={"colour": ["blue", "red"], "size": list(range(101)),
                                           "label": ["no", "yes"]})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ParameterError, match=r"info_gain.*n_records"):
            fit_table(table, "label", epsilon=1.0, criterion="info_gain", rng=0)
        with pytest.raises(ParameterError, match="n_records = 399"):
            fit_table(table, "label", epsilon=1.0, criterion="info_gain", n_records=399, rng=0)
        model = fit_table(table, "label", epsilon=1.0, criterion="info_gain", n_records=1023,
                          rng=0)  # fmt: skip
    assert model.tree._sens == pytest.approx(10 + 1 / math.log(2))  # log2(1024) + 1/ln 2
    # the other criteria and ε = inf need no bound
    fit_table(table, "label", epsilon=1.0, criterion="gini", rng=0)
    fit_table(table, "label", epsilon=INF, criterion="info_gain", rng=0)


# -- scikit-learn compatibility -------------------------------------------------------------
@pytest.mark.parametrize("eps", [INF, 1.0, 0.1])
def test_sklearn_check_estimator_passes_every_check_with_a_seed(eps):
    """Every check passes (none expected to fail); at finite ε the poor_score tag lifts only
    check_classifiers_train's 83% training-accuracy demand."""
    from sklearn.utils import get_tags
    from sklearn.utils.estimator_checks import check_estimator

    est = DPDecisionTreeClassifier(epsilon=eps, random_state=0)
    assert expected_failed_checks(est) == {}
    assert get_tags(est).classifier_tags.poor_score == (not math.isinf(eps))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        results = check_estimator(est, on_skip=None)
    status = Counter(r["status"] for r in results)
    assert status["failed"] == status["xfail"] == 0 and status["passed"] >= 50
    skipped = [r["check_name"] for r in results if r["status"] == "skipped"]
    assert skipped in ([], ["check_array_api_input"])  # needs SCIPY_ARRAY_API


@pytest.mark.parametrize("eps", [INF, 1.0])
def test_sklearn_check_estimator_without_seed_passes_every_check(eps):
    """No seed: fresh CSPRNG noise on every fit; the checks that compare two fits
    (FRESH_NOISE_CHECKS) seed random_state themselves (set_random_state), so all pass."""
    from sklearn.utils.estimator_checks import check_estimator

    est = DPDecisionTreeClassifier(epsilon=eps)
    assert set(FRESH_NOISE_CHECKS) == {
        "check_fit_idempotent", "check_supervised_y_2d", "check_classifier_data_not_an_array"
    }  # fmt: skip
    assert expected_failed_checks(est) == {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        results = check_estimator(est, on_skip=None)
    assert not [r["check_name"] for r in results if r["status"] in ("failed", "xfail")]


@pytest.mark.parametrize("method", ["predict", "predict_proba", "apply", "export_text", "to_dict"])
def test_use_before_fit_raises_not_fitted_error(method):
    from sklearn.exceptions import NotFittedError

    est = DPDecisionTreeClassifier(epsilon=1.0, rng=0)
    args = () if method in ("export_text", "to_dict") else (np.zeros((2, 1)),)
    with pytest.raises(NotFittedError):
        getattr(est, method)(*args)


def test_cross_validation_and_grid_search_work():
    """clone(), cross_val_score and GridSearchCV: finite scores in every fold."""
    from sklearn.model_selection import GridSearchCV, cross_val_score

    rng = np.random.default_rng(4)
    X = rng.random((3000, 2))
    y = (X[:, 0] > 0.5).astype(int)
    est = DPDecisionTreeClassifier(epsilon=2.0, max_depth=2, bounds=([0, 0], [1, 1]),
                                   classes=[0, 1], rng=0)  # fmt: skip
    scores = cross_val_score(est, X, y, cv=5)
    assert np.all(np.isfinite(scores)) and scores.mean() > 0.9
    grid = GridSearchCV(est, {"max_depth": [1, 2], "criterion": ["max", "gini"]}, cv=3).fit(X, y)
    assert np.isfinite(grid.best_score_) and grid.best_score_ > 0.9


# -- public metadata: classes and the record bound ---------------------------------------------
def test_classes_public_or_warned():
    X = np.array([[0.0], [1.0], [1.0], [0.0]] * 10)
    y = np.array(["a", "b", "b", "a"] * 10)
    kw = dict(epsilon=1.0, max_depth=1, criterion="info_gain", bounds=([0], [1]), rng=0)
    with pytest.warns(PrivacyWarning, match="class labels"):
        DPDecisionTreeClassifier(**kw, n_records=40).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = DPDecisionTreeClassifier(**kw, classes=["b", "a", "c"], n_records=1023).fit(X, y)
    assert t.classes_.tolist() == ["b", "a", "c"]
    assert t.predict_proba(X).shape == (40, 3)
    with pytest.raises(ParameterError, match="'z'"):
        DPDecisionTreeClassifier(**kw, classes=["a", "z"], n_records=40).fit(X, y)


def test_info_gain_refused_without_a_public_record_bound():
    """The slide's sensitivity log(|T| + 1) + 1/ln 2 uses the private count: without a public
    n_records, info_gain at a finite ε is refused before any noise is drawn."""
    X = np.array([[0.0], [1.0], [1.0], [0.0]] * 10)
    y = np.array([0, 1, 1, 0] * 10)
    kw = dict(max_depth=1, criterion="info_gain", bounds=([0], [1]), classes=[0, 1], rng=0)
    acc = BudgetAccountant(5.0)
    with pytest.raises(ParameterError, match=r"info_gain.*n_records.*public upper bound"):
        DPDecisionTreeClassifier(epsilon=1.0, accountant=acc, **kw).fit(X, y)
    assert acc.spent == 0
    with pytest.raises(ParameterError, match="n_records = 39"):
        DPDecisionTreeClassifier(epsilon=1.0, n_records=39, **kw).fit(X, y)
    for bad in (0, 40.5, True, "40"):
        with pytest.raises(ParameterError, match="n_records must be a positive integer"):
            DPDecisionTreeClassifier(epsilon=1.0, n_records=bad, **kw).fit(X, y)
    t = DPDecisionTreeClassifier(epsilon=1.0, n_records=1023, **kw).fit(X, y)
    assert t._sens == pytest.approx(10 + 1 / math.log(2))  # log2(1023 + 1) + 1/ln 2
    # no noise, no sensitivity: ε = inf needs no bound; the other criteria never do
    DPDecisionTreeClassifier(epsilon=INF, **kw).fit(X, y)
    for crit in ("max", "gini", "noisy_counts"):
        DPDecisionTreeClassifier(epsilon=1.0, **{**kw, "criterion": crit}).fit(X, y)
