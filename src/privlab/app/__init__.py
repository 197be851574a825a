"""The custodian's local web app (``privlab app``): from a CSV to a release and its report.

:func:`create_app` builds the app over a working folder; :func:`serve` runs it on the
loopback with an access token.  The pages drive the command line's own commands
(:mod:`privlab.app.workspace`), so a release made in the app is the release ``privlab``
writes for the same settings, and the app shows those commands.
"""

from __future__ import annotations

from privlab.app.serve import serve
from privlab.app.server import create_app

__all__ = ["create_app", "serve"]
