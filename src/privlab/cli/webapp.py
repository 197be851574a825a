"""``privlab app``: the custodian's local web app."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from privlab.cli._app import app


@app.command("app")
def app_command(
    workdir: Annotated[
        Path,
        typer.Option(
            "--workdir",
            help="The app's working folder: uploads, releases, reports and custody go here "
            "(created if missing).",
        ),
    ] = Path("privlab-app"),
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0: a free one).")] = 0,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the address; do not open a browser.")
    ] = False,
    max_upload_mb: Annotated[
        float, typer.Option("--max-upload-mb", help="The largest file an upload may be.")
    ] = 500.0,
) -> None:
    """Start the local web app (127.0.0.1 only, with an access token in the address it
    prints) and open it in the browser: data, roles, method, run, report, all without
    commands."""
    from privlab._params import check_int
    from privlab.app.serve import serve
    from privlab.errors import ParameterError

    check_int("--port", port, low=0)
    if port > 65535:
        raise ParameterError(f"--port must be at most 65535, got {port}")
    if not max_upload_mb > 0:
        raise ParameterError(f"--max-upload-mb must be positive, got {max_upload_mb}")
    serve(workdir, port=port, open_browser=not no_browser, max_upload_mb=max_upload_mb)
