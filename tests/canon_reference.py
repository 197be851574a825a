"""Brute-force k-anonymity, l-diversity, t-closeness and delta-disclosure of a published table.

The independent oracle of the generalization and release tests: written from the papers'
definitions in plain Python (dictionaries of rows, no numpy, no pandas groupby, nothing of
privlab), on a table given as a list of records.  It replaces pyCANON, whose releases pin
numpy, pandas and typer to old versions (pyCANON 1.3.6: ``numpy==2.0.2``, ``pandas==2.3.3``),
which would keep the whole suite off what a user's ``pip install privlab`` resolves.

Definitions:
- k-anonymity (Sweeney 2002): the size of the smallest equivalence class, a class being the
  rows with one combination of the quasi-identifier values.
- distinct l-diversity (Machanavajjhala et al. 2007, Def. 4.1 as usually read): the fewest
  distinct sensitive values in a class.
- entropy l-diversity (ibid., Def. 4.2): ``min over classes of exp(H(S | class))``, natural
  logarithms.
- t-closeness (Li, Li & Venkatasubramanian 2007, Sec. 4.2): the largest Earth Mover's Distance
  between a class's sensitive distribution and the table's. Equal ground distance: half the L1
  distance. Ordered distance over the table's m sorted values:
  ``1/(m-1) * sum_i |sum_{j<=i} (p_j - q_j)|``.
- delta-disclosure (Brickell & Shmatikov 2008, Def. 4): the largest ``|ln(p(s|class)/p(s))|``
  over classes and the table's values; a value absent from a class gives ``inf``.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any


def classes(rows: Sequence[Sequence[Any]], qi: Sequence[int]) -> dict[tuple, list[int]]:
    """Row indices of each equivalence class (rows alike on the columns ``qi``)."""
    out: dict[tuple, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        out[tuple(_key(row[j]) for j in qi)].append(i)
    return dict(out)


def _key(v: Any) -> Any:
    """Missing values (None, NaN) form one class, as a GROUP BY with nulls kept does."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ("<missing>",)
    return v


def k_anonymity(rows, qi) -> int:
    return min(len(ix) for ix in classes(rows, qi).values())


def _class_counts(rows, qi, s) -> list[Counter]:
    return [Counter(rows[i][s] for i in ix) for ix in classes(rows, qi).values()]


def distinct_l(rows, qi, s) -> int:
    return min(len(c) for c in _class_counts(rows, qi, s))


def entropy_l(rows, qi, s) -> float:
    best = math.inf
    for c in _class_counts(rows, qi, s):
        n = sum(c.values())
        h = -sum(v / n * math.log(v / n) for v in c.values())
        best = min(best, math.exp(h))
    return best


def t_closeness(rows, qi, s, *, ordered: bool) -> float:
    table = Counter(r[s] for r in rows)
    n = len(rows)
    values = sorted(table) if ordered else list(table)
    worst = 0.0
    for c in _class_counts(rows, qi, s):
        nc = sum(c.values())
        diff = [c.get(v, 0) / nc - table[v] / n for v in values]
        if ordered:
            if len(values) == 1:
                emd = 0.0
            else:
                acc, total = 0.0, 0.0
                for d in diff:
                    acc += d
                    total += abs(acc)
                emd = total / (len(values) - 1)
        else:
            emd = 0.5 * sum(abs(d) for d in diff)
        worst = max(worst, emd)
    return worst


def delta_disclosure(rows, qi, s) -> float:
    table = Counter(r[s] for r in rows)
    n = len(rows)
    worst = 0.0
    for c in _class_counts(rows, qi, s):
        nc = sum(c.values())
        for v, m in table.items():
            share = c.get(v, 0) / nc
            if share == 0:
                return math.inf
            worst = max(worst, abs(math.log(share / (m / n))))
    return worst


def records(frame, columns: Sequence[str]) -> tuple[list[tuple], list[int]]:
    """A DataFrame as a list of plain-Python records, and the positions of ``columns``."""
    names = list(frame.columns)
    data = [frame[c].tolist() for c in names]
    return list(zip(*data)), [names.index(c) for c in columns]
