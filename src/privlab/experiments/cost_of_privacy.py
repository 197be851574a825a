"""Brickell & Shmatikov (KDD 2008), "The cost of privacy", on Adult.

Setting (as in the paper): Adult, quasi-identifiers age, workclass, education,
marital-status, race, sex, native-country; sensitive attribute occupation.  The training
two thirds of the rows are generalized (optimal full-domain recoding, no suppression) for a
range of k (k-anonymity; also ``k1%=K``: with up to 1% of the records suppressed), l
(distinct l-diversity, k = 2) and t (t-closeness, equal distance, k = 2).  For each release:

* privacy loss: ``A_know`` and ``A_acc`` of the sanitized training table (how much better than
  from the trivially sanitized table an adversary knows / guesses each person's occupation);
* utility: the accuracy, on the held-out third (recoded with the same levels), of a
  classifier predicting the sensitive attribute from the generalized QIs (``U_san``),
  against ``U_base`` (trivial sanitization: QIs and occupation published apart, so the best
  classifier predicts the majority occupation) and ``U_max`` (trained on the original QIs).
  Classifiers: scikit-learn decision tree (the paper used Weka's J48) and categorical naive
  Bayes.

The paper's finding: trivial sanitization gives equivalent utility and better privacy; the
privacy loss of generalization is comparable to or larger than its utility gain.

The neutral-attribute workload (rows with ``workload = "salary"``; seed 001: "sanitization also
destroys correlation between S and neutral attributes"): the same
releases, the classifier now predicting a *neutral* attribute, salary (<=50K / >50K), from the
sensitive attribute plus the generalized QIs (``U_san``), against ``U_max`` (occupation plus
the original QIs) and the two trivial sanitizations, which publish the QIs and the sensitive
attribute in separate tables: salary beside occupation (the classifier sees occupation only,
``u_base_s``) or salary beside the original QIs (it sees the QIs only, ``u_base_q``).  privlab
reads B&S's ``U_base`` as the better of the two (``u_base``), the custodian choosing which
table carries the neutral column.  The privacy columns of these rows are the release's, as for
the occupation rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.naive_bayes import CategoricalNB
from sklearn.preprocessing import OneHotEncoder
from sklearn.tree import DecisionTreeClassifier

from privlab.data.datasets import load_adult
from privlab.data.default_hierarchies import dataset_hierarchies
from privlab.data.table import Table
from privlab.experiments import Context, ExperimentResult, register
from privlab.publish.generalization import generalize

QI = ("age", "workclass", "education", "marital-status", "race", "sex", "native-country")
SENSITIVE = "occupation"
#: The neutral attribute of the second workload (neither a QI nor sensitive).
NEUTRAL = "salary"
PARAMS = (
    [("k", k) for k in (2, 5, 10, 50, 100, 1000)]
    + [("l", l) for l in (2, 3, 4, 5, 6)]
    + [("t", t) for t in (0.3, 0.2, 0.15, 0.1)]
)
QUICK_PARAMS = [("k", 5), ("k", 100), ("l", 3), ("t", 0.2), ("k1%", 10)]
#: k-anonymity with up to 1% of the training records suppressed (parameter ``k1%=K``).
SUPPRESSED_PARAMS = [("k1%", k) for k in (2, 5, 10, 50, 100)]


def recode(table: Table, node: tuple[int, ...]) -> np.ndarray:
    """QI codes of ``table`` at the lattice ``node`` (one column per QI)."""
    hier = dataset_hierarchies("adult")
    cols = []
    for q, lv in zip(QI, node):
        h = hier[q].compile(table.schema[q])
        cols.append(h.maps[lv][table.column(q)])
    return np.column_stack(cols)


def _models(n_levels: list[int]) -> dict:
    return {
        "decision_tree": lambda: DecisionTreeClassifier(min_samples_leaf=10, random_state=0),
        "naive_bayes": lambda: CategoricalNB(min_categories=n_levels, alpha=1.0),
    }


def _fit_score(name: str, n_lv: list[int], xtr, ytr, xte, yte) -> float:
    """Accuracy on the test rows of model ``name`` fitted to categorical codes ``xtr``."""
    m = _models(n_lv)[name]()
    if name == "decision_tree":
        enc = OneHotEncoder(
            categories=[np.arange(s) for s in n_lv], handle_unknown="ignore", sparse_output=True
        ).fit(xtr)
        xtr, xte = enc.transform(xtr), enc.transform(xte)
    m.fit(xtr, ytr)
    return float(np.mean(m.predict(xte) == yte))


def _levels(table: Table, node: tuple[int, ...]) -> list[int]:
    hier = dataset_hierarchies("adult")
    return [hier[q].compile(table.schema[q]).sizes()[lv] for q, lv in zip(QI, node)]


def evaluate_neutral(
    train: Table, test: Table, releases: list[tuple[str, tuple[int, ...], Any, Any]],
    models: tuple[str, ...],
) -> list[dict]:  # fmt: skip
    """The neutral-attribute workload: predict :data:`NEUTRAL` from the sensitive attribute
    plus the QIs at each release's ``node`` (trained on its published records ``keep``).

    ``releases`` holds ``(parameter, node, keep, privacy)``; the rows carry ``u_base_s``
    (occupation alone), ``u_base_q`` (the original QIs alone), ``u_base`` (their maximum),
    ``u_san`` and ``u_max`` (occupation plus the original QIs).
    """
    y_tr, y_te = train.column(NEUTRAL), test.column(NEUTRAL)
    s_tr, s_te = train.column(SENSITIVE)[:, None], test.column(SENSITIVE)[:, None]
    n_s = train.schema[SENSITIVE].size
    zero = (0,) * len(QI)
    x0_tr, x0_te = recode(train, zero), recode(test, zero)
    base_s = {m: _fit_score(m, [n_s], s_tr, y_tr, s_te, y_te) for m in models}
    base_q = {m: _fit_score(m, _levels(train, zero), x0_tr, y_tr, x0_te, y_te) for m in models}
    lv0 = [*_levels(train, zero), n_s]
    full_tr, full_te = np.hstack([x0_tr, s_tr]), np.hstack([x0_te, s_te])
    u_max = {m: _fit_score(m, lv0, full_tr, y_tr, full_te, y_te) for m in models}
    rows = []
    for parameter, node, keep, p in releases:
        xtr = np.hstack([recode(train, node), s_tr])
        xte = np.hstack([recode(test, node), s_te])
        ytr = y_tr
        if keep is not None:
            xtr, ytr = xtr[keep], ytr[keep]
        lv = [*_levels(train, node), n_s]
        for name in models:
            rows.append(
                {
                    "workload": NEUTRAL,
                    "model": name,
                    "parameter": parameter,
                    "a_know": p.a_know,
                    "a_acc": p.a_acc,
                    "u_base": max(base_s[name], base_q[name]),
                    "u_base_s": base_s[name],
                    "u_base_q": base_q[name],
                    "u_san": _fit_score(name, lv, xtr, ytr, xte, y_te),
                    "u_max": u_max[name],
                    "node": list(node),
                    "classes": p.n_classes,
                }
            )
    return rows


def evaluate(
    train: Table,
    test: Table,
    params: list[tuple[str, float]],
    models: tuple[str, ...],
    *,
    neutral: bool = False,
) -> list[dict]:
    y_tr, y_te = train.column(SENSITIVE), test.column(SENSITIVE)
    u_base = float(np.mean(y_te == np.bincount(y_tr).argmax()))

    def accuracy(node, name, keep=None):
        xtr, xte = recode(train, node), recode(test, node)
        ytr = y_tr if keep is None else y_tr[keep]
        xtr = xtr if keep is None else xtr[keep]
        return _fit_score(name, _levels(train, node), xtr, ytr, xte, y_te)

    u_max = {name: accuracy((0,) * len(QI), name) for name in models}
    rows = []
    released = []  # (parameter, node, keep, privacy) for the neutral workload
    for kind, value in params:
        if kind == "k1%":
            kw = {"k": int(value), "suppression": 0.01}
        else:
            kw = {"k": int(value)} if kind == "k" else {"k": 2, kind: value}
        rel = generalize(train, qi=list(QI), sensitive=SENSITIVE, dataset="adult", **kw)
        p = rel.privacy()
        keep = None
        if rel.n_suppressed:
            # Train on the published records only: those in classes of at least k.
            _, inv, cnt = np.unique(
                recode(train, rel.node), axis=0, return_inverse=True, return_counts=True
            )
            keep = cnt[inv.reshape(-1)] >= rel.model.k
            if int(keep.sum()) != rel.n_rows:
                raise RuntimeError("published records do not match the recoded classes")
        released.append((f"{kind}={value:g}", rel.node, keep, p))
        for name in models:
            rows.append(
                {
                    "workload": SENSITIVE,
                    "model": name,
                    "parameter": f"{kind}={value:g}",
                    "a_know": p.a_know,
                    "a_acc": p.a_acc,
                    "u_base": u_base,
                    "u_san": accuracy(rel.node, name, keep),
                    "u_max": u_max[name],
                    "node": list(rel.node),
                    "classes": p.n_classes,
                }
            )
    # The original table (no sanitization) as a reference point.
    orig = generalize(train, qi=list(QI), sensitive=SENSITIVE, dataset="adult", k=1).privacy()
    released.append(("original", (0,) * len(QI), None, orig))
    for name in models:
        rows.append(
            {
                "workload": SENSITIVE,
                "model": name,
                "parameter": "original",
                "a_know": orig.a_know,
                "a_acc": orig.a_acc,
                "u_base": u_base,
                "u_san": u_max[name],
                "u_max": u_max[name],
                "node": [0] * len(QI),
                "classes": orig.n_classes,
            }
        )
    if neutral:
        rows += evaluate_neutral(train, test, released, models)
    return rows


def split(table: Table, rng: np.random.Generator) -> tuple[Table, Table]:
    perm = rng.permutation(table.n_rows)
    cut = 2 * table.n_rows // 3
    return table.take(np.sort(perm[:cut])), table.take(np.sort(perm[cut:]))


@register(
    "cost-of-privacy",
    title="Privacy loss (A_know, A_acc) vs utility gain of generalization on Adult",
    source="Brickell & Shmatikov 2008 (KDD)",
)
def run(ctx: Context) -> ExperimentResult:
    table = load_adult().select([*QI, SENSITIVE, NEUTRAL])
    train, test = split(table, ctx.child_rngs(1)[0])
    params = QUICK_PARAMS if ctx.quick else PARAMS + SUPPRESSED_PARAMS
    rows = evaluate(train, test, params, ("decision_tree", "naive_bayes"), neutral=True)
    plots = _plot([r for r in rows if r["workload"] == SENSITIVE], ctx)
    occ = [r for r in rows if r["workload"] == SENSITIVE]
    san = [r for r in occ if r["parameter"] != "original"]
    neu = [r for r in rows if r["workload"] == NEUTRAL and r["parameter"] != "original"]
    neu_gain = [r["u_san"] - r["u_base"] for r in neu]
    neu_s = [r["u_san"] - r["u_base_s"] for r in neu]
    ref = next(r for r in rows if r["workload"] == NEUTRAL)
    gains = [r["u_san"] - r["u_base"] for r in san]
    losses = [r["a_acc"] for r in san]
    above = sum(r["a_acc"] >= r["u_san"] - r["u_base"] - 1e-12 for r in san)
    notes = (
        f"Utility gain U_san - U_base ranges {min(gains):.3f}..{max(gains):.3f}; adversarial "
        f"accuracy gain A_acc {min(losses):.3f}..{max(losses):.3f} on the same releases; "
        f"A_acc >= utility gain in {above} of {len(san)} (release, classifier) pairs. "
        "The paper's finding (Brickell & Shmatikov 2008): trivial sanitization gives "
        "equivalent utility and better privacy; every point where a classifier gains accuracy "
        "over U_base is a point where the adversary gains about as much (the classifier's task "
        "is the adversary's). "
        f"Neutral workload (salary from occupation + generalized QIs): U_san - U_base ranges "
        f"{min(neu_gain):.3f}..{max(neu_gain):.3f} (U_base the better trivial sanitization: "
        f"occupation alone {ref['u_base_s']:.3f}, the original QIs alone {ref['u_base_q']:.3f}, "
        f"{ref['model']}); over occupation alone U_san gains {min(neu_s):.3f}..{max(neu_s):.3f}; "
        f"U_max (occupation + original QIs) {ref['u_max']:.3f}."
    )
    paper = [
        {
            "workload": SENSITIVE,
            "finding": "trivial sanitization provides equivalent utility and better privacy "
            "than k-anonymity, l-diversity and t-closeness (qualitative; the paper gives no "
            "numbers)",
        },
        {
            "workload": NEUTRAL,
            "finding": "sanitization also destroys the correlation between the sensitive "
            "attribute and neutral attributes (qualitative; seed 001's summary of the paper's "
            "UCI experiments)",
        },
    ]
    return ExperimentResult(experiment=ctx.id, rows=rows, paper=paper, notes=notes, plots=plots)


def _plot(rows: list[dict], ctx: Context) -> tuple[str, ...]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, metric in zip(axes, ("a_know", "a_acc")):
        for name, marker in (("decision_tree", "o"), ("naive_bayes", "s")):
            pts = [r for r in rows if r["model"] == name]
            x = [r[metric] for r in pts]
            y = [r["u_san"] - r["u_base"] for r in pts]
            ax.scatter(x, y, marker=marker, label=name)
            for r, xi, yi in zip(pts, x, y):
                ax.annotate(r["parameter"], (xi, yi), fontsize=6)
        lim = max(max(r[metric] for r in rows), max(r["u_san"] - r["u_base"] for r in rows))
        ax.plot([0, lim], [0, lim], "k:", lw=0.8)
        ax.set_xlabel(f"privacy loss {metric}")
        ax.set_title(f"utility gain vs {metric}")
    axes[0].set_ylabel("utility gain U_san - U_base (accuracy)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(ctx.out / "cost_of_privacy.png", dpi=120)
    plt.close(fig)
    return ("cost_of_privacy.png",)
