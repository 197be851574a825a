"""``privlab --help`` piped prints typer's text from ``cli/_help.py`` without importing the
commands (issue 38, item 7); anywhere typer would print something else, typer prints it."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _env(**extra: str) -> dict[str, str]:
    from privlab.cli import RENDER_ENV

    env = {k: v for k, v in os.environ.items() if k not in RENDER_ENV}
    env.update(PYTHONIOENCODING="utf-8", **extra)
    return env


def _run(code: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, env=_env(**extra),
                          check=True)  # fmt: skip


def test_the_written_help_is_what_typer_prints_piped():
    """``cli/_help.py`` is typer's rendering today (run ``tools/cli_help.py`` after changing
    a command's help), and ``main(['--help'])`` piped prints it byte for byte while
    importing neither typer nor a command module."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import cli_help
    finally:
        sys.path.remove(str(ROOT / "tools"))
    typer_text = cli_help.rendered()
    from privlab.cli._help import HELP

    assert HELP == typer_text, "cli/_help.py is stale: run tools/cli_help.py"
    assert "Usage: privlab [OPTIONS] COMMAND" in HELP and "anatomize" in HELP
    out = _run(
        "import sys; from privlab.cli import main; main(['--help']); "
        "sys.stderr.write(repr(sorted(m for m in sys.modules "
        "if m in ('typer', 'click', 'rich', 'numpy') or m.startswith('privlab.cli.'))))"
    )
    assert out.stdout.decode("utf-8") == typer_text
    assert out.stderr.decode() == "['privlab.cli._help']"


@pytest.mark.parametrize("env", [{"COLUMNS": "120"}, {"FORCE_COLOR": "1"}])
def test_a_setting_that_changes_typers_output_makes_typer_print_it(env):
    """With a variable that changes rich's rendering, the help comes from typer: 120
    columns give lines of 120 characters, FORCE_COLOR escape codes."""
    code = ("import sys\nfrom privlab.cli import main\ntry:\n    main(['--help'])\n"
            "finally:\n    sys.stderr.write(str('typer' in sys.modules))")  # fmt: skip
    out = _run(code, **env)
    text = out.stdout.decode("utf-8")
    assert out.stderr.decode() == "True"
    if "COLUMNS" in env:
        assert max(len(line) for line in text.splitlines()) == 120
    else:
        assert "\x1b[" in text


def test_a_terminal_or_another_command_is_not_served_the_written_help(monkeypatch):
    """Only ``--help`` alone, to a UTF-8 stream that is not a terminal, is served from the
    file; a terminal, another encoding or other arguments go to typer."""
    from privlab.cli import RENDER_ENV, _cached_help

    for name in RENDER_ENV:
        monkeypatch.delenv(name, raising=False)

    class Tty(io.StringIO):
        encoding = "utf-8"

        def isatty(self) -> bool:
            return True

    class Latin(io.StringIO):
        encoding = "latin-1"

    class Piped(io.StringIO):
        encoding = "UTF8"

    monkeypatch.setattr(sys, "stdout", Piped())
    assert _cached_help(["--help"]) is not None
    assert _cached_help(["pram", "--help"]) is None
    assert _cached_help(["--help", "--debug"]) is None
    assert _cached_help([]) is None
    for stream in (Tty(), Latin()):
        monkeypatch.setattr(sys, "stdout", stream)
        assert _cached_help(["--help"]) is None
    monkeypatch.setattr(sys, "stdout", Piped())
    monkeypatch.setenv("NO_COLOR", "1")
    assert _cached_help(["--help"]) is None


def test_the_packages_other_names_come_from_the_command_line_module():
    import privlab.cli as cli
    from privlab.cli import _main

    assert cli.app is _main.app and cli.EXIT_FAILURE == 2
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        cli.nothing_here  # noqa: B018
