"""Threat model (a) on generalized releases: the attacker knows everyone's exact QIs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import gammaln

from privlab.attacks.definetti import run_definetti
from privlab.attacks.population import covers, population_layout
from privlab.data import Table
from privlab.errors import ReleaseError
from privlab.publish import generalize


def test_covers_reads_the_usual_cells():
    assert covers("*", "anything") and covers("17", 17) and not covers("17", 18)
    assert covers("10-19", 19) and not covers("10-19", 20) and covers("[20, 30)", 29.5)
    assert not covers("[20, 30)", 30) and covers("[20, 30]", 30)
    assert covers("{x, y}", "y") and not covers("{x, y}", "z")
    assert covers("Government", "Local-gov", {"Local-gov": {"Government", "*"}})
    assert not covers("Government", "Private", {"Private": {"Non-Government", "*"}})


@pytest.fixture(scope="module")
def tiny():
    """Nine people, two QIs, a 3-anonymous generalization into classes of 3."""
    df = pd.DataFrame(
        {
            "a": ["x", "x", "y", "x", "y", "y", "x", "y", "x"],
            "b": [1, 2, 2, 3, 4, 4, 5, 6, 6],
            "s": ["p", "q", "p", "q", "q", "r", "p", "r", "r"],
        }
    )
    rel = generalize(df, qi=["a", "b"], sensitive="s", k=3)
    return df, rel


def _oracle(people: Table, class_of: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Exact posterior: every within-class assignment of each class's values, weighted by
    the collapsed Naive-Bayes likelihood (Dirichlet(1) priors integrated out)."""
    m = counts.shape[1]
    options = []
    for g in range(counts.shape[0]):
        members = np.flatnonzero(class_of == g)
        values = np.repeat(np.arange(m), counts[g])
        options.append([(members, p) for p in set(itertools.permutations(values))])
    return _weigh(people, options, m)


def _weigh(people: Table, options: list, m: int) -> np.ndarray:
    """Marginals of the joint assignments (one option per class) weighted by the collapsed
    Naive-Bayes likelihood (Dirichlet(1) priors integrated out)."""
    n = people.n_rows
    logs, assigns = [], []
    for combo in itertools.product(*options):
        s = np.empty(n, dtype=np.int64)
        for members, vals in combo:
            s[members] = vals
        ll = _dm(np.bincount(s, minlength=m))
        for j, k in enumerate(people.schema.sizes):
            for v in range(m):
                ll += _dm(np.bincount(people.codes[s == v, j], minlength=k))
        logs.append(ll)
        assigns.append(s)
    w = np.exp(np.array(logs) - max(logs))
    post = np.zeros((n, m))
    for wi, s in zip(w, assigns):
        post[np.arange(n), s] += wi
    return post / w.sum()


def _dm(counts: np.ndarray) -> float:
    """log Dirichlet-multinomial marginal of counts under a symmetric Dirichlet(1)."""
    a = np.ones(counts.size)
    return float(
        gammaln(a.sum())
        - gammaln(a.sum() + counts.sum())
        + (gammaln(a + counts) - gammaln(a)).sum()
    )


def test_population_posterior_equals_the_enumeration(tiny):
    df, rel = tiny
    people = Table.from_pandas(df[["a", "b"]])
    pl = population_layout(rel, people)
    part = rel.partition()
    assert np.array_equal(np.bincount(pl.class_of), part.sizes())
    exact = _oracle(people, pl.class_of, part.counts)
    run = run_definetti(rel, population=people, iterations=6000, chains=4, rng=3, warn=False)
    assert run.posterior.n_rows == len(df)
    assert np.array_equal(run.posterior.group_id, pl.class_of)
    assert np.abs(run.posterior.probs - exact).max() < 0.03
    assert "exact quasi-identifiers" in run.posterior.diagnostics["threat_model"]
    # the attack learns: a person's posterior is not just the class's shares
    shares = part.counts[pl.class_of] / part.sizes()[pl.class_of, None]
    assert np.abs(exact - shares).max() > 0.05


def test_a_population_that_is_not_the_releases_is_refused(tiny):
    df, rel = tiny
    with pytest.raises(ReleaseError, match="lacks the quasi-identifier 'b'"):
        population_layout(rel, Table.from_pandas(df[["a"]]))
    other = df[["a", "b"]].copy()
    other.loc[0, "b"] = 99  # in no published range
    with pytest.raises(ReleaseError, match=r"person 0 .* fits no class"):
        population_layout(rel, Table.from_pandas(other))
    more = pd.concat([df[["a", "b"]], df[["a", "b"]].iloc[:1]], ignore_index=True)
    with pytest.raises(ReleaseError, match="published rows but"):
        population_layout(rel, Table.from_pandas(more))


def test_hierarchy_labels_are_read_through_the_hierarchy():
    from privlab.data.datasets import load_adult
    from privlab.data.default_hierarchies import dataset_hierarchies

    t = load_adult()
    df = t.to_pandas().iloc[:3000]
    rel = generalize(df, qi=["age", "workclass", "sex"], sensitive="occupation", k=20,
                     dataset="adult")  # fmt: skip
    labels = set(rel.table.decode("workclass"))
    people = Table.from_pandas(df[["age", "workclass", "sex"]])
    if labels - {"*"} - set(df["workclass"]):  # hierarchy group names are published
        with pytest.raises(ReleaseError):
            population_layout(rel, people)
    pl = population_layout(rel, people, hierarchies=dataset_hierarchies("adult"))
    assert pl.n_people == 3000 and math.isclose(pl.layout.n_rows, 3000)


def _oracle_two_values(people: Table, class_of: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Exact posterior when every class holds at most two distinct values: each class's
    assignments are the choices of its minority value's positions."""
    m = counts.shape[1]
    options = []
    for g in range(counts.shape[0]):
        members = np.flatnonzero(class_of == g)
        held = np.flatnonzero(counts[g])
        major, minor = (held[0], held[-1]) if counts[g, held[0]] >= counts[g, held[-1]] else (
            held[-1], held[0])  # fmt: skip
        opts = []
        for pos in itertools.combinations(range(members.size), int(counts[g, minor])):
            vals = np.full(members.size, major)
            vals[list(pos)] = minor
            opts.append((members, vals))
        options.append(opts)
    return _weigh(people, options, m)


@pytest.mark.parametrize("sampler", ["blocked", "collapsed"])
def test_large_classes_by_swaps_match_the_enumeration(sampler):
    """Classes of 14 exceed SHUFFLE_MAX: both samplers move them by pairwise swaps."""
    from privlab.attacks._kernels import SHUFFLE_MAX

    g = np.random.default_rng(5)
    b = np.r_[np.arange(14), np.arange(20, 34)]
    a = np.where(g.random(28) < 0.5, "x", "y")
    s = np.array(["p"] * 28, dtype=object)
    s[[0, 3]] = "q"  # class 1: 2 of 14 hold q
    s[[15, 16, 20]] = "q"  # class 2: 3 of 14
    s[np.flatnonzero(a == "y")[:2]] = np.where(s[np.flatnonzero(a == "y")[:2]] == "q", "q", "p")
    df = pd.DataFrame({"a": a, "b": b, "s": s})
    rel = generalize(df, qi=["a", "b"], sensitive="s", k=14)
    people = Table.from_pandas(df[["a", "b"]])
    pl = population_layout(rel, people)
    sizes = rel.partition().sizes()
    assert sizes.min() > SHUFFLE_MAX
    exact = _oracle_two_values(people, pl.class_of, rel.partition().counts)
    run = run_definetti(rel, population=people, iterations=20_000, chains=2, rng=4,
                        sampler=sampler, warn=False)  # fmt: skip
    assert run.posterior.diagnostics["mh_groups"] == sizes.size
    assert np.abs(run.posterior.probs - exact).max() < 0.03
