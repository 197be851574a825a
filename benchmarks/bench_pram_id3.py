"""Benchmark: ID3 from PRAM data on Adult x 30 (904,860 records, 11 merged variables).

Side by side in one run: privlab's :class:`PramID3Classifier` on the randomized records at
p = 0.3 and at p = 0 (exact ID3), against scikit-learn's ``DecisionTreeClassifier``
(criterion "entropy", no depth limit) on the original codes, and the randomization itself.
Run by hand: ``.venv/bin/python benchmarks/bench_pram_id3.py``.

Where the time goes: the records enter only through their distinct randomized cells (at most
4 * 3^5 * 2^5 = 31,104 of them), so after one ``np.unique`` over the records every node
costs one weighted bincount per candidate over those cells, whatever N is.
"""

from __future__ import annotations

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from _timing import best
from privlab.experiments.id3_fig7 import adult_merged
from privlab.learn.pram_id3 import PramID3Classifier
from privlab.publish.randomization import m_category_matrix, randomize_codes


def main(repeats: int = 3) -> None:
    data, cards, _ = adult_merged()
    records = np.tile(data, (30, 1))
    X, y = records[:, :-1], records[:, -1]
    rng = np.random.default_rng(0)
    mats = [m_category_matrix(k, 0.3) for k in cards]
    t_rand, rand = best(
        lambda: np.column_stack(
            [randomize_codes(records[:, f], mats[f], rng) for f in range(len(cards))]
        ),
        repeats,
    )
    min_count = 0.005 * len(records)
    t_p3, tree = best(
        lambda: PramID3Classifier(min_count=min_count).fit(
            rand[:, :-1], rand[:, -1], matrices=mats[:-1], class_matrix=mats[-1]
        ),
        repeats,
    )
    t_p0, exact = best(lambda: PramID3Classifier().fit(X, y), repeats)
    t_sk, sk = best(
        lambda: DecisionTreeClassifier(criterion="entropy", random_state=0).fit(X, y), repeats
    )
    print(f"Adult x 30: {len(records):,} records, best of {repeats}")
    print(f"  randomize 11 columns (p = 0.3)        {t_rand * 1000:8.1f} ms")
    print(f"  privlab PRAM-ID3, p = 0.3             {t_p3 * 1000:8.1f} ms "
          f"({tree.n_nodes_} nodes, accuracy {(tree.predict(X) == y).mean():.4f})")  # fmt: skip
    print(f"  privlab exact ID3 (p = 0)             {t_p0 * 1000:8.1f} ms "
          f"({exact.n_nodes_} nodes, accuracy {(exact.predict(X) == y).mean():.4f})")  # fmt: skip
    print(f"  scikit-learn tree (entropy, binary)   {t_sk * 1000:8.1f} ms "
          f"({sk.tree_.node_count} nodes, accuracy {sk.score(X, y):.4f})")  # fmt: skip
    print(f"  ratio privlab p = 0.3 / scikit-learn: {t_p3 / t_sk:.2f}")


if __name__ == "__main__":
    main()
