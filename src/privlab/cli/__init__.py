"""The ``privlab`` command line: :func:`main`, the entry point.

The commands live in :mod:`privlab.cli._main` and its modules (``publish``, ``attack``,
``report``, ...), which import typer and declare 30-odd commands: about 0.4 s of CPU before
anything runs.  ``privlab --help`` with its output piped or redirected (a script, ``| less``,
a CI log) prints the text typer renders there, from :mod:`privlab.cli._help` (written by
``tools/cli_help.py``; a test compares the two), and imports none of it.  Any other name of
this package (``app``, ...) is :mod:`privlab.cli._main`'s, imported on first use.
"""

from __future__ import annotations

import codecs
import os
import sys
from typing import Any

__all__ = ["app", "main"]

#: Environment variables that change what typer (through rich) prints for ``--help`` when
#: the output is not a terminal: with any of them set, typer renders it.
RENDER_ENV = (
    "COLUMNS", "LINES", "JUPYTER_COLUMNS", "JUPYTER_LINES", "NO_COLOR", "FORCE_COLOR",
    "PY_COLORS", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "TERMINAL_WIDTH", "GITHUB_ACTIONS",
    "TYPER_USE_RICH", "_TYPER_FORCE_DISABLE_TERMINAL",
)  # fmt: skip


def _cached_help(args: list[str]) -> str | None:
    """The piped ``--help`` text when ``args`` asks for it and typer would print exactly it:
    stdout not a terminal, in UTF-8, and none of :data:`RENDER_ENV` set."""
    out = sys.stdout
    if args != ["--help"] or out is None or any(v in os.environ for v in RENDER_ENV):
        return None
    try:
        if out.isatty() or codecs.lookup(out.encoding or "ascii").name != "utf-8":
            return None
    except (AttributeError, LookupError, ValueError):
        return None
    from privlab.cli._help import HELP

    return HELP


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the command line (:func:`privlab.cli._main.main`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    text = _cached_help(args)
    if text is not None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from privlab.cli._main import main as run

    run(args)


def __getattr__(name: str) -> Any:
    import importlib.util

    # a submodule's name is left to the import system (``from privlab.cli import publish``)
    if name.startswith("__") or importlib.util.find_spec(f"{__name__}.{name}") is not None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from privlab.cli import _main

    try:
        return getattr(_main, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
