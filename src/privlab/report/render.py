"""HTML rendering of reports (jinja2 templates in ``templates/``, CSS inlined)."""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any

#: The attacks in the words a custodian uses (the page; the JSON keeps the short names).
ATTACKERS = {
    "definetti": "a learning attacker (deFinetti model)",
    "em": "a learning attacker (EM model)",
    "maxent": "a max-ent attacker (the marginals' most even table)",
    "membership": "a membership attacker (is a tuple real?)",
    "pram": "a learning attacker (EM through the PRAM matrices)",
    "nearest": "a learning attacker (the released records nearest to a person)",
}

#: The diagnostics' keys in words.
DIAGNOSTICS = {
    "converged": "converged",
    "rhat_loglik": "R-hat of the log-likelihood (1 when the chains agree)",
    "ess_loglik": "effective sample size of the log-likelihood",
    "rhat_tracked": "R-hat of the tracked people's values",
    "ess_tracked": "effective sample size of the tracked people's values",
    "iterations": "iterations per chain",
    "chains": "chains",
    "seconds": "seconds",
    "restarts": "annealed restarts per chain",
    "restart_rounds": "rounds of annealed restarts (more when the chains' starts disagreed)",
    "retried": "run again",
}


def attacker(name: str) -> str:
    """An attack's name in words (``definetti`` -> "a learning attacker (deFinetti
    model)"); an unknown name as it is."""
    return ATTACKERS.get(name, f"the {name} attack")


def diagnostic(key: str) -> str:
    """A diagnostics key in words (``ess_tracked`` -> "effective sample size of ...")."""
    return DIAGNOSTICS.get(key, key.replace("_", " "))


@cache
def _env():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("privlab.report", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["attacker"] = attacker
    env.filters["diagnostic"] = diagnostic
    return env


def _css() -> str:
    return files("privlab.report").joinpath("templates/_style.css").read_text(encoding="utf-8")


def _plain(r) -> dict[str, Any]:
    from privlab._io import json_ready

    return json_ready(r.to_dict())


#: the page of a report by its header's kind (a release's otherwise)
_TEMPLATES = {"dp": "dp.html.j2", "synthetic": "synthetic.html.j2"}


def render_report(report) -> str:
    """One self-contained page for one release."""
    return (
        _env()
        .get_template(_TEMPLATES.get(report.header.get("kind"), "report.html.j2"))
        .render(r=_plain(report), plots=report.plots, css=_css())
    )


def render_audit(audit) -> str:
    """One self-contained page for an audit: the grid, the trade-off, the recommendation,
    and the full report of the recommended (or else the most protective) setting."""
    from privlab.report import config

    chosen = audit.reports[audit.shown]
    # a report with a page of its own (a synthetic table's) is linked, not inlined
    own_page = chosen.header.get("kind") in _TEMPLATES
    link = next((r["report"] for r in audit.rows if r[audit.param] == audit.shown), None)
    return (
        _env()
        .get_template("audit.html.j2")
        .render(
            a=audit.to_dict(),
            shown_link=link if own_page else None,
            utility=audit.utility,
            tradeoff=audit.tradeoff_svg,
            r=_plain(chosen),
            plots=chosen.plots,
            models=config.MODELS,
            css=_css(),
        )
    )


def summary_html(report: Any) -> str:
    """A notebook's view of a report (``Report._repr_html_``): the verdict, its reasons and
    the next step, every text escaped; ``to_html()`` gives the whole page."""
    from html import escape

    v = report.verdict
    level = escape(str(v.get("level", "")))
    colour = {"PASS": "#1a7f37", "REVIEW": "#9a6700", "FAIL": "#cf222e"}.get(level, "#57606a")
    h = report.header
    title = escape(str(h.get("label") or f"{h.get('method') or 'a'} release"))
    reasons = "".join(f"<li>{escape(str(r))}</li>" for r in v.get("reasons", []))
    step = escape(str(v.get("next_step", "")))
    return (
        f'<div class="privlab-report"><p><strong style="color:{colour}">{level}</strong> '
        f"&middot; {title}</p><ul>{reasons}</ul><p>Next step: {step}</p>"
        "<p><small>report.to_html() gives the whole report</small></p></div>"
    )
