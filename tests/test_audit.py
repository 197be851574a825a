"""`privlab audit` (`privlab.report.run_audit`) and `privlab demo`, the short audit of Adult."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from conftest import fails
from privlab.data.datasets import load_adult
from privlab.demo import console_rows, run_demo
from privlab.errors import OutputExistsError, PrivlabError
from privlab.report import FAIL, PASS, REVIEW, build, load_config, run_audit
from privlab.report.audit import _next_step, _recommend
from privlab.report.build import ATTACK_SALT, read_attack_salt
from privlab.report.config import parse_config
from test_report import PAGE, open_in_chromium

#: the custodian's files: none may be inside a folder the audit or the demo publishes
CUSTODY_FILES = {"custody.json", "truth.csv", "person-risk.csv", ATTACK_SALT}

QI = '["workclass", "relationship", "sex", "salary"]'


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "adult3000.csv"
    load_adult().take(np.arange(3000)).to_pandas().to_csv(path, index=False)
    return path


def _config(tmp_path, data, grid="[2, 3]", limit=0.05):
    cfg = tmp_path / "audit.toml"
    cfg.write_text(
        f"[thresholds]\nmax_at_risk_share = {limit}\n"
        "[attack]\niterations = 200\nchains = 2\nanneal = 0\nretry = false\n"
        '[utility]\nholdout = "adult-test"\n'
        f'[audit]\ndata = "{data}"\nmethod = "anatomy"\nqi = {QI}\n'
        f'sensitive = "occupation"\ngrid = {{ l = {grid} }}\n'
    )
    return cfg


@pytest.fixture(scope="module")
def audit(small_csv, tmp_path_factory):
    where = tmp_path_factory.mktemp("audit")
    cfg = load_config(_config(where, small_csv, limit=0.5))
    return run_audit(cfg, where / "out", progress=False), where / "out"


def _secrets(custody):
    """Every seed and salt a custody tree keeps (the releases' and the reports' attacks')."""
    found = []
    for f in custody.rglob("custody.json"):
        seed = json.loads(f.read_text())["seed"]
        found += [str(seed["salt"])]
    for f in custody.rglob(ATTACK_SALT):
        found.append(str(read_attack_salt(f.parent)))
    return found


def assert_holds_no_custody(out, custody):
    """``out`` (a folder to share) holds no custody file and no seed or salt of ``custody``
    (which is apart from it), whose every setting holds its truth and salts."""
    assert out.resolve() not in custody.resolve().parents
    assert custody.resolve() not in out.resolve().parents
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files and not [p for p in files if p.name in CUSTODY_FILES]
    salts = _secrets(custody)
    assert len(salts) == 2 * len(list(custody.iterdir())) and all(len(s) > 20 for s in salts)
    text = "".join(p.read_text(encoding="utf-8", errors="replace") for p in files)
    assert not [s for s in salts if s in text]


def test_audit_layout_and_recommendation(audit):
    a, out = audit
    names = sorted(p.name for p in out.iterdir())
    assert names == ["anatomy-l2", "anatomy-l3", "audit.toml", "report.html", "report.json",
                     "reports"]  # fmt: skip
    custody = out.parent / "out.custody"  # apart from the folder to share, beside it
    assert a.custody == str(custody)
    # each setting's release and, apart in the custody, its two further draws
    assert sorted(p.name for p in custody.iterdir()) == [
        "anatomy-l2", "anatomy-l2.draw2", "anatomy-l2.draw3",
        "anatomy-l3", "anatomy-l3.draw2", "anatomy-l3.draw3",
    ]  # fmt: skip
    for l in (2, 3):
        assert {p.name for p in (custody / f"anatomy-l{l}").iterdir()} == CUSTODY_FILES
        for r in (2, 3):
            draw = custody / f"anatomy-l{l}.draw{r}"
            assert {p.name for p in (draw / "custody").iterdir()} == CUSTODY_FILES
            assert (draw / "release" / "release.json").is_file()
        assert (out / "reports" / f"anatomy-l{l}.html").exists()
    assert_holds_no_custody(out, custody)
    page = (out / "report.html").read_text()
    assert f"Never share <code>{custody}</code>" in page and "Publish <strong>one</strong>" in page
    assert [r["l"] for r in a.rows] == [2, 3]
    passing = [r["l"] for r in a.rows if r["verdict"] == PASS]
    assert a.recommended == (min(passing) if passing else None)
    doc = json.loads((out / "report.json").read_text())
    assert doc["rows"] == json.loads(json.dumps(a.rows))
    assert set(doc["reports"]) == {"2", "3"}
    assert load_config(out / "audit.toml").audit.grid == {"l": (2, 3)}
    # the risk falls as l grows
    assert a.rows[0]["at_risk_share"] > a.rows[1]["at_risk_share"]


def _rows(*rows):
    return [
        {"l": l, "verdict": v, "at_risk_share": s, "model_accuracy": 0.2, "reasons": [f"why {l}"]}
        for l, v, s in rows
    ]


def test_recommendation_is_the_smallest_passing_setting_with_numbers():
    cfg = load_config(None)

    class Plan:
        method = "anatomy"
        sensitive = "occupation"

    rows = _rows((2, "FAIL", 0.59), (3, "FAIL", 0.3), (4, "PASS", 0.03), (5, "PASS", 0.01))
    text = _recommend("l", rows, 4, Plan, cfg, {})
    assert text.startswith("Publish with l = 4") and "3.0%" in text and "59.0%" in text
    step = _next_step("l", rows[0], rows, 4, Plan, cfg)
    assert step == (
        "raise l to 4: the share of people of whom the attacker learns occupation beyond "
        "what is known without the release (removing at least 80% of the doubt) falls from "
        "59.0% to 3.0%"
    )
    flat = parse_config({"thresholds": {"at_risk_rule": "absolute", "at_risk": 0.9}})
    assert _next_step("l", rows[0], rows, 4, Plan, flat) == (
        "raise l to 4: the share of people whose occupation the attacker names with "
        "probability >= 0.9 falls from 59.0% to 3.0%"
    )
    assert _next_step("l", rows[3], rows, 4, Plan, cfg) is None
    none = _recommend("l", rows[:2], None, Plan, cfg, {7: "too few values"})
    assert none.startswith("No setting passes") and "why 3" in none
    assert "l = 7 (too few values)" in none and "Try larger values of l" in none

    class Descending:  # alpha-beta: the grid runs from the largest gamma down
        method = "alphabeta"
        sensitive = "occupation"

    rows = [{**r, "gamma": g} for r, g in zip(rows, (90, 70, 50, 30))]
    step = _next_step("gamma", rows[0], rows, 50, Descending, cfg)
    assert step == (
        "lower gamma to 50: the share of published tuples the attacker finds real with "
        "probability >= 0.8 falls from 59.0% to 3.0%"
    )
    assert _next_step("gamma", rows[3], rows, 50, Descending, cfg) is None  # stronger: none
    text = _recommend("gamma", rows, 50, Descending, cfg, {})
    assert text.startswith("Publish with gamma = 50: the share of published tuples")
    assert "(at gamma = 90 it is 59.0%)" in text
    none = _recommend("gamma", rows[:2], None, Descending, cfg, {})
    assert "Even at gamma = 70" in none and "Try smaller values of gamma" in none


def test_an_audit_setting_is_reproduced_from_its_custody_and_config(audit):
    """Same config and custody, same report: the attacks' salt is in the custody."""
    a, out = audit
    custody = out.parent / "out.custody" / "anatomy-l2"
    again = build(out / "anatomy-l2", custody=custody, config=load_config(out / "audit.toml"))
    assert again.attack_salt == read_attack_salt(custody)
    first = a.reports[2]
    assert again.attribute == first.attribute
    # the report alone judges its release; the audit judges the setting over its releases
    assert again.verdict["thresholds"] == first.verdict["thresholds"]

    def runs(rep):  # the chains' diagnostics, without their wall time
        return {k: {f: v for f, v in d.items() if f != "seconds"}
                for k, d in rep.diagnostics["attacks"].items()}  # fmt: skip

    # (200 iterations, or 400 when the first run did not converge and was run again)
    ran = runs(first)["definetti"]
    assert runs(again) == runs(first) and ran["iterations"] == (400 if "retried" in ran else 200)


def test_audit_refuses_a_custody_inside_its_output(small_csv, tmp_path):
    cfg = load_config(_config(tmp_path, small_csv, grid="[2]"))
    for custody in (tmp_path / "out" / "c", tmp_path):
        with pytest.raises(PrivlabError, match="must be apart"):
            run_audit(cfg, tmp_path / "out", custody=custody, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.toml"]


def test_audit_page_renders_in_chromium(audit, tmp_path):
    _, out = audit
    messages, requests, sections, sizes = open_in_chromium(out / "report.html",
                                                           tmp_path / "audit.png")  # fmt: skip
    assert [m for m in messages if m[0] in ("error", "warning")] == []
    assert [u for u in requests if not u.startswith("file:")] == []
    assert sections == ["recommendation", "grid", *PAGE]
    assert len(sizes) >= 2 and all(w > 100 and h > 100 for w, h in sizes), sizes


def test_audit_cli_and_its_failures(run, small_csv, tmp_path, registry):
    out = tmp_path / "out"
    fails(run("audit", _config(tmp_path, small_csv, grid="[40, 50]"), "--out", out),
          "no setting of the grid yields a release")  # fmt: skip
    assert not out.exists()
    bad = tmp_path / "bad.toml"
    bad.write_text("[audit]\nmethod = 'anatomy'\nqi = ['sex']\nsensitive = 'occupation'\n"
                   "grid = { k = [2] }\n")  # fmt: skip
    fails(run("audit", bad, "--out", out), "does not apply to anatomy")
    nope = tmp_path / "nope.toml"
    nope.write_text("[thresholds]\nmax_at_risk_share = 0.1\n")
    fails(run("audit", nope, "--out", out), "no [audit] section")
    wrong = _config(tmp_path, small_csv).read_text().replace('"occupation"', '"job"')
    (tmp_path / "wrong.toml").write_text(wrong)
    fails(run("audit", tmp_path / "wrong.toml", "--out", out), "'job'")
    assert not out.exists()
    code, stdout, err = run("audit", _config(tmp_path, small_csv, grid="[2]"), "--out", out,
                            "--custody", tmp_path / "secret")  # fmt: skip
    assert code == 0, err
    assert "l = 2:" in stdout and "report.html" in stdout
    assert f"note: {tmp_path / 'secret'} holds the true values" in err and "never publish" in err
    assert_holds_no_custody(out, tmp_path / "secret")
    fails(run("audit", _config(tmp_path, small_csv, grid="[2]"), "--out", tmp_path / "o2",
              "--custody", tmp_path / "o2" / "c"), "must be apart")  # fmt: skip
    assert not (tmp_path / "o2").exists()
    # its candidates are drafts: a second audit of the same input is not refused, and the
    # custodian's registry records neither
    code, _, err = run("audit", _config(tmp_path, small_csv, grid="[2]"), "--out", tmp_path / "o3")
    assert code == 0, err
    assert [p for p in registry.rglob("*") if p.is_file()] == []


def test_demo_is_a_short_audit_with_a_legend_in_80_columns(tmp_path):
    out = tmp_path / "demo"
    a = run_demo(out, ls=(2,), iterations=400, chains=2, progress=False)
    (row,) = a.rows
    assert row["l"] == 2 and row["random_worlds_acc"] == pytest.approx(0.5, abs=0.01)
    # the learning attacker beats what Anatomy promises (Kifer 2009, Table 7: 0.77 for l = 2)
    # beyond what the control knows it still puts people at risk, fewer than outright
    assert row["acc"] > 0.65 and row["absolute_at_risk_share"] > 0.3
    assert 0.05 < row["at_risk_share"] < row["absolute_at_risk_share"]
    assert row["control_acc"] is not None and row["model_accuracy"] is not None
    assert (out / "report.html").exists() and not (out / "custody").exists()
    assert_holds_no_custody(out, tmp_path / "demo.custody")
    (shown,) = console_rows(a)
    assert (
        shown["verdict"] == row["verdict"] and shown["risk%"] == f"{100 * row['at_risk_share']:.1f}"
    )
    assert shown["abs%"] == f"{100 * row['absolute_at_risk_share']:.1f}"
    with pytest.raises(OutputExistsError):
        run_demo(out, ls=(2,), iterations=10, chains=1, progress=False)


def test_demo_command_fits_80_columns(cli, tmp_path):
    """The real command's console (at 100 iterations per chain: the same lines and more of
    them, the attacks' notes that they did not converge, in a fraction of the time; `make
    demo` runs the default) fits 80 columns."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "80"}
    r = subprocess.run(
        [sys.executable, "-c", "from privlab.cli import main; main()", "demo", "--out",
         str(tmp_path / "d"), "--iterations", "100"],
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    wide = [x for x in lines if len(x) > 80 and str(tmp_path) not in x]  # paths do not wrap
    assert wide == []
    assert any(x.startswith("l = 4: ") for x in lines)
    assert lines[-2].startswith("report: ") and "risk%:" in r.stdout


def test_audit_refuses_a_config_without_audit():
    with pytest.raises(PrivlabError, match="no \\[audit\\] section"):
        run_audit(load_config(None), "/nonexistent/out")


def test_audit_pages_name_the_final_paths_not_the_temporary_ones(audit):
    a, out = audit
    for value, rep in a.reports.items():
        assert rep.header["release"] == f"anatomy-l{value}"
        assert rep.person_risk == f"{out}.custody/anatomy-l{value}/person-risk.csv"
    for page in (out / "report.html", *(out / "reports").glob("*")):
        assert ".privlab-" not in page.read_text(), page


def _timeless(doc):
    """An audit's JSON without what differs between two runs of the same draws: the dates,
    the wall times and the sentence on how it was drawn."""
    if isinstance(doc, dict):
        return {k: _timeless(v) for k, v in doc.items()
                if k not in ("date", "seconds", "draws")}  # fmt: skip
    if isinstance(doc, list):
        return [_timeless(v) for v in doc]
    return doc


def test_a_rerun_of_the_same_config_replays_the_releases_and_the_reports(small_csv, tmp_path):
    """Issue 33, part 1: a rerun (--force) over an earlier run of the same config draws each
    release again from its custody's seed record and each attack from its kept salt: the
    same releases and the same JSON, timings aside; --fresh draws anew."""
    cfg = load_config(_config(tmp_path, small_csv, grid="[2]", limit=0.5))
    out = tmp_path / "out"
    first = run_audit(cfg, out, progress=False)
    assert first.draws.startswith("drawn fresh")
    doc1 = json.loads((out / "report.json").read_text())
    groups1 = (out / "anatomy-l2" / "qit.csv").read_bytes()
    again = run_audit(cfg, out, progress=False, force=True)
    assert again.draws.startswith("replayed from the earlier run's custody")
    doc2 = json.loads((out / "report.json").read_text())
    assert (out / "anatomy-l2" / "qit.csv").read_bytes() == groups1
    assert _timeless(doc2) == _timeless(doc1)
    assert 'id="draws"' in (out / "report.html").read_text()
    fresh = run_audit(cfg, out, progress=False, force=True, fresh=True)
    assert fresh.draws == "drawn fresh (--fresh)"
    assert (out / "anatomy-l2" / "qit.csv").read_bytes() != groups1
    # another config: nothing of the earlier run is replayed
    other = load_config(_config(tmp_path, small_csv, grid="[2]", limit=0.4))
    assert run_audit(other, out, progress=False, force=True).draws == (
        "drawn fresh: the earlier run in this folder had another config"
    )


def _draw(share, mcmc=0.0001, people=0.0004, converged=True):
    """A minimal report of one release: its strongest attack's share and variances."""
    from privlab.report.build import Report

    summary = {
        "at_risk_share": share,
        "at_risk_share_ci": [share - 0.02, share + 0.02],
        "at_risk_share_uncertainty": {"variance": {"mcmc": mcmc, "people": people}},
    }
    attribute = {
        "measured": True,
        "strongest": "definetti",
        "sensitive": "occupation",
        "attacks": {"definetti": {"summary": summary}},
    }
    diagnostics = {"attacks": {"definetti": {"converged": converged}}}
    identity = {"judged": False, "risk": {}}
    return Report(header={"method": "anatomy"}, verdict={}, identity=identity,
                  attribute=attribute, utility={}, diagnostics=diagnostics)  # fmt: skip


def test_between_releases_is_a_one_way_random_effects_split():
    """The setting's share over R releases: the mean; the release component is the observed
    between-release variance less the mean MCMC variance (never below 0); the interval, for
    one more release, is mean -+ z sqrt(B (1 + 1/R) + people)."""
    from privlab.report.audit import between_releases

    z = 1.959963984540054
    got = between_releases([_draw(0.2), _draw(0.3), _draw(0.4)])
    b = 0.01  # var([0.2, 0.3, 0.4], ddof=1)
    assert got["mean"] == pytest.approx(0.3) and got["shares"] == [0.2, 0.3, 0.4]
    assert got["variance"] == pytest.approx(
        {"release": b - 0.0001, "mcmc": 0.0001, "people": 0.0004, "between_observed": b}
    )
    half = z * np.sqrt(b * (1 + 1 / 3) + 0.0004)
    assert got["interval"] == pytest.approx([0.3 - half, 0.3 + half])
    # chains noisier than the releases differ: no release component, and bounds in [0, 1]
    flat = between_releases([_draw(0.01, mcmc=0.01), _draw(0.02, mcmc=0.01)])
    assert flat["variance"]["release"] == 0.0 and flat["interval"][0] == 0.0
    assert between_releases([_draw(0.3)]) is None
    unmeasured = _draw(0.3)
    unmeasured.attribute["measured"] = False
    assert between_releases([_draw(0.3), unmeasured]) is None


@pytest.mark.parametrize(
    ("shares", "level"),
    [
        ((0.10, 0.11, 0.12), FAIL),  # the whole interval above the default 5% limit
        ((0.01, 0.012, 0.011), PASS),  # tight and within
        ((0.02, 0.04, 0.09), REVIEW),  # the mean within, one more release may not be
    ],
)
def test_a_settings_verdict_is_judged_on_the_interval_over_its_releases(shares, level):
    from privlab.report.audit import _setting_verdict, between_releases

    draws = [_draw(s, mcmc=1e-6, people=1e-6) for s in shares]
    spread = between_releases(draws)
    v = _setting_verdict(draws[0], draws, spread, load_config(None))
    assert v["level"] == level
    about = [r for r in v["reasons"] if "independent releases" in r]
    assert about and f"{100 * spread['mean']:.1f}%" in about[0]


def test_an_unconverged_further_release_makes_the_setting_review():
    from privlab.report.audit import _setting_verdict, between_releases

    draws = [_draw(0.01, 1e-6, 1e-6), _draw(0.011, 1e-6, 1e-6, converged=False)]
    v = _setting_verdict(draws[0], draws, between_releases(draws), load_config(None))
    assert v["level"] == REVIEW
    assert any("definetti (release 2) attack did not converge" in r for r in v["reasons"])


def test_the_audit_measures_each_setting_over_its_releases(audit):
    """Each row is the mean over the setting's 3 releases; each release's share is what its
    own report (rebuilt from the custody) measures; the page shows the components."""
    from privlab.report.audit import between_releases

    a, out = audit
    cfg = load_config(out / "audit.toml")
    assert cfg.audit.releases == 3
    custody = out.parent / "out.custody"
    for row in a.rows:
        name = f"anatomy-l{row['l']}"
        assert row["releases"] == 3 and len(row["at_risk_share_per_release"]) == 3
        assert row["at_risk_share"] == pytest.approx(np.mean(row["at_risk_share_per_release"]))
        first = a.reports[row["l"]].attribute["attacks"]["definetti"]["summary"]
        assert row["at_risk_share_per_release"][0] == first["at_risk_share"]
        d3 = build(custody / f"{name}.draw3" / "release", custody=custody / f"{name}.draw3" /
                   "custody", config=cfg, progress=False)  # fmt: skip
        got = d3.attribute["attacks"]["definetti"]["summary"]["at_risk_share"]
        assert row["at_risk_share_per_release"][2] == got
        # the releases differ (their groups do), and the interval is the documented one
        assert len(set(row["at_risk_share_per_release"])) > 1
        lo, hi = row["at_risk_share_ci"]
        assert lo < row["at_risk_share"] < hi
    page = (out / "report.html").read_text()
    assert 'id="variance-components"' in page and "Each setting drew 3 independent releases" in page
    assert between_releases([a.reports[2]]) is None


def test_the_demo_command_defaults_to_the_demos_iterations():
    """`privlab demo --iterations` defaults to the demo's own length (DEMO_ITERATIONS)."""
    import inspect

    from privlab.cli import misc
    from privlab.demo import DEMO_ITERATIONS

    assert inspect.signature(misc.demo).parameters["iterations"].default == DEMO_ITERATIONS


# -------------------------------------------------- issue 35: an audit of masked releases

NUMERIC = '["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]'


def _masking_config(tmp_path, data, method, grid, releases=1):
    cfg = tmp_path / f"{method}.toml"
    param = {"microaggregation": "k", "noise": "noise", "swap": "p", "topcoding": "tail"}[method]
    cfg.write_text(
        f'[audit]\ndata = "{data}"\nmethod = "{method}"\nqi = {NUMERIC}\n'
        f'sensitive = "occupation"\ngrid = {{ {param} = {grid} }}\nreleases = {releases}\n'
    )
    return load_config(cfg)


def test_a_masking_audit_shows_linkage_falling_and_loss_rising(small_csv, tmp_path, registry):
    """Issue 35: the audit grid over k (microaggregation) or the noise level: every
    setting's record linkage and information loss, the trade-off plot, and the smallest
    setting that passes recommended (the verdict's own figures, judged per setting)."""
    from privlab.report.audit import MASKING

    assert MASKING == ("microaggregation", "noise", "swap", "topcoding")
    for method, grid, releases in (("microaggregation", "[2, 5, 30]", 1),
                                   ("noise", "[5, 100]", 2), ("swap", "[2, 30]", 1),
                                   ("topcoding", "[1, 25]", 1)):  # fmt: skip
        cfg = _masking_config(tmp_path, small_csv, method, grid, releases)
        out = tmp_path / method
        audit = run_audit(cfg, out, progress=False)
        rows = audit.rows
        param = audit.param
        links = [r["linkage"] for r in rows]
        losses = [r["il1s"] for r in rows]
        assert all(a > b for a, b in itertools.pairwise(links)), links  # risk falls
        assert all(a < b for a, b in itertools.pairwise(losses)), losses  # loss rises
        assert audit.utility_key == "il1s"
        for r in rows:
            rep = audit.reports[r[param]]
            link = rep.identity["linkage"]
            assert r["linkage"] == link["rate"]["value"]
            assert r["linkage_ci"] == [link["rate"]["low"], link["rate"]["high"]]
            assert r["il1s"] > 0 and rep.attribute["strongest"] == "nearest"
            if releases > 1:  # the linkage over the setting's releases: their mean
                assert link["releases"] == releases
                assert r["linkage"] == pytest.approx(np.mean(link["per_release"]))
                assert r["linkage_ci"][0] <= r["linkage"] <= r["linkage_ci"][1]
            limit = rep.verdict["thresholds"]["max_at_risk_share"]
            lo, hi = r["linkage_ci"]
            finding = next(f for f in rep.verdict["findings"] if "record linkage" in f["reason"])
            assert finding["level"] == (FAIL if lo > limit else REVIEW if hi > limit else PASS)
        passing = [r[param] for r in rows if r["verdict"] == PASS]
        assert audit.recommended == (min(passing) if passing else None)
        assert rows[0]["verdict"] == FAIL  # k = 2 / 5% noise: most records linked
        if audit.recommended is not None:
            assert audit.recommendation.startswith(
                f"Publish with {param} = {audit.recommended}: record linkage re-identifies"
            )
            failing = next(r for r in rows if r["verdict"] == FAIL)
            step = audit.reports[failing[param]].verdict["next_step"]
            assert step.startswith(f"raise {param} to {audit.recommended}: the records linked")
        html = (out / "report.html").read_text()
        assert "records linked (95% interval)" in html and "information loss (IL1s" in html
        assert "records linked " in audit.tradeoff_svg and "IL1s per cell" in audit.tradeoff_svg
        # the information loss is the custody's measure of the setting's own release
        name = f"{method}-{param}{rows[0][param]}"
        custody = json.loads((out.parent / f"{method}.custody" / name / "custody.json").read_text())
        assert custody["input_measures"]["utility"]["il1s_mean"] == rows[0]["il1s"]
        assert_holds_no_custody(out, out.parent / f"{method}.custody")
        if method == "topcoding":  # tail 25: each column clipped at its quartiles (type 7)
            from privlab.publish import load_release

            data = pd.read_csv(small_csv)
            release = load_release(out / "topcoding-tail25")
            for c in json.loads(NUMERIC):
                x = data[c].to_numpy(float)
                want = np.clip(x, np.quantile(x, 0.25), np.quantile(x, 0.75))
                got = release.table.decode(c).astype(float)
                assert np.array_equal(np.sort(got), np.sort(want)), c


def test_a_masking_audit_publishes_the_weights_and_its_report_estimates_the_population(
    small_csv, tmp_path
):
    """[audit] weights: the column of sampling weights is published unchanged with the
    masked release, and the report's individual risk is sdcMicro's weighted one (the same
    as privlab's individual_risk of the published linkable columns with those weights);
    weights are refused for a method whose report cannot use them, or with another role."""
    from privlab.metrics.sdc_risk import individual_risk
    from privlab.publish import load_release

    cfg = tmp_path / "w.toml"
    body = (f'[audit]\ndata = "{small_csv}"\nqi = ["age", "hours-per-week"]\n'
            'sensitive = "occupation"\nreleases = 1\n')  # fmt: skip
    cfg.write_text(body + 'method = "topcoding"\ngrid = { tail = [5] }\nweights = "fnlwgt"\n')
    config = load_config(cfg)
    assert config.audit.weights == "fnlwgt" and 'weights = "fnlwgt"' in config.to_toml()
    out = tmp_path / "out"
    audit = run_audit(config, out, progress=False)
    release = load_release(out / "topcoding-tail5")
    data = pd.read_csv(small_csv)
    w = release.table.decode("fnlwgt").astype(float)
    assert np.array_equal(np.sort(w), np.sort(data["fnlwgt"].to_numpy(float)))
    ind = audit.reports[5].identity["classical"]["individual"]
    assert ind["weighted"] is True
    link = release.table.select(["age", "hours-per-week"])
    want = individual_risk(link.codes, w)
    assert ind["global_risk"] == pytest.approx(want.to_dict()["global_risk"], rel=1e-12)
    for extra, message in (('method = "anatomy"\ngrid = { l = [2] }\nweights = "fnlwgt"\n',
                            "weights apply to microaggregation"),
                           ('method = "noise"\ngrid = { noise = [5] }\nweights = "age"\n',
                            "weights names 'age', which has another role")):  # fmt: skip
        cfg.write_text(body + extra)
        with pytest.raises(PrivlabError, match=message):
            load_config(cfg)


def test_a_masking_audit_refuses_a_column_that_is_not_numeric(small_csv, tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(f'[audit]\ndata = "{small_csv}"\nmethod = "microaggregation"\n'
                   'qi = ["age", "sex"]\nsensitive = "occupation"\n'
                   'grid = { k = [3] }\n')  # fmt: skip
    with pytest.raises(PrivlabError, match="'sex' is not numeric"):
        run_audit(load_config(cfg), tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()
    cfg.write_text(f'[audit]\ndata = "{small_csv}"\nmethod = "noise"\nqi = ["age"]\n'
                   'sensitive = "occupation"\ngrid = { k = [3] }\n')  # fmt: skip
    with pytest.raises(PrivlabError, match="grid parameter 'k' does not apply to noise"):
        load_config(cfg)


def test_a_pram_audit_draws_pram_s_release_and_counts_what_it_changes(small_csv, tmp_path):
    """Issue 37's PRAM in the audit: every quasi-identifier and the sensitive column
    randomized with p in percent; each setting's release is `pram`'s for the seed its
    custody keeps; the PRAM attack judges it; the utility column is the share of randomized
    values published changed, counted here from the release and the custody's truth."""
    from privlab.data.datasets import load_input
    from privlab.publish import load_release
    from privlab.publish.randomization import pram
    from privlab.release.base import Custody

    cfg = tmp_path / "pram.toml"
    cfg.write_text(f'[audit]\ndata = "{small_csv}"\nmethod = "pram"\nqi = ["sex", "race"]\n'
                   'sensitive = "salary"\nkeep = ["age"]\ngrid = { p = [60, 5] }\n'
                   'releases = 1\n')  # fmt: skip
    config = load_config(cfg)
    assert config.audit.grid == {"p": (5, 60)}
    out = tmp_path / "out"
    audit = run_audit(config, out, progress=False)
    assert audit.utility_key == "changed_share" and "values changed" in audit.tradeoff_svg
    table = load_input(str(small_csv), drop_missing=True)
    changed = {}
    for row in audit.rows:
        p = row["p"]
        name = f"pram-p{p}"
        release = load_release(out / name)
        kept = Custody.load(tmp_path / "out.custody" / name)
        again = pram(table, columns=["sex", "race", "salary"], keep=["age"], p=p / 100,
                     rng=kept.replay())  # fmt: skip
        assert release.table.names == again.table.names  # the input's order
        assert sorted(release.table.names) == ["age", "race", "salary", "sex"]
        for c in release.table.names:
            assert (release.table.decode(c) == again.table.decode(c)).all(), c
        truth = kept.truth
        cells = [(release.table.decode(c) != truth.decode(c)) for c in truth.names]
        assert sorted(truth.names) == ["race", "salary", "sex"]
        changed[p] = float(np.mean(cells))
        assert row["changed_share"] == pytest.approx(changed[p], abs=1e-12)
        assert audit.reports[p].attribute["strongest"] == "pram"
    # each value is changed with probability p (M-category): 9,000 cells, within 4 sd
    for p, share in changed.items():
        assert abs(share - p / 100) < 4 * np.sqrt(p / 100 * (1 - p / 100) / 9000), (p, share)
    risk = [r["at_risk_share"] for r in audit.rows]
    assert risk[0] > risk[1], risk  # p = 5 teaches more than p = 60
    passing = [r["p"] for r in audit.rows if r["verdict"] == PASS]
    assert audit.recommended == (min(passing) if passing else None)
    assert "values changed" in (out / "report.html").read_text()
    for grid, message in (("[0.3]", "a percentage: give 30 for p = 0.3"),
                          ("[30, 100]", "must be at most 99"), ("[0]", ">= 1")):  # fmt: skip
        cfg.write_text(f'[audit]\ndata = "{small_csv}"\nmethod = "pram"\nqi = ["sex"]\n'
                       f'sensitive = "salary"\ngrid = {{ p = {grid} }}\n')  # fmt: skip
        with pytest.raises(PrivlabError, match=message):
            load_config(cfg)


def test_real_share_is_n_over_m_rounded_up_to_two_digits():
    """Alpha-beta's prior in the audit: the input's distinct tuples over the domain's, by
    enumeration on tiny tables, rounded up (never below n/m) to two significant digits."""
    from privlab.data.schema import Attribute, Schema
    from privlab.data.table import Table
    from privlab.report.audit import real_share

    def table(rows, sizes):
        attrs = tuple(Attribute(f"c{i}", tuple(range(s))) for i, s in enumerate(sizes))
        return Table(np.array(rows, dtype=np.int64).reshape(-1, len(sizes)), Schema(attrs))

    # 1 of 6 cells (0.1666...) -> 0.17; duplicates count once
    assert real_share(table([[0, 1], [0, 1], [0, 1]], (2, 3)), ["c0", "c1"]) == 0.17
    # 3 of 3 -> 1; 2 of 3 (0.666...) -> 0.67; 1 of 3 over one column of two
    assert real_share(table([[0, 0], [1, 1], [2, 0]], (3, 2)), ["c0"]) == 1.0
    assert real_share(table([[0, 0], [1, 1], [1, 0]], (3, 2)), ["c0"]) == 0.67
    # 7 of 7000 = 0.001 exactly stays 0.001; 8 of 7000 (0.001142...) -> 0.0012
    rows = [[i, 0] for i in range(7)]
    assert real_share(table(rows, (7000, 1)), ["c0", "c1"]) == 0.001
    assert real_share(table([*rows, [7, 0]], (7000, 1)), ["c0", "c1"]) == 0.0012
    rng = np.random.default_rng(3)
    for _ in range(200):
        sizes = tuple(int(x) for x in rng.integers(1, 9, size=3))
        count = int(rng.integers(1, 40))
        rows = np.column_stack([rng.integers(0, s, size=count) for s in sizes])
        d = real_share(table(rows, sizes), ["c0", "c1", "c2"])
        exact = len({tuple(r) for r in rows.tolist()}) / int(np.prod(sizes))
        assert exact <= d <= 1 and d < exact * 1.1 + 1e-12, (exact, d)
        assert float(f"{d:.2g}") == d


def test_an_alphabeta_audit_runs_from_the_largest_gamma_and_counts_the_real_tuples_kept(
    small_csv, tmp_path
):
    """Issue 37's alpha-beta in the audit: gamma in percent, the prior d the input's share of
    real tuples (rounded up); the grid runs from the largest gamma (the weakest protection)
    down; each release is `alphabeta`'s for the seed its custody keeps; the membership
    attack judges it; the utility is the share of the input's distinct tuples published
    (the custody's real column), about alpha + beta = 1 - d / gamma (Thm 4.3 with
    equality); a gamma at or below d is not eligible."""
    from privlab.data.datasets import load_input
    from privlab.publish import load_release
    from privlab.publish.alpha_beta import alphabeta
    from privlab.release.base import Custody
    from privlab.report.audit import real_share

    columns = ["workclass", "relationship", "sex", "race", "occupation"]
    cfg = tmp_path / "ab.toml"
    body = (
        f'[audit]\ndata = "{small_csv}"\nmethod = "alphabeta"\n'
        'qi = ["workclass", "relationship", "sex", "race"]\nsensitive = "occupation"\n'
    )
    cfg.write_text(body + "grid = { gamma = [40, 95, 2] }\nreleases = 1\n")  # fmt: skip
    config = load_config(cfg)
    assert config.audit.grid == {"gamma": (95, 40, 2)}  # from the weakest protection
    assert load_config(cfg).to_toml() == config.to_toml()
    out = tmp_path / "out"
    audit = run_audit(config, out, progress=False)
    table = load_input(str(small_csv), drop_missing=True)
    d = real_share(table, columns)
    n = len(table.to_pandas()[columns].drop_duplicates())
    assert 0.05 < d < 0.4  # the grid's 2 is below it
    assert [r["gamma"] for r in audit.rows] == [95, 40]
    assert "gamma = 2% is not above the input's share of real tuples" in audit.skipped[2]
    for row in audit.rows:
        g = row["gamma"]
        name = f"alphabeta-gamma{g}"
        release = load_release(out / name)
        kept = Custody.load(tmp_path / "out.custody" / name)
        again = alphabeta(table, columns=columns, d=d, gamma=g / 100, rng=kept.replay())
        assert release.d == d and release.gamma == g / 100
        assert np.array_equal(release.table.codes, again.table.codes)
        real = int(kept.truth.codes.sum())
        assert row["real_kept"] == pytest.approx(real / n, abs=1e-12)
        keep = 1 - d / (g / 100)  # alpha + beta
        assert abs(real / n - keep) < 4 * np.sqrt(keep * (1 - keep) / n), (g, real / n, keep)
        assert audit.reports[g].attribute["strongest"] == "membership"
    # at gamma = 0.95 every tuple of the view is real with probability 0.95 at prior d
    assert audit.rows[0]["at_risk_share"] == 1.0 and audit.rows[0]["verdict"] == FAIL
    assert audit.rows[1]["at_risk_share"] < 0.05
    passing = [r["gamma"] for r in audit.rows if r["verdict"] == PASS]
    assert audit.recommended == (passing[0] if passing else None) == 40
    assert audit.recommendation.startswith("Publish with gamma = 40")
    assert "real tuples published" in audit.recommendation
    page = (out / "report.html").read_text()
    assert "tuples found real" in page and "real tuples published" in page
    step = audit.reports[95].verdict["next_step"]
    assert step.startswith("lower gamma to 40: the share of published tuples the attacker "
                           "finds real with probability >= 0.8 falls from 100.0% to ")  # fmt: skip
    assert audit.reports[40].verdict.get("next_step") != step
    for extra, message in (("grid = { gamma = [0.5] }\n", "a percentage: give 50 for gamma"),
                           ('grid = { gamma = [50] }\nkeep = ["age"]\n',
                            "keep does not apply to alphabeta"),
                           ("grid = { gamma = [100] }\n", "at most 99")):  # fmt: skip
        cfg.write_text(body + extra)
        with pytest.raises(PrivlabError, match=message):
            load_config(cfg)


def test_a_marginals_audit_makes_what_publish_marginals_makes(small_csv, tmp_path):
    """Issue 37's anonymized marginals in the audit: the release of each k is the one
    `publish_marginals` makes (it draws nothing: one release per setting), each person read
    off the max-ent estimate by the max-ent attack (the data is the population), the KL
    divergence of the estimate from the data as its utility (the custody's KL path)."""
    from privlab.data.datasets import load_input
    from privlab.publish.marginals import publish_marginals

    cfg = tmp_path / "mg.toml"
    body = (f'[attack]\niterations = 200\n[audit]\ndata = "{small_csv}"\n'
            'method = "marginals"\nqi = ["sex", "race", "relationship"]\n'
            'sensitive = "occupation"\n')  # fmt: skip
    cfg.write_text(body + "grid = { k = [100, 5] }\n")
    config = load_config(cfg)
    assert config.audit.releases == 1 and config.audit.grid == {"k": (5, 100)}
    out = tmp_path / "out"
    audit = run_audit(config, out, progress=False)
    assert audit.utility_key == "kl" and "KL from the data" in audit.tradeoff_svg
    table = load_input(str(small_csv), drop_missing=True)
    for row in audit.rows:
        k = row["k"]
        own = publish_marginals(table, qi=["sex", "race", "relationship"],
                                sensitive="occupation", k=k)  # fmt: skip
        own.save(tmp_path / f"own-{k}", draft=True)
        for f in sorted((tmp_path / f"own-{k}").glob("*.csv")):
            assert (out / f"marginals-k{k}" / f.name).read_bytes() == f.read_bytes(), f.name
        assert row["kl"] == pytest.approx(own.kl_path[-1], abs=1e-12)
        assert row["releases"] == 1
        assert audit.reports[k].attribute["strongest"] == "maxent"
    for extra, message in (('grid = { k = [5] }\nkeep = ["age"]\n',
                            "keep does not apply to marginals"),
                           ("grid = { k = [5] }\nreleases = 2\n",
                            "marginals draws nothing")):  # fmt: skip
        cfg.write_text(body + extra)
        with pytest.raises(PrivlabError, match=message):
            load_config(cfg)


def test_a_synthetic_audit_judges_each_epsilon_as_privlab_report_does(
    small_csv, tmp_path, monkeypatch
):
    """Issue 37's DP synthetic data in the audit: MST at each epsilon (a number, the grid
    from the largest down), each release the one `mst` draws for the seed its custody keeps,
    judged as `privlab report` judges a synthetic table (the policy's max_epsilon, the
    learning attacker beyond the control people); the utility the 2-way workload error."""
    import functools

    import privlab.publish.synthetic as synthetic
    from privlab.data.datasets import load_input
    from privlab.publish import load_release
    from privlab.release.base import Custody

    # the fit's iterations cut for the test (the draws and the judging are the audit's own)
    monkeypatch.setattr(synthetic, "mst", functools.partial(synthetic.mst, iters=300))
    control = tmp_path / "control.csv"
    load_adult().take(np.arange(3000, 6000)).to_pandas().to_csv(control, index=False)
    cfg = tmp_path / "syn.toml"
    body = (
        f'[control]\npublic = "{control}"\n[audit]\ndata = "{small_csv}"\n'
        'method = "synthetic"\nqi = ["age", "sex", "race"]\nsensitive = "salary"\n'
    )
    cfg.write_text(body + "grid = { epsilon = [1, 8] }\nreleases = 1\n")
    config = load_config(cfg)
    assert config.audit.grid == {"epsilon": (8.0, 1.0)}  # from the weakest protection
    assert load_config(cfg).to_toml() == config.to_toml()
    out = tmp_path / "out"
    audit = run_audit(config, out, progress=False)
    assert [r["epsilon"] for r in audit.rows] == [8.0, 1.0]
    table = load_input(str(small_csv), drop_missing=True)
    roled = table.select(["age", "sex", "race", "salary"]).with_roles(
        qi=["age", "sex", "race"], sensitive="salary")  # fmt: skip
    for row in audit.rows:
        e = row["epsilon"]
        name = f"synthetic-epsilon{e}"
        rep = audit.reports[e]
        release = load_release(out / name)
        again = synthetic.mst(roled, epsilon=e, columns=["age", "sex", "race", "salary"],
                              domain_from_data=True, rng=Custody.load(
                                  tmp_path / "out.custody" / name).replay())  # fmt: skip
        assert release.epsilon == pytest.approx(e) and release.to_pandas().equals(
            again.to_pandas())  # fmt: skip
        residual = rep.attribute["learning"]["at_risk"]["residual"]
        assert row["at_risk_share"] == residual["value"]
        assert row["at_risk_share_ci"] == [residual["low"], residual["high"]]
        assert row["total_variation"] == rep.utility["workload"]["2-way"]["mean"] > 0
        assert row["verdict"] == rep.verdict["level"]
        # the bounds of age were read from the file: epsilon does not cover them
        assert any("read from the private data" in f["reason"] and f["level"] == REVIEW
                   for f in rep.verdict["findings"])  # fmt: skip
    assert audit.rows[0]["verdict"] == FAIL
    assert any("the policy allows epsilon <= 1" in x for x in audit.rows[0]["reasons"])
    assert audit.rows[1]["verdict"] != FAIL or not any(
        "policy allows" in x for x in audit.rows[1]["reasons"])  # fmt: skip
    page = (out / "report.html").read_text()
    assert "people at risk beyond the control" in page and "total variation" in page
    assert f'href="reports/synthetic-epsilon{audit.shown}.html"' in page  # its own page
    for extra, message in (("grid = { epsilon = [0] }\n", r"must lie in \(0, 100\]"),
                           ("grid = { epsilon = [150] }\n", r"must lie in \(0, 100\]"),
                           ('grid = { epsilon = [1] }\nkeep = ["fnlwgt"]\n',
                            "keep does not apply to synthetic")):  # fmt: skip
        cfg.write_text(body + extra)
        with pytest.raises(PrivlabError, match=message):
            load_config(cfg)


def test_a_synthetic_setting_takes_its_worst_release_s_verdict():
    """Over several releases of a synthetic setting: the share is their mean with a
    prediction interval (no chains: each release's people's variance read off its
    interval), and the setting's verdict is its worst release's."""
    from types import SimpleNamespace

    from privlab.report.audit import _worst_verdict, attribute_share, between_releases
    from privlab.report.build import Z95

    def synthetic(value, half, level):
        residual = {"value": value, "low": value - half, "high": value + half}
        return SimpleNamespace(
            attribute={"measured": True, "learning": {"at_risk": {"residual": residual}}},
            verdict={"level": level, "reasons": [f"{level} at {value}"]},
        )

    draws = [synthetic(0.01, 0.02, PASS), synthetic(0.03, 0.02, REVIEW)]
    draws.append(synthetic(0.02, 0.02, PASS))
    want = (0.03, None, 0.0, pytest.approx((0.02 / Z95) ** 2))
    assert attribute_share(draws[1].attribute) == want
    spread = between_releases(draws)
    assert spread["mean"] == pytest.approx(0.02) and spread["releases"] == 3
    half = Z95 * np.sqrt(np.var([0.01, 0.03, 0.02], ddof=1) * (1 + 1 / 3) + (0.02 / Z95) ** 2)
    assert spread["interval"] == pytest.approx([max(0.0, 0.02 - half), 0.02 + half])
    v = _worst_verdict(draws, spread)
    assert v["level"] == REVIEW and v["reasons"][0] == "REVIEW at 0.03"
    assert "release 2 of 3" in v["reasons"][1] and "2.0% of people at risk" in v["reasons"][1]
    draws[2].verdict = {"level": FAIL, "reasons": ["FAIL at 0.02"]}
    assert _worst_verdict(draws, spread)["level"] == FAIL
    assert attribute_share({"measured": False}) is None


def _generalization_config(tmp_path, data, grid="[2, 50]", extra=""):
    cfg = tmp_path / "generalization.toml"
    cfg.write_text(
        "[attack]\niterations = 200\nchains = 2\nanneal = 0\nretry = false\n"
        f'[audit]\ndata = "{data}"\nmethod = "generalization"\n'
        'qi = ["age", "sex", "race", "marital-status"]\nsensitive = "salary"\n'
        f'keep = ["hours-per-week"]\ngrid = {{ k = {grid} }}\n{extra}'
    )
    return cfg


def test_a_generalization_audit_makes_what_generalize_makes_and_replays(small_csv, tmp_path):
    """Issue 37's compare for generalization: the audit's release of each k is the one
    `generalize` makes (keep columns published, nothing else), one release per setting, the
    records per combination as its utility, and a rerun replays the attacks from the
    custody's salts (generalization draws nothing: no seed to replay)."""
    from privlab.data.datasets import load_input
    from privlab.publish import generalize, load_release

    cfg = load_config(_generalization_config(tmp_path, small_csv))
    assert cfg.audit.releases == 1 and cfg.audit.keep == ("hours-per-week",)
    out = tmp_path / "out"
    audit = run_audit(cfg, out, progress=False)
    assert audit.utility_key == "avg_class_size" and [r["k"] for r in audit.rows] == [2, 50]
    table = load_input(str(small_csv), drop_missing=True)
    for r in audit.rows:
        name = f"generalization-k{r['k']}"
        assert r["releases"] == 1 and r["verdict"] in (PASS, REVIEW, FAIL)
        own = generalize(table, qi=["age", "sex", "race", "marital-status"], sensitive="salary",
                         keep=["hours-per-week"], k=r["k"])  # fmt: skip
        own.save(tmp_path / f"own-{r['k']}", draft=True)  # a candidate: not registered
        assert (out / name / "table.csv").read_bytes() == (
            tmp_path / f"own-{r['k']}" / "table.csv"
        ).read_bytes()
        published = pd.read_csv(out / name / "table.csv", dtype=str)
        named = {"age", "sex", "race", "marital-status", "hours-per-week", "salary"}
        assert list(published.columns) == [c for c in table.names if c in named]
        sizes = published.groupby(["age", "sex", "race", "marital-status"]).size()
        assert sizes.min() >= r["k"]  # k-anonymous on the quasi-identifiers
        assert r["avg_class_size"] == pytest.approx(len(published) / len(sizes))
        # the kept column is published unchanged: the release's own check links on it too
        assert "hours-per-week" in load_release(out / name).privacy().linkable
        # each person linked to their class: the report judged the attribute attack
        assert audit.reports[r["k"]].attribute["measured"]
    assert audit.rows[0]["avg_class_size"] < audit.rows[1]["avg_class_size"]
    assert "records per combination" in audit.tradeoff_svg
    assert "records per combination (mean)" in (out / "report.html").read_text()
    custody = tmp_path / "out.custody"
    assert not [p for p in out.rglob("*") if p.name in CUSTODY_FILES]
    assert sorted(p.name for p in custody.iterdir()) == ["generalization-k2",
                                                         "generalization-k50"]  # fmt: skip
    doc1 = json.loads((out / "report.json").read_text())
    again = run_audit(cfg, out, progress=False, force=True)
    assert again.draws.startswith("replayed from the earlier run's custody")
    assert _timeless(json.loads((out / "report.json").read_text())) == _timeless(doc1)


def test_a_generalization_audit_refuses_several_releases_and_a_column_with_two_roles(tmp_path):
    bad = _generalization_config(tmp_path, "adult", extra="releases = 2\n")
    with pytest.raises(PrivlabError, match="generalization draws nothing"):
        load_config(bad)
    bad.write_text(bad.read_text().replace("releases = 2\n", "").replace(
        'keep = ["hours-per-week"]', 'keep = ["sex"]'))  # fmt: skip
    with pytest.raises(PrivlabError, match="keep names 'sex', which has another role"):
        load_config(bad)
    bad.write_text(bad.read_text().replace('keep = ["sex"]', 'keep = "sex"'))
    with pytest.raises(PrivlabError, match="keep must be a list of column names"):
        load_config(bad)
    bad.write_text(bad.read_text().replace('keep = "sex"', "hierarchies = 3"))
    with pytest.raises(PrivlabError, match="hierarchies must be a folder of ARX files"):
        load_config(bad)
    bad.write_text(bad.read_text().replace("hierarchies = 3", 'hierarchies = "h"').replace(
        'method = "generalization"', 'method = "anatomy"').replace("{ k =", "{ l ="))  # fmt: skip
    with pytest.raises(
        PrivlabError, match="hierarchies apply to generalization and marginals only"
    ):
        load_config(bad)
    # the keep columns round-trip through the TOML the audit writes
    import tomllib

    ok = load_config(_generalization_config(tmp_path, "adult", extra='hierarchies = "h"\n'))
    assert ok.audit.hierarchies == "h"
    assert parse_config(tomllib.loads(ok.to_toml()), "x").audit == ok.audit


def test_a_suppression_audit_blanks_more_cells_as_k_grows(small_csv, tmp_path):
    """Local suppression over several k: each setting's release is `suppress`'s (one per
    setting: it draws nothing), its loss the share of quasi-identifier cells published as *
    (counted here in the published file), growing with k."""
    from privlab.data.datasets import load_input
    from privlab.publish.generalization import suppress

    qi = ["age", "sex", "race", "marital-status"]
    cfg = tmp_path / "suppression.toml"
    cfg.write_text(
        "[attack]\niterations = 200\nchains = 2\nanneal = 0\nretry = false\n"
        f'[audit]\ndata = "{small_csv}"\nmethod = "suppression"\nqi = {json.dumps(qi)}\n'
        'sensitive = "occupation"\ngrid = { k = [2, 10] }\n'
    )
    audit = run_audit(load_config(cfg), tmp_path / "out", progress=False)
    assert audit.utility_key == "suppressed_share" and [r["k"] for r in audit.rows] == [2, 10]
    table = load_input(str(small_csv), drop_missing=True)
    shares = []
    for r in audit.rows:
        name = f"suppression-k{r['k']}"
        own = suppress(table, qi, r["k"], sensitive="occupation")
        own.save(tmp_path / f"own-{r['k']}", draft=True)
        published = (tmp_path / "out" / name / "table.csv").read_bytes()
        assert published == (tmp_path / f"own-{r['k']}" / "table.csv").read_bytes()
        cells = pd.read_csv(tmp_path / "out" / name / "table.csv", dtype=str)[qi]
        assert r["suppressed_share"] == pytest.approx((cells == "*").to_numpy().mean())
        assert r["releases"] == 1
        shares.append(r["suppressed_share"])
    assert 0 < shares[0] < shares[1]
    assert "cells suppressed (%)" in audit.tradeoff_svg
    assert "quasi-identifier cells suppressed" in (tmp_path / "out" / "report.html").read_text()


def _rerun_replays(config, out, written: dict[str, bytes], file: str) -> None:
    """A rerun over the same folders (``--force``) writes each setting's ``file`` again,
    byte for byte (``written``: setting name -> bytes), replayed from its custody."""
    run_audit(config, out, progress=False, force=True)
    for name, data in written.items():
        assert (out / name / file).read_bytes() == data, name


def test_a_dp_histogram_audit_judges_each_epsilon_by_its_guarantee_and_spends_nothing(
    small_csv, tmp_path, cli, registry
):
    """Issue 37's DP histogram in the audit: the joint counts of qi and sensitive at each
    epsilon (from the largest down), each the file `privlab dp histogram --replay` writes
    from its custody; FAIL above the policy's max_epsilon, PASS within it and the input's
    budget were it published; the candidates spend nothing from the ledger; the cost the
    mechanism's RMSE per cell (a closed form: nothing measured against the true counts goes
    into a report that may be shared); a rerun replays; a file's domains read from it are a
    REVIEW; more than one release a setting is refused."""
    from privlab._registry import Registry

    cfg = tmp_path / "h.toml"
    body = '[audit]\nmethod = "dp-histogram"\nqi = ["race", "sex"]\nsensitive = "salary"\n'
    cfg.write_text(body + 'data = "adult"\ngrid = { epsilon = [0.5, 2] }\nseed = 3\n')
    config = load_config(cfg)
    assert config.audit.grid == {"epsilon": (2.0, 0.5)} and config.audit.releases == 1
    out = tmp_path / "out"
    audit = run_audit(config, out, progress=False)
    assert [(r["epsilon"], r["verdict"]) for r in audit.rows] == [(2.0, FAIL), (0.5, PASS)]
    assert audit.recommended == 0.5
    assert audit.recommendation.startswith("Publish with epsilon = 0.5: the largest epsilon")
    adult = load_adult()
    assert Registry().epsilon(adult.fingerprint()) == 0  # candidates: nothing spent
    columns = ["race", "sex", "salary"]
    written = {}
    for row in audit.rows:
        e = row["epsilon"]
        name = f"dp-histogram-epsilon{e}"
        assert sorted(p.name for p in (out / name).iterdir()) == ["histogram.csv"]
        written[name] = (out / name / "histogram.csv").read_bytes()
        rep = audit.reports[e]
        # the two-sided geometric mechanism's variance, 2a / (1 - a)^2 with a = e^-epsilon
        a = np.exp(-e)
        assert row["rmse_per_cell"] == pytest.approx(np.sqrt(2 * a / (1 - a) ** 2), rel=1e-12)
        assert row["rmse_per_cell"] == rep.utility["expected_rmse_per_cell"]
        assert "measured_rmse_per_cell" not in rep.utility and row["at_risk_share"] is None
        budget = [f for f in rep.verdict["findings"] if "published, it would" in f["reason"]]
        if e <= 1:  # nothing spent yet: the candidate's own epsilon against the total
            assert [f["level"] for f in budget] == [PASS]
            assert f"epsilon = {e:g} of its total 1" in budget[0]["reason"]
        else:
            assert [f["level"] for f in budget] == [FAIL]
            assert "above the input's total of 1" in budget[0]["reason"]
        replay = tmp_path / f"{name}.csv"
        code, _, err = cli("dp", "histogram", "adult", "--columns", ",".join(columns),
                           "--epsilon", str(e), "--replay", tmp_path / "out.custody" / name,
                           "--out", replay)  # fmt: skip
        assert code == 0, err
        assert replay.read_bytes() == written[name]
    assert any("the policy allows epsilon <= 1" in x for x in audit.rows[0]["reasons"])
    step = audit.reports[2.0].verdict["next_step"]
    assert step.startswith("lower epsilon to 0.5: within the policy, the noise per cell grows")
    page = (out / "report.html").read_text()
    assert "noise per cell (RMSE, records)" in page and "attack right" not in page
    assert "nothing was attacked" in page
    _rerun_replays(config, out, written, "histogram.csv")
    # a budget already spent: a candidate that would overspend it FAILs
    registry_total = Registry().epsilon(adult.fingerprint())
    assert registry_total == pytest.approx(2.5)  # the two replays above were published
    again = run_audit(config, tmp_path / "o3", progress=False)
    assert [r["verdict"] for r in again.rows] == [FAIL, FAIL]
    assert any("above the input's total of 1" in x for x in again.rows[1]["reasons"])
    # a file's domains are read from it: epsilon does not cover them
    cfg.write_text(body + f'data = "{small_csv}"\ngrid = {{ epsilon = [1] }}\n')
    (one,) = run_audit(load_config(cfg), tmp_path / "o4", progress=False).rows
    assert one["verdict"] == REVIEW
    assert any("race, sex, salary were read from the private data" in x for x in one["reasons"])
    cfg.write_text(body + 'data = "adult"\ngrid = { epsilon = [1] }\nreleases = 3\n')
    with pytest.raises(PrivlabError, match="judged by its guarantee"):
        load_config(cfg)


@pytest.mark.parametrize("method", ["dp-naive-bayes", "dp-tree"])
def test_a_dp_model_audit_tests_each_epsilon_on_held_out_people_and_spends_nothing(
    method, small_csv, tmp_path, cli, registry
):
    """Issue 37's DP learners in the audit: a classifier of the sensitive attribute from the
    quasi-identifiers at each epsilon, trained on the input less a fifth held out at random
    (one split for every setting, its record in each custody) and tested on that fifth.
    Each model is the file `privlab dp nb|tree train --replay` writes from its custody, whose
    held-out accuracy is the audit's; the accuracy and the majority baseline equal an
    independent recount on the split rebuilt from the custody's record; FAIL above the
    policy, PASS within it; nothing spent; a rerun replays models and split; [utility]
    holdout tests on those people instead; a file's domains read from it are a REVIEW."""
    from privlab._io import read_json
    from privlab._registry import Registry
    from privlab._rng import SeedRecord
    from privlab.learn.dp_naive_bayes import DPNaiveBayes, predict_table
    from privlab.learn.dp_tree import DPTreeModel

    cfg = tmp_path / "m.toml"
    body = f'[audit]\nmethod = "{method}"\nqi = ["age", "sex", "race"]\nsensitive = "salary"\n'
    cfg.write_text(body + 'data = "adult"\ngrid = { epsilon = [0.5, 2] }\nseed = 3\n')
    config = load_config(cfg)
    assert config.audit.grid == {"epsilon": (2.0, 0.5)} and config.audit.releases == 1
    out = tmp_path / "out"
    audit = run_audit(config, out, progress=False)
    assert [(r["epsilon"], r["verdict"]) for r in audit.rows] == [(2.0, FAIL), (0.5, PASS)]
    assert audit.recommended == 0.5 and audit.utility_key == "held_out_accuracy"
    adult = load_adult()
    assert Registry().epsilon(adult.fingerprint()) == 0  # candidates: nothing spent
    kept = set()
    written = {}
    command = "nb" if method == "dp-naive-bayes" else "tree"
    for row in audit.rows:
        e = row["epsilon"]
        name = f"{method}-epsilon{e}"
        assert sorted(p.name for p in (out / name).iterdir()) == ["model.json"]
        path = out / name / "model.json"
        written[name] = path.read_bytes()
        custody = read_json(tmp_path / "out.custody" / name / "custody.json")
        kept.add(json.dumps(custody["holdout"], sort_keys=True))
        # the split rebuilt from the custody's record, the model scored on it anew
        order = SeedRecord.from_dict(custody["holdout"]).generator().permutation(adult.n_rows)
        cut = round(0.2 * adult.n_rows)
        held = adult.take(np.sort(order[:cut]))
        truth = held.to_pandas()["salary"].astype(str)
        if method == "dp-naive-bayes":
            accuracy = predict_table(DPNaiveBayes.load(path), held)[1]
        else:
            pred = DPTreeModel.load(path).predict(held.to_pandas())
            accuracy = float((truth.to_numpy() == pred.astype(str)).mean())
        assert row["held_out_accuracy"] == pytest.approx(accuracy, abs=1e-12)
        assert row["majority"] == pytest.approx(truth.value_counts(normalize=True).max())
        rep = audit.reports[e]
        assert rep.utility["holdout"].startswith(f"the {cut:,} people held out (20% of adult")
        assert row["at_risk_share"] is None and rep.attribute["measured"] is False
        budget = [f for f in rep.verdict["findings"] if "published, it would" in f["reason"]]
        assert [f["level"] for f in budget] == [PASS if e <= 1 else FAIL]
        replay = tmp_path / f"{name}.json"
        code, said, err = cli("dp", command, "train", "adult", "--target", "salary",
                              "--features", "age,sex,race", "--epsilon", str(e),
                              "--drop-missing", "--out", replay,
                              "--replay", tmp_path / "out.custody" / name)  # fmt: skip
        assert code == 0, err
        assert replay.read_bytes() == written[name]
        assert f"held-out rows: {100 * accuracy:.2f}%" in said + err
    assert len(kept) == 1  # one split for every setting
    step = audit.reports[2.0].verdict["next_step"]
    assert step.startswith("lower epsilon to 0.5: within the policy, the model is right for")
    assert audit.recommendation.startswith("Publish with epsilon = 0.5: the largest epsilon")
    assert "the model predicts salary right for" in audit.recommendation
    page = (out / "report.html").read_text()
    assert "accuracy on held-out people" in page and "attack right" not in page
    assert "model, without its report or this page" in page
    _rerun_replays(config, out, written, "model.json")  # from the same split too
    if method == "dp-tree":
        return
    # [utility] holdout: trained on every row, tested on those people; nothing kept
    cfg.write_text(body + 'data = "adult"\ngrid = { epsilon = [1] }\n[utility]\n'
                   'holdout = "adult-test"\n')  # fmt: skip
    (one,) = run_audit(load_config(cfg), tmp_path / "o2", progress=False).rows
    custody = read_json(tmp_path / "o2.custody" / f"{method}-epsilon1.0" / "custody.json")
    assert "holdout" not in custody
    model = DPNaiveBayes.load(tmp_path / "o2" / f"{method}-epsilon1.0" / "model.json")
    test = load_adult(split="test")
    assert one["held_out_accuracy"] == pytest.approx(predict_table(model, test)[1], abs=1e-12)
    # trained on every row of adult, not four fifths of it (the counts' noise is ~ 3/epsilon)
    assert model.class_count_.sum() == pytest.approx(adult.n_rows, abs=300)
    # a file's domains are read from it: epsilon does not cover them
    cfg.write_text(body + f'data = "{small_csv}"\ngrid = {{ epsilon = [1] }}\n')
    (one,) = run_audit(load_config(cfg), tmp_path / "o4", progress=False).rows
    assert one["verdict"] == REVIEW
    assert any("were read from the private data" in x for x in one["reasons"])
