"""Bayesian-network parameters learned from PRAM-randomized data (Ma 2006, Ch. 5).

Everything a BN learner needs from data is the family counts ``N_ijk`` (Sec. 5.1), so
learning from a PRAM release reduces to estimating them (Sec. 5.3):

* **Sufficient statistics (Thm 5.2).**  For node ``X_i`` with parents ``Pa_i(1..Q)`` the
  randomized counts ``N~_i`` over ``[Pa_i(1), ..., Pa_i(Q), X_i]`` (child fastest, Ma's
  ``l = K_i (j - 1) + k``) are de-randomized by ``N^_i = (P^T)^-1 N~_i`` with
  ``P = P^{Pa(1)} (x) ... (x) P^{Pa(Q)} (x) P^i``.  Ma's Thm 5.1(a) writes ``P^i (x) P^Pa``,
  which is the matrix of the *parent-fastest* layout, not of the layout he defines [!]; and
  ``(P^T)^-1``, not ``P^-1``, is the right inverse for an asymmetric ``P`` such as Table
  5.1's C and F [!] (notes Sec. 0).  The products run mode by mode in
  :mod:`privlab.estimate.pram` (:func:`~privlab.estimate.pram.release_plan`,
  :func:`~privlab.estimate.pram.moment_estimate`); columns randomized *jointly* form one
  combined variable (Sec. 5.3 cases b, c).  A block only partly in the family (case d)
  contributes its marginal matrix when it reduces exactly to the family's columns (every
  M-category block); otherwise the whole block is estimated and the rest summed out, since
  the marginal's prior would bias the estimate [!] (privlab issue 31).  ``estimator="em"``
  uses the EM-MLE of the family's cells instead (Sec. 2.4.2; never negative, works for a
  singular ``P``).  An EM estimate is run until its duality gap
  proves it within :data:`~privlab.estimate.pram_em.GAP_TOL` nats of the maximum
  (:func:`~privlab.estimate.pram_em.em_certified`); a family whose EM stops short of that
  warns (:class:`~privlab.errors.ConvergenceWarning`), and the network's ``info`` (and
  :class:`PramBayesNetEstimator`'s ``em_converged_``) says whether every family's did.
* **Parameters (Sec. 5.4).**  ML ``theta_ijk = N_ijk / N_ij`` or MAP with a Dirichlet prior
  ``theta_ijk = (alpha_ijk + N_ijk) / (alpha_ij + N_ij)``.
* **Negative and empty counts.**  The moment estimate may be negative (Sec. 2.4.1).  Policy
  ``negative="clip"`` (default) sets ``N^_ijk < 0`` to 0 before normalizing, which is the
  projection the notes recommend; a configuration whose (clipped, plus prior) total is
  ``<= 0`` gets the **uniform** row and a NaN sd (no data: the CPT is unidentified there).
  ``negative="error"`` refuses instead, naming the node and cell (then use EM).  The
  thesis does not say what it did.
* **Standard deviations (Sec. 5.4.2).**  ``theta^_ijk`` is a ratio ``mu1 / mu2`` of
  correlated, asymptotically normal estimates (``mu1 = alpha_ijk + N_ijk``,
  ``mu2 = alpha_ij + N_ij``); Hinkley's / the delta method's variance is
  ``(s1^2 - 2 c r + s2^2 r^2) / mu2^2`` with ``r = mu1/mu2``, ``s1^2 = Var N^_ijk``,
  ``s2^2 = Var N^_ij`` and ``c = Cov(N^_ijk, N^_ij)`` from Thm 5.2's covariance.  Ma prints
  ``N_ijk^2`` where ``N_ij^2`` is meant [!] (:func:`~privlab.estimate.pram.ratio_sd`).  The
  variance is the *randomization* variance given the data (Thm 5.2); the reported sds plug
  the clipped estimate in for the true counts (for EM too: when interior, EM and the moment
  estimator agree to first order).  The covariance is formed one parent configuration at a
  time (``K_i x K_i`` blocks), mode by mode, so families of any size are cheap.

Protocols (Sec. 5.2.1):

* **data miner** (:func:`learn_parameters`): every party randomizes its sensitive variables
  and sends them with their matrices to the miner, who estimates every family from the
  release (a :class:`~privlab.release.base.Release` from PRAM or :class:`PramData`).
* **no data miner** (:func:`learn_parameters_no_miner`): party ``a`` learns its *local*
  variables (no parent elsewhere, Def. 1) from its own data exactly, and each *cross
  variable* from its own columns (identity matrices) plus the randomized copies of its
  *cross parents* (Def. 2) that the other parties sent.  Each cross parent is randomized
  once and the same copy serves every party (Sec. 5.2.2).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privlab.data.schema import Attribute, Schema
from privlab.data.table import Table
from privlab.errors import ConvergenceWarning, MatrixError, ParameterError, SchemaError
from privlab.estimate.pram import (
    Factor,
    Identity,
    expected_randomized_counts,
    kron_apply,
    moment_estimate,
    observed_counts,
    release_plan,
)
from privlab.estimate.pram_em import MAX_STEPS, em_certified
from privlab.learn.bayesnet import BayesianNetwork, Structure, validate_structure
from privlab.release.views import Randomized

ESTIMATORS = ("moment", "em")
#: Cap on the steps of a family's EM (:func:`~privlab.estimate.pram_em.em_certified`).
EM_MAX_STEPS = MAX_STEPS
NEGATIVE_POLICIES = ("clip", "error")
#: Largest (family cells x columns) block formed while computing a covariance.
_COV_CHUNK = 4_000_000


# -- the data ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MatrixBlock:
    """Columns randomized together through one (joint) matrix (first column slowest)."""

    columns: tuple[str, ...]
    matrix: np.ndarray


@dataclass(frozen=True, eq=False)
class PramData:
    """Randomized columns and the matrices that randomized them, as a miner holds them.

    ``table`` holds the published codes; a column in no block was released unchanged
    (identity).  Build it from a PRAM release (:meth:`from_release`) or from integer codes
    and matrices (:meth:`from_codes`).
    """

    table: Table
    blocks: tuple[MatrixBlock, ...] = ()

    def __post_init__(self) -> None:
        seen: set[str] = set()
        blocks = []
        for b in self.blocks:
            cols = tuple(b.columns)
            sizes = [self.table.schema[c].size for c in cols]  # SchemaError on unknown
            m = np.asarray(b.matrix, dtype=float)
            if m.shape != (int(np.prod(sizes)),) * 2:
                raise MatrixError(
                    f"the matrix of {', '.join(cols)} is {m.shape} but the domain has "
                    f"{int(np.prod(sizes))} values"
                )
            if seen & set(cols):
                raise ParameterError(f"column {sorted(seen & set(cols))[0]!r} has two matrices")
            seen |= set(cols)
            blocks.append(MatrixBlock(cols, m))
        object.__setattr__(self, "blocks", tuple(blocks))

    @classmethod
    def from_release(cls, release: Randomized | PramData) -> PramData:
        """The published table and matrices of a PRAM release (``table`` and ``blocks``)."""
        if isinstance(release, PramData):
            return release
        if not hasattr(release, "blocks") or not hasattr(release, "table"):
            raise ParameterError(
                f"a {getattr(release, 'method', type(release).__name__)} release carries no "
                "transition matrices: Bayesian networks are learned from PRAM releases"
            )
        return cls(release.table, tuple(MatrixBlock(b.columns, b.matrix) for b in release.blocks))

    @classmethod
    def from_codes(
        cls,
        codes: Any,
        matrices: Mapping[str | tuple[str, ...], Any] | None = None,
        *,
        names: Sequence[str] | None = None,
        sizes: Sequence[int] | None = None,
    ) -> PramData:
        """Integer codes ``(n, d)`` with ``{column: P}`` / ``{(a, b): P_joint}`` matrices.

        ``names`` default to ``X0..X{d-1}``; ``sizes`` to each matrix's size, else the
        column's largest code + 1.  Domains are the codes ``0..K-1``.
        """
        c = np.asarray(codes)
        if c.ndim != 2:
            raise SchemaError(f"codes must be a 2-d array (records x variables), got {c.shape}")
        names = [f"X{i}" for i in range(c.shape[1])] if names is None else [str(n) for n in names]
        if len(names) != c.shape[1]:
            raise SchemaError(f"{len(names)} names for {c.shape[1]} columns")
        matrices = dict(matrices or {})
        if sizes is None:
            sz = [int(c[:, i].max()) + 1 if c.shape[0] else 1 for i in range(c.shape[1])]
            for key, m in matrices.items():
                if isinstance(key, str):
                    sz[names.index(key)] = np.asarray(m).shape[0]
        else:
            sz = [int(s) for s in sizes]
        schema = Schema(
            tuple(Attribute(n, tuple(range(k)), declared=True) for n, k in zip(names, sz))
        )
        blocks = tuple(
            MatrixBlock((key,) if isinstance(key, str) else tuple(key), m)
            for key, m in matrices.items()
        )
        return cls(Table(c, schema), blocks)

    @property
    def names(self) -> tuple[str, ...]:
        return self.table.names

    @property
    def n_rows(self) -> int:
        return self.table.n_rows

    def block_of(self, column: str) -> MatrixBlock | None:
        self.table.schema.index(column)
        for b in self.blocks:
            if column in b.columns:
                return b
        return None


# -- one family ----------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class FamilyEstimate:
    """Estimated counts of one family ``[parents..., child]`` (Ma Sec. 5.3), child fastest.

    ``counts`` and ``observed`` are ``(J, K)``; ``factors`` are the Kronecker factors of the
    estimated columns in the release's block order: the family's, plus the rest of any
    jointly randomized block that holds part of the family and does not reduce exactly to
    it (:func:`~privlab.estimate.pram.reduces_exactly`), which is estimated whole and summed
    out.  ``index[f]`` are the block-order positions summed into family cell ``f`` (one
    column per combination of the summed-out values; one column when nothing is summed)
    and ``block_counts`` the estimate over every block-order cell.
    ``em`` is ``{"converged", "iterations", "gap"}`` of the EM estimate (None
    for the moment estimator).
    """

    node: str
    parents: tuple[str, ...]
    sizes: tuple[int, ...]
    counts: np.ndarray
    observed: np.ndarray
    method: str
    factors: tuple[Factor, ...]
    index: np.ndarray
    block_counts: np.ndarray | None = None
    em: Mapping[str, Any] | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.counts.shape  # type: ignore[return-value]

    def covariance_blocks(self, at: Any = None) -> np.ndarray:
        """``(J, K, K)``: Thm 5.2's ``Cov(N^_ij., N^_ij.)`` for each configuration ``j``.

        ``Cov(N^) = B diag(P^T N) B^T - diag(N)`` with ``B = (P^T)^-1``; row ``r`` of ``B`` is
        ``(x)_i P_i^-1`` applied to the unit vector ``e_r``.  Summed-out columns propagate:
        with ``A`` the summing matrix, ``Cov(A N^) = (A B) diag(P^T N) (A B)^T - diag(A N)``,
        a row of ``A B`` being ``P^-1`` applied to the indicator of the cells summed.  ``at``
        are the true counts: ``(J, K)`` over the family when nothing is summed out, else
        over every block-order cell (default: the estimate clipped at 0).
        """
        j, k = self.shape
        index = self.index.reshape(j * k, -1)
        cells = index.size
        if at is None:
            full = self.block_counts
            if full is None:
                full = np.empty(cells)
                full[index[:, 0]] = self.counts.ravel()
            n_block = np.maximum(np.asarray(full, float).ravel(), 0.0)
        else:
            a = np.asarray(at, float).ravel()
            if a.size != cells:
                raise ParameterError(
                    f"the true counts have {a.size} entries; this family needs the {cells} "
                    "counts of every estimated cell (it sums columns out)"
                )
            if index.shape[1] == 1:  # the family's own layout
                n_block = np.empty(cells)
                n_block[index[:, 0]] = a
            else:  # block order, summed-out columns included
                n_block = a
        n_fam = n_block[index].sum(axis=1).reshape(j, k)
        out = np.zeros((j, k, k))
        if all(isinstance(f, Identity) for f in self.factors):
            return out
        t = expected_randomized_counts(n_block, list(self.factors))
        if any(not isinstance(f, Identity) and np.linalg.cond(f) > 1e12 for f in self.factors):
            return np.full((j, k, k), np.nan)  # singular P (EM): Thm 5.2 does not apply
        pinv = [f if isinstance(f, Identity) else np.linalg.inv(f) for f in self.factors]
        step = max(1, _COV_CHUNK // max(1, cells * k))
        for j0 in range(0, j, step):
            m = min(j, j0 + step) - j0
            e = np.zeros((cells, m * k))
            e[index[j0 * k : (j0 + m) * k], np.arange(m * k)[:, None]] = 1.0
            w = kron_apply(pinv, e).reshape(cells, m, k)
            out[j0 : j0 + m] = np.einsum("lak,l,lam->akm", w, t, w)
        idx = np.arange(k)
        out[:, idx, idx] -= n_fam
        return out

    def cpt_sd(self, prior: Any = None, at: Any = None) -> np.ndarray:
        """``(J, K)`` delta-method sd of ``theta^_ijk`` (Sec. 5.4.2), NaN for empty rows.

        ``at`` are the true counts (the analytic sd); default the clipped estimate.
        """
        n = np.maximum(self.counts, 0.0) if at is None else np.asarray(at, float)
        a = _prior_array(prior, self.shape)
        cov = self.covariance_blocks(at=n)
        mu1 = n + a
        mu2 = mu1.sum(axis=1)
        v1 = np.einsum("jkk->jk", cov)
        v2 = cov.sum(axis=(1, 2))
        c = cov.sum(axis=2)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = mu1 / mu2[:, None]
            var = (v1 - 2 * c * r + v2[:, None] * r * r) / (mu2[:, None] ** 2)
            sd = np.sqrt(np.maximum(var, 0.0))
        sd[mu2 <= 0] = np.nan
        return sd


def _prior_array(prior: Any, shape: tuple[int, int]) -> np.ndarray:
    if prior is None:
        return np.zeros(shape)
    a = np.broadcast_to(np.asarray(prior, dtype=float), shape).copy()
    if np.any(a < 0) or not np.all(np.isfinite(a)):
        raise ParameterError(f"Dirichlet pseudo-counts must be finite and >= 0, got {prior!r}")
    return a


def _check_estimator(estimator: str) -> str:
    if estimator not in ESTIMATORS:
        raise ParameterError(f"unknown estimator {estimator!r}; use 'moment' or 'em'")
    return estimator


def _estimate_cells(
    obs: np.ndarray, factors: list[Factor], estimator: str, node: str = ""
) -> tuple[np.ndarray, dict[str, Any] | None]:
    """The family's estimated cells, and the EM's convergence (None for the moment
    estimator); an EM that stops short of its certificate warns."""
    if estimator == "moment":
        try:
            return moment_estimate(obs, factors), None
        except MatrixError as e:
            raise MatrixError(
                f"{e}; the moment estimator needs invertible matrices: use the EM estimator "
                "(estimator='em', CLI --estimator em)"
            ) from None
    if obs.sum() <= 0:
        return np.zeros_like(obs), {"converged": True, "iterations": 0, "gap": 0.0}
    # the moment start (N~ / N when P is singular)
    res = em_certified(obs, factors, init="moment", max_steps=EM_MAX_STEPS)
    if not res.converged:
        warnings.warn(
            f"the EM estimate of the family of {node!r} has NOT converged after "
            f"{res.iterations} steps: the log-likelihood can still gain up to {res.gap:.3g} "
            "nats, so its counts are not the maximum-likelihood estimate",
            ConvergenceWarning,
            stacklevel=4,
        )
    return res.counts, {"converged": res.converged, "iterations": res.iterations,
                        "gap": res.gap}  # fmt: skip


def family_from_codes(
    node: str,
    parents: Sequence[str],
    codes: np.ndarray,
    sizes: Mapping[str, int],
    factors: Sequence[Factor],
    order: Sequence[str],
    *,
    estimator: str = "moment",
) -> FamilyEstimate:
    """Estimate a family from observed ``codes`` whose columns are ``order`` (block order)
    and the Kronecker ``factors`` of those columns (:func:`release_plan` shape); columns of
    ``order`` outside the family are estimated with it and summed out."""
    _check_estimator(estimator)
    family = [*parents, node]
    order = list(order)
    bsizes = [int(sizes[c]) for c in order]
    obs = observed_counts(codes, bsizes)
    est, em = _estimate_cells(obs, list(factors), estimator, node)
    extra = [i for i, c in enumerate(order) if c not in family]
    axes = [order.index(c) for c in family] + extra
    index = np.transpose(np.arange(obs.size).reshape(bsizes), axes).reshape(
        int(np.prod([bsizes[i] for i in axes[: len(family)]], dtype=np.int64)), -1
    )
    j = int(np.prod([int(sizes[p]) for p in parents], dtype=np.int64))
    k = int(sizes[node])
    return FamilyEstimate(
        node=node,
        parents=tuple(parents),
        sizes=tuple(int(sizes[c]) for c in family),
        counts=est[index].sum(axis=1).reshape(j, k),
        observed=obs[index].sum(axis=1).reshape(j, k),
        method=estimator,
        factors=tuple(factors),
        index=index,
        block_counts=est,
        em=em,
    )


def estimate_family(
    data: Any, node: str, parents: Sequence[str] = (), *, estimator: str = "moment"
) -> FamilyEstimate:
    """Estimate ``N_ijk`` of ``node`` given ``parents`` from a PRAM release (Thm 5.2); part of
    a jointly randomized block that does not reduce exactly to the family is estimated with
    its whole block and summed out (:func:`release_plan`)."""
    data = PramData.from_release(data)
    family = [*parents, node]
    plan = release_plan(data, family)
    schema = data.table.schema
    return family_from_codes(
        node,
        parents,
        data.table.columns(list(plan.order)),
        {c: schema[c].size for c in plan.order},
        plan.factors,
        plan.order,
        estimator=estimator,
    )


def cpt_from_counts(
    counts: Any, prior: Any = None, *, negative: str = "clip", node: str = "node"
) -> tuple[np.ndarray, np.ndarray]:
    """ML (``prior=None``) or MAP CPT from (estimated) counts ``(J, K)`` (Sec. 5.4).

    Returns ``(cpt, empty)``: ``empty[j]`` marks a configuration whose clipped total plus
    prior is ``<= 0``; its row is uniform.  See the module's policy for negative counts.
    """
    if negative not in NEGATIVE_POLICIES:
        raise ParameterError(f"unknown negative-count policy {negative!r}; use 'clip' or 'error'")
    n = np.asarray(counts, dtype=float)
    if negative == "error" and np.any(n < 0):
        j, k = np.argwhere(n < 0)[0]
        raise ParameterError(
            f"the estimated count of {node!r} = value {k} in parent configuration {j} is "
            f"{n[j, k]:.4g} < 0; use negative='clip' or the EM estimator"
        )
    num = np.maximum(n, 0.0) + _prior_array(prior, n.shape)
    den = num.sum(axis=1)
    empty = den <= 0
    cpt = np.divide(num, den[:, None], out=np.zeros_like(num), where=~empty[:, None])
    cpt[empty] = 1.0 / n.shape[1]
    return cpt, empty


def _node_prior(prior: Any, node: str) -> Any:
    if isinstance(prior, Mapping):
        return prior.get(node)
    return prior


def _network(
    families: Mapping[str, FamilyEstimate],
    nodes: Sequence[str],
    domains: Mapping[str, tuple[Any, ...]],
    n_records: int,
    *,
    protocol: str,
    estimator: str,
    prior: Any,
    negative: str,
    sd: bool,
    info: Mapping[str, Any] | None = None,
) -> BayesianNetwork:
    """The network of the estimated ``families``; its ``info`` names the protocol, the
    estimator, the handling of negative counts and the prior, then the protocol's own
    ``info`` and the EM's convergence."""
    info = {
        "protocol": protocol,
        "estimator": estimator,
        "negative": negative,
        "prior": _describe_prior(prior),
        **(info or {}),
        **_em_info(families),
    }
    cpts, sds, counts = {}, {}, {}
    for n in nodes:
        fam = families[n]
        pr = _node_prior(prior, n)
        cpt, empty = cpt_from_counts(fam.counts, pr, negative=negative, node=n)
        cpts[n] = cpt
        counts[n] = fam.counts
        if sd:
            s = fam.cpt_sd(prior=pr)
            s[empty] = np.nan
            sds[n] = s
    return BayesianNetwork(
        nodes=tuple(nodes),
        parents={n: families[n].parents for n in nodes},
        domains=domains,
        cpts=cpts,
        sds=sds if sd else None,
        counts=counts,
        n_records=n_records,
        info=info,
    )


def learn_parameters(
    data: Any,
    structure: Structure,
    *,
    estimator: str = "moment",
    prior: Any = None,
    negative: str = "clip",
    sd: bool = True,
) -> BayesianNetwork:
    """Learn the CPTs of a given DAG from a PRAM release: the data-miner protocol (Sec. 5.2.1).

    Parameters
    ----------
    data
        A PRAM release (``table`` + ``blocks``) or a :class:`PramData`.
    structure
        ``{node: [parents]}``; every node and parent must be a column of the release.  The
        parents' order fixes the CPT layout (first parent slowest).
    estimator
        ``moment`` (Thm 5.2; needs invertible matrices) or ``em`` (Sec. 2.4.2).
    prior
        None (ML), a Dirichlet pseudo-count ``alpha_ijk`` for every cell (``1`` is the K2
        prior), or ``{node: (J, K) array}`` (MAP, Sec. 5.4).
    negative
        ``clip`` or ``error``; see the module docstring.
    sd
        Compute each entry's sd (Sec. 5.4.2).
    """
    data = PramData.from_release(data)
    _check_estimator(estimator)
    parents = validate_structure(structure, data.names)
    nodes = [c for c in data.names if c in parents]
    families = {n: estimate_family(data, n, parents[n], estimator=estimator) for n in nodes}
    schema = data.table.schema
    return _network(
        families,
        nodes,
        {n: schema[n].domain for n in nodes},
        data.n_rows,
        protocol="data-miner",
        estimator=estimator,
        prior=prior,
        negative=negative,
        sd=sd,
    )


def _em_info(families: Mapping[str, FamilyEstimate]) -> dict[str, Any]:
    """The EM's convergence over the families (nothing for the moment estimator)."""
    ems = {n: f.em for n, f in families.items() if f.em is not None}
    if not ems:
        return {}
    return {
        "em_converged": all(bool(e["converged"]) for e in ems.values()),
        "em_iterations": {n: int(e["iterations"]) for n, e in ems.items()},
        "em_unconverged": [n for n, e in ems.items() if not e["converged"]],
    }


def _describe_prior(prior: Any) -> Any:
    if prior is None:
        return "none (ML)"
    if isinstance(prior, Mapping):
        return "per-node Dirichlet"
    return float(np.asarray(prior).ravel()[0]) if np.asarray(prior).size == 1 else "Dirichlet"


# -- the no-miner protocol -----------------------------------------------------------------------
def cross_parents(structure: Structure, sites: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """``{node: parents at another site}`` (Defs 1-2); a node with any is a cross variable."""
    parents = validate_structure(structure)
    missing = [n for n in parents if n not in sites]
    if missing:
        raise ParameterError(f"node {missing[0]!r} has no site")
    return {n: tuple(p for p in ps if sites[p] != sites[n]) for n, ps in parents.items()}


def learn_parameters_no_miner(
    original: Any,
    randomized: Any,
    structure: Structure,
    sites: Mapping[str, Any],
    *,
    estimator: str = "moment",
    prior: Any = None,
    negative: str = "clip",
    sd: bool = True,
) -> BayesianNetwork:
    """The protocol without a data miner (Sec. 5.2.1 case b), every party's work in one call.

    Parameters
    ----------
    original
        The parties' own (unrandomized) columns: a ``Table``, a :class:`PramData` or a
        release whose columns are original.  Party ``a`` only ever reads its own columns.
    randomized
        The randomized copies of the cross parents (a PRAM release or :class:`PramData`):
        each cross parent once, with its matrix (a cross parent released unchanged has none).
    structure, sites
        The DAG and ``{node: site}``.
    estimator, prior, negative, sd
        As :func:`learn_parameters`.

    Local variables are learned from ``original`` exactly; a cross variable's family takes
    the child and its same-site parents from ``original`` (identity matrices) and its cross
    parents from ``randomized`` (Sec. 5.3 with ``P = I`` for the unrandomized columns).
    """
    orig = original if isinstance(original, Table) else PramData.from_release(original).table
    rand = PramData.from_release(randomized)
    _check_estimator(estimator)
    parents = validate_structure(structure, orig.names)
    cross = cross_parents(parents, sites)
    nodes = [c for c in orig.names if c in parents]
    families: dict[str, FamilyEstimate] = {}
    for n in nodes:
        local = [p for p in parents[n] if p not in cross[n]] + [n]
        sizes = {c: orig.schema[c].size for c in local}
        codes = [orig.columns(local)]
        factors: list[Factor] = [Identity(sizes[c]) for c in local]
        order = list(local)
        if cross[n]:
            for p in cross[n]:
                if p not in rand.table.schema:
                    raise SchemaError(
                        f"cross parent {p!r} of {n!r} (site {sites[p]!r}) is not in the "
                        "randomized data"
                    )
                if rand.table.schema[p].size != orig.schema[p].size:
                    raise SchemaError(f"the randomized {p!r} has another domain than the original")
            plan = release_plan(rand, list(cross[n]))  # the rest of a block is summed out
            o2 = list(plan.order)
            factors += plan.factors
            order += o2
            codes.append(rand.table.columns(o2))
            sizes.update({c: rand.table.schema[c].size for c in o2})
            if rand.n_rows != orig.n_rows:
                raise SchemaError(
                    f"the randomized data has {rand.n_rows} rows, the original {orig.n_rows}"
                )
        families[n] = family_from_codes(
            n, parents[n], np.hstack(codes), sizes, factors, order, estimator=estimator
        )
    return _network(
        families,
        nodes,
        {n: orig.schema[n].domain for n in nodes},
        orig.n_rows,
        protocol="no-miner",
        estimator=estimator,
        prior=prior,
        negative=negative,
        sd=sd,
        info={"cross_variables": [n for n in nodes if cross[n]]},
    )


# -- scikit-learn style --------------------------------------------------------------------------
@dataclass(kw_only=True, eq=False, repr=False)
class PramBayesNetEstimator:
    """Learn a Bayesian network's parameters from PRAM data (scikit-learn estimator API).

    ``fit(release)`` sets ``network_`` (a :class:`~privlab.learn.bayesnet.BayesianNetwork`,
    data-miner protocol), ``em_converged_`` (whether every family's EM met its duality-gap
    certificate; True for the moment estimator, which runs none) and ``em_iterations_``
    (their steps in all); see :func:`learn_parameters` for the parameters.
    """

    # scikit-learn's parameters: the dataclass writes the __init__ that stores them
    structure: Structure
    estimator: str = "moment"
    prior: Any = None
    negative: str = "clip"
    sd: bool = True

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("structure", "estimator", "prior", "negative", "sd")}

    def set_params(self, **params: Any) -> PramBayesNetEstimator:
        for k, v in params.items():
            if k not in self.get_params():
                raise ParameterError(f"unknown parameter {k!r}")
            setattr(self, k, v)
        return self

    def fit(self, data: Any, y: Any = None) -> PramBayesNetEstimator:
        self.network_ = learn_parameters(
            data,
            self.structure,
            estimator=self.estimator,
            prior=self.prior,
            negative=self.negative,
            sd=self.sd,
        )
        info = self.network_.info
        self.em_converged_ = bool(info.get("em_converged", True))
        self.em_iterations_ = sum(info.get("em_iterations", {}).values())
        return self
