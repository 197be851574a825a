"""Threat model (b) on generalized releases: flexible Bayes with the target's exact QIs."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privlab.attacks.flexible import exact_domain, flexible_attack
from privlab.attacks.population import covers
from privlab.data import Table
from privlab.data.counts import distinct_rows
from privlab.data.partition import Partition
from privlab.data.schema import Attribute
from privlab.errors import ParameterError, ReleaseError
from privlab.publish import generalize


@dataclass(frozen=True)
class _Stub:
    """A generalized release reduced to what the attacks read: cells and class counts."""

    qi: Table
    part: Partition
    method = "generalization"

    def partition(self) -> Partition:
        return self.part

    def quasi_identifiers(self) -> Table:
        return self.qi


def _stub(cells: pd.DataFrame, s: np.ndarray, m: int) -> _Stub:
    """Rows with published ``cells`` (strings) and sensitive codes ``s``: classes are the
    rows with the same cells."""
    qi = Table.from_pandas(cells.astype(str))
    _, group, _ = distinct_rows(qi.codes, qi.schema.sizes)
    counts = np.zeros((group.max() + 1, m), dtype=np.int64)
    np.add.at(counts, (group, s), 1)
    sens = Attribute("s", tuple(f"v{i}" for i in range(m)))
    return _Stub(qi, Partition(group, counts, sens, kind="classes"))


def _enumerate(rel: _Stub, x: dict[str, str], theta: dict[str, np.ndarray]) -> np.ndarray:
    """P(S_T | X_T = x) by brute force: every world of the rows' exact QIs inside their cells,
    each row's QIs drawn from theta given its value (conditioned on its cells), the target T
    uniform over the rows."""
    qi, part = rel.qi, rel.part
    names = list(qi.names)
    doms = {n: exact_domain(qi.schema[n].domain, [x[n]])[0] for n in names}
    s_of = np.empty(part.n_rows, dtype=np.int64)
    for g in range(part.n_groups):  # the rows of class g hold its values in some order
        s_of[np.flatnonzero(part.group_of == g)] = np.repeat(np.arange(part.counts.shape[1]),
                                                             part.counts[g])  # fmt: skip
    options = []  # per row: the exact QI tuples its cells allow, with their weights
    for r in range(part.n_rows):
        per_attr = []
        for n in names:
            cell = qi.decode(n)[r]
            vals = [i for i, v in enumerate(doms[n]) if covers(cell, v)]
            t = theta[n][s_of[r]]
            per_attr.append([(i, t[i] / t[vals].sum()) for i in vals])
        options.append(
            [(tuple(v for v, _ in combo), float(np.prod([w for _, w in combo])))
             for combo in itertools.product(*per_attr)]
        )  # fmt: skip
    target = tuple(doms[n].index(x[n]) for n in names)
    post = np.zeros(part.counts.shape[1])
    for world in itertools.product(*options):
        w = float(np.prod([wi for _, wi in world]))
        for r, (vals, _) in enumerate(world):
            if vals == target:
                post[s_of[r]] += w / part.n_rows
    return post / post.sum()


@pytest.fixture(scope="module")
def overlapping():
    """Six rows, one nominal and one ordered QI, cells that overlap (local recoding)."""
    cells = pd.DataFrame(
        {
            "a": ["x", "*", "x", "y", "*", "y"],
            "b": ["1-2", "1-2", "2-4", "2-4", "3-4", "4"],
        }
    )
    s = np.array([0, 1, 1, 2, 0, 2])
    return _stub(cells, s, 3)


def test_posterior_equals_the_enumeration_with_given_parameters(overlapping):
    rel = overlapping
    rng = np.random.default_rng(7)
    theta = {
        "a": rng.dirichlet(np.ones(2), size=3),
        "b": rng.dirichlet(np.ones(4), size=3),
    }
    targets = pd.DataFrame({"a": ["x", "y", "x", "y"], "b": ["2", "4", "3", "2"]})
    post = flexible_attack(rel, Table.from_pandas(targets), theta=theta)
    for i, row in targets.iterrows():
        exact = _enumerate(rel, dict(row), theta)
        assert np.abs(post.probs[i] - exact).max() < 1e-10
    # x = (x, 2) fits the cells (x, 1-2), (*, 1-2) and (x, 2-4): several classes
    assert post.group_id[0] == -1
    assert post.threat_model.startswith("the attacker knows the target's exact")


def test_a_flat_model_is_random_worlds_on_global_recoding():
    df = pd.DataFrame(
        {"a": ["x", "x", "y", "x", "y", "y", "x", "y", "x"], "b": [1, 2, 2, 3, 4, 4, 5, 6, 6],
         "s": ["p", "q", "p", "q", "q", "r", "p", "r", "r"]}
    )  # fmt: skip
    rel = generalize(df, qi=["a", "b"], sensitive="s", k=3)
    people = Table.from_pandas(df[["a", "b"]])
    part = rel.partition()
    doms = [exact_domain(rel.quasi_identifiers().schema[n].domain, df[n]) for n in ("a", "b")]
    flat = {n: np.full((3, len(d)), 1 / len(d)) for n, (d, _) in zip(("a", "b"), doms)}
    post, base = flexible_attack(rel, people, theta=flat, return_baseline=True)
    # the published row i is person i: its class's shares
    shares = part.counts[part.group_of] / part.sizes()[part.group_of, None]
    assert np.allclose(post.probs, shares, atol=1e-12)
    assert np.allclose(base.probs, shares, atol=1e-12)
    assert np.array_equal(post.group_id, part.group_of)
    assert base.method == "random-worlds"


def _kifer_release(seed: int = 0):
    """Kifer's Sec. 5.2 example: classes [16-45], [46-50], [51-55]; heart disease (value 1)
    frequent in the two older classes, one case among the three of [16-45]."""
    rng = np.random.default_rng(seed)
    cells, s = [], []
    for lo, hi, n, rate in ((46, 50, 40, 0.6), (51, 55, 40, 0.7)):
        cells += [f"{lo}-{hi}"] * n
        s += list((rng.random(n) < rate).astype(int))
    for lo, hi in ((16, 25), (26, 35)):  # younger classes: no disease
        cells += [f"{lo}-{hi}"] * 20
        s += [0] * 20
    cells += ["36-45"] * 3
    s += [1, 0, 0]
    return _stub(pd.DataFrame({"age": cells}), np.array(s), 2)


def test_kifers_45_year_old_is_judged_likelier_than_his_younger_classmates():
    rel = _kifer_release()
    targets = Table.from_pandas(pd.DataFrame({"age": ["45", "36"]}))
    post = flexible_attack(rel, targets)
    p45, p36 = post.probs[:, 1]
    assert p45 > 1 / 3 + 0.05 and p36 < 1 / 3 - 0.05  # random worlds: 1/3 for both
    assert post.diagnostics["bandwidths"]["age"] > 0 and post.diagnostics["converged"]
    # without the kernel the model cannot tell the ages of one class apart
    flat = flexible_attack(rel, targets, bandwidth=0.0)
    assert flat.probs[0, 1] == pytest.approx(1 / 3) and flat.probs[1, 1] == pytest.approx(1 / 3)


def test_em_recovers_the_parameters_from_coarsened_cells():
    """Cells placed at random around the true value (coarsened at random) identify theta."""
    rng = np.random.default_rng(1)
    n, m = 30_000, 2
    theta_b = np.array([[0, 0, 0.4, 0.3, 0.1, 0.1, 0.05, 0.05, 0, 0],
                        [0, 0, 0.05, 0.05, 0.1, 0.1, 0.3, 0.4, 0, 0]])  # fmt: skip
    theta_a = np.array([[0.8, 0.2], [0.3, 0.7]])
    s = rng.integers(0, m, n)
    b = np.array([rng.choice(10, p=theta_b[v]) for v in s])
    a = np.array([rng.choice(2, p=theta_a[v]) for v in s])
    lo = b - rng.integers(0, 3, n)
    cells = pd.DataFrame(
        {
            "a": np.where(rng.random(n) < 0.5, "*", np.array(["x", "y"])[a]),
            "b": [f"{u}-{u + 2}" for u in lo],
        }
    )
    rel = _stub(cells, s, m)
    targets = Table.from_pandas(pd.DataFrame({"a": ["x"], "b": ["5"]}))
    from privlab.attacks.flexible import fit_flexible

    model, _ = fit_flexible(rel, targets, bandwidth=0.0, prior=1e-6)
    assert model.converged and model.ordered == (False, True)
    learned_b = model.theta[1]
    assert model.domains[1] == tuple(str(i) for i in range(10))
    assert 0.5 * np.abs(learned_b - theta_b).sum(axis=1).max() < 0.05
    assert 0.5 * np.abs(model.theta[0] - theta_a).sum(axis=1).max() < 0.03
    # a 30% wrong model is rejected: farther from the learned one than the truth is
    wrong = 0.7 * theta_b + 0.3 * theta_b[::-1]
    assert np.abs(learned_b - wrong).sum() > 3 * np.abs(learned_b - theta_b).sum()


def test_exact_domain_reads_ranges_sets_and_hierarchies():
    from privlab.data.hierarchy import Hierarchy

    dom, ordered = exact_domain(["17", "18-20", "[21, 23)", "*"], ["40"])
    assert ordered and dom == ("17", "18", "19", "20", "21", "22", "40")
    h = Hierarchy("w", (("Private", "Non-Gov", "*"), ("Local", "Gov", "*"), ("State", "Gov", "*")))
    dom, ordered = exact_domain(["Gov", "Private", "{A, B}"], [], h)
    assert not ordered and dom == ("A", "B", "Local", "Private", "State")


def test_bad_input_is_refused_in_one_line(overlapping):
    rel = overlapping
    with pytest.raises(ReleaseError, match="lack the quasi-identifier 'b'"):
        flexible_attack(rel, Table.from_pandas(pd.DataFrame({"a": ["x"]})))
    with pytest.raises(ReleaseError, match=r"target 0 \(a = y, b = 5\) fits no class"):
        flexible_attack(rel, Table.from_pandas(pd.DataFrame({"a": ["y"], "b": ["5"]})))
    t = Table.from_pandas(pd.DataFrame({"a": ["x"], "b": ["2"]}))
    for bad in (-1.0, float("nan"), "wide"):
        with pytest.raises(ParameterError, match="bandwidth"):
            flexible_attack(rel, t, bandwidth=bad)
    with pytest.raises(ParameterError, match="theta lacks"):
        flexible_attack(rel, t, theta={"a": np.full((3, 2), 0.5)})


def test_an_anatomy_release_is_refused():
    from privlab.publish import anatomize

    df = pd.DataFrame({"a": list("xyxyxy"), "s": list("pqrpqr")})
    rel = anatomize(df, qi=["a"], sensitive="s", l=2, rng=0)
    with pytest.raises(ReleaseError, match="for generalized releases"):
        flexible_attack(rel, Table.from_pandas(df[["a"]]))


@settings(max_examples=40, deadline=None)
@given(
    lo=st.lists(st.integers(0, 6), min_size=3, max_size=12),
    s=st.lists(st.integers(0, 2), min_size=12, max_size=12),
    x=st.integers(0, 8),
    h=st.sampled_from([0.0, 0.7, "auto"]),
)
def test_invariants(lo, s, x, h):
    """Rows sum to 1, and a value no covering class holds has probability 0."""
    n = len(lo)
    cells = pd.DataFrame({"b": [f"{u}-{u + 2}" for u in lo]})
    rel = _stub(cells, np.array(s[:n]), 3)
    inside = [i for i, u in enumerate(lo) if u <= x <= u + 2]
    targets = Table.from_pandas(pd.DataFrame({"b": [str(x)]}))
    if not inside:
        with pytest.raises(ReleaseError, match="fits no class"):
            flexible_attack(rel, targets, bandwidth=h, warn=False)
        return
    post = flexible_attack(rel, targets, bandwidth=h, warn=False).probs[0]
    assert post.sum() == pytest.approx(1.0)
    held = {s[i] for i in inside}
    assert all(post[v] == 0 for v in range(3) if v not in held)
    assert all(post[v] > 0 for v in held)


def test_cli_attack_flexible_and_evaluate(cli, tmp_path):
    import json

    from privlab.attacks.posterior import Posterior

    g = np.random.default_rng(1)
    n = 600
    age = g.integers(20, 70, n)
    s = np.where(g.random(n) < np.clip((age - 20) / 50, 0.02, 0.98), "q", "p")
    pd.DataFrame({"a": g.choice(list("xy"), n), "age": age, "s": s}).to_csv(
        tmp_path / "people.csv", index=False
    )
    r = cli("generalize", tmp_path / "people.csv", "--qi", "a,age", "--sensitive", "s",
            "--k", "20", "--method", "mondrian", "--out", tmp_path / "gen")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = cli("attack", "flexible", tmp_path / "gen", "--targets", tmp_path / "people.csv",
            "--baseline", tmp_path / "rw.csv", "--out", tmp_path / "p.csv")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "EM converged" in r.stdout and "threat model: the attacker knows the target" in r.stdout
    post, base = Posterior.load(tmp_path / "p.csv"), Posterior.load(tmp_path / "rw.csv")
    assert post.n_rows == base.n_rows == n and post.method == "flexible-bayes"
    assert post.release_kind == "generalization" and base.method == "random-worlds"
    scores = {}
    for name in ("p", "rw"):
        r = cli("evaluate", tmp_path / f"{name}.csv", "--truth", tmp_path / "people.csv",
                "--json", tmp_path / f"{name}.json")  # fmt: skip
        assert r.returncode == 0, r.stderr
        scores[name] = json.loads((tmp_path / f"{name}.json").read_text())
    # the kernel learns that older people hold q more often, inside the published ranges: a
    # better squared error (Brier) than the class shares
    assert scores["p"]["ssq"] < scores["rw"]["ssq"]
    # bad input: one line, nothing written
    for args, needle in (
        (("--bandwidth", "-1"), "--bandwidth must be"),
        (("--baseline", tmp_path / "q.csv", "--out", tmp_path / "q.csv"), "same file"),
    ):
        out = () if "--out" in args else ("--out", tmp_path / "bad.csv")
        r = cli("attack", "flexible", tmp_path / "gen", "--targets", tmp_path / "people.csv",
                *args, *out)  # fmt: skip
        assert r.returncode == 2 and needle in r.stderr, r.stderr
        assert not (tmp_path / "bad.csv").exists() and not (tmp_path / "q.csv").exists()
    pd.DataFrame({"a": ["x"], "age": [99]}).to_csv(tmp_path / "other.csv", index=False)
    r = cli("attack", "flexible", tmp_path / "gen", "--targets", tmp_path / "other.csv",
            "--out", tmp_path / "bad.csv")  # fmt: skip
    assert r.returncode == 2 and "fits no class" in r.stderr
    assert not (tmp_path / "bad.csv").exists()
