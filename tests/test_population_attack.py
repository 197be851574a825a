"""Threat model (a) on generalized releases: the attacker knows everyone's exact QIs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import gammaln

from attack_helpers import record_progress
from privlab.attacks.definetti import run_definetti
from privlab.attacks.population import covers, population_layout
from privlab.data import Table
from privlab.errors import ReleaseError
from privlab.publish import generalize


class _GeneralizedStub:
    """A release of local recoding stood in for by its published QIs and its partition."""

    method = "generalization"

    def __init__(self, qi, part):
        self.qi, self.part = qi, part

    def partition(self):
        return self.part

    def quasi_identifiers(self):
        return self.qi


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
    post = _weigh_total(people, options, m)
    return post / post.sum(axis=1, keepdims=True)


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


@pytest.mark.parametrize("signal", [False, True])
@pytest.mark.parametrize("sampler", ["blocked", "collapsed"])
def test_large_classes_by_swaps_match_the_enumeration(sampler, signal):
    """Classes of 14 exceed SHUFFLE_MAX: both samplers move them by pairwise swaps.  With
    ``signal`` the QI ``a`` marks the holders of q (and one other person per class), so the
    exact posterior is far from the class shares (0.64 against 0.88 for p) and a swap's
    acceptance ratio must weigh both members' scores the right way round."""
    from privlab.attacks._kernels import SHUFFLE_MAX

    g = np.random.default_rng(5)
    b = np.r_[np.arange(14), np.arange(20, 34)]
    a = np.where(g.random(28) < 0.5, "x", "y")
    s = np.array(["p"] * 28, dtype=object)
    s[[0, 3]] = "q"  # class 1: 2 of 14 hold q
    s[[15, 16, 20]] = "q"  # class 2: 3 of 14
    s[np.flatnonzero(a == "y")[:2]] = np.where(s[np.flatnonzero(a == "y")[:2]] == "q", "q", "p")
    if signal:
        a = np.where(s == "q", "y", "x")
        a[[5, 25]] = "y"
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


def test_overlapping_cells_make_membership_latent_and_match_the_enumeration():
    """Local recoding whose cells overlap: people who fit several classes may be in any of
    them; the sampler's posterior equals the enumeration of every filling of the classes
    and every within-class arrangement (collapsed Naive-Bayes weights)."""
    from privlab.data.partition import Partition
    from privlab.data.schema import Attribute

    cells = pd.DataFrame({"a": ["*"] * 6, "b": ["1-3", "1-3", "1-3", "2-4", "2-4", "3-5"]})
    group = np.array([0, 0, 0, 1, 1, 2])
    counts = np.array([[1, 1, 1], [0, 1, 1], [1, 0, 0]])  # p q r | q r | p
    part = Partition(group, counts, Attribute("s", ("p", "q", "r")), kind="classes")
    rel = _GeneralizedStub(Table.from_pandas(cells), part)
    people_df = pd.DataFrame({"a": ["x", "x", "y", "y", "x", "y"], "b": [1, 2, 3, 3, 4, 5]})
    people = Table.from_pandas(people_df.astype(str))
    pl = population_layout(rel, people, overlap=True)
    # classes of 3, 2 and 1 people fitting 1, 2 or 3 classes: the proposal's Hastings ratio
    # is not 1 (a sampler without it fails this test)
    assert pl.overlapping and list(np.diff(pl.fit_ptr)) == [1, 2, 3, 3, 2, 1]
    assert np.array_equal(np.bincount(pl.class_of), [3, 2, 1])
    assert list(pl.group_id()) == [0, -1, -1, -1, -1, 2]
    with pytest.raises(ReleaseError, match="fits 2 classes"):
        population_layout(rel, people)  # without overlap=True: refused as before
    # the enumeration: every membership filling the classes, every arrangement of each
    fit = [list(pl.fit_cls[pl.fit_ptr[i] : pl.fit_ptr[i + 1]]) for i in range(6)]
    options = []
    for member in itertools.product(*fit):
        member = np.array(member)
        if not np.array_equal(np.bincount(member, minlength=3), [3, 2, 1]):
            continue
        per_class = []
        for g in range(3):
            who = np.flatnonzero(member == g)
            vals = np.repeat(np.arange(3), counts[g])
            per_class.append([(who, p) for p in set(itertools.permutations(vals))])
        options.append(per_class)
    exact = sum(_weigh_total(people, o, 3) for o in options)
    exact = exact / exact.sum(axis=1, keepdims=True)
    for sampler in ("blocked", "collapsed"):
        run = run_definetti(rel, population=people, iterations=8000, chains=4, rng=5,
                            warn=False, sampler=sampler)  # fmt: skip
        post = run.posterior
        assert np.abs(post.probs - exact).max() < 0.03, (sampler, post.probs, exact)
        assert list(post.group_id) == [0, -1, -1, -1, -1, 2]
        d = post.diagnostics
        assert d["people_in_several_classes"] == 4 and 0 < d["membership_acceptance"] <= 1
        # every iteration's log-likelihood is recorded (a probability of the data below 1)
        assert run.loglik.shape == (4, 8000) and np.all(run.loglik < 0), sampler
        kept = run.loglik[:, d["burn_in"] :].mean(axis=1).round(3)
        assert d["loglik_mean_per_chain"] == kept.tolist()
    # membership matters: person 1 (b = 2) is not just class 0's or class 1's shares
    assert np.abs(exact[1] - [1 / 3, 1 / 3, 1 / 3]).max() > 0.05
    assert np.abs(exact[1] - [0, 0.5, 0.5]).max() > 0.05
    # only the iterations after the burn-in count: one kept draw gives one value a person
    one = run_definetti(rel, population=people, iterations=41, burn_in=40, chains=1, rng=2,
                        warn=False).posterior.probs  # fmt: skip
    assert set(np.unique(one).tolist()) <= {0.0, 1.0} and np.all(one.sum(axis=1) == 1.0)


def _weigh_total(people: Table, options: list, m: int) -> np.ndarray:
    """Unnormalized per-person value weights summed over the joint arrangements of
    ``options`` (as :func:`_weigh`, without normalizing, so memberships can be added)."""
    n = people.n_rows
    post = np.zeros((n, m))
    for combo in itertools.product(*options):
        s = np.empty(n, dtype=np.int64)
        for members, vals in combo:
            s[members] = vals
        ll = _dm(np.bincount(s, minlength=m))
        for j, k in enumerate(people.schema.sizes):
            for v in range(m):
                ll += _dm(np.bincount(people.codes[s == v, j], minlength=k))
        post[np.arange(n), s] += np.exp(ll)
    return post


def test_membership_moves_are_uniform_over_feasible_memberships_when_uninformative():
    """With every person of one QI combination the likelihood is flat: the membership chain
    must visit every filling of the classes equally often (the Hastings ratio of the
    two-route proposal; without it two of these eleven fillings get 20% too much)."""
    from privlab.attacks._membership import membership_moves

    fits = [[0], [0, 1], [0, 1, 2], [0, 1, 2], [0, 1, 2], [1, 2], [1, 2], [2]]
    sizes = np.array([4, 2, 2])
    fit_ptr = np.concatenate([[0], np.cumsum([len(f) for f in fits])]).astype(np.int64)
    fit_cls = np.array([c for f in fits for c in f], dtype=np.int64)
    feasible = [
        m for m in itertools.product(*fits) if np.array_equal(np.bincount(m, minlength=3), sizes)
    ]
    assert len(feasible) == 11
    person_at = np.argsort(feasible[0], kind="stable").astype(np.int64)
    pos_of = np.argsort(person_at).astype(np.int64)
    gtup_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    group_of_pos = np.repeat(np.arange(3), sizes).astype(np.int64)
    multi = np.flatnonzero(np.diff(fit_ptr) > 1).astype(np.int64)
    one = np.zeros(8, dtype=np.int64)
    gen = np.random.default_rng(0)
    seen = {m: 0 for m in feasible}
    draws = 100_000
    for _ in range(draws):
        membership_moves(gen, one, np.zeros((1, 1), dtype=np.int64), np.array([0, 1]),
                         np.ones(1), 1, gtup_ptr, group_of_pos, person_at, pos_of, fit_ptr,
                         fit_cls, multi, one, 3)  # fmt: skip
        seen[tuple(group_of_pos[pos_of])] += 1
    share = np.array(list(seen.values())) / draws * len(feasible)
    assert np.abs(share - 1).max() < 0.08, share


def test_membership_that_no_exchange_can_change_is_not_sampled():
    from privlab.attacks.population import PopulationLayout

    lay = object()
    # person 1 fits classes 0 and 1 but sits in 0, and nobody in 1 fits 0: fixed
    fixed = PopulationLayout(lay, np.array([0, 0, 1]), 3, np.array([0, 1, 3, 4]),
                             np.array([0, 0, 1, 1]))  # fmt: skip
    assert fixed.overlapping and not fixed.exchangeable()
    # person 2 (in class 1) fits 0 too: 1 and 2 can exchange
    free = PopulationLayout(lay, np.array([0, 0, 1]), 3, np.array([0, 1, 3, 5]),
                            np.array([0, 0, 1, 0, 1]))  # fmt: skip
    assert free.exchangeable()


def test_membership_acceptance_is_the_share_of_exchanges_accepted():
    """Six people with the same QIs, each fitting all three overlapping classes: the
    likelihood is flat and every membership is feasible, so every proposed exchange is
    accepted: the reported acceptance is exactly 1 (accepted / proposed, nothing more)."""
    release, people = _six_people_in_three_overlapping_classes()
    run = run_definetti(release, population=people, iterations=40, chains=2, rng=1, warn=False)
    d = run.posterior.diagnostics
    assert d["people_in_several_classes"] == 6
    assert d["membership_acceptance"] == 1.0


def _six_people_in_three_overlapping_classes():
    """The release and population of the acceptance test above and the tests below: six
    people with the same QIs, each fitting all three overlapping classes (membership is
    latent)."""
    from privlab.data.partition import Partition
    from privlab.data.schema import Attribute

    cells = pd.DataFrame({"b": ["1-3", "1-3", "1-3", "2-4", "2-4", "3-5"]})
    part = Partition(np.array([0, 0, 0, 1, 1, 2]), np.array([[1, 1, 1], [0, 1, 1], [1, 0, 0]]),
                     Attribute("s", ("p", "q", "r")), kind="classes")  # fmt: skip
    people = Table.from_pandas(pd.DataFrame({"b": ["3"] * 6}))
    return _GeneralizedStub(Table.from_pandas(cells), part), people


def test_latent_membership_progress_bar_counts_every_iteration(monkeypatch):
    """With latent membership the progress bar advances by exactly the iterations run:
    ``chains x iterations`` in all, in whole blocks of 500 (here 1,200 iterations: two
    blocks of 500 and the last 200, per chain)."""
    import privlab.attacks.definetti as definetti

    steps, totals = record_progress(monkeypatch, definetti)
    release, people = _six_people_in_three_overlapping_classes()
    run_definetti(release, population=people, iterations=1200, chains=2, rng=1, warn=False,
                  progress=True, workers=1)  # fmt: skip
    assert totals == [2400]
    assert sorted(steps) == [200, 200, 500, 500, 500, 500]
    assert all(type(n) is int for n in steps)


def test_latent_membership_alternate_sampler_takes_the_two_in_turn(monkeypatch):
    """``sampler="alternate"`` runs the blocked and the collapsed kernel in turn (even
    iterations blocked, odd collapsed), with latent membership as without."""
    import privlab.attacks.definetti as definetti

    calls = []
    for name, kernel in list(definetti.SAMPLERS.items()):

        def spy(*args, _name=name, _kernel=kernel):
            calls.append((_name, args[13]))  # args[13]: the iteration (it_start)
            return _kernel(*args)

        monkeypatch.setitem(definetti.SAMPLERS, name, spy)
    release, people = _six_people_in_three_overlapping_classes()
    run_definetti(release, population=people, iterations=40, chains=2, rng=1, warn=False,
                  sampler="alternate", workers=1)  # fmt: skip
    assert len(calls) == 80
    assert all(name == ("blocked" if it % 2 == 0 else "collapsed") for name, it in calls)
    assert sum(name == "blocked" for name, _ in calls) == 40


def test_definetti_attack_is_the_posterior_of_run_definetti(tiny):
    """``definetti_attack`` takes ``run_definetti``'s keywords and returns its pooled
    posterior: the same generator seed gives the same probabilities."""
    from privlab.attacks.definetti import definetti_attack

    df, rel = tiny
    people = Table.from_pandas(df[["a", "b"]])
    kw = dict(population=people, iterations=40, chains=2, warn=False, workers=1)
    post = definetti_attack(rel, rng=np.random.default_rng(7), **kw)
    run = run_definetti(rel, rng=np.random.default_rng(7), **kw)
    assert post.method == "definetti" and post.n_rows == len(df)
    np.testing.assert_array_equal(post.probs, run.posterior.probs)
    np.testing.assert_array_equal(post.group_id, run.posterior.group_id)
    assert "exact quasi-identifiers" in post.diagnostics["threat_model"]


def test_people_in_several_classes_that_no_exchange_can_move_are_counted():
    """Four people, two classes of two rows (b in 1-3, b in 3-5): the person with b = 3 fits
    both, but class 3-5 needs both people who fit it (b = 3 and b = 5), so no exchange can
    move anyone: membership is fixed and the diagnostics say one person fits several classes
    and no exchange was possible.  A run without a population has neither key.  (Before,
    the variable that counts these people was overwritten with the memory estimate in bytes,
    so every run reported that byte count.)"""
    from privlab.attacks.population import population_layout
    from privlab.data.partition import Partition
    from privlab.data.schema import Attribute

    cells = pd.DataFrame({"b": ["1-3", "1-3", "3-5", "3-5"]})
    part = Partition(np.array([0, 0, 1, 1]), np.array([[1, 1], [1, 1]]),
                     Attribute("s", ("p", "q")), kind="classes")  # fmt: skip
    release = _GeneralizedStub(Table.from_pandas(cells), part)
    people = Table.from_pandas(pd.DataFrame({"b": ["1", "2", "3", "5"]}))
    pl = population_layout(release, people, overlap=True)
    assert pl.overlapping and not pl.exchangeable()
    run = run_definetti(release, population=people, iterations=40, chains=2, rng=1, warn=False)
    d = run.posterior.diagnostics
    assert d["people_in_several_classes"] == 1
    assert d["membership_acceptance"] is None
    plain = run_definetti(release, iterations=40, chains=2, rng=1, warn=False)
    assert "people_in_several_classes" not in plain.posterior.diagnostics
    assert "membership_acceptance" not in plain.posterior.diagnostics
