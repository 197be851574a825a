"""Local suppression as a release (issue 35, item 2): ``*`` cells matching any value, every
record kept, k counted as sdcMicro counts it, judged by the report on the same count."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privlab.data.datasets import load_dataset
from privlab.errors import PrivlabError
from privlab.publish.generalization import suppress
from privlab.release.base import load_release
from privlab.report import build

QI = ["age", "sex", "race", "marital-status"]


@pytest.fixture(scope="module")
def people():
    return load_dataset("adult").take(np.arange(600))


def _compatible_counts(df: pd.DataFrame) -> np.ndarray:
    """fk by brute force: the rows equal to each row on every column, a * on either side
    matching anything."""
    v = df.astype(str).to_numpy()
    star = v == "*"
    same = (v[:, None, :] == v[None, :, :]) | star[:, None, :] | star[None, :, :]
    return same.all(axis=2).sum(axis=1)


@pytest.mark.parametrize("method", ["local", "heuristic"])
def test_every_record_is_k_anonymous_with_wildcards(people, tmp_path, method, registry):
    rel = suppress(people, QI, 3, sensitive="occupation", method=method)
    df = rel.to_pandas()
    assert len(df) == people.n_rows  # every record kept
    fk = _compatible_counts(df[QI])
    assert fk.min() >= 3
    claims = rel.claims()
    assert claims[0]["holds"] and f"smallest fk {fk.min()}" in claims[0]["measured"]
    done = rel.custody.input_measures["local_suppression"]
    assert int((df[QI].astype(str) == "*").to_numpy().sum()) == done["suppressed"] > 0
    # the custody's truth: each published row's exact values, which its cells show
    truth = rel.custody.truth.to_pandas()
    shown = df[QI].astype(str).to_numpy() != "*"
    assert (df[QI].astype(str).to_numpy()[shown] == truth[QI].astype(str).to_numpy()[shown]).all()
    assert sorted(map(tuple, truth[QI].astype(str).to_numpy())) == sorted(
        map(tuple, people.to_pandas()[QI].astype(str).to_numpy())
    )
    rel.save(tmp_path / method, custody=tmp_path / f"{method}.c", republish=True)
    back = load_release(tmp_path / method, custody=tmp_path / f"{method}.c")
    assert back.algorithm == "local-suppression" and back.claims()[0]["holds"]
    # the report counts records the same way: its largest prosecutor risk is 1 / min fk
    rep = build(tmp_path / method, custody=tmp_path / f"{method}.c")
    risk = rep.identity["risk"]
    assert risk["prosecutor_max"] == pytest.approx(1 / fk.min())
    assert risk["prosecutor_mean"] == pytest.approx(float(np.mean(1 / fk)))


def test_importance_and_refusals(people):
    # the least important column (rank 4) is suppressed before the most important (rank 1)
    rel = suppress(people, QI, 2, importance=[1, 2, 3, 4])
    per = rel.custody.input_measures["local_suppression"]["per_column"]
    assert per["marital-status"] >= per["age"]
    with pytest.raises(PrivlabError):
        suppress(people, QI, people.n_rows + 1)
    with pytest.raises(PrivlabError, match="two roles"):
        suppress(people, QI, 2, keep=["age"])


def test_cli_suppress(run, tmp_path, registry):
    load_dataset("adult").take(np.arange(500)).to_pandas().to_csv(tmp_path / "in.csv",
                                                                    index=False)  # fmt: skip
    r = run("suppress", tmp_path / "in.csv", "--qi", ",".join(QI), "--k", "3",
            "--sensitive", "occupation", "--out", tmp_path / "s")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "smallest fk" in r.stdout and (tmp_path / "s" / "release.json").is_file()
    r = run("check", tmp_path / "s")
    assert r.returncode == 0, r.stderr
    r = run("suppress", tmp_path / "in.csv", "--qi", "age", "--k", "2", "--importance", "x",
            "--out", tmp_path / "t")  # fmt: skip
    assert r.returncode == 2 and "--importance" in r.stderr and not (tmp_path / "t").exists()
