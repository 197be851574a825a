"""Anonymeter's inference evaluator with a privlab posterior as its attacker.

Anonymeter (Giomi, Boenisch, Wehmeyer and Tasnádi, "A Unified Framework for Quantifying
Privacy Risk in Synthetic Data", PoPETs 2023(2), 312-328) measures the inference risk of a
release by attacking two sets of people drawn from the same population: the records the
release was made from (``ori``) and a *control* set of records it was not made from.  Each
attack rate comes with a Wilson interval, and the risk is the residual success

    ``(r_ori - r_control) / (1 - r_control)``

(Giomi et al., Sec. 4): how much of what the attacker gets wrong on outsiders it gets right
on the release's own members.  What the release teaches about the population (``P(sensitive
| QI)``, which would hold for anyone) raises both rates alike and cancels; only what it
discloses about its members remains.  Anonymeter's own attacker is a nearest-neighbour
predictor on a synthetic table; its :class:`InferenceEvaluator` takes any ``inference_model``
with ``predict(x: DataFrame) -> Series``, the one model predicting both sets.

:class:`PosteriorPredictor` is such a model, made from a privlab :class:`Posterior`:

* a member of the release (a row of ``x`` whose index names a posterior row) is guessed as
  its posterior's most probable value: the learning attack's guess for the person linked to
  their published row (Anatomy publishes exact quasi-identifiers);
* anyone else (Anonymeter's control set) has no published row and is guessed by a model:
  by default the attacker's *reconstruction*, for the person's QI combination the value with
  the largest summed posterior probability over the release's rows with that combination
  (the overall most probable value for a combination the release does not hold), or a
  ``fallback`` predictor of the caller's.

So the attack rate is the attack's ACC on the sampled members, the control rate is how well
what the attacker learned from the release predicts outsiders, and the residual risk is the
disclosure that is about membership in the release's groups.  This differs from
:func:`privlab.attacks.control_attack`, which attacks the *same* members with a model learned
from public data only.

Anonymeter 1.1.0 pins ``numpy<1.27`` and ``pyarrow<22`` although it runs on numpy 2, so it is
not a declared dependency: install it with ``pip install --no-deps anonymeter==1.1.0`` (its
other dependencies, scikit-learn, pandas, joblib, numba and polars, come with privlab and its
test extra).  Only :func:`anonymeter_risk` imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from privlab._rng import RngLike, as_generator
from privlab.attacks._layout import partition_of
from privlab.attacks.posterior import Posterior
from privlab.data.schema import _keys
from privlab.errors import MissingDependencyError, ParameterError, SchemaError

#: The Anonymeter release this adapter is written and tested against.
ANONYMETER_VERSION = "1.1.0"

_INSTALL = (
    f"pip install --no-deps anonymeter=={ANONYMETER_VERSION} (--no-deps because anonymeter "
    f"{ANONYMETER_VERSION} pins numpy<1.27 and pyarrow<22, which privlab's numpy>=2 excludes; "
    "it runs on numpy 2, and its other dependencies come with privlab[test])"
)


class Predictor(Protocol):
    """Anonymeter's ``InferencePredictor`` protocol: ``predict(x) -> Series`` indexed like x."""

    def predict(self, x: pd.DataFrame) -> pd.Series: ...


#: what _import_anonymeter found besides the evaluator (filled once it has run)
_ANONYMETER: dict[str, Any] = {}


def _import_anonymeter() -> Any:
    """Anonymeter's ``InferenceEvaluator`` class, or a one-line error saying how to install."""
    try:
        from anonymeter.evaluators.inference_evaluator import InferenceEvaluator
        from anonymeter.neighbors import mixed_types_kneighbors
        from anonymeter.stats.confidence import residual_success

        _ANONYMETER["residual_success"] = residual_success
        _cache_kernels(mixed_types_kneighbors)
    except ImportError as e:
        missing = getattr(e, "name", None) or "anonymeter"
        if missing.split(".")[0] == "anonymeter":
            raise MissingDependencyError(f"anonymeter is not installed: {_INSTALL}") from None
        raise MissingDependencyError(
            f"anonymeter needs {missing}, which is not installed: pip install {missing}"
        ) from None
    return InferenceEvaluator


def _cache_kernels(kernels: Any) -> None:
    """Anonymeter's compiled kernels (its mixed-type distances) cached on disk, so that they
    compile once per machine, not once per process: their ``@jit`` has no ``cache=True``,
    and compiling them took 8 of the 35 s of ``privlab report`` on a synthetic Adult.
    ``Dispatcher.enable_caching`` is numba's own switch (a cache it cannot write to, numba
    skips with a warning of its own and compiles as before)."""
    from numba.core.dispatcher import Dispatcher

    for f in vars(kernels).values():
        if isinstance(f, Dispatcher) and not f.signatures:  # not compiled yet in this process
            f.enable_caching()


def _text_keys(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """One text key per row of ``frame`` over ``columns``, matching values as privlab's
    :meth:`Attribute.encode` does (by their text; integral floats as integers)."""
    parts = [_keys(np.asarray(frame[c].to_numpy(), dtype=object)) for c in columns]
    if not parts:
        return np.full(len(frame), "", dtype=object)
    return np.array(["\x1f".join(t) for t in zip(*parts)], dtype=object)


def _missing(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    absent = [c for c in columns if c not in frame.columns]
    if absent:
        raise SchemaError(f"{what} has no column {', '.join(map(repr, absent))}")


def _row_map(rows: Mapping[Any, int] | pd.Series | None, n: int) -> pd.Series:
    """``label -> posterior row`` (default: the label is the row number)."""
    if rows is None:
        return pd.Series(np.arange(n, dtype=np.int64), index=pd.RangeIndex(n))
    s = pd.Series(rows) if not isinstance(rows, pd.Series) else rows
    if not s.index.is_unique:
        raise ParameterError("rows maps some label to several posterior rows")
    try:
        pos = s.to_numpy(dtype=np.int64)
    except (TypeError, ValueError):
        raise ParameterError("rows must map each label to a posterior row number") from None
    if pos.size and (pos.min() < 0 or pos.max() >= n):
        bad = int(pos[(pos < 0) | (pos >= n)][0])
        raise ParameterError(f"rows names posterior row {bad}; the posterior has rows 0..{n - 1}")
    if np.unique(pos).size != pos.size:
        raise ParameterError("rows maps several labels to the same posterior row")
    return pd.Series(pos, index=s.index)


class PosteriorPredictor:
    """A privlab posterior as Anonymeter's inference model (``InferencePredictor``).

    Parameters
    ----------
    posterior
        The attack's posterior over the release's rows.
    qi
        The release's published quasi-identifiers (the columns Anonymeter calls ``aux_cols``),
        one row per posterior row in the posterior's row order (e.g. Anatomy's QIT,
        ``release.quasi_identifiers().to_pandas()``).  Needed for the default reconstruction
        of outsiders and to check that a member's QIs are those of its published row.
    rows
        Which labels of ``x``'s index are the release's members and which posterior row each
        is: a mapping ``label -> row`` (or a Series).  Default: the label *is* the row number
        (labels ``0..n-1``).  Any other label is an outsider, so a control set must not reuse
        these labels (:func:`anonymeter_risk` relabels it).
    labels
        The sensitive value of each posterior column, as the secret column holds it (same
        type; a Series keeps its dtype, e.g. categorical).  Default: the posterior's
        ``values`` (strings).
    fallback
        A model for outsiders (anything with ``predict(x) -> Series``, e.g. a scikit-learn
        pipeline wrapped by Anonymeter's ``SklearnInferencePredictor``).  Default: the
        reconstruction from ``qi`` described in the module docstring.

    Notes
    -----
    A member is guessed as ``labels[argmax_v posterior.probs[row, v]]`` (ties: the first
    value in domain order).  An outsider with QI combination ``q`` is guessed as
    ``labels[argmax_v sum_{i: qi_i = q} probs[i, v]]``, or ``labels[argmax_v sum_i probs[i,
    v]]`` when no release row has ``q``: the value the attacker's learned ``P(sensitive |
    QI)`` makes most probable.  QI values match by their text, as privlab's encoding does.
    """

    def __init__(
        self,
        posterior: Posterior,
        qi: pd.DataFrame | None = None,
        *,
        rows: Mapping[Any, int] | pd.Series | None = None,
        labels: Sequence[Any] | pd.Series | None = None,
        fallback: Predictor | None = None,
    ) -> None:
        n = posterior.n_rows
        self.posterior = posterior
        self.rows = _row_map(rows, n)
        if labels is None:
            labels = pd.Series(list(posterior.values), dtype=object)
        labels = labels if isinstance(labels, pd.Series) else pd.Series(list(labels))
        if len(labels) != len(posterior.values):
            raise ParameterError(
                f"{len(labels)} labels for the posterior's {len(posterior.values)} values"
            )
        self.labels = labels.reset_index(drop=True)
        self.fallback = fallback
        self.qi = None if qi is None else qi.reset_index(drop=True)
        if self.qi is not None and len(self.qi) != n:
            raise ParameterError(f"qi has {len(self.qi)} rows; the posterior has {n}")
        self._top = posterior.probs.argmax(axis=1)
        self._table: dict[str, int] = {}
        self._overall = int(posterior.probs.sum(axis=0).argmax())
        self._qi_keys: np.ndarray | None = None
        if self.qi is not None:
            keys = _text_keys(self.qi, list(self.qi.columns))
            self._qi_keys = keys
            codes, first = np.unique(keys, return_inverse=True)
            sums = np.zeros((codes.size, posterior.probs.shape[1]))
            np.add.at(sums, first, posterior.probs)
            self._table = dict(zip(codes.tolist(), sums.argmax(axis=1).tolist()))

    @property
    def aux_cols(self) -> list[str]:
        """The quasi-identifier columns the reconstruction reads."""
        return [] if self.qi is None else [str(c) for c in self.qi.columns]

    def reconstruct(self, x: pd.DataFrame) -> np.ndarray:
        """The reconstruction's value code for each row of ``x`` (by its QIs alone)."""
        if self.qi is None:
            raise ParameterError("the reconstruction needs the release's quasi-identifiers (qi)")
        _missing(x, self.aux_cols, "the rows to predict")
        keys = _text_keys(x, self.aux_cols)
        return np.array([self._table.get(k, self._overall) for k in keys], dtype=np.int64)

    def _series(self, values: np.ndarray, index: pd.Index) -> pd.Series:
        """``values`` as a Series in the labels' dtype (object when that would lose any)."""
        out = pd.Series(values, index=index, dtype=object)
        try:
            typed = out.astype(self.labels.dtype)
        except (TypeError, ValueError):
            return out
        return typed if int(typed.isna().sum()) == int(out.isna().sum()) else out

    def predict(self, x: pd.DataFrame) -> pd.Series:
        """The guess for each row of ``x``, indexed like ``x`` (members: the posterior's
        argmax; outsiders: the fallback or the reconstruction)."""
        pos = self.rows.reindex(x.index).to_numpy(dtype=np.float64)
        member = ~np.isnan(pos)
        values = np.empty(len(x), dtype=object)
        labels = self.labels.to_numpy(dtype=object)
        if member.any():
            rows = pos[member].astype(np.int64)
            self._check_members(x.loc[member], rows)
            values[member] = labels[self._top[rows]]
        if not member.all():
            rest = x.loc[~member]
            if self.fallback is None:
                values[~member] = labels[self.reconstruct(rest)]
            else:
                guess = self.fallback.predict(rest)
                if not isinstance(guess, pd.Series):
                    guess = pd.Series(np.asarray(guess, dtype=object), index=rest.index)
                values[~member] = guess.reindex(rest.index).to_numpy(dtype=object)
        return self._series(values, x.index)

    def _check_members(self, x: pd.DataFrame, rows: np.ndarray) -> None:
        """A member's QIs must be those of its published row: otherwise the index does not
        name the release's rows (e.g. a control set reusing their labels)."""
        if self._qi_keys is None or any(c not in x.columns for c in self.aux_cols):
            return
        bad = np.flatnonzero(_text_keys(x, self.aux_cols) != self._qi_keys[rows])
        if bad.size:
            raise ParameterError(
                f"row {x.index[bad[0]]!r} of the rows to predict maps to posterior row "
                f"{rows[bad[0]]} but its quasi-identifiers differ from that row's "
                f"({bad.size} such rows): its index does not name the release's rows (a "
                "control set must not reuse the release's labels)"
            )


def labels_like(values: Sequence[str], *columns: pd.Series) -> pd.Series:
    """The posterior's values (text) as the secret column holds them: each value as the
    first of ``columns`` whose text matches it holds it, in the first column's dtype (object
    when that dtype cannot hold every value)."""
    lookup: dict[str, Any] = {}
    for col in reversed(columns):
        uniq = pd.unique(col.dropna().to_numpy(dtype=object))
        lookup.update(zip(_keys(np.asarray(uniq, dtype=object)).tolist(), uniq))
    out = pd.Series([lookup.get(v, v) for v in values], dtype=object)
    if not columns:
        return out
    dtype = columns[0].dtype
    if isinstance(dtype, pd.CategoricalDtype) and not set(out.dropna()) <= set(dtype.categories):
        return out  # a category the column lacks: object (pandas 4 will refuse the cast)
    try:
        if pd.api.types.is_numeric_dtype(dtype):
            typed = pd.to_numeric(out).astype(dtype)
        else:
            typed = out.astype(dtype)
    except (TypeError, ValueError):
        return out
    same = _keys(typed.to_numpy(dtype=object)).tolist() == [str(v) for v in values]
    return typed if same else out


def random_world(release, rng: RngLike = None) -> pd.DataFrame:
    """One random world of a release with groups: its published quasi-identifiers, each
    group's published sensitive values assigned to its rows uniformly at random (Kifer 2009,
    Sec. 4).  A synthetic table drawn from the release, for Anonymeter's own attackers."""
    part = partition_of(release)
    gen = as_generator(rng)
    n, m = part.n_rows, part.counts.shape[1]
    order = np.lexsort((gen.random(n), part.group_of))
    codes = np.empty(n, dtype=np.int64)
    codes[order] = np.repeat(np.tile(np.arange(m), part.n_groups), part.counts.ravel())
    frame = release.quasi_identifiers().to_pandas()
    dom = np.asarray(part.sensitive.domain, dtype=object)
    frame[part.sensitive.name] = dom[codes]
    return frame


def targets_frame(release) -> pd.DataFrame:
    """The release's people as Anonymeter's ``ori``: the published quasi-identifiers and the
    custodian's true sensitive value of each row, indexed by row (= posterior row)."""
    part = partition_of(release)
    truth = getattr(release, "truth", None)
    if truth is None:
        raise ParameterError("the release has no custody: its true sensitive values are unknown")
    frame = release.quasi_identifiers().to_pandas()
    frame[part.sensitive.name] = np.asarray(part.sensitive.domain, dtype=object)[truth]
    return frame


@dataclass(frozen=True)
class AnonymeterResult:
    """Anonymeter's results for one evaluation.

    Attributes
    ----------
    risk
        Anonymeter's ``PrivacyRisk``: the residual risk clipped to ``[0, 1]`` with its
        interval (the attack rate's when there is no control set).
    residual
        ``(value, error)`` of the residual success before clipping (negative when the
        control set is attacked more successfully than the members), or None.
    attack_rate, control_rate, baseline_rate
        Anonymeter's ``SuccessRate`` ``(value, error)`` of the attack on ``ori``, on the
        control set (or None) and of the random guess drawn from ``syn`` (biased low
        unless every row of ``ori`` is attacked: see :func:`anonymeter_risk`).
    n_attacks
        ``(ori, baseline, control)`` attacks made.
    n_success, n_control, n_baseline
        Successful guesses of each.
    guesses, control_guesses
        The guesses, indexed by the targets' labels (the control set's own labels).
    evaluator
        The evaluated ``InferenceEvaluator``.
    """

    risk: Any
    residual: tuple[float, float] | None
    attack_rate: Any
    control_rate: Any
    baseline_rate: Any
    n_attacks: tuple[int, int, int]
    n_success: int
    n_control: int | None
    n_baseline: int
    guesses: pd.Series
    control_guesses: pd.Series | None
    evaluator: Any

    def to_dict(self) -> dict[str, Any]:
        def rate(r):
            return None if r is None else {"value": float(r.value), "error": float(r.error)}

        return {
            "risk": float(self.risk.value),
            "risk_ci": [float(c) for c in self.risk.ci],
            "residual": None if self.residual is None else list(self.residual),
            "attack_rate": rate(self.attack_rate),
            "control_rate": rate(self.control_rate),
            "baseline_rate": rate(self.baseline_rate),
            "n_attacks": list(self.n_attacks),
            "n_success": self.n_success,
            "n_control": self.n_control,
            "n_baseline": self.n_baseline,
        }


def _fresh_labels(n: int, taken: pd.Index) -> pd.Index:
    """``n`` integer labels none of which is in ``taken``."""
    ints = pd.to_numeric(pd.Series(taken, dtype=object), errors="coerce")
    start = int(np.nanmax(ints.to_numpy(dtype=np.float64))) + 1 if ints.notna().any() else 0
    fresh = pd.RangeIndex(max(start, 0), max(start, 0) + n)
    if fresh.isin(taken).any():  # pragma: no cover - labels mixing numbers and text
        raise ParameterError("cannot relabel the control set apart from the release's labels")
    return fresh


def anonymeter_risk(
    posterior: Posterior,
    ori: pd.DataFrame,
    control: pd.DataFrame | None,
    aux_cols: Sequence[str],
    secret: str,
    *,
    n_attacks: int = 500,
    rows: Mapping[Any, int] | pd.Series | None = None,
    qi: pd.DataFrame | None = None,
    syn: pd.DataFrame | None = None,
    fallback: Predictor | None = None,
    inference_model: Predictor | None = None,
    confidence_level: float = 0.95,
    rng: RngLike = None,
    n_jobs: int = 1,
) -> AnonymeterResult:
    """Run Anonymeter's ``InferenceEvaluator`` with a privlab posterior as its attacker.

    Parameters
    ----------
    posterior
        The attack's posterior over the release's rows.
    ori
        The release's people (``aux_cols`` and the true ``secret``), e.g.
        :func:`targets_frame`; ``n_attacks`` of them are sampled as targets.
    control
        People of the same population the release was not made from (``aux_cols`` and
        ``secret``), or None for no control (the risk is then the attack rate).  Relabelled
        internally so that no label names a release row; :attr:`AnonymeterResult.control_guesses`
        carries its own labels.
    aux_cols
        The quasi-identifiers the attacker knows about every target.
    secret
        The sensitive column.
    n_attacks
        Targets sampled from each of ``ori`` and ``control`` (at most their sizes; Anonymeter's
        default 500).
    rows
        ``label -> posterior row`` for ``ori``'s labels (default: the label is the row).
    qi
        The release's quasi-identifiers, one row per posterior row, for the reconstruction
        (default: ``ori[aux_cols]`` in row order, when ``ori`` holds every release row).
    syn
        The table Anonymeter draws its random-guess baseline from (its ``secret`` column; the
        adapter does not read it).  Default: ``ori``'s labels and ``aux_cols``, each row's
        value drawn independently from the posterior's marginal (for Anatomy the published
        value counts), drawn with ``rng``.  See the note on the baseline below.
    fallback
        The model for outsiders (default: the reconstruction; see :class:`PosteriorPredictor`).
    inference_model
        Replace the adapter by this model (None: the adapter); Anonymeter's default
        nearest-neighbour attack on ``syn`` is :func:`anonymeter_knn_risk`.
    confidence_level
        Of the intervals.
    rng
        Seed or generator.  Anonymeter samples its targets with numpy's legacy global
        generator, which no argument reaches: given ``rng``, that generator is seeded from it
        for the evaluation and restored afterwards (reproducible runs); None leaves it alone
        (and the default ``syn`` draws from the OS).
    n_jobs
        Anonymeter's parallel jobs (its nearest-neighbour search only).

    Returns
    -------
    AnonymeterResult
        The risk with its interval and the attack, control and baseline rates.

    Raises
    ------
    MissingDependencyError
        Anonymeter is not installed (the message says how to install it).

    Notes
    -----
    Anonymeter 1.1.0 aligns its random-guess baseline with the targets by index label
    (``syn.sample(n)[secret].reindex_like(targets)``): a target whose label is not among the
    sampled ``syn`` rows gets no guess and counts as a failure.  Its baseline rate is a random
    guess's only when ``syn`` holds ``ori``'s labels and every row of ``ori`` is attacked
    (``n_attacks >= len(ori)``); otherwise it is biased towards 0.  The risk does not use it.
    """
    aux_cols = [str(c) for c in aux_cols]
    _missing(ori, [*aux_cols, secret], "ori")
    if control is not None:
        _missing(control, [*aux_cols, secret], "control")
    n = posterior.n_rows
    row_map = _row_map(rows, n)
    if not ori.index.is_unique:
        raise ParameterError("ori's index names some row twice: one label per person")
    unknown = ~ori.index.isin(row_map.index)
    if unknown.any():
        raise ParameterError(
            f"ori's row {ori.index[np.flatnonzero(unknown)[0]]!r} names no posterior row "
            f"({int(unknown.sum())} such rows; pass rows=label->row)"
        )
    if qi is None:
        if len(ori) != n:
            raise ParameterError(
                f"ori holds {len(ori)} of the release's {n} rows: pass qi, the release's "
                "quasi-identifiers, for the reconstruction"
            )
        order = np.argsort(row_map.reindex(ori.index).to_numpy())
        qi = ori.iloc[order][aux_cols]
    _missing(qi, aux_cols, "qi")
    qi = qi[aux_cols].reset_index(drop=True)
    columns = [ori[secret]] + ([control[secret]] if control is not None else [])
    labels = labels_like(posterior.values, *columns)
    predictor = PosteriorPredictor(posterior, qi, rows=row_map, labels=labels, fallback=fallback)
    model = predictor if inference_model is None else inference_model

    control_in, control_labels = None, None
    if control is not None:
        control_labels = control.index
        control_in = control.set_axis(_fresh_labels(len(control), row_map.index))
    gen = as_generator(rng)
    if syn is None:
        marginal = posterior.probs.sum(axis=0) / posterior.probs.sum()
        codes = gen.choice(marginal.size, size=len(ori), p=marginal)
        syn = ori[aux_cols].copy()
        syn[secret] = predictor._series(labels.to_numpy(dtype=object)[codes], syn.index)

    InferenceEvaluator = _import_anonymeter()
    evaluator = InferenceEvaluator(
        ori=ori,
        syn=syn,
        aux_cols=aux_cols,
        secret=secret,
        regression=False,
        n_attacks=n_attacks,
        control=control_in,
        inference_model=model,
    )
    _evaluate(evaluator, None if rng is None else gen, n_jobs)
    return _result(evaluator, confidence_level, control_labels, control_in)


def anonymeter_knn_risk(
    ori: pd.DataFrame,
    syn: pd.DataFrame,
    control: pd.DataFrame | None,
    aux_cols: Sequence[str],
    secret: str,
    *,
    n_attacks: int = 500,
    confidence_level: float = 0.95,
    rng: RngLike = None,
    n_jobs: int = 1,
) -> AnonymeterResult:
    """Anonymeter's own inference attack (its nearest-neighbour predictor on ``syn``, e.g.
    :func:`random_world` of an Anatomy release), with the same sampling and result as
    :func:`anonymeter_risk`: the number to put beside the adapter's."""
    aux_cols = [str(c) for c in aux_cols]
    _missing(ori, [*aux_cols, secret], "ori")
    _missing(syn, [*aux_cols, secret], "syn")
    if control is not None:
        _missing(control, [*aux_cols, secret], "control")
    InferenceEvaluator = _import_anonymeter()
    evaluator = InferenceEvaluator(
        ori=ori, syn=syn, aux_cols=aux_cols, secret=secret, regression=False,
        n_attacks=n_attacks, control=control,
    )  # fmt: skip
    _evaluate(evaluator, None if rng is None else as_generator(rng), n_jobs)
    return _result(evaluator, confidence_level, None if control is None else control.index, control)


def _evaluate(evaluator: Any, gen: np.random.Generator | None, n_jobs: int) -> None:
    """Run the evaluation; with ``gen``, numpy's legacy global generator (which Anonymeter's
    ``DataFrame.sample`` calls draw from, and no argument reaches) is seeded from it for the
    evaluation and restored afterwards."""
    if gen is None:
        evaluator.evaluate(n_jobs=n_jobs)
        return
    legacy_seed = int(gen.integers(2**32))
    state = np.random.get_state()  # noqa: NPY002
    try:
        np.random.seed(legacy_seed)  # noqa: NPY002 - Anonymeter samples from the global one
        evaluator.evaluate(n_jobs=n_jobs)
    finally:
        np.random.set_state(state)  # noqa: NPY002


def _result(
    evaluator: Any,
    confidence_level: float,
    control_labels: pd.Index | None,
    control_in: pd.DataFrame | None,
) -> AnonymeterResult:
    _import_anonymeter()
    residual_success = _ANONYMETER["residual_success"]
    res = evaluator.results(confidence_level=confidence_level)
    residual = None
    if res.control_rate is not None:
        r = residual_success(res.attack_rate, res.control_rate)
        residual = (float(r.value), float(r.error))
    control_guesses = evaluator._guesses_control
    if control_guesses is not None and control_labels is not None and control_in is not None:
        relabel = pd.Series(control_labels, index=control_in.index)
        control_guesses = control_guesses.set_axis(
            pd.Index(relabel.reindex(control_guesses.index).to_numpy())
        )
    return AnonymeterResult(
        risk=res.risk(),
        residual=residual,
        attack_rate=res.attack_rate,
        control_rate=res.control_rate,
        baseline_rate=res.baseline_rate,
        n_attacks=(res.n_attacks_ori, res.n_attacks_baseline, res.n_attacks_control),
        n_success=int(res.n_success),
        n_control=None if res.n_control is None else int(res.n_control),
        n_baseline=int(res.n_baseline),
        guesses=evaluator._guesses_success,
        control_guesses=control_guesses,
        evaluator=evaluator,
    )
