"""The reproductions of seed 000 Ch. 7-8: estimators-risk in quick mode, dpnb building blocks."""

import json

from privlab.experiments import discover, run_experiment
from privlab.experiments.dpnb import _T82, _T86, ADULT_EPSILONS, _paper_rows


def test_experiments_are_registered():
    ids = discover()
    assert {"estimators-risk", "dpnb-adult", "dpnb-nursery"} <= set(ids)


def test_paper_rows_have_the_result_keys():
    rows = _paper_rows(ADULT_EPSILONS, _T82, {k: [(0, 0, 0)] * 6 for k in (5, 10, 20)})
    assert len(rows) == 18 and rows[0]["acc_ml"] == 74.63 and rows[-1]["acc_eb"] == 79.76
    assert _T86[5][0] == (87.76, 87.87, 87.76)


def test_estimators_risk_quick(tmp_path):
    res = run_experiment("estimators-risk", quick=True, out=tmp_path / "r", progress=False)
    rows = res.rows
    assert [r["dimension"] for r in rows] == list(range(1, 51))
    # Fig. 7.1-7.2: EB below ML from p = 3 on, the gap growing with p; ML risk is 2 p b^2
    for r in rows:
        assert abs(r["risk_ml"] - 2 * r["dimension"]) < 0.1 * 2 * r["dimension"] + 0.2
        if r["dimension"] >= 3:
            assert r["risk_eb"] < r["risk_ml"]
    gap = [r["risk_ml"] - r["risk_eb"] for r in rows]
    assert sum(gap[40:]) > sum(gap[5:15])
    saved = json.loads((tmp_path / "r" / "result.json").read_text())
    assert saved["rows"] == rows
    assert (tmp_path / "r" / "estimators-risk.png").stat().st_size > 1000
