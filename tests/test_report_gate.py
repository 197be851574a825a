"""``privlab report --fail-on`` (a pipeline gates on the verdict) and ``--json`` (the verdict
on stdout as one JSON object): issue 33, part 5."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import fails
from privlab.data.datasets import load_adult
from privlab.publish.anatomy import anatomize


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """1,000 Adult rows anatomized at l = 2: without its custody the report is REVIEW (the
    attacks cannot be judged)."""
    where = tmp_path_factory.mktemp("gate")
    rel = anatomize(load_adult().take(np.arange(1000)), qi=["age", "sex", "race"],
                    sensitive="occupation", l=2, rng=3)  # fmt: skip
    rel.save(where / "rel", custody=where / "custody")
    return where / "rel"


@pytest.mark.parametrize(
    "gate, status", [(None, 0), ("FAIL", 0), ("fail", 0), ("REVIEW", 3), ("review", 3)]
)
def test_fail_on_sets_the_exit_status_and_the_report_is_written_either_way(
    run, release, tmp_path, gate, status
):
    out = tmp_path / "r.html"
    args = ["report", release, "--out", out] + ([] if gate is None else ["--fail-on", gate])
    code, stdout, err = run(*args)
    assert code == status, err
    assert "verdict: REVIEW" in stdout and "next step:" in stdout
    assert json.loads(out.with_suffix(".json").read_text())["verdict"]["level"] == "REVIEW"


def test_json_prints_the_verdict_alone_on_stdout(run, release, tmp_path):
    out = tmp_path / "r.html"
    code, stdout, err = run("report", release, "--out", out, "--json", "--fail-on", "FAIL")
    assert code == 0, err
    doc = json.loads(stdout)  # stdout is exactly one JSON object
    written = json.loads(out.with_suffix(".json").read_text())["verdict"]
    assert doc["level"] == written["level"] == "REVIEW"
    assert doc["reasons"] == written["reasons"] and doc["next_step"] == written["next_step"]
    assert doc["files"] == {"report": str(out), "json": str(out.with_suffix(".json"))}
    assert "verdict: REVIEW" in err and "verdict:" not in stdout  # the lines went to stderr


def test_a_bad_fail_on_is_refused_before_anything_runs(run, release, tmp_path):
    out = tmp_path / "r.html"
    fails(run("report", release, "--out", out, "--fail-on", "PASS"),
          "--fail-on must be FAIL or REVIEW, not 'PASS'")  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_no_person_risk_file_where_no_attack_gives_one(run, tmp_path):
    """A release no attack of the report measures (a generalized release without the
    people to link, here): no person-risk file (it was written empty), none left from an
    earlier report, and the page names none."""
    from privlab.publish.generalization import generalize

    people = load_adult().take(np.arange(800))
    rel = generalize(people, qi=["age", "workclass", "sex"], sensitive="occupation", k=5,
                     dataset="adult")  # fmt: skip
    rel.save(tmp_path / "rel", custody=tmp_path / "custody")
    out = tmp_path / "r.html"
    stale = tmp_path / "custody" / "person-risk.csv"
    stale.write_text("row,risk\n0,1.0\n")  # an earlier report's, which --force replaces
    code, _, err = run("report", tmp_path / "rel", "--custody", tmp_path / "custody",
                       "--out", out, "--force")  # fmt: skip
    assert code == 0, err
    assert not stale.exists()
    assert "person-risk.csv" not in out.read_text()
    assert json.loads(out.with_suffix(".json").read_text())["person_risk"] is None
