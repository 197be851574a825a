"""K2 structure learning from PRAM data (Ma 2006, Sec. 5.5): privlab.learn.pram_k2."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from privlab.errors import ParameterError, SchemaError
from privlab.experiments._bn_networks import FIG_5_3
from privlab.learn.pram_bn import PramData, estimate_family
from privlab.learn.pram_k2 import (
    k2_search,
    learn_network_k2,
    local_score,
    structure_errors,
    variable_eta,
)
from privlab.publish.randomization import binary_symmetric_matrix, randomize_codes

NODES = FIG_5_3.nodes


@pytest.fixture(scope="module")
def codes() -> np.ndarray:
    return FIG_5_3.sample(4000, rng=21)


@pytest.fixture(scope="module")
def plain(codes) -> PramData:
    return PramData.from_codes(codes, names=NODES, sizes=[2] * 6)


def _pgmpy_scores(codes):
    pytest.importorskip("pgmpy")
    import pandas as pd

    warnings.filterwarnings("ignore", category=FutureWarning)
    from pgmpy.structure_score import BIC, K2

    df = pd.DataFrame(codes, columns=NODES)
    return K2(df), BIC(df)


def test_local_scores_at_p0_equal_pgmpy(codes, plain):
    """Every parent configuration is observed here: pgmpy 1.1.2's K2 adds lnG(K_i) for each
    unobserved configuration (it drops their counts but not their lnG(K_i) term), where the
    BD formula gives 0; for binary children (lnG(2) = 0) the two agree regardless."""
    k2, bic = _pgmpy_scores(codes)
    for node, parents in [("A", ()), ("D", ("B", "C")), ("F", ("A", "D", "E")), ("C", ("B",))]:
        counts = estimate_family(plain, node, parents).counts
        assert local_score(counts, score="k2") == pytest.approx(
            k2.local_score(node, parents), rel=1e-12
        )
        assert local_score(counts, score="bic", n=len(codes)) == pytest.approx(
            bic.local_score(node, parents), rel=1e-12
        )


def test_k2_search_equals_brute_force_over_pgmpy_scores(codes, plain):
    """At p = 0, u = 2: K2's greedy search, privlab's exhaustive search and a brute force over
    every parent set of size <= u scored by pgmpy agree (order A..F)."""
    k2, _ = _pgmpy_scores(codes)
    brute = {}
    for i, node in enumerate(NODES):
        sets = [s for r in range(3) for s in itertools.combinations(NODES[:i], r)]
        brute[node] = max(sets, key=lambda s, n=node: k2.local_score(n, s))
    greedy = k2_search(plain, max_parents=2)
    exhaustive = k2_search(plain, max_parents=2, search="exhaustive")
    assert {n: set(p) for n, p in greedy.parents.items()} == {n: set(p) for n, p in brute.items()}
    assert exhaustive.parents == {n: tuple(p) for n, p in brute.items()}
    assert greedy.parents == {n: tuple(FIG_5_3.parents[n]) for n in NODES}  # the truth
    assert exhaustive.score == pytest.approx(greedy.score)


def test_bic_search_and_penalty(plain):
    res = k2_search(plain, max_parents=3, score="bic")
    assert structure_errors(res.parents, FIG_5_3.parents)["errors"] == 0
    # an absurd penalty forbids every link
    none = k2_search(plain, max_parents=3, score="bic", penalty=1e6)
    assert all(p == () for p in none.parents.values())


def test_eta_rules(plain):
    assert [variable_eta(p) for p in (0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.45)] == [
        1.0, 0.99, 0.99, 0.98, 0.98, 0.97, 0.96, 0.94,
    ]  # fmt: skip
    base = k2_search(plain, max_parents=3)
    # relative rule: eta = 0.5 demands halving |score|: no link survives
    strict = k2_search(plain, max_parents=3, eta=0.5)
    assert all(p == () for p in strict.parents.values())
    assert k2_search(plain, max_parents=3, eta=0.999, eta_rule="product").parents == base.parents
    assert k2_search(plain, max_parents=3, eta="variable", p=0.0).parents == base.parents
    # an accepted step satisfies the rule, a rejected one does not
    res = k2_search(plain, max_parents=3, eta=0.99)
    for s in res.steps:
        assert s["accepted"] == (s["new"] - s["old"] > 0.01 * abs(s["old"]))


def test_randomized_k2_recovers_the_structure_with_eta(codes):
    rng = np.random.default_rng(4)
    m = binary_symmetric_matrix(0.1)
    y = np.column_stack([randomize_codes(codes[:, i], m, rng) for i in range(6)])
    data = PramData.from_codes(y, dict.fromkeys(NODES, m), names=NODES)
    res, net = learn_network_k2(data, max_parents=3, eta="variable", p=0.1)
    err = structure_errors(res.parents, FIG_5_3.parents)
    assert err["missing"] == 0 and err["extra"] <= 1
    assert set(net.edges) == set(res.edges)


def test_bad_input(plain):
    with pytest.raises(ParameterError, match="max parents must be an integer >= 0, got -1"):
        k2_search(plain, max_parents=-1)
    with pytest.raises(SchemaError, match="'Z'"):
        k2_search(plain, order=["A", "Z"])
    with pytest.raises(ParameterError, match="needs the randomization level"):
        k2_search(plain, eta="variable")
    with pytest.raises(ParameterError, match="unknown score"):
        k2_search(plain, score="aic")
    with pytest.raises(ParameterError, match="outside"):
        k2_search(plain, eta=1.5)
