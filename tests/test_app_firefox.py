"""privlab app in Firefox (Debian's firefox-esr, headless, through Marionette: see
``firefox_driver``): the server started and stopped by the test, an uploaded CSV taken from
the data screen to a compared pair of settings and a downloaded release, as a person does it
with a mouse and keyboard, at desktop and phone widths.  The Chromium tests
(``test_app_browser``) cover the rest of the workflow; this one shows the same pages work in
the other engine a custodian may use."""

from __future__ import annotations

import io
import json
import tomllib
import zipfile

import pytest

from firefox_driver import Firefox, firefox_or_skip
from test_app import XSS, app_server, people_frame, replay_audit

pytestmark = pytest.mark.system

QI = "quasi-identifier"
#: the widest element's right edge against the window's width
OVERFLOW = "return [document.documentElement.scrollWidth, window.innerWidth]"
#: each role select's column, by its label
LABELS = (
    "return [...document.querySelectorAll('label[for^=role-]')]"
    ".map(l => [l.htmlFor, l.textContent])"
)


def test_an_uploaded_csv_from_the_data_screen_to_a_release_in_firefox(tmp_path, cli):
    firefox_or_skip()
    work = tmp_path / "work"
    csv = tmp_path / "people.csv"
    people_frame().to_csv(csv, index=False)
    with app_server(work) as (base, token, _), Firefox(1100, 900) as ff:
        ff.go(base + "/")
        assert "access token" in ff.text("body")  # no token: refused
        ff.go(f"{base}/?token={token}")
        assert ff.url == base + "/"  # the token is not left in the address bar
        assert ff.text("h1") == "1. Data"
        # a bad upload: the command line's one line, in the page, nothing kept
        notes = tmp_path / "notes.txt"
        notes.write_text("not a table\n")
        ff.type("#file", str(notes))
        ff.button("Upload and profile")
        assert "notes.txt: not a CSV or Parquet file" in ff.text("main")
        assert not list((work / "data").glob("*/input.*"))
        ff.go(base + "/")
        ff.type("#file", str(csv))
        ff.button("Upload and profile")
        assert ff.text("h1") == "1. Data: people.csv"
        # the cell holding markup is shown as its text: no image element, no dialog
        shown = ff.js("return [...document.querySelectorAll('main td')].map(t => t.textContent)")
        assert any(XSS in t for t in shown), shown
        assert ff.count("main img") == 0 and ff.alert() is None
        ff.button("Next: roles")
        assert ff.text("h1") == "2. Roles: people.csv"
        roles = {"age": QI, "sex": QI, "zip": QI, "disease": "sensitive"}
        for for_id, name in ff.js(LABELS):
            ff.choose(f"#{for_id}", roles.get(name, "dropped"))
        # by keyboard: the submit button focused, then Enter
        save = ff.find(xpath="//button[normalize-space()='Save the roles and choose a method']")
        ff.js("arguments[0].focus()", {"element-6066-11e4-a52e-4f735466cecf": save})
        ff.cmd("WebDriver:ElementSendKeys", {"id": save, "text": "\ue007"})
        ff.wait_for("#method-anatomy", timeout=30)
        assert ff.text("h1") == "3. Method and settings: people.csv"
        assert ff.js("return document.getElementById('method-anatomy').checked")
        ff.type("#anatomy-l", "2, 4")
        ff.type("#seed", "3")
        ff.button("Run")
        ff.wait_for("#verdict-h, p.alert")  # the run page refreshes itself until done
        assert ff.count("p.alert") == 0, ff.text("p.alert")
        assert ff.text("#verdict-h").startswith("Recommended:")
        settings = ff.js(
            "return [...document.querySelectorAll('tbody th[scope=row]')].map(t => t.textContent)"
        )
        assert [s.removesuffix(" (recommended)") for s in settings] == ["l = 2", "l = 4"]
        levels = ff.js(
            "return [...document.querySelectorAll('tbody td[data-label=Verdict]')]"
            ".map(t => t.textContent.trim())"
        )
        run_id = ff.url.rsplit("/", 1)[1]
        folder = work / "runs" / run_id
        # what the download links give is what the run wrote
        z = zipfile.ZipFile(io.BytesIO(ff.download("release (l = 4, zip)")))
        assert sorted(z.namelist()) == ["release/qit.csv", "release/release.json", "release/st.csv"]
        for n in z.namelist():
            assert z.read(n) == (folder / "out" / "anatomy-l4" / n.split("/")[1]).read_bytes()
        toml = ff.download("The settings (audit TOML)").decode()
        assert tomllib.loads(toml)["audit"]["grid"] == {"l": [2, 4]}
        said = replay_audit(cli, tmp_path, folder, toml)  # the same verdicts again
        for value, level in zip((2, 4), levels, strict=True):
            assert f"l = {value}: {level}" in said
        report = json.loads(ff.download("its data (JSON)"))
        assert [r["verdict"] for r in report["rows"]] == levels
        # at a phone's width nothing is wider than the window
        method = ff.js("return document.querySelector('a[href$=\"/method\"]').getAttribute('href')")
        ff.window(400, 800)
        for path in ("/", f"/runs/{run_id}", method):
            ff.go(base + path)
            wide, window = ff.js(OVERFLOW)
            assert wide <= window + 1, (path, wide, window)
        assert ff.alert() is None
