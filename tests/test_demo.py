"""`privlab demo`: the main job on Adult, shortened (the real run takes about a minute)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from privlab.demo import run_demo
from privlab.errors import OutputExistsError


def test_demo_attacks_anatomized_adult_and_writes_its_files(tmp_path):
    out = tmp_path / "demo"
    rows = run_demo(out, seed=0, ls=(2,), iterations=400, chains=2, progress=False)
    (row,) = rows
    assert row["l"] == 2 and row["tuples"] == 30162
    assert row["baseline_acc"] == pytest.approx(0.5, abs=0.01)
    assert row["random_worlds_max"] == pytest.approx(0.5)
    # the learning attacker beats what Anatomy promises (Kifer 2009, Table 7: 0.77 for l = 2)
    assert row["attack_acc"] > 0.65
    assert row["attack_abs"] < row["baseline_abs"]
    assert 0 < row["at_risk_share"] < 1 and row["at_risk_precision"] > 0.5
    names = {p.name for p in out.iterdir()}
    assert names == {
        "anatomy-l2",
        "custody",
        "posterior-definetti-l2.csv",
        "posterior-definetti-l2.meta.json",
        "metrics.json",
        "reliability.png",
    }
    assert not (out / "anatomy-l2" / "truth.csv").exists()
    assert (out / "custody" / "anatomy-l2" / "truth.csv").exists()
    post = pd.read_csv(out / "posterior-definetti-l2.csv")
    assert len(post) == 30162
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["summary"] == rows
    assert (out / "reliability.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(OutputExistsError):
        run_demo(out, ls=(2,), iterations=10, chains=1, progress=False)
