"""Estimating part of a jointly randomized block (privlab issue 31, item 1).

A joint matrix that does not reduce exactly to the requested columns (invariant PRAM's, say)
must be estimated whole and summed out: the uniform-prior marginal of Ma Sec. 5.3(d) is then
biased.  Oracles: exact enumeration of every randomized outcome of a few records (the mean
and variance of the estimate as closed sums), and Adult race + sex randomized jointly many
times with a fixed generator.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from privlab.data import load_adult
from privlab.errors import ParameterError
from privlab.estimate.pram import (
    em_estimate,
    marginal_matrix,
    observed_counts,
    reduces_exactly,
    release_factors,
    release_plan,
)
from privlab.estimate.pram_release import estimate_release
from privlab.learn.pram_apriori import PramApriori, estimated_supports
from privlab.learn.pram_bn import PramData, estimate_family
from privlab.learn.pram_pocket import weighted_samples
from privlab.publish import pram
from privlab.publish.randomization import invariant_matrix, joint_m_category_matrix

#: A 2 x 2 block (a slowest) whose matrix does not reduce to ``b``: invariant PRAM of the
#: M-category joint matrix at p = 0.4 for skewed frequencies.
FREQ = np.array([0.55, 0.05, 0.1, 0.3])
JOINT = invariant_matrix(joint_m_category_matrix([2, 2], 0.4), FREQ)
#: An asymmetric matrix of an independently randomized binary column ``c``.
QC = np.array([[0.8, 0.2], [0.3, 0.7]])


def _outcomes(true_cells: list[int], matrix: np.ndarray):
    """Every randomized outcome of records whose true joint cells are ``true_cells``, each
    record through ``matrix``: (probability, randomized cells)."""
    for out in itertools.product(range(matrix.shape[0]), repeat=len(true_cells)):
        prob = float(np.prod([matrix[t, o] for t, o in zip(true_cells, out)]))
        if prob > 0:
            yield prob, out


def test_invariant_block_does_not_reduce_and_m_category_does():
    assert not reduces_exactly(JOINT, [2, 2], [1])
    assert not reduces_exactly(JOINT, [2, 2], [0])
    assert reduces_exactly(JOINT, [2, 2], [0, 1])
    for sizes in ([2, 2], [2, 3, 2]):
        m = joint_m_category_matrix(sizes, 0.3)
        for r in range(1, len(sizes) + 1):
            for keep in itertools.combinations(range(len(sizes)), r):
                assert reduces_exactly(m, sizes, list(keep))
    # a Kronecker product (independent randomization) reduces to each factor
    a, b = np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([[0.6, 0.3, 0.1], [0.1, 0.8, 0.1],
                                                         [0.2, 0.2, 0.6]])  # fmt: skip
    assert reduces_exactly(np.kron(a, b), [2, 3], [1])
    assert reduces_exactly(np.kron(a, b), [2, 3], [0])


def test_part_of_a_block_is_exactly_unbiased_with_theorem_2_variance_by_enumeration():
    """Four records (a, b) = (0,0), (0,1), (1,1), (1,1) randomized jointly: over all 256
    outcomes the estimate of ``b`` alone has mean = the true counts and variance = the
    plan's propagated Theorem-2 variance, while the uniform-prior marginal is biased."""
    true_ab = [(0, 0), (0, 1), (1, 1), (1, 1)]
    cells = [2 * a + b for a, b in true_ab]
    truth_b = np.bincount([b for _, b in true_ab], minlength=2).astype(float)
    full_truth = np.bincount(cells, minlength=4).astype(float)
    mean = np.zeros(2)
    second = np.zeros(2)
    sd_at_truth = None
    uniform = np.linalg.inv(marginal_matrix(JOINT, [2, 2], [1]).T)
    old_mean = np.zeros(2)
    total = 0.0
    for prob, out in _outcomes(cells, JOINT):
        codes = np.array([divmod(o, 2) for o in out])
        data = PramData.from_codes(codes, {("a", "b"): JOINT}, names=["a", "b"], sizes=[2, 2])
        est = estimate_release(data, ["b"])
        assert est.summed_out == ("a",)
        mean += prob * est.counts
        second += prob * est.counts**2
        old_mean += prob * (uniform @ np.bincount(codes[:, 1], minlength=2))
        total += prob
        if sd_at_truth is None:
            sd_at_truth = release_plan(data, ["b"]).variance(full_truth)
    assert total == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(mean, truth_b, atol=1e-9)
    np.testing.assert_allclose(second - mean**2, sd_at_truth, rtol=1e-9, atol=1e-9)
    assert np.max(np.abs(old_mean - truth_b)) > 0.1  # the path this replaces was biased


def test_block_part_with_another_column_and_bn_family_by_enumeration():
    """Three records over (a, b) jointly + c alone: the joint estimate of (c, b), its
    variance, and the Bayesian-network family of b given c with its covariance blocks, all
    against the exact mean and covariance over the 512 outcomes."""
    true_abc = [(0, 0, 1), (1, 1, 0), (0, 1, 1)]
    big = np.kron(JOINT, QC)  # cells (a, b, c), c fastest
    cells = [4 * a + 2 * b + c for a, b, c in true_abc]
    full_truth = np.bincount(cells, minlength=8).astype(float)
    truth_cb = np.zeros((2, 2))
    for _, b, c in true_abc:
        truth_cb[c, b] += 1
    mean = np.zeros(4)
    outer = np.zeros((4, 4))
    fam_mean = np.zeros((2, 2))
    var_at_truth = cov_at_truth = None
    for prob, out in _outcomes(cells, big):
        codes = np.array([np.unravel_index(o, (2, 2, 2)) for o in out])
        data = PramData.from_codes(
            codes, {("a", "b"): JOINT, "c": QC}, names=["a", "b", "c"], sizes=[2, 2, 2]
        )
        est = estimate_release(data, ["c", "b"])
        fam = estimate_family(data, "b", ["c"])
        np.testing.assert_allclose(fam.counts.ravel(), est.counts, atol=1e-9)
        mean += prob * est.counts
        outer += prob * np.outer(est.counts, est.counts)
        fam_mean += prob * fam.counts
        if var_at_truth is None:
            plan = release_plan(data, ["c", "b"])
            assert plan.extra == ("a",) and plan.order == ("c", "a", "b")
            axes = ["abc".index(col) for col in plan.order]
            full_in_plan = np.transpose(full_truth.reshape(2, 2, 2), axes).ravel()
            var_at_truth = plan.variance(full_in_plan)
            cov_at_truth = fam.covariance_blocks(at=full_in_plan)
    cov = outer - np.outer(mean, mean)
    np.testing.assert_allclose(mean, truth_cb.ravel(), atol=1e-9)
    np.testing.assert_allclose(fam_mean, truth_cb, atol=1e-9)
    np.testing.assert_allclose(np.diag(cov), var_at_truth, rtol=1e-9, atol=1e-9)
    # the family's (K x K) covariance per parent configuration (c = 0, c = 1)
    for j in range(2):
        np.testing.assert_allclose(cov_at_truth[j], cov[2 * j : 2 * j + 2, 2 * j : 2 * j + 2],
                                   rtol=1e-9, atol=1e-9)  # fmt: skip


def test_apriori_support_of_part_of_a_group_is_exactly_unbiased():
    """Items 0, 1 randomized together through ``JOINT`` (not reducing to either), item 2
    alone through ``QC``: the estimated supports of {1}, {0} and {1, 2} have the true
    supports as their exact expectation over the 512 outcomes of three records."""
    true = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    big = np.kron(JOINT, QC)
    cells = [4 * r[0] + 2 * r[1] + r[2] for r in true]
    sets = [[1], [0], [1, 2], [0, 1]]
    truth = np.array([true[:, s].all(axis=1).sum() for s in sets], dtype=float)
    mean = np.zeros(len(sets))
    for prob, out in _outcomes(cells, big):
        x = np.array([np.unravel_index(o, (2, 2, 2)) for o in out])
        mean += prob * estimated_supports(x, sets, groups=[[0, 1], [2]], matrices=[JOINT, QC])
    np.testing.assert_allclose(mean, truth, atol=1e-9)


def _adult_like(n: int = 3000, seed: int = 5) -> PramData:
    """Dependent (a, b, c) randomized through (a, b) jointly (``JOINT``) and c alone."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = np.where(rng.random(n) < 0.8, a, 1 - a)
    c = np.where(rng.random(n) < 0.7, b, rng.integers(0, 2, n))
    truth = np.column_stack([a, b, c])
    gen = np.random.default_rng(seed + 1)
    big = np.kron(JOINT, QC)
    cum = np.cumsum(big, axis=1)
    cell = 4 * a + 2 * b + c
    out = (gen.random(n)[:, None] > cum[cell]).sum(axis=1)
    codes = np.column_stack(np.unravel_index(out, (2, 2, 2)))
    return PramData.from_codes(
        codes, {("a", "b"): JOINT, "c": QC}, names=["a", "b", "c"], sizes=[2, 2, 2]
    ), truth


def test_every_consumer_estimates_part_of_a_block_through_the_whole_block():
    """The pocket's EM joint, Apriori on a release and the CLI's estimate all sum the
    block out; the old entry point refuses rather than answer with the biased marginal."""
    data, _ = _adult_like()
    with pytest.raises(ParameterError, match="'b' was randomized jointly with 'a'"):
        release_factors(data, ["b", "c"])
    # the pocket: its EM joint is the whole block's MLE summed out (to EM's stopping rule),
    # 40% away in some cells from the MLE through the uniform-prior marginal
    plan = release_plan(data, ["b", "c"])
    assert plan.order == ("a", "b", "c")
    whole = plan.reduce(em_estimate(plan.observed(data), plan.factors, tol=1e-13).counts)
    obs = observed_counts(data.table.columns(["b", "c"]), [2, 2])
    old = em_estimate(obs, [marginal_matrix(JOINT, [2, 2], [1]), QC], tol=1e-13).counts
    assert np.max(np.abs(old / whole - 1)) > 0.3
    ws = weighted_samples(data, ["b", "c"])
    assert ws.columns == ("b", "c") and ws.codes.shape[1] == 2
    joint = np.zeros(4)
    np.add.at(joint, ws.codes[:, 0] * 2 + ws.codes[:, 1], ws.joint)
    np.testing.assert_allclose(joint, whole, rtol=1e-2)
    np.testing.assert_allclose(ws.cell_weight.sum(), data.n_rows, rtol=1e-9)
    # Apriori over item b only: its support is the summed-out moment estimate
    found = PramApriori(min_support=0.01).fit_release(data, items=["b"]).itemsets_
    mom = estimate_release(data, ["b"])
    assert found.items == ("b",) and found.itemsets == ((0,),)
    assert found.support[0] == pytest.approx(mom.counts[1], rel=1e-9)


def test_pram_attack_prior_sums_the_block_out():
    from privlab.attacks.pram import run_pram_attack

    data, _ = _adult_like(n=1500)
    rel = pram(
        data.table.to_pandas(), columns=["a", "b"], keep=["c"], p=0.4, simultaneous=True,
        invariant=True, rng=np.random.default_rng(3),
    )  # fmt: skip
    assert not reduces_exactly(rel.blocks[0].matrix, [2, 2], [1])
    res = run_pram_attack(rel, sensitive="b", qi=["c"])
    em = estimate_release(rel, ["b"], method="em")
    assert res.diagnostics["rho1"] == pytest.approx(em.counts.max() / rel.n_rows, rel=1e-5)


def _adult_race_sex_runs(runs: int, seed: int):
    warnings.simplefilter("ignore")
    adult = load_adult()
    rng = np.random.default_rng(seed)
    for _ in range(runs):
        yield adult, pram(adult, columns=["race", "sex"], keep=[], p=0.4, simultaneous=True,
                          invariant=True, rng=rng)  # fmt: skip


def test_adult_race_sex_estimate_of_sex_is_unbiased_and_covers():
    """The issue's oracle: Adult race + sex randomized jointly (invariant PRAM, p = 0.4), 40
    randomizations with one generator.  The mean estimate of the Female count lies within 4
    standard errors of the truth (a 30% wrong truth lies far outside), the reported sd
    matches the spread, and the 95% intervals cover at about the nominal rate."""
    runs = 40
    est, sds, cover = [], [], 0
    for adult, rel in _adult_race_sex_runs(runs, seed=31):
        sex = list(adult.schema["sex"].domain)
        truth = float((adult.column("sex") == sex.index("Female")).sum())
        e = estimate_release(rel, ["sex"])
        j = list(e.domains[0]).index("Female")
        assert e.summed_out == ("race",)
        est.append(e.counts[j])
        sds.append(e.sd[j])
        cover += bool(e.lower[j] <= truth <= e.upper[j])
    est = np.asarray(est)
    # Theorem 2's sd at the truth (the spread over randomizations of a fixed table)
    full = adult.counts(["race", "sex"]).astype(float).ravel()
    sd_true = float(np.sqrt(release_plan(rel, ["sex"]).variance(full))[j])
    tol = 4 * sd_true / np.sqrt(runs)
    assert abs(est.mean() - truth) <= tol
    for wrong in (0.7 * truth, 1.3 * truth):
        assert abs(est.mean() - wrong) > 5 * tol
    assert np.mean(sds) == pytest.approx(sd_true, rel=0.1)
    assert est.std(ddof=1) == pytest.approx(sd_true, rel=0.35)  # chi-square(39): +-35% is ~4 sd
    # Binomial(40, 0.95): P(cover <= 33) = 0.014
    assert cover >= 34
