"""The Anonymeter adapter: Anonymeter's own evaluator, run with a privlab posterior as its
attacker, counts exactly privlab's argmax hits on the release's members and the
reconstruction's hits on the control set (worked out by hand on a tiny table)."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from attack_helpers import synthetic_release
from privlab.attacks import Posterior, definetti_attack
from privlab.attacks.anonymeter import (
    PosteriorPredictor,
    anonymeter_knn_risk,
    anonymeter_risk,
    labels_like,
    random_world,
    targets_frame,
)
from privlab.errors import MissingDependencyError, ParameterError, PrivlabError

QI = ["q0", "q1", "q2"]


@pytest.fixture
def anonymeter():
    return pytest.importorskip("anonymeter")


@pytest.fixture(scope="module")
def small():
    """A small Anatomy release (l = 2), its deFinetti posterior, and other people of the
    same population as the control set."""
    rel = synthetic_release(300, 2, seed=3)
    post = definetti_attack(rel, iterations=300, chains=1, rng=0, warn=False)
    control = targets_frame(synthetic_release(200, 2, seed=4))
    return rel, post, control


# -- a tiny table worked out by hand --------------------------------------------------------------
#   row  qi    P(a)  P(b)  P(c)   argmax
#    0   u,1   0.6   0.4   0.0    a
#    1   u,1   0.0   0.7   0.3    b
#    2   v,1   0.5   0.5   0.0    a (tie: the first value)
#    3   v,2   0.0   0.1   0.9    c
#    4   w,1   0.2   0.3   0.5    c
# summed by combination: (u,1) a .6 b 1.1 c .3 -> b;  (v,1) a .5 b .5 -> a (tie);  (v,2) -> c;
# (w,1) -> c;  over all rows: a 1.3, b 2.0, c 1.7 -> b for an unseen combination.
TINY_PROBS = [
    [0.6, 0.4, 0.0],
    [0.0, 0.7, 0.3],
    [0.5, 0.5, 0.0],
    [0.0, 0.1, 0.9],
    [0.2, 0.3, 0.5],
]


def _tiny():
    post = Posterior(np.array(TINY_PROBS), np.array([0, 0, 1, 1, 2]), ("a", "b", "c"))
    ori = pd.DataFrame(
        {"x": ["u", "u", "v", "v", "w"], "y": [1, 1, 1, 2, 1], "s": ["a", "c", "b", "c", "c"]}
    )
    control = pd.DataFrame(
        {
            "x": ["u", "v", "v", "w", "w", "z"],
            "y": [1, 1, 2, 1, 2, 1],
            "s": ["b", "b", "c", "a", "b", "b"],
        }
    )
    return post, ori, control


CONTROL_BY_HAND = ["b", "a", "c", "c", "b", "b"]  # (u,1) (v,1) (v,2) (w,1) unseen unseen


def test_predictor_on_the_tiny_table_by_hand():
    post, ori, control = _tiny()
    pred = PosteriorPredictor(post, ori[["x", "y"]])
    assert pred.predict(ori).tolist() == ["a", "b", "a", "c", "c"]
    outsiders = control.set_axis(range(100, 106))  # labels that name no posterior row
    assert pred.predict(outsiders).tolist() == CONTROL_BY_HAND
    mixed = pd.concat([outsiders.iloc[:2], ori.iloc[[3]]])
    got = pred.predict(mixed)
    assert got.index.equals(mixed.index) and got.tolist() == ["b", "a", "c"]
    # QIs match by their text, as privlab's encoding does (1 == "1" == 1.0)
    as_text = outsiders.assign(y=outsiders["y"].astype(float))
    assert pred.predict(as_text).tolist() == CONTROL_BY_HAND


def test_anonymeter_counts_the_hand_worked_control(anonymeter):
    post, ori, control = _tiny()
    res = anonymeter_risk(post, ori, control, ["x", "y"], "s", n_attacks=10, rng=0)
    assert res.n_attacks == (5, 5, 6)
    # members: argmax a, b, a, c, c against truth a, c, b, c, c -> 3 hits
    assert res.n_success == 3
    assert res.guesses.sort_index().tolist() == ["a", "b", "a", "c", "c"]
    # control: by hand b, a, c, c, b, b against truth b, b, c, a, b, b -> 4 hits
    assert res.control_guesses.index.isin(control.index).all()  # the control's own labels
    assert res.control_guesses.sort_index().tolist() == CONTROL_BY_HAND
    assert res.n_control == 4
    r = res.attack_rate, res.control_rate
    want = (r[0].value - r[1].value) / (1 - r[1].value)
    assert res.residual[0] == pytest.approx(want)
    assert res.risk.value == pytest.approx(min(max(want, 0.0), 1.0))


def test_anonymeter_counts_privlab_argmax_hits_on_a_release(anonymeter, small):
    rel, post, control = small
    ori = targets_frame(rel)
    hits = post.probs.argmax(axis=1) == rel.truth
    # every member attacked: no sampling can matter
    res = anonymeter_risk(post, ori, control, QI, "s", n_attacks=len(ori), rng=1)
    assert res.n_attacks[0] == rel.n_rows and res.n_success == int(hits.sum())
    want = np.asarray(post.values, dtype=object)[post.probs.argmax(axis=1)]
    assert res.guesses.sort_index().tolist() == want.tolist()
    # a sample: the same count over the targets Anonymeter drew
    res = anonymeter_risk(post, ori, control, QI, "s", n_attacks=120, rng=2)
    assert res.n_attacks == (120, 120, 120)
    assert res.n_success == int(hits[res.guesses.index.to_numpy()].sum())
    # the control: the reconstruction, computed here with pandas
    frame = pd.DataFrame(post.probs, columns=list(post.values))
    summed = frame.groupby([ori[c] for c in QI]).sum()
    rule = summed.idxmax(axis=1)
    overall = frame.sum().idxmax()
    drawn = control.loc[res.control_guesses.index]
    expect = [rule.get(tuple(r), overall) for r in drawn[QI].itertuples(index=False)]
    assert res.control_guesses.tolist() == expect
    assert res.n_control == int((drawn["s"].to_numpy() == np.array(expect)).sum())
    # seeded: the same targets again, and numpy's global generator left as it was
    state = np.random.get_state()[1].copy()  # noqa: NPY002
    again = anonymeter_risk(post, ori, control, QI, "s", n_attacks=120, rng=2)
    assert again.guesses.index.equals(res.guesses.index)
    assert np.array_equal(np.random.get_state()[1], state)  # noqa: NPY002


def test_fallback_predicts_the_outsiders_only(anonymeter):
    post, ori, control = _tiny()

    class Constant:
        def predict(self, x):
            return pd.Series("c", index=x.index[::-1])  # any order: aligned by label

    res = anonymeter_risk(
        post, ori, control, ["x", "y"], "s", n_attacks=10, rng=0, fallback=Constant()
    )
    assert res.n_success == 3 and set(res.control_guesses) == {"c"}


def test_labels_keep_the_secret_columns_type(anonymeter):
    post = Posterior(np.array(TINY_PROBS), np.array([0, 0, 1, 1, 2]), ("1", "2", "3"))
    _, ori, control = _tiny()
    codes = {"a": 1, "b": 2, "c": 3}
    ori, control = (f.assign(s=f["s"].map(codes).astype(np.int64)) for f in (ori, control))
    res = anonymeter_risk(post, ori, control, ["x", "y"], "s", n_attacks=10, rng=0)
    assert res.guesses.dtype == np.int64 and (res.n_success, res.n_control) == (3, 4)
    cat = pd.Series(["b", "a"], dtype="category")
    assert labels_like(("a", "b"), cat).dtype == cat.dtype
    assert labels_like(("a", "zz"), cat).tolist() == ["a", "zz"]  # not a category: object


def test_knn_and_random_world(anonymeter, small):
    rel, _, control = small
    world = random_world(rel, 0)
    counts = pd.crosstab(rel.group_id, world["s"]).reindex(columns=rel.sensitive.domain)
    assert np.array_equal(counts.fillna(0).to_numpy(), rel.group_counts())
    res = anonymeter_knn_risk(targets_frame(rel), world, control, QI, "s", n_attacks=50, rng=0)
    assert res.n_attacks == (50, 50, 50) and 0 <= res.risk.value <= 1


def test_bad_input():
    post, ori, control = _tiny()
    pred = PosteriorPredictor(post, ori[["x", "y"]])
    with pytest.raises(ParameterError, match="must not reuse the release's labels"):
        pred.predict(control)  # labels 0..5 name posterior rows, but the QIs differ
    with pytest.raises(ParameterError, match="needs the release's quasi-identifiers"):
        PosteriorPredictor(post).predict(control.set_axis(range(10, 16)))
    with pytest.raises(ParameterError, match="posterior row 7"):
        PosteriorPredictor(post, rows={"p": 7})
    with pytest.raises(ParameterError, match="qi has 2 rows"):
        PosteriorPredictor(post, ori[["x", "y"]].head(2))
    with pytest.raises(PrivlabError, match="no column 'nope'"):
        anonymeter_risk(post, ori, control, ["x", "nope"], "s")
    with pytest.raises(ParameterError, match="ori holds 3 of the release's 5 rows"):
        anonymeter_risk(post, ori.head(3), control, ["x", "y"], "s")


def test_missing_anonymeter_is_one_clear_line(monkeypatch):
    post, ori, control = _tiny()
    for name in list(sys.modules):
        if name == "anonymeter" or name.startswith("anonymeter."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "anonymeter", None)  # import fails as if not installed
    with pytest.raises(MissingDependencyError) as err:
        anonymeter_risk(post, ori, control, ["x", "y"], "s", n_attacks=10)
    msg = str(err.value)
    assert "\n" not in msg and isinstance(err.value, ImportError | PrivlabError)
    assert msg.startswith("anonymeter is not installed: pip install --no-deps anonymeter==1.1.0")
    assert "numpy<1.27" in msg


def test_anonymeters_kernels_compile_once_per_machine(anonymeter):
    """Its numba kernels get numba's disk cache when privlab imports it (compiling them took
    8 s of every process that reports on synthetic data), before any is compiled."""
    import subprocess

    code = (
        "from privlab.attacks.anonymeter import _import_anonymeter\n_import_anonymeter()\n"
        "from anonymeter.neighbors import mixed_types_kneighbors as k\n"
        "from numba.core.caching import FunctionCache\nfrom numba.core.dispatcher import "
        "Dispatcher\nfs = [f for f in vars(k).values() if isinstance(f, Dispatcher)]\n"
        "print(len(fs), all(isinstance(f._cache, FunctionCache) for f in fs))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    n, cached = r.stdout.split()
    assert int(n) >= 2 and cached == "True"
