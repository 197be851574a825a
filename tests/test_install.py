"""privlab as it is installed (issue 28): its version, its dependencies, a CLI that needs no
click, an import without fcntl (Windows).  The wheel itself is installed into a clean venv
and used by tools/wheel_smoke.sh (`make smoke`, run by CI)."""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import privlab

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_version_is_one_value_everywhere():
    assert re.fullmatch(r"\d+\.\d+\.\d+", privlab.__version__)
    assert md.version("privlab") == privlab.__version__
    assert f"## {privlab.__version__}" in (ROOT / "CHANGELOG.md").read_text()


def test_the_package_ships_its_typing_marker_and_licence():
    assert (Path(privlab.__file__).parent / "py.typed").is_file()
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "MIT" and "LICENSE" in meta["license-files"]
    assert "MIT License" in (ROOT / "LICENSE").read_text()


def _runtime_requirements() -> dict[str, str]:
    reqs = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    out = {}
    for r in reqs:
        name, spec = re.match(r"([A-Za-z0-9_.-]+)\s*([^;]*)", r).groups()
        out[name.lower()] = spec.strip()
    return out


def test_runtime_dependencies_have_lower_bounds_and_no_unexplained_upper_bounds():
    text = (ROOT / "pyproject.toml").read_text()
    for name, spec in _runtime_requirements().items():
        assert spec.startswith(">="), f"{name} has no lower bound: {spec!r}"
        # an upper bound must say why, on its own line (see pyproject.toml's comment)
        if "<" in spec:
            line = next(ln for ln in text.splitlines() if f'"{name}' in ln.lower())
            assert "#" in line, f"{name}'s upper bound has no comment"


def test_the_lock_holds_every_runtime_dependency_at_an_allowed_version():
    """requirements/test.lock pins each runtime dependency at a version its bound admits (so
    `make test` tests what `pip install privlab` may resolve), and no test-only package drags
    a core library below the newest: the lock is one resolution with nothing pinned older."""
    from packaging.specifiers import SpecifierSet

    lock = {}
    for line in (ROOT / "requirements" / "test.lock").read_text().splitlines():
        m = re.match(r"([A-Za-z0-9_.-]+)==([^\s;]+)\s*(?:;\s*(.*))?$", line)
        here = "python_full_version < '3.12'" if sys.version_info < (3, 12) else ">= '3.12'"
        if m and (m[3] is None or here in m[3]):
            lock[m[1].lower()] = m[2]
    for name, spec in _runtime_requirements().items():
        if name == "filelock" and name not in lock:  # Windows only
            continue
        assert name in lock, f"{name} is not in the lock"
        assert lock[name] in SpecifierSet(spec), (name, lock[name], spec)
    assert "pycanon" not in lock  # it pinned numpy 2.0.2 and pandas 2.3.3 for the whole suite


def test_the_test_environment_is_the_lock():
    """What runs these tests is what the lock says (make test syncs it exactly)."""
    lock = {}
    for line in (ROOT / "requirements" / "test.lock").read_text().splitlines():
        m = re.match(r"([A-Za-z0-9_.-]+)==([^\s;]+)", line)
        if m:
            lock.setdefault(m[1].lower(), set()).add(m[2])
    if md.version("numpy") not in lock["numpy"]:
        pytest.skip("not the locked environment (make test-lowest, or a venv of your own)")
    for name in ("numpy", "pandas", "scipy", "pyarrow", "scikit-learn", "typer", "numba"):
        assert md.version(name) in lock[name], (name, md.version(name), lock[name])


_NO_CLICK = """
import sys
sys.modules["click"] = None  # `import click` now fails, as where typer installs no click
from privlab.cli import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            [
                "anatomize",
                "adult",
                "--qi",
                "sex",
                "--sensitive",
                "occupation",
                "--l",
                "abc",
                "--out",
                "o",
            ],
            "'--l'",
        ),
        (["pram", "adult", "--columns", "race"], "Missing option"),
        (["no-such-command"], "no-such-command"),
        (["check", "--no-such-option"], "--no-such-option"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2_without_click(tmp_path, args, needle):
    """Typer 0.29 vendors its own click and installs none: a usage error must still take the
    one-line path (exit 2), never the 'unexpected ... (a bug in privlab)' one."""
    if importlib.util.find_spec("typer._click") is None:
        pytest.skip("this typer raises click's own exceptions: it needs click installed")
    r = _python(_NO_CLICK, *args, cwd=tmp_path)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "bug" not in lines[0] and needle in lines[0], lines[0]
    assert r.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_help_and_version_without_click(tmp_path):
    if importlib.util.find_spec("typer._click") is None:
        pytest.skip("this typer raises click's own exceptions: it needs click installed")
    r = _python(_NO_CLICK, "--version", cwd=tmp_path)
    assert (r.returncode, r.stdout.strip()) == (0, f"privlab {privlab.__version__}"), r.stderr
    r = _python(_NO_CLICK, cwd=tmp_path)  # no command: the help, exit 0
    assert r.returncode == 0 and "anatomize" in r.stdout, r.stderr
    r = _python(_NO_CLICK, "dp", cwd=tmp_path)
    assert r.returncode == 0 and "histogram" in r.stdout, r.stderr


def test_parser_errors_are_recognized_by_class_whichever_package_holds_them():
    from privlab.cli import _parser_error_kind

    def fake(module: str, *names: str) -> BaseException:
        base = Exception
        for name in reversed(names):  # the last name is the most basic class
            base = type(name, (base,), {"__module__": module})
        return base("x")

    for module in ("typer._click.exceptions", "click.exceptions"):
        assert _parser_error_kind(fake(module, "NoArgsIsHelpError", "UsageError")) == "help"
        assert _parser_error_kind(fake(module, "MissingParameter", "BadParameter",
                                       "UsageError", "ClickException")) == "usage"  # fmt: skip
        assert _parser_error_kind(fake(module, "FileError", "ClickException")) == "other"
    # a privlab or library exception of the same name is a bug, not a usage error
    assert _parser_error_kind(fake("privlab.errors", "UsageError")) is None
    assert _parser_error_kind(ValueError("x")) is None


_NO_FCNTL = """
import sys
sys.modules["fcntl"] = None  # as on Windows
import privlab._io as io
import privlab.cli  # noqa: F401
from pathlib import Path
assert io.fcntl is None
out = Path(sys.argv[1])
with io.atomic_dir(out / "rel") as d:
    (d / "a.txt").write_text("x")
io.write_json(out / "m.json", {"a": 1})
assert sorted(p.name for p in out.iterdir()) == ["m.json", "rel"]  # no lock file left
"""


def test_privlab_imports_and_writes_without_fcntl(tmp_path):
    pytest.importorskip("filelock")  # the commit lock where fcntl is missing
    r = _python(_NO_FCNTL, str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "rel" / "a.txt").read_text() == "x"
    assert (tmp_path / "m.json").is_file()
