"""Individual and global re-identification risk of a sample with sampling weights, as sdcMicro
and mu-Argus compute them (Benedetti & Franconi 1998; Franconi & Polettini 2004).

A record's *key* is its combination of quasi-identifier values.  Key ``k`` occurs ``f_k``
times in the sample and ``F_k`` times in the population, which is unknown; the sampling
weights estimate it, ``F^_k = sum of w_i`` over the key's records.  The super-population
model of Benedetti and Franconi takes ``F_k - f_k``, given ``f_k``, as negative binomial
(the failures before the ``f_k``-th success) with success probability ``p_k = f_k / F^_k``.
An intruder who links a record to one of the ``F_k`` people of its key picks the right one
with probability ``1 / F_k``, so the record's *individual risk* is

    r_k = E[1 / F_k | f_k] = sum_{h >= f} (1/h) C(h-1, f-1) p^f q^(h-f),   q = 1 - p,

computed as sdcMicro's ``indivRisk`` does (``measure_risk``'s individual risk; Franconi &
Polettini 2004, Sec. 3):

* ``f = 1``: ``r = (p/q) log(1/p)``;
* ``f = 2``: ``r = p/q - (p/q)^2 log(1/p)``;
* ``f >= 3``: ``method="approx"`` (sdcMicro's default) ``r ~ p / (f - q)``;
  ``method="exact"`` the series itself, as the integral ``r = p int_0^1 u^(f-1) / (p + q u)
  du`` (``1/F = int_0^1 t^(F-1) dt`` with the negative binomial's generating function, then
  ``u = p t / (1 - q t)``), integrated numerically with its error bound checked;
* a key whose weights sum to its sample count (``p = 1``: the sample holds the whole key)
  has ``r = 1 / f``, and so has every record when no weights are given (sdcMicro's
  ``survey=FALSE``: the sample is the population).

The *global risk* is the expected number of re-identifications ``ER = sum_i r_i`` and its
share of the records, ``ER / n`` (sdcMicro's ``global_risk_ER`` and ``global_risk``).

Where the formulas are written loosely: ``f = 2``'s form subtracts two numbers of order
``1/q`` when ``p`` is near 1 (weights just above 1), which loses every digit; it is
computed here as ``p - p^2 (log(1/p) - q) / q^2`` with the series ``sum_{j>=2} q^(j-2)/j``
for the last factor when ``q < 0.05``.  A weight sum below the key's sample count (``p >
1``) has no meaning in the model; it is refused, not clipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from privlab._frames import ToFrames
from privlab._params import check_codes, check_share
from privlab.errors import ParameterError, PrivlabError

METHODS = ("approx", "exact")
#: ``q`` below which ``f = 2``'s risk is computed from the series of ``log(1/p)``
_SERIES_Q = 0.05
#: absolute error bound accepted from the numerical integral of ``method="exact"``
_QUAD_TOL = 1e-10


def negative_binomial_risk(
    f: np.ndarray, population: np.ndarray, *, method: str = "approx"
) -> np.ndarray:
    """``E[1 / F | f]`` under the negative binomial model, per key: ``f`` the sample
    counts (integers >= 1), ``population`` the estimated population counts ``F^`` (at
    least ``f``); see the module docstring for the formulas and ``method``."""
    if method not in METHODS:
        raise ParameterError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    f = np.asarray(f, dtype=np.int64)
    big = np.asarray(population, dtype=np.float64)
    if f.shape != big.shape:
        raise PrivlabError("f and population must have the same shape")
    if f.size and f.min() < 1:
        raise ParameterError("sample counts must be >= 1")
    if not np.all(np.isfinite(big)):
        raise ParameterError("estimated population counts must be finite")
    short = big < f * (1 - 1e-12)
    if short.any():
        raise ParameterError(
            f"{int(short.sum())} key(s) have weights that sum to less than their records in "
            "the sample (p = f / F > 1): a sampling weight stands for at least its own record"
        )
    p = np.minimum(f / np.maximum(big, 1e-300), 1.0)
    q = 1.0 - p
    r = np.empty(f.shape, dtype=np.float64)
    whole = q <= 0.0
    r[whole] = 1.0 / f[whole]
    log_inv_p = -np.log1p(-q)  # log(1/p), exact for p near 1
    one = (f == 1) & ~whole
    r[one] = p[one] / q[one] * log_inv_p[one]
    two = (f == 2) & ~whole
    r[two] = p[two] - p[two] ** 2 * _log_tail(q[two], log_inv_p[two])
    more = (f >= 3) & ~whole
    if method == "approx":
        r[more] = p[more] / (f[more] - q[more])
    else:
        r[more] = _exact_integral(f[more], p[more])
    return r


def _log_tail(q: np.ndarray, log_inv_p: np.ndarray) -> np.ndarray:
    """``(log(1/p) - q) / q^2 = sum_{j>=2} q^(j-2) / j`` (the series where ``q`` is small)."""
    out = np.empty_like(q)
    small = q < _SERIES_Q
    qs = q[small]
    terms = np.zeros_like(qs)
    power = np.ones_like(qs)
    for j in range(2, 40):  # q < 0.05: the 38th term is below 1e-50
        terms += power / j
        power = power * qs
    out[small] = terms
    qb = q[~small]
    out[~small] = (log_inv_p[~small] - qb) / qb**2
    return out


def _exact_integral(f: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``p int_0^1 u^(f-1) / (p + q u) du`` per distinct ``(f, p)``; refuses an integral
    whose error bound exceeds :data:`_QUAD_TOL`."""
    from scipy.integrate import quad

    pairs, inverse = np.unique(np.column_stack([f, p]), axis=0, return_inverse=True)
    values = np.empty(len(pairs))
    for i, (fk, pk) in enumerate(pairs):
        qk = 1.0 - pk
        value, err = quad(lambda u, fk=fk, pk=pk, qk=qk: u ** (fk - 1) / (pk + qk * u), 0.0,
                          1.0, epsabs=1e-13, epsrel=1e-12, limit=200)  # fmt: skip
        if not err <= _QUAD_TOL:  # pragma: no cover - the integrand is smooth on [0, 1]
            raise PrivlabError(f"the exact risk of f = {int(fk)}, p = {pk:g} did not converge")
        values[i] = pk * value
    return values[np.ravel(inverse)]


@dataclass(frozen=True, eq=False)
class IndividualRisk(ToFrames):
    """Each record's individual risk (:func:`individual_risk`), with its key's sample count
    ``fk`` and estimated population count ``Fk`` (the weights' sum; ``fk`` without
    weights), as sdcMicro's ``measure_risk`` gives them (``Res``), and the number of
    distinct ``keys``."""

    risk: np.ndarray = field(repr=False)
    fk: np.ndarray = field(repr=False)
    Fk: np.ndarray = field(repr=False)
    keys: int
    method: str
    weighted: bool
    names: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return int(self.risk.size)

    @property
    def expected_reidentifications(self) -> float:
        """The global risk as sdcMicro states it: ``sum_i r_i`` (``global_risk_ER``)."""
        return float(self.risk.sum())

    @property
    def global_risk(self) -> float:
        """The expected share of records re-identified, ``ER / n`` (``global_risk``)."""
        return self.expected_reidentifications / self.n if self.n else 0.0

    def share_above(self, threshold: float) -> float:
        """The share of records whose individual risk exceeds ``threshold``."""
        check_share("threshold", threshold)
        return float((self.risk > threshold).mean()) if self.n else 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "keys": self.keys,
            "method": self.method,
            "weighted": self.weighted,
            "names": list(self.names),
            "expected_reidentifications": self.expected_reidentifications,
            "global_risk": self.global_risk,
            "max_risk": float(self.risk.max()) if self.n else 0.0,
        }

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame({"risk": self.risk, "fk": self.fk, "Fk": self.Fk})


def first_bad_weight(weights: np.ndarray) -> int | None:
    """The first record whose sampling weight is not a finite number >= 1 (NaN, a
    non-number coerced to NaN, below 1), or None when every weight is one."""
    w = np.asarray(weights, dtype=np.float64).ravel()
    bad = ~np.isfinite(w) | (w < 1)
    return int(np.flatnonzero(bad)[0]) if bad.any() else None


def individual_risk(
    codes: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    method: str = "approx",
    names: tuple[str, ...] | list[str] | None = None,
) -> IndividualRisk:
    """The individual risk of every record of a sample (see the module docstring).

    Parameters
    ----------
    codes
        Integer codes ``(n, d)`` of the quasi-identifiers, one row per record (a key is a
        distinct row).
    weights
        The records' sampling weights (``n`` finite numbers >= 1), or None: the sample is
        the population and a record's risk is ``1 / f_k``.
    method
        ``"approx"`` (sdcMicro's default) or ``"exact"`` for keys of three records or more.
    names
        The quasi-identifiers' names (carried into the result).
    """
    from privlab.data.counts import distinct_rows

    if method not in METHODS:
        raise ParameterError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    c = check_codes(codes)
    n = c.shape[0]
    _, inverse, counts = distinct_rows(c)
    fk = counts[inverse].astype(np.int64)
    if weights is None:
        return IndividualRisk(1.0 / fk, fk, fk.astype(np.float64), keys=counts.size,
                              method="1/fk", weighted=False, names=tuple(names or ()))  # fmt: skip
    w = np.asarray(weights, dtype=np.float64).ravel()
    if w.size != n:
        raise ParameterError(f"{w.size} weights for {n} records")
    i = first_bad_weight(w)
    if i is not None:
        bad = int(np.count_nonzero(~np.isfinite(w) | (w < 1)))
        raise ParameterError(
            f"{bad} sampling weight(s) are not finite numbers >= 1 (record {i}: "
            f"{float(w[i])!r}); a record's weight is the number of people it stands for"
        )
    key_weight = np.bincount(inverse, weights=w, minlength=counts.size)
    big = key_weight[inverse]
    per_key = negative_binomial_risk(counts, key_weight, method=method)
    return IndividualRisk(per_key[inverse], fk, big, keys=counts.size, method=method,
                          weighted=True, names=tuple(names or ()))  # fmt: skip
