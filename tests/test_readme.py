"""Every command of the README's tour runs as written, in order, each part of it (the
commands that read each other's files) in a fresh directory; so does its library
example.  The generalize example publishes nothing that re-identifies."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from reproduction_checks import check_apriori_rows, check_id3_rows

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(), flags=re.S)


def _commands() -> list[list[str]]:
    """The ``.venv/bin/privlab`` lines of the sh blocks, continuation lines joined."""
    out = []
    for block in _blocks("sh"):
        text = re.sub(r"\\\n\s*", " ", block)
        for line in text.splitlines():
            line = line.strip()
            if line.startswith(".venv/bin/privlab"):
                out.append(shlex.split(line, comments=True))
    return out


def test_the_readme_names_its_two_commands():
    text = README.read_text()
    assert "make demo" in text and "make test" in text
    assert len(_commands()) >= 20


# -- the tour, split where its commands do not read each other's files ---------------------
# A command reads an earlier one's file when one of its words is that file (or a path inside
# it); such commands run in order in one directory.  The independent parts run as separate
# tests, so the suite's workers share them (one directory for all took 200 s on one worker).
_WRITES = ("--out", "--custody", "--json", "--plot", "--baseline")


def _writes(cmd: list[str]) -> list[str]:
    out = [cmd[i + 1] for i, w in enumerate(cmd[:-1]) if w in _WRITES and cmd[i + 1] != "-"]
    if cmd[1] == "reproduce":
        out.append(f"results/{cmd[2]}")
    return out


def _reads(cmd: list[str], name: str) -> bool:
    return any(w == name or w.startswith(name + "/") for w in cmd[1:])


def _parts() -> list[list[list[str]]]:
    """The tour's commands in connected parts, each in the README's order."""
    cmds = _commands()
    part = list(range(len(cmds)))

    def root(i: int) -> int:
        while part[i] != i:
            i = part[i]
        return i

    for i, cmd in enumerate(cmds):
        for j in range(i):
            if any(_reads(cmd, name) for name in _writes(cmds[j])):
                part[root(i)] = root(j)
    groups: dict[int, list[list[str]]] = {}
    for i, cmd in enumerate(cmds):
        groups.setdefault(root(i), []).append(cmd)
    return list(groups.values())


PARTS = _parts()


def _part_id(cmds: list[list[str]]) -> str:
    names = [n for cmd in cmds for n in _writes(cmd)]
    return names[0] if names else " ".join(cmds[0][1:3])


def _run(cmds: list[list[str]], where: Path) -> None:
    privlab = str(Path(sys.executable).with_name("privlab"))
    for cmd in cmds:
        r = subprocess.run([privlab, *cmd[1:]], cwd=where, capture_output=True, text=True,
                           timeout=600)  # fmt: skip
        assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stderr}"
        assert "Traceback" not in r.stderr, " ".join(cmd)
        for name in _writes(cmd):
            assert (where / name).exists(), f"{' '.join(cmd)} wrote no {name}"


def test_the_tour_splits_where_no_command_reads_another_part():
    """The split loses no command, keeps the README's order, and a command never reads a file
    that another part writes (the check that would fail if the split were wrong)."""
    cmds = _commands()
    assert sorted(map(tuple, (c for p in PARTS for c in p))) == sorted(map(tuple, cmds))
    for p in PARTS:
        assert [cmds.index(c) for c in p] == sorted(cmds.index(c) for c in p)
        for other in PARTS:
            if other is not p:
                written = [n for c in other for n in _writes(c)]
                assert not any(_reads(c, n) for c in p for n in written)
    assert len(PARTS) >= 10  # reproductions, Anatomy, PRAM, ... run apart


@pytest.mark.parametrize("part", PARTS, ids=[_part_id(p) for p in PARTS])
def test_every_tour_command_runs(part, tmp_path):
    """Each part runs as written, and the checks below of what it wrote hold."""
    _run(part, tmp_path)
    written = {n for cmd in part for n in _writes(cmd)}
    for name in written:
        if name.endswith(".custody"):
            assert (tmp_path / name / "custody.json").is_file()
            assert not (tmp_path / name.removesuffix(".custody") / "truth.csv").exists()
    for name, check in CHECKS.items():
        if name in written:
            check(tmp_path)


def _check_the_generalize_example_publishes_nothing_unsafe(tour):
    from privlab.publish import load_release

    rel = load_release(tour / "gen-k10")
    df = pd.read_csv(tour / "gen-k10" / "table.csv")
    qi = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex",
          "native-country"]  # fmt: skip
    assert list(df.columns) == [*qi, "salary"]
    p = rel.privacy()
    assert p.k >= 10 and p.flagged == () and p.warnings() == []


def _check_the_synthetic_example_publishes_a_dp_release_and_its_report(tour):
    import json

    meta = json.loads((tour / "syn" / "release.json").read_text())
    assert meta["method"] == "dp-synthetic" and meta["parameters"]["epsilon"] <= 1 + 1e-9
    assert not (tour / "syn" / "custody.json").exists()
    assert (tour / "syn.custody" / "custody.json").is_file()
    rep = json.loads((tour / "syn-report.json").read_text())
    assert rep["header"]["guarantee"]["epsilon"] == meta["parameters"]["epsilon"]
    m = rep["identity"]["membership"]
    assert m["measured"] and not m["dp"]["violated"]
    assert set(rep["utility"]["workload"]) == {"1-way", "2-way", "3-way"}


def _check_the_assess_example_reads_the_exported_release(tour):
    """gen-k10's table.csv, assessed as an outside file against the bundled Adult (its
    default hierarchies read the cells), gives the release's own classes."""
    import json

    doc = json.loads((tour / "assess-k10.json").read_text())
    assert doc["header"]["assessed"]["kind"] == "generalization"
    df = pd.read_csv(tour / "gen-k10" / "table.csv")
    qi = [c for c in df.columns if c != "salary"]
    assert doc["identity"]["risk"]["classes"] == len(df.groupby(qi).size())
    assert doc["attribute"]["measured"] and doc["attribute"]["n"] == len(df)


def _check_the_masking_example_states_its_computed_linkage(tour):
    """The README's 10.3% is the tour's report's record linkage of MDAV at k = 5 (MDAV and
    the linkage draw nothing: the row order the release draws does not change it)."""
    import json

    doc = json.loads((tour / "mdav-k5.json").read_text())
    rate = doc["identity"]["linkage"]["rate"]["value"]
    assert f"FAIL: {100 * rate:.1f}%" in README.read_text()
    assert doc["verdict"]["level"] == "FAIL"


def test_the_library_example_runs(tmp_path):
    (code,) = _blocks("python")
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "rel-l4" / "release.json").is_file()
    assert (tmp_path / "rel-l4.custody" / "truth.csv").is_file()


# -- the tour's reproductions compute the papers' numbers -------------------------------------
# (each runs once in the suite, here, as the README runs it: `reproduce ID --quick`, seed 0)
def _result(tour: Path, experiment_id: str) -> list[dict]:
    import json

    saved = json.loads((tour / "results" / experiment_id / "result.json").read_text())
    assert saved["experiment"] == experiment_id
    return saved["rows"]


def _check_kifer_table6_quick(tour):
    rows = _result(tour, "kifer-table6")
    row12 = next(r for r in rows if r["tuple"] == 12)
    assert row12["p_cancer_exact"] == pytest.approx(0.16, abs=0.01)
    assert abs(row12["p_cancer_definetti"] - row12["p_cancer_exact"]) < 0.03


def _check_dpnb_adult_quick(tour):
    rows = _result(tour, "dpnb-adult")
    assert {r["epsilon"] for r in rows} == {0.01, 0.02, 0.05, 0.1, 0.5, 1.0}
    assert {r["folds"] for r in rows} == {5}
    for r in rows:
        assert {"acc_ml", "acc_eb", "acc_js", "acc_posterior", "acc_consistent"} <= set(r)
        assert r["eb_gt_ml"] + r["eb_eq_ml"] + r["eb_lt_ml"] == pytest.approx(100, abs=0.05)
        assert 70 < r["acc_ml"] < 82
    small = [r for r in rows if r["epsilon"] <= 0.02]
    assert all(r["acc_eb"] > r["acc_ml"] for r in small)  # Table 8.2: EB helps at small ε
    plots = list((tour / "results" / "dpnb-adult").glob("*.png"))
    assert plots and all(p.read_bytes()[:4] == b"\x89PNG" for p in plots)


def _check_bn_table_5_2_quick_meets_the_target(tour):
    rows = _result(tour, "bn-table5.2")
    summary = rows[-1]
    assert summary["node"] == "summary"
    assert len(rows) == 64 + 1  # 64 CPT entries (Table 5.2)
    # Table 5.2's target: |mean - true| <= 0.04 everywhere (its worst entry)
    assert summary["worst_abs_error"] <= 0.04 and summary["mean_target_met"]
    # Theorem 5.2's sds lie in the thesis's 0.00-5.7 x 10^-2; S (not randomized, a root) 0
    assert summary["thm52_sd_max_x100"] <= 5.7
    s_rows = [r for r in rows if r["node"] == "S"]
    assert all(r["sd_x100"] == 0 and r["thm52_sd_x100"] == 0 for r in s_rows)
    # the no-miner protocol randomizes less and is better (Sec. 5.6.1)
    assert summary["no_miner_sd_max_x100"] < summary["sd_max_x100"]


def _check_id3_fig79_quick(tour):
    check_id3_rows(_result(tour, "id3-fig7.9"))


def _check_pocket_fig61_quick(tour):
    rows = _result(tour, "pocket-fig6.1")
    ref = rows[-1]
    rows = [r for r in rows if r["p"] != "reference"]
    assert [r["p"] for r in rows] == [0.0, 0.2, 0.4]
    assert rows[0]["weighted_mean"] == rows[0]["plain_mean"]  # p = 0: same samples, same seed
    assert all(r["weighted_mean"] >= r["plain_mean"] for r in rows)
    assert ref["best_separator_grid4"] == 0.984 and ref["majority_table6.1"] == 0.7392


def _check_apriori_fig74_quick(tour):
    check_apriori_rows(_result(tour, "apriori-fig7.4"), tour / "results" / "apriori-fig7.4")


def test_the_masking_audit_figures_are_computed():
    """The README's masking audit line (records linked and IL1s per k) is MDAV's on Adult's
    five numbers, recomputed here (MDAV and the linkage draw nothing)."""
    import re

    from privlab.attacks.record_linkage import record_linkage
    from privlab.data.datasets import load_dataset
    from privlab.publish.masking import microaggregate

    text = " ".join(README.read_text().split())
    m = re.search(r"records linked ([\d. /]+)% and IL1s ([\d. /]+) per cell at k = ([\d /]+);",
                  text)  # fmt: skip
    assert m, "the README's masking audit line"
    linked, il, ks = ([float(v) for v in g.split(" / ")] for g in m.groups())
    adult = load_dataset("adult")
    num = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
    for k, want_link, want_il in zip(ks, linked, il, strict=True):
        rel = microaggregate(adult, num, k=int(k), keep=[], rng=0)
        link = record_linkage(rel.truth_values(), rel.values()).rate.value
        assert f"{100 * link:.1f}" == f"{want_link:.1f}"
        assert f"{rel.custody.input_measures['utility']['il1s_mean']:.3f}" == f"{want_il:.3f}"


# what each part is checked for, by the name of a file it writes
CHECKS = {
    "gen-k10": _check_the_generalize_example_publishes_nothing_unsafe,
    "syn-report.html": _check_the_synthetic_example_publishes_a_dp_release_and_its_report,
    "assess-k10.html": _check_the_assess_example_reads_the_exported_release,
    "mdav-k5.html": _check_the_masking_example_states_its_computed_linkage,
    "results/kifer-table6": _check_kifer_table6_quick,
    "results/dpnb-adult": _check_dpnb_adult_quick,
    "results/bn-table5.2": _check_bn_table_5_2_quick_meets_the_target,
    "results/id3-fig7.9": _check_id3_fig79_quick,
    "results/pocket-fig6.1": _check_pocket_fig61_quick,
    "results/apriori-fig7.4": _check_apriori_fig74_quick,
}


def test_every_check_has_its_part():
    written = {n for p in PARTS for c in p for n in _writes(c)}
    assert set(CHECKS) <= written
