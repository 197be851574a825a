import json

import pandas as pd


def test_datasets_list_and_export(cli, tmp_path):
    r = cli("datasets", "list")
    assert r.returncode == 0 and "nursery" in r.stdout and "30162" in r.stdout
    out = tmp_path / "lenses.csv"
    r = cli("datasets", "export", "lenses", "--out", out)
    assert r.returncode == 0, r.stderr
    assert len(pd.read_csv(out)) == 24
    r = cli("datasets", "export", "lenses", "--out", out)
    assert r.returncode != 0 and "exists" in r.stderr


def test_anatomize_and_check(cli, tmp_path):
    src = tmp_path / "in.csv"
    pd.DataFrame({"a": list("xyzxyzxyz"), "b": [1, 2, 3] * 3, "s": ["p", "q", "r"] * 3}).to_csv(
        src, index=False
    )
    before = src.read_bytes()
    r = cli("anatomize", src, "--qi", "a,b", "--sensitive", "s", "--l", "3", "--seed", "1",
            "--custody", tmp_path / "c", "--out", tmp_path / "rel")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "custodian" in r.stderr and "never publish" in r.stderr
    assert src.read_bytes() == before
    meta = json.loads((tmp_path / "rel" / "release.json").read_text())
    assert meta["parameters"] == {"l": 3}
    custody = json.loads((tmp_path / "c" / "custody.json").read_text())
    assert custody["seed"]["seed"] == 1 and int(custody["seed"]["salt"]) > 2**100
    r = cli("check", tmp_path / "rel")
    assert r.returncode == 0 and "distinct_l" in r.stdout


def test_anatomize_bundled_dataset(cli, tmp_path):
    r = cli("anatomize", "adult", "--qi", "workclass,sex", "--sensitive", "occupation",
            "--l", "4", "--out", tmp_path / "a")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert len(pd.read_csv(tmp_path / "a" / "qit.csv")) == 30162
    # the columns without a role are not published, and the CLI says which
    assert list(pd.read_csv(tmp_path / "a" / "qit.csv").columns) == ["workclass", "sex", "group_id"]
    assert "not published (no role): age, fnlwgt" in r.stderr


from conftest import fails as _fails  # noqa: E402


def test_bad_input_gives_one_line(cli, tmp_path):
    src = tmp_path / "in.csv"
    pd.DataFrame({"a": ["x", "y", None, "x", "y"], "s": ["p", "q", "p", "q", "p"]}).to_csv(
        src, index=False
    )
    base = ["--sensitive", "s", "--out", tmp_path / "o"]
    _fails(cli("anatomize", tmp_path / "missing.csv", "--qi", "a", "--l", "2", *base), "not found")
    _fails(cli("anatomize", src, "--qi", "a", "--l", "2", *base), "'a' (1)", "--drop-missing")
    _fails(cli("anatomize", src, "--qi", "zz", "--l", "2", "--drop-missing", *base), "'zz'")
    _fails(cli("anatomize", src, "--qi", "a,s", "--l", "2", "--drop-missing", *base), "both")
    _fails(cli("anatomize", src, "--qi", "a", "--l", "1", "--drop-missing", *base), "integer >= 2")
    _fails(cli("anatomize", src, "--qi", "a", "--l", "3", "--drop-missing", *base), "l = 3")
    ok = cli("anatomize", src, "--qi", "a", "--l", "2", "--drop-missing", *base)
    assert ok.returncode == 0, ok.stderr
    _fails(cli("anatomize", src, "--qi", "a", "--l", "2", "--drop-missing", *base), "exists")
    # a new draw over it is a second release of the input: refused unless acknowledged
    _fails(cli("anatomize", src, "--qi", "a", "--l", "2", "--drop-missing", "--force", *base),
           "already has 1 release", "--republish")  # fmt: skip
    assert cli("anatomize", src, "--qi", "a", "--l", "2", "--drop-missing", "--force",
               "--republish", *base).returncode == 0  # fmt: skip
    empty = tmp_path / "empty.csv"
    empty.write_text("a,s\n")
    _fails(cli("anatomize", empty, "--qi", "a", "--l", "2", *base[:2], "--out", tmp_path / "e"),
           "empty")  # fmt: skip
    inel = tmp_path / "inel.csv"
    pd.DataFrame({"a": range(4), "s": ["p", "p", "p", "q"]}).to_csv(inel, index=False)
    _fails(cli("anatomize", inel, "--qi", "a", "--l", "2", *base[:2], "--out", tmp_path / "i"),
           "not 2-eligible", "'p'")  # fmt: skip
    _fails(cli("check", tmp_path), "no release.json")
    # a seed alone is guessable: it needs a custody directory to keep its salt
    _fails(cli("anatomize", src, "--qi", "a", "--l", "2", "--drop-missing", "--seed", "3",
               *base[:2], "--out", tmp_path / "s"), "--seed needs --custody")  # fmt: skip
    # a column kept unchanged cannot also be a quasi-identifier
    _fails(cli("anatomize", src, "--qi", "a", "--keep", "a", "--l", "2", "--drop-missing",
               *base[:2], "--out", tmp_path / "k"), "both a quasi-identifier and kept")  # fmt: skip
    # the custody directory must not sit inside the release
    _fails(cli("anatomize", src, "--qi", "a", "--l", "2", "--drop-missing", *base[:2],
               "--out", tmp_path / "r2", "--custody", tmp_path / "r2" / "c"), "apart")  # fmt: skip
    assert not (tmp_path / "s").exists() and not (tmp_path / "k").exists()
    assert not (tmp_path / "r2").exists()


def test_output_never_replaces_an_input(cli, tmp_path):
    """--force may replace an earlier output, never the input (nor a folder holding it)."""
    d = tmp_path / "d"
    d.mkdir()
    src = d / "in.csv"
    pd.DataFrame({"a": list("xyzxyz"), "s": ["p", "q"] * 3}).to_csv(src, index=False)
    before = src.read_bytes()
    base = ["--qi", "a", "--sensitive", "s", "--l", "2", "--force"]
    _fails(cli("anatomize", src, *base, "--out", d), "would overwrite the input")
    _fails(cli("anatomize", src, *base, "--out", src), "would overwrite the input")
    assert src.read_bytes() == before
    rel, custody = tmp_path / "rel", tmp_path / "custody"
    assert cli("anatomize", src, *base, "--custody", custody, "--out", rel).returncode == 0
    qit = (rel / "qit.csv").read_bytes()
    _fails(cli("attack", "random-worlds", rel, "--out", rel / "qit.csv", "--force"), "input")
    assert (rel / "qit.csv").read_bytes() == qit
    post = rel / "post.csv"  # a new file inside the release folder is fine
    assert cli("attack", "random-worlds", rel, "--out", post).returncode == 0
    truth = (custody / "truth.csv").read_bytes()
    _fails(cli("evaluate", post, "--custody", custody, "--json", custody / "truth.csv",
               "--force"), "input")  # fmt: skip
    assert (custody / "truth.csv").read_bytes() == truth


def test_a_bug_is_one_line_and_debug_shows_its_traceback(run, monkeypatch):
    import privlab.data.datasets as datasets

    class Broken(dict):
        def values(self):
            raise RuntimeError("kaboom")

    monkeypatch.setattr(datasets, "DATASETS", Broken())
    r = run("datasets", "list")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        "error: unexpected RuntimeError: kaboom (a bug in privlab; run again with --debug for "
        "the traceback and report it)"
    ]
    r = run("--debug", "datasets", "list")
    assert r.returncode == 1 and "Traceback" in r.stderr and "kaboom" in r.stderr
    r = run("datasets", "list")  # --debug held for its own run only
    assert "Traceback" not in r.stderr


def test_an_option_repeated_with_its_value_or_a_flag_repeated_is_accepted(run, tmp_path):
    """Only an option given twice with *different* values is refused (issue 30.8): the same
    value twice, a repeated flag and the repeatable options keep working."""
    src = tmp_path / "in.csv"
    pd.DataFrame({"a": list("xyzxyzxyz"), "b": [1, 2, 3] * 3, "s": ["p", "q", "r"] * 3}).to_csv(
        src, index=False
    )
    r = run("anatomize", src, "--qi", "a,b", "--sensitive", "s", "--l", "3", "--l=3",
            "--republish", "--republish", "--out", tmp_path / "rel")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = run("dp", "histogram", src, "--columns", "a,s", "--epsilon", "1", "--domain", "a=x|y|z",
            "--domain", "s=p|q|r", "--domain", "a=x|y|z", "--out", tmp_path / "h.csv")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = run("dp", "histogram", src, "--columns", "a", "--epsilon", "1", "--domain", "a=x|y|z",
            "--epsilon", "2", "--out", tmp_path / "h2.csv")  # fmt: skip
    assert r.returncode == 2 and "--epsilon is given more than once ('1', then '2')" in r.stderr
    assert not (tmp_path / "h2.csv").exists()


def test_marginals_of_a_one_valued_sensitive_column(run, tmp_path):
    """A sensitive column holding one value: the lattice's per-class counts had no class
    boundaries and the command crashed (UnboundLocalError, exit 1; found by the issue-30
    fuzzing of accepted inputs)."""
    src = tmp_path / "in.csv"
    pd.DataFrame({"a": list("yxx"), "b": [1, 3, 1], "s": list("ppp"), "c": list("uuv")}).to_csv(
        src, index=False
    )
    r = run("marginals", src, "--qi", "a,c", "--sensitive", "s", "--k", "2", "--l", "1",
            "--out", tmp_path / "m")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "m" / "release.json").is_file()


def test_successful_commands_print_no_raw_library_warning(cli, tmp_path):
    """On success, stderr holds privlab's own lines only: no ``RuntimeWarning`` of numpy,
    ``UserWarning`` of scikit-learn or ``FutureWarning`` of pandas with its file and source
    line (issue 30.8).  Subprocesses: pytest records warnings in-process instead of printing
    them.  Small and degenerate tables (a constant column, one class in the test data) are
    where numpy divides by zero."""
    src = tmp_path / "in.csv"
    df = pd.DataFrame({"a": list("xyzxyzxyzxyz") * 3, "b": [1, 1, 1, 40] * 9,
                       "s": list("pqrp") * 9, "c": ["u"] * 30 + ["v"] * 6})  # fmt: skip
    df.to_csv(src, index=False)
    tiny = tmp_path / "tiny.csv"
    pd.DataFrame({"a": list("xy"), "b": [1, 1], "s": list("pp"), "c": list("uu")}).to_csv(
        tiny, index=False
    )
    t = tmp_path
    commands = [
        ("anatomize", src, "--qi", "a,b", "--sensitive", "s", "--l", "2", "--seed", "1",
         "--custody", t / "an.c", "--out", t / "an"),
        ("report", t / "an", "--custody", t / "an.c", "--out", t / "an.html"),
        ("pram", src, "--columns", "a,s", "--keep", "c", "--p", "0.3", "--republish",
         "--out", t / "p"),
        ("pram", "estimate", t / "p", "--columns", "a,s", "--method", "em"),
        ("pram", "pocket", t / "p", "--target", "c", "--features", "a"),
        ("dp", "nb", "train", src, "--target", "c", "--epsilon", "1", "--test", tiny,
         "--out", t / "nb.json"),
        ("dp", "tree", "train", src, "--target", "c", "--epsilon", "1", "--test", tiny,
         "--out", t / "tree.json"),
        ("dp", "histogram", src, "--columns", "a,b", "--epsilon", "1", "--domain-from-data",
         "--estimator", "eb", "--out", t / "h.csv"),
        ("marginals", src, "--qi", "a,c", "--sensitive", "s", "--k", "2", "--l", "1",
         "--republish", "--out", t / "m"),
    ]  # fmt: skip
    for args in commands:
        r = cli(*args)
        assert r.returncode == 0, (args, r.stderr)
        raw = [ln for ln in r.stderr.splitlines() if "Warning:" in ln]
        assert raw == [], (args, r.stderr)
