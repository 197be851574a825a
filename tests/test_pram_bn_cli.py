"""`privlab pram learn-bn`: Bayesian networks from a PRAM release, and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import fails
from privlab.experiments._bn_networks import FIG_5_3
from privlab.learn.bayesnet import BayesianNetwork


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory):
    """A binary-symmetric p = 0.1 PRAM release of 3,000 records of the 6-node network."""
    import pandas as pd

    from privlab.cli import main  # noqa: F401  (imports the app once)

    tmp = tmp_path_factory.mktemp("bn")
    x = FIG_5_3.sample(3000, rng=2)
    pd.DataFrame({n: [f"v{c + 1}" for c in x[:, i]] for i, n in enumerate(FIG_5_3.nodes)}).to_csv(
        tmp / "in.csv", index=False
    )
    return tmp


def _randomize(run, tmp, p="0.1", name="rel"):
    r = run(
        "pram", tmp / "in.csv", "--columns", "A,B,C,D,E,F", "--scheme", "binary-symmetric",
        "--p", p, "--seed", "3", "--custody", tmp / f"{name}-custody", "--out", tmp / name,
        "--force", "--republish",  # the tests draw several releases of one input
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return tmp / name


def test_learn_bn_structure_and_k2(run, release_dir, tmp_path):
    rel = _randomize(run, release_dir)
    dag = tmp_path / "dag.json"
    dag.write_text(json.dumps({n: list(FIG_5_3.parents[n]) for n in FIG_5_3.nodes}))
    out = tmp_path / "model.json"
    r = run("pram", "learn-bn", rel, "--structure", dag, "--out", out)
    assert r.returncode == 0, r.stderr
    assert "sd" in r.stdout and "theta" in r.stdout and "-> " in r.stdout
    net = BayesianNetwork.from_dict(json.loads(out.read_text()))
    assert net.parents == FIG_5_3.parents
    assert np.all(np.isfinite(net.sds["D"])) and np.all(net.sds["D"] > 0)
    assert np.abs(net.cpts["D"] - FIG_5_3.cpts["D"]).max() < 0.1
    # K2 with the variable eta read from the release's p
    out2 = tmp_path / "k2.json"
    r = run("pram", "learn-bn", rel, "--k2", "--order", "A,B,C,D,E,F", "--max-parents", "2",
            "--eta", "variable", "--out", out2)  # fmt: skip
    assert r.returncode == 0, r.stderr
    model = json.loads(out2.read_text())
    assert model["structure_search"]["settings"]["eta"] == 0.99
    learned = {n: set(p) for n, p in model["parents"].items()}
    assert learned["D"] == {"B", "C"}
    # an existing output is refused
    fails(run("pram", "learn-bn", rel, "--structure", dag, "--out", out), "exists")


def test_learn_bn_bad_input(run, release_dir, tmp_path):
    rel = _randomize(run, release_dir)
    out = tmp_path / "m.json"

    def dag(d):
        f = tmp_path / "d.json"
        f.write_text(json.dumps(d))
        return f

    fails(run("pram", "learn-bn", rel, "--structure", dag({"A": ["B"], "B": ["A"]}),
              "--out", out), "cycle")  # fmt: skip
    fails(run("pram", "learn-bn", rel, "--structure", dag({"Q": ["A"]}), "--out", out), "'Q'")
    fails(run("pram", "learn-bn", rel, "--structure", dag({"A": ["Z"]}), "--out", out),
          "parent 'Z' of 'A'")  # fmt: skip
    fails(run("pram", "learn-bn", rel, "--structure", dag(["A"]), "--out", out), "structure")
    fails(run("pram", "learn-bn", rel, "--k2", "--max-parents", "-1", "--out", out),
          "--max-parents", "-1")  # fmt: skip
    fails(run("pram", "learn-bn", rel, "--out", out), "--structure", "--k2")
    fails(run("pram", "learn-bn", rel, "--k2", "--order", "A,Z", "--out", out), "'Z'")
    singular = _randomize(run, release_dir, p="0.5", name="half")
    fails(run("pram", "learn-bn", singular, "--structure", dag({"B": ["A"]}), "--out", out),
          "singular", "EM")  # fmt: skip
    assert not out.exists()
    r = run("pram", "learn-bn", singular, "--structure", dag({"B": ["A"]}), "--estimator", "em",
            "--out", out)  # fmt: skip
    assert r.returncode == 0, r.stderr and out.exists()
