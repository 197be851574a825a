"""ARX's golden optima on its own Adult benchmark (issue 21).

The five cases of ARX's test suite (``TestAnonymizationKAnonymity`` cases 0-3 and
``TestAnonymizationLDiversity`` case 0, https://github.com/arx-deidentifier/arx): ARX's copy of
UCI Adult and its hierarchies (vendored in ``tests/data/arx/``, Apache-2.0, see
DATA_LICENSES.md), every attribute a quasi-identifier (but the sensitive ``occupation`` of the
l-diversity case), non-uniform entropy as ARX's precomputed metric
(``Metric.createPrecomputedEntropyMetric(0.1, monotonic)``).  ARX's node (levels in the
column order of ``adult.csv``) and loss are the oracle: privlab must return the same node and,
with ARX's suppression accounting, the same loss.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privlab.data import Table
from privlab.data.hierarchy import read_hierarchy
from privlab.publish.generalization import generalize
from privlab.publish.lattice import Lattice
from privlab.publish.models import PrivacyModel

ARX = Path(__file__).parent / "data" / "arx"

# (ARX test, k, entropy l, suppression limit, ARX metric variant, sensitive, node, loss)
CASES = [
    ("k-anonymity 0", 5, None, 0.04, "arx-monotonic", None,
     (1, 0, 1, 1, 3, 2, 2, 0, 1), 255559.85455731067),
    ("k-anonymity 1", 100, None, 0.04, "arx-monotonic", None,
     (1, 1, 1, 1, 3, 2, 2, 1, 1), 379417.3460570988),
    ("k-anonymity 2", 5, None, 0.0, "arx-monotonic", None,
     (1, 2, 1, 1, 3, 2, 2, 1, 1), 407289.5388925293),
    ("k-anonymity 3", 100, None, 0.0, "arx-monotonic", None,
     (0, 4, 1, 1, 3, 2, 2, 1, 1), 453196.8932458743),
    ("l-diversity 0", 1, 5.0, 0.04, "arx", "occupation",
     (1, 0, 1, 1, 2, 2, 2, 1), 228878.2039109517),
]  # fmt: skip


@pytest.fixture(scope="module")
def arx_adult() -> pd.DataFrame:
    return pd.read_csv(ARX / "adult.csv.gz", sep=";", dtype=str)


def _hierarchies(names):
    return {q: read_hierarchy(ARX / f"adult_hierarchy_{q}.csv", q) for q in names}


def _run(df, k, l_, supp, accounting, sensitive):
    qi = [c for c in df.columns if c != sensitive]
    return generalize(
        df,
        qi=qi,
        sensitive=sensitive,
        keep=[],
        hierarchies=_hierarchies(qi),
        k=k,
        l=l_,
        l_variant="entropy",
        suppression=supp,
        objective="entropy",
        accounting=accounting,
    )


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_arx_golden_node_and_loss(arx_adult, case):
    _, k, l_, supp, accounting, sensitive, node, loss = case
    assert len(arx_adult) == 30162
    rel = _run(arx_adult, k, l_, supp, accounting, sensitive)
    assert rel.node == node
    assert rel.search["cost"] == pytest.approx(loss, abs=1e-6)
    assert rel.n_suppressed <= int(np.floor(supp * len(arx_adult) + 1e-9))
    # The published table meets the model on its own.
    p = rel.privacy()
    assert p.k >= k
    if l_ is not None:
        assert p.entropy_l >= l_ - 1e-9
    # Predictive tagging and the bound settle the lattice with a fraction of it evaluated.
    assert rel.search["evaluated"] < rel.search["nodes"] / 4


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_accountings_at_arx_node(arx_adult, case):
    """privlab's reading charges suppressed records at least ARX's non-monotonic metric,
    which charges at least the monotonic one; all equal when nothing is suppressed; and the
    node's loss under every accounting is an independent recount from the release."""
    _, k, l_, supp, _, sensitive, node, _ = case
    qi = [c for c in arx_adult.columns if c != sensitive]
    t = Table.from_pandas(arx_adult, qi=qi, sensitive=sensitive)
    h = _hierarchies(qi)
    comp = [h[q].compile(t.schema[q]) for q in qi]
    s = t.column(sensitive) if sensitive else None
    lat = Lattice(t.columns(qi), comp, s, t.schema[sensitive].size if sensitive else 0)
    model = PrivacyModel(k=k, l=l_, l_variant="entropy")
    cls, sizes, ok = lat.evaluate(node, model)
    costs = {a: lat.cost(node, cls, sizes, ok, "entropy", k, a) for a in
             ("privlab", "arx", "arx-monotonic")}  # fmt: skip
    # Recount from the records: -log2 P(x | g) per QI, P from the input table.
    x = t.columns(qi).astype(np.int64)
    supp = ~ok[cls][lat.row_of]
    gen_loss = np.zeros(t.n_rows)
    top_loss = np.zeros(t.n_rows)
    arx_extra = 0.0
    for j, (c, lv) in enumerate(zip(comp, node)):
        freq = np.bincount(x[:, j], minlength=c.sizes()[0])
        g = c.maps[lv][x[:, j]]
        gfreq = np.bincount(g, minlength=c.sizes()[lv])
        gen_loss += -np.log2(freq[x[:, j]] / gfreq[g])
        top_loss += -np.log2(freq[x[:, j]] / t.n_rows)
        if supp.any():
            cg = np.bincount(g[supp])
            cg = cg[cg > 0]
            arx_extra += -(cg * np.log2(cg / supp.sum())).sum()
    assert costs["arx-monotonic"] == pytest.approx(gen_loss.sum(), rel=1e-12)
    assert costs["arx"] == pytest.approx(gen_loss.sum() + arx_extra, rel=1e-12)
    assert costs["privlab"] == pytest.approx(np.where(supp, top_loss, gen_loss).sum(), rel=1e-12)
    if supp.any():
        assert costs["privlab"] > costs["arx"] > costs["arx-monotonic"]
    else:
        assert costs["privlab"] == costs["arx"] == costs["arx-monotonic"]


def test_bad_accounting_is_named(table_1_1):
    from privlab.errors import ParameterError

    with pytest.raises(ParameterError, match="'arx-mono'"):
        generalize(table_1_1, k=2, objective="entropy", accounting="arx-mono")
