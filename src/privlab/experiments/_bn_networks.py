"""The Bayesian networks of Ma (2006) Ch. 5's experiments, as far as the text gives them.

The figures are not in the text (notes Sec. 5.6, Appendix B), so what they leave open is
privlab's choice, fixed here and documented in each experiment's notes:

* :data:`FIG_5_2` (Exp. 1, Table 5.2): the CPTs are Fig. 5.2's, copied from the text in
  Ma's value-major order.  Ma says "11 nodes over three sites" (A, S, T, L, B, E, D, X, C,
  F, G; L and B ternary).  Structure (an extended ASIA network, the notes' reading):
  A -> T, S -> L, S -> B, {T, L} -> E, {E, B} -> D, E -> X.  C has two binary parents,
  F and G one each; privlab chooses C <- {X, D}, F <- {C}, G <- {F} (every node sits below
  the ASIA core, so C, F and G see randomized parents, as Table 5.2's non-zero sds of G
  require: G and its parent would otherwise both be unrandomized and have sd 0).
  Parent configurations are enumerated with the first listed parent slowest.
  Sites (used by the no-miner protocol): {A, T, S, L, B}, {E, D, X}, {C, F, G}.
* :data:`FIG_5_3` (Exp. 2 and 4): 6 binary nodes, A, B, C at site 1 and D, E, F at
  site 2, D with parents at site 1 (all the text says).  privlab's structure and CPTs:
  A -> B, A -> C, {B, C} -> D, D -> E, {D, E} -> F.
"""

from __future__ import annotations

import numpy as np

from privlab.learn.bayesnet import BayesianNetwork


def _value_major(row: list[float], k: int) -> np.ndarray:
    """Ma's value-major CPT row -> the ``(J, K)`` layout (rows = parent configurations)."""
    return np.asarray(row, dtype=float).reshape(k, -1).T


_FIG_5_2_ROWS = {
    "A": ([], 2, [0.7, 0.3]),
    "S": ([], 2, [0.5, 0.5]),
    "T": (["A"], 2, [0.1, 0.9, 0.9, 0.1]),
    "L": (["S"], 3, [0.3, 0.7, 0.4, 0.15, 0.3, 0.15]),
    "B": (["S"], 3, [0.8, 0.15, 0.1, 0.5, 0.1, 0.35]),
    "E": (["T", "L"], 2, [0.25, 0.8, 0.15, 0.5, 0.3, 0.4, 0.75, 0.2, 0.85, 0.5, 0.7, 0.6]),
    "D": (["E", "B"], 2, [0.7, 0.65, 0.1, 0.4, 0.8, 0.35, 0.3, 0.35, 0.9, 0.6, 0.2, 0.65]),
    "X": (["E"], 2, [0.2, 0.6, 0.8, 0.4]),
    "C": (["X", "D"], 2, [0.9, 0.4, 0.6, 0.25, 0.1, 0.6, 0.4, 0.75]),
    "F": (["C"], 2, [0.25, 0.9, 0.75, 0.1]),
    "G": (["F"], 2, [0.2, 0.4, 0.8, 0.6]),
}
FIG_5_2_ORDER = ("A", "S", "T", "L", "B", "E", "D", "X", "C", "F", "G")

FIG_5_2 = BayesianNetwork(
    nodes=FIG_5_2_ORDER,
    parents={n: tuple(v[0]) for n, v in _FIG_5_2_ROWS.items()},
    domains={n: tuple(range(1, v[1] + 1)) for n, v in _FIG_5_2_ROWS.items()},
    cpts={n: _value_major(v[2], v[1]) for n, v in _FIG_5_2_ROWS.items()},
)
FIG_5_2_SITES = {
    **dict.fromkeys("ATSLB", 1),
    **dict.fromkeys("EDX", 2),
    **dict.fromkeys("CFG", 3),
}

FIG_5_3 = BayesianNetwork(
    nodes=("A", "B", "C", "D", "E", "F"),
    parents={"B": ("A",), "C": ("A",), "D": ("B", "C"), "E": ("D",), "F": ("D", "E")},
    domains=dict.fromkeys("ABCDEF", (1, 2)),
    cpts={
        "A": [[0.6, 0.4]],
        "B": [[0.7, 0.3], [0.2, 0.8]],
        "C": [[0.8, 0.2], [0.3, 0.7]],
        "D": [[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.15, 0.85]],
        "E": [[0.75, 0.25], [0.2, 0.8]],
        "F": [[0.85, 0.15], [0.5, 0.5], [0.4, 0.6], [0.1, 0.9]],
    },
)
FIG_5_3_SITES = {**dict.fromkeys("ABC", 1), **dict.fromkeys("DEF", 2)}
