"""privlab app in a real browser (Debian's Chromium through Playwright): the server started
and stopped by the test (``privlab app --no-browser``), the whole workflow on Adult and on an
uploaded CSV as a person sees it, at desktop and phone widths, by keyboard where it matters.

``PRIVLAB_APP_SHOTS=DIR`` also writes a screenshot of each step there (how the README's
docs/img/app-*.png are made)."""

from __future__ import annotations

import json
import os
import tomllib
import zipfile
from pathlib import Path

import pytest

from test_app import XSS, app_server, people_frame, replay_audit
from test_report import chromium_page

pytestmark = pytest.mark.system

QI = "quasi-identifier"


def shot(page, name: str) -> None:
    where = os.environ.get("PRIVLAB_APP_SHOTS")
    if where:
        page.screenshot(path=str(Path(where) / f"app-{name}.png"), full_page=True)


def fits(page, width: int) -> None:
    """Nothing wider than the window (a table becomes one block per row)."""
    page.wait_for_load_state("load")  # the style sheet applied
    assert page.evaluate("document.documentElement.scrollWidth") <= width + 1


def every_control_is_labelled(page) -> None:
    unlabelled = page.eval_on_selector_all(
        "input:not([type=hidden]), select, textarea",
        "els => els.filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))"
        ".map(e => e.name)",
    )
    assert unlabelled == []


#: WCAG 2's contrast of every element's own text against the background it is drawn on
#: (the nearest ancestor's opaque background colour): the failures as [text, ratio, needed]
_CONTRAST = """() => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = c => {
    const [r, g, b] = c.slice(0, 3).map(v => {
      v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const background = el => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c;
    }
    return [255, 255, 255];
  };
  const out = [];
  for (const el of document.body.querySelectorAll('*')) {
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.getClientRects().length) continue;
    const st = getComputedStyle(el);
    if (st.visibility === 'hidden' || parseFloat(st.opacity) === 0) continue;
    const a = lum(rgb(st.color)), b = lum(background(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(st.fontSize), bold = parseInt(st.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) out.push([el.textContent.trim().slice(0, 40), ratio, need]);
  }
  return out;
}"""


def readable(page) -> None:
    """Every text on the page has a contrast of at least 4.5:1 (3:1 for large text)."""
    page.wait_for_load_state("load")
    assert page.evaluate(_CONTRAST) == []


def set_roles(page, roles: dict[str, str]) -> None:
    js = "els => els.map(e => [e.htmlFor, e.textContent])"
    labels = page.eval_on_selector_all("label[for^=role-]", js)
    for for_id, name in labels:
        page.select_option(f"#{for_id}", roles.get(name, "dropped"))


def wait_for_verdict(page) -> str:
    """The verdict once the run is done (the page refreshes itself); a failed or cancelled
    run fails the test with the page's message."""
    page.wait_for_selector("#verdict-h, p.alert", timeout=240_000)
    assert page.locator("p.alert").count() == 0, page.inner_text("p.alert")
    return page.inner_text("#verdict-h").removeprefix("Verdict: ").strip()


def shots_workdir(tmp_path: Path) -> Path:
    """The app's working folder: the test's own, or (making the README's screenshots) one
    whose path reads as a custodian's would."""
    if not os.environ.get("PRIVLAB_APP_SHOTS"):
        return tmp_path / "work"
    import shutil

    shutil.rmtree("/tmp/custodian", ignore_errors=True)
    return Path("/tmp/custodian/privlab-app")


def test_the_workflow_on_adult_in_a_browser(tmp_path, cli):
    work = shots_workdir(tmp_path)
    with app_server(work) as (base, token, _), chromium_page(1100, 900) as page:
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(base + "/")
        assert "access token" in page.inner_text("body")  # no token: 403
        page.goto(f"{base}/?token={token}")
        assert page.url == base + "/"  # the token is not left in the address bar
        assert page.inner_text("h1") == "1. Data"
        shot(page, "1-data")
        readable(page)
        page.select_option("#dataset", "adult")
        page.click("text=Use this dataset")
        assert page.inner_text("h1") == "1. Data: adult"
        assert page.locator("th[scope=row]", has_text="occupation").count() == 1
        shot(page, "1-profile")
        readable(page)
        page.click("text=Next: roles")
        assert page.inner_text("h1") == "2. Roles: adult"
        every_control_is_labelled(page)
        set_roles(page, {"age": QI, "sex": QI, "race": QI, "marital-status": QI,
                         "occupation": "sensitive"})  # fmt: skip
        shot(page, "2-roles")
        readable(page)
        page.focus("text=Save the roles and choose a method")
        page.keyboard.press("Enter")  # by keyboard
        page.wait_for_selector("text=3. Method and settings: adult")
        every_control_is_labelled(page)
        assert page.is_checked("#method-anatomy")
        page.fill("#anatomy-l", "4")
        page.fill("#seed", "3")
        shot(page, "3-method")
        readable(page)
        assert "Anatomy can reach l = " in page.inner_text("#preview-h + ul")
        page.click("button:text('Run')")
        page.wait_for_selector("text=4. Run")
        assert page.locator("button", has_text="Cancel").count() == 1
        shot(page, "4-run")
        readable(page)
        other = page.context.browser.new_page()  # a second tab while the run works
        other.goto(f"{base}/?token={token}")
        assert other.locator("td a", has_text="running").count() == 1
        other.close()
        level = wait_for_verdict(page)
        run_id = page.url.rsplit("/", 1)[1]
        folder = work / "runs" / run_id
        report_json = folder / "out" / "reports" / "anatomy-l4.json"
        assert level == json.loads(report_json.read_text())["verdict"]["level"]
        assert str(folder / "custody") in page.inner_text("p.warn >> nth=1")
        assert page.locator("td", has_text="Disclosure").count() == 0
        report = page.frame_locator("iframe.report")
        assert (
            "Verdict" in report.locator("body").inner_text()
            or "verdict" in report.locator("body").inner_text()
        )
        shot(page, "5-report")
        readable(page)
        with page.expect_download() as d:
            page.click("text=release (l = 4, zip)")
        z = zipfile.ZipFile(d.value.path())
        out = tmp_path / "cli"
        replay = folder / "custody" / "anatomy-l4"
        code, _, err = cli("--registry", tmp_path / "reg", "anatomize", "adult", "--qi",
                           "age,marital-status,race,sex", "--sensitive", "occupation", "--l",
                           "4", "--replay", replay, "--out", out)  # fmt: skip
        assert code == 0, err
        names = sorted(z.namelist())
        assert names == ["release/qit.csv", "release/release.json", "release/st.csv"]
        for n in names:
            assert z.read(n) == (out / Path(n).name).read_bytes(), n
        # another run, cancelled by its button while it works: nothing half-written is kept
        page.click("text=Back to the settings")
        page.fill("#anatomy-l", "2, 3")
        page.click("button:text('Run')")
        page.wait_for_selector("text=4. Run")
        cancelled = work / "runs" / page.url.rsplit("/", 1)[1]
        page.click("button:text('Cancel')")
        page.wait_for_selector("text=Cancelled: nothing half-written was kept.")
        assert not (cancelled / "out").exists() and not (cancelled / "custody").exists()
        page.set_viewport_size({"width": 400, "height": 800})
        for path in ("/", f"/runs/{run_id}", page.url.replace(base, "")):
            page.goto(base + path)
            fits(page, 400)
        assert dialogs == []


def test_an_uploaded_csv_compared_and_generalized_in_a_browser_at_phone_width(tmp_path, cli):
    work = shots_workdir(tmp_path)
    csv = tmp_path / "people.csv"
    people_frame().to_csv(csv, index=False)
    with app_server(work) as (base, token, _), chromium_page(400, 800) as page:
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(f"{base}/?token=wrong")
        assert "access token" in page.inner_text("body")
        page.goto(f"{base}/?token={token}")
        notes = tmp_path / "notes.txt"  # a bad upload: the command line's one line, in the page
        notes.write_text("not a table\n")
        page.set_input_files("#file", str(notes))
        page.click("text=Upload and profile")
        assert "notes.txt: not a CSV or Parquet file" in page.inner_text("main")
        assert not list((work / "data").glob("*/input.*"))  # nothing kept
        page.goto(f"{base}/")
        page.set_input_files("#file", str(csv))
        page.click("text=Upload and profile")
        assert page.inner_text("h1") == "1. Data: people.csv"
        assert page.get_by_text(XSS, exact=True).first.is_visible()  # shown as text
        assert page.locator("main img").count() == 0 and dialogs == []
        fits(page, 400)
        page.click("text=Next: roles")
        set_roles(page, {"age": QI, "sex": QI, "zip": QI, "disease": "sensitive"})
        page.click("text=Save the roles and choose a method")
        fits(page, 400)
        # compare: two settings of Anatomy side by side, one recommended
        page.fill("#anatomy-l", "2, 4")
        page.click("button:text('Run')")
        assert wait_for_verdict(page).startswith("Recommended:")
        shot(page, "phone-compare")
        assert page.locator("tbody th[scope=row]").all_inner_texts()[:2] == [
            t + (" (recommended)" if t in page.inner_text("#verdict-h") else "")
            for t in ("l = 2", "l = 4")
        ]
        fits(page, 400)
        levels = page.locator("tbody td[data-label=Verdict]").all_inner_texts()
        run_id = page.url.rsplit("/", 1)[1]
        folder = work / "runs" / run_id
        with page.expect_download() as d:
            page.click("text=The settings (audit TOML)")
        toml = Path(d.value.path()).read_text()
        assert tomllib.loads(toml)["audit"]["grid"] == {"l": [2, 4]}
        said = replay_audit(cli, tmp_path, folder, toml)  # the same releases and attacks:
        for value, level in zip((2, 4), levels, strict=True):  # the same verdicts
            assert f"l = {value}: {level}" in said
        # generalization: k = 5 on the same roles
        page.click("text=Back to the settings")
        page.check("#method-generalization")
        page.fill("#generalization-k", "5")
        page.click("button:text('Run')")
        level = wait_for_verdict(page)
        assert level in ("PASS", "REVIEW", "FAIL")
        assert "built from the data's own range" in page.inner_text("ul.notes")  # the CLI's note
        fits(page, 400)
        assert dialogs == []
