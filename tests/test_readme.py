"""Every command of the README's tour runs as written, in order, on a fresh directory; so does
its library example.  The generalize example publishes nothing that re-identifies."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

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


@pytest.fixture(scope="module")
def tour(tmp_path_factory) -> Path:
    """Run the tour once, in order (later commands read what earlier ones wrote)."""
    tmp = tmp_path_factory.mktemp("readme")
    privlab = str(Path(sys.executable).with_name("privlab"))
    for cmd in _commands():
        argv = [privlab, *cmd[1:]]
        r = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stderr}"
        assert "Traceback" not in r.stderr, " ".join(cmd)
    return tmp


def test_every_tour_command_runs(tour):
    for name in ("rel-l3", "rel-l2", "gen-k10", "gen-m", "pram-rel", "post.csv", "m.json"):
        assert (tour / name).exists(), name
    for custody in ("rel-l3.custody", "rel-l2.custody", "pram.custody"):
        assert (tour / custody / "custody.json").is_file()
        assert not (tour / custody.removesuffix(".custody") / "truth.csv").exists()


def test_the_generalize_example_publishes_nothing_unsafe(tour):
    from privlab.publish import load_release

    rel = load_release(tour / "gen-k10")
    df = pd.read_csv(tour / "gen-k10" / "table.csv")
    qi = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex",
          "native-country"]  # fmt: skip
    assert list(df.columns) == [*qi, "salary"]
    p = rel.privacy()
    assert p.k >= 10 and p.flagged == () and p.warnings() == []


def test_the_library_example_runs(tmp_path):
    (code,) = _blocks("python")
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "rel-l4" / "release.json").is_file()
    assert (tmp_path / "rel-l4.custody" / "truth.csv").is_file()
