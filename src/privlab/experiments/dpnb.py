"""DP Naive Bayes with post-processed noisy histograms (Mothali 2011, Ch. 8, Tables 8.2-8.9).

Table 8.1's protocol: ``repetitions`` times, split the data into k folds; for every fold build
the training query vector (Sec. 8.2), then ``draws`` times add Laplace noise of scale
``F / epsilon`` (Sec. 8.3), post-process it with every estimator (clipping at 0, steps 3 and
7), extract the Naive-Bayes parameters (step 8) and classify the test fold.  The accuracy of a
draw is measured on its test fold; ``acc_*`` is the mean over repetitions, folds and draws,
and ``eb_gt_ml`` / ``eb_eq_ml`` / ``eb_lt_ml`` the percentage of (repetition, fold, draw)
triples where EB's accuracy is above / equal to / below ML's on the same noise.

All draws of a fold are processed at once: the noise is a ``(draws, p)`` array, the
estimators run on its rows, and the test fold, compressed to its distinct feature vectors,
is scored by one matrix product per class (see
:func:`privlab.learn.dp_naive_bayes.batch_correct`).  Nothing is refitted in a Python loop.

Readings (the thesis does not say): folds are shuffled ``KFold`` splits; parameters are
smoothed with ``alpha = 1`` (Laplace smoothing -- without smoothing the Nursery class
``recommend``, 2 records, makes almost every probability 0 and accuracy collapses to ~35%,
far from Table 8.6); the class prior is the mean of a class's per-feature histogram totals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

from privlab._progress import track
from privlab.data.datasets import load_adult, load_nursery
from privlab.dp.estimators import ESTIMATORS, get_estimator
from privlab.experiments import Context, ExperimentResult, register
from privlab.learn.dp_naive_bayes import (
    batch_correct,
    compress,
    count_query,
    log_parameters,
    nb_layout,
)

ADULT_FEATURES = (
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
)
ADULT_EPSILONS = (0.01, 0.02, 0.05, 0.1, 0.5, 1.0)
NURSERY_EPSILONS = (0.1, 0.25, 0.5, 0.75, 1.0)

# Seed 000, Table 8.2 (acc_ml, acc_eb, acc_js per folds) and Tables 8.3-8.5 (dominance).
_T82 = {
    5: [(74.63, 75.84, 74.65), (76.87, 77.44, 76.87), (78.30, 78.36, 78.30),
        (78.67, 78.72, 78.67), (79.03, 79.05, 79.04), (79.34, 79.35, 79.34)],
    10: [(75.22, 76.43, 75.22), (77.04, 77.51, 77.05), (77.93, 78.23, 77.95),
         (78.57, 78.62, 78.58), (79.04, 79.1, 79.07), (79.24, 79.25, 79.24)],
    20: [(75.11, 76.2, 75.12), (77.59, 78.0, 77.6), (78.35, 78.72, 78.36),
         (79.15, 79.2, 79.15), (79.44, 79.45, 79.44), (79.75, 79.76, 79.75)],
}  # fmt: skip
_T83_85 = {
    5: [(69.6, 0.2, 30.2), (68.8, 0.2, 31.0), (56.6, 2.2, 41.2), (70.8, 4.8, 24.4),
        (41.4, 37.2, 21.4), (18.6, 72.2, 9.2)],
    10: [(71.4, 0.6, 28.0), (66.9, 1.0, 32.1), (61.4, 2.5, 36.1), (66.1, 7.2, 26.7),
         (26.4, 59.1, 14.5), (10.4, 85.4, 4.2)],
    20: [(71.2, 0.95, 27.85), (63.1, 2.2, 34.7), (57.8, 5.7, 36.5), (58.7, 13.5, 27.8),
         (18.0, 73.7, 8.3), (5.1, 92.0, 2.9)],
}  # fmt: skip
# Seed 000, Table 8.6 and Tables 8.7-8.9 (their first row is printed as epsilon 0.01; it is
# the 0.1 row of the experiment).
_T86 = {
    5: [(87.76, 87.87, 87.76), (89.69, 89.88, 89.80), (90.07, 90.08, 90.07),
        (90.13, 90.14, 90.13), (90.16, 90.16, 90.16)],
    10: [(87.91, 87.98, 87.92), (89.49, 89.53, 89.49), (89.76, 89.77, 89.76),
         (89.79, 89.8, 89.79), (89.8, 89.8, 89.8)],
    20: [(89.45, 88.51, 88.45), (89.95, 89.96, 89.95), (90.24, 90.25, 90.24),
         (90.30, 90.31, 90.30), (90.34, 90.34, 90.34)],
}  # fmt: skip
_T87_89 = {
    5: [(65.9, 6.2, 27.9), (36.7, 27.2, 36.1), (17.1, 65.3, 17.6), (8.6, 83.4, 8.0),
        (5.1, 90.2, 4.7)],
    10: [(54.3, 13.1, 32.6), (24.7, 48.4, 26.9), (8.8, 82.8, 8.4), (3.8, 92.8, 3.4),
         (2.0, 96.1, 1.9)],
    20: [(46.2, 23.1, 30.7), (15.5, 69.4, 15.1), (4.5, 91.5, 4.0), (1.9, 96.3, 1.8),
         (1.2, 97.9, 0.9)],
}  # fmt: skip


def _paper_rows(epsilons, accs, dominance) -> list[dict]:
    rows = []
    for folds in (5, 10, 20):
        for e, (ml, eb, js), (gt, eq, lt) in zip(epsilons, accs[folds], dominance[folds]):
            rows.append(
                {"folds": folds, "epsilon": e, "acc_ml": ml, "acc_eb": eb, "acc_js": js,
                 "eb_gt_ml": gt, "eb_eq_ml": eq, "eb_lt_ml": lt}
            )  # fmt: skip
    return rows


@dataclass(frozen=True)
class CVData:
    """Integer-coded features, class codes and domain sizes of a classification task."""

    codes: np.ndarray
    y: np.ndarray
    sizes: tuple[int, ...]
    n_classes: int


def adult_data() -> CVData:
    t = load_adult()
    return CVData(
        t.columns(ADULT_FEATURES).astype(np.int64),
        t.column("salary").astype(np.int64),
        tuple(t.schema[c].size for c in ADULT_FEATURES),
        t.schema["salary"].size,
    )


def nursery_data() -> CVData:
    t = load_nursery()
    feats = [n for n in t.names if n != "class"]
    return CVData(
        t.columns(feats).astype(np.int64),
        t.column("class").astype(np.int64),
        tuple(t.schema[c].size for c in feats),
        t.schema["class"].size,
    )


def fold_accuracies(
    data: CVData,
    train: np.ndarray,
    test: np.ndarray,
    epsilons: Sequence[float],
    draws: int,
    estimators: Sequence[str],
    rng: np.random.Generator,
    alpha: float = 1.0,
) -> dict[float, dict[str, np.ndarray]]:
    """Accuracy (fraction) of ``draws`` noisy models per epsilon and estimator on one fold.

    The same ``(draws, p)`` Laplace noise is post-processed by every estimator.
    """
    layout = nb_layout(data.sizes, data.n_classes)
    q = count_query(data.codes[train], data.y[train], data.sizes, data.n_classes)
    patterns, pcounts = compress(data.codes[test], data.y[test], data.n_classes)
    offsets = layout.offsets
    n_test = len(test)
    out: dict[float, dict[str, np.ndarray]] = {}
    for eps in epsilons:
        b = len(data.sizes) / eps
        noisy = q + rng.laplace(0.0, b, size=(draws, q.size))
        out[eps] = {}
        for name in estimators:
            est = get_estimator(name)(noisy, b, clip=True, layout=layout)
            log_prior, log_w = log_parameters(est, layout, alpha)
            out[eps][name] = batch_correct(log_prior, log_w, patterns, pcounts, offsets) / n_test
    return out


def run_cv(
    data: CVData,
    *,
    folds: int,
    epsilons: Sequence[float],
    repetitions: int,
    draws: int,
    estimators: Sequence[str],
    rng: np.random.Generator,
    progress: bool = False,
    label: str = "",
) -> list[dict]:
    """Rows ``folds, epsilon, acc_<name>..., eb_gt_ml, eb_eq_ml, eb_lt_ml`` (percent)."""
    acc: dict[float, dict[str, list[np.ndarray]]] = {
        e: {n: [] for n in estimators} for e in epsilons
    }
    reps = rng.spawn(repetitions)
    for r in track(range(repetitions), description=f"{label} {folds}-fold", enabled=progress):
        g = reps[r]
        kf = KFold(n_splits=folds, shuffle=True, random_state=int(g.integers(2**31)))
        for train, test in kf.split(data.codes):
            res = fold_accuracies(data, train, test, epsilons, draws, estimators, g)
            for e in epsilons:
                for n in estimators:
                    acc[e][n].append(res[e][n])
    rows = []
    for e in epsilons:
        a = {n: np.concatenate(acc[e][n]) for n in estimators}
        row: dict = {"folds": folds, "epsilon": e}
        for n in estimators:
            row[f"acc_{n}"] = round(100 * float(a[n].mean()), 3)
        if "eb" in a and "ml" in a:
            row["eb_gt_ml"] = round(100 * float(np.mean(a["eb"] > a["ml"])), 2)
            row["eb_eq_ml"] = round(100 * float(np.mean(a["eb"] == a["ml"])), 2)
            row["eb_lt_ml"] = round(100 * float(np.mean(a["eb"] < a["ml"])), 2)
        rows.append(row)
    return rows


def _plot(rows: list[dict], estimators: Sequence[str], path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    schemes = sorted({r["folds"] for r in rows})
    fig, axes = plt.subplots(1, len(schemes), figsize=(4.5 * len(schemes), 3.6), squeeze=False)
    for ax, k in zip(axes[0], schemes):
        rs = [r for r in rows if r["folds"] == k]
        x = np.log([r["epsilon"] for r in rs])
        for n in estimators:
            ax.plot(x, [r[f"acc_{n}"] for r in rs], marker="o", label=n)
        ax.set_xlabel("log(epsilon)")
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"{title}, {k}-fold CV")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _run(ctx: Context, data: CVData, epsilons, paper, name: str, title: str) -> ExperimentResult:
    estimators = list(ESTIMATORS)
    schemes = (5,) if ctx.quick else (5, 10, 20)
    repetitions = 2 if ctx.quick else 20
    draws = 500
    rows: list[dict] = []
    # one BLAS thread: the products are small and many, and threads only contend
    with threadpool_limits(1):
        for k, g in zip(schemes, ctx.child_rngs(len(schemes))):
            rows += run_cv(
                data,
                folds=k,
                epsilons=epsilons,
                repetitions=repetitions,
                draws=draws,
                estimators=estimators,
                rng=g,
                progress=ctx.progress,
                label=name,
            )
    plot = f"{name}.png"
    _plot(rows, estimators, ctx.out / plot, title)
    notes = (
        f"{title}: {repetitions} repetitions x {draws} Laplace noise draws per fold, folds "
        f"{', '.join(map(str, schemes))}; query vector length "
        f"{data.n_classes * sum(data.sizes)}, sensitivity {len(data.sizes)}. "
        "acc_* = mean test-fold accuracy (%); eb_*_ml = % of (repetition, fold, draw) with EB "
        "above / equal to / below ML on the same noise. Estimators: ml, eb (Eq. 7.13), js "
        "(variance 2b^2), posterior (Eq. 7.8, alpha by Eq. 7.9), consistent (shared class "
        "totals + non-negativity). Parameters with Laplace smoothing alpha = 1; prior = mean "
        "per-feature class total."
    )
    return ExperimentResult(ctx.id, rows, paper=paper, notes=notes, plots=(plot,))


@register(
    "dpnb-adult",
    title="DP Naive Bayes on Adult: ML vs empirical Bayes vs James-Stein",
    source="Mothali 2011, Tables 8.2-8.5, Figs 8.1-8.3",
)
def run_adult(ctx: Context) -> ExperimentResult:
    paper = _paper_rows(ADULT_EPSILONS, _T82, _T83_85)
    res = _run(ctx, adult_data(), ADULT_EPSILONS, paper, "dpnb-adult", "Adult")
    notes = res.notes + (
        " privlab's Adult has 98 feature values (query length 196); the thesis reports 102."
    )
    return ExperimentResult(res.experiment, res.rows, res.paper, notes, res.plots)


@register(
    "dpnb-nursery",
    title="DP Naive Bayes on Nursery: ML vs empirical Bayes vs James-Stein",
    source="Mothali 2011, Tables 8.6-8.9",
)
def run_nursery(ctx: Context) -> ExperimentResult:
    paper = _paper_rows(NURSERY_EPSILONS, _T86, _T87_89)
    res = _run(ctx, nursery_data(), NURSERY_EPSILONS, paper, "dpnb-nursery", "Nursery")
    notes = res.notes + (
        " The class is Nursery's 5-valued class (the thesis calls it 'health'; its 27 x 5 = "
        "135 query vector shows it is the class). Tables 8.7-8.9 print their first row as "
        "epsilon 0.01: it is the 0.1 row. Table 8.6, 20-fold, epsilon 0.1 prints acc_ml 89.45 "
        "above acc_eb 88.51, likely a typo for 88.45."
    )
    return ExperimentResult(res.experiment, res.rows, res.paper, notes, res.plots)
