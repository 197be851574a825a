"""The custodian's report (`privlab report`, `privlab.report.build`) and its config."""

from __future__ import annotations

import json
import re
import tomllib
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from conftest import fails
from privlab.data.datasets import load_adult
from privlab.errors import ParameterError
from privlab.publish.anatomy import anatomize
from privlab.report import FAIL, PASS, REVIEW, build, load_config, parse_config, verdict
from privlab.report.config import Config, Thresholds

QI = ("workclass", "relationship", "sex", "salary")
SECTIONS = ("header", "verdict", "identity", "attribute", "utility", "diagnostics")
FAST = {"attack": {"iterations": 400, "chains": 2, "anneal": 0}}


@pytest.fixture(scope="module")
def small_release(tmp_path_factory):
    """3,000 Adult rows anatomized at l = 2, saved with its custody."""
    where = tmp_path_factory.mktemp("rel")
    table = load_adult().take(np.arange(3000))
    rel = anatomize(table, qi=QI, sensitive="occupation", l=2, rng=5)
    rel.save(where / "rel", custody=where / "custody")
    return where


@pytest.fixture(scope="module")
def report(small_release, tmp_path_factory):
    cfg = parse_config({**FAST, "control": {"public": "adult-test"},
                        "utility": {"holdout": "adult-test"}})  # fmt: skip
    risk = tmp_path_factory.mktemp("risk") / "person-risk.csv"
    rep = build(small_release / "rel", custody=small_release / "custody", config=cfg,
                person_risk=risk)  # fmt: skip
    return rep, risk


# -- config -----------------------------------------------------------------------------------
def test_config_defaults_and_round_trip():
    c = load_config(None)
    assert c.thresholds == Thresholds() and c.attack.names == ("definetti",)
    doc = {
        "thresholds": {"max_at_risk_share": 0.1, "at_risk": 0.9},
        "attack": {"names": ["definetti", "em"], "iterations": "auto"},
        "control": {"public": "adult-test"},
        "audit": {"qi": list(QI), "sensitive": "occupation", "grid": {"l": [4, 2, 3, 3]}},
    }
    c = parse_config(doc)
    assert c.thresholds.max_at_risk_share == 0.1 and c.attack.iterations is None
    assert c.audit.grid == {"l": (2, 3, 4)}
    assert parse_config(tomllib.loads(c.to_toml())) == c


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        ({"thresholds": {"max_at_risk_shre": 0.1}}, "unknown key 'max_at_risk_shre'"),
        ({"thresholds": {"max_at_risk_share": 1.5}}, "outside [0, 1]"),
        ({"thresholds": {"at_risk": 0.0}}, "outside (0, 1]"),
        ({"thresholds": {"max_rhat": 0.9}}, "max_rhat"),
        ({"thresholds": {"at_risk": "high"}}, "must be a number"),
        ({"reprot": {}}, "unknown section or key 'reprot'"),
        ({"attack": {"names": ["magic"]}}, "names must list attacks"),
        ({"attack": {"chains": 0}}, "chains must be a whole number >= 1"),
        ({"population": {"sampling_fraction": 0}}, "outside (0, 1]"),
        ({"audit": {"qi": ["a"], "sensitive": "s", "grid": {"k": [2]}}}, "does not apply"),
        ({"audit": {"qi": ["a"], "sensitive": "s", "grid": {"l": [1]}}}, ">= 2"),
        ({"audit": {"qi": ["a"], "sensitive": "s", "grid": {}}}, "one parameter"),
        ({"audit": {"method": "pram", "qi": ["a"], "sensitive": "s"}}, "audits yet"),
    ],
)
def test_config_refuses_bad_keys_and_ranges(doc, needle):
    with pytest.raises(ParameterError) as e:
        parse_config(doc)
    assert needle in str(e.value)


def test_config_file_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[thresholds\n")
    with pytest.raises(ParameterError, match="not valid TOML"):
        load_config(bad)


# -- the verdict ------------------------------------------------------------------------------
def _attribute(share, ci):
    summary = {"at_risk_share": share, "at_risk_share_ci": list(ci)}
    return {"measured": True, "strongest": "definetti", "sensitive": "disease",
            "attacks": {"definetti": {"summary": summary}}}  # fmt: skip


def _identity(pmax, judged=True):
    return {"judged": judged, "risk": {"prosecutor_max": pmax}}


NO_DIAG = {"attacks": {}}


@pytest.mark.parametrize(
    ("share", "ci", "level"),
    [
        (0.10, (0.08, 0.12), FAIL),  # above the 5% limit
        (0.04, (0.03, 0.06), REVIEW),  # within, but the interval reaches above
        (0.02, (0.01, 0.03), PASS),
        (0.05, (0.04, 0.05), PASS),  # at the limit is within it
    ],
)
def test_verdict_on_the_at_risk_share(share, ci, level):
    v = verdict("anatomy", _identity(1.0, judged=False), _attribute(share, ci), NO_DIAG, Config())
    assert v["level"] == level
    assert any("disease" in r for r in v["reasons"])


def test_verdict_identity_is_judged_only_where_rows_carry_the_value():
    attr = _attribute(0.0, (0.0, 0.01))
    assert verdict("anatomy", _identity(1.0, False), attr, NO_DIAG, Config())["level"] == PASS
    v = verdict("generalization", _identity(0.5), attr, NO_DIAG, Config())
    assert v["level"] == FAIL and "re-identified with probability 0.50" in v["reasons"][0]
    assert verdict("generalization", _identity(0.2), attr, NO_DIAG, Config())["level"] == PASS


def test_verdict_unconverged_attack_or_unmeasured_risk_is_review():
    attr = _attribute(0.0, (0.0, 0.01))
    diag = {"attacks": {"definetti": {"converged": False, "rhat_loglik": 1.3, "ess_loglik": 9}}}
    v = verdict("anatomy", _identity(1.0, False), attr, diag, Config())
    assert v["level"] == REVIEW and "did not converge" in v["reasons"][0]
    assert "R-hat 1.300" in v["reasons"][0] and "effective sample size 9" in v["reasons"][0]
    ok = {"attacks": {"definetti": {"converged": True, "rhat_loglik": 1.01}}}
    assert verdict("anatomy", _identity(1.0, False), attr, ok, Config())["level"] == PASS
    strict = Config(thresholds=Thresholds(max_rhat=1.005))
    assert verdict("anatomy", _identity(1.0, False), attr, ok, strict)["level"] == REVIEW
    unmeasured = {"measured": False, "why": "no custody directory was given"}
    v = verdict("anatomy", _identity(1.0, False), unmeasured, NO_DIAG, Config())
    assert v["level"] == REVIEW and "no custody" in v["reasons"][0]


# -- the built report -------------------------------------------------------------------------
def test_report_figures_agree_with_the_person_risks(report):
    rep, risk = report
    a = rep.attribute
    assert a["measured"] and a["n"] == 3000
    res = a["attacks"]["definetti"]
    people = pd.read_csv(risk)
    assert len(people) == 3000 and list(people["row"]) == list(range(3000))
    top = people["definetti_top_probability"].to_numpy()
    # the at-risk share is the share of people whose top probability reaches 0.8 (rounded
    # to 6 digits in the CSV: allow the people within 1e-6 of the threshold)
    share = res["summary"]["at_risk_share"]
    assert (top >= 0.8 + 1e-6).mean() <= share <= (top >= 0.8 - 1e-6).mean()
    lo, hi = res["summary"]["at_risk_share_ci"]
    assert lo < share < hi
    # the survival curve at the threshold reads the same share
    x = np.asarray(a["top_survival"]["x"])
    curve = np.asarray(a["top_survival"]["definetti attack"])
    assert curve[0] == 1.0 and np.all(np.diff(curve) <= 0)
    assert curve[np.flatnonzero(np.isclose(x, 0.8))[0]] == pytest.approx(share, abs=1e-6)
    # per value: the people add up, and the at-risk counts add up to the total
    per = res["per_value"]
    assert sum(v["people"] for v in per) == 3000
    assert sum(v["at_risk_share"] * v["people"] for v in per) == pytest.approx(share * 3000)
    # random worlds on Anatomy at l = 2: nobody above 1/2, accuracy 1/2 up to groups of 3
    rw = res["random_worlds"]
    assert rw["at_risk_share"] == 0.0 and 0.45 <= rw["acc"] <= 0.5 + 1e-12
    assert a["max_disclosure"] == pytest.approx(0.5)
    # the learning attack beats what Anatomy promises
    assert res["summary"]["acc"] > rw["acc"]
    assert res["control"] is not None and res["residual_risk"] is not None


def test_report_utility_and_header(report, small_release):
    rep, _ = report
    u = rep.utility
    assert u["measures"]["groups"] > 0
    learner = u["learner"]
    assert learner["tested_on"] + learner["dropped"] == 15060  # adult-test without missing
    for k in ("accuracy_release", "accuracy_original", "majority_baseline"):
        assert 0 < learner[k] < 1
    h = rep.header
    assert h["method"] == "anatomy" and h["parameters"]["l"] == 2
    assert re.fullmatch("[0-9a-f]{64}", h["release_sha256"])
    assert h["columns"]["occupation"] == "sensitive"


def test_report_json_holds_no_secret_and_no_person(report, small_release):
    rep, _ = report
    text = rep.to_json()
    doc = json.loads(text)
    assert set(doc) >= set(SECTIONS)
    custody = json.loads((small_release / "custody" / "custody.json").read_text())
    html = rep.to_html()
    salt = str(custody["seed"]["salt"])  # the release was salted: the salt is the secret
    assert len(salt) > 20
    assert salt not in text and salt not in html

    # no per-person list: nothing in the JSON is as long as the number of people
    def longest(v):
        if isinstance(v, dict):
            return max((longest(x) for x in v.values()), default=0)
        if isinstance(v, list):
            return max([len(v), *(longest(x) for x in v)])
        return 0

    assert longest(doc) < 3000


class _Sections(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.svgs, self.external = [], 0, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.ids.append(a.get("id"))
        if tag == "svg" and "plot" in (a.get("class") or ""):
            self.svgs += 1
            assert "viewBox" in a or "viewbox" in a
        for key in ("src", "href"):
            if a.get(key) and re.match(r"(https?:)?//", a[key]):
                self.external.append(a[key])
        if tag in ("script", "link") and (a.get("src") or a.get("href")):
            self.external.append(a.get("src") or a.get("href"))


def test_report_html_is_self_contained_with_every_section(report):
    rep, _ = report
    html = rep.to_html()
    p = _Sections()
    p.feed(html)
    assert p.ids == list(SECTIONS)
    assert p.svgs == 4  # class sizes, top posterior, per value, calibration
    assert p.external == []
    v = rep.verdict
    assert v["level"] in (PASS, REVIEW, FAIL) and f">{v['level']}<" in html
    assert v["next_step"] in html


def test_report_without_custody_is_review(small_release):
    rep = build(small_release / "rel", config=parse_config(FAST))
    assert not rep.attribute["measured"] and rep.verdict["level"] == REVIEW
    assert "custody" in rep.verdict["reasons"][0]
    html = rep.to_html()
    assert "Not measured" in html


# -- the command ------------------------------------------------------------------------------
def _fast_config(tmp_path, extra=""):
    cfg = tmp_path / "fast.toml"
    cfg.write_text("[attack]\niterations = 200\nchains = 2\nanneal = 0\n" + extra)
    return cfg


def test_report_command_writes_html_json_and_person_risk(run, small_release, tmp_path):
    custody = tmp_path / "custody"
    import shutil

    shutil.copytree(small_release / "custody", custody)
    out = tmp_path / "r.html"
    code, stdout, err = run("report", small_release / "rel", "--custody", custody, "--out", out,
                            "--config", _fast_config(tmp_path))  # fmt: skip
    assert code == 0, err
    assert "verdict:" in stdout and "next step:" in stdout and str(out) in stdout
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert json.loads(out.with_suffix(".json").read_text())["verdict"]["level"] in stdout
    assert len(pd.read_csv(custody / "person-risk.csv")) == 3000
    fails(run("report", small_release / "rel", "--custody", custody, "--out", out), "exists")


def test_report_command_bad_input_one_line_nothing_written(run, small_release, tmp_path):
    out = tmp_path / "r.html"
    fails(run("report", tmp_path, "--out", out), "not a release")
    other = tmp_path / "other"
    rel = anatomize(load_adult().take(np.arange(500)), qi=QI, sensitive="occupation", l=2, rng=1)
    rel.save(other / "rel", custody=other / "custody")
    fails(run("report", small_release / "rel", "--custody", other / "custody", "--out", out),
          "another release")  # fmt: skip
    strict = _fast_config(tmp_path, "[thresholds]\nmax_rhat = 0.5\n")
    fails(run("report", small_release / "rel", "--out", out, "--config", strict), "max_rhat")
    bad = tmp_path / "bad.toml"
    bad.write_text("[thresholds]\nlimit = 0.1\n")
    fails(run("report", small_release / "rel", "--out", out, "--config", bad), "unknown key")
    fails(run("report", small_release / "rel", "--out", tmp_path / "r.pdf"), "HTML")
    fails(run("report", small_release / "rel", "--out", out, "--attacks", "magic"), "magic")
    assert not out.exists() and not out.with_suffix(".json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml", "fast.toml", "other"]


# -- in a browser -----------------------------------------------------------------------------
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def open_in_chromium(path, screenshot):
    """Open ``path`` in headless Chromium: the console messages, the sections present, and
    the rendered size of every plot; writes a full-page screenshot."""
    import os
    import shutil

    if shutil.which(CHROMIUM) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CHROMIUM} is missing on CI (.ci/run installs Debian's chromium)")
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            messages, requests = [], []
            page.on("console", lambda m: messages.append((m.type, m.text)))
            page.on("pageerror", lambda e: messages.append(("error", str(e))))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(path.resolve().as_uri())
            sections = page.eval_on_selector_all("section", "els => els.map(e => e.id)")
            sizes = page.eval_on_selector_all(
                "svg.plot",
                "els => els.map(e => {const b = e.getBoundingClientRect();"
                " return [b.width, b.height]})",
            )
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return messages, requests, sections, sizes


def test_report_renders_in_chromium(report, tmp_path):
    rep, _ = report
    page = tmp_path / "report.html"
    page.write_text(rep.to_html(), encoding="utf-8")
    shot = tmp_path / "report.png"
    messages, requests, sections, sizes = open_in_chromium(page, shot)
    assert [m for m in messages if m[0] in ("error", "warning")] == []
    assert [u for u in requests if not u.startswith("file:")] == []  # no network
    assert sections == list(SECTIONS)
    assert len(sizes) == 4 and all(w > 100 and h > 100 for w, h in sizes), sizes
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 50_000


def test_report_with_two_attacks_judges_the_strongest(small_release):
    rep = build(small_release / "rel", custody=small_release / "custody",
                config=parse_config(FAST), attacks=("definetti", "em"))  # fmt: skip
    attacks = rep.attribute["attacks"]
    assert set(attacks) == {"definetti", "em"}
    shares = {k: v["summary"]["at_risk_share"] for k, v in attacks.items()}
    assert rep.attribute["strongest"] == max(shares, key=shares.get)
    assert set(rep.diagnostics["attacks"]) == {"definetti", "em"}
    html = rep.to_html()
    assert "em attack" in html and "definetti attack" in html
    assert rep.to_pandas()["attack"].tolist() == ["definetti", "em"]


def test_report_on_a_generalized_release_attacks_the_population(tmp_path):
    from privlab.publish.generalization import generalize

    people = load_adult().take(np.arange(3000))
    gen = generalize(people, qi=["age", "workclass", "sex"], sensitive="occupation", k=5,
                     dataset="adult")  # fmt: skip
    gen.save(tmp_path / "g", custody=tmp_path / "g.c")
    cfg = parse_config(FAST)
    alone = build(tmp_path / "g", custody=tmp_path / "g.c", config=cfg)
    assert not alone.attribute["measured"] and "--population" in alone.attribute["why"]
    rep = build(tmp_path / "g", custody=tmp_path / "g.c", population=people, config=cfg,
                attacks=("definetti", "em"))  # fmt: skip
    a = rep.attribute
    assert a["measured"] and a["n"] == 3000 and set(a["attacks"]) == {"definetti"}
    rw = a["attacks"]["definetti"]["random_worlds"]
    # random worlds on a k = 5 generalization: nobody above the largest class share
    assert rw["acc"] <= a["max_disclosure"] + 1e-12
    assert rep.identity["judged"]  # its rows carry the sensitive value
    assert {"ncp", "discernibility", "n suppressed"} <= set(rep.utility["measures"])
    # Kifer & Gehrke's classification metric, the class being the sensitive column: records
    # off their class's majority occupation, over the input (nothing suppressed here)
    df = gen.to_pandas()
    wrong = df.groupby(["age", "workclass", "sex"], observed=True)["occupation"].agg(
        lambda s: len(s) - s.value_counts().max()
    )
    cm = rep.utility["measures"]["classification metric (class occupation)"]
    assert gen.n_suppressed == 0 and cm == pytest.approx(wrong.sum() / 3000)
    assert any("re-identification" in f["reason"] or "re-identified" in f["reason"]
               for f in rep.verdict["findings"])  # fmt: skip
    wrong = people.to_pandas()
    wrong.loc[0, "occupation"] = "Astronaut"
    from privlab.data.table import Table
    from privlab.errors import PrivlabError

    with pytest.raises(PrivlabError, match="Astronaut"):
        build(tmp_path / "g", custody=tmp_path / "g.c", population=Table.from_pandas(wrong),
              config=cfg)  # fmt: skip


def test_report_identity_with_a_population(small_release):
    people = load_adult()  # a superset of the release's 3,000 people
    rep = build(small_release / "rel", population=people, config=parse_config(FAST))
    risk = rep.identity["risk"]
    assert risk["population_model"] == "exact, from the population"
    # the journalist sees classes at least as large as the prosecutor's
    assert risk["journalist_max"] <= risk["prosecutor_max"]
    assert risk["marketer"] <= risk["prosecutor_mean"]
    assert risk["population_uniques"] <= risk["sample_uniques"]
    assert any("marketer risk" in x for x in rep.identity["sentences"])


def test_report_on_a_release_without_a_learning_attack_is_review(tmp_path):
    """A PRAM release has no learning attack in the report: its attribute section says so
    (not measured) and the verdict is REVIEW with that reason, never PASS, and the report
    renders (the verdict must not need an attack's figures).  Two coarse columns keep the
    identity risk within its limit, so that only the unmeasured attribute risk decides."""
    import warnings

    from privlab.errors import PrivacyWarning
    from privlab.publish import pram

    people = load_adult().take(np.arange(2000))
    with warnings.catch_warnings():  # publish-time notes are not what this test is about
        warnings.simplefilter("ignore", PrivacyWarning)
        rel = pram(people, columns=["sex"], keep=["salary"], p=0.3,
                   rng=np.random.default_rng(0))  # fmt: skip
    rel.save(tmp_path / "rel", custody=tmp_path / "custody")
    rep = build(tmp_path / "rel", custody=tmp_path / "custody", config=parse_config(FAST))
    assert rep.attribute["measured"] is False
    assert "no learning attack on a 'pram' release" in rep.attribute["why"]
    assert rep.identity["judged"] and rep.identity["risk"]["prosecutor_max"] <= 0.2
    assert rep.verdict["level"] == REVIEW
    assert any("attribute risk not measured" in r for r in rep.verdict["reasons"])
    assert rep.to_html() and json.loads(json.dumps(rep.to_json()))
