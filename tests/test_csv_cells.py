"""CSV cells a spreadsheet would evaluate, and the metadata a release is checked against.

* :mod:`privlab._csv`: every cell and header written is safe to open in a spreadsheet and
  reads back through privlab to the value written (issue 30.1);
* ``release.json``'s own digest, PRAM matrices against their scheme and p, DP tree bounds,
  JSON depth, and each release's claims measured on its rows (issue 30.4).
"""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import reseal
from privlab._csv import (
    TRIGGERS,
    is_formula,
    neutralize,
    neutralize_frame,
    restore,
    restore_frame,
    write_csv,
)
from privlab._io import MAX_JSON_DEPTH, json_depth, read_json, sha256_file
from privlab.data.table import read_table
from privlab.errors import PrivlabError, ReleaseError, SpreadsheetWarning
from privlab.publish import anatomize, generalize, load_release, pram
from spreadsheet_cells import FORMULA_CELLS

#: The cells of issue 30.1, and a few more of OWASP's list.
FORMULAS = [*FORMULA_CELLS, "-inf"]


def cells(path: Path) -> list[str]:
    """Every header and cell of a CSV file, as a spreadsheet splits it."""
    with open(path, newline="", encoding="utf-8") as fh:
        return [c for row in csv.reader(fh) for c in row]


# -- the escaping -----------------------------------------------------------------------------
def test_formulas_are_neutralized_and_numbers_are_not() -> None:
    for f in FORMULAS:
        assert is_formula(f), f
        assert neutralize(f) == "'" + f and not is_formula(neutralize(f))
        assert restore(neutralize(f)) == f
    for number in ("-2", "+1.5", "-3e-4", "-.5", "7", "1E+3"):
        assert not is_formula(number) and neutralize(number) == number
    # a value that already starts with the escape before a trigger (or another escape) gets
    # one more, so that reading removes exactly one; other values are written as they are
    assert neutralize("'=x") == "''=x" and restore("''=x") == "'=x"
    assert neutralize("''") == "'''" and restore("'''") == "''"
    assert neutralize("'plain") == "'plain" and restore("'plain") == "'plain"
    assert neutralize("") == "" and neutralize("'") == "'" and restore("'") == "'"


@given(st.text(alphabet=st.sampled_from([*TRIGGERS, "'", "a", "1", ".", "e", " "]), max_size=8))
def test_escaping_is_safe_and_reversible_for_any_text(value: str) -> None:
    written = neutralize(value)
    assert not is_formula(written)
    assert restore(written) == value


def test_frames_escape_headers_and_text_but_not_numeric_columns() -> None:
    df = pd.DataFrame({"=1+1": ["-2+3", "x", "-2"], "n": [-2, 3, -5], "f": [-0.5, 1.0, 2.0]})
    safe, n = neutralize_frame(df)
    assert list(safe.columns) == ["'=1+1", "n", "f"]
    assert safe["'=1+1"].tolist() == ["'-2+3", "x", "-2"]
    assert safe["n"].tolist() == [-2, 3, -5] and safe["f"].tolist() == [-0.5, 1.0, 2.0]
    assert n == 2  # the header and one cell
    back = restore_frame(safe)
    pd.testing.assert_frame_equal(back, df)
    assert neutralize_frame(pd.DataFrame({"a": ["x"]}))[1] == 0


def test_write_csv_warns_only_when_it_neutralized(tmp_path: Path) -> None:
    with pytest.warns(SpreadsheetWarning, match=r"2 in out\.csv"):
        assert (
            write_csv(pd.DataFrame({"a": ["=1", "@x", "ok"]}), tmp_path / "t", name="out.csv") == 2
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert write_csv(pd.DataFrame({"a": ["ok", "-1"]}), tmp_path / "u", name="u.csv") == 0
    # a carriage return inside a value: the file quotes it, and it reads back whole
    write_csv(pd.DataFrame({"a": ["x\ry", "\r=2"], "n": [1, 2]}), tmp_path / "cr.csv")
    back = read_table(tmp_path / "cr.csv")
    assert back.decode("a").tolist() == ["x\ry", "\r=2"] and back.decode("n").tolist() == [1, 2]


def test_a_release_of_formula_cells_is_safe_and_reads_back(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    n = 120
    df = pd.DataFrame(
        {
            "=1+1": rng.choice([*FORMULAS[:5], "x"], n),
            "b": rng.integers(-3, 3, n),
            "s": rng.choice(FORMULAS, n),
        }
    )
    rel = anatomize(df, qi=["=1+1", "b"], sensitive="s", l=2)
    with pytest.warns(SpreadsheetWarning, match=r"qit\.csv.*st\.csv.*truth\.csv"):
        rel.save(tmp_path / "r", custody=tmp_path / "c")
    meta = json.loads((tmp_path / "r" / "release.json").read_text())
    for name in ("qit.csv", "st.csv"):
        assert not any(is_formula(c) for c in cells(tmp_path / "r" / name)), name
        # the digest is of the bytes written (escaping included)
        spec = next(s for s in meta["tables"].values() if s["file"] == name)
        assert spec["sha256"] == sha256_file(tmp_path / "r" / name)
    assert not any(is_formula(c) for c in cells(tmp_path / "c" / "truth.csv"))
    # -2 in the numeric column b is a number in the file, not an escaped text
    assert "-2" in cells(tmp_path / "r" / "qit.csv")
    back = load_release(tmp_path / "r", custody=tmp_path / "c")
    assert back.qit.decode("=1+1").tolist() == rel.qit.decode("=1+1").tolist()
    assert back.qit.decode("b").tolist() == rel.qit.decode("b").tolist()
    assert back.custody.truth.decode("s").tolist() == rel.custody.truth.decode("s").tolist()
    assert sorted(back.custody.truth.decode("s")) == sorted(df["s"])


def test_an_input_csv_written_by_privlab_reads_back_to_its_values(tmp_path: Path) -> None:
    df = pd.DataFrame({"a": FORMULAS, "n": np.arange(len(FORMULAS)) - 3, "=x": ["'q"] * 8})
    write_csv(df, tmp_path / "t.csv")
    t = read_table(tmp_path / "t.csv")
    assert t.names == ("a", "n", "=x")
    assert t.decode("a").tolist() == FORMULAS
    assert t.schema["n"].numeric and t.decode("n").tolist() == df["n"].tolist()
    assert t.decode("=x").tolist() == ["'q"] * 8


# -- release.json's digest ----------------------------------------------------------------------
def _small_release(tmp_path: Path) -> Path:
    df = pd.DataFrame({"a": list("xyzxyz") * 4, "s": list("pqrs") * 6})
    anatomize(df, qi=["a"], sensitive="s", l=2).save(tmp_path / "r")
    return tmp_path / "r"


def test_release_json_is_covered_by_its_digest(tmp_path: Path) -> None:
    r = _small_release(tmp_path)
    path = r / "release.json"
    meta = json.loads(path.read_text())
    keys = list(meta)
    assert keys.index("digest") == keys.index("tables") + 1  # beside the tables' digests
    # the same content formatted otherwise still loads; any edited field does not
    path.write_text(json.dumps(meta, indent=None, sort_keys=True))
    load_release(r)
    path.write_text(json.dumps({**meta, "parameters": {"l": 3}}))
    with pytest.raises(ReleaseError, match="modified after the release was written"):
        load_release(r)
    path.write_text(json.dumps({k: v for k, v in meta.items() if k != "digest"}))
    with pytest.raises(ReleaseError, match="no digest"):
        load_release(r)
    reseal(r, {**meta, "parameters": {"l": 3}})  # a digest that matches the edit
    assert load_release(r).l == 3


# -- PRAM matrices against their scheme and p ---------------------------------------------------
def test_a_pram_matrix_must_be_the_one_its_scheme_and_p_give(tmp_path: Path) -> None:
    df = pd.DataFrame({"a": list("xyz") * 20, "b": list("uv") * 30, "s": list("pqrs") * 15})
    pram(df, columns=["a", "b"], keep=["s"], p=0.3).save(tmp_path / "r")
    grouped = pram(df, columns=["a"], keep=["s"], p=0.4, groups={"a": [["x", "y"]]})
    grouped.save(tmp_path / "g", republish=True)
    joint = pram(df, columns=["a", "b"], p=0.2, simultaneous=True)
    joint.save(tmp_path / "j", republish=True)
    for d in ("r", "g", "j"):  # the releases privlab wrote load
        load_release(tmp_path / d)
    meta = json.loads((tmp_path / "r" / "release.json").read_text())
    identity = json.loads(json.dumps(meta))
    identity["matrices"][0]["matrix"] = np.eye(3).tolist()
    reseal(tmp_path / "r", identity)
    with pytest.raises(ReleaseError, match=r"matrix of a is not the m-category matrix of p = 0\.3"):
        load_release(tmp_path / "r")
    other_p = json.loads(json.dumps(meta))
    other_p["parameters"]["p"] = 0.5  # the matrices of p = 0.3 no longer match
    reseal(tmp_path / "r", other_p)
    with pytest.raises(ReleaseError, match="matrix of a"):
        load_release(tmp_path / "r")
    dropped = json.loads(json.dumps(meta))
    dropped["matrices"] = dropped["matrices"][:1]  # b's matrix gone: b published as if kept
    reseal(tmp_path / "r", dropped)
    with pytest.raises(ReleaseError, match="publishes matrices of a, but"):
        load_release(tmp_path / "r")
    gmeta = json.loads((tmp_path / "g" / "release.json").read_text())
    gmeta["parameters"]["groups"] = {"a": [["x", "z"]]}  # other groups, same matrix
    reseal(tmp_path / "g", gmeta)
    with pytest.raises(ReleaseError, match="matrix of a"):
        load_release(tmp_path / "g")


# -- JSON depth -------------------------------------------------------------------------------
def test_json_nesting_is_bounded(tmp_path: Path) -> None:
    assert json_depth('{"a": [1, {"b": "[[[[{{"}], "c": "]]\\"[["}') == 3
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    (tmp_path / "ok.json").write_text(ok)
    assert read_json(tmp_path / "ok.json") is not None
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(PrivlabError, match="100,000 deep"):
        read_json(tmp_path / "deep.json", what="model file")


# -- model files as at fit time ---------------------------------------------------------------
def test_a_tree_model_with_bounds_lo_above_hi_is_refused(tmp_path: Path) -> None:
    from privlab.learn.dp_tree import DPTreeModel, fit_table

    df = pd.DataFrame({"a": list("xy") * 20, "b": np.arange(40), "s": list("pq") * 20})
    model = fit_table(df, "s", epsilon=float("inf"), max_depth=2, bounds={"b": (0, 50)},
                      features=["a", "b"])  # fmt: skip
    model.save(tmp_path / "t.json", not_for_publication=True)
    doc = json.loads((tmp_path / "t.json").read_text())
    DPTreeModel.load(tmp_path / "t.json")
    lo, hi = doc["model"]["bounds"]
    lo[1], hi[1] = 50.0, 0.0
    (tmp_path / "t.json").write_text(json.dumps(doc))
    with pytest.raises(PrivlabError, match=r"bounds of feature 1 must satisfy lo <= hi"):
        DPTreeModel.load(tmp_path / "t.json")


# -- what a release claims ------------------------------------------------------------------------
def test_releases_privlab_writes_hold_their_claims() -> None:
    rng = np.random.default_rng(5)
    n = 300
    df = pd.DataFrame(
        {
            "a": rng.choice(list("abcdef"), n),
            "b": rng.integers(0, 8, n),
            "s": rng.choice(list("pqrstu"), n, p=[0.3, 0.2, 0.15, 0.15, 0.1, 0.1]),
        }
    )
    releases = [anatomize(df, qi=["a", "b"], sensitive="s", l=lv) for lv in (2, 3)]
    releases += [
        generalize(df, qi=["a", "b"], sensitive="s", k=k, l=lv, l_variant=v, suppression=sup)
        for k, lv, v, sup in [(3, None, "distinct", 0.0), (2, 2, "distinct", 0.1),
                              (2, 2.0, "entropy", 0.05), (4, 3, "distinct", 0.0)]
    ]  # fmt: skip
    for rel in releases:
        claims = rel.claims()
        assert claims and all(c["holds"] for c in claims), claims


def test_a_release_that_breaks_its_claim_is_caught() -> None:
    import dataclasses

    df = pd.DataFrame({"a": list("xyxyxy"), "s": list("pqrspq")})
    rel = anatomize(df, qi=["a"], sensitive="s", l=2)
    assert all(c["holds"] for c in rel.claims())
    # the same groups, each holding one value for all its rows: l = 2 is claimed, not held
    sizes = rel.group_sizes()
    zeros = np.zeros(sizes.size, dtype=np.int64)
    bad = dataclasses.replace(
        rel, custody=None, st_group=np.arange(sizes.size), st_value=zeros, st_count=sizes
    )
    (claim,) = bad.claims()
    assert not claim["holds"] and "largest share 1" in claim["measured"]
    # one group holding a value in 2 of its 3 rows: 2/3 > 1/2
    three = pd.DataFrame({"a": list("xxx"), "s": list("pqr")})
    rel3 = anatomize(three, qi=["a"], sensitive="s", l=3)
    assert rel3.claims()[0]["holds"]
    worse = dataclasses.replace(rel3, l=2, custody=None, st_group=np.array([0, 0]),
                                st_value=np.array([0, 1]), st_count=np.array([2, 1]))  # fmt: skip
    assert not worse.claims()[0]["holds"]
    assert dataclasses.replace(rel3, l=2).claims()[0]["holds"]
