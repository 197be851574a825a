"""pocket-fig6.1 and pocket-fig6.2: a linear classifier learned from PRAM data, the
weighted Pocket algorithm against the plain pocket on the randomized rows (Ma 2006, Sec. 6.3).

Both train on randomized records and test on the original ones; 5 runs per p; the thesis
plots the mean and mean - sd (numbers only in the plots).  Finding: the weighted (modified)
pocket is at least as accurate as the plain one.

* **Lenses (Fig. 6.1)**: 6,000 records drawn from Table 6.1's independent marginals (age
  0.5/0.3/0.2, spectacle 0.9/0.1, astigmatic 0.2/0.8, tear rate 0.2/0.8), labelled from the
  bundled UCI Lenses table (hard and soft lenses against none), features the raw integer
  codes 1..K (the notes: the best separator on them reaches about 0.984; the majority class
  0.739).  Age randomized "ternary symmetric with p", read as the 3-category M-category
  scheme (p/2 to each other value); the other three binary symmetric with p; the class is
  not randomized (Table 6.2 lists the four features only).  p = 0 .. 0.5: at 0.5 the binary
  matrices are singular, which EM, unlike the moment estimate, accepts.
* **Iris (Fig. 6.2)**: scikit-learn's Iris x 100 (15,000 records) plus U[-0.2, 0.2] noise on
  every feature, each feature discretized by MGAS (the thesis gives no parameters: privlab
  takes min_records = 10% of the records and granularity = 0.3 cm, 4 to 7 intervals per
  feature) and replaced by its interval mean, M-category PRAM with p = 0.1 .. 0.6 (at most
  (K-1)/K of the feature with the fewest intervals), setosa and versicolor against
  virginica.  Finding: "almost as good as the weight vector learned from the original data
  even with large randomization".

The pocket: 20,000 draws, learning rate 1, ratchet on (:mod:`privlab.learn.pram_pocket`).
"""

from __future__ import annotations

import numpy as np

from privlab.experiments import Context, ExperimentResult, register
from privlab.learn.pram_pocket import PramPocketClassifier
from privlab.publish.randomization import (
    binary_symmetric_matrix,
    m_category_matrix,
    randomize_codes,
)

LENSES_MARGINALS = ((0.5, 0.3, 0.2), (0.9, 0.1), (0.2, 0.8), (0.2, 0.8))
LENSES_PS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.45, 0.5)
IRIS_PS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
RUNS = 5
NOTES_CEILING = 0.984
NOTES_MAJORITY = 0.739


def lenses_labels() -> np.ndarray:
    """The UCI Lenses label of every (age, spectacle, astigmatic, tear) cell, codes in UCI
    order (young, pre-presbyopic, presbyopic; myope, hypermetrope; no, yes; reduced,
    normal): 1 for hard or soft lenses, 0 for none."""
    from privlab.data.datasets import load_dataset

    t = load_dataset("lenses")
    order = {
        "age": ["young", "pre-presbyopic", "presbyopic"],
        "spectacle-prescription": ["myope", "hypermetrope"],
        "astigmatic": ["no", "yes"],
        "tear-production-rate": ["reduced", "normal"],
    }
    codes = np.column_stack(
        [[order[c].index(str(v)) for v in t.decode(c)] for c in order]
    )  # fmt: skip
    labels = np.full((3, 2, 2, 2), -1)
    labels[tuple(codes.T)] = [0 if str(v) == "none" else 1 for v in t.decode("class")]
    if (labels < 0).any():
        raise RuntimeError("the bundled Lenses table does not cover the 24 cells")
    return labels


def _lenses_data(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    X = np.column_stack([rng.choice(len(p), size=n, p=p) for p in LENSES_MARGINALS])
    return X, lenses_labels()[tuple(X.T)]


def _runs(X, y, mats, values, runs, rngs, p) -> dict:
    Xr = X if p == 0 else np.column_stack(
        [randomize_codes(X[:, f], mats[f], rngs[0]) for f in range(X.shape[1])]
    )  # fmt: skip
    out = {}
    for weighted in (True, False):
        accs = []
        for r in range(runs):
            Xr_r = Xr if r == 0 or p == 0 else np.column_stack(
                [randomize_codes(X[:, f], mats[f], rngs[r]) for f in range(X.shape[1])]
            )  # fmt: skip
            clf = PramPocketClassifier(weighted=weighted, random_state=rngs[r].integers(2**32))
            clf.fit(Xr_r, y, matrices=mats, values=values)
            accs.append(float((clf.predict(X) == y).mean()))
        a = np.asarray(accs)
        key = "weighted" if weighted else "plain"
        sd = float(a.std(ddof=1)) if a.size > 1 else 0.0
        out[f"acc_{key}"] = round(float(a.mean()), 4)
        out[f"acc_{key}_minus_sd"] = round(float(a.mean()) - sd, 4)
    return out


@register(
    "pocket-fig6.1",
    title="Weighted vs plain Pocket on PRAM-randomized Lenses (6,000 samples of Table 6.1)",
    source="Ma 2006, Sec. 6.3, Fig. 6.1",
)
def run_lenses(ctx: Context) -> ExperimentResult:
    rng, *rngs = ctx.child_rngs(1 + RUNS)
    n = 2000 if ctx.quick else 6000
    runs = 2 if ctx.quick else RUNS
    X, y = _lenses_data(n, rng)
    values = [np.arange(1, k + 1, dtype=float) for k in (3, 2, 2, 2)]  # raw integer codes
    rows = []
    for p in (0.0, 0.2, 0.4, 0.5) if ctx.quick else LENSES_PS:
        mats = [m_category_matrix(3, p), *(binary_symmetric_matrix(p) for _ in range(3))]
        rows.append({"p": p, "records": n, "majority": round(float(max(y.mean(), 1 - y.mean())), 4),
                     **_runs(X, y, mats, values, runs, rngs, p)})  # fmt: skip
    paper = [{"p": 0.0, "ceiling": NOTES_CEILING, "majority": NOTES_MAJORITY,
              "finding": "weighted >= plain; accuracy reasonable up to p = 0.5"}]  # fmt: skip
    wins = sum(r["acc_weighted"] >= r["acc_plain"] - 0.005 for r in rows)
    return ExperimentResult(
        experiment=ctx.id,
        rows=rows,
        paper=paper,
        notes=f"privlab: the weighted pocket is at least as accurate as the plain one (within "
        f"0.005) at {wins} of {len(rows)} values of p; pocket on the original records "
        f"{rows[0]['acc_weighted']:.3f} (the notes' best separator: {NOTES_CEILING}).",
    )


def _iris(rng) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    from sklearn.datasets import load_iris

    from privlab.publish.mgas import mgas_1d

    iris = load_iris()
    X = np.tile(iris.data, (100, 1)) + rng.uniform(-0.2, 0.2, size=(15000, 4))
    y = (np.tile(iris.target, 100) == 2).astype(np.int64)  # virginica against the others
    codes, values = [], []
    for f in range(4):
        g = mgas_1d(X[:, f], min_records=1500, granularity=0.3)
        codes.append(g.labels)
        values.append(np.asarray(g.means, dtype=float))
    return np.column_stack(codes), y, values


@register(
    "pocket-fig6.2",
    title="Weighted vs plain Pocket on PRAM-randomized Iris x 100 after MGAS",
    source="Ma 2006, Sec. 6.3, Fig. 6.2",
)
def run_iris(ctx: Context) -> ExperimentResult:
    rng, *rngs = ctx.child_rngs(1 + RUNS)
    runs = 2 if ctx.quick else RUNS
    X, y, values = _iris(rng)
    sizes = [v.size for v in values]
    rows = []
    for p in (0.0, 0.3, 0.6) if ctx.quick else IRIS_PS:
        if p > 0 and p >= (min(sizes) - 1) / min(sizes):
            continue
        mats = [m_category_matrix(k, p) for k in sizes]
        rows.append({"p": p, "records": len(y), "intervals": "/".join(map(str, sizes)),
                     **_runs(X, y, mats, values, runs, rngs, p)})  # fmt: skip
    paper = [{"finding": "weighted close to the accuracy on the original data even at large p"}]
    return ExperimentResult(
        experiment=ctx.id,
        rows=rows,
        paper=paper,
        notes=f"privlab: on the original (discretized) records the pocket reaches "
        f"{rows[0]['acc_weighted']:.3f}; at p = {rows[-1]['p']} the weighted pocket "
        f"{rows[-1]['acc_weighted']:.3f}, the plain one {rows[-1]['acc_plain']:.3f}.",
    )
