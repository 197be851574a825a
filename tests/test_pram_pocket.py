"""The weighted Pocket learned from PRAM data (Ma 2006, Ch. 6): oracles and bad input."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.utils.estimator_checks import check_estimator

from conftest import fails
from privlab.errors import MatrixError, ParameterError, PrivlabError, SchemaError
from privlab.estimate.pram import em_estimate, kron_matrix
from privlab.experiments.pocket_fig6 import LENSES_MARGINALS, best_separator, lenses_labels
from privlab.learn.pram_bn import PramData
from privlab.learn.pram_pocket import (
    PramPocketClassifier,
    expected_failed_checks,
    pocket,
    weighted_samples,
)
from privlab.publish.randomization import (
    binary_symmetric_matrix,
    m_category_matrix,
    pram,
    randomize_codes,
    ternary_symmetric_matrix,
)

CATS = [list(range(1, len(m) + 1)) for m in LENSES_MARGINALS]


def _lenses(p: float, seed: int, n: int = 6000):
    """Table 6.1 records (codes 1..K), labels (1 = class 3), randomized copy, matrices."""
    g = np.random.default_rng(seed)
    lab = lenses_labels()
    x = np.column_stack([g.choice(len(m), n, p=m) + 1 for m in LENSES_MARGINALS])
    y = np.array([int(lab[tuple(int(v) for v in row)] == 3) for row in x])
    mats = {0: ternary_symmetric_matrix(p / 2)}
    mats.update({j: binary_symmetric_matrix(p) for j in (1, 2, 3)})
    xr = np.column_stack([randomize_codes(x[:, j] - 1, mats[j], g) + 1 for j in range(4)])
    return x, y, xr, mats


# -- oracle: p = 0 --------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 7])
def test_weighted_at_p0_equals_plain_with_the_same_seed(seed):
    x, y, xr, mats = _lenses(0.0, seed, n=2000)
    assert np.array_equal(x, xr)
    w = PramPocketClassifier(weighted=True, n_iter=3000, categories=CATS, rng=seed)
    p = PramPocketClassifier(weighted=False, n_iter=3000, categories=CATS, rng=seed)
    w.fit(xr, y, matrices=mats)
    p.fit(xr, y, matrices=mats)
    assert np.array_equal(w.coef_, p.coef_) and np.array_equal(w.intercept_, p.intercept_)
    a, b = w.pockets_[0], p.pockets_[0]
    assert (a.num_ok, a.total, a.run, a.iterations) == (b.num_ok, b.total, b.run, b.iterations)
    assert np.any(w.coef_ != 0)
    # a different seed draws differently (the comparison above can fail)
    q = PramPocketClassifier(weighted=False, n_iter=3000, categories=CATS, rng=seed + 1)
    assert not np.array_equal(q.fit(xr, y, matrices=mats).coef_, p.coef_)


def test_weighted_at_p0_equals_plain_on_a_pram_release():
    from privlab.data.datasets import load_lenses

    table = load_lenses()
    rel = pram(table, columns=["age", "astigmatic"], keep=["tear-production-rate", "class"],
               scheme="m-category", p=0.0, rng=3)  # fmt: skip
    a = PramPocketClassifier(target="class", n_iter=2000, rng=5).fit(rel)
    b = PramPocketClassifier(target="class", n_iter=2000, weighted=False, rng=5).fit(rel)
    assert np.array_equal(a.coef_, b.coef_) and a.coef_.shape == (3, 3)


# -- oracle: the weights are Bayes posteriors -----------------------------------------------------
@pytest.mark.parametrize("class_randomized", [False, True])
def test_weights_equal_a_direct_bayes_computation(class_randomized):
    codes = np.array(
        [[0, 0, 0], [0, 1, 0], [1, 1, 1], [1, 0, 1], [2, 1, 1], [2, 1, 0], [0, 0, 1], [1, 1, 1]]
    )
    sizes = [3, 2, 2]
    p0 = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.25, 0.25, 0.5]])  # asymmetric
    p1 = np.array([[0.9, 0.1], [0.3, 0.7]])
    pc = np.array([[0.8, 0.2], [0.15, 0.85]]) if class_randomized else np.eye(2)
    mats = {"a": p0, "b": p1, **({"c": pc} if class_randomized else {})}
    data = PramData.from_codes(codes, mats, names=["a", "b", "c"], sizes=sizes)
    s = weighted_samples(data, ["a", "b", "c"])
    full = kron_matrix([p0, p1, pc])
    obs = np.bincount(np.ravel_multi_index(tuple(codes.T), sizes), minlength=12).astype(float)
    cell_of = np.ravel_multi_index(tuple(s.codes.T), sizes)
    # EM: privlab's T^ is the MLE of the whole 12-cell joint (checked by its likelihood
    # against a long EM run with the explicit Kronecker matrix)
    ref = em_estimate(obs, [full], init="observed", tol=1e-13, max_iter=400_000)
    assert ref.converged  # an oracle that iterates must have converged
    t = np.zeros(12)
    t[cell_of] = s.joint
    tt = full.T @ (t / t.sum())
    ll = float(obs[obs > 0] @ np.log(tt[obs > 0]))
    assert ll == pytest.approx(ref.loglik, abs=1e-6)
    # Bayes, directly: pi_l(k) = T^_l P(l, k) / sum_m T^_m P(m, k), W_l = sum_k N~_k pi_l(k)
    post = {}
    for k in np.flatnonzero(obs):
        den = sum(t[m] * full[m, k] for m in range(12))
        for cell in range(12):
            if t[cell] * full[cell, k] > 0:
                post[(k, cell)] = t[cell] * full[cell, k] / den
    w_direct = np.zeros(12)
    for (k, cell), v in post.items():
        w_direct[cell] += obs[k] * v
    w_got = np.zeros(12)
    w_got[cell_of] = s.cell_weight
    np.testing.assert_allclose(w_got, w_direct, rtol=1e-12, atol=1e-12)
    # each original cell's sample groups carry exactly the direct posteriors and counts
    groups: dict[int, list] = {}
    for g in range(s.group_cell.size):
        groups.setdefault(int(cell_of[s.group_cell[g]]), []).append(
            (s.group_count[g], s.group_pi[g])
        )
    assert sum(len(v) for v in groups.values()) == len(post)
    for cell, got in groups.items():
        want = sorted((obs[k], v) for (k, c2), v in post.items() if c2 == cell)
        np.testing.assert_allclose(sorted(got), want, rtol=1e-12, atol=1e-12)
    # at the EM fixed point the cell weights are the estimated joint (notes Sec. 4.2 [D])
    np.testing.assert_allclose(s.cell_weight, s.joint, atol=1e-4)
    assert s.cell_weight.sum() == pytest.approx(len(codes))


@settings(max_examples=30, deadline=None)
@given(
    st.integers(0, 10_000),
    st.floats(0.0, 0.6),
    st.integers(5, 60),
)
def test_posteriors_of_each_record_sum_to_one(seed, p, n):
    g = np.random.default_rng(seed)
    codes = np.column_stack([g.integers(0, 3, n), g.integers(0, 2, n), g.integers(0, 2, n)])
    m = {"a": m_category_matrix(3, p), "b": binary_symmetric_matrix(min(p, 0.5))}
    data = PramData.from_codes(codes, m, names=["a", "b", "c"], sizes=[3, 2, 2])
    s = weighted_samples(data, ["a", "b", "c"])
    assert np.all(s.group_pi > 0) and np.all(s.group_pi <= 1 + 1e-12)
    # per (stratum, randomized cell): the posteriors over the original cells sum to 1, so
    # sum_g count * pi = N
    assert s.selection.sum() == pytest.approx(n)
    assert s.cell_weight.sum() == pytest.approx(n)
    # the class is released unchanged: no cell moves to another class stratum
    assert set(s.codes[:, 2]) <= set(codes[:, 2])


# -- oracle: the pocket with ratchet ---------------------------------------------------------------
def test_pocket_with_ratchet_separates_a_separable_set():
    g = np.random.default_rng(4)
    x = g.integers(-5, 6, size=(300, 2)).astype(float)
    score = 2 * x[:, 0] - 3 * x[:, 1] + 1.5
    keep = np.abs(score) >= 1  # a margin
    x, y = x[keep], (score[keep] > 0).astype(int)
    clf = PramPocketClassifier(n_iter=20_000, rng=0).fit(x, y)
    assert clf.train_accuracy_ == 1.0
    assert clf.score(x, y) == 1.0
    assert clf.pockets_[0].iterations < 20_000  # stopped once every cell is right


def test_pocket_without_ratchet_never_beats_the_ratchet_on_xor():
    # XOR is not separable: the best line gets 3 of 4 cells right
    x = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=float)
    y = np.array([0, 1, 1, 0])
    clf = PramPocketClassifier(n_iter=2000, rng=1).fit(x, y)
    assert clf.train_accuracy_ == 0.75


def test_pocket_function_counts_weighted_correct_cells():
    x = np.array([[1.0, 1.0], [-1.0, 1.0]])
    y = np.array([1.0, -1.0])
    res = pocket(x, y, np.array([3.0, 1.0]), np.array([0, 1]), np.array([3.0, 1.0]),
                 np.ones(2), n_iter=500, rng=0)  # fmt: skip
    assert res.num_ok == res.total == 4.0
    assert y[0] * (x[0] @ res.weights) > 0 and y[1] * (x[1] @ res.weights) > 0


# -- statistical: weighted >= plain (Ma Fig. 6.1) --------------------------------------------------
def test_weighted_beats_plain_on_randomized_lenses():
    # measured first at p = 0.3, 5,000 draws, seeds 0..4: weighted - plain = 0.239 .. 0.251
    # (weighted 0.985 .. 0.993, plain 0.743 .. 0.751); the test asks for 0.15 on seed 0
    x, y, xr, mats = _lenses(0.3, 0)
    acc = {
        w: PramPocketClassifier(weighted=w, n_iter=5000, categories=CATS, rng=0)
        .fit(xr, y, matrices=mats)
        .score(x, y)
        for w in (True, False)
    }
    assert acc[True] - acc[False] >= 0.15
    assert acc[True] >= 0.95


def test_notes_ceiling_is_the_narrow_grid_and_not_the_best_separator():
    assert best_separator(4, 12) == pytest.approx(0.984)
    assert best_separator(9, 22) >= 0.992 - 1e-12
    # the majority rate under Table 6.1 (notes: 0.739)
    lab = lenses_labels()
    pr = 0.0
    for cell in itertools.product(*[range(1, len(m) + 1) for m in LENSES_MARGINALS]):
        if lab[cell] != 3:
            pr += np.prod([LENSES_MARGINALS[j][c - 1] for j, c in enumerate(cell)])
    assert pr == pytest.approx(0.7392)


# -- scikit-learn ----------------------------------------------------------------------------------
def test_check_estimator():
    res = check_estimator(PramPocketClassifier(n_iter=3000, random_state=0), on_fail=None)
    assert not [r["check_name"] for r in res if r["status"] == "failed"]
    assert sum(r["status"] == "passed" for r in res) >= 50


def test_check_estimator_unseeded_passes_every_check():
    """The checks that compare two fits seed random_state themselves (set_random_state)."""
    est = PramPocketClassifier(n_iter=3000)
    assert expected_failed_checks(est) == expected_failed_checks(PramPocketClassifier(rng=0)) == {}
    res = check_estimator(est, on_fail=None)
    assert not {r["check_name"] for r in res if r["status"] in ("failed", "xfail")}


def test_fit_returns_self_and_init_has_no_logic():
    clf = PramPocketClassifier(n_iter=-3, rng=0)  # stored, not checked, in __init__
    assert clf.n_iter == -3
    x = np.array([[0.0], [1.0], [2.0], [3.0]])
    good = PramPocketClassifier(n_iter=100, rng=0)
    assert good.fit(x, [0, 0, 1, 1]) is good


# -- the release path and the CLI ---------------------------------------------------------------
def test_release_fit_encode_and_cli(run, tmp_path):
    from privlab.data.datasets import load_lenses

    table = load_lenses()
    rel = pram(table, columns=["age", "astigmatic"], keep=["tear-production-rate", "class"],
               scheme="m-category", p=0.1, rng=3)  # fmt: skip
    clf = PramPocketClassifier(target="class", n_iter=2000, rng=0).fit(rel)
    assert clf.features_ == ("age", "astigmatic", "tear-production-rate")
    enc = clf.encode(table)
    assert enc.shape == (24, 3) and set(np.unique(enc[:, 0])) == {0.0, 1.0, 2.0}
    truth = np.asarray(table.schema["class"].domain)[table.columns(["class"])[:, 0]]
    acc = float(np.mean(clf.predict(enc) == truth))
    rel.save(tmp_path / "rel")
    r = run("pram", "pocket", tmp_path / "rel", "--target", "class", "--test", "lenses",
            "--seed", "0", "--n-iter", "2000", "--out", tmp_path / "m.json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "accuracy on 24 original records of lenses" in r.stdout
    assert "tear-production-rate" in r.stdout
    model = json.loads((tmp_path / "m.json").read_text())
    assert model["classes"] == ["hard", "soft", "none"] and len(model["pockets"]) == 3
    # the CLI (same seed, same release) learns what the API learns
    assert model["test"]["accuracy"] == pytest.approx(acc)
    fails(run("pram", "pocket", tmp_path / "rel", "--target", "nope"), "nope")
    fails(run("pram", "pocket", tmp_path / "rel", "--target", "class", "--features", "age,class"),
          "'class'")  # fmt: skip


# -- bad input ---------------------------------------------------------------------------------
X4 = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])


@pytest.mark.parametrize(
    ("make", "exc", "words"),
    [
        (lambda: PramPocketClassifier(n_iter=0).fit(X4, [0, 1, 0, 1]), ParameterError, "n_iter"),
        (lambda: PramPocketClassifier().fit(X4, [1, 1, 1, 1]), ParameterError, "one class"),
        (lambda: PramPocketClassifier().fit(X4, None), ParameterError, "labels y"),
        (lambda: PramPocketClassifier().fit(X4, [0, 1, 0, 1], matrices={5: np.eye(2)}),
         ParameterError, "5"),
        (lambda: PramPocketClassifier().fit(X4, [0, 1, 0, 1], matrices={0: np.eye(3)}),
         MatrixError, "(3, 3)"),
        (lambda: PramPocketClassifier().fit(
            X4, [0, 1, 0, 1], matrices={0: np.array([[0.5, 0.6], [0.5, 0.5]])}),
         MatrixError, "stochastic"),
        (lambda: PramPocketClassifier(categories=[[0.0, 1.0]]).fit(X4, [0, 1, 0, 1]),
         ParameterError, "categories"),
        (lambda: PramPocketClassifier(categories=[[0.0, 2.0], [0.0, 1.0]]).fit(X4, [0, 1, 0, 1]),
         ParameterError, "1.0"),
        (lambda: PramPocketClassifier(categories=[[1.0, 0.0], [0.0, 1.0]]).fit(X4, [0, 1, 0, 1]),
         ParameterError, "increasing"),
    ],
)  # fmt: skip
def test_bad_array_input_raises_one_clear_error(make, exc, words):
    with pytest.raises(exc) as e:
        make()
    assert words in str(e.value)


def test_bad_release_input_raises_one_clear_error():
    from privlab.data.datasets import load_lenses

    rel = pram(load_lenses(), columns=["age"], keep=["class"], scheme="m-category", p=0.2, rng=1)
    with pytest.raises(ParameterError, match="target"):
        PramPocketClassifier().fit(rel)
    with pytest.raises(PrivlabError, match="nope"):
        PramPocketClassifier(target="nope").fit(rel)
    with pytest.raises(ParameterError, match="'class' cannot also be a feature"):
        PramPocketClassifier(target="class", features=["age", "class"]).fit(rel)
    with pytest.raises(ParameterError, match=r"values\['age'\]"):
        PramPocketClassifier(target="class", values={"age": [1.0, 2.0]}).fit(rel)
    with pytest.raises(SchemaError, match="'tear'"):
        PramPocketClassifier(target="class", values={"tear": [1.0]}).fit(rel)
    with pytest.raises(ParameterError, match="pass no y"):
        PramPocketClassifier(target="class").fit(rel, [0, 1])
    with pytest.raises(ParameterError, match="more than 4096"):
        big = np.zeros((10, 2), dtype=int)
        data = PramData.from_codes(big, {"X0": m_category_matrix(4097, 0.1)},
                                   names=["X0", "X1"], sizes=[4097, 2])  # fmt: skip
        weighted_samples(data, ["X0", "X1"])


def test_pocket_reproductions_are_registered():
    from privlab.experiments import discover

    assert {"pocket-fig6.1", "pocket-fig6.2"} <= set(discover())  # fig6.1 runs in the tour


def test_cell_weights_reconstruct_the_original_marginals():
    # Fig. 6.3's claim on Lenses at p = 0.3: the EM cell weights' marginals are close to the
    # original ones.  Measured first (seeds 0..4): TV(reconstructed, original) 0.003-0.027,
    # TV(randomized, original) 0.064-0.248; the test asks for <= 0.04 and a third of the
    # randomized distance on seed 0
    x, y, xr, mats = _lenses(0.3, 0)
    s = PramPocketClassifier(n_iter=100, categories=CATS, rng=0).fit(xr, y, matrices=mats).samples_
    for j, cats in enumerate(CATS):
        k = len(cats)
        orig = np.bincount(x[:, j] - 1, minlength=k) / len(x)
        rand = np.bincount(xr[:, j] - 1, minlength=k) / len(x)
        rec = np.bincount(s.codes[:, j], weights=s.cell_weight, minlength=k) / len(x)
        tv_rec, tv_rand = 0.5 * np.abs(rec - orig).sum(), 0.5 * np.abs(rand - orig).sum()
        assert tv_rec <= 0.04 and tv_rec <= tv_rand / 3, (j, tv_rec, tv_rand)
