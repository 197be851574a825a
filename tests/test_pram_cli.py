"""The `privlab pram` commands: the issue's exact invocations, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from privlab.cli import main


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run the CLI in-process (one import for all calls): returncode, stdout, stderr."""

    def run(*args):
        monkeypatch.setattr(sys, "argv", ["privlab", *map(str, args)])
        code = 0
        try:
            main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        out, err = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=out, stderr=err)

    return run


def test_pram_entry_point_subprocess(tmp_path):
    """The issue's exact invocation through the installed entry point."""
    src = _input(tmp_path)
    r = subprocess.run(
        [sys.executable, "-m", "privlab.cli", "pram", str(src), "--columns", "a",
         "--scheme", "m-category", "--p", "0.2", "--seed", "1", "--custody",
         str(tmp_path / "ec"), "--out", str(tmp_path / "e")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "e" / "release.json").is_file()


def _input(tmp_path):
    rng = np.random.default_rng(0)
    src = tmp_path / "in.csv"
    pd.DataFrame(
        {
            "a": rng.choice(["x", "y", "z"], 600),
            "b": rng.choice(["u", "v"], 600),
            "c": rng.choice(["k", "l", "m", "n"], 600),
        }
    ).to_csv(src, index=False)
    return src


def test_pram_randomize_estimate_privacy(cli, tmp_path):
    src = _input(tmp_path)
    before = src.read_bytes()
    out = tmp_path / "rel"
    r = cli("pram", src, "--columns", "a,b", "--keep", "c", "--scheme", "m-category", "--p",
            "0.2", "--seed", "3", "--custody", tmp_path / "custody", "--out", out)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "read from the data" in r.stderr  # the published domains of a and b
    assert src.read_bytes() == before
    meta = json.loads((out / "release.json").read_text())
    assert meta["method"] == "pram"
    mats = {tuple(m["columns"]): np.array(m["matrix"]) for m in meta["matrices"]}
    assert set(mats) == {("a",), ("b",)}  # the kept column c needs no (identity) matrix
    np.testing.assert_allclose(mats[("a",)][0], [0.8, 0.1, 0.1])
    published = pd.read_csv(out / "randomized.csv")
    assert len(published) == 600 and list(published.columns) == ["a", "b", "c"]
    truth = pd.read_csv(tmp_path / "custody" / "truth.csv")
    assert list(truth.columns) == ["row", "a", "b"]

    r = cli("pram", "estimate", out, "--columns", "a,b", "--method", "em",
            "--out", tmp_path / "est.csv")  # fmt: skip
    assert r.returncode == 0, r.stderr
    est = pd.read_csv(tmp_path / "est.csv")
    assert list(est.columns) == ["a", "b", "observed", "estimate", "sd", "lower", "upper"]
    assert len(est) == 6 and (est["estimate"] >= 0).all()
    assert abs(est["estimate"].sum() - 600) < 1e-6

    r = cli("pram", "privacy", out)
    assert r.returncode == 0, r.stderr
    assert "gamma" in r.stdout and "k_p" in r.stdout
    r = cli("check", out)
    assert r.returncode == 0 and "gamma" in r.stdout and "uniques" in r.stdout

    # grouped, explicit subcommand, binary scheme: more releases of one input, refused
    # without the custodian's acknowledgement
    args = ["pram", "randomize", src, "--columns", "c", "--p", "0.3", "--group", "c=k|l",
            "--group", "c=m|n", "--out", tmp_path / "g"]  # fmt: skip
    _fails(cli(*args), "already has 1 release", "--republish")
    assert not (tmp_path / "g").exists()
    r = cli(*args, "--republish")
    assert r.returncode == 0, r.stderr
    r = cli("pram", src, "--columns", "b", "--scheme", "binary", "--p", "0.1", "--p2", "0.25",
            "--republish", "--out", tmp_path / "bin")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = cli("pram", "privacy", tmp_path / "bin")
    assert "7.5" in r.stdout


from conftest import fails as _fails  # noqa: E402


def test_pram_bad_input(cli, tmp_path):
    src = _input(tmp_path)
    base = ["--out", tmp_path / "o"]
    _fails(cli("pram", src, "--columns", "zz", "--p", "0.2", *base), "'zz'")
    _fails(cli("pram", src, "--columns", "a", "--p", "1.5", *base), "p = 1.5")
    _fails(cli("pram", src, "--columns", "a", "--scheme", "binary", "--p", "0.1", *base),
           "2-value domain")  # fmt: skip
    _fails(cli("pram", src, "--columns", "c", "--p", "0.1", "--group", "c:k", *base), "COLUMN=")
    r = cli("pram", src, "--columns", "b", "--scheme", "binary-symmetric", "--p", "0.5", *base)
    assert r.returncode == 0, r.stderr
    _fails(cli("pram", "estimate", tmp_path / "o", "--columns", "b"), "singular")
    _fails(cli("pram", "estimate", tmp_path / "none", "--columns", "a"), "not a release")
    _fails(cli("pram", src, "--columns", "a", "--p", "0.1", *base), "exists")
    _fails(cli("pram", src, "--columns", "a", "--keep", "a", "--p", "0.1", "--out",
               tmp_path / "k"), "both randomized and kept")  # fmt: skip


def test_pram_p_1_on_a_binary_column_is_a_note(cli, tmp_path):
    src = _input(tmp_path)
    r = cli("pram", src, "--columns", "b", "--p", "1", "--out", tmp_path / "r")
    assert r.returncode == 0, r.stderr
    assert "note: the matrix of b is (near-)deterministic: 2 of its 2 values" in r.stderr
    r = cli("pram", src, "--columns", "b", "--p", "0.3", "--republish", "--out", tmp_path / "r2")
    assert r.returncode == 0 and "deterministic" not in r.stderr


def test_pram_estimate_of_part_of_an_invariant_block_sums_the_block_out(cli, tmp_path):
    """`pram estimate --columns b` on an `--simultaneous --invariant` release estimates the
    (a, b) block whole and sums a out (privlab issue 31), and says so in a note."""
    from privlab.estimate.pram import reduces_exactly
    from privlab.estimate.pram_release import estimate_release
    from privlab.publish.randomization import PramRelease

    src = _input(tmp_path)
    out = tmp_path / "inv"
    r = cli("pram", src, "--columns", "a,b", "--simultaneous", "--invariant", "--p", "0.4",
            "--out", out)  # fmt: skip
    assert r.returncode == 0, r.stderr
    rel = PramRelease.load(out)
    assert not reduces_exactly(rel.blocks[0].matrix, [3, 2], [1])
    r = cli("pram", "estimate", out, "--columns", "b", "--out", tmp_path / "b.csv")
    assert r.returncode == 0, r.stderr
    assert "note: estimated with a " in r.stderr and "summed out" in r.stderr
    est = pd.read_csv(tmp_path / "b.csv")
    both = estimate_release(rel, ["a", "b"])
    np.testing.assert_allclose(est["estimate"], both.counts.reshape(3, 2).sum(axis=0), rtol=1e-9)
