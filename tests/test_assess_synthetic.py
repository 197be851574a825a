"""``privlab assess`` on a synthetic table (issue 34, item 3): Anonymeter's three criteria,
privlab's learning attacker, copies and distance to closest record, each beyond a control."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from privlab.data.datasets import load_dataset
from privlab.errors import PrivlabError
from privlab.report.assess import Roles, assess

QI = ("age", "sex", "race", "education", "marital-status")
ROLES = Roles(quasi_identifiers=QI, sensitive="occupation", kind="synthetic")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """2,000 Adult people a synthesizer was trained on, 2,000 others (the control), and two
    synthetic tables: a shuffled copy of the training rows (the worst synthesizer) and rows
    drawn column by column from the training marginals (independent of every person)."""
    where = tmp_path_factory.mktemp("syn")
    df = load_dataset("adult").to_pandas()[[*QI, "occupation"]]
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(df))
    train = df.iloc[idx[:2000]].reset_index(drop=True)
    control = df.iloc[idx[2000:4000]].reset_index(drop=True)
    train.to_csv(where / "train.csv", index=False)
    control.to_csv(where / "control.csv", index=False)
    train.sample(frac=1, random_state=1).to_csv(where / "copy.csv", index=False)
    indep = pd.DataFrame({c: rng.choice(train[c].to_numpy(), size=2000) for c in train.columns})
    indep.to_csv(where / "indep.csv", index=False)
    (where / "roles.toml").write_text(
        f"quasi_identifiers = {json.dumps(list(QI))}\n"
        'sensitive = "occupation"\nkind = "synthetic"\n'
    )
    return where


def _finding(rep, start: str) -> dict:
    return next(f for f in rep.verdict["findings"] if f["reason"].startswith(start))


def test_a_copy_fails_and_independent_rows_do_not(files):
    copy = assess(files / "copy.csv", files / "train.csv", ROLES, control=files / "control.csv",
                  attack_salt=1)  # fmt: skip
    indep = assess(files / "indep.csv", files / "train.csv", ROLES,
                   control=files / "control.csv", attack_salt=1)  # fmt: skip
    assert copy.verdict["level"] == "FAIL"
    # every row of the copy is a member's record; as many of the control's as are common
    c = copy.identity["copies"]
    assert c["members"]["value"] == 1.0 and c["control"]["value"] < 0.8
    assert _finding(copy, "copies:")["level"] == "FAIL"
    an = copy.identity["anonymeter"]
    assert an["measured"] and an["singling_out"]["residual"]["value"] > 0.3
    assert an["inference"]["residual"]["value"] > 0.2
    assert _finding(copy, "singling out")["level"] == "FAIL"
    # rows drawn apart from everyone copy members no more than control people, and are no
    # closer to them
    ci = indep.identity["copies"]["residual"]
    assert ci["low"] < 0 < ci["high"] and abs(ci["value"]) < 0.05
    assert _finding(indep, "copies:")["level"] != "FAIL"
    closer = indep.identity["dcr"]["closer_to_training"]
    assert closer["low"] <= closer["expected"]
    inf = indep.identity["anonymeter"]["inference"]["residual"]
    assert inf["low"] < 0.05
    # the copy is as good as the real data for learning; the independent rows are not
    assert copy.utility["tstr"]["synthetic"] == copy.utility["tstr"]["real"]
    assert indep.utility["tstr"]["synthetic"] < indep.utility["tstr"]["real"]
    assert copy.utility["mean_total_variation"] == 0.0 < indep.utility["mean_total_variation"]


def test_the_learning_attacker_against_its_definition(files):
    """privlab's attacker is Naive Bayes with add-one smoothing, learned from the synthetic
    rows: its accuracy on the members is computed here from the counts."""
    rep = assess(files / "indep.csv", files / "train.csv", ROLES, control=files / "control.csv",
                 attack_salt=1)  # fmt: skip
    syn = pd.read_csv(files / "indep.csv").astype(str)
    ori = pd.read_csv(files / "train.csv").astype(str)
    classes = sorted(syn["occupation"].unique())
    prior = syn["occupation"].value_counts().reindex(classes).to_numpy(float)
    log_post = np.tile(np.log(prior / prior.sum()), (len(ori), 1))
    for q in QI:
        values = sorted(set(syn[q]))
        k = len(values) + 1  # a value unseen in the synthetic rows is one more category
        table = pd.crosstab(syn["occupation"], syn[q]).reindex(index=classes, columns=values,
                                                               fill_value=0)  # fmt: skip
        counts = table.to_numpy(float)
        probs = (counts + 1) / (counts.sum(axis=1, keepdims=True) + k)
        unseen = 1 / (counts.sum(axis=1) + k)
        col = {v: j for j, v in enumerate(values)}
        for i, v in enumerate(ori[q]):
            log_post[i] += np.log(probs[:, col[v]]) if v in col else np.log(unseen)
    guess = np.array(classes)[log_post.argmax(axis=1)]
    acc = float((guess == ori["occupation"].to_numpy()).mean())
    learn = rep.attribute["learning"]
    assert learn["accuracy"]["members"]["value"] == pytest.approx(acc, abs=1e-12)
    assert learn["accuracy"]["members"]["n"] == 2000


def test_without_a_control_at_best_review_and_reproducible(files):
    rep = assess(files / "indep.csv", files / "train.csv", ROLES, attack_salt=5)
    assert rep.verdict["level"] in ("REVIEW", "FAIL")
    assert _finding(rep, "no control set")["level"] == "REVIEW"
    assert rep.identity["anonymeter"]["singling_out"]["residual"] is None
    again = assess(files / "indep.csv", files / "train.csv", ROLES, attack_salt=5)
    assert again.to_dict()["identity"] == rep.to_dict()["identity"]
    assert again.verdict == rep.verdict


def test_without_anonymeter_its_criteria_are_not_measured(files, monkeypatch):
    from privlab.attacks import anonymeter
    from privlab.errors import MissingDependencyError

    def missing():
        raise MissingDependencyError("anonymeter is not installed: pip install --no-deps ...")

    monkeypatch.setattr(anonymeter, "_import_anonymeter", missing)
    rep = assess(files / "copy.csv", files / "train.csv", ROLES, control=files / "control.csv",
                 attack_salt=1)  # fmt: skip
    assert not rep.identity["anonymeter"]["measured"]
    assert "anonymeter is not installed" in _finding(rep, "Anonymeter's")["reason"]
    assert rep.verdict["level"] == "FAIL"  # the copies still fail it
    assert "not measured" in rep.to_html()


def test_refusals(files, tmp_path):
    syn = pd.read_csv(files / "indep.csv")
    syn["age"] = syn["age"].astype(object)
    syn.loc[3, "age"] = "old"
    syn.to_csv(tmp_path / "s.csv", index=False)
    with pytest.raises(PrivlabError, match="the synthetic table's age holds 'old', not a number"):
        assess(tmp_path / "s.csv", files / "train.csv", ROLES, control=files / "control.csv")
    pd.read_csv(files / "indep.csv").assign(zip=1).to_csv(tmp_path / "z.csv", index=False)
    with pytest.raises(PrivlabError, match="'zip' without a role"):
        assess(tmp_path / "z.csv", files / "train.csv", ROLES)
    pd.read_csv(files / "control.csv").drop(columns="race").to_csv(tmp_path / "c.csv",
                                                                   index=False)  # fmt: skip
    with pytest.raises(PrivlabError, match="the control has no column 'race'"):
        assess(files / "indep.csv", files / "train.csv", ROLES, control=tmp_path / "c.csv")
    pd.read_csv(files / "indep.csv").head(10).to_csv(tmp_path / "tiny.csv", index=False)
    with pytest.raises(PrivlabError, match="10 rows: the report needs at least 20"):
        assess(tmp_path / "tiny.csv", files / "train.csv", ROLES)
    with pytest.raises(PrivlabError, match="a control set applies to a synthetic table"):
        assess(files / "indep.csv", files / "train.csv",
               Roles(quasi_identifiers=QI, sensitive="occupation", kind="generalization"),
               control=files / "control.csv")  # fmt: skip


@pytest.mark.parametrize("width", [1280, 400])
def test_cli_and_page(cli, files, tmp_path, width):
    """The command writes the page and its JSON; the page shows the verdict first, nothing
    wider than a phone's screen, and the data's texts escaped."""
    from test_report import chromium_page
    from test_report_page import DP_MEASURE

    odd = pd.read_csv(files / "copy.csv").rename(columns={"race": "<b>race</b>"})
    odd.to_csv(tmp_path / "odd.csv", index=False)
    for name in ("train", "control"):
        pd.read_csv(files / f"{name}.csv").rename(columns={"race": "<b>race</b>"}).to_csv(
            tmp_path / f"{name}.csv", index=False
        )
    qi = [q if q != "race" else "<b>race</b>" for q in QI]
    (tmp_path / "roles.toml").write_text(
        f'quasi_identifiers = {json.dumps(qi)}\nsensitive = "occupation"\nkind = "synthetic"\n'
    )
    out = tmp_path / "r.html"
    r = cli("assess", tmp_path / "odd.csv", "--original", tmp_path / "train.csv", "--roles",
            tmp_path / "roles.toml", "--control", tmp_path / "control.csv", "--out", out,
            "--json", "--fail-on", "FAIL")  # fmt: skip
    assert r.returncode == 3, r.stderr  # a copy fails, and --fail-on FAIL says so
    doc = json.loads(r.stdout.strip().splitlines()[-1])
    assert doc["level"] == "FAIL" and out.is_file() and out.with_suffix(".json").is_file()
    html = out.read_text()
    assert "<b>race</b>" not in html and "&lt;b&gt;race&lt;/b&gt;" in html
    with chromium_page(width, 800) as p:
        p.goto(out.resolve().as_uri())
        got = p.evaluate(DP_MEASURE)
        text = p.inner_text("#verdict")
    assert got["scrollWidth"] <= got["width"], got
    assert got["verdict"] < got["header"] < got["utility"] and 0 < got["badge"] < 600
    assert "FAIL" in text and "copies" in text
