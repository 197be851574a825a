"""The report on a synthetic data set: generated rows, judged against the real rows they were
made from and a control set of real rows they were not.

A synthetic table (from SDV, synthcity, a DP synthesizer, ...) publishes no real record, so
privlab's partition attacks do not apply; what it may still disclose is measured as the EU's
Article 29 Working Party opinion 05/2014 asks (singling out, linkability, inference), each as
the *residual* success of an attack on the people the data was made from beyond its success on
a control set of people it was not made from (Giomi et al., "A Unified Framework for
Quantifying Privacy Risk in Synthetic Data", PoPETs 2023(2): Anonymeter):

* **singling out, linkability, inference**: Anonymeter's own three evaluators, called as they
  are (not re-implemented; Anonymeter is an optional install, see
  :mod:`privlab.attacks.anonymeter`): singling-out queries built on the synthetic rows
  (multivariate, over ``SINGLING_OUT_COLUMNS`` columns), links between the two halves of the
  quasi-identifiers through a synthetic row, and the sensitive value guessed from the
  nearest synthetic row;
* **privlab's learning attacker**: a Naive Bayes model of the sensitive value given the
  quasi-identifiers (the deFinetti attack's model) learned from the synthetic rows, which
  guesses *every* real person (no sample of targets) and names each one's probability: its
  share of people at risk (probability at least the config's ``at_risk``) on the members and
  on the control, and the residual of its accuracy;
* **distance to closest record** (:func:`privlab.metrics.synthetic.
  distance_to_closest_record`, SDMetrics' definitions): synthetic rows that copy a real row,
  and the share closer to a member than to any control row, against what rows independent
  of both would give;
* **membership inference** (:func:`privlab.attacks.membership_inference.
  membership_inference`): a person is called one of the people the table was made from when a
  synthetic row lies close to them; its advantage ``TPR - FPR`` (members called members, less
  control people called members) is measured on half of each set with a threshold chosen on
  the other half.  With the synthesizer's DP guarantee (``epsilon``, ``delta``) it is judged
  against the largest advantage that guarantee allows
  (:func:`~privlab.attacks.membership_inference.dp_advantage_bound`).

The residual is ``(r_members - r_control) / (1 - r_control)`` with Anonymeter's interval
(:func:`privlab.metrics.intervals.residual_risk`, which keeps a negative value rather than
clipping it).  What the synthetic data teaches about the population (a value most people of
some quasi-identifiers hold) raises both rates alike and cancels: the verdict judges only what
it discloses about the people it was made from.  Without a control set that cannot be told
apart, and the verdict is at best REVIEW.

Verdict: FAIL when a residual risk is above ``max_at_risk_share`` (the largest share of people
a release may put at risk), REVIEW when only its interval reaches above it, when the
synthetic rows are closer to the members than the control explains (the interval of the
closer-to-members share above the share expected), when a criterion could not be measured
(no control, no Anonymeter), PASS otherwise.  Membership: FAIL when the low end of the
advantage's interval is above the bound of the given (epsilon, delta) guarantee (the table
discloses membership beyond what its guarantee allows); without a guarantee REVIEW when that
low end is above ``MEMBERSHIP_REVIEW`` (members are told apart from the control).
"""

from __future__ import annotations

import hashlib
import logging
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privlab.errors import PrivlabError, SchemaError

#: Targets each Anonymeter evaluator attacks (Anonymeter's default), at most the table sizes.
N_ATTACKS = 500
#: Columns of Anonymeter's multivariate singling-out queries (its default).
SINGLING_OUT_COLUMNS = 3
#: Synthetic rows the linkability attack looks through for a common neighbour of a person's
#: two halves (Anonymeter's tutorial's 10: with categorical columns many synthetic rows tie,
#: and a single nearest one of each half rarely coincides even for a copy of the data)
LINK_NEIGHBOURS = 10
#: Tries Anonymeter makes to find singling-out queries (its default is 10 million, minutes
#: on Adult; a query that singles out is found in a few tries when there are any).
SINGLING_OUT_ATTEMPTS = 20_000
#: Without a DP guarantee to judge it by, a membership advantage whose interval's low end is
#: above this is a REVIEW: the people the table was made from are told apart from others.
MEMBERSHIP_REVIEW = 0.05


def _frame(spec: Any, what: str, encoding: str | None) -> pd.DataFrame:
    from privlab.data.datasets import DATASETS, load_input
    from privlab.data.table import Table, read_frame

    if isinstance(spec, pd.DataFrame):
        return spec.copy()
    if isinstance(spec, Table):
        return spec.to_pandas()
    if str(spec) in DATASETS and not Path(spec).exists():
        return load_input(str(spec)).to_pandas()
    frame = read_frame(spec, encoding=encoding, sniff=True)
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def _align(
    frames: dict[str, pd.DataFrame], columns: Sequence[str]
) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """The frames on ``columns``, each column numeric in all of them (when the original's
    is) or text in all of them, with no empty cell; and the numeric columns."""
    out = {k: f[list(columns)].copy() for k, f in frames.items()}
    numeric = []
    for c in columns:
        is_num = pd.api.types.is_numeric_dtype(out["original"][c]) and not (
            pd.api.types.is_bool_dtype(out["original"][c])
        )
        for k, f in out.items():
            if is_num:
                v = pd.to_numeric(f[c], errors="coerce")
                bad = v.isna() & f[c].notna()
                if bad.any():
                    i = int(np.argmax(bad.to_numpy()))
                    raise PrivlabError(
                        f"the {k}'s {c} holds {f[c].iloc[i]!r}, not a number (the original's "
                        f"{c} is numeric)"
                    )
                f[c] = v.astype(float)
            else:
                f[c] = f[c].astype(str).str.strip().where(f[c].notna())
            empty = f[c].isna()
            if empty.any():
                raise PrivlabError(
                    f"the {k}'s {c} has an empty cell (row {int(np.argmax(empty.to_numpy())) + 1})"
                )
        if is_num:
            numeric.append(c)
    return out, numeric


def _rate(n_success: int, n: int):
    from privlab.metrics.intervals import rate

    return rate(n_success, n)


def _residual(members, control) -> dict[str, Any]:
    from privlab.metrics.intervals import residual_risk

    out = {"members": members.to_dict(), "control": None, "residual": None}
    if control is not None:
        out["control"] = control.to_dict()
        out["residual"] = residual_risk(members, control).to_dict()
    return out


def _anonymeter(ori, syn, control, qi, sensitive, gen) -> dict[str, Any]:
    """Anonymeter's three evaluators, each as ``{members, control, residual}`` rates, or the
    reason it did not run."""
    from privlab.attacks.anonymeter import _evaluate, _import_anonymeter
    from privlab.errors import MissingDependencyError

    try:
        _import_anonymeter()
    except MissingDependencyError as e:
        return {"measured": False, "why": str(e)}
    try:  # (optional: not a declared dependency, see privlab.attacks.anonymeter)
        from anonymeter.evaluators import LinkabilityEvaluator, SinglingOutEvaluator
        from anonymeter.evaluators.inference_evaluator import InferenceEvaluator
    except ImportError as e:
        return {"measured": False, "why": f"anonymeter cannot be imported: {e}"}
    n = min(N_ATTACKS, len(ori), len(control) if control is not None else len(ori))
    out: dict[str, Any] = {"measured": True, "n_attacks": n}

    def rates(res) -> dict[str, Any]:
        members = _rate(res.n_success, res.n_attacks_ori)
        ctrl = None if res.n_control is None else _rate(res.n_control, res.n_attacks_control)
        return _residual(members, ctrl)

    quiet = logging.getLogger("anonymeter")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its notes (too few queries) are in the report instead
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Anonymeter's own notes (e.g. "as good as baseline")
        so = SinglingOutEvaluator(
            ori=ori, syn=syn, control=control, n_attacks=n,
            n_cols=min(SINGLING_OUT_COLUMNS, ori.shape[1]),
            max_attempts=SINGLING_OUT_ATTEMPTS, seed=int(gen.integers(2**31)),
        )  # fmt: skip
        try:
            so.evaluate(mode="multivariate")
            out["singling_out"] = {**rates(so.results()), "queries": len(so.queries())}
        except RuntimeError as e:  # Anonymeter finds too few singling-out queries
            out["singling_out"] = {"members": None, "why": str(e).splitlines()[0][:200]}
        if len(qi) >= 2:
            half = len(qi) // 2
            aux = (list(qi[:half]), list(qi[half:]))
            link = LinkabilityEvaluator(
                ori=ori,
                syn=syn,
                control=control,
                aux_cols=aux,
                n_attacks=n,
                n_neighbors=min(LINK_NEIGHBOURS, len(syn)),
            )
            _evaluate(link, gen, 1)
            out["linkability"] = {**rates(link.results()), "aux": [list(a) for a in aux]}
        else:
            out["linkability"] = {"members": None, "why": "one quasi-identifier: no halves to link"}
        if sensitive is not None:
            inf = InferenceEvaluator(
                ori=ori, syn=syn, control=control, aux_cols=list(qi), secret=sensitive,
                regression=False, n_attacks=n,
            )  # fmt: skip
            _evaluate(inf, gen, 1)
            out["inference"] = rates(inf.results())
        else:
            out["inference"] = {"members": None, "why": "no sensitive column"}
    quiet.setLevel(level)
    return out


def _naive_bayes(train: pd.DataFrame, qi: Sequence[str], sensitive: str):
    """Naive Bayes of ``sensitive`` given ``qi`` learned from ``train`` (every value a
    category, add-one smoothing; a value unseen in training is its own category), as a
    function of a frame giving ``(probabilities, labels)``."""
    from sklearn.naive_bayes import CategoricalNB
    from sklearn.preprocessing import OrdinalEncoder

    enc = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1)
    x = enc.fit_transform(train[list(qi)].astype(str)) + 1
    sizes = [len(c) + 1 for c in enc.categories_]
    model = CategoricalNB(alpha=1.0, min_categories=sizes).fit(x.astype(int), train[sensitive])

    def predict(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        z = (enc.transform(frame[list(qi)].astype(str)) + 1).astype(int)
        return model.predict_proba(z), model.classes_

    return predict


def _learning(ori, syn, control, qi, sensitive, at_risk: float) -> dict[str, Any]:
    """privlab's learning attacker on every member and every control person."""
    predict = _naive_bayes(syn, qi, sensitive)

    def attack(people: pd.DataFrame) -> dict[str, Any]:
        probs, labels = predict(people)
        top = probs.argmax(axis=1)
        right = labels[top] == people[sensitive].to_numpy()
        risky = probs.max(axis=1) >= at_risk
        n = len(people)
        return {
            "acc": _rate(int(right.sum()), n),
            "at_risk": _rate(int(risky.sum()), n),
            "precision": None if not risky.any() else float(right[risky].mean()),
        }

    m = attack(ori)
    c = attack(control) if control is not None else None
    out = {
        "accuracy": _residual(m["acc"], None if c is None else c["acc"]),
        "at_risk": _residual(m["at_risk"], None if c is None else c["at_risk"]),
        "precision": {"members": m["precision"], "control": None if c is None else c["precision"]},
        "threshold": at_risk,
    }
    return out


def _utility(ori, syn, control, columns, numeric, qi, sensitive) -> dict[str, Any]:
    """How alike the synthetic and real tables are: each column's total variation distance
    (numbers in the original's deciles) and, with a control set, the accuracy on it of the
    learner trained on the synthetic rows beside the same learner trained on the real ones
    ("train on synthetic, test on real")."""
    per_column = {}
    for c in columns:
        if c in numeric:
            edges = np.unique(np.quantile(ori[c], np.linspace(0, 1, 11)))
            a = np.histogram(np.clip(ori[c], edges[0], edges[-1]), edges)[0]
            b = np.histogram(np.clip(syn[c], edges[0], edges[-1]), edges)[0]
        else:
            values = sorted(set(ori[c]) | set(syn[c]))
            a = ori[c].value_counts().reindex(values, fill_value=0).to_numpy()
            b = syn[c].value_counts().reindex(values, fill_value=0).to_numpy()
        per_column[c] = float(0.5 * np.abs(a / a.sum() - b / b.sum()).sum())
    out: dict[str, Any] = {
        "total_variation": per_column,
        "mean_total_variation": float(np.mean(list(per_column.values()))),
    }
    if control is not None and sensitive is not None:
        truth = control[sensitive].to_numpy()

        def acc(train: pd.DataFrame) -> float:
            probs, labels = _naive_bayes(train, qi, sensitive)(control)
            return float((labels[probs.argmax(axis=1)] == truth).mean())

        majority = ori[sensitive].value_counts().index[0]
        out["tstr"] = {
            "target": sensitive,
            "synthetic": acc(syn),
            "real": acc(ori),
            "majority": float((truth == majority).mean()),
        }
    return out


def _against_limit(text: str, value: float, high: float, limit: float, findings) -> None:
    """A residual risk's finding: FAIL when its value is above ``limit``, REVIEW when only
    its interval's upper end is, PASS otherwise."""
    from privlab.report.build import FAIL, PASS, REVIEW

    if value > limit:
        findings.append((FAIL, f"{text}: above the limit of {limit:.1%}"))
    elif high > limit:
        findings.append((REVIEW, f"{text}: its interval reaches above the limit of {limit:.1%}"))
    else:
        findings.append((PASS, f"{text}: within the limit of {limit:.1%}"))


def _judge_residual(name: str, what: str, d: dict[str, Any] | None, limit: float, findings):
    from privlab.report.build import REVIEW

    if d is None or d.get("members") is None:
        why = (d or {}).get("why", "not measured")
        findings.append((REVIEW, f"{name}: not measured ({why})"))
        return
    r = d.get("residual")
    if d.get("control") is not None and (r is None or r["value"] is None):
        findings.append((
            REVIEW,
            f"{name}: {what} everyone of the control as well: no residual risk can be measured "
            "(the data's general patterns already give it away)",
        ))  # fmt: skip
        return
    if r is None or r["value"] is None:
        m = d["members"]
        findings.append((
            REVIEW,
            f"{name}: {what} {m['value']:.1%} of the people it was made from, but without a "
            "control set this cannot be told from what it teaches about everyone",
        ))  # fmt: skip
        return
    v, lo, hi = r["value"], r["low"], r["high"]
    text = (
        f"{name}: {what} {d['members']['value']:.1%} of the people it was made from and "
        f"{d['control']['value']:.1%} of the control, a residual risk of {v:.1%} (95% "
        f"interval {lo:.1%} to {hi:.1%})"
    )
    _against_limit(text, v, hi, limit, findings)


def _judge_copies(copies: dict[str, Any], limit: float, findings) -> None:
    """Synthetic rows that repeat a whole real record: of the members, beyond the control's
    (a common record is repeated by chance, and by the control as often)."""
    from privlab.report.build import REVIEW

    m, c, r = copies["members"], copies["control"], copies["residual"]
    text = (
        f"copies: {m['value']:.1%} of the synthetic rows repeat a whole record of the people "
        f"it was made from, {c['value']:.1%} one of the control"
    )
    if r["value"] is None:
        findings.append((REVIEW, f"{text} (every row repeats a control record: no residual)"))
        return
    text += f", a residual of {r['value']:.1%} (95% interval {r['low']:.1%} to {r['high']:.1%})"
    _against_limit(text, r["value"], r["high"], limit, findings)


def _membership(ori, syn, ctrl, columns, numeric, gen, epsilon, delta) -> dict[str, Any]:
    """The membership-inference test (members: the original rows, non-members: the control)
    and, with a DP guarantee, its bound; or why it was not measured."""
    from privlab.attacks.membership_inference import membership_inference

    if ctrl is None:
        return {"measured": False, "why": "it needs a control set (the non-members)"}
    mi = membership_inference(syn, ori, ctrl, columns=columns, numeric=numeric, rng=gen)
    out: dict[str, Any] = {"measured": True, **mi.to_dict()}
    out["dp"] = None if epsilon is None else mi.within(epsilon, delta)
    return out


def _judge_membership(m: dict[str, Any], findings) -> None:
    from privlab.report.build import FAIL, PASS, REVIEW

    if not m["measured"]:
        findings.append((REVIEW, f"membership inference: not measured ({m['why']})"))
        return
    a = m["advantage"]
    text = (
        f"membership inference: a synthetic row close to a person tells the people it was "
        f"made from apart from the control with an advantage (TPR - FPR) of {a['value']:.1%} "
        f"(95% interval {a['low']:.1%} to {a['high']:.1%}; AUC {m['auc']:.2f})"
    )
    dp = m["dp"]
    if dp is not None:
        guarantee = f"(epsilon = {dp['epsilon']:g}, delta = {dp['delta']:g})"
        if dp["violated"]:
            findings.append((
                FAIL,
                f"{text}: above the {dp['bound']:.1%} that its {guarantee} differential "
                "privacy guarantee allows: the synthetic table discloses membership beyond "
                "what its guarantee allows (the synthesizer does not deliver its guarantee)",
            ))  # fmt: skip
        else:
            findings.append((
                PASS,
                f"{text}: within the {dp['bound']:.1%} that its {guarantee} differential "
                "privacy guarantee allows",
            ))  # fmt: skip
    elif a["low"] > MEMBERSHIP_REVIEW:
        findings.append((
            REVIEW,
            f"{text}: the people it was made from are told apart from others (the interval's "
            f"low end is above {MEMBERSHIP_REVIEW:.0%}; no DP guarantee was given to judge it by)",
        ))  # fmt: skip
    else:
        findings.append((PASS, text))


def assess_synthetic(
    path: str | Path,
    original: Any,
    roles: Any,
    *,
    control: Any = None,
    config: Any = None,
    attack_salt: int | None = None,
    encoding: str | None = None,
    epsilon: float | None = None,
    delta: float = 0.0,
):
    """The report and verdict of a synthetic table (a :class:`~privlab.report.build.Report`;
    see the module docstring).

    Parameters
    ----------
    path
        The synthetic table (CSV, ``,`` or ``;`` separated, or Parquet).
    original
        The real rows it was made from (a path, a bundled dataset or a DataFrame).
    roles
        :class:`~privlab.report.assess.Roles` (``kind = "synthetic"``).
    control
        Real rows of the same population it was not made from, or None.
    config
        Thresholds (``max_at_risk_share``, ``at_risk``) and the attack seed.
    attack_salt
        Mixed with the config's seed for Anonymeter's draws (as in ``report``).
    epsilon, delta
        The (epsilon, delta) differential-privacy guarantee the synthesizer claims, or None:
        the membership advantage is judged against the largest one it allows
        (:func:`~privlab.attacks.membership_inference.dp_advantage_bound`).
    """
    from privlab.attacks.membership_inference import dp_advantage_bound
    from privlab.errors import ParameterError
    from privlab.metrics.synthetic import distance_to_closest_record
    from privlab.report.build import (
        PASS,
        REVIEW,
        Report,
        _salted,
        _version,
        fresh_attack_salt,
        level_and_reasons,
        report_date,
    )
    from privlab.report.config import Config

    if epsilon is not None:
        dp_advantage_bound(epsilon, delta)  # refuse a bad guarantee before the attacks
    elif delta != 0:
        raise ParameterError(f"delta = {delta!r} was given without epsilon: name both")
    config = config or Config()
    if attack_salt is None:
        attack_salt = fresh_attack_salt()
    seed = _salted(config, attack_salt).attack.seed
    gen = np.random.default_rng(seed)
    path = Path(path)
    syn = _frame(path, "synthetic table", encoding)
    loose = [c for c in syn.columns if c not in roles.columns]
    if loose:
        raise SchemaError(
            f"{path} has a column {loose[0]!r} without a role: name it in the roles file "
            "(quasi_identifiers, sensitive, keep, or ignore)"
        )
    columns = [*roles.quasi_identifiers, *roles.keep]
    columns += [roles.sensitive] if roles.sensitive is not None else []
    frames = {"synthetic table": syn, "original": _frame(original, "original", encoding)}
    if control is not None:
        frames["control"] = _frame(control, "control", encoding)
    for k, f in frames.items():
        absent = [c for c in columns if c not in f.columns]
        if absent:
            raise SchemaError(f"the {k} has no column {absent[0]!r}, which the roles name")
    aligned, numeric = _align(
        {"original": frames["original"], **{k: v for k, v in frames.items() if k != "original"}},
        columns,
    )
    ori, syn = aligned["original"], aligned["synthetic table"]
    ctrl = aligned.get("control")
    for k, f in aligned.items():
        if len(f) < config.min_count:  # no figure of the report covers fewer people
            raise PrivlabError(
                f"the {k} has {len(f)} rows: the report needs at least {config.min_count} "
                "([report] min_count)"
            )
    qi = list(roles.quasi_identifiers)
    th = config.thresholds
    dcr = distance_to_closest_record(syn, ori, control=ctrl, columns=columns, numeric=numeric)
    d = dcr.to_dict()
    identity: dict[str, Any] = {"dcr": d, "columns": columns}
    anon = _anonymeter(ori, syn, ctrl, qi, roles.sensitive, gen)
    identity["anonymeter"] = anon
    membership = _membership(ori, syn, ctrl, columns, numeric, gen, epsilon, delta)
    identity["membership"] = membership
    attribute: dict[str, Any] = {"sensitive": roles.sensitive, "measured": False}
    if roles.sensitive is not None:
        attribute = {
            "sensitive": roles.sensitive,
            "measured": True,
            "learning": _learning(ori, syn, ctrl, qi, roles.sensitive, th.at_risk),
        }
    utility = _utility(ori, syn, ctrl, columns, numeric, qi, roles.sensitive)
    findings: list[tuple[str, str]] = []
    limit = th.max_at_risk_share
    if ctrl is None:
        findings.append((
            REVIEW,
            "no control set was given (real people of the same population the synthetic data "
            "was not made from): what it discloses about its own people cannot be told from "
            "what it teaches about everyone",
        ))  # fmt: skip
    if anon.get("measured"):
        _judge_residual("singling out (Anonymeter)", "queries on it single out",
                        anon["singling_out"], limit, findings)  # fmt: skip
        _judge_residual("linkability (Anonymeter)", "it links the two halves of the "
                        "quasi-identifiers of", anon["linkability"], limit, findings)  # fmt: skip
        if roles.sensitive is not None:
            what = f"its nearest rows give the {roles.sensitive} of"
            _judge_residual("inference (Anonymeter)", what, anon["inference"], limit, findings)
    else:
        findings.append((REVIEW, f"Anonymeter's three criteria were not measured: {anon['why']}"))
    if roles.sensitive is not None:
        learn = attribute["learning"]
        _judge_residual(
            "inference (privlab's learning attacker)",
            f"a model learned from it names the {roles.sensitive} with probability at least "
            f"{th.at_risk:g} for",
            learn["at_risk"], limit, findings,
        )  # fmt: skip
    if ctrl is not None:
        copies = _residual(
            _rate(int(dcr.exact_match.sum()), dcr.n),
            _rate(int((dcr.dcr_control == 0).sum()), dcr.n),
        )
        identity["copies"] = copies
        _judge_copies(copies, limit, findings)
    closer = d.get("closer_to_training")
    if closer is not None:
        lo, hi = closer["low"], closer["high"]
        text = (
            f"{closer['share']:.1%} of the synthetic rows are closer to a record it was made "
            f"from than to any control record (95% interval {lo:.1%} to {hi:.1%}; "
            f"{closer['expected']:.1%} expected of rows drawn apart from both)"
        )
        if lo > closer["expected"]:
            findings.append((REVIEW, f"{text}: it stays close to its own records"))
        else:
            findings.append((PASS, text))
    _judge_membership(membership, findings)
    level, reasons = level_and_reasons(findings)
    steps = {
        "FAIL": "make the synthetic data again with more privacy (a DP synthesizer at a lower "
        "epsilon, or fewer training epochs), then assess it again",
        "REVIEW": "resolve the points above (give a control set: real people it was not made "
        "from) and assess it again"
        if ctrl is None
        else "weigh the points above: an interval that reaches above the limit with an "
        "estimate below it is an attack measured on too few people to decide; make the "
        "synthetic data again with more privacy (a smaller epsilon) to decide it",
        "PASS": "publish it, with this report",
    }
    verdict = {
        "level": level,
        "reasons": reasons,
        "findings": [{"level": lv, "reason": r} for lv, r in findings],
        "next_step": steps[level],
        "thresholds": {"max_at_risk_share": limit, "at_risk": th.at_risk},
    }
    header = {
        "kind": "synthetic",
        "method": "synthetic",
        "release": str(path),
        "label": path.name,
        "what": "a synthetic table",
        "privlab_version": _version(),
        "date": report_date(),
        "release_file_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "rows": {
            "synthetic": len(syn),
            "original": len(ori),
            "control": None if ctrl is None else len(ctrl),
        },
        "columns": {c: ("numeric" if c in numeric else "categorical") for c in columns},
        "roles": roles.to_dict(),
        "min_count": config.min_count,
    }
    diagnostics = {"numeric": numeric, "anonymeter_attempts": SINGLING_OUT_ATTEMPTS}
    return Report(
        header=header,
        verdict=verdict,
        identity=identity,
        attribute=attribute,
        utility=utility,
        diagnostics=diagnostics,
        attack_salt=attack_salt,
    )


__all__ = ["MEMBERSHIP_REVIEW", "N_ATTACKS", "assess_synthetic"]
