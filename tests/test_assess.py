"""``privlab assess``: a release privlab did not make, judged as privlab's own (issue 34)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privlab.data.datasets import load_dataset
from privlab.data.default_hierarchies import dataset_hierarchies
from privlab.errors import PrivlabError
from privlab.report import build
from privlab.report.assess import Roles, assess, load_roles, parse_roles, read_outside
from privlab.report.config import parse_config

ARX = Path(__file__).parent / "data" / "arx"
FAST = {"attack": {"iterations": 300, "chains": 2, "anneal": 0, "retry": False}}
QI = ("age", "workclass", "sex")


@pytest.fixture(scope="module")
def privlab_release(tmp_path_factory):
    """3,000 Adult rows generalized by privlab at k = 5, saved, and the same table exported
    as a plain CSV (what a custodian would send elsewhere), with its people."""
    from privlab.publish.generalization import generalize

    where = tmp_path_factory.mktemp("gen")
    people = load_dataset("adult").take(np.arange(3000))
    gen = generalize(people, qi=list(QI), sensitive="occupation", k=5, dataset="adult")
    gen.save(where / "g", custody=where / "g.c")
    gen.to_pandas().to_csv(where / "g.csv", index=False)
    people.to_pandas().to_csv(where / "people.csv", index=False)
    h = dataset_hierarchies("adult")
    roles = Roles(
        quasi_identifiers=QI, sensitive="occupation", hierarchies={q: h[q] for q in QI}, k=5
    )
    return where, people, gen, roles


@pytest.fixture(scope="module")
def arx_files(tmp_path_factory):
    """ARX's own k = 5 output of its Adult (4% suppression), its input and a roles file."""
    where = tmp_path_factory.mktemp("arx")
    for name in ("adult-k5.csv", "adult.csv"):
        (where / name).write_bytes(gzip.decompress((ARX / f"{name}.gz").read_bytes()))
    (where / "roles.toml").write_text(
        'quasi_identifiers = ["sex", "age", "race", "marital-status", "education", '
        '"native-country", "workclass"]\nsensitive = "occupation"\nignore = ["salary-class"]\n'
        f'hierarchies = "{ARX.as_posix()}"\n'
    )
    return where


def test_round_trip_equals_report(privlab_release):
    """A privlab release exported as a plain CSV and assessed gives report's figures."""
    where, people, _, roles = privlab_release
    cfg = parse_config(FAST)
    rep = build(where / "g", custody=where / "g.c", population=people, config=cfg, attack_salt=3)
    out = assess(where / "g.csv", where / "people.csv", roles, config=cfg, attack_salt=3)
    a, b = rep.identity["risk"], out.identity["risk"]
    for key in ("n", "classes", "prosecutor_max", "prosecutor_mean", "prosecutor_share_above",
                "marketer", "sample_uniques", "class_size_histogram"):  # fmt: skip
        assert a[key] == b[key], key
    # the published utility, but the lattice's height (an outside file has no node)
    rep.utility["measures"].pop("height")
    assert out.utility["measures"] == rep.utility["measures"]
    assert out.identity["judged"] and out.header["method"] == "generalization"
    # the attack's input is the same up to the names of the classes: every person falls in
    # the class of the same published rows, with the same sensitive counts (the attack is
    # multimodal here, so its draws, which differ with the order of the CSV's domains, are
    # not compared; its deterministic random-worlds baseline is)
    from privlab.attacks.population import population_layout
    from privlab.release.base import load_release

    mine = population_layout(load_release(where / "g"), people, hierarchies=roles.hierarchies)
    outside = read_outside(where / "g.csv", where / "people.csv", roles)
    theirs = population_layout(outside.release, outside.people, hierarchies=roles.hierarchies)
    pairs = set(zip(mine.class_of.tolist(), theirs.class_of.tolist(), strict=True))
    assert len(pairs) == len({a for a, _ in pairs}) == len({b for _, b in pairs})  # a bijection
    part_a, part_b = load_release(where / "g").partition(), outside.release.partition()
    to_b = dict(pairs)
    names_a, names_b = list(part_a.sensitive.domain), list(part_b.sensitive.domain)
    for g, row in enumerate(part_a.counts):
        there = part_b.counts[to_b[g]]
        assert {names_a[v]: int(c) for v, c in enumerate(row) if c} == {
            names_b[v]: int(c) for v, c in enumerate(there) if c
        }
    assert out.attribute["n"] == rep.attribute["n"] == 3000
    rw_a = rep.attribute["attacks"]["definetti"]["random_worlds"]["acc"]
    rw_b = out.attribute["attacks"]["definetti"]["random_worlds"]["acc"]
    assert rw_a == pytest.approx(rw_b, abs=1e-12)  # exact: no draws
    assessed = out.header["assessed"]
    assert assessed["kind"] == "generalization" and assessed["suppressed records"] == 0
    assert not assessed["paired with the original by row"]  # the release's rows are sorted
    html = out.to_html()
    assert "assessed as an outside file" in html and "g.csv" in html


def test_arx_output_is_read_and_matches_arx_risk(arx_files):
    """ARX's own output: its suppressed records are found and left out with their people,
    and the identity risk equals ARX's own risk analysis of the same output."""
    roles = load_roles(arx_files / "roles.toml")
    o = read_outside(arx_files / "adult-k5.csv", arx_files / "adult.csv", roles)
    arx = json.loads((ARX / "adult-k5-arx-risk.json").read_text())["pi=0.01"]
    frame = pd.read_csv(arx_files / "adult-k5.csv", sep=";", dtype=str, keep_default_na=False)
    qi = list(roles.quasi_identifiers)
    suppressed = (frame[qi] == "*").all(axis=1)
    assert o.paired and o.n_rows == 30162 and o.n_suppressed == int(suppressed.sum()) == 813
    assert o.people.n_rows == o.release.n_rows == 30162 - 813 == arx["records"]
    # the people left are the original's rows of the published records, in order
    original = pd.read_csv(arx_files / "adult.csv", sep=";")
    kept = original[~suppressed.to_numpy()].reset_index(drop=True)
    np.testing.assert_array_equal(o.people.decode("age").astype(int), kept["age"].to_numpy())
    cfg = parse_config(FAST)
    rep = assess(arx_files / "adult-k5.csv", arx_files / "adult.csv", roles, config=cfg,
                 attack_salt=1)  # fmt: skip
    risk = rep.identity["risk"]
    assert risk["classes"] == arx["classes"] == 695
    assert risk["prosecutor_max"] == pytest.approx(arx["prosecutor_highest"], rel=1e-12)
    assert risk["marketer"] == pytest.approx(arx["marketer"], rel=1e-12)
    assert risk["prosecutor_share_above"] * risk["n"] == arx["prosecutor_records_at_risk_0.2"]
    assert risk["sample_uniques"] == arx["sample_uniques_fraction"] * arx["records"] == 0
    # an independent count of the classes of the published rows
    sizes = frame[~suppressed].groupby(qi).size()
    assert len(sizes) == 695 and sizes.min() == 5
    assert rep.attribute["measured"] and rep.attribute["n"] == 29349
    assert rep.verdict["level"] in ("PASS", "REVIEW", "FAIL")
    notes = " ".join(rep.header["assessed"]["notes"])
    assert "813 record(s)" in notes and "salary-class" in notes


def test_partial_suppression_and_markers(privlab_release, tmp_path):
    """Cells suppressed one by one (an empty cell, a custom marker) are read as '*' and
    still cover the person's value; a row whose quasi-identifiers are all suppressed is a
    suppressed record."""
    people = privlab_release[1]
    df = people.to_pandas()[[*QI, "occupation"]].head(60).copy()
    df["age"] = df["age"].astype(object)
    df.loc[0, "age"] = ""
    df.loc[1, "sex"] = "(hidden)"
    df.loc[2, list(QI)] = ["(hidden)", "", "(hidden)"]
    df.to_csv(tmp_path / "r.csv", index=False)
    people.to_pandas().head(60).to_csv(tmp_path / "p.csv", index=False)
    r = Roles(quasi_identifiers=QI, sensitive="occupation", suppressed=("(hidden)",))
    o = read_outside(tmp_path / "r.csv", tmp_path / "p.csv", r)
    assert o.paired and o.n_suppressed == 1 and o.release.n_rows == 59
    t = o.release.table
    assert t.decode("age")[0] == "*" and t.decode("sex")[1] == "*"
    assert o.people.n_rows == 59  # person 2 left out with their record


def test_refusals(privlab_release, tmp_path):
    where, people, _, roles = privlab_release
    frame = pd.read_csv(where / "g.csv")
    with pytest.raises(PrivlabError, match="'occupation' without a role"):
        read_outside(where / "g.csv", where / "people.csv",
                     Roles(quasi_identifiers=QI))  # fmt: skip
    odd = frame.copy()
    odd.loc[0, "age"] = "twenty-ish"
    odd.to_csv(tmp_path / "odd.csv", index=False)
    with pytest.raises(PrivlabError, match="'twenty-ish' of age covers no value"):
        read_outside(tmp_path / "odd.csv", where / "people.csv", roles)
    noisy = frame.copy()
    noisy["age"] = people.to_pandas()["age"].head(len(frame)).to_numpy() + 0.37
    noisy.to_csv(tmp_path / "noisy.csv", index=False)
    with pytest.raises(PrivlabError, match="not perturbed numbers"):
        read_outside(tmp_path / "noisy.csv", where / "people.csv", roles)
    # fewer people than rows, and rows that do not follow the original's order
    people.to_pandas().head(2000).to_csv(tmp_path / "few.csv", index=False)
    with pytest.raises(PrivlabError, match="publishes 3,000 records and the original has 2,000"):
        read_outside(where / "g.csv", tmp_path / "few.csv", roles)
    exact = people.to_pandas()[[*QI, "occupation"]]
    exact.to_csv(tmp_path / "exact.csv", index=False)
    with pytest.raises(PrivlabError, match="only exact values"):
        read_outside(tmp_path / "exact.csv", where / "people.csv",
                     Roles(quasi_identifiers=QI, sensitive="occupation"))  # fmt: skip
    # said to be a generalization, it is read (nothing generalized) and paired
    o = read_outside(
        tmp_path / "exact.csv",
        where / "people.csv",
        Roles(quasi_identifiers=QI, sensitive="occupation", kind="generalization"),
    )
    assert o.paired and o.release.model.k == 1
    frame.assign(zip="*").to_csv(tmp_path / "zip.csv", index=False)
    with pytest.raises(PrivlabError, match="the original has no column 'zip'"):
        read_outside(
            tmp_path / "zip.csv",
            where / "people.csv",
            Roles(quasi_identifiers=(*QI, "zip"), sensitive="occupation"),
        )
    with pytest.raises(PrivlabError, match="has no column 'zip', which the roles name"):
        read_outside(
            where / "g.csv",
            where / "people.csv",
            Roles(quasi_identifiers=(*QI, "zip"), sensitive="occupation"),
        )
    w = frame.assign(weight=-1.0)
    w.to_csv(tmp_path / "w.csv", index=False)
    with pytest.raises(PrivlabError, match="weights 'weight' must be positive"):
        read_outside(tmp_path / "w.csv", where / "people.csv",
                     Roles(quasi_identifiers=QI, sensitive="occupation", weights="weight",
                           hierarchies=roles.hierarchies))  # fmt: skip


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        ({}, "no quasi-identifier"),
        ({"quasi_identifiers": ["a"], "colour": 1}, "unknown key 'colour'"),
        ({"quasi_identifiers": ["a"], "sensitive": "a"}, "'a' has two roles"),
        ({"quasi_identifiers": ["a"], "kind": "magic"}, "kind 'magic' is not one of"),
        ({"quasi_identifiers": "a", "keep": [1]}, "keep must be a list"),
        ({"quasi_identifiers": ["a"], "hierarchies": {"b": "b.csv"}}, "hierarchy file not found"),
    ],
)
def test_roles_refused(doc, match):
    with pytest.raises(PrivlabError, match=match):
        parse_roles(doc, "roles.toml")


def test_cli_assess_writes_the_report(cli, arx_files, tmp_path):
    (tmp_path / "fast.toml").write_text(
        "[attack]\niterations = 200\nchains = 2\nanneal = 0\nretry = false\n"
    )
    out = tmp_path / "a.html"
    r = cli("assess", str(arx_files / "adult-k5.csv"), "--original", str(arx_files / "adult.csv"),
            "--roles", str(arx_files / "roles.toml"), "--config", str(tmp_path / "fast.toml"),
            "--out", str(out), "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout.strip().splitlines()[-1])
    assert doc["level"] in ("PASS", "REVIEW", "FAIL") and Path(doc["files"]["report"]) == out
    assert out.is_file() and out.with_suffix(".json").is_file()
    custody = tmp_path / "a.custody"
    assert (custody / "report-salt.json").is_file()
    # the same config and custody give the same report
    first = json.loads(out.with_suffix(".json").read_text())
    r = cli("assess", str(arx_files / "adult-k5.csv"), "--original", str(arx_files / "adult.csv"),
            "--roles", str(arx_files / "roles.toml"), "--config", str(tmp_path / "fast.toml"),
            "--out", str(out), "--force")  # fmt: skip
    assert r.returncode == 0, r.stderr
    again = json.loads(out.with_suffix(".json").read_text())
    assert again["attribute"] == first["attribute"] and again["verdict"] == first["verdict"]


BAD_FILES = {
    "nosuch.csv": (None, "not found"),
    "adir": ("dir", "directory"),
    "empty.csv": ("", "empty"),
    "header.csv": ("a,b\n", "no rows"),
    "binary.csv": (b"\x00\x01\x02", "binary.csv"),
    "ragged.csv": ("a,b\n1,2\n1,2,3\n", "line 3"),
    "dupcol.csv": ("sex,sex\n1,2\n", "duplicate column name 'sex'"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
@pytest.mark.parametrize("which", ["release", "original"])
def test_cli_bad_files_get_one_line(cli, arx_files, tmp_path, name, which):
    content, needle = BAD_FILES[name]
    bad = tmp_path / name
    if content == "dir":
        bad.mkdir()
    elif isinstance(content, bytes):
        bad.write_bytes(content)
    elif content is not None:
        bad.write_text(content)
    release = bad if which == "release" else arx_files / "adult-k5.csv"
    original = bad if which == "original" else arx_files / "adult.csv"
    out = tmp_path / "out" / "a.html"
    out.parent.mkdir()
    r = cli("assess", release, "--original", original, "--roles", arx_files / "roles.toml",
            "--out", out)  # fmt: skip
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in r.stderr
    assert list(out.parent.iterdir()) == []  # no report, no custody folder left behind


def test_cli_bad_roles_and_out(cli, arx_files, tmp_path):
    (tmp_path / "r.toml").write_text("quasi_identifiers = [")
    args = [arx_files / "adult-k5.csv", "--original", arx_files / "adult.csv"]
    r = cli("assess", *args, "--roles", tmp_path / "r.toml", "--out", tmp_path / "a.html")
    assert r.returncode == 2 and "not valid TOML" in r.stderr
    r = cli("assess", *args, "--roles", tmp_path / "none.toml", "--out", tmp_path / "a.html")
    assert r.returncode == 2 and "roles file not found" in r.stderr
    r = cli("assess", *args, "--roles", arx_files / "roles.toml", "--out", tmp_path / "a.txt")
    assert r.returncode == 2 and "name it .html" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.toml"]


@pytest.fixture(scope="module")
def pram_files(tmp_path_factory):
    """3,000 Adult rows with education and occupation randomized by privlab's PRAM in the
    input's order (``shuffle=False``, as sdcMicro's pram keeps it), exported as a plain CSV
    and one matrix CSV per column."""
    from privlab.publish.randomization import pram

    where = tmp_path_factory.mktemp("pram")
    people = load_dataset("adult").take(np.arange(3000))
    people = people.select(["age", "sex", "race", "education", "occupation"])
    rel = pram(people, columns=["education", "occupation"], keep=["sex", "race"], p=0.3,
               shuffle=False, rng=1)  # fmt: skip
    rel.save(where / "r", custody=where / "r.c", republish=True)
    rel.to_pandas().to_csv(where / "r.csv", index=False)
    people.to_pandas().to_csv(where / "people.csv", index=False)
    for c in ("education", "occupation"):
        values = [str(v) for v in rel.table.schema[c].domain]
        m = pd.DataFrame(rel.matrix(c), index=values, columns=values)
        m[list(reversed(values))].to_csv(where / f"{c}.csv")  # columns in another order
    (where / "roles.toml").write_text(
        'quasi_identifiers = ["sex", "race", "education", "occupation"]\nignore = ["age"]\n'
        '[pram]\neducation = "education.csv"\noccupation = "occupation.csv"\n'
    )
    return where


def test_pram_round_trip_equals_report(pram_files):
    """The PRAM attack is deterministic (EM), so an exported PRAM release assessed with its
    matrices gives report's figures exactly."""
    w = pram_files
    rep = build(w / "r", custody=w / "r.c")
    out = assess(w / "r.csv", w / "people.csv", w / "roles.toml")
    assert out.header["assessed"]["kind"] == "pram" and out.header["method"] == "pram"
    assert out.verdict["level"] == rep.verdict["level"]
    assert out.attribute["strongest"] == rep.attribute["strongest"]
    for name, a in rep.attribute["attacks"].items():
        b = out.attribute["attacks"][name]
        for key in ("acc", "at_risk_share", "at_risk_share_ci", "brier"):
            assert b["summary"][key] == pytest.approx(a["summary"][key], abs=1e-9), key
    assert out.identity["columns"] == rep.identity["columns"] == ["sex", "race"]
    assert out.identity["risk"] == rep.identity["risk"]


def test_pram_refusals(pram_files, tmp_path):
    w = pram_files
    roles = load_roles(w / "roles.toml")
    frame = pd.read_csv(w / "r.csv")
    odd = frame.copy()
    odd.loc[5, "education"] = "Astronomy"
    odd.to_csv(tmp_path / "odd.csv", index=False)
    with pytest.raises(PrivlabError, match="'Astronomy', which its PRAM matrix does not list"):
        read_outside(tmp_path / "odd.csv", w / "people.csv", roles)
    moved = frame.copy()
    moved.loc[[0, 1]] = moved.loc[[1, 0]].to_numpy()
    moved.loc[0, "sex"], moved.loc[1, "sex"] = "Female", "Male"  # rows 0 and 1: both Male
    moved.to_csv(tmp_path / "moved.csv", index=False)
    people = pd.read_csv(w / "people.csv")
    assert people.loc[0, "sex"] == "Male"
    with pytest.raises(PrivlabError, match=r"row 1 of .* does not follow the original's"):
        read_outside(tmp_path / "moved.csv", w / "people.csv", roles)
    frame.head(100).to_csv(tmp_path / "short.csv", index=False)
    with pytest.raises(PrivlabError, match="100 records and the original 3,000"):
        read_outside(tmp_path / "short.csv", w / "people.csv", roles)
    bad = pd.read_csv(w / "education.csv", index_col=0)
    bad.iloc[0, 0] += 0.5
    bad.to_csv(tmp_path / "m.csv")
    with pytest.raises(PrivlabError, match="not stochastic: row 0"):
        parse_roles({"quasi_identifiers": ["education"], "pram": {"education": "m.csv"}},
                    base=tmp_path)  # fmt: skip
    bad = pd.read_csv(w / "education.csv", index_col=0).iloc[:, 1:]
    bad.to_csv(tmp_path / "m2.csv")
    with pytest.raises(PrivlabError, match="the same values, once each"):
        parse_roles({"quasi_identifiers": ["education"], "pram": {"education": "m2.csv"}},
                    base=tmp_path)  # fmt: skip
    with pytest.raises(PrivlabError, match="not a published column"):
        parse_roles({"quasi_identifiers": ["sex"], "pram": {"education": "education.csv"}},
                    base=w)  # fmt: skip


def test_weights_change_the_individual_risk_as_the_model_says(privlab_release, tmp_path):
    """With sampling weights, each key's population count is estimated by its weights' sum
    F and its records' risk follows Benedetti-Franconi's negative binomial model (sdcMicro's
    approximation for keys of 3 or more records); without weights the risk is 1/f, so the
    global risk is the number of keys over the records (the marketer risk)."""
    where, _, _, roles = privlab_release
    frame = pd.read_csv(where / "g.csv")
    rng = np.random.default_rng(4)
    frame["w"] = rng.uniform(5.0, 50.0, size=len(frame)).round(3)
    frame.to_csv(tmp_path / "w.csv", index=False)
    cfg = parse_config({**FAST, "attack": {**FAST["attack"], "iterations": 50}})
    weighted = Roles(quasi_identifiers=QI, sensitive="occupation", weights="w",
                     hierarchies=roles.hierarchies, k=5)  # fmt: skip
    rep = assess(tmp_path / "w.csv", where / "people.csv", weighted, config=cfg, attack_salt=1)
    ind = rep.identity["classical"]["individual"]
    assert ind["weighted"] and ind["n"] == len(frame)
    # the model, computed here from its formulas (Franconi & Polettini 2004, Sec. 3)
    keys = frame.groupby(list(QI))
    f = keys["w"].transform("size").to_numpy(float)
    F = keys["w"].transform("sum").to_numpy(float)
    p = f / F
    q = 1 - p
    r = np.where(f == 1, p / q * np.log(1 / p),
                 np.where(f == 2, p / q - (p / q) ** 2 * np.log(1 / p), p / (f - q)))  # fmt: skip
    assert ind["expected_reidentifications"] == pytest.approx(r.sum(), rel=1e-9)
    assert ind["max_risk"] == pytest.approx(r.max(), rel=1e-9)
    # larger weights (a smaller sampling fraction) mean a larger population: lower risk
    frame["w"] *= 4
    frame.to_csv(tmp_path / "w4.csv", index=False)
    rep4 = assess(tmp_path / "w4.csv", where / "people.csv", weighted, config=cfg, attack_salt=1)
    assert rep4.identity["classical"]["individual"]["global_risk"] < ind["global_risk"]
    # no weights: risk 1/f, so the expected re-identifications are the number of keys
    plain = assess(where / "g.csv", where / "people.csv", roles, config=cfg, attack_salt=1)
    ind0 = plain.identity["classical"]["individual"]
    assert not ind0["weighted"] and ind0["expected_reidentifications"] == pytest.approx(
        keys.ngroups
    )
    assert ind0["global_risk"] == pytest.approx(plain.identity["risk"]["marketer"])
    msu = plain.identity["classical"]["msu"]
    assert msu["max_size"] == 3 and msu["n"] == len(frame)
    # a generalization at k = 5 has no sample unique on any set of its columns
    assert msu["records_with_msu_by_size"] == [0, 0, 0]
    html = rep.to_html()
    assert "individual risk, global (sdcMicro)" in html and "from the sampling weights" in html
    # the weights' sum estimates the population: the sampling fraction of the uniqueness
    # models (and of DIS-SUDA) is the records over it
    fraction = len(frame) / (frame["w"].sum() / 4)
    model = rep.identity["risk"]["population_model"]
    assert "Dankar" in model and f"sampling fraction {fraction:g}" in model, model
    assert rep.identity["classical"]["suda"]["dis_fraction"] == pytest.approx(fraction)
    assert rep.identity["classical"]["suda"]["full"]  # three columns: every size searched


def test_classical_measures_on_a_file_with_uniques(privlab_release, tmp_path):
    """A file published with exact values: the report's SUDA figures are those of the
    metrics on the file's own columns (factorized here independently)."""
    from privlab.metrics.msu import minimal_sample_uniques, suda_scores
    from privlab.metrics.sdc_risk import individual_risk

    people = privlab_release[1]
    cols = ["age", "education", "sex", "race"]
    df = people.to_pandas()[[*cols, "occupation"]].head(800)
    df.to_csv(tmp_path / "x.csv", index=False)
    people.to_pandas().head(800).to_csv(tmp_path / "p.csv", index=False)
    roles = Roles(quasi_identifiers=tuple(cols), sensitive="occupation", kind="generalization")
    cfg = parse_config({**FAST, "attack": {**FAST["attack"], "iterations": 50}})
    rep = assess(tmp_path / "x.csv", tmp_path / "p.csv", roles, config=cfg, attack_salt=1)
    codes = np.stack([pd.factorize(df[c])[0] for c in cols], axis=1)
    msu = minimal_sample_uniques(codes, cols)
    suda = suda_scores(codes, cols, msus=msu, dis_fraction=0.01)
    cl = rep.identity["classical"]
    assert cl["msu"]["records_with_msu_by_size"] == msu.to_dict()["records_with_msu_by_size"]
    assert cl["msu"]["records_with_msu_by_size"][-1] > 0
    assert cl["suda"]["max_dis_score"] == pytest.approx(float(suda.dis_score.max()))
    assert cl["suda"]["records_scored"] == int((suda.score > 0).sum()) > 0
    ind = individual_risk(codes)
    assert cl["individual"]["global_risk"] == pytest.approx(ind.global_risk)
    assert rep.identity["risk"]["sample_uniques"] == int(
        (df.groupby(cols)["sex"].transform("size") == 1).sum()
    )


def test_cli_roles_as_options(cli, arx_files, tmp_path):
    """Without --roles the roles are options (an ARX folder of hierarchies with
    --hierarchies); --roles with role options, or neither, is one line."""
    qi = "sex,age,race,marital-status,education,native-country,workclass"
    base = ["assess", arx_files / "adult-k5.csv", "--original", arx_files / "adult.csv"]
    r = cli(*base, "--roles", arx_files / "roles.toml", "--qi", qi, "--out", tmp_path / "a.html")
    assert r.returncode == 2 and "not both" in r.stderr
    r = cli(*base, "--out", tmp_path / "a.html")
    assert r.returncode == 2 and "give the columns' roles" in r.stderr
    opts = ["--qi", qi, "--sensitive", "occupation", "--ignore", "salary-class"]
    r = cli(*base, *opts, "--out", tmp_path / "a.html")  # no hierarchies: ARX's labels unread
    assert r.returncode == 2 and "give marital-status's hierarchy" in r.stderr
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "fast.toml").write_text("[attack]\niterations = 50\nchains = 2\n")
    r = cli(*base, *opts, "--hierarchies", ARX, "--config", tmp_path / "fast.toml",
            "--out", tmp_path / "a.html")  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["header"]["assessed"]["suppressed records"] == 813
    assert doc["identity"]["risk"]["classes"] == 695
