"""The custodian's local web app: Starlette, server-rendered Jinja pages, no script.

Why this shape (``docs/architecture.md``): the pages are forms and tables, so plain HTML
forms rendered on the server do all of it; a page that waits on a run refreshes itself
(``<meta http-equiv=refresh>``), so the app needs no JavaScript, no CDN and no build step,
works offline, and keyboard use is the browser's own.  Starlette (with uvicorn) is small and
well kept, and its templates are the Jinja2 the report already uses (autoescaped: every value
from the data is shown as text).

Security: the server binds 127.0.0.1 only; every request needs the access token (the URL
``privlab app`` prints sets it as a ``SameSite=Strict`` cookie); every form that changes
state carries a CSRF token; the Host header must be the loopback (no DNS rebinding); pages
forbid scripts and framing by anything but themselves (Content-Security-Policy); files are
reached only through ids the app handed out (:mod:`privlab.app.workspace`).
"""

from __future__ import annotations

import hmac
import math
import random
import re
import secrets
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from privlab.app.workspace import CONTROLS, METHODS, ROLES, Workspace, small_text, weights_of
from privlab.errors import PrivlabError
from privlab.report.config import FLOAT_GRID

HERE = Path(__file__).parent
COOKIE = "privlab_app_token"
_CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-src 'self'; frame-ancestors 'none'; base-uri 'none'")  # fmt: skip
#: The report is one self-contained file (inline style, inline images); it may not reach out.
_REPORT_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
               "frame-ancestors 'self'; base-uri 'none'; form-action 'none'")  # fmt: skip

STEPS = ("Data", "Roles", "Method", "Run", "Report")


class _Guard:
    """Token, security headers (pure ASGI: it wraps every response, streamed ones too)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token
        self.workspace: Workspace | None = None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        given = request.query_params.get("token")
        if given is not None and hmac.compare_digest(given, self.token):
            url = request.url.remove_query_params("token")
            resp = RedirectResponse(str(url.path) + (f"?{url.query}" if url.query else ""),
                                    status_code=303)  # fmt: skip
            resp.set_cookie(COOKIE, self.token, httponly=True, samesite="strict", path="/")
            await _headers(resp)(scope, receive, send)
            return
        cookie = request.cookies.get(COOKIE, "")
        if not hmac.compare_digest(cookie.encode(), self.token.encode()):
            resp = PlainTextResponse(
                "403: this page needs the access token. Open the address that `privlab app` "
                "printed (it ends with ?token=...).",
                status_code=403,
            )
            await _headers(resp)(scope, receive, send)
            return
        report = "/report" in scope["path"]

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.lower() != b"content-security-policy"]  # fmt: skip
                headers += _security_headers(_REPORT_CSP if report else _CSP)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _security_headers(csp: str) -> list[tuple[bytes, bytes]]:
    return [(b"content-security-policy", csp.encode()), (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"), (b"cache-control", b"no-store")]  # fmt: skip


def _headers(resp: Response) -> Response:
    for k, v in _security_headers(_CSP):
        resp.headers[k.decode()] = v.decode()
    return resp


def create_app(workdir: str | Path, *, token: str | None = None,
               max_upload_mb: float = 500) -> _Guard:  # fmt: skip
    """The app (an ASGI callable) over the working folder ``workdir``; ``token`` (default:
    a random one) is the access token, ``app.token``; ``app.workspace`` the folder's
    :class:`~privlab.app.workspace.Workspace`."""
    token = token or secrets.token_urlsafe(24)
    csrf = secrets.token_urlsafe(24)
    ws = Workspace(Path(workdir), max_upload_bytes=int(max_upload_mb * 2**20))
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.autoescape = True  # every template, whatever its suffix: data are text
    templates.env.globals.update(
        csrf=csrf, steps=STEPS, roles=ROLES, methods=METHODS, decimals=FLOAT_GRID
    )

    def page(request: Request, name: str, status: int = 200, **ctx: Any) -> Response:
        return templates.TemplateResponse(request, name, ctx, status_code=status)

    def problem(request: Request, message: str, status: int = 400, **ctx: Any) -> Response:
        return page(request, "error.html.j2", status=status, message=message, **ctx)

    def chosen_file(f: Any, field: str, what: str) -> Any:
        """The file a form's ``field`` sent; none chosen is one line saying what to choose."""
        file = f.get(field)
        if file is None or not getattr(file, "filename", None):
            raise PrivlabError(f"choose {what}")
        return file

    async def form(request: Request) -> Any:
        f = await request.form()
        if not hmac.compare_digest(str(f.get("csrf", "")), csrf):
            raise PermissionError
        return f

    async def home(request: Request) -> Response:
        from privlab.data.datasets import DATASETS

        return page(request, "data.html.j2", step=0, data=ws.all_data(), runs=ws.all_runs(),
                    datasets=DATASETS, limit_mb=ws.max_upload_bytes / 2**20)  # fmt: skip

    async def bundled(request: Request) -> Response:
        f = await form(request)
        entry = await run_in_threadpool(ws.add_bundled, str(f.get("dataset", "")))
        return RedirectResponse(f"/data/{entry['id']}", status_code=303)

    async def uploaded(request: Request, what: str) -> tuple[Any, Any]:
        """The form and the chunks of the file it sent (refused past the upload limit)."""
        length = int(request.headers.get("content-length") or 0)
        if length > ws.max_upload_bytes + 2**16:
            raise PrivlabError(
                f"the file is larger than the upload limit of {ws.max_upload_bytes / 2**20:.0f} "
                "MB (start the app with --max-upload-mb to raise it)"
            )
        f = await form(request)
        file = chosen_file(f, "file", what)

        def chunks():
            while block := file.file.read(1 << 20):
                yield block

        return file, chunks()

    async def upload(request: Request) -> Response:
        file, chunks = await uploaded(request, "a CSV or Parquet file to upload")
        entry = await run_in_threadpool(ws.add_upload, file.filename, chunks)
        return RedirectResponse(f"/data/{entry['id']}", status_code=303)

    async def control(request: Request) -> Response:
        entry = ws.data(request.path_params["id"])
        file, chunks = await uploaded(request, "a control set (CSV or Parquet) to upload")
        await run_in_threadpool(ws.add_control, entry["id"], file.filename, chunks)
        return RedirectResponse(f"/data/{entry['id']}/method#control", status_code=303)

    async def open_settings(request: Request) -> Response:
        f = await form(request)
        file = chosen_file(f, "settings", "a settings file (an audit TOML) to open")
        text = small_text(await file.read(2**20 + 1), file.filename, 1, "a settings file")
        entry, chosen = await run_in_threadpool(ws.open_settings, file.filename, text)
        query = "&".join(f"{k}={v}" for k, v in chosen.items()).replace(" ", "")
        return RedirectResponse(f"/data/{entry['id']}/method?{query}", status_code=303)

    async def data_page(request: Request) -> Response:
        entry = ws.data(request.path_params["id"])
        return page(request, "profile.html.j2", step=0, entry=entry)

    async def roles_page(request: Request) -> Response:
        entry = ws.data(request.path_params["id"])
        if request.method == "POST":
            f = await form(request)
            roles = {c["name"]: str(f.get(f"role-{i}", "")) for i, c in
                     enumerate(entry["columns"])}  # fmt: skip
            try:
                await run_in_threadpool(ws.set_roles, entry["id"], roles)
            except PrivlabError as e:
                entry["roles"] = roles
                return page(request, "roles.html.j2", status=400, step=1, entry=entry,
                            message=str(e))  # fmt: skip
            return RedirectResponse(f"/data/{entry['id']}/method", status_code=303)
        return page(request, "roles.html.j2", step=1, entry=entry, message=None)

    async def method_page(request: Request) -> Response:
        entry = ws.data(request.path_params["id"])
        if not entry.get("roles_saved"):
            return RedirectResponse(f"/data/{entry['id']}/roles", status_code=303)
        roles, q = entry["roles"], request.query_params
        chosen = q.get("method") if q.get("method") in METHODS else None
        seed = q.get("seed", "")
        return page(request, "method.html.j2", step=2, entry=entry, chosen=chosen,
                    values=q.get("values", "") if chosen else "",
                    also={k: q[k] for k in ("l", "t") if k in q} if chosen else {},
                    seed=int(seed) if seed.isdigit() else random.SystemRandom().randrange(2**31),
                    qi=[c for c, r in roles.items() if r == "quasi-identifier"],
                    sensitive=next(c for c, r in roles.items() if r == "sensitive"),
                    kept=[c for c, r in roles.items() if r == "kept"],
                    weights=weights_of(entry),
                    bundled_control=CONTROLS.get(entry["spec"]) if entry["source"] == "bundled"
                    else None)  # fmt: skip

    async def start(request: Request) -> Response:
        entry = ws.data(request.path_params["id"])
        f = await form(request)
        method = str(f.get("method", ""))
        spec = METHODS.get(method)
        if spec is None:
            raise PrivlabError(f"choose a method ({', '.join(METHODS)})")
        given = str(f.get(f"{method}-{spec['param']}", ""))
        parse = _number if method in FLOAT_GRID else _integer
        values = [parse(v, spec["param"]) for v in re.split(r"[,\s]+", given.strip()) if v]
        seed = _integer(f.get("seed"), "seed")
        also = {}  # the optional models every setting must also meet (empty: none)
        for name in spec.get("also", {}):
            raw = str(f.get(f"{method}-{name}", "")).strip()
            if raw:
                also[name] = _integer(raw, name) if name == "l" else _number(raw, name)
        run = await run_in_threadpool(ws.start_run, entry["id"], method, values, seed, also)
        return RedirectResponse(f"/runs/{run['id']}", status_code=303)

    async def hierarchy(request: Request) -> Response:
        entry = ws.data(request.path_params["id"])
        f = await form(request)
        file = chosen_file(f, "file", "a hierarchy file (ARX's CSV format) to upload")
        raw = await file.read(2**22 + 1)
        await run_in_threadpool(ws.add_hierarchy, entry["id"], str(f.get("column", "")),
                                file.filename, raw)  # fmt: skip
        return RedirectResponse(f"/data/{entry['id']}/method#hierarchies", status_code=303)

    async def build_hierarchy(request: Request) -> Response:
        entry = ws.data(request.path_params["id"])
        f = await form(request)
        await run_in_threadpool(ws.build_hierarchy, entry["id"], str(f.get("column", "")),
                                str(f.get("spec", "")))  # fmt: skip
        return RedirectResponse(f"/data/{entry['id']}/method#hierarchies", status_code=303)

    async def declare_domain(request: Request) -> Response:
        entry = ws.data(request.path_params["id"])
        f = await form(request)
        await run_in_threadpool(ws.declare_domain, entry["id"], str(f.get("column", "")),
                                str(f.get("values", "")))  # fmt: skip
        return RedirectResponse(f"/data/{entry['id']}/method#domains", status_code=303)

    async def remove_domain(request: Request) -> Response:
        entry = ws.data(request.path_params["id"])
        await form(request)
        ws.remove_domain(entry["id"], request.path_params["column"])
        return RedirectResponse(f"/data/{entry['id']}/method#domains", status_code=303)

    async def remove_hierarchy(request: Request) -> Response:
        entry = ws.data(request.path_params["id"])
        await form(request)
        ws.remove_hierarchy(entry["id"], request.path_params["column"])
        return RedirectResponse(f"/data/{entry['id']}/method#hierarchies", status_code=303)

    async def run_page(request: Request) -> Response:
        run = ws.run(request.path_params["id"])
        share = (METHODS.get(run["method"]) or {}).get("share")
        return page(request, "run.html.j2", step=3 if run["status"] == "running" else 4,
                    run=run, custody=str(ws.run_dir(run["id"]) / "custody"),
                    method_share=share)  # fmt: skip

    async def run_state(request: Request) -> Response:
        run = ws.run(request.path_params["id"])
        keys = ("status", "settings_done", "settings", "error", "rows",
                "recommended", "recommendation")  # fmt: skip
        return JSONResponse({k: run.get(k) for k in keys})

    async def cancel(request: Request) -> Response:
        await form(request)
        ws.cancel(request.path_params["id"])
        return RedirectResponse(f"/runs/{request.path_params['id']}", status_code=303)

    def report_file(run_id: str, value: str | None) -> Path:
        """The comparison of a run (``value`` None), else a setting's report."""
        folder = ws.run_dir(run_id)
        if value is None:
            path = folder / "out" / "report.html"
        else:
            path = folder / ws.setting(run_id, value)["report"]
        if not path.is_file():
            raise LookupError(run_id)
        return path

    async def report(request: Request) -> Response:
        path = report_file(request.path_params["id"], request.path_params.get("value"))
        return FileResponse(path, media_type="text/html")

    async def download(request: Request) -> Response:
        run_id, what = request.path_params["id"], request.path_params["file"]
        # a setting's value as the run lists it (an epsilon: 0.5, 1e-05), matched against
        # the run's own settings (Workspace.setting), never used as a path
        m = re.fullmatch(r"(release|report)-([0-9][0-9.e+-]{0,23})\.(zip|html|json)", what)
        if m and (m[1], m[3]) == ("release", "zip"):
            path = await run_in_threadpool(ws.release_zip, run_id, m[2])
            return FileResponse(path, filename=f"release-{run_id}-{m[2]}.zip")
        if m and m[1] == "report" and m[3] in ("html", "json"):
            path = report_file(run_id, m[2]).with_suffix(f".{m[3]}")
        elif what in ("report.html", "report.json"):
            path = report_file(run_id, None).with_suffix(Path(what).suffix)
        elif what == "audit.toml":
            path = ws.run_dir(run_id) / "audit.toml"
        else:
            raise LookupError(what)
        if not path.is_file():
            raise LookupError(what)
        kinds = {".html": "text/html", ".json": "application/json", ".toml": "application/toml"}
        return FileResponse(path, media_type=kinds[path.suffix],
                            filename=f"{Path(what).stem}-{run_id}{path.suffix}",
                            content_disposition_type="attachment")  # fmt: skip

    async def on_lookup(request: Request, exc: Exception) -> Response:
        return problem(request, "Not found: nothing the app made has this address.", 404)

    async def on_privlab(request: Request, exc: Exception) -> Response:
        return problem(request, str(exc), 400)

    async def on_forbidden(request: Request, exc: Exception) -> Response:
        return problem(
            request,
            "This form is out of date or was not sent by this app (its CSRF token is missing "
            "or wrong): go back and send it again.",
            403,
        )

    async def on_crash(request: Request, exc: Exception) -> Response:
        import traceback

        traceback.print_exception(exc)  # in the terminal that started the app
        return problem(
            request,
            f"privlab app met an unexpected {type(exc).__name__}: the page could not be "
            "shown (the details are in the terminal that started the app; please report it). "
            "Your data and runs are unchanged.",
            500,
        )

    routes = [
        Route("/", home),
        Route("/data/bundled", bundled, methods=["POST"]),
        Route("/data/upload", upload, methods=["POST"]),
        Route("/data/settings", open_settings, methods=["POST"]),
        Route("/data/{id}", data_page),
        Route("/data/{id}/roles", roles_page, methods=["GET", "POST"]),
        Route("/data/{id}/method", method_page),
        Route("/data/{id}/run", start, methods=["POST"]),
        Route("/data/{id}/control", control, methods=["POST"]),
        Route("/data/{id}/hierarchies", hierarchy, methods=["POST"]),
        Route("/data/{id}/hierarchies/build", build_hierarchy, methods=["POST"]),
        Route("/data/{id}/hierarchies/{column}/remove", remove_hierarchy, methods=["POST"]),
        Route("/data/{id}/domains", declare_domain, methods=["POST"]),
        Route("/data/{id}/domains/{column}/remove", remove_domain, methods=["POST"]),
        Route("/runs/{id}", run_page),
        Route("/runs/{id}/state", run_state),
        Route("/runs/{id}/cancel", cancel, methods=["POST"]),
        Route("/runs/{id}/report", report),
        Route("/runs/{id}/report/{value}", report),
        Route("/runs/{id}/files/{file}", download),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware,
                               allowed_hosts=["127.0.0.1", "localhost"])],
        exception_handlers={LookupError: on_lookup, PrivlabError: on_privlab,
                            PermissionError: on_forbidden, Exception: on_crash},
    )  # fmt: skip
    guard = _Guard(app, token)
    guard.workspace = ws
    return guard


def _number(value: Any, name: str) -> float:
    """A positive finite number typed in a form (``0.5``, ``2``)."""
    try:
        x = float(str(value).strip())
    except (TypeError, ValueError):
        raise PrivlabError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise PrivlabError(f"{name} must be a number above 0, got {value!r}")
    return x


def _integer(value: Any, name: str) -> int:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        raise PrivlabError(f"{name} must be a whole number, got {value!r}") from None
