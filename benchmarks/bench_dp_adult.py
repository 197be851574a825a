"""privlab's DP naive Bayes beside diffprivlib's GaussianNB on the Adult train / test split.

Test accuracy (%), mean +- sd over 20 noise draws, at epsilon 0.1 and 1, and without noise:

* privlab ``DPNaiveBayes`` on the 8 categorical features (domains documented by adult.names),
  and with the 6 numeric features binned into 5, 10 (the default) or 20 bins over their
  public bounds;
* the alternative for numeric features, a Gaussian likelihood per class (Vaidya, Shafiq, Basu
  & Hong 2013): the categorical part is privlab's DP naive Bayes with 40% of epsilon; the
  other 60% buys noisy per-class sums and sums of squares of each numeric feature scaled to
  [0, 1] by its public bounds (Laplace, L1 sensitivity 2 * 6 = 12: one record moves one sum
  and one sum of squares of each feature by at most 1), with a variance floor;
* diffprivlib ``GaussianNB`` on the one-hot categorical features plus the numeric ones, with
  the same public bounds (one-hot columns bounded by [0, 1]).

Public bounds are ``privlab.data.datasets.ADULT_PUBLIC_BOUNDS`` (the extraction rule of
adult.names and the census top codes, not the data's range).  The DP trees and forests are
compared with diffprivlib's random forest by ``privlab reproduce dpforest-adult``.
Run by hand: ``.venv/bin/python benchmarks/bench_dp_adult.py`` (needs ``pip install
'.[bench]'`` for diffprivlib).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.special import logsumexp

from privlab.data import load_adult
from privlab.data.datasets import ADULT_PUBLIC_BOUNDS, adult_documented_domains
from privlab.dp.mechanisms import Laplace
from privlab.learn.dp_naive_bayes import DPNaiveBayes

CAT = ["workclass", "education", "marital-status", "occupation", "relationship", "race", "sex",
       "native-country"]  # fmt: skip
NUM = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
CLASSES = ["<=50K", ">50K"]
DRAWS = 20
EPSILONS = (0.1, 1.0, math.inf)


def gaussian_nb_accuracy(train, test, cats, eps: float, seed: int, floor: float) -> float:
    """The Gaussian alternative: categorical DP NB (0.4 eps) + noisy Gaussian moments (0.6)."""
    nb = DPNaiveBayes(epsilon=0.4 * eps, categories={f: cats[f] for f in CAT}, classes=CLASSES,
                      rng=seed)  # fmt: skip
    nb.fit(train[CAT], train["salary"].to_numpy())
    lo = np.array([ADULT_PUBLIC_BOUNDS[f][0] for f in NUM])
    hi = np.array([ADULT_PUBLIC_BOUNDS[f][1] for f in NUM])

    def scaled(df):
        return np.clip((df[NUM].to_numpy(float) - lo) / (hi - lo), 0.0, 1.0)

    x, y = scaled(train), train["salary"].to_numpy()
    sums = np.stack([np.concatenate([x[y == c].sum(0), (x[y == c] ** 2).sum(0)]) for c in CLASSES])
    lap = Laplace(0.6 * eps, sensitivity=2.0 * len(NUM))
    noisy = lap.randomize(sums, rng=seed + 7) if math.isfinite(eps) else sums
    n_c = np.exp(nb.class_log_prior_) * len(train)  # the NB's own (noisy) class sizes
    mean = np.clip(noisy[:, : len(NUM)] / n_c[:, None], 0.0, 1.0)
    var = np.maximum(noisy[:, len(NUM) :] / n_c[:, None] - mean**2, floor)
    xt = scaled(test)
    jll = nb.predict_joint_log_proba(test[CAT])
    for c in range(len(CLASSES)):
        jll[:, c] += (-0.5 * (np.log(2 * np.pi * var[c]) + (xt - mean[c]) ** 2 / var[c])).sum(1)
    pred = np.asarray(CLASSES)[np.argmax(jll - logsumexp(jll, axis=1, keepdims=True), axis=1)]
    return float(np.mean(pred == test["salary"].to_numpy()))


def main() -> None:
    warnings.simplefilter("ignore")
    train, test = (load_adult(split=s).to_pandas() for s in ("train", "test"))
    documented = adult_documented_domains()
    cats = {f: sorted(documented[f]) for f in CAT}
    ytr, yte = train["salary"].to_numpy(), test["salary"].to_numpy()
    rows = []
    configs = [("privlab NB, 8 categorical", CAT, 10)]
    configs += [(f"privlab NB, + 6 numeric, {b} bins", CAT + NUM, b) for b in (5, 10, 20)]
    for name, feats, bins in configs:
        for eps in EPSILONS:
            accs = []
            for d in range(DRAWS if math.isfinite(eps) else 1):
                m = DPNaiveBayes(epsilon=eps, categories={f: cats[f] for f in feats if f in CAT},
                                 bounds={f: ADULT_PUBLIC_BOUNDS[f] for f in feats if f in NUM},
                                 bins=bins, classes=CLASSES, rng=1000 + d)  # fmt: skip
                m.fit(train[feats], ytr)
                accs.append(np.mean(m.predict(test[feats]) == yte))
            rows.append((name, eps, accs))
    for floor in (1e-4, 1e-2):
        for eps in EPSILONS:
            accs = [gaussian_nb_accuracy(train, test, cats, eps, 3000 + d, floor)
                    for d in range(DRAWS if math.isfinite(eps) else 1)]  # fmt: skip
            rows.append((f"privlab NB + 6 numeric, Gaussian, variance floor {floor:g}", eps, accs))
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
        lo = np.array([0.0] * n_onehot + [ADULT_PUBLIC_BOUNDS[f][0] for f in NUM])
        hi = np.array([1.0] * n_onehot + [ADULT_PUBLIC_BOUNDS[f][1] for f in NUM])
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
        sd = f" +- {100 * np.std(accs, ddof=1):.2f}" if len(accs) > 1 else ""
        print(f"| {name} | {eps:g} | {100 * np.mean(accs):.2f}{sd} |")


if __name__ == "__main__":
    main()
