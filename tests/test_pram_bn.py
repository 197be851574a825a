"""Bayesian-network parameters from PRAM data (Ma 2006, Ch. 5): privlab.learn.pram_bn."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from privlab.errors import MatrixError, ParameterError, SchemaError
from privlab.estimate.pram import moment_covariance, ratio_sd
from privlab.learn.bayesnet import BayesianNetwork, topological_order, validate_structure
from privlab.learn.pram_bn import (
    PramBayesNetEstimator,
    PramData,
    cpt_from_counts,
    cross_parents,
    estimate_family,
    learn_parameters,
    learn_parameters_no_miner,
)
from privlab.publish.randomization import (
    binary_matrix,
    binary_symmetric_matrix,
    randomize,
    randomize_codes,
    ternary_symmetric_matrix,
)

NODES = ("A", "B", "C", "D")
PARENTS = {"A": (), "B": ("A",), "C": ("A", "B"), "D": ("C",)}
DOMAINS = {"A": (0, 1), "B": (0, 1, 2), "C": (0, 1), "D": (0, 1)}
CPTS = {
    "A": [[0.3, 0.7]],
    "B": [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]],
    "C": [[0.1, 0.9], [0.5, 0.5], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6], [0.9, 0.1]],
    "D": [[0.25, 0.75], [0.7, 0.3]],
}
MATRICES = {
    "A": binary_symmetric_matrix(0.2),
    "B": ternary_symmetric_matrix(0.1, 0.15),
    "C": binary_matrix(0.1, 0.25),
    "D": binary_symmetric_matrix(0.25),
}


@pytest.fixture(scope="module")
def truth() -> BayesianNetwork:
    return BayesianNetwork(nodes=NODES, parents=PARENTS, domains=DOMAINS, cpts=CPTS)


@pytest.fixture(scope="module")
def codes(truth) -> np.ndarray:
    return truth.sample(3000, rng=11)


def _randomized(codes: np.ndarray, rng) -> np.ndarray:
    rng = np.random.default_rng(rng)
    return np.column_stack(
        [randomize_codes(codes[:, i], MATRICES[n], rng) for i, n in enumerate(NODES)]
    )


def _df(codes):
    import pandas as pd

    return pd.DataFrame(codes, columns=NODES)


# -- p = 0: pgmpy's estimators exactly -----------------------------------------------------------
def test_p0_equals_pgmpy_mle(codes):
    pytest.importorskip("pgmpy")
    warnings.filterwarnings("ignore", category=FutureWarning)
    from pgmpy.estimators import MaximumLikelihoodEstimator
    from pgmpy.models import DiscreteBayesianNetwork

    net = learn_parameters(PramData.from_codes(codes, names=NODES, sizes=[2, 3, 2, 2]), PARENTS)
    model = DiscreteBayesianNetwork([(p, n) for n in NODES for p in PARENTS[n]])
    for n in NODES:
        cpd = MaximumLikelihoodEstimator(model, _df(codes)).estimate_cpd(n)
        assert tuple(cpd.variables) == (n, *PARENTS[n])
        np.testing.assert_allclose(net.cpts[n], cpd.get_values().T, rtol=0, atol=1e-15)
        assert np.all(net.sds[n] == 0)  # nothing randomized: no randomization variance


@pytest.mark.parametrize("alpha", [1.0, 2.5])
def test_p0_map_equals_pgmpy_bayesian_estimator(codes, alpha):
    pytest.importorskip("pgmpy")
    warnings.filterwarnings("ignore", category=FutureWarning)
    from pgmpy.estimators import BayesianEstimator
    from pgmpy.models import DiscreteBayesianNetwork

    data = PramData.from_codes(codes, names=NODES, sizes=[2, 3, 2, 2])
    net = learn_parameters(data, PARENTS, prior=alpha)
    model = DiscreteBayesianNetwork([(p, n) for n in NODES for p in PARENTS[n]])
    for n in NODES:
        k, j = len(DOMAINS[n]), int(np.prod([len(DOMAINS[p]) for p in PARENTS[n]]))
        cpd = BayesianEstimator(model, _df(codes)).estimate_cpd(
            n, prior_type="dirichlet", pseudo_counts=np.full((k, j), alpha)
        )
        np.testing.assert_allclose(net.cpts[n], cpd.get_values().T, rtol=0, atol=1e-15)


def test_map_per_node_prior_and_k2_prior(codes):
    data = PramData.from_codes(codes, names=NODES, sizes=[2, 3, 2, 2])
    counts = learn_parameters(data, PARENTS).counts
    prior = {n: np.arange(1, counts[n].size + 1).reshape(counts[n].shape) for n in NODES}
    net = learn_parameters(data, PARENTS, prior=prior)
    for n in NODES:
        exp = (counts[n] + prior[n]) / (counts[n] + prior[n]).sum(axis=1, keepdims=True)
        np.testing.assert_allclose(net.cpts[n], exp, rtol=1e-14)


# -- the estimates and their sds ----------------------------------------------------------------
def test_sd_equals_ratio_sd_with_full_covariance(codes):
    data = PramData.from_codes(_randomized(codes, 3), MATRICES, names=NODES)
    true = estimate_family(
        PramData.from_codes(codes, names=NODES, sizes=[2, 3, 2, 2]), "C", ("A", "B")
    ).counts
    fam = estimate_family(data, "C", ("A", "B"))
    cov = moment_covariance(true.ravel(), [MATRICES["A"], MATRICES["B"], MATRICES["C"]])
    sd = fam.cpt_sd(at=true)
    for j in range(6):
        for k in range(2):
            assert sd[j, k] == pytest.approx(
                ratio_sd(true.ravel(), cov, [2 * j + k], [2 * j, 2 * j + 1]), rel=1e-10
            )


def test_monte_carlo_sd_matches_analytic_sd(truth):
    """400 re-randomizations of one data set: the sd of each CPT entry within 10% of Thm 5.2's
    delta-method sd (the template is the Fig. 5.1 test of test_pram)."""
    x = truth.sample(40000, rng=5)
    exact = learn_parameters(PramData.from_codes(x, names=NODES, sizes=[2, 3, 2, 2]), PARENTS)
    rng = np.random.default_rng(123)
    draws = {n: [] for n in NODES}
    analytic = None
    for _ in range(400):
        data = PramData.from_codes(_randomized(x, rng), MATRICES, names=NODES)
        net = learn_parameters(data, PARENTS, sd=False)
        for n in NODES:
            draws[n].append(net.cpts[n])
    for n in ("B", "C", "D"):
        fam = estimate_family(data, n, PARENTS[n])
        analytic = fam.cpt_sd(at=exact.counts[n])
        mc = np.std(draws[n], axis=0, ddof=1)
        np.testing.assert_allclose(mc, analytic, rtol=0.10)
        # and the estimator is unbiased to within 4 Monte Carlo standard errors
        bias = np.abs(np.mean(draws[n], axis=0) - exact.cpts[n])
        assert np.all(bias <= 4 * analytic / np.sqrt(400) + 1e-3)


def test_joint_block_gives_the_same_estimate_as_its_kronecker_factors(codes):
    """A block randomized jointly through P_B (x) P_A (block order B, A; the family asks A
    first) must give exactly the estimate of independent blocks: tests the permutation."""
    y = _randomized(codes, 8)
    indep = PramData.from_codes(y, MATRICES, names=NODES)
    joint = PramData.from_codes(
        y,
        {("B", "A"): np.kron(MATRICES["B"], MATRICES["A"]), "C": MATRICES["C"],
         "D": MATRICES["D"]},
        names=NODES,
    )  # fmt: skip
    a = learn_parameters(indep, PARENTS)
    b = learn_parameters(joint, PARENTS)
    for n in NODES:
        np.testing.assert_allclose(a.cpts[n], b.cpts[n], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(a.sds[n], b.sds[n], rtol=1e-8, atol=1e-12)


def test_em_estimator_close_to_moment_and_never_negative(codes):
    data = PramData.from_codes(_randomized(codes, 4), MATRICES, names=NODES)
    mom = learn_parameters(data, PARENTS)
    em = learn_parameters(data, PARENTS, estimator="em")
    for n in NODES:
        assert np.all(em.counts[n] >= 0)
        np.testing.assert_allclose(em.cpts[n], mom.cpts[n], atol=0.05)


def test_release_gives_the_same_network_as_codes(codes):
    import pandas as pd

    df = pd.DataFrame(codes, columns=NODES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = randomize(df, {n: MATRICES[n] for n in NODES}, keep=[], rng=1)
    net = PramBayesNetEstimator(structure=PARENTS).fit(rel).network_
    again = learn_parameters(PramData.from_codes(rel.table.codes, MATRICES, names=NODES), PARENTS)
    for n in NODES:
        np.testing.assert_allclose(net.cpts[n], again.cpts[n], rtol=1e-12)


# -- negative and empty counts ------------------------------------------------------------------
def test_negative_policy():
    counts = np.array([[10.0, -2.0, 5.0], [-1.0, -3.0, 0.0]])
    cpt, empty = cpt_from_counts(counts)
    np.testing.assert_allclose(cpt[0], [10 / 15, 0, 5 / 15])
    np.testing.assert_allclose(cpt[1], [1 / 3] * 3)
    assert empty.tolist() == [False, True]
    cpt, empty = cpt_from_counts(counts, prior=1.0)
    np.testing.assert_allclose(cpt[1], [1 / 3] * 3)
    assert not empty.any()
    with pytest.raises(ParameterError, match="-2 < 0"):
        cpt_from_counts(counts, negative="error", node="X")
    with pytest.raises(ParameterError, match="'nope'"):
        cpt_from_counts(counts, negative="nope")


def test_empty_configuration_has_nan_sd():
    x = np.array([[0, 0], [0, 1], [0, 1], [0, 0]] * 10)  # A = 1 never occurs
    net = learn_parameters(
        PramData.from_codes(x, {"B": binary_symmetric_matrix(0.1)}, names=["A", "B"],
                            sizes=[2, 2]),
        {"B": ["A"]},
    )  # fmt: skip
    np.testing.assert_allclose(net.cpts["B"][1], [0.5, 0.5])
    assert np.all(np.isnan(net.sds["B"][1])) and np.all(np.isfinite(net.sds["B"][0]))


# -- the no-miner protocol ------------------------------------------------------------------------
def test_no_miner_protocol(codes):
    sites = {"A": 1, "B": 1, "C": 2, "D": 2}
    assert cross_parents(PARENTS, sites) == {"A": (), "B": (), "C": ("A", "B"), "D": ()}
    rng = np.random.default_rng(9)
    y = codes.copy()
    y[:, 0] = randomize_codes(codes[:, 0], MATRICES["A"], rng)
    y[:, 1] = randomize_codes(codes[:, 1], MATRICES["B"], rng)
    rand = PramData.from_codes(y[:, :2], {"A": MATRICES["A"], "B": MATRICES["B"]},
                               names=["A", "B"])  # fmt: skip
    orig = PramData.from_codes(codes, names=NODES, sizes=[2, 3, 2, 2])
    net = learn_parameters_no_miner(orig, rand, PARENTS, sites)
    exact = learn_parameters(orig, PARENTS)
    for n in ("A", "B", "D"):  # local variables: exact, no variance
        np.testing.assert_array_equal(net.cpts[n], exact.cpts[n])
        assert np.all(net.sds[n] == 0)
    # the cross variable: C itself unrandomized, its parents through their matrices
    direct = learn_parameters(
        PramData.from_codes(np.column_stack([y[:, :2], codes[:, 2]]),
                            {"A": MATRICES["A"], "B": MATRICES["B"]}, names=["A", "B", "C"]),
        {"C": ["A", "B"]},
    )  # fmt: skip
    np.testing.assert_allclose(net.cpts["C"], direct.cpts["C"], rtol=1e-12)
    # "the no-miner case is always better" (Sec. 5.6.1): smaller sds than the miner's
    miner = learn_parameters(PramData.from_codes(_randomized(codes, 9), MATRICES, names=NODES),
                             PARENTS)  # fmt: skip
    assert np.all(net.sds["C"] < miner.sds["C"])
    only_a = PramData(rand.table.select(["A"]), (rand.blocks[0],))
    with pytest.raises(SchemaError, match="cross parent 'B' of 'C'"):
        learn_parameters_no_miner(orig, only_a, PARENTS, sites)


# -- bad input ------------------------------------------------------------------------------------
def test_bad_structures(codes):
    data = PramData.from_codes(codes, names=NODES, sizes=[2, 3, 2, 2])
    with pytest.raises(ParameterError, match=r"has a cycle: \w <- \w <- \w <- \w"):
        learn_parameters(data, {"A": ["C"], "B": ["A"], "C": ["B"]})
    with pytest.raises(SchemaError, match="parent 'Z' of 'B'"):
        learn_parameters(data, {"B": ["Z"]})
    with pytest.raises(SchemaError, match="unknown node 'Q'"):
        learn_parameters(data, {"Q": []})
    with pytest.raises(ParameterError, match="its own parent"):
        validate_structure({"A": ["A"]})
    with pytest.raises(ParameterError, match="unknown estimator"):
        learn_parameters(data, PARENTS, estimator="bayes")


def test_singular_matrix_points_to_em(codes):
    half = np.full((2, 2), 0.5)
    data = PramData.from_codes(codes, {"D": half}, names=NODES, sizes=[2, 3, 2, 2])
    with pytest.raises(MatrixError, match=r"singular.*EM"):
        learn_parameters(data, PARENTS)
    net = learn_parameters(data, PARENTS, estimator="em")  # EM copes
    assert np.allclose(net.cpts["D"].sum(axis=1), 1)


# -- the BayesianNetwork result ------------------------------------------------------------
def test_network_result(truth, codes):
    assert topological_order({"C": ("A", "B"), "B": ("A",), "A": ()}) == ["A", "B", "C"]
    assert truth.n_parameters() == 1 + 4 + 6 + 2
    p = truth.joint()
    assert p.shape == (24,) and p.sum() == pytest.approx(1.0)
    # sampling: the empirical joint is close to the true one (chi-square, 23 df)
    obs = np.bincount(np.ravel_multi_index(codes.T, (2, 3, 2, 2)), minlength=24)
    chi2 = np.sum((obs - 3000 * p) ** 2 / (3000 * p))
    assert chi2 < 49.7  # 99.9% quantile of chi2(23)
    assert truth.log_likelihood(codes) == pytest.approx(float(obs @ np.log(p)))
    net = learn_parameters(PramData.from_codes(_randomized(codes, 1), MATRICES, names=NODES),
                           PARENTS)  # fmt: skip
    again = BayesianNetwork.from_dict(net.to_dict())
    for n in NODES:
        np.testing.assert_array_equal(again.cpts[n], net.cpts[n])
        np.testing.assert_array_equal(again.sds[n], net.sds[n])
    df = net.to_pandas()
    assert len(df) == 2 + 6 + 12 + 4 and set(df.columns) >= {"node", "theta", "sd"}
    np.testing.assert_allclose(truth.thesis_row("C")[:6], [0.1, 0.5, 0.8, 0.3, 0.4, 0.9])
    with pytest.raises(ParameterError, match="not a distribution"):
        BayesianNetwork(nodes=("A",), parents={}, domains={"A": (0, 1)}, cpts={"A": [[0.5, 0.6]]})


def test_pgmpy_round_trip(truth):
    pytest.importorskip("pgmpy")
    warnings.filterwarnings("ignore", category=FutureWarning)
    model = truth.to_pgmpy()
    assert model.check_model()
    back = BayesianNetwork.from_pgmpy(model, nodes=NODES)
    for n in NODES:
        assert back.parents[n] == truth.parents[n]
        np.testing.assert_array_equal(back.cpts[n], truth.cpts[n])


def test_hinkley_density_is_a_density_and_near_normal():
    from scipy import integrate, stats

    from privlab.estimate.pram import hinkley_density

    w = np.linspace(-3, 4, 20001)
    f = hinkley_density(w, 2.0, 4.0, 1.0, 1.5, 0.3)  # mu2/sigma2 = 2.7: heavy tails
    assert integrate.trapezoid(f, w) == pytest.approx(1.0, abs=0.02)
    assert np.all(f >= 0)
    # with mu2 / sigma2 large the ratio is nearly normal with the delta-method sd
    mu1, mu2, s1, s2, rho = 1000.0, 2000.0, 40.0, 60.0, 0.5
    sd = np.sqrt(s1**2 - 2 * rho * s1 * s2 * mu1 / mu2 + s2**2 * mu1**2 / mu2**2) / mu2
    x = np.linspace(0.45, 0.55, 101)
    np.testing.assert_allclose(
        hinkley_density(x, mu1, mu2, s1, s2, rho), stats.norm.pdf(x, 0.5, sd), rtol=0.05, atol=0.05
    )
    with pytest.raises(ParameterError):
        hinkley_density(0.5, 1, 1, 0, 1)
