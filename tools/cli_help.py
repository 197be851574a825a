"""Write ``src/privlab/cli/_help.py``: the text typer prints for ``privlab --help`` when its
output is piped, which :func:`privlab.cli.main` prints without importing the commands.

    PYTHONPATH=src .venv/bin/python tools/cli_help.py

``tests/test_cli_help.py`` fails when the file and typer's rendering differ (a command's
help changed without this being run again).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "privlab" / "cli" / "_help.py"


def rendered() -> str:
    """typer's ``privlab --help`` in a fresh interpreter, output piped, in UTF-8, none of
    :data:`privlab.cli.RENDER_ENV` set."""
    from privlab.cli import RENDER_ENV

    env = {k: v for k, v in os.environ.items() if k not in RENDER_ENV}
    env["PYTHONIOENCODING"] = "utf-8"
    out = subprocess.run(
        [sys.executable, "-c", "from privlab.cli._main import main; main(['--help'])"],
        capture_output=True, env=env, check=True,
    )  # fmt: skip
    return out.stdout.decode("utf-8")


def text() -> str:
    """The module: the help's lines, one string each (the file stays within ruff's line
    length), joined by newlines."""
    out = [
        '"""The text typer prints for ``privlab --help`` when its output is piped.  Written',
        "by ``tools/cli_help.py`` (a test checks that the two agree); printed by",
        ':func:`privlab.cli.main` without importing the commands."""',
        "",
        'HELP = "\\n".join(',
        "    (",
    ]
    out += [f"        {json.dumps(line, ensure_ascii=False)}," for line in rendered().split("\n")]
    out += ["    )", ")"]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    OUT.write_text(text(), encoding="utf-8")
    print(f"wrote {OUT}")
