"""The Release model, across every kind: custody, roles, public domains, one I/O, adapters."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import canon_reference as canon
from conftest import reseal
from privlab.attacks.random_worlds import random_worlds_attack
from privlab.data import Table, as_table, load_adult, load_nursery
from privlab.data.partition import Partition
from privlab.errors import ParameterError, PrivacyWarning, ReleaseError, SchemaError
from privlab.metrics.calibration import evaluate, read_truth_for
from privlab.publish import (
    AnatomyRelease,
    GeneralizedRelease,
    PramRelease,
    Release,
    anatomize,
    generalize,
    load_release,
    pram,
)
from privlab.release.base import METHODS

SEED = 424242
README_QI = [
    "age", "workclass", "education", "marital-status", "occupation", "race", "sex",
    "native-country",
]  # fmt: skip


def _releases(rng) -> dict[str, Release]:
    """One release of every kind, each drawn with ``rng`` (a seed or a generator)."""
    nursery = load_nursery()
    adult = load_adult().take(np.arange(4000))
    with pytest.warns(PrivacyWarning, match="'age' was read from the data"):
        prammed = pram(adult, columns=["age", "sex"], keep=["race"], p=0.3, rng=rng)
    return {
        "anatomy": anatomize(
            nursery, qi=["parents", "has_nurs", "form"], sensitive="class", l=2, rng=rng
        ),
        "generalization": generalize(
            adult,
            qi=["age", "education", "sex"],
            sensitive="salary",
            k=20,
            suppression=0.02,
            dataset="adult",
        ),
        "pram": prammed,
    }


def test_every_kind_is_registered_and_subclasses_the_base():
    from privlab.publish.masking import MaskedRelease

    assert set(METHODS) == {
        "anatomy", "generalization", "pram", "alphabeta", "marginals", "masking",
        "dp-synthetic",
    }  # fmt: skip
    from privlab.publish.synthetic import SyntheticRelease

    for cls in (AnatomyRelease, GeneralizedRelease, PramRelease, MaskedRelease,
                SyntheticRelease):  # fmt: skip
        assert issubclass(cls, Release)


def test_no_published_file_holds_the_seed_or_the_truth(tmp_path):
    """The seed, its salt and the truth go to custody only (replaying a published seed
    recovers the row order and the true values)."""
    for kind, rel in _releases(SEED).items():
        out, custody = tmp_path / kind, tmp_path / f"{kind}.custody"
        # three releases, two of one input (Adult's first rows): acknowledged
        rel.save(out, custody=custody, republish=True)
        secrets = [str(SEED)] if kind != "generalization" else []
        if rel.custody.seed.salt is not None:
            secrets.append(str(rel.custody.seed.salt))
        truth_csv = (custody / "truth.csv").read_text()
        truth_cols = truth_csv.splitlines()[0].split(",")[1:]
        for f in out.iterdir():
            text = f.read_text()
            for s in secrets:
                assert s not in text, (kind, f.name, s)
            assert "truth" not in f.name and "custody" not in f.name
            assert truth_csv not in text
        # the custody holds them, and names itself as the custodian's
        meta = json.loads((custody / "custody.json").read_text())
        assert "never publish" in meta["notice"]
        if kind != "generalization":
            assert meta["seed"]["seed"] == SEED and int(meta["seed"]["salt"]) > 2**100
        # the truth is not published: Anatomy's sensitive values are only in the ST, PRAM's
        # published values are randomized
        main = out / f"{rel.table_names[0]}.csv"
        published = pd.read_csv(main, dtype=str, keep_default_na=False)
        truth = pd.read_csv(custody / "truth.csv", dtype=str, keep_default_na=False)
        if kind == "anatomy":
            assert not set(truth_cols) & set(published.columns)
        if kind == "pram":
            for c in truth_cols:
                assert (published[c] != truth[c]).mean() > 0.1, c


def test_reload_and_evaluate_with_the_custody_directory_alone(tmp_path):
    """A fresh process with the release directory and its custody directory beside it."""
    rel = _releases(np.random.default_rng(1))["anatomy"]
    rel.save(tmp_path / "rel", custody=tmp_path / "custody", not_for_publication=True)
    expected = evaluate(random_worlds_attack(rel).probs, rel.truth).acc
    code = (
        "from privlab.publish import load_release\n"
        "from privlab.attacks.random_worlds import random_worlds_attack\n"
        "from privlab.metrics.calibration import evaluate\n"
        "r = load_release('rel', custody='custody')\n"
        "print(evaluate(random_worlds_attack(r).probs, r.truth).acc)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) == pytest.approx(expected, abs=1e-12)
    # the CLI's way: a posterior file and the custody directory's truth.csv
    post = random_worlds_attack(load_release(tmp_path / "rel"))
    codes = read_truth_for(post, tmp_path / "custody" / "truth.csv")
    assert evaluate(post.probs, codes).acc == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_every_kind_round_trips(tmp_path, fmt):
    for kind, rel in _releases(np.random.default_rng(2)).items():
        rel.save(tmp_path / kind, format=fmt, not_for_publication=True)  # from a generator
        back = load_release(tmp_path / kind)
        assert type(back) is type(rel) and back.custody is None
        assert back.table_names == rel.table_names
        for name in rel.table_names:
            pd.testing.assert_frame_equal(
                back.to_pandas(name).astype(str), rel.to_pandas(name).astype(str)
            )
        assert back.privacy() == rel.privacy()
        assert repr(back) == repr(rel) and str(SEED) not in repr(rel)
        assert "<table>" in rel._repr_html_()


def test_published_domains_hold_only_published_values(tmp_path):
    """With suppression the input's domains hold values only suppressed records have; the
    release lists only what it publishes (an undeclared domain is read from private data)."""
    adult = load_adult()
    rel = generalize(
        adult, qi=README_QI, sensitive="salary", keep=["fnlwgt"], k=50, suppression=0.02,
        dataset="adult",
    )  # fmt: skip
    assert rel.n_suppressed > 0
    rel.save(tmp_path / "g")
    meta = json.loads((tmp_path / "g" / "release.json").read_text())
    table = pd.read_csv(tmp_path / "g" / "table.csv", dtype=str, keep_default_na=False)
    for a in meta["schema"]["attributes"]:
        assert {str(v) for v in a["domain"]} == set(table[a["name"]]), a["name"]
    # fnlwgt values that only suppressed records hold are not listed
    (fnlwgt,) = [a for a in meta["schema"]["attributes"] if a["name"] == "fnlwgt"]
    assert len(fnlwgt["domain"]) < adult.schema["fnlwgt"].size
    # a declared domain (Nursery's, from the UCI description) may be published whole
    nursery = load_nursery()
    rel = anatomize(nursery.take(np.arange(0, 12960, 40)), qi=["parents"], sensitive="class", l=2)
    assert all(a.declared for a in rel.schema.attributes)
    assert rel.public_schema()["parents"].domain == nursery.schema["parents"].domain


def test_generalize_publishes_only_declared_roles_and_check_matches_brute_force():
    adult = load_adult()
    rel = generalize(adult, qi=README_QI, sensitive="salary", k=10, l=2, dataset="adult")
    df = rel.to_pandas()
    assert sorted(df.columns) == sorted([*README_QI, "salary"])
    p = rel.privacy()
    rows, qpos = canon.records(df, README_QI)
    assert canon.k_anonymity(rows, qpos) == p.k == 397 and p.flagged == ()
    # kept unchanged, fnlwgt re-identifies: brute force agrees with check, which flags it
    kept = generalize(
        adult, qi=README_QI, sensitive="salary", keep=["fnlwgt"], k=10, l=2, dataset="adult"
    )
    p = kept.privacy()
    df = kept.to_pandas()
    rows, qpos = canon.records(df, [c for c in df.columns if c != "salary"])
    assert canon.k_anonymity(rows, qpos) == p.k == 1
    assert [c for c, _ in p.flagged] == ["fnlwgt"] and p.flagged[0][1] > 0.05
    assert any("fnlwgt" in w for w in p.warnings())


def test_check_flags_a_kept_column(cli, tmp_path):
    r = cli("generalize", "adult", "--qi", ",".join(README_QI), "--sensitive", "salary",
            "--keep", "fnlwgt", "--k", "10", "--l", "2", "--out", tmp_path / "g")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "not published (no role): education-num" in r.stderr
    r = cli("check", tmp_path / "g")
    assert r.returncode == 0, r.stderr
    assert "kept column 'fnlwgt' alone makes" in r.stderr


def test_partition_is_one_interface_for_every_partition_release():
    rels = _releases(np.random.default_rng(3))
    for kind in ("anatomy", "generalization"):
        part = rels[kind].partition()
        assert isinstance(part, Partition) and part.n_rows == rels[kind].n_rows
        post = random_worlds_attack(rels[kind])  # the same attack on either kind
        shares = part.counts / part.counts.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(post.probs, shares[part.group_of])
    gen = rels["generalization"]
    # generalization: the classes are the rows alike on every published non-sensitive column
    cls = gen.to_pandas().drop(columns="salary").astype(str).agg("|".join, axis=1)
    assert gen.partition().n_groups == cls.nunique()
    assert rels["pram"].partition() is None
    with pytest.raises(ReleaseError, match="has no partition"):
        random_worlds_attack(rels["pram"])


def test_pram_builds_no_matrix_for_a_kept_column():
    adult = load_adult()
    rel = pram(adult, columns=["race"], keep=["fnlwgt"], p=0.2, rng=np.random.default_rng(0))
    assert [b.columns for b in rel.blocks] == [("race",)]
    assert rel.block_of("fnlwgt") is None and rel.randomized_columns == ("race",)
    from privlab.estimate.pram import Identity, release_factors
    from privlab.estimate.pram_release import estimate_release

    factors, order = release_factors(rel, ["race", "fnlwgt"])
    assert order == ["race", "fnlwgt"]
    assert isinstance(factors[1], Identity) and factors[1].size == adult.schema["fnlwgt"].size
    est = estimate_release(rel, ["fnlwgt"])  # 20,263 cells through a symbolic identity
    np.testing.assert_array_equal(est.counts, adult.counts(["fnlwgt"]))


def test_pram_warns_only_about_domains_read_from_the_data():
    import warnings

    with warnings.catch_warnings():  # Nursery's domains are declared (UCI description)
        warnings.simplefilter("error", PrivacyWarning)
        rel = pram(load_nursery(), columns=["parents"], p=0.2)
    assert rel.public_schema()["parents"].domain == load_nursery().schema["parents"].domain
    with pytest.warns(PrivacyWarning, match="'age' was read from the data"):
        pram(load_adult(), columns=["age"], p=0.2)


def test_dataframes_in(tmp_path):
    """Every sanitizer takes pandas, polars, pyarrow and privlab tables alike."""
    import polars as pl

    df = load_nursery().to_pandas().iloc[::20].reset_index(drop=True)
    inputs = {
        "pandas": df,
        "polars": pl.from_pandas(df),
        "arrow": pa.Table.from_pandas(df, preserve_index=False),
        "table": Table.from_pandas(df),
    }
    results = {}
    for name, data in inputs.items():
        assert as_table(data).names == tuple(df.columns)
        a = anatomize(data, qi=["parents", "form"], sensitive="class", l=2,
                      rng=np.random.default_rng(0))  # fmt: skip
        g = generalize(data, qi=["parents", "form"], sensitive="class", k=5)
        with pytest.warns(PrivacyWarning):
            p = pram(data, columns=["parents"], p=0.2, rng=np.random.default_rng(0))
        results[name] = (a.qit.codes, a.group_id, g.to_pandas(), p.table.codes)
    ref = results["table"]
    for name, res in results.items():
        np.testing.assert_array_equal(res[0], ref[0], err_msg=name)
        np.testing.assert_array_equal(res[1], ref[1], err_msg=name)
        pd.testing.assert_frame_equal(res[2], ref[2])
        np.testing.assert_array_equal(res[3], ref[3], err_msg=name)
    from privlab.dp.histogram import noisy_histogram

    with pytest.warns(PrivacyWarning, match="not protected"):
        h = noisy_histogram(
            inputs["polars"], ["parents"], epsilon=float("inf"), domain_from_data=True
        )
    np.testing.assert_array_equal(h.counts, df["parents"].value_counts()[list(h.domains[0])])


def test_bad_input_is_named(tmp_path):
    dup = pd.DataFrame([[1, 2, 3]], columns=["sex", "sex", "s"])
    with pytest.raises(SchemaError, match="duplicate column name 'sex'"):
        anatomize(dup, qi=["sex"], sensitive="s", l=2)
    arrow = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    with pytest.raises(SchemaError, match="duplicate column name 'a'"):
        as_table(arrow)
    with pytest.raises(ParameterError, match="not list"):
        as_table([[1, 2]])
    nursery = load_nursery()
    with pytest.raises(ParameterError, match="no quasi-identifier"):
        generalize(nursery, sensitive="class", k=2)
    with pytest.raises(ParameterError, match="no quasi-identifier"):
        anatomize(nursery, sensitive="class", l=2)
    with pytest.raises(SchemaError, match="both a quasi-identifier and kept"):
        anatomize(nursery, qi=["parents"], keep=["parents"], sensitive="class", l=2)
    with pytest.raises(SchemaError, match="both the sensitive attribute and kept"):
        generalize(nursery, qi=["parents"], keep=["class"], sensitive="class", k=2)
    from privlab.publish import randomize

    with pytest.raises(ParameterError, match="nothing to publish"):
        randomize(nursery, {})
    # release directories: unknown method, a missing or an edited file
    subset = nursery.take(np.random.default_rng(0).permutation(nursery.n_rows)[:300])
    rel = anatomize(subset, qi=["parents"], sensitive="class", l=2)
    rel.save(tmp_path / "r")
    meta = json.loads((tmp_path / "r" / "release.json").read_text())
    (tmp_path / "u").mkdir()
    reseal(tmp_path / "u", {**meta, "method": "magic"})  # a digest that matches
    with pytest.raises(ReleaseError, match="unknown release method 'magic'"):
        load_release(tmp_path / "u")
    (tmp_path / "r" / "st.csv").rename(tmp_path / "st.csv")
    with pytest.raises(ReleaseError, match=r"has no st\.csv"):
        load_release(tmp_path / "r")
    text = (tmp_path / "st.csv").read_text()
    (tmp_path / "r" / "st.csv").write_text(text.replace("\n", "\r\n"))
    with pytest.raises(ReleaseError, match="modified after the release was written"):
        load_release(tmp_path / "r")


def test_cli_bad_release_input_is_one_line_and_writes_nothing(cli, tmp_path):
    src = tmp_path / "dup.csv"
    src.write_text("sex,sex,s\n30,F,x\n41,M,y\n")  # the first 'sex' holds ages
    nursery = tmp_path / "n.csv"
    load_nursery().to_pandas().iloc[::100].to_csv(nursery, index=False)
    for data, args, needle in (
        (src, ["--qi", "sex", "--sensitive", "s"], "duplicate column name 'sex'"),
        (nursery, ["--qi", "parents", "--keep", "parents"], "both a quasi-identifier and kept"),
        (nursery, ["--qi", "", "--keep", "form"], "no quasi-identifier"),
    ):
        if data == nursery:
            args = [*args, "--sensitive", "class"]
        r = cli("anatomize", data, *args, "--l", "2", "--out", tmp_path / "x")
        assert r.returncode == 2 and needle in r.stderr and len(r.stderr.splitlines()) == 1
        assert not (tmp_path / "x").exists()
    r = cli("check", tmp_path / "nothing")
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_cli_replays_a_release_from_its_custody(cli, tmp_path):
    """The seed and the custody's salt, together, draw the same release again; the seed
    alone does not."""
    base = ["nursery", "--qi", "parents,form", "--sensitive", "class", "--l", "2"]
    r = cli(
        "anatomize", *base, "--seed", "5", "--custody", tmp_path / "c1", "--out", tmp_path / "r1"
    )
    assert r.returncode == 0, r.stderr
    r = cli("anatomize", *base, "--replay", tmp_path / "c1", "--out", tmp_path / "r2")
    assert r.returncode == 0, r.stderr  # a replay is not a new release
    # the same seed draws another release (a new salt): a second release of the input
    again = [
        "anatomize",
        *base,
        "--seed",
        "5",
        "--custody",
        tmp_path / "c3",
        "--out",
        tmp_path / "r3",
    ]
    r = cli(*again)
    assert r.returncode == 2 and "already has 1 release" in r.stderr
    r = cli(*again, "--republish")
    assert r.returncode == 0, r.stderr
    for f in ("qit.csv", "st.csv", "release.json"):
        assert (tmp_path / "r1" / f).read_bytes() == (tmp_path / "r2" / f).read_bytes(), f
    assert (tmp_path / "r1" / "qit.csv").read_bytes() != (tmp_path / "r3" / "qit.csv").read_bytes()
    # another input, or another method's custody, is refused in one line
    r = cli("anatomize", "lenses", "--qi", "age", "--sensitive", "class", "--l", "2",
            "--replay", tmp_path / "c1", "--out", tmp_path / "x")  # fmt: skip
    assert r.returncode == 2 and "another input" in r.stderr
    r = cli("pram", "nursery", "--columns", "form", "--p", "0.2", "--replay", tmp_path / "c1",
            "--out", tmp_path / "x")  # fmt: skip
    assert r.returncode == 2 and "not pram" in r.stderr and not (tmp_path / "x").exists()
    # the same seed and salt with other parameters would correlate two releases: refused
    pr = ["pram", "nursery", "--columns", "parents", "--keep", "class"]
    r = cli(*pr, "--p", "0.3", "--seed", "2", "--custody", tmp_path / "pc", "--republish",
            "--out", tmp_path / "p1")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = cli(*pr, "--p", "0.4", "--replay", tmp_path / "pc", "--out", tmp_path / "p2")
    assert r.returncode == 2 and "correlated" in r.stderr and not (tmp_path / "p2").exists()


def test_cli_declared_domains(cli, tmp_path):
    """--domains declares a public domain: PRAM publishes it whole without a note (a value no
    record holds included); a value outside it is one clear line."""
    src = tmp_path / "in.csv"
    pd.DataFrame({"a": list("xyxyxy"), "b": list("uvuvuv")}).to_csv(src, index=False)
    (tmp_path / "dom.json").write_text(json.dumps({"a": ["x", "y", "z"]}))
    r = cli("pram", src, "--columns", "a", "--keep", "b", "--p", "0.2", "--domains",
            tmp_path / "dom.json", "--out", tmp_path / "r")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "read from the data" not in r.stderr
    meta = json.loads((tmp_path / "r" / "release.json").read_text())
    (a,) = [x for x in meta["schema"]["attributes"] if x["name"] == "a"]
    assert a["domain"] == ["x", "y", "z"] and a["declared"]
    (tmp_path / "bad.json").write_text(json.dumps({"a": ["x"]}))
    r = cli("pram", src, "--columns", "a", "--p", "0.2", "--domains", tmp_path / "bad.json",
            "--out", tmp_path / "r2")  # fmt: skip
    assert r.returncode == 2 and "value 'y' is not in the domain of 'a'" in r.stderr
    (tmp_path / "list.json").write_text("[1, 2]")
    r = cli("pram", src, "--columns", "a", "--p", "0.2", "--domains", tmp_path / "list.json",
            "--out", tmp_path / "r3")  # fmt: skip
    assert r.returncode == 2 and "JSON object" in r.stderr


def test_cli_version_and_escaped_text(cli, capsys):
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("privlab ")
    from privlab.cli._app import note

    note("diffprivlib is not installed (pip install '.[bench]')")
    assert "pip install '.[bench]'" in capsys.readouterr().err


def test_public_api_names():
    import privlab.publish as publish

    assert callable(publish.pram) and publish.pram.__name__ == "pram"
    import privlab.publish.randomization  # noqa: F401 - the module never shadows the function
    from privlab.publish import pram as again

    assert callable(again)


def test_a_replay_that_differs_from_its_release_is_never_written(tmp_path):
    """Drawn from another release's seed and salt with other parameters, a release would be
    correlated with it (same row permutation, same groups): saving it is refused."""
    nursery = load_nursery()
    kw = dict(qi=["parents", "form"], sensitive="class", l=2)
    rel = anatomize(nursery, **kw, rng=11)
    rel.save(tmp_path / "r", custody=tmp_path / "c")
    replay = load_release(tmp_path / "r", custody=tmp_path / "c").custody.replay()
    same = anatomize(nursery, **kw, rng=replay)
    same.save(tmp_path / "again", custody=tmp_path / "again.c")  # the very same release
    assert (tmp_path / "again" / "qit.csv").read_bytes() == (
        tmp_path / "r" / "qit.csv"
    ).read_bytes()
    other = anatomize(nursery, qi=["parents", "health"], sensitive="class", l=2, rng=replay)
    with pytest.raises(ReleaseError, match="correlated"):
        other.save(tmp_path / "other", custody=tmp_path / "other.c")
    assert not (tmp_path / "other").exists() and not (tmp_path / "other.c").exists()


def test_the_identity_scheme_keeps_its_columns_without_a_matrix():
    adult = load_adult()
    rel = pram(adult, columns=["fnlwgt"], scheme="identity", p=0.0, rng=np.random.default_rng(0))
    assert rel.blocks == () and rel.randomized_columns == ()
    assert rel.table.names == ("fnlwgt",)
    np.testing.assert_array_equal(
        np.sort(rel.table.column("fnlwgt")), np.sort(adult.column("fnlwgt"))
    )


def test_a_hierarchy_read_from_the_data_is_named(tmp_path):
    df = pd.DataFrame(
        {"age": [30 + i % 30 for i in range(400)] + [1000], "s": ["x", "y"] * 200 + ["x"]}
    )
    with pytest.warns(PrivacyWarning, match="'age' was built from the data's own range"):
        generalize(df, qi=["age"], sensitive="s", k=5, suppression=0.01)
    import warnings

    declared = Table.from_pandas(df, domains={"age": list(range(0, 1001))})
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        generalize(declared, qi=["age"], sensitive="s", k=5, suppression=0.01)


def test_bundled_declared_domains_survive_more_declarations():
    from privlab.data.datasets import load_input

    t = load_input("nursery", domains={"parents": ["usual", "pretentious", "great_pret"]})
    assert all(a.declared for a in t.schema.attributes)
    assert t.schema["has_nurs"].domain == load_nursery().schema["has_nurs"].domain


def test_cli_unreadable_inputs_and_custody_are_one_line(cli, tmp_path):
    (tmp_path / "rag.csv").write_text("a,b\n1,2\n3,4,5,6\n")
    (tmp_path / "lat.csv").write_bytes(b"a,b\n\xe9,1\n")
    (tmp_path / "bad.parquet").write_text("junk")
    (tmp_path / "dom.json").write_text(json.dumps({"a": [["x"], ["y"]]}))
    for src, extra, needle in (
        ("rag.csv", [], "Expected 2 fields"),
        ("lat.csv", [], "not UTF-8"),
        ("bad.parquet", [], "cannot read"),
        ("rag.csv", ["--domains", tmp_path / "dom.json"], "plain values"),
    ):
        r = cli("anatomize", tmp_path / src, "--qi", "a", "--sensitive", "b", "--l", "2", *extra,
                "--out", tmp_path / "o")  # fmt: skip
        assert r.returncode == 2 and needle in r.stderr, (src, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
    # a custody directory whose seed record is malformed
    nursery = load_nursery().take(np.random.default_rng(0).permutation(12960)[:400])
    anatomize(nursery, qi=["parents"], sensitive="class", l=2).save(
        tmp_path / "r", custody=tmp_path / "c"
    )
    meta = json.loads((tmp_path / "c" / "custody.json").read_text())
    for seed in (5, {"seed": 1, "salt": "-5"}):
        (tmp_path / "c" / "custody.json").write_text(json.dumps({**meta, "seed": seed}))
        with pytest.raises(ReleaseError, match="malformed seed"):
            load_release(tmp_path / "r", custody=tmp_path / "c")
    # evaluate scores Anatomy's hidden values only
    gen = generalize(nursery, qi=["parents", "form"], sensitive="class", k=5)
    gen.save(tmp_path / "g", custody=tmp_path / "gc", republish=True)  # the input's second
    random_worlds_attack(load_release(tmp_path / "g")).save(tmp_path / "rw.csv")
    r = cli("evaluate", tmp_path / "rw.csv", "--custody", tmp_path / "gc")
    assert r.returncode == 2 and "'generalization' release" in r.stderr
