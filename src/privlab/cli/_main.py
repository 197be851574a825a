"""The ``privlab`` command line (imported by :func:`privlab.cli.main` for every command
but a piped ``privlab --help``): thin wrappers, one library call per subcommand.

Errors from privlab (:class:`privlab.errors.PrivlabError`) and from the operating system
print as one line on stderr and exit with status 2; a :class:`~privlab.errors.PrivacyWarning`
prints as a ``note:`` line.  Outputs are written atomically and existing outputs are refused
unless ``--force`` is given.  Inputs are never modified.

The commands live in ``publish`` (anatomize, generalize, pram, alphabeta, check), ``attack``
(attack, evaluate), ``report`` (report, audit), ``dp`` (dp histogram, dp nb, dp tree) and
``misc`` (datasets, experiments, reproduce, demo); the options they share are declared once
in ``_app``.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

# isort: off
# each module registers its commands; this order is the order of `privlab --help`
from privlab.cli import publish  # noqa: F401
from privlab.cli import sdc  # noqa: F401
from privlab.cli import attack  # noqa: F401
from privlab.cli import dp  # noqa: F401
from privlab.cli import synth  # noqa: F401
from privlab.cli import report  # noqa: F401
from privlab.cli import misc  # noqa: F401
from privlab.cli import webapp  # noqa: F401

# isort: on
from privlab.cli._app import app, err_console, note, one_line
from privlab.errors import ConvergenceWarning, Interrupted, PrivacyWarning, PrivlabError

__all__ = ["app", "main"]


_DEBUG = {"on": bool(os.environ.get("PRIVLAB_DEBUG"))}


def _version(value: bool) -> None:
    if value:
        from privlab import __version__

        typer.echo(f"privlab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", help="Show the Python traceback of an unexpected error (for a report)."
        ),
    ] = False,
    registry: Annotated[
        Path | None,
        typer.Option(
            "--registry",
            help="The custodian's release registry and epsilon ledger (default: "
            "$PRIVLAB_REGISTRY, else ~/.local/share/privlab/registry): never publish it.",
        ),
    ] = None,
) -> None:
    """Privacy-preserving data publishing and mining: sanitize, attack, learn, reproduce."""
    from privlab._registry import use_registry

    _DEBUG["on"] = _DEBUG["on"] or debug
    use_registry(registry)
    if _DEBUG["on"]:  # the JVM of --engine spark writes its own log too
        from privlab.data.spark import show_jvm_log

        show_jvm_log(True)


#: PrivacyWarnings (``note:``) and ConvergenceWarnings (``warning:``) of the running command,
#: printed when it succeeds (a failed command prints its one error line only).
_NOTES: list[tuple[str, str]] = []


def _show_warning(message, category, filename, lineno, file=None, line=None):
    if issubclass(category, (PrivacyWarning, ConvergenceWarning)):
        kind = "warning" if issubclass(category, ConvergenceWarning) else "note"
        if (kind, str(message)) not in _NOTES:
            _NOTES.append((kind, str(message)))
    else:
        _default_show(message, category, filename, lineno, file, line)


_default_show = warnings.showwarning

#: Exit statuses: 0 success, 2 an expected failure (bad input, impossible parameters, an
#: unreadable or unwritable file), 1 an unexpected error (a bug: please report it with
#: --debug), 3 a verdict that reached ``report --fail-on``, 128 + N a signal N (130 for Ctrl-C).
EXIT_FAILURE = 2
EXIT_BUG = 1


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app with one error boundary.

    Every expected failure prints one line (``error: ...``) and exits with status 2; an
    unexpected exception prints one line and the hint to rerun with ``--debug`` (status 1);
    SIGINT, SIGTERM and SIGHUP remove the temporary outputs and say what was written.
    """
    from privlab._io import install_signal_handlers
    from privlab._registry import use_registry

    args = list(sys.argv[1:] if argv is None else argv)
    _DEBUG["on"] = bool(os.environ.get("PRIVLAB_DEBUG"))  # --debug sets it for this run
    use_registry(None)  # --registry sets it for this run
    if "privlab.data.spark" in sys.modules:  # --debug shows the JVM's log for this run
        sys.modules["privlab.data.spark"].show_jvm_log(False)
    warnings.showwarning = _show_warning
    warnings.simplefilter("always", PrivacyWarning)
    warnings.simplefilter("always", ConvergenceWarning)
    if threading.current_thread() is threading.main_thread():
        install_signal_handlers()
    _NOTES.clear()
    try:
        import typer.main  # typer's documented way to the click command of an app

        command = typer.main.get_command(app)
        _refuse_repeated_options(command, args)
        rv = command(args=args, prog_name="privlab", standalone_mode=False)
    except typer.Abort:  # EOF on a prompt
        _fail("aborted")
    except Interrupted as e:
        _interrupted(e.signum, e.committed)
    except PrivlabError as e:
        _fail(str(e))
    except OSError as e:  # missing file, permission, full disk, read-only directory
        _fail(_os_message(e))
    except MemoryError:
        _fail(
            "out of memory: the computation needs more memory than this machine has; use "
            "fewer rows, columns or values (or a machine with more memory)"
        )
    except Exception as e:
        kind = _parser_error_kind(e)
        if kind == "help":  # `privlab`, `privlab dp`: the help
            if e.format_message().strip():
                typer.echo(e.format_message())
            sys.exit(0)
        if kind == "usage":  # bad option values, missing options, unknown commands
            ctx = getattr(e, "ctx", None)
            where = ctx.command_path if ctx is not None else "privlab"
            _fail(f"{e.format_message()} (see '{where} --help')")
        if kind == "other":
            _fail(e.format_message())
        spark = _spark_failure(e)
        if spark is not None and spark[1]:  # Spark could not read the input
            _fail(spark[0])
        # a bug: one line, the traceback with --debug
        if _DEBUG["on"]:
            import traceback

            traceback.print_exc()
        detail = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
        if spark is not None:  # the JVM's message, not py4j's "An error occurred while ..."
            detail = spark[0]
        err_console.print(
            f"[red]error:[/] unexpected {type(e).__name__}"
            + escape(one_line(f": {detail}") if detail else "")
            + " (a bug in privlab; run again with --debug for the traceback and report it)",
            highlight=False,
            soft_wrap=True,
        )
        sys.exit(EXIT_BUG)
    if rv == 130:  # click turns a KeyboardInterrupt it sees into exit status 130
        _interrupted(2, ())
    for kind, message in _NOTES:
        if kind == "note":
            note(message)
        else:
            err_console.print(
                f"[red]warning:[/] {escape(one_line(message))}", highlight=False, soft_wrap=True
            )
    _NOTES.clear()
    sys.exit(rv if isinstance(rv, int) else 0)


def _refuse_repeated_options(cmd: Any, args: list[str]) -> None:
    """Refuse an option that takes one value given twice with different values (``--l 2 ...
    --l 3``): the parser would silently keep the last.  Repeatable options (``--domain``,
    ``--bounds``, ``--group``) are checked by their own parsers, flags may repeat, and an
    unknown option or command is left to the parser's own message.

    The command tree is walked as the parser walks it: each word that names a subcommand
    descends into it (a group with a ``default_command``, ``privlab pram INPUT``, descends
    into that one at its first other word, an option included); ``--`` ends the options.
    """
    given: dict[tuple[int, str], list[str]] = {}
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if word == "--":
            break
        commands = getattr(cmd, "commands", None)
        default = getattr(cmd, "default_command", None)
        if commands is not None and word not in commands and default in commands:
            if word not in ("--help", "-h"):  # as the group's parse_args: the default's word
                cmd = commands[default]
                commands = getattr(cmd, "commands", None)
        if not word.startswith("-") or word == "-":
            if commands is not None and word in commands:
                cmd = commands[word]
            continue
        name, eq, value = word.partition("=")
        param = next(
            (
                q
                for q in getattr(cmd, "params", ())
                if getattr(q, "param_type_name", "") == "option"
                and name in (*q.opts, *getattr(q, "secondary_opts", ()))
            ),
            None,
        )
        if param is None or param.is_flag or getattr(param, "count", False):
            continue
        if not eq:
            if i >= len(args):
                break
            value = args[i]
            i += 1
        if param.multiple:
            continue
        values = given.setdefault((id(cmd), param.opts[0]), [])
        values.append(value)
        if len(set(values)) > 1:
            raise PrivlabError(
                f"{param.opts[0]} is given more than once ({', then '.join(map(repr, values))}): "
                "give it once"
            )


def _parser_error_kind(e: BaseException) -> str | None:
    """What a command-line parser error is: ``"help"`` (no arguments: show the help),
    ``"usage"`` (a bad or missing option, an unknown command), ``"other"`` (another error the
    parser reports to the user), or None (not a parser error: a bug).

    Typer raises click's exception classes: those of the click package up to typer 0.2x, its
    own copy of them (``typer._click``) since.  privlab depends on typer only, so it
    recognizes them by their class names and modules, in whichever package they live, and
    imports neither click nor a private module of typer.
    """
    ours = [c.__name__ for c in type(e).__mro__ if c.__module__.split(".")[0] in ("click", "typer")]
    if "NoArgsIsHelpError" in ours:
        return "help"
    if "UsageError" in ours:
        return "usage"
    if "ClickException" in ours:
        return "other"
    return None


def _spark_failure(e: BaseException) -> tuple[str, bool] | None:
    """:func:`privlab.data.spark.spark_failure` for an exception Spark raised (imported only
    then: privlab's other commands never load the Spark module)."""
    if type(e).__module__.split(".")[0] not in ("py4j", "pyspark"):
        return None
    from privlab.data.spark import spark_failure

    return spark_failure(e)


def _os_message(e: OSError) -> str:
    what = e.strerror or str(e) or type(e).__name__
    if getattr(e, "filename", None):
        what += f": {e.filename}"
    return what


def _interrupted(signum: int, committed: tuple) -> None:
    import signal

    name = signal.Signals(signum).name if signum in signal.Signals._value2member_map_ else signum
    if committed:
        done = "; already written: " + ", ".join(map(str, committed))
    else:
        done = ": nothing was written"
    err_console.print(f"interrupted ({name}){escape(done)}", highlight=False, soft_wrap=True)
    sys.exit(128 + signum)


def _fail(message: str) -> None:
    err_console.print(
        f"[red]error:[/] {escape(one_line(message))}", highlight=False, soft_wrap=True
    )
    sys.exit(EXIT_FAILURE)
