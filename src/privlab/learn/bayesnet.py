"""A discrete Bayesian network: structure, conditional probability tables, sampling, I/O.

The result that :mod:`privlab.learn.pram_bn` (parameters from PRAM-randomized data, Ma 2006
Sec. 5.4) and :mod:`privlab.learn.pram_k2` (K2 structure search, Sec. 5.5) return.

Layout (the one every count vector in privlab uses, :mod:`privlab.data.counts`): the CPT of
node ``X_i`` with parents ``(Pa_1, ..., Pa_Q)`` is a ``(J_i, K_i)`` array whose row ``j`` is
the parent configuration in mixed radix with the **first parent slowest**, and whose column
``k`` is the child's value: ``cpt[j, k] = Pr(X_i = k | Pa_i = j)``.  Flattened, the family
``[Pa_1, ..., Pa_Q, X_i]`` has the child fastest, the layout of Ma's ``N_i`` (Sec. 5.3).
Ma's Table 5.2 prints a CPT value-major (all configurations of value 1, then of value 2):
that is ``cpt.T.ravel()`` (:meth:`BayesianNetwork.thesis_row`).

Values are integer codes ``0..K-1``; ``domains`` holds their labels (decoded at the edges).
pgmpy (optional) orders a ``TabularCPD``'s parent configurations the same way (first
evidence variable slowest), with values as rows: ``TabularCPD.values`` is ``cpt.T``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privlab._frames import ToFrames
from privlab._io import json_ready
from privlab._rng import RngLike, as_generator
from privlab.errors import MissingDependencyError, ParameterError, SchemaError

Structure = Mapping[str, Sequence[str]]


def validate_structure(
    structure: Structure, nodes: Sequence[str] | None = None
) -> dict[str, tuple[str, ...]]:
    """Check a DAG given as ``{node: [parents]}`` and return it with every node present.

    Parents that are not keys become root nodes.  ``nodes``, when given, is the set of
    known variables (a release's columns): an unknown node or parent raises
    :class:`~privlab.errors.SchemaError` naming it.  A self-loop, a parent listed twice or a
    directed cycle raises :class:`~privlab.errors.ParameterError` naming the cycle.
    """
    if not isinstance(structure, Mapping):
        raise ParameterError("a structure must map each node to its list of parents")
    out: dict[str, tuple[str, ...]] = {}
    for node, pars in structure.items():
        if isinstance(pars, str):
            pars = [pars] if pars else []
        pars = tuple(str(p) for p in (pars or ()))
        node = str(node)
        if node in pars:
            raise ParameterError(f"node {node!r} is its own parent")
        dup = sorted({p for p in pars if pars.count(p) > 1})
        if dup:
            raise ParameterError(f"node {node!r} lists parent {dup[0]!r} twice")
        out[node] = pars
    for pars in list(out.values()):
        for p in pars:
            out.setdefault(p, ())
    if nodes is not None:
        known = set(nodes)
        for n, pars in out.items():
            if n not in known:
                raise SchemaError(f"unknown node {n!r} in the structure; known: {', '.join(nodes)}")
            for v in pars:
                if v not in known:
                    raise SchemaError(
                        f"parent {v!r} of {n!r} is not in the data; known: {', '.join(nodes)}"
                    )
    topological_order(out)  # raises on a cycle
    return out


def topological_order(parents: Mapping[str, Sequence[str]]) -> list[str]:
    """Nodes with every parent before its children (stable: the mapping's order breaks ties).

    Raises :class:`~privlab.errors.ParameterError` naming a directed cycle.
    """
    state: dict[str, int] = {}
    order: list[str] = []
    for start in parents:
        if state.get(start) == 2:
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[str] = []
        while stack:
            node, i = stack.pop()
            if i == 0:
                if state.get(node) == 2:
                    continue
                state[node] = 1
                path.append(node)
            pars = list(parents.get(node, ()))
            if i < len(pars):
                stack.append((node, i + 1))
                p = pars[i]
                if state.get(p) == 1:
                    cyc = [*path[path.index(p) :], p]
                    raise ParameterError("the structure has a cycle: " + " <- ".join(cyc))
                if state.get(p) != 2:
                    stack.append((p, 0))
            else:
                state[node] = 2
                path.pop()
                order.append(node)
    return order


@dataclass(frozen=True, eq=False)
class BayesianNetwork(ToFrames):
    """A discrete Bayesian network ``B = <G, theta>`` (Ma 2006, Sec. 5.1), frozen.

    Attributes
    ----------
    nodes
        Variable names, in the order of the data's columns (sampling returns this order).
    parents
        ``{node: (parents...)}``; the order of the parents fixes the CPT's row layout.
    domains
        ``{node: (value labels...)}``; codes are positions in these tuples.
    cpts
        ``{node: (J, K) array}``, ``cpt[j, k] = Pr(node = k | parents = j)``, rows summing
        to 1 (first parent slowest).
    sds
        ``{node: (J, K) array}`` of the estimates' standard deviations (Ma Sec. 5.4.2), or
        None.  NaN where no sd is defined (a row with no estimated records).
    counts
        ``{node: (J, K) array}`` of the (estimated) sufficient statistics ``N_ijk`` the CPTs
        were computed from, or None.
    n_records
        Records the network was learned from (0 when built by hand).
    info
        How it was learned (estimator, prior, protocol, negative-count policy, ...).
    """

    nodes: tuple[str, ...]
    parents: Mapping[str, tuple[str, ...]]
    domains: Mapping[str, tuple[Any, ...]]
    cpts: Mapping[str, np.ndarray]
    sds: Mapping[str, np.ndarray] | None = None
    counts: Mapping[str, np.ndarray] | None = None
    n_records: int = 0
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        nodes = tuple(self.nodes)
        object.__setattr__(self, "nodes", nodes)
        pars = validate_structure({n: self.parents.get(n, ()) for n in nodes}, nodes)
        object.__setattr__(self, "parents", pars)
        doms = {n: tuple(self.domains[n]) for n in nodes}
        object.__setattr__(self, "domains", doms)

        def _arrays(m: Mapping[str, Any] | None, what: str) -> dict[str, np.ndarray] | None:
            if m is None:
                return None
            out = {}
            for n in nodes:
                a = np.array(m[n], dtype=float)
                shape = (self.n_configs(n), len(doms[n]))
                if a.shape != shape:
                    raise ParameterError(f"the {what} of {n!r} has shape {a.shape}, not {shape}")
                a.setflags(write=False)
                out[n] = a
            return out

        cpts = _arrays(self.cpts, "CPT")
        assert cpts is not None
        for n, c in cpts.items():
            if np.any(c < -1e-12) or not np.allclose(c.sum(axis=1), 1.0, atol=1e-9):
                raise ParameterError(f"the CPT of {n!r} has a row that is not a distribution")
        object.__setattr__(self, "cpts", cpts)
        object.__setattr__(self, "sds", _arrays(self.sds, "sd table"))
        object.__setattr__(self, "counts", _arrays(self.counts, "count table"))
        object.__setattr__(self, "info", dict(self.info))

    # -- shape ------------------------------------------------------------------------------
    def cardinality(self, node: str) -> int:
        return len(self.domains[node])

    def n_configs(self, node: str) -> int:
        """``J_i``: the number of parent configurations of ``node``."""
        return int(np.prod([len(self.domains[p]) for p in self.parents[node]], dtype=np.int64))

    @property
    def edges(self) -> list[tuple[str, str]]:
        return [(p, n) for n in self.nodes for p in self.parents[n]]

    def n_parameters(self) -> int:
        """Free parameters ``sum_i (K_i - 1) J_i`` (the BIC penalty's count, Sec. 5.5)."""
        return sum((self.cardinality(n) - 1) * self.n_configs(n) for n in self.nodes)

    def thesis_row(self, node: str, which: str = "cpt") -> np.ndarray:
        """A CPT (or sd table) value-major, as Ma prints it in Fig. 5.2 / Table 5.2."""
        t = {"cpt": self.cpts, "sd": self.sds, "counts": self.counts}[which]
        if t is None:
            raise ParameterError(f"this network has no {which} tables")
        return t[node].T.ravel()

    # -- probabilities ----------------------------------------------------------------------
    def _config_index(self, node: str, codes: np.ndarray) -> np.ndarray:
        j = np.zeros(codes.shape[0], dtype=np.int64)
        for p in self.parents[node]:
            j = j * len(self.domains[p]) + codes[:, self.nodes.index(p)]
        return j

    def _check_codes(self, codes: Any) -> np.ndarray:
        c = np.asarray(codes)
        if c.ndim != 2 or c.shape[1] != len(self.nodes):
            raise SchemaError(f"codes must have shape (n, {len(self.nodes)}), got {c.shape}")
        sizes = np.array([self.cardinality(n) for n in self.nodes])
        if c.size and (np.any(c < 0) or np.any(c >= sizes)):
            raise SchemaError("codes outside the nodes' domains")
        return c.astype(np.int64)

    def log_likelihood(self, codes: Any) -> float:
        """``sum_records log Pr(record)`` of integer codes ``(n, len(nodes))`` (natural log)."""
        c = self._check_codes(codes)
        total = 0.0
        with np.errstate(divide="ignore"):
            for i, n in enumerate(self.nodes):
                total += float(np.log(self.cpts[n][self._config_index(n, c), c[:, i]]).sum())
        return total

    def fitted_log_likelihood(self) -> float:
        """``sum_ijk N_ijk log theta_ijk`` at the (estimated) counts the network was fitted to.

        Counts below 0 (a moment estimate) count as 0, as do cells with ``theta = 0``.
        """
        if self.counts is None:
            raise ParameterError("this network carries no counts")
        total = 0.0
        for n in self.nodes:
            nn = np.maximum(self.counts[n], 0.0)
            th = self.cpts[n]
            pos = (nn > 0) & (th > 0)
            total += float(np.sum(nn[pos] * np.log(th[pos])))
        return total

    def joint(self) -> np.ndarray:
        """The full joint distribution over ``nodes`` (first node slowest); small networks."""
        sizes = [self.cardinality(n) for n in self.nodes]
        cells = int(np.prod(sizes, dtype=np.int64))
        if cells > 2**22:
            raise ParameterError(f"the joint distribution has {cells:,} cells: too large")
        codes = np.stack(np.unravel_index(np.arange(cells), sizes), axis=1)
        logp = np.zeros(cells)
        with np.errstate(divide="ignore"):
            for i, n in enumerate(self.nodes):
                logp += np.log(self.cpts[n][self._config_index(n, codes), codes[:, i]])
        return np.exp(logp)

    def sample(self, n: int, rng: RngLike = None) -> np.ndarray:
        """Draw ``n`` records by forward (ancestral) sampling; codes ``(n, len(nodes))``."""
        if int(n) < 0:
            raise ParameterError(f"cannot draw {n} records")
        gen = as_generator(rng)
        n = int(n)
        out = np.zeros((n, len(self.nodes)), dtype=np.int64)
        for node in topological_order(self.parents):
            i = self.nodes.index(node)
            cum = np.cumsum(self.cpts[node], axis=1)
            cum[:, -1] = 1.0
            rows = cum[self._config_index(node, out)]
            u = gen.random(n)
            out[:, i] = (u[:, None] >= rows).sum(axis=1)
        return out

    # -- export -----------------------------------------------------------------------------
    def config_labels(self, node: str) -> list[str]:
        """``"A=a1,B=b2"`` for each parent configuration (``""`` for a root)."""
        pars = self.parents[node]
        if not pars:
            return [""]
        sizes = [len(self.domains[p]) for p in pars]
        return [
            ",".join(f"{p}={self.domains[p][c]}" for p, c in zip(pars, cell))
            for cell in np.ndindex(*sizes)
        ]

    def to_rows(self) -> list[dict[str, Any]]:
        rows = []
        for n in self.nodes:
            labels = self.config_labels(n)
            for j, lab in enumerate(labels):
                for k, v in enumerate(self.domains[n]):
                    r: dict[str, Any] = {
                        "node": n,
                        "parents": lab,
                        "value": v,
                        "theta": float(self.cpts[n][j, k]),
                    }
                    if self.sds is not None:
                        r["sd"] = float(self.sds[n][j, k])
                    if self.counts is not None:
                        r["count"] = float(self.counts[n][j, k])
                    rows.append(r)
        return rows

    def to_pandas(self) -> Any:
        """One row per CPT entry: node, parents (configuration), value, theta, sd, count."""
        import pandas as pd

        return pd.DataFrame(self.to_rows())

    def to_dict(self) -> dict[str, Any]:
        def _lst(m: Mapping[str, np.ndarray] | None) -> dict[str, Any] | None:
            if m is None:
                return None
            return {n: [[None if np.isnan(x) else float(x) for x in r] for r in m[n]]
                    for n in self.nodes}  # fmt: skip

        return {
            "model": "bayesian-network",
            "layout": "cpts[node][j][k] = Pr(node = k | parents = j), parent configurations "
            "in mixed radix with the first parent slowest",
            "nodes": list(self.nodes),
            "parents": {n: list(self.parents[n]) for n in self.nodes},
            "domains": {n: [json_ready(v) for v in self.domains[n]] for n in self.nodes},
            "cpts": _lst(self.cpts),
            "sds": _lst(self.sds),
            "counts": _lst(self.counts),
            "n_records": int(self.n_records),
            "info": {k: json_ready(v) for k, v in self.info.items()},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BayesianNetwork:
        def _arr(m: Any) -> dict[str, np.ndarray] | None:
            if m is None:
                return None
            return {n: np.array([[np.nan if x is None else x for x in r] for r in v], float)
                    for n, v in m.items()}  # fmt: skip

        try:
            return cls(
                nodes=tuple(d["nodes"]),
                parents={n: tuple(p) for n, p in d["parents"].items()},
                domains={n: tuple(v) for n, v in d["domains"].items()},
                cpts=_arr(d["cpts"]) or {},
                sds=_arr(d.get("sds")),
                counts=_arr(d.get("counts")),
                n_records=int(d.get("n_records", 0)),
                info=d.get("info", {}),
            )
        except KeyError as e:
            raise ParameterError(
                f"not a Bayesian-network model: {e.args[0]!r} is missing"
            ) from None

    # -- pgmpy ------------------------------------------------------------------------------
    def to_pgmpy(self) -> Any:
        """A ``pgmpy.models.DiscreteBayesianNetwork`` with one ``TabularCPD`` per node."""
        bn_cls, cpd_cls = _pgmpy()
        model = bn_cls()
        model.add_nodes_from(self.nodes)
        model.add_edges_from(self.edges)
        for n in self.nodes:
            pars = list(self.parents[n])
            model.add_cpds(
                cpd_cls(
                    n,
                    self.cardinality(n),
                    self.cpts[n].T,
                    evidence=pars or None,
                    evidence_card=[self.cardinality(p) for p in pars] or None,
                    state_names={v: list(self.domains[v]) for v in (n, *pars)},
                )
            )
        return model

    @classmethod
    def from_pgmpy(cls, model: Any, nodes: Sequence[str] | None = None) -> BayesianNetwork:
        """Read a pgmpy discrete Bayesian network (its CPDs' parent order is kept)."""
        nodes = tuple(nodes) if nodes is not None else tuple(model.nodes())
        parents, domains, cpts = {}, {}, {}
        for n in nodes:
            cpd = model.get_cpds(n)
            if cpd is None:
                raise ParameterError(f"the pgmpy model has no CPD for {n!r}")
            pars = tuple(cpd.variables[1:])
            k = int(cpd.variable_card)
            parents[n] = pars
            domains[n] = tuple(cpd.state_names.get(n, range(k)))
            cpts[n] = np.asarray(cpd.get_values(), dtype=float).reshape(k, -1).T
        return cls(nodes=nodes, parents=parents, domains=domains, cpts=cpts)


def _pgmpy() -> tuple[Any, Any]:
    try:
        from pgmpy.factors.discrete import TabularCPD
        from pgmpy.models import DiscreteBayesianNetwork
    except ImportError:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(
            "pgmpy is not installed: pip install pgmpy (or privlab[test])"
        ) from None
    return DiscreteBayesianNetwork, TabularCPD
