"""The report of a differentially private output: a noisy histogram or a DP model file.

A DP output carries its guarantee: epsilon-differential privacy (Dwork et al. 2006), i.e.
whatever one person's record, the probability of any output changes by at most a factor
``e^epsilon``.  No attack can break it, so the report does not attack; it judges what the
custodian decides (issue 33, item 5):

* **the guarantee against the policy**: the output's epsilon, read from its custody
  (``custody.json``, checked against the file's SHA-256), against ``[thresholds]
  max_epsilon``: FAIL above it;
* **the input's budget**: every DP output of the same input adds up (sequential composition,
  McSherry 2009 Thm. 1): the custodian's registry ledger's total against its configured total
  (``PRIVLAB_EPSILON_TOTAL``): FAIL above it;
* **what the guarantee does not cover**: a file drawn from the caller's own seed (an
  experiment, replayable by whoever guesses the seed: FAIL) and domains or bounds read from
  the private data (a rare value reveals its record: REVIEW);
* **utility**: a histogram's expected noise per cell (the mechanism's variance, a closed
  form) and, given the original input, the noise actually added; a model's accuracy on the
  held-out people of ``[utility] holdout`` beside always guessing the majority class.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from privlab.errors import PrivlabError
from privlab.report.config import Config

#: The DP outputs a report judges, by the ``method`` their custody names.
DP_METHODS = {
    "dp-histogram": "a differentially private histogram",
    "dp-naive-bayes": "a differentially private naive Bayes model",
    "dp-tree": "a differentially private decision tree",
}


def read_dp_custody(path: str | Path, custody: str | Path | None) -> dict[str, Any]:
    """The custody record of the DP output ``path``: refused in one line when there is none,
    when it names no DP method, or when it is another file's (its SHA-256 differs)."""
    from privlab._io import read_json, sha256_file

    path = Path(path)
    if custody is None and path.is_file() and _not_for_publication(path):
        raise PrivlabError(
            f"{path} is an experiment (it says: not for publication): it may never be "
            "published, so there is no verdict to give"
        )
    if custody is None:
        raise PrivlabError(
            f"{path} is not a release directory; a DP output (histogram or model file) is "
            "reported with its custody: give --custody DIR (the directory holding its "
            "custody.json)"
        )
    record = Path(custody) / "custody.json"
    if not record.is_file():
        raise PrivlabError(f"--custody {custody}: no custody.json there (not a custody directory)")
    doc = read_json(record, what="custody file")
    method = doc.get("method") if isinstance(doc, dict) else None
    if method not in DP_METHODS:
        raise PrivlabError(
            f"--custody {custody} is the custody of a {method!r} output, not of a DP output "
            f"({', '.join(DP_METHODS)})"
        )
    if doc.get("release_sha256") != sha256_file(path):
        raise PrivlabError(
            f"--custody {custody} is the custody of another file: its SHA-256 differs from "
            f"{path}'s (was the file changed after it was written?)"
        )
    eps = doc.get("epsilon")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0:
        raise PrivlabError(f"{record} holds no epsilon: it cannot state the guarantee")
    return doc


def _model_doc(path: Path) -> dict[str, Any] | None:
    """A model file's JSON document (read once), or None for a histogram (not ``.json``)."""
    import json

    if path.suffix.lower() != ".json":
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise PrivlabError(f"{path} is not a model file (not JSON)") from None
    return doc if isinstance(doc, dict) else {}


def _not_for_publication(path: Path, model: dict[str, Any] | None = None) -> bool:
    """Whether the file says it is an experiment (:data:`privlab._registry.NOT_FOR_PUBLICATION`):
    a first ``#`` line of a CSV, a key of a JSON model (``model``: its document, read by
    :func:`_model_doc` when not given), Parquet metadata."""
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        meta = pq.read_schema(path).metadata or {}
        return b"privlab.not_for_publication" in meta
    if suffix == ".json":
        model = _model_doc(path) if model is None else model
        return bool(model.get("not_for_publication"))
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.readline().startswith("# not for publication")


def _read_from_data(model: dict[str, Any] | None) -> list[str]:
    """The columns whose domain or bounds a model file's document says were read from the
    data (none for a histogram: ``model`` None)."""
    cols = None if model is None else model.get("read_from_data")
    return [str(c) for c in cols] if isinstance(cols, list) else []


def _histogram_utility(
    path: Path, params: dict[str, Any], original: Any, input_sha256: str | None = None
) -> dict[str, Any]:
    """The noise of a histogram: expected per cell (the mechanism's variance) and, given the
    original input (refused unless its fingerprint is the custody's ``input_sha256``),
    measured against its true counts."""
    from privlab.data.datasets import load_input
    from privlab.dp.mechanisms import Geometric, Laplace

    out: dict[str, Any] = {"kind": "histogram"}
    eps, sens = params.get("epsilon"), params.get("sensitivity", 1)
    mech = params.get("mechanism")
    if isinstance(eps, (int, float)) and mech in ("geometric", "laplace"):
        m = Geometric(float(eps), int(sens)) if mech == "geometric" else Laplace(float(eps), sens)
        out["expected_rmse_per_cell"] = math.sqrt(m.variance)
        out["estimator"] = params.get("estimator")
    if original is None:
        return out
    import pandas as pd

    released = (
        pd.read_parquet(path)
        if path.suffix.lower() in (".parquet", ".pq")
        else pd.read_csv(path, comment="#", dtype=str, keep_default_na=False)
    )
    columns = [c for c in released.columns if c != "count"]
    from privlab._io import sha256_file

    table = original
    if isinstance(original, (str, Path)):
        table = load_input(original, drop_missing=True)
    if input_sha256 is not None and table.fingerprint() != input_sha256:
        as_file = isinstance(original, (str, Path)) and Path(original).is_file()
        if not (as_file and sha256_file(original) == input_sha256):  # a streamed input's
            raise PrivlabError(
                f"--original {original}: not the input of this histogram (its fingerprint "
                "differs from the one its custody keeps)"
            )
    missing = [c for c in columns if c not in table.names]
    if missing:
        raise PrivlabError(f"the original input has no column {missing[0]!r} of the histogram")
    frame = table.to_pandas()[columns].astype(str)
    true = frame.value_counts().to_dict()
    keys = [tuple(r) for r in released[columns].astype(str).itertuples(index=False)]
    t = np.array([true.get(k, 0) for k in keys], dtype=float)
    r = pd.to_numeric(released["count"]).to_numpy(dtype=float)
    err = r - t
    out.update(
        cells=int(t.size),
        n=int(t.sum()),
        measured_rmse_per_cell=float(np.sqrt(np.mean(err**2))),
        max_abs_error=float(np.abs(err).max()) if err.size else 0.0,
        total_variation=float(0.5 * np.abs(r / max(r.sum(), 1) - t / max(t.sum(), 1)).sum()),
    )
    return out


def _model_utility(
    path: Path, method: str, holdout: str | None, held: tuple[Any, str] | None = None
) -> dict[str, Any]:
    """A model's accuracy on held-out people beside always guessing their majority class:
    ``held`` (a table and its description: an audit's held-out share), else the people of
    ``holdout`` (``[utility] holdout``)."""
    out: dict[str, Any] = {"kind": "model"}
    if holdout is None and held is None:
        out["why"] = "no held-out people ([utility] holdout) to test the model on"
        return out
    if held is None:
        from privlab.data.datasets import load_input

        held = (load_input(holdout, drop_missing=True), str(holdout))
    people, where = held
    df = people.to_pandas()
    if method == "dp-naive-bayes":
        from privlab.learn.dp_naive_bayes import DPNaiveBayes, predict_table

        nb = DPNaiveBayes.load(path)
        _, accuracy = predict_table(nb, people)
        target = nb.target_
    else:
        from privlab.learn.dp_tree import DPTreeModel

        model = DPTreeModel.load(path)
        target = model.target
        accuracy = model.accuracy(df)
    truth = df[target].astype(str)
    out.update(
        holdout=where,
        target=target,
        accuracy=accuracy,
        majority=float(truth.value_counts(normalize=True).iloc[0]),
    )
    return out


def build_dp(
    path: str | Path,
    *,
    custody: str | Path | None,
    config: Config | None = None,
    original: Any = None,
    label: str | None = None,
):
    """Judge the DP output ``path`` (a histogram CSV/Parquet or a model JSON) with its
    ``custody``: a :class:`~privlab.report.build.Report` (see the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise PrivlabError(f"{path} is neither a release directory nor a file")
    return judge_dp(
        path, read_dp_custody(path, custody), config=config, original=original, label=label
    )


def judge_dp(
    path: Path,
    doc: dict[str, Any],
    *,
    config: Config | None = None,
    original: Any = None,
    label: str | None = None,
    candidate: dict[str, Any] | None = None,
    held: tuple[Any, str] | None = None,
):
    """:func:`build_dp` from the custody record ``doc`` already read and checked
    (:func:`read_dp_custody`: the command line reads it before it writes anything).

    ``candidate``: the public parameters of an audit's candidate (a draft, not in the
    registry): the input's budget is then judged as it would stand were the candidate
    published (the ledger's outputs plus its epsilon), not as a missing registry entry.
    ``held``: a model's held-out people (a table, and what they are in words), in place of
    ``[utility] holdout``."""
    from privlab._registry import Registry, epsilon_total
    from privlab.report.build import (
        FAIL,
        PASS,
        REVIEW,
        Report,
        _version,
        level_and_reasons,
        report_date,
    )

    config = config or Config()
    method, eps = doc["method"], float(doc["epsilon"])
    if original is not None and method != "dp-histogram":
        raise PrivlabError(
            "--original applies to a DP histogram; a model's utility is measured on the "
            "held-out people of [utility] holdout"
        )
    # the input's entries in the registry (read once): this output's (its public
    # parameters) and the others beside it in the ledger
    entries = Registry().entries(doc["input_sha256"]) if doc.get("input_sha256") else []
    entry = next((e for e in entries if e.get("release_sha256") == doc["release_sha256"]), None)
    params = dict(entry.get("parameters") or {}) if entry else dict(candidate or {})
    params.setdefault("epsilon", eps)
    th = config.thresholds
    findings: list[tuple[str, str]] = []
    steps: list[str] = []
    what = DP_METHODS[method]
    change = f"e^epsilon = {math.exp(eps):.3g}" if eps < 50 else "an unbounded factor in practice"
    guarantee = (
        f"{what[0].upper()}{what[1:]} with epsilon = {eps:g}: whatever one person's record, "
        f"the probability of any output changes by at most a factor {change}"
    )
    if eps > th.max_epsilon:
        findings.append((FAIL, f"{guarantee}; the policy allows epsilon <= {th.max_epsilon:g}"))
        steps.append(f"release it again with epsilon <= {th.max_epsilon:g} (--epsilon)")
    else:
        findings.append((PASS, f"{guarantee}: within the policy's epsilon <= {th.max_epsilon:g}"))
    ledger = None
    if doc.get("input_sha256"):
        spent = Registry().epsilon(doc["input_sha256"])
        total = epsilon_total()
        outputs = [
            {"method": e.get("method"), "epsilon": e.get("epsilon"), "saved": e.get("saved"),
             "this": e.get("release_sha256") == doc["release_sha256"]}
            for e in entries
            if e.get("epsilon")
        ]  # fmt: skip
        ledger = {"spent": spent, "total": total, "outputs": outputs}
        if candidate is not None and entry is None:  # were it published
            after = spent + eps
            ledger["if_published"] = after
            if after > total:
                findings.append((FAIL, (
                    f"published, it would bring the DP outputs of this input to epsilon = "
                    f"{after:g} together (sequential composition), above the input's total "
                    f"of {total:g}"
                )))  # fmt: skip
                steps.append("a smaller epsilon, or fewer DP outputs of this input")
            else:
                findings.append((PASS, (
                    f"published, it would bring the input's DP outputs to epsilon = {after:g} "
                    f"of its total {total:g}"
                )))  # fmt: skip
        elif entry is None:
            findings.append(
                (
                    REVIEW,
                    "the registry does not list this output, so the input's budget cannot be "
                    "checked (was it written with another registry, or as an experiment?)",
                )
            )
        elif spent > total:
            findings.append(
                (
                    FAIL,
                    f"the DP outputs of this input spend epsilon = {spent:g} together "
                    f"(sequential composition), above the input's total of {total:g}",
                )
            )
            steps.append(
                "publish fewer DP outputs of this input, or smaller epsilons (this report "
                "lists them)"
            )
        else:
            findings.append(
                (PASS, f"the input's DP outputs spend epsilon = {spent:g} of its total {total:g}")
            )
    model = _model_doc(path)
    if _not_for_publication(path, model) or doc.get("not_for_publication"):
        findings.append(
            (
                FAIL,
                "the file is an experiment (drawn from the caller's own seed, replayable by "
                "whoever guesses it): the guarantee does not hold for it",
            )
        )
        steps.append("release it again with an int --seed (salted with OS entropy) or none")
    read = _read_from_data(model)
    if method == "dp-histogram":  # its public parameters name them (privlab >= 0.2)
        read = [str(c) for c in params.get("read_from_data") or []]
    if read:
        findings.append(
            (
                REVIEW,
                f"the domains or bounds of {', '.join(read)} were read from the private data, "
                "not declared: epsilon does not cover them (a rare value reveals its record)",
            )
        )
        steps.append(f"declare the domains or bounds of {', '.join(read)} and release it again")
    level, reasons = level_and_reasons(findings)
    next_step = (
        "; ".join(steps)
        if steps
        else "the output may be published under this policy"
        if level == PASS
        else "resolve the points above and report again"
    )
    if method == "dp-histogram":
        utility = _histogram_utility(path, params, original, doc.get("input_sha256"))
    else:
        utility = _model_utility(path, method, config.holdout, held)
    header = {
        "kind": "dp",
        "release": str(path),
        "label": label or path.name,
        "method": method,
        "what": what,
        "parameters": {k: v for k, v in params.items() if not isinstance(v, (list, dict))},
        "release_sha256": doc["release_sha256"],
        "privlab_version": _version(),
        "date": report_date(),
        "min_count": config.min_count,
    }
    verdict = {
        "level": level,
        "reasons": reasons,
        "findings": [{"level": lv, "reason": r} for lv, r in findings],
        "next_step": next_step,
        "thresholds": {"max_epsilon": th.max_epsilon},
    }
    return Report(
        header=header,
        verdict=verdict,
        identity={"judged": False, "why_not_judged": "a DP output publishes no records"},
        attribute={"measured": False, "why": "the DP guarantee bounds every attack"},
        utility=utility,
        diagnostics={"ledger": ledger, "epsilon": eps},
    )
