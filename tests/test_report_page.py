"""The report page as a person sees it (issue 33, part 6), in headless Chromium at a desktop
width (1280 px) and a phone's (400 px): the verdict on the first screen, nothing wider than
the screen, every plot named for a screen reader with text large enough to read, and badges
whose text contrast is at least 4.5:1 (WCAG AA)."""

from __future__ import annotations

import numpy as np
import pytest

from privlab.data.datasets import load_adult
from privlab.publish.anatomy import anatomize
from privlab.report import build
from privlab.report.config import parse_config
from test_report import chromium_page

pytestmark = pytest.mark.system


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    where = tmp_path_factory.mktemp("page")
    rel = anatomize(load_adult().take(np.arange(1500)), qi=["age", "sex", "race"],
                    sensitive="occupation", l=2, rng=2)  # fmt: skip
    rel.save(where / "rel", custody=where / "custody")
    rep = build(
        where / "rel",
        custody=where / "custody",
        config=parse_config({"attack": {"iterations": 300, "chains": 2, "anneal": 0}}),
    )
    path = where / "report.html"
    path.write_text(rep.to_html(), encoding="utf-8")
    return path, rep


def _contrast(fg: str, bg: str) -> float:
    """WCAG contrast ratio of two CSS ``rgb(r, g, b)`` colours."""

    def lum(css: str) -> float:
        r, g, b = (int(v) / 255 for v in css[css.index("(") + 1 : css.index(")")].split(",")[:3])
        f = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
        return 0.2126 * f[0] + 0.7152 * f[1] + 0.0722 * f[2]

    a, b = sorted((lum(fg), lum(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


MEASURE = """() => {
  const top = id => document.getElementById(id).getBoundingClientRect().top + window.scrollY;
  const plots = [...document.querySelectorAll('svg.plot')].map(svg => {
    const vb = svg.viewBox.baseVal, w = svg.getBoundingClientRect().width;
    const sizes = [...svg.querySelectorAll('text')].map(
      t => parseFloat(getComputedStyle(t).fontSize) * w / vb.width);
    const title = svg.querySelector(':scope > title');
    return {label: svg.getAttribute('aria-label'), role: svg.getAttribute('role'),
            title: title ? title.textContent : null, smallest: Math.min(...sizes)};
  });
  const badges = [...document.querySelectorAll('.badge')].map(b => {
    const s = getComputedStyle(b); return [s.color, s.backgroundColor]; });
  return {scrollWidth: document.documentElement.scrollWidth, width: window.innerWidth,
          verdict: top('verdict'), header: top('header'), identity: top('identity'),
          badge: document.querySelector('#verdict .badge').getBoundingClientRect().bottom,
          plots, badges};
}"""


def _measure(path, width: int, height: int, shot):
    with chromium_page(width, height) as p:
        p.goto(path.resolve().as_uri())
        got = p.evaluate(MEASURE)
        p.screenshot(path=str(shot), full_page=False)
    return got


@pytest.mark.parametrize("width, height", [(1280, 800), (400, 800)])
def test_the_page_at_desktop_and_phone_widths(page, tmp_path, width, height):
    path, rep = page
    got = _measure(path, width, height, tmp_path / f"first-screen-{width}.png")
    # nothing wider than the screen: long hashes wrap, tables and plots scroll in their box
    assert got["scrollWidth"] <= got["width"], got["scrollWidth"]
    # the verdict comes first, its badge on the first screen
    assert got["verdict"] < got["header"] < got["identity"]
    assert 0 < got["badge"] < height
    # every plot has an accessible name (role img, aria-label, a <title>) and text of at
    # least 8 px as drawn (a plot scaled to a phone's width would shrink it to about 6 px)
    assert len(got["plots"]) == len(rep.plots) >= 4
    for p in got["plots"]:
        assert p["role"] == "img" and p["label"] and p["title"] == p["label"], p
        assert p["smallest"] >= 8.0, p
    # each badge's text against its background: at least 4.5:1
    assert got["badges"]
    for fg, bg in got["badges"]:
        assert _contrast(fg, bg) >= 4.5, (fg, bg)


def test_every_plot_names_what_it_shows(page):
    _, rep = page
    labels = {k: v.split('aria-label="', 1)[1].split('"', 1)[0] for k, v in rep.plots.items()}
    a = rep.attribute
    assert labels["class_sizes"].startswith("Records by class size: ")
    assert (
        f"{sum(rep.identity['risk']['class_size_histogram']['records']):,} in all"
        in (labels["class_sizes"])
    )
    # the log axis's ticks read as numbers, not as unrendered mathtext
    assert "mathdefault" not in rep.plots["class_sizes"] and "$" not in rep.plots["class_sizes"]
    assert ">1,000<" in rep.plots["class_sizes"] or ">100<" in rep.plots["class_sizes"]
    assert f"best guess of {a['sensitive']}" in labels["top_posterior"]
    shown = [v for v in a["attacks"][a["strongest"]]["per_value"] if v["at_risk_share"] is not None]
    assert labels["per_value"].endswith(f"{len(shown)} values")
    # each per-value bar says how many people it covers
    for v in shown:
        assert f"{100 * v['at_risk_share']:.0f}% of {v['people']:,}" in rep.plots["per_value"]


def test_the_page_names_the_attacker_in_words(page):
    path, _ = page
    html = path.read_text()
    assert "a learning attacker (deFinetti model)" in html
    assert "R-hat of the log-likelihood" in html and "<td>rhat_loglik</td>" not in html


DP_MEASURE = """() => {
  const top = id => document.getElementById(id).getBoundingClientRect().top + window.scrollY;
  return {scrollWidth: document.documentElement.scrollWidth, width: window.innerWidth,
          verdict: top('verdict'), header: top('header'), utility: top('utility'),
          badge: document.querySelector('#verdict .badge').getBoundingClientRect().bottom};
}"""


@pytest.mark.parametrize("width", [1280, 400])
def test_a_dp_outputs_page_at_desktop_and_phone_widths(run, registry, tmp_path, width):
    """A DP histogram's report (issue 33, item 5): the verdict first, its badge on the first
    screen, nothing wider than a phone's screen (the file's SHA-256 wraps)."""
    r = run("dp", "histogram", "adult", "--columns", "sex,salary", "--epsilon", "0.5",
            "--out", tmp_path / "h.csv", "--seed", "3", "--custody", tmp_path / "hc")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = run("report", tmp_path / "h.csv", "--custody", tmp_path / "hc", "--out",
            tmp_path / "r.html", "--original", "adult")  # fmt: skip
    assert r.returncode == 0, r.stderr
    with chromium_page(width, 800) as p:
        p.goto((tmp_path / "r.html").resolve().as_uri())
        got = p.evaluate(DP_MEASURE)
    assert got["scrollWidth"] <= got["width"], got
    assert got["verdict"] < got["header"] < got["utility"] and 0 < got["badge"] < 600
