"""The report's plots, drawn with matplotlib as inline SVG (no network needed to view).

Each function takes the report's plain data and returns an ``<svg>`` element as text, sized
by its ``viewBox`` so that it scales with the page.

Every string drawn (values of the data, column names, file names) is drawn as it is: each
plot is built with matplotlib's ``text.parse_math`` off (:func:`_literal`), so a ``$`` in a
value (``US$ 50k``, ``a$^$b``) is neither rendered as mathtext nor a parse error, and the SVG
backend escapes ``<`` and ``&`` as text.
"""

from __future__ import annotations

import functools
import io
import itertools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

_F = TypeVar("_F", bound=Callable[..., str])


def _literal(plot: _F) -> _F:
    """Build ``plot`` with mathtext off: a string from the data is shown literally (tick
    labels are made when the figure is drawn, so the whole build and save run inside)."""

    @functools.wraps(plot)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        import matplotlib

        with matplotlib.rc_context({"text.parse_math": False}):
            return plot(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


#: The verdict colours of the page's badges (each >= 4.5:1 against white text, WCAG AA).
_VERDICT_COLORS = {"PASS": "#1e8449", "REVIEW": "#9a6700", "FAIL": "#c0392b"}
_COLORS = {"attack": "#c0392b", "random worlds": "#7f8c8d", "control": "#2980b9"}


def _panels(width: float, height: float, rows: int):
    """A figure of ``rows`` panels stacked on one x axis (open frames), and its axes."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, 1, figsize=(width, height), sharex=True,
                             layout="constrained", squeeze=False)  # fmt: skip
    for ax in axes[:, 0]:
        ax.spines[["top", "right"]].set_visible(False)
    return fig, list(axes[:, 0])


def _figure(width: float = 6.4, height: float = 3.4):
    fig, (ax,) = _panels(width, height, 1)
    return fig, ax


def _svg(fig, label: str) -> str:
    """The figure as an inline ``<svg>`` scaled by its viewBox, with ``label`` as its
    accessible name (``aria-label`` and a ``<title>``, escaped: values from the data)."""
    from html import escape

    import matplotlib
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    # the same SVG ids in every run; text as text (small, searchable); set for this save
    # only, not for every other plot of the process
    with matplotlib.rc_context({"svg.hashsalt": "privlab", "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    start = text.index("<svg")
    svg = text[start:]
    # scale with the page: drop the fixed size, keep the viewBox
    head, rest = svg.split(">", 1)
    for attr in ("width", "height"):
        i = head.find(f' {attr}="')
        if i >= 0:
            j = head.index('"', i + len(attr) + 3)
            head = head[:i] + head[j + 1 :]
    name = escape(label, quote=True)
    return f'{head} class="plot" role="img" aria-label="{name}"><title>{name}</title>{rest}'


@_literal
def class_sizes(risk: dict[str, Any]) -> str:
    """How many records sit in classes of each size (the smaller, the riskier)."""
    sizes = np.asarray(risk["class_size_histogram"]["size"])
    records = np.asarray(risk["class_size_histogram"]["records"])
    fig, ax = _figure(6.4, 3.0)
    edges = [1, 2, 3, 5, 10, 20, 50, 100, 1000, np.inf]
    labels = ["1", "2", "3-4", "5-9", "10-19", "20-49", "50-99", "100-999", "1000+"]
    counts = [
        int(records[(sizes >= lo) & (sizes < hi)].sum()) for lo, hi in itertools.pairwise(edges)
    ]
    colors = ["#c0392b" if lab in ("1", "2") else "#34495e" for lab in labels]
    # a log axis: the few records alone or in pairs (red) stay visible beside the thousands
    # in large classes; each bar is labelled with its count (an empty one reads 0)
    bars = ax.bar(labels, [c if c > 0 else np.nan for c in counts], color=colors)
    ax.set_yscale("log")
    ax.set_ylim(0.8, max(max(counts), 1) * 3)
    # plain numbers: with mathtext off (_literal) the log axis's default labels would read
    # "$\mathdefault{10^{3}}$"
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.bar_label(bars, labels=[f"{c:,}" for c in counts], fontsize=8, padding=2)
    for lab, c in zip(labels, counts):
        if c == 0:
            ax.annotate("0", (lab, 0.8), xytext=(0, 2), textcoords="offset points",
                        ha="center", fontsize=8, color="#5d6d7e")  # fmt: skip
    ax.set_xlabel("size of the record's class (records sharing its published values)")
    ax.set_ylabel("records (log scale)")
    ax.set_title("Records by class size (red: alone or in pairs)")
    alone, pairs = counts[0], counts[1]
    return _svg(fig, f"Records by class size: {alone:,} records alone in their class, "
                     f"{pairs:,} in pairs, {sum(counts):,} in all")  # fmt: skip


@_literal
def top_posterior(attribute: dict[str, Any], threshold: float) -> str:
    """For each probability x, the share of people whose top posterior is at least x: per
    attack, against random worlds and the control; at the threshold it reads the at-risk
    share."""
    fig, ax = _figure()
    curves = dict(attribute["top_survival"])
    x = np.asarray(curves.pop("x"))
    palette = iter(["#c0392b", "#8e44ad", "#d35400"])
    for name, y in curves.items():
        color = _COLORS.get(name.split(":")[0].split(" (")[0], None)
        if name.startswith("no learning"):
            color = _COLORS["random worlds"]
        elif name == "control":
            color = _COLORS["control"]
            name = f"control (learns from {attribute.get('control_source')} only)"
        else:
            color = next(palette)
        ax.step(x, 100 * np.asarray(y), where="post", color=color, lw=2, label=name)
    ax.axvline(threshold, color="black", ls="--", lw=1)
    ax.text(threshold, 97, f" at risk: {threshold:g} and above", va="top")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 100)
    beyond = bool((attribute.get("rule") or {}).get("known"))
    ax.set_xlabel(
        f"share of the doubt about {attribute['sensitive']} that the attacker removes"
        if beyond
        else f"probability of the attacker's best guess of {attribute['sensitive']}"
    )
    ax.set_ylabel("people with at least this (%)")
    ax.set_title("How sure the attacker is about each person")
    ax.legend(frameon=False, loc="lower left", fontsize=9)
    return _svg(fig, "How sure the attacker is about each person: the share of people whose "
                     f"best guess of {attribute['sensitive']} reaches each probability, per "
                     f"attacker; at risk from {threshold:g}")  # fmt: skip


@_literal
def per_value(attribute: dict[str, Any]) -> str:
    """The at-risk share among the people of each true sensitive value."""
    res = attribute["attacks"][attribute["strongest"]]
    # a pooled row of too few people has no share to show (report.build.hide_small)
    rows = sorted(
        (r for r in res["per_value"] if r["at_risk_share"] is not None),
        key=lambda r: r["at_risk_share"],
    )
    fig, ax = _figure(6.4, 0.6 + 0.28 * max(len(rows), 3))
    bars = ax.barh([r["value"] for r in rows], [100 * r["at_risk_share"] for r in rows],
                   color="#c0392b")  # fmt: skip
    # each bar says how many people it covers (a share of 3 people is not one of 3,000)
    ax.bar_label(bars, labels=[f"{100 * r['at_risk_share']:.0f}% of {r['people']:,}"
                               for r in rows], fontsize=8, padding=3)  # fmt: skip
    ax.set_xlabel(f"people at risk (%), {attribute['strongest']} attack")
    ax.set_xlim(0, 118)
    ax.set_xticks([0, 20, 40, 60, 80, 100])
    ax.set_title(f"At risk, by true {attribute['sensitive']}")
    return _svg(fig, f"The share of people at risk by their true {attribute['sensitive']}, "
                     f"{len(rows)} values")  # fmt: skip


@_literal
def calibration(attribute: dict[str, Any]) -> str:
    """Reliability diagram: when the attacker says p, is it right a share p of the time?"""
    fig, ax = _figure(4.2, 3.6)
    ax.plot([0, 1], [0, 1], color="#7f8c8d", ls=":", label="perfectly calibrated")
    for i, (name, res) in enumerate(attribute["attacks"].items()):
        rel = res["reliability"]
        # a bin of too few events has no forecast or frequency (None -> nan): not drawn
        f = np.asarray(rel["forecast"], dtype=float)
        o = np.asarray(rel["frequency"], dtype=float)
        c = np.asarray(rel["count"])
        ok = (c > 0) & np.isfinite(f) & np.isfinite(o)
        ax.plot(f[ok], o[ok], marker="o", color=["#c0392b", "#8e44ad", "#d35400"][i % 3],
                label=f"{name} attack")  # fmt: skip
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("attacker's stated probability")
    ax.set_ylabel("how often it is right")
    ax.set_title("Calibration")
    ax.legend(frameon=False, loc="upper left")
    return _svg(fig, "Calibration: how often the attacker is right against the probability "
                     "it states")  # fmt: skip


def _mark_verdicts(ax, xs, ys, rows) -> None:
    """Write each setting's verdict beside its point (none where its figure is missing)."""
    for x, y, r in zip(xs, ys, rows):
        if np.isfinite(y):
            ax.annotate(r["verdict"], (x, y), textcoords="offset points", xytext=(6, 6),
                        fontsize=8, color=_VERDICT_COLORS.get(r["verdict"], "black"))  # fmt: skip


def _utility_only(rows, param, util, axis: str, percent: bool, descending: bool) -> str:
    """:func:`tradeoff` of settings that nothing attacked: each setting's utility, marked
    with its verdict."""
    fig, axes = _panels(6.4, 3.4, 1)
    ax = axes[0]
    xs = [r[param] for r in rows]
    scale = 100 if percent else 1
    ys = [np.nan if u is None else scale * u for u in util]
    ax.plot(xs, ys, marker="s", color="#2980b9")
    _mark_verdicts(ax, xs, ys, rows)
    ax.set_xticks(xs)
    if descending:
        ax.invert_xaxis()
    ax.set_ylim(0, None)
    ax.set_ylabel(axis)
    ax.set_xlabel(param)
    ax.set_title("Utility and verdict per setting")
    said = ", ".join(f"{x}: {y:.3g} ({r['verdict']})" for x, y, r in zip(xs, ys, rows)
                     if np.isfinite(y))  # fmt: skip
    return _svg(fig, f"{axis} per {param} ({said}); nothing was attacked")


@_literal
def tradeoff(
    rows: list[dict[str, Any]],
    param: str,
    limit: float,
    utility_key: str,
    *,
    axis: str | None = None,
    percent: bool = False,
    descending: bool = False,
    attacked: bool = True,
) -> str:
    """The audit's risk-utility trade-off per setting: the at-risk share against the limit
    (top) and the utility (bottom), two panels on one x axis rather than twin y axes (whose
    independent scales make any two series cross where one likes).

    ``utility_key`` is the rows' utility column, ``axis`` its label, ``percent`` whether it
    is a share; ``descending`` draws the x axis from the largest value down (a parameter
    that protects more as it falls), so that protection grows to the right for every
    method.  ``attacked`` False (:func:`privlab.report.audit.attacked`: a DP output,
    judged by its guarantee) draws the utility alone."""
    util = [r.get(utility_key) for r in rows]
    if not attacked and any(u is not None for u in util):  # the utility alone
        return _utility_only(rows, param, util, axis or utility_key, percent, descending)
    panels = 2 if any(u is not None for u in util) else 1
    fig, axes = _panels(6.4, 2.2 + 1.6 * panels, panels)
    ax = axes[0]
    xs = [r[param] for r in rows]
    risk = [100 * r["at_risk_share"] if r["at_risk_share"] is not None else np.nan for r in rows]
    ax.plot(xs, risk, marker="o", color="#c0392b", label="people at risk (%)")
    link = [100 * r["linkage"] if r.get("linkage") is not None else np.nan for r in rows]
    linked = any(np.isfinite(link))
    if linked:  # a masked release: its records linked to their people
        ax.plot(xs, link, marker="^", color="#8e44ad", label="records linked (%)")
        ax.legend(loc="upper right", fontsize=8, frameon=False)
    ax.axhline(100 * limit, color="#c0392b", ls="--", lw=1)
    ax.text(xs[0], 100 * limit, f" limit {100 * limit:g}%", va="bottom", color="#c0392b")
    ax.set_ylabel("people at risk (%)" if not linked else "at risk / linked (%)")
    top = np.nanmax([*risk, *link, 100 * limit]) if linked else 100
    # a synthetic table's residual share (beyond the control) may fall below 0
    floor = min(0.0, float(np.nanmin([*risk, 0.0])) - 2)
    ax.set_ylim(floor, 100 if not linked else min(100, 1.15 * top + 1))
    ax.set_xticks(xs)
    if descending:
        ax.invert_xaxis()  # the axes share x: both panels
    _mark_verdicts(ax, xs, link if linked else risk, rows)
    ax.set_title("Risk and utility per setting")
    if panels == 2:
        ax2 = axes[1]
        scale = 100 if percent else 1
        ax2.plot(xs, [np.nan if u is None else scale * u for u in util], marker="s",
                 color="#2980b9")  # fmt: skip
        ax2.set_ylabel(axis or utility_key.replace("_", " "))
        if utility_key == "model_accuracy":
            ax2.set_ylim(0, 100)
        else:
            ax2.set_ylim(0, None)
    axes[-1].set_xlabel(param)
    shares = ", ".join(f"{x}: {y:.1f}%" for x, y in zip(xs, risk) if np.isfinite(y))
    if linked:
        shares += "; records linked " + ", ".join(
            f"{x}: {y:.1f}%" for x, y in zip(xs, link) if np.isfinite(y)
        )
    return _svg(fig, f"People at risk per {param} ({shares}) against the limit of "
                     f"{100 * limit:g}%" + (", and the utility per setting" if panels == 2
                                             else ""))  # fmt: skip
