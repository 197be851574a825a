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


_VERDICT_COLORS = {"PASS": "#1e8449", "REVIEW": "#b9770e", "FAIL": "#c0392b"}
_COLORS = {"attack": "#c0392b", "random worlds": "#7f8c8d", "control": "#2980b9"}


def _figure(width: float = 6.4, height: float = 3.4):
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax


def _svg(fig) -> str:
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
    return head + ' class="plot" role="img">' + rest


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
    ax.bar(labels, counts, color=colors)
    ax.set_xlabel("size of the record's class (records sharing its published values)")
    ax.set_ylabel("records")
    ax.set_title("Records by class size (red: alone or in pairs)")
    return _svg(fig)


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
    ax.set_xlabel(f"probability of the attacker's best guess of {attribute['sensitive']}")
    ax.set_ylabel("people with at least this (%)")
    ax.set_title("How sure the attacker is about each person")
    ax.legend(frameon=False, loc="lower left", fontsize=9)
    return _svg(fig)


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
    ax.barh([r["value"] for r in rows], [100 * r["at_risk_share"] for r in rows], color="#c0392b")
    ax.set_xlabel(f"people at risk (%), {attribute['strongest']} attack")
    ax.set_xlim(0, 100)
    ax.set_title(f"At risk, by true {attribute['sensitive']}")
    return _svg(fig)


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
    return _svg(fig)


@_literal
def tradeoff(rows: list[dict[str, Any]], param: str, limit: float, utility_key: str) -> str:
    """The audit's risk-utility trade-off: at-risk share and utility per setting."""
    fig, ax = _figure(6.4, 3.6)
    xs = [r[param] for r in rows]
    risk = [100 * r["at_risk_share"] if r["at_risk_share"] is not None else np.nan for r in rows]
    ax.plot(xs, risk, marker="o", color="#c0392b", label="people at risk (%)")
    ax.axhline(100 * limit, color="#c0392b", ls="--", lw=1)
    ax.text(xs[0], 100 * limit, f" limit {100 * limit:g}%", va="bottom", color="#c0392b")
    ax.set_xlabel(param)
    ax.set_ylabel("people at risk (%)", color="#c0392b")
    ax.set_xticks(xs)
    util = [r.get(utility_key) for r in rows]
    if any(u is not None for u in util):
        ax2 = ax.twinx()
        ax2.plot(xs, [np.nan if u is None else 100 * u for u in util], marker="s",
                 color="#2980b9", label="utility")  # fmt: skip
        ax2.set_ylabel(utility_key.replace("_", " ") + " (%)", color="#2980b9")
        ax2.spines[["top"]].set_visible(False)
    for x, y, r in zip(xs, risk, rows):
        if np.isfinite(y):
            ax.annotate(r["verdict"], (x, y), textcoords="offset points", xytext=(6, 6),
                        fontsize=8, color=_VERDICT_COLORS.get(r["verdict"], "black"))  # fmt: skip
    ax.set_title("Risk and utility per setting")
    return _svg(fig)
