"""Helpers of ``privlab evaluate``: ``--threshold`` specs, the ``--control`` check, printing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from privlab.cli._app import print_rows, say
from privlab.errors import PrivlabError


def thresholds(specs: list[str], values: tuple[str, ...], where: Path) -> float | dict:
    """``--threshold``: at most one number (every value) and ``VALUE=T`` for single values."""
    from privlab.metrics.calibration import AT_RISK_THRESHOLD

    default, per_value = None, {}
    for spec in specs:
        name, sep, number = spec.rpartition("=")
        try:
            t = float(number)
        except ValueError:
            raise PrivlabError(
                f"--threshold {spec!r} must be a number in (0, 1] or VALUE=NUMBER"
            ) from None
        if not 0.0 < t <= 1.0:
            raise PrivlabError(f"--threshold {spec!r}: a threshold must lie in (0, 1]")
        if not sep:
            if default is not None:
                raise PrivlabError("give one --threshold number (and VALUE=T for single values)")
            default = t
        elif name not in values:
            more = ", ..." if len(values) > 20 else ""
            raise PrivlabError(
                f"--threshold {spec!r}: {name!r} is not a sensitive value of {where} "
                f"(values: {', '.join(values[:20])}{more})"
            )
        elif name in per_value:
            raise PrivlabError(f"--threshold gives value {name!r} twice")
        else:
            per_value[name] = t
    default = AT_RISK_THRESHOLD if default is None else default
    return {v: per_value.get(v, default) for v in values} if per_value else default


def truth_from_custody(post, custody: Path):
    """The true code of every posterior row, from the release's custody directory: an
    Anatomy custody's ``truth.csv``, a PRAM custody's true values of the posterior's
    sensitive column, or an alpha-beta custody's ``real`` column (the membership attack).
    A generalization custody holds the published rows' exact QIs, not
    who is who: its posteriors are judged with ``--truth`` (the population file)."""
    import numpy as np

    from privlab.data.schema import Attribute
    from privlab.metrics.calibration import check_group_support, read_truth_for
    from privlab.release.base import Custody

    c = Custody.load(custody)  # checks the custody's files
    if post.release_kind is not None and c.method not in (None, post.release_kind):
        raise PrivlabError(
            f"{custody} is the custody of a {c.method!r} release, the posterior attacks a "
            f"{post.release_kind!r} release"
        )
    if c.method == "anatomy":
        return read_truth_for(post, custody / "truth.csv")
    if c.method in ("pram", "alphabeta"):
        if post.sensitive is None or c.truth is None or post.sensitive not in c.truth.names:
            raise PrivlabError(
                f"{custody} holds no true values of the posterior's sensitive attribute "
                f"{post.sensitive!r} (the custody of a PRAM release keeps its randomized "
                "columns' true values, an alpha-beta one whether each row is 'real')"
            )
        if c.truth.n_rows != post.n_rows:
            raise PrivlabError(
                f"{custody} holds {c.truth.n_rows} true rows, the posterior {post.n_rows}"
            )
        values = c.truth.decode(post.sensitive)
        codes = Attribute(post.sensitive, tuple(post.values)).encode(
            np.asarray([str(v) for v in values], dtype=object), where=str(custody)
        )
        check_group_support(post, codes, custody)
        return codes
    raise PrivlabError(
        f"{custody} is the custody of a {c.method!r} release, which keeps the published "
        "rows' exact quasi-identifiers but not who is who: give the people's true values "
        "with --truth FILE (the population file with its sensitive column)"
    )


def matching_control(path: Path, post):
    """The control posterior at ``path``, refused unless it has ``post``'s rows, groups and
    values (it must come from the same release)."""
    import numpy as np

    from privlab.attacks.posterior import Posterior

    ctrl = Posterior.load(path)
    why = None
    if ctrl.n_rows != post.n_rows:
        why = f"it has {ctrl.n_rows} rows, the posterior {post.n_rows}"
    elif ctrl.values != post.values:
        why = "its sensitive values (columns) are not the posterior's"
    elif not np.array_equal(ctrl.group_id, post.group_id):
        i = int(np.flatnonzero(ctrl.group_id != post.group_id)[0])
        why = (
            f"its row {i} is in group {int(ctrl.group_id[i])}, the posterior's in group "
            f"{int(post.group_id[i])} (is it an attack on another release?)"
        )
    if why:
        raise PrivlabError(f"the control {path} does not match the posterior: {why}")
    return ctrl


def print_evaluation(result: dict, name: str) -> None:
    """The threat models, the measures with their intervals, the baselines, the residual."""
    pct = f"{result['level']:.0%} interval"

    def ci(pair) -> str:
        return "" if pair is None or pair[0] is None else f"[{pair[0]:.4g}, {pair[1]:.4g}]"

    def with_ci(r: dict, m: str) -> str:
        return ("-" if r[m] is None else f"{r[m]:.4g}") + f" {ci(r[m + '_ci'])}"

    for who, text in result["threat_model"].items():
        say(f"threat model ({who.replace('_', ' ')}): {text}")
    cut = result["threshold"]
    if isinstance(cut, dict):  # the most common threshold, and the values with their own
        common = Counter(cut.values()).most_common(1)[0][0]
        own = ", ".join(f"{v} {t:g}" for v, t in cut.items() if t != common)
        cut = f"{own}; every other value {common:g}"
    say(f"at risk: some value's probability reaches its threshold (Kifer 2009 Def. 2): {cut}")
    skip = {"threat_model", "reliability", "random_worlds", "control", "residual_risk"}
    skip |= {"threshold", "level"}
    print_rows(
        [
            {"measure": k, "value": v, pct: ci(result.get(f"{k}_ci"))}
            for k, v in result.items()
            if k not in skip and not k.endswith("_ci")
        ],
        title=f"evaluation of {name}",
    )
    measures = ("acc", "at_risk_share", "at_risk_precision")
    print_rows(
        [
            {"attacker": who.replace("_", " "), **{m: with_ci(r, m) for m in measures}}
            for who, r in (
                ("attack", result),
                *((k, result[k]) for k in ("random_worlds", "control")),
            )
            if r is not None
        ],
        title=f"the attack against its baselines ({pct}s)",
    )
    rr = result["residual_risk"]
    if rr is not None:
        say(
            "residual risk (ACC - control ACC) / (1 - control ACC) = "
            + (
                f"{rr['value']:.4g} [{rr['low']:.4g}, {rr['high']:.4g}] ({pct}, as Anonymeter)"
                if rr["value"] is not None
                else "undefined: the control is always right"
            )
        )
