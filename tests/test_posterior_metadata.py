"""One Posterior for every attack: its metadata travel with it, and evaluate uses them."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from privlab.attacks.posterior import Posterior, meta_path
from privlab.errors import PrivlabError


def test_metadata_round_trip_and_refusal(tmp_path):
    p = Posterior(
        probs=np.array([[0.25, 0.75], [1.0, 0.0]]),
        group_id=np.array([0, 1]),
        values=("a", "b"),
        method="definetti",
        diagnostics={"converged": True},
        release_kind="anatomy",
        sensitive="s",
        threat_model="the attacker knows everything published",
    )
    p.save(tmp_path / "post.csv")
    assert meta_path(tmp_path / "post.csv") == tmp_path / "post.meta.json"
    back = Posterior.load(tmp_path / "post.csv")
    assert (back.method, back.release_kind, back.sensitive) == ("definetti", "anatomy", "s")
    assert back.threat_model == p.threat_model and back.diagnostics == {"converged": True}
    assert np.array_equal(back.probs, p.probs)
    # a posterior without metadata (written by hand) still loads
    (tmp_path / "post.meta.json").rename(tmp_path / "other.json")
    assert Posterior.load(tmp_path / "post.csv").method == "loaded"
    # metadata of another posterior are refused
    meta = json.loads((tmp_path / "other.json").read_text())
    meta["values"] = ["a", "c"]
    (tmp_path / "post.meta.json").write_text(json.dumps(meta))
    with pytest.raises(PrivlabError, match="another posterior"):
        Posterior.load(tmp_path / "post.csv")


def test_evaluate_a_pram_attack_from_its_custody(cli, tmp_path):
    g = np.random.default_rng(0)
    n = 3000
    a = g.choice(list("xyz"), n)
    s = np.where(g.random(n) < 0.8, np.char.add("s", a), g.choice(["sx", "sy", "sz"], n))
    pd.DataFrame({"a": a, "s": s}).to_csv(tmp_path / "in.csv", index=False)
    r = cli("pram", tmp_path / "in.csv", "--columns", "s", "--keep", "a", "--p", "0.3",
            "--seed", "1", "--custody", tmp_path / "c", "--out", tmp_path / "rel")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = cli("attack", "em", tmp_path / "rel", "--sensitive", "s", "--out", tmp_path / "p.csv")
    assert r.returncode == 0, r.stderr
    r = cli("evaluate", tmp_path / "p.csv", "--custody", tmp_path / "c",
            "--json", tmp_path / "m.json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "m.json").read_text())
    assert "transition matrices" in m["threat_model"]["attack"]
    truth = pd.read_csv(tmp_path / "c" / "truth.csv")["s"].to_numpy()
    published = pd.read_csv(tmp_path / "rel" / "randomized.csv")["s"].to_numpy()
    # the attacker beats reading the published value (retention 0.7) by learning P(s | a)
    assert m["acc"] > (published == truth).mean() + 0.05
    assert m["acc_ci"][0] <= m["acc"] <= m["acc_ci"][1]


def test_evaluate_a_population_attack_with_the_population_file(cli, tmp_path):
    g = np.random.default_rng(1)
    n = 400
    a = g.choice(list("xy"), n)  # s follows a, which the 40-anonymous table suppresses
    s = np.where(
        a == "x", g.choice(["p", "q"], n, p=[0.9, 0.1]), g.choice(["p", "q"], n, p=[0.1, 0.9])
    )
    people = pd.DataFrame({"a": a, "b": g.integers(20, 60, n), "s": s})
    people.to_csv(tmp_path / "people.csv", index=False)
    r = cli("generalize", tmp_path / "people.csv", "--qi", "a,b", "--sensitive", "s",
            "--k", "40", "--out", tmp_path / "gen")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = cli("attack", "definetti", tmp_path / "gen", "--population", tmp_path / "people.csv",
            "--seed", "2", "--out", tmp_path / "p.csv")  # fmt: skip
    assert r.returncode == 0, r.stderr
    post = Posterior.load(tmp_path / "p.csv")
    assert post.n_rows == n and post.release_kind == "generalization"
    assert "exact quasi-identifiers" in post.threat_model
    r = cli("evaluate", tmp_path / "p.csv", "--truth", tmp_path / "people.csv",
            "--json", tmp_path / "m.json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "m.json").read_text())
    # the learner, who knows everyone's exact a, beats the class shares (0.80 vs 0.55)
    assert m["acc"] > m["random_worlds"]["acc"] + 0.15
    # a generalization custody cannot say who is who
    r = cli("generalize", tmp_path / "people.csv", "--qi", "a,b", "--sensitive", "s", "--k",
            "40", "--custody", tmp_path / "gc", "--out", tmp_path / "gen2")  # fmt: skip
    if (tmp_path / "gc").exists():
        r = cli("evaluate", tmp_path / "p.csv", "--custody", tmp_path / "gc")
        assert r.returncode == 2 and "--truth FILE" in r.stderr
