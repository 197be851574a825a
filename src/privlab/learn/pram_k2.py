"""K2 structure learning from PRAM-randomized data (Ma 2006, Sec. 5.2.2 and 5.5).

Every candidate parent set's statistics ``N^_ijk`` are re-estimated from the **same**
randomized release (each variable is randomized once, Sec. 5.2.2) by
:func:`privlab.learn.pram_bn.estimate_family` (Thm 5.2, or EM), and scored with a
decomposable score, in natural-log units:

* ``k2``: the Cooper-Herskovits / BD log score with ``alpha_ijk = alpha`` (1: the K2 metric)::

      sum_j [ lnG(a_ij) - lnG(a_ij + N_ij) + sum_k (lnG(a_ijk + N_ijk) - lnG(a_ijk)) ]

  (``a = alpha``, ``a_ij = K_i alpha``)

  Ma prints ``Gamma(alpha_ij)`` in the inner denominator, where ``Gamma(alpha_ijk)`` is
  meant [!], and gives no alpha (notes Sec. 5.5).
* ``bic``: ``sum_jk N_ijk ln(N_ijk / N_ij) - C* (ln N / 2) (K_i - 1) J_i``.  Ma prints the
  penalty as ``N/2`` [!], which at N = 10,000 would forbid every edge; ``C*`` is his
  penalty multiplier against extra links (``C* = 1`` is the usual BIC/MDL).

Estimated counts below 0 are set to 0 before scoring (with ``0 ln 0 = 0`` and
``lnG(alpha + 0) = lnG(alpha)``), so a score stays finite and equals the non-private one at
``p = 0``; the thesis leaves this open.

**Search** (K2, Cooper & Herskovits 1992; Ma Sec. 5.5.1): for each node in the given order,
greedily add the predecessor that raises the local score most, at most ``u`` parents, while
the acceptance rule holds.  Randomization noise makes conditionally independent variables
look dependent, so Ma adds a threshold ``eta`` (Sec. 5.5.2) whose printed form
``eta P_new > P_old`` is ambiguous for log scores [!]:

* ``eta_rule="relative"`` (default; the notes' reading): accept when
  ``L_new - L_old > (1 - eta) |L_old|``, i.e. ``L_new > eta L_old`` for a negative score: a
  smaller eta demands a larger relative improvement.
* ``eta_rule="product"``: Ma's product form on probabilities, ``L_new + ln eta > L_old``;
  with eta = 0.97..0.99 it is a margin of 0.01-0.03 nats and changes almost nothing.
* ``eta="variable"``: Ma's schedule by the randomization level ``p``: 0.99 for
  ``p <= 0.15``, 0.98 for ``p <= 0.25``, 0.97 for ``p <= 0.3``; privlab continues it by
  -0.01 per 0.05 above 0.3 (0.96 at 0.35, ...; not in the thesis) and uses 1 at ``p = 0``.
  Ma writes "more randomization -> larger eta" while his schedule decreases: the schedule
  (a stronger penalty as p grows) is what is implemented.

``search="exhaustive"`` scores every subset of at most ``u`` predecessors instead (the
optimum under the order; cheap for a few nodes).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import gammaln

from privlab._frames import ToFrames
from privlab.errors import ParameterError, SchemaError
from privlab.learn.bayesnet import BayesianNetwork
from privlab.learn.pram_bn import PramData, estimate_family, learn_parameters

SCORES = ("k2", "bic")
ETA_RULES = ("relative", "product")


def variable_eta(p: float) -> float:
    """Ma's variable threshold (Sec. 5.6.4): 0.99 / 0.98 / 0.97 for p <= 0.15 / 0.25 / 0.3."""
    p = float(p)
    if not 0 <= p < 1 or math.isnan(p):
        raise ParameterError(f"randomization level p = {p} is outside [0, 1)")
    if p == 0:
        return 1.0
    if p <= 0.15:
        return 0.99
    if p <= 0.25:
        return 0.98
    if p <= 0.30:
        return 0.97
    return round(0.97 - 0.01 * math.ceil((p - 0.30) / 0.05 - 1e-9), 2)  # privlab's extension


def local_score(
    counts: Any, *, score: str = "k2", n: float | None = None, penalty: float = 1.0,
    alpha: float = 1.0,
) -> float:  # fmt: skip
    """The local score of one family from its (estimated) counts ``(J, K)``; see the module.

    ``n`` (records, for BIC's ``ln N``) defaults to the counts' total.
    """
    c = np.maximum(np.asarray(counts, dtype=float), 0.0)
    j, k = c.shape
    if score == "k2":
        if alpha <= 0:
            raise ParameterError(f"the Dirichlet alpha must be > 0, got {alpha}")
        nj = c.sum(axis=1)
        return float(
            np.sum(gammaln(k * alpha) - gammaln(k * alpha + nj))
            + np.sum(gammaln(alpha + c) - gammaln(alpha))
        )
    if score == "bic":
        nn = c.sum() if n is None else float(n)
        nj = c.sum(axis=1, keepdims=True)
        pos = c > 0
        ll = float(np.sum(c[pos] * np.log((c / np.where(nj > 0, nj, 1.0))[pos])))
        return ll - penalty * math.log(max(nn, 1.0)) / 2.0 * (k - 1) * j
    raise ParameterError(f"unknown score {score!r}; use 'k2' or 'bic'")


class FamilyScorer:
    """Local scores of (node, parent set) families of one release, cached."""

    def __init__(
        self,
        data: Any,
        *,
        score: str = "k2",
        penalty: float = 1.0,
        alpha: float = 1.0,
        estimator: str = "moment",
    ) -> None:
        if score not in SCORES:
            raise ParameterError(f"unknown score {score!r}; use 'k2' or 'bic'")
        if not penalty >= 0:
            raise ParameterError(f"the penalty C* must be >= 0, got {penalty}")
        self.data = PramData.from_release(data)
        self.score, self.penalty, self.alpha, self.estimator = score, penalty, alpha, estimator
        self._cache: dict[tuple[str, tuple[str, ...]], float] = {}
        self.evaluations = 0

    def __call__(self, node: str, parents: Sequence[str]) -> float:
        names = self.data.names
        key = (node, tuple(sorted(parents, key=names.index)))
        if key not in self._cache:
            fam = estimate_family(self.data, node, key[1], estimator=self.estimator)
            self.evaluations += 1
            self._cache[key] = local_score(
                fam.counts, score=self.score, n=self.data.n_rows, penalty=self.penalty,
                alpha=self.alpha,
            )  # fmt: skip
        return self._cache[key]


@dataclass(frozen=True, eq=False)
class K2Result(ToFrames):
    """A learned structure: parents, local scores, the search's decisions and settings."""

    order: tuple[str, ...]
    parents: dict[str, tuple[str, ...]]
    scores: dict[str, float]
    steps: tuple[dict[str, Any], ...]
    settings: dict[str, Any] = field(default_factory=dict)
    evaluations: int = 0

    @property
    def score(self) -> float:
        return float(sum(self.scores.values()))

    @property
    def edges(self) -> list[tuple[str, str]]:
        return [(p, n) for n in self.order for p in self.parents[n]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "order": list(self.order),
            "parents": {n: list(p) for n, p in self.parents.items()},
            "scores": self.scores,
            "score": self.score,
            "steps": list(self.steps),
            "settings": self.settings,
            "evaluations": self.evaluations,
        }

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame(list(self.steps))


def structure_errors(
    learned: dict[str, Sequence[str]], reference: dict[str, Sequence[str]]
) -> dict[str, int]:
    """Missing and extra directed links of ``learned`` against ``reference`` (Fig. 5.9)."""
    a = {(p, n) for n, ps in learned.items() for p in ps}
    b = {(p, n) for n, ps in reference.items() for p in ps}
    return {"missing": len(b - a), "extra": len(a - b), "errors": len(a ^ b)}


def k2_search(
    data: Any,
    order: Sequence[str] | None = None,
    *,
    max_parents: int = 3,
    score: str = "k2",
    penalty: float = 1.0,
    alpha: float = 1.0,
    eta: float | str = 1.0,
    eta_rule: str = "relative",
    p: float | None = None,
    estimator: str = "moment",
    search: str = "greedy",
) -> K2Result:
    """K2 structure search on a PRAM release (Ma Sec. 5.5); see the module docstring.

    Parameters
    ----------
    data
        A PRAM release or :class:`~privlab.learn.pram_bn.PramData`.
    order
        The node order (default: the release's columns); a node's parents come before it.
    max_parents
        ``u``, at most this many parents per node (>= 0).
    score, penalty, alpha
        ``k2`` (BD with ``alpha_ijk = alpha``) or ``bic`` (penalty multiplier ``C*``).
    eta, eta_rule, p
        Acceptance threshold: a number in (0, 1] or ``"variable"`` (Ma's schedule by ``p``,
        default the release's ``p``).
    estimator
        ``moment`` or ``em`` for every family's counts.
    search
        ``greedy`` (K2) or ``exhaustive`` (every parent set of size <= u; no eta).
    """
    pdata = PramData.from_release(data)
    order = tuple(pdata.names if order is None else order)
    if len(set(order)) != len(order):
        raise ParameterError("a node appears twice in the order")
    for n in order:
        if n not in pdata.table.schema:
            raise SchemaError(f"node {n!r} of the order is not in the release")
    if isinstance(max_parents, bool) or int(max_parents) != max_parents or max_parents < 0:
        raise ParameterError(f"max parents must be an integer >= 0, got {max_parents}")
    if eta_rule not in ETA_RULES:
        raise ParameterError(f"unknown eta rule {eta_rule!r}; use 'relative' or 'product'")
    if search not in ("greedy", "exhaustive"):
        raise ParameterError(f"unknown search {search!r}; use 'greedy' or 'exhaustive'")
    if isinstance(eta, str):
        if eta != "variable":
            raise ParameterError(f"eta must be a number in (0, 1] or 'variable', got {eta!r}")
        p = getattr(data, "p", None) if p is None else p
        if p is None:
            raise ParameterError("eta = 'variable' needs the randomization level p")
        eta_value = variable_eta(p)
    else:
        eta_value = float(eta)
    if not 0 < eta_value <= 1:
        raise ParameterError(f"eta = {eta_value} is outside (0, 1]")
    scorer = FamilyScorer(pdata, score=score, penalty=penalty, alpha=alpha, estimator=estimator)

    def accept(new: float, old: float) -> bool:
        if eta_rule == "product":
            return new + math.log(eta_value) > old
        return new - old > (1.0 - eta_value) * abs(old)

    parents: dict[str, tuple[str, ...]] = {}
    scores: dict[str, float] = {}
    steps: list[dict[str, Any]] = []
    for i, node in enumerate(order):
        pred = order[:i]
        if search == "exhaustive":
            best, best_s = (), scorer(node, ())
            for size in range(1, min(int(max_parents), len(pred)) + 1):
                for cand in itertools.combinations(pred, size):
                    s = scorer(node, cand)
                    if s > best_s:
                        best, best_s = cand, s
            parents[node], scores[node] = best, best_s
            continue
        pa: list[str] = []
        old = scorer(node, ())
        while len(pa) < max_parents:
            cands = [z for z in pred if z not in pa]
            if not cands:
                break
            vals = [scorer(node, [*pa, z]) for z in cands]
            z = cands[int(np.argmax(vals))]
            new = max(vals)
            ok = accept(new, old)
            steps.append(
                {"node": node, "parents": ",".join(pa), "candidate": z, "old": old,
                 "new": new, "accepted": ok}
            )  # fmt: skip
            if not ok:
                break
            pa.append(z)
            old = new
        parents[node], scores[node] = tuple(pa), old
    return K2Result(
        order=order,
        parents=parents,
        scores=scores,
        steps=tuple(steps),
        settings={
            "max_parents": int(max_parents),
            "score": score,
            "penalty": penalty,
            "alpha": alpha,
            "eta": eta_value,
            "eta_rule": eta_rule,
            "p": p,
            "estimator": estimator,
            "search": search,
        },
        evaluations=scorer.evaluations,
    )


def learn_network_k2(data: Any, order: Sequence[str] | None = None, **kwargs: Any) -> tuple[
    K2Result, BayesianNetwork
]:  # fmt: skip
    """K2 structure (:func:`k2_search`), then ML parameters for it from the same release."""
    prior = kwargs.pop("prior", None)
    negative = kwargs.pop("negative", "clip")
    res = k2_search(data, order, **kwargs)
    net = learn_parameters(
        data, res.parents, estimator=kwargs.get("estimator", "moment"), prior=prior,
        negative=negative,
    )  # fmt: skip
    return res, net
