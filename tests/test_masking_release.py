"""The masking methods as releases (issue 35): microaggregation, noise, rank swapping and
top/bottom coding of numeric columns, saved with their custody, reported by record linkage."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from privlab.data.datasets import load_dataset
from privlab.errors import PrivlabError
from privlab.publish.masking import (
    MaskedRelease,
    add_noise,
    microaggregate,
    rank_swap,
    top_bottom_code,
)
from privlab.release.base import load_release
from privlab.report import build

NUMERIC = ["age", "education-num", "hours-per-week"]


@pytest.fixture(scope="module")
def adult():
    return load_dataset("adult").take(np.arange(1500))


def _original(adult, columns=NUMERIC) -> np.ndarray:
    return np.stack(
        [np.asarray(adult.schema[c].domain, float)[adult.column(c)] for c in columns], axis=1
    )


def _releases(adult, seed=7) -> dict[str, MaskedRelease]:
    kw = {"keep": ["sex"], "sensitive": "occupation", "rng": seed}
    return {
        "microaggregation": microaggregate(adult, NUMERIC, k=5, **kw),
        "noise": add_noise(adult, NUMERIC, noise=50.0, **kw),
        "swapping": rank_swap(adult, NUMERIC, p=10.0, **kw),
        "topcoding": top_bottom_code(adult, NUMERIC, top=60.0, bottom=20.0, **kw),
    }


def test_each_technique_saves_loads_and_keeps_its_truth_apart(adult, tmp_path, registry):
    x = _original(adult)
    for technique, rel in _releases(adult).items():
        assert rel.technique == technique and rel.masked == tuple(NUMERIC)
        out, cus = tmp_path / technique, tmp_path / f"{technique}.custody"
        rel.save(out, custody=cus, republish=True)
        back = load_release(out, custody=cus)
        assert isinstance(back, MaskedRelease) and back.technique == technique
        np.testing.assert_allclose(back.values(), rel.values())
        # the custody's truth is each published row's own original values: the rows were
        # shuffled, and the multiset of original rows is the input's
        truth = back.truth_values()
        assert sorted(map(tuple, truth)) == sorted(map(tuple, x))
        roles = {a.name: a.role.value for a in back.table.schema.attributes}
        assert roles == {"age": "qi", "education-num": "qi", "hours-per-week": "qi",
                         "sex": "insensitive", "occupation": "sensitive"}  # fmt: skip
        # nothing published holds the seed or the truth file
        published = " ".join(f.read_text() for f in out.iterdir())
        assert str(rel.custody.seed.salt) not in published
        assert not (out / "truth.csv").exists() and (cus / "truth.csv").is_file()
        # rows in random order: the published order is not the input's
        assert not np.array_equal(truth, x)
        # the information loss against the input stays in custody
        custody_doc = json.loads((cus / "custody.json").read_text())
        assert "il1s" in custody_doc["input_measures"]["utility"]
        assert "il1s" not in (out / "release.json").read_text()


def test_what_each_technique_does_to_the_values(adult):
    x = _original(adult)
    rels = _releases(adult)
    m = rels["microaggregation"]
    values, truth = m.values(), m.truth_values()
    # every group of equal published vectors has at least k records, and holds its mean
    _, inverse, counts = np.unique(values, axis=0, return_inverse=True, return_counts=True)
    assert counts.min() >= 5
    for g in range(counts.size):
        rows = inverse.ravel() == g
        np.testing.assert_allclose(values[rows][0], truth[rows].mean(axis=0), rtol=1e-9)
    np.testing.assert_allclose(values.mean(axis=0), x.mean(axis=0), rtol=1e-9)  # means kept
    s = rels["swapping"]
    for j in range(len(NUMERIC)):  # rank swapping keeps every column's values
        assert sorted(s.values()[:, j]) == sorted(x[:, j])
    t = rels["topcoding"]
    np.testing.assert_array_equal(t.values(), np.clip(t.truth_values(), 20.0, 60.0))
    assert t.parameters()["technique"] == "topcoding"
    n = rels["noise"]
    assert (n.values() != n.truth_values()).mean() > 0.99


def test_the_report_judges_record_linkage(adult, tmp_path, registry):
    """Linkage falls as k grows; the verdict judges it against max_at_risk_share."""
    rates = []
    for k in (2, 25):
        rel = microaggregate(adult, NUMERIC, k=k, rng=1)
        rel.save(tmp_path / f"k{k}", custody=tmp_path / f"k{k}.c", republish=True)
        rep = build(tmp_path / f"k{k}", custody=tmp_path / f"k{k}.c")
        link = rep.identity["linkage"]
        assert link["columns"] == NUMERIC and link["n_masked"] == adult.n_rows
        rates.append(link["rate"]["value"])
        finding = next(f for f in rep.verdict["findings"] if "record linkage" in f["reason"])
        limit = rep.verdict["thresholds"]["max_at_risk_share"]
        want = ("FAIL" if link["rate"]["low"] > limit
                else "REVIEW" if link["rate"]["high"] > limit else "PASS")  # fmt: skip
        assert finding["level"] == want
        assert not rep.attribute["measured"] and not rep.attribute["applicable"]
        html = rep.to_html()
        assert 'id="linkage"' in html and "record linkage" in html
    assert rates[0] > rates[1]
    # without the custody the linkage is not measured, and the verdict says so
    rep = build(tmp_path / "k2")
    assert rep.identity["linkage"] is None
    assert any("record linkage not measured" in r for r in rep.verdict["reasons"])


def test_refusals(adult):
    with pytest.raises(PrivlabError, match="'occupation' is not numeric"):
        microaggregate(adult, ["age", "occupation"], k=3)
    with pytest.raises(PrivlabError, match="named twice"):
        add_noise(adult, ["age", "age"])
    with pytest.raises(PrivlabError, match="both masked and kept"):
        rank_swap(adult, ["age"], keep=["age"])
    with pytest.raises(PrivlabError, match="method must be mdav, univariate or medoids"):
        microaggregate(adult, ["age"], k=3, method="magic")
    with pytest.raises(PrivlabError):
        microaggregate(adult, ["age"], k=adult.n_rows + 1)


def test_cli_mask_then_report(run, tmp_path, registry):
    df = load_dataset("adult").take(np.arange(800)).to_pandas()
    df.to_csv(tmp_path / "in.csv", index=False)
    out, cus = tmp_path / "m", tmp_path / "m.custody"
    r = run("mask", "microaggregation", tmp_path / "in.csv", "--columns", ",".join(NUMERIC),
            "--k", "4", "--keep", "sex", "--out", out, "--custody", cus, "--seed", "3")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "microaggregated (mdav, k = 4) of 800 records" in r.stdout
    assert "il1s" in r.stdout  # the information loss, printed for the custodian
    published = pd.read_csv(out / "masked.csv")
    assert sorted(published.columns) == sorted([*NUMERIC, "sex"])
    r = run("report", out, "--custody", cus, "--out", tmp_path / "r.html", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout.strip().splitlines()[-1])
    assert doc["level"] in ("PASS", "REVIEW", "FAIL")
    for args, needle in (
        (["noise", "--columns", "sex"], "'sex' is not numeric"),
        (["microaggregation", "--columns", "age", "--k", "0"], "k"),
        (["swap", "--columns", "age", "--p", "150"], "p"),
    ):
        r = run("mask", args[0], tmp_path / "in.csv", *args[1:], "--out", tmp_path / "bad")
        assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
        assert not (tmp_path / "bad").exists()


# ------------------------------------------------------ sampling weights (issue 35 item 4)


@pytest.fixture(scope="module")
def weighted(adult):
    """Adult with a column of sampling weights (positive, unequal)."""
    df = adult.to_pandas()
    df["w"] = np.random.default_rng(5).uniform(1.0, 40.0, len(df)).round(2)
    from privlab.data.table import Table

    return Table.from_pandas(df)


def test_weighted_microaggregation_keeps_weighted_totals_and_publishes_the_weights(weighted):
    rel = microaggregate(weighted, NUMERIC, k=5, keep=["sex"], weights="w", rng=2)
    assert rel.params["weights"] == "w" and rel.weights_column == "w"
    w, values, truth = rel.weights(), rel.values(), rel.truth_values()
    roles = {a.name: a.role.value for a in rel.table.schema.attributes}
    assert roles["w"] == "insensitive"
    # the published weights are the input's, row for row: the weighted totals are kept
    src = np.asarray(weighted.schema["w"].domain, float)[weighted.column("w")]
    assert sorted(w) == sorted(src)
    np.testing.assert_allclose(w @ values, w @ truth, rtol=1e-9)
    # each group's value is the weighted mean of its members' true values (not the plain one)
    _, inverse = np.unique(values, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    differs = 0
    for g in np.unique(inverse):
        rows = inverse == g
        want = np.average(truth[rows], axis=0, weights=w[rows])
        np.testing.assert_allclose(values[rows][0], want, rtol=1e-9)
        differs += not np.allclose(want, truth[rows].mean(axis=0))
    assert differs > 0
    # the weights are not a column to link on, and the information loss is weighted
    assert "w" not in rel.linkable().names
    assert rel.custody.input_measures["utility"]["weighted"] is True
    plain = microaggregate(weighted, NUMERIC, k=5, keep=["sex"], rng=2)
    assert plain.weights() is None and "w" not in plain.table.names


def test_every_technique_takes_weights_and_the_report_reads_them(weighted, tmp_path, registry):
    from privlab.metrics.sdc_risk import individual_risk

    kw = {"keep": ["sex", "race"], "weights": "w", "rng": 3}
    for rel in (add_noise(weighted, NUMERIC, noise=20.0, **kw),
                rank_swap(weighted, NUMERIC, p=5.0, **kw),
                top_bottom_code(weighted, NUMERIC, top=60.0, **kw)):  # fmt: skip
        assert "w" in rel.table.names and rel.weights() is not None
        out, cus = tmp_path / rel.technique, tmp_path / f"{rel.technique}.c"
        rel.save(out, custody=cus, republish=True)
        back = load_release(out, custody=cus)
        np.testing.assert_array_equal(back.weights(), rel.weights())
        rep = build(out, custody=cus, progress=False)
        ind = rep.identity["classical"]["individual"]
        assert ind["weighted"] and sorted(ind["names"]) == ["race", "sex"]  # weights: no key
        link = back.linkable().select(["race", "sex"])  # the columns published unchanged
        want = individual_risk(link.codes, back.weights(), names=link.names)
        assert ind["global_risk"] == pytest.approx(want.global_risk, rel=1e-12)
        unweighted = individual_risk(link.codes, None, names=link.names)
        assert ind["global_risk"] != pytest.approx(unweighted.global_risk, rel=1e-3)


@pytest.mark.parametrize(
    ("values", "needle"),
    [
        ([3.0, -1.0, 2.0, 5.0], "must be positive numbers: record 2 has -1"),
        ([3.0, 2.0, 0.0, 5.0], "must be positive numbers: record 3 has 0"),
        ([3.0, np.nan, 2.0, 5.0], r"missing values in column\(s\) 'w'"),
        (["a", "b", "a", "b"], "the weights 'w' are not numbers"),
    ],
)
def test_bad_weights_are_refused_in_one_line(values, needle):
    from privlab.data.table import Table

    df = pd.DataFrame({"age": [30.0, 40.0, 50.0, 60.0], "w": values})
    with pytest.raises(PrivlabError, match=needle):
        microaggregate(Table.from_pandas(df), ["age"], k=2, weights="w", keep=[])
    with pytest.raises(PrivlabError, match="both masked and the sampling weights"):
        add_noise(Table.from_pandas(pd.DataFrame({"age": [1.0, 2.0, 3.0]})), ["age"],
                  weights="age", keep=[])  # fmt: skip


def test_cli_weights(run, tmp_path, registry):
    df = load_dataset("adult").take(np.arange(600)).to_pandas()
    df["w"] = np.linspace(1, 30, len(df))
    df.to_csv(tmp_path / "in.csv", index=False)
    out = tmp_path / "m"
    r = run("mask", "microaggregation", tmp_path / "in.csv", "--columns", ",".join(NUMERIC),
            "--k", "3", "--keep", "sex", "--weights", "w", "--out", out)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert sorted(pd.read_csv(out / "masked.csv").columns) == sorted([*NUMERIC, "sex", "w"])
    assert json.loads((out / "release.json").read_text())["parameters"]["weights"] == "w"
    r = run("mask", "noise", tmp_path / "in.csv", "--columns", "age", "--weights", "sex",
            "--out", tmp_path / "bad")  # fmt: skip
    assert r.returncode == 2 and "the weights 'sex' are not numbers" in r.stderr
    assert not (tmp_path / "bad").exists()


def test_refined_microaggregation_loses_less_and_keeps_groups_of_k(adult):
    plain = microaggregate(adult, NUMERIC, k=5, keep=[], rng=1)
    refined = microaggregate(adult, NUMERIC, k=5, keep=[], refine=True, rng=1)
    assert refined.params["refined"] is True and "refined" not in plain.params
    _, counts = np.unique(refined.values(), axis=0, return_counts=True)
    assert counts.min() >= 5
    il = [r.custody.input_measures["utility"]["il1s_mean"] for r in (plain, refined)]
    assert il[1] < il[0]
    with pytest.raises(PrivlabError, match="refine applies to method mdav only"):
        microaggregate(adult, NUMERIC, k=5, method="univariate", refine=True)


# ------------------------------------------------------- sdcMicro's arithmetic (compat)


def test_microaggregation_in_sdcmicros_arithmetic(adult, tmp_path, registry, run):
    """``compat="sdcmicro"`` publishes the group means of sdcMicro's MDAV groups (float
    distances, tests/test_mdav_sdcmicro.py) and records it; the default records nothing."""
    from privlab.publish.microaggregation_core import aggregate, mdav

    rel = microaggregate(adult, NUMERIC, k=3, rng=4, compat="sdcmicro")
    assert rel.parameters()["compat"] == "sdcmicro"
    assert "compat" not in microaggregate(adult, NUMERIC, k=3, rng=4).parameters()
    x = _original(adult)
    want, exact = (aggregate(x, mdav(x, 3, compat=c)) for c in ("sdcmicro", "exact"))
    # the published rows (shuffled) are the input's rows' sdcMicro values, as a multiset
    rows = sorted(map(tuple, rel.values().round(9)))
    assert rows == sorted(map(tuple, want.round(9)))
    assert rows != sorted(map(tuple, exact.round(9)))  # float ties part the groups here
    with pytest.raises(PrivlabError, match="applies to method mdav"):
        microaggregate(adult, ["age"], k=3, method="univariate", compat="sdcmicro")
    with pytest.raises(PrivlabError, match="compat must be exact or sdcmicro"):
        microaggregate(adult, ["age"], k=3, compat="r")
    df = adult.take(np.arange(400)).to_pandas()
    df.to_csv(tmp_path / "in.csv", index=False)
    out = tmp_path / "m"
    r = run("mask", "microaggregation", tmp_path / "in.csv", "--columns", ",".join(NUMERIC),
            "--k", "3", "--sdcmicro", "--out", out)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "microaggregated (mdav, sdcMicro's arithmetic, k = 3) of 400 records" in r.stdout
    assert json.loads((out / "release.json").read_text())["parameters"]["compat"] == "sdcmicro"
