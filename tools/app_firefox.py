"""Render each step of ``privlab app`` in Firefox ESR, at desktop and phone widths, by hand.

    apt-get install firefox-esr
    PYTHONPATH=src .venv/bin/python tools/app_firefox.py [OUT_DIR]

The app serves no script: every step is a server-rendered page with plain forms, so what a
browser can get wrong is the layout.  This starts ``privlab app`` in a scratch folder, drives
the workflow over HTTP as a browser would (Adult, its roles, Anatomy at l = 2 and 4), and has
Firefox draw each page (``--headless --screenshot``, 1280 and 400 px wide) into ``OUT_DIR``
(default ``firefox-shots/``), to look at beside the Chromium screenshots of
``tests/test_app_browser.py``.  Not a test (``tests/test_app_firefox.py`` is the one that
drives the app in Firefox).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

QI = "quasi-identifier"
ROLES = {"workclass": QI, "relationship": QI, "sex": QI, "salary": QI, "occupation": "sensitive"}
WIDTHS = (1280, 400)


def shoot(base: str, token: str, path: str, name: str, out: Path, home: str) -> None:
    for width in WIDTHS:
        png = out / f"firefox-{name}-{width}.png"
        subprocess.run(
            ["firefox-esr", "--headless", "--window-size", f"{width},1400", "--screenshot",
             str(png), f"{base}{path}?token={token}"],
            capture_output=True, timeout=120, env={"HOME": home, "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        print(f"{name} at {width} px: {png if png.exists() else 'NOT WRITTEN'}")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        app = subprocess.Popen(
            [sys.executable, "-m", "privlab.cli", "app", "--no-browser", "--workdir",
             str(Path(tmp) / "work")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            m = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", app.stdout.readline())
            if m is None:
                raise SystemExit("privlab app printed no address")
            base, token = m.groups()
            c = httpx.Client(base_url=base, follow_redirects=True, timeout=60)
            csrf = re.search(r'name="csrf" value="([^"]+)"', c.get(f"/?token={token}").text)[1]
            data = c.post("/data/bundled", data={"csrf": csrf, "dataset": "adult"}).url.path
            data_id = data.rsplit("/", 1)[1]
            roles = c.get(f"/data/{data_id}/roles").text
            labels = re.findall(r'<label for="role-(\d+)">([^<]+)</label>', roles)
            fields = {f"role-{i}": ROLES.get(name, "dropped") for i, name in labels}
            c.post(f"/data/{data_id}/roles", data={**fields, "csrf": csrf})
            form = {"method": "anatomy", "anatomy-l": "2, 4", "seed": "1", "csrf": csrf}
            run = c.post(f"/data/{data_id}/run", data=form).url.path
            pages = {"1-home": "/", "1-profile": data, "2-roles": f"/data/{data_id}/roles",
                     "3-method": f"/data/{data_id}/method", "4-run": run}  # fmt: skip
            for name, path in pages.items():
                shoot(base, token, path, name, out, tmp)
            while c.get(f"{run}/state").json()["status"] == "running":
                time.sleep(2)
            shoot(base, token, run, "5-report", out, tmp)
        finally:
            app.send_signal(signal.SIGINT)
            app.wait(30)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "firefox-shots"))
