"""privlab's DP naive Bayes beside diffprivlib's GaussianNB on the Adult train / test split.

Test accuracy (%), mean +- sd over 20 noise draws, at epsilon 0.1 and 1:

* privlab ``DPNaiveBayes`` on the 8 categorical features (domains declared by adult.names),
  and with the 6 numeric features binned (10 bins) over public bounds;
* diffprivlib ``GaussianNB`` (Vaidya et al. 2013) on the one-hot categorical features plus
  the numeric ones, with the same public bounds (one-hot columns bounded by [0, 1]).

Public bounds are the range of each numeric feature over the union of both splits (a fact
about the published census extract, not about one record).  The DP trees and forests are
compared with diffprivlib's random forest by ``privlab reproduce dpforest-adult``.
Run by hand: ``.venv/bin/python benchmarks/bench_dp_adult.py`` (needs ``pip install
'.[bench]'`` for diffprivlib).
"""

from __future__ import annotations

import warnings

import numpy as np

from privlab.data import load_adult
from privlab.learn.dp_naive_bayes import DPNaiveBayes

CAT = ["workclass", "education", "marital-status", "occupation", "relationship", "race", "sex",
       "native-country"]  # fmt: skip
NUM = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
DRAWS = 20


def main() -> None:
    warnings.simplefilter("ignore")
    train, test, union = (load_adult(split=s).to_pandas() for s in ("train", "test", "all"))
    cats = {f: sorted(union[f].unique()) for f in CAT}
    bounds = {f: (float(union[f].min()), float(union[f].max())) for f in NUM}
    classes = ["<=50K", ">50K"]
    ytr, yte = train["salary"].to_numpy(), test["salary"].to_numpy()
    rows = []
    for name, feats in (
        ("privlab NB, 8 categorical", CAT),
        ("privlab NB, + 6 numeric binned", CAT + NUM),
    ):
        for eps in (0.1, 1.0):
            accs = []
            for d in range(DRAWS):
                m = DPNaiveBayes(epsilon=eps, categories={f: cats[f] for f in feats if f in CAT},
                                 bounds={f: bounds[f] for f in feats if f in NUM},
                                 classes=classes, rng=1000 + d)  # fmt: skip
                m.fit(train[feats], ytr)
                accs.append(np.mean(m.predict(test[feats]) == yte))
            rows.append((name, eps, accs))
    from privlab.experiments.dptree import diffprivlib_models

    try:
        if diffprivlib_models() is None:  # restores the sklearn aliases diffprivlib imports
            raise ImportError
        from diffprivlib.models import GaussianNB
    except ImportError:
        print("diffprivlib is not installed (pip install '.[bench]'): no peer rows")
    else:

        def onehot(df):
            cols = [(df[f].to_numpy()[:, None] == np.array(cats[f])[None, :]).astype(float)
                    for f in CAT]  # fmt: skip
            return np.column_stack([*cols, df[NUM].to_numpy(float)])

        xtr, xte = onehot(train), onehot(test)
        n_onehot = xtr.shape[1] - len(NUM)
        lo = np.array([0.0] * n_onehot + [bounds[f][0] for f in NUM])
        hi = np.array([1.0] * n_onehot + [bounds[f][1] for f in NUM])
        for eps in (0.1, 1.0):
            accs = []
            for d in range(DRAWS):
                m = GaussianNB(epsilon=eps, bounds=(lo, hi), random_state=2000 + d)
                m.fit(xtr, ytr)
                accs.append(np.mean(m.predict(xte) == yte))
            rows.append(("diffprivlib GaussianNB, one-hot + numeric", eps, accs))
    print(f"Adult: train {len(train)}, test {len(test)} rows; {DRAWS} noise draws")
    print("| model | epsilon | test accuracy (%) |")
    print("|---|---|---|")
    for name, eps, accs in rows:
        print(
            f"| {name} | {eps:g} | {100 * np.mean(accs):.2f} +- {100 * np.std(accs, ddof=1):.2f} |"
        )


if __name__ == "__main__":
    main()
