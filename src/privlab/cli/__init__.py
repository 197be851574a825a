"""The ``privlab`` command line: thin wrappers, one library call per subcommand.

Errors from privlab (:class:`privlab.errors.PrivlabError`) and from the operating system
print as one line on stderr and exit with status 2; a :class:`~privlab.errors.PrivacyWarning`
prints as a ``note:`` line.  Outputs are written atomically and existing outputs are refused
unless ``--force`` is given.  Inputs are never modified.

The commands live in ``publish`` (anatomize, generalize, pram, check), ``attack`` (attack,
evaluate), ``dp`` (dp histogram, dp nb, dp tree) and ``misc`` (datasets, experiments,
reproduce, demo); the options they share are declared once in ``_app``.
"""

from __future__ import annotations

import sys
import warnings
from typing import Annotated

import typer
from rich.markup import escape

# isort: off
# each module registers its commands; this order is the order of `privlab --help`
from privlab.cli import publish  # noqa: F401
from privlab.cli import attack  # noqa: F401
from privlab.cli import dp  # noqa: F401
from privlab.cli import misc  # noqa: F401

# isort: on
from privlab.cli._app import app, err_console, note
from privlab.errors import PrivacyWarning, PrivlabError

__all__ = ["app", "main"]


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"privlab {version('privlab')}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Privacy-preserving data publishing and mining: sanitize, attack, learn, reproduce."""


def _show_warning(message, category, filename, lineno, file=None, line=None):
    if issubclass(category, PrivacyWarning):
        note(str(message))
    else:
        _default_show(message, category, filename, lineno, file, line)


_default_show = warnings.showwarning


def main() -> None:
    """Entry point: run the app; expected failures print one line and exit with status 2."""
    warnings.showwarning = _show_warning
    warnings.simplefilter("always", PrivacyWarning)
    try:
        app()
    except PrivlabError as e:
        _fail(str(e))
    except OSError as e:  # missing file, permission, full disk, read-only directory
        _fail(f"{e.strerror or e}" + (f": {e.filename}" if getattr(e, "filename", None) else ""))
    except KeyboardInterrupt:
        err_console.print("interrupted: nothing was written", highlight=False)
        sys.exit(130)


def _fail(message: str) -> None:
    err_console.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    sys.exit(2)
