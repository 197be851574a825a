"""Run the app on the loopback, on a free port, with a random access token."""

from __future__ import annotations

import secrets
import socket
import sys
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path


def serve(
    workdir: str | Path,
    *,
    port: int = 0,
    open_browser: bool = True,
    max_upload_mb: float = 500,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the app over ``workdir`` on 127.0.0.1 until interrupted (Ctrl-C).

    ``port`` 0 takes a free one.  ``on_ready`` is called with the address, token included,
    once the socket listens (default: print it); the browser opens it unless
    ``open_browser`` is false.
    """
    import uvicorn

    from privlab.app.server import create_app

    token = secrets.token_urlsafe(24)
    app = create_app(workdir, token=token, max_upload_mb=max_upload_mb)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))  # the loopback only: nobody else on the network
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/?token={token}"
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)

    def ready() -> None:
        while not server.started and not server.should_exit:
            threading.Event().wait(0.05)
        if server.started:
            (on_ready or _print)(url)
            if open_browser:
                webbrowser.open(url)

    threading.Thread(target=ready, daemon=True).start()
    server.run(sockets=[sock])


def _print(url: str) -> None:
    print(f"privlab app: {url}", flush=True)
    print("  (Ctrl-C stops it; the address holds the access token: do not share it)",
          file=sys.stderr, flush=True)  # fmt: skip
