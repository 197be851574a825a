"""The learners' shared scikit-learn plumbing, in one place.

* scikit-learn's parameter-validation vocabulary (:class:`Interval`, :class:`StrOptions`,
  :class:`Options`, :class:`InvalidParameterError`) comes from its *private*
  ``sklearn.utils._param_validation``; this is the only privlab module that imports it, so a
  scikit-learn upgrade that moves it breaks one file.
* :class:`InvalidParameter`: scikit-learn's parameter-validation error that is also a privlab
  :class:`~privlab.errors.ParameterError`; :func:`validate_params` raises it.
* ``random_state``: every learner with randomness takes scikit-learn's ``random_state`` and,
  as an alias, privlab's ``rng`` (:func:`random_source` reads the one given; both at once is a
  :class:`~privlab.errors.ParameterError` unless they are the same seed).  Neither given means
  fresh randomness from the OS (DP noise from the OS CSPRNG): privlab never defaults to a
  fixed seed, so an unseeded learner is tagged ``non_deterministic``
  (:class:`FreshRandomnessTags`).
* :func:`fresh_randomness_checks`: the ``check_estimator`` checks that compare two fits, which
  an estimator drawing fresh randomness on every fit cannot pass unless scikit-learn can seed
  it through ``random_state``.
* The tabular input shared by the learners: a DataFrame (or array) of strings and numbers,
  ``categories={column: values}`` public domains and ``bounds={column: (lo, hi)}`` public
  ranges.  :func:`learn_columns` resolves every feature to a nominal one (integer codes into
  its domain) or a numeric one (floats within its bounds), with a
  :class:`~privlab.errors.PrivacyWarning` for every domain or range read from the data;
  :class:`Columns` encodes new records the same way.
* :class:`ModelFile`: the fitted models' one ``save`` (a JSON model file with its custody and
  its epsilon charged to the input's ledger).
* :func:`held_out_split`: the rows a model trains on and the rows held out to test it (the
  command line's ``--holdout``, the audit's DP models), one draw of a generator.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import Interval, InvalidParameterError, Options, StrOptions
from sklearn.utils.validation import validate_data

from privlab.data.schema import py_scalar
from privlab.errors import (
    MissingValuesError,
    ParameterError,
    PrivacyWarning,
    PrivlabError,
    SchemaError,
)

__all__ = [
    "RANDOM_STATE_CONSTRAINT",
    "REFIT_CHECKS",
    "Columns",
    "FreshRandomnessTags",
    "Interval",
    "InvalidParameter",
    "InvalidParameterError",
    "ModelFile",
    "Options",
    "StrOptions",
    "UnknownFeature",
    "encode_nominal",
    "fresh_randomness_checks",
    "is_seeded",
    "is_tabular",
    "learn_columns",
    "nominal_table",
    "per_feature",
    "random_source",
    "validate_params",
    "validate_table",
]


class InvalidParameter(ParameterError, InvalidParameterError):
    """scikit-learn's parameter-validation error, also a privlab :class:`ParameterError`."""


def validate_params(estimator: Any) -> None:
    """Check ``estimator``'s parameters against its ``_parameter_constraints``; a violation
    raises :class:`InvalidParameter` (both scikit-learn's and privlab's error)."""
    try:
        estimator._validate_params()
    except InvalidParameterError as e:
        raise InvalidParameter(str(e)) from None


#: The ``_parameter_constraints`` entry of ``random_state`` and of its alias ``rng``.
RANDOM_STATE_CONSTRAINT: list[Any] = [
    None,
    Interval(Integral, 0, None, closed="left"),
    np.random.Generator,
    np.random.SeedSequence,
]


def _same_seed(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are one source: the same object, or equal integer seeds."""
    if a is b:
        return True
    ints = (int, np.integer)
    return (
        isinstance(a, ints)
        and isinstance(b, ints)
        and not isinstance(a, (bool, np.bool_))
        and not isinstance(b, (bool, np.bool_))
        and int(a) == int(b)
    )


def random_source(estimator: Any) -> Any:
    """The seed or generator of ``estimator``'s randomness: its ``random_state`` or, as an
    alias, its ``rng`` (``None`` when neither is given: fresh randomness from the OS).

    Both given raises :class:`~privlab.errors.ParameterError`, unless they are the same
    integer seed or the same object (scikit-learn's ``set_random_state`` sets
    ``random_state=0`` on an estimator that may already carry ``rng=0``)."""
    random_state = getattr(estimator, "random_state", None)
    rng = getattr(estimator, "rng", None)
    if random_state is None:
        return rng
    if rng is None or _same_seed(random_state, rng):
        return random_state
    raise ParameterError(
        f"{type(estimator).__name__} got random_state={random_state!r} and rng={rng!r}: rng "
        "is an alias of random_state, give one of them"
    )


def is_seeded(estimator: Any) -> bool:
    """Whether ``estimator`` was given a seed or generator (``random_state`` or ``rng``);
    never raises (scikit-learn's tags call it on any parameters)."""
    return (
        getattr(estimator, "random_state", None) is not None
        or getattr(estimator, "rng", None) is not None
    )


class FreshRandomnessTags:
    """A learner's scikit-learn tags when its randomness is fresh unless seeded: unseeded
    (noise from the OS CSPRNG, fresh OS entropy), two fits on the same data differ, so it is
    ``non_deterministic``; with ``random_state`` or ``rng`` it is not."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = not is_seeded(self)
        return tags


#: The checks of scikit-learn's ``check_estimator`` that fit one estimator twice (or on two
#: encodings of the same data) and demand identical results.
REFIT_CHECKS = (
    "check_fit_idempotent",
    "check_supervised_y_2d",
    "check_classifier_data_not_an_array",
)


def fresh_randomness_checks(estimator: Any, why: str) -> dict[str, str]:
    """:data:`REFIT_CHECKS`, each with the reason ``why``, for an estimator whose randomness
    is fresh on every fit (so two fits differ) and that scikit-learn cannot seed: unseeded
    and without a ``random_state`` parameter.  ``{}`` otherwise: with a seed the fits agree,
    and these checks seed ``random_state`` themselves (``set_random_state``), so every
    privlab learner passes them unseeded."""
    if is_seeded(estimator) or "random_state" in estimator.get_params(deep=False):
        return {}
    return dict.fromkeys(REFIT_CHECKS, why)


# -- the tabular input: DataFrames, {column: values} domains, {column: (lo, hi)} bounds ------
def _listing(items: list[str], limit: int = 6) -> str:
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


class _MixedTypes(SchemaError, TypeError):
    """A column without declared categories mixes strings, numbers and other objects."""


_NUMERIC_KINDS = ("integer", "floating", "mixed-integer-float", "decimal")


def _feature_label(j: int, names: Any) -> str:
    return f"feature {names[j]!r}" if names is not None else f"feature {j}"


def _is_numeric_column(col: np.ndarray, what: str) -> bool:
    """Whether an undeclared column holds numbers (binned) or categories.

    Numbers (int or float, not bool) are numeric; strings, bools and other uniform types are
    categorical; a column mixing them is refused with a TypeError (as scikit-learn's encoders
    do), since no domain can be read from it.
    """
    if col.dtype.kind in "iuf":
        return True
    if col.dtype.kind != "O":
        return False
    kind = pd.api.types.infer_dtype(col, skipna=False)
    if kind in _NUMERIC_KINDS:
        return True
    if kind.startswith("mixed"):
        types = sorted({type(v).__name__ for v in col.tolist()})
        raise _MixedTypes(
            f"{what} mixes value types ({', '.join(types)}); without declared categories the "
            "argument must be all strings or all numbers"
        )
    return False


def _is_number(v: Any) -> bool:
    """Whether ``v`` converts to a float as numpy converts it (a number or numeric text)."""
    if isinstance(v, bool):
        return False
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _as_float(col: np.ndarray, what: str) -> np.ndarray:
    try:
        x = np.asarray(col, dtype=float)
    except (TypeError, ValueError):
        bad = next((v for v in col.tolist() if not _is_number(v)), col.tolist()[0])
        raise SchemaError(f"value {bad!r} of numeric {what} is not a number") from None
    if not np.all(np.isfinite(x)):
        raise ParameterError(f"numeric {what} holds {x[~np.isfinite(x)][0]!r}")
    return x


def _encode(values: np.ndarray, domain: np.ndarray, what: str, *, unseen: str) -> np.ndarray:
    """Codes of ``values`` in ``domain``.

    A value outside it raises a SchemaError naming it (``unseen="raise"``, a declared domain)
    or gets code -1, no evidence (``unseen="ignore"``, a domain read from the data).
    """
    values = np.asarray(values, dtype=object).ravel()
    index = pd.Index(np.asarray(domain, dtype=object))
    try:
        codes = index.get_indexer(values)
    except TypeError:  # unhashable values
        codes = np.array([index.get_loc(v) if _hashable_in(v, index) else -1 for v in values])
    codes = np.asarray(codes, dtype=np.int64)
    if unseen == "raise" and np.any(codes < 0):
        bad = values[np.flatnonzero(codes < 0)[0]]
        raise SchemaError(f"value {py_scalar(bad)!r} of {what} is not among its categories")
    return codes


def _hashable_in(v: Any, index: pd.Index) -> bool:
    try:
        return v in index
    except TypeError:
        return False


def _check_domain(values: Any, what: str) -> np.ndarray:
    if isinstance(values, str) or not hasattr(values, "__iter__"):
        raise ParameterError(f"the categories of {what} must be a sequence, not {values!r}")
    dom = np.asarray(list(values), dtype=object)
    if dom.size == 0:
        raise ParameterError(f"the categories of {what} are empty")
    try:
        unique = pd.Index(dom).is_unique
    except TypeError:
        raise ParameterError(f"the categories of {what} hold an unhashable value") from None
    if not unique:
        raise ParameterError(f"the categories of {what} list a value twice")
    return _tidy(dom)


def _tidy(dom: np.ndarray) -> np.ndarray:
    """A domain as a plain numpy array (int, float or str when uniform, else object)."""
    kind = pd.api.types.infer_dtype(dom, skipna=False)
    if kind == "integer":
        return dom.astype(np.int64)
    if kind in ("floating", "mixed-integer-float"):
        return dom.astype(float)
    if kind == "string":
        return dom.astype(str)
    return dom


def _check_bounds(b: Any, what: str) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in b)
    except (TypeError, ValueError):
        raise ParameterError(f"the bounds of {what} must be a pair (lo, hi), not {b!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ParameterError(f"the bounds of {what} must be finite with lo < hi, got {b!r}")
    return lo, hi


class UnknownFeature(SchemaError, ParameterError):
    """A ``{column: ...}`` parameter names a column that ``X`` does not have."""


def _unknown(what: str, key: Any, names: np.ndarray | None) -> str:
    has = "" if names is None else f" (its columns: {_listing([str(c) for c in names])})"
    return f"{what} names a feature {key!r} that X does not have{has}"


def per_feature(spec: Any, what: str, n: int, names: np.ndarray | None) -> list[Any]:
    """A per-feature parameter (a mapping keyed by feature name or index, or a sequence of
    one entry per feature) as a list of ``n`` entries (None: not given)."""
    out: list[Any] = [None] * n
    if spec is None:
        return out
    if isinstance(spec, Mapping):
        for key, value in spec.items():
            if isinstance(key, str):
                if names is None or key not in list(names):
                    raise UnknownFeature(_unknown(what, key, names))
                j = list(names).index(key)
            elif isinstance(key, Integral) and not isinstance(key, bool) and 0 <= key < n:
                j = int(key)
            else:
                raise UnknownFeature(_unknown(what, key, names))
            out[j] = value
        return out
    items = list(spec)
    if len(items) != n:
        raise ParameterError(f"{what} lists {len(items)} features but X has {n}")
    return items


def _privlab_error(err: ValueError) -> PrivlabError:
    """scikit-learn's input-validation ValueError as a privlab error (same message)."""
    if isinstance(err, PrivlabError):
        return err
    return (MissingValuesError if "NaN" in str(err) else ParameterError)(str(err))


def _refuse_missing(mask: np.ndarray, values: np.ndarray, names: list[Any] | None) -> None:
    """A MissingValuesError naming the first missing value (row and feature) of ``X``."""
    if not np.any(mask):
        return
    i, j = (int(v[0]) for v in np.nonzero(mask))
    what = _feature_label(j, names)
    raise MissingValuesError(
        f"{what} holds a missing value ({values[i, j]!r}) in row {i}; drop or impute it"
    )


def validate_table(estimator: Any, X: Any, y: Any = "no_validation", *, reset: bool) -> Any:
    """scikit-learn's ``validate_data`` keeping strings (``dtype=None``), after refusing a
    missing value of ``X`` with a :class:`~privlab.errors.MissingValuesError` naming it;
    scikit-learn's ValueErrors come back as privlab errors."""
    if hasattr(X, "isna") and hasattr(X, "columns"):  # pandas: None, NaN, NA, NaT
        mask = X.isna().to_numpy()
        if mask.any():
            _refuse_missing(mask, X.to_numpy(dtype=object), list(X.columns))
    try:
        out = validate_data(estimator, X, y, reset=reset, dtype=None)
    except ValueError as e:
        raise _privlab_error(e) from e
    Xv = out[0] if isinstance(out, tuple) else out
    if Xv.dtype == object:
        _refuse_missing(pd.isna(Xv), Xv, None)
    return out


_TEXT_KINDS = ("string", "bytes", "categorical")


def is_tabular(X: Any, categories: Any, bounds: Any) -> bool:
    """Whether a fit takes the tabular form: ``{column: ...}`` categories or bounds, or an
    ``X`` with a column of strings (or pandas categories); arrays of numbers with per-feature
    sequences keep an estimator's array form."""
    if isinstance(categories, Mapping) or isinstance(bounds, Mapping):
        return True
    if hasattr(X, "columns") and hasattr(X, "iloc"):  # a DataFrame
        return any(
            pd.api.types.infer_dtype(X.iloc[:, j], skipna=True) in (*_TEXT_KINDS, "mixed")
            for j in range(X.shape[1])
        )
    if isinstance(X, np.ndarray) and X.ndim == 2:
        if X.dtype.kind in "US":
            return True
        if X.dtype.kind == "O":
            return any(
                pd.api.types.infer_dtype(X[:, j], skipna=True) in _TEXT_KINDS
                for j in range(X.shape[1])
            )
    return False


@dataclass(frozen=True)
class Columns:
    """The features of a fitted tabular input: per feature its public domain (a nominal
    feature) or its bounds (a numeric one), and whether it was declared (else read from the
    training data, with a :class:`~privlab.errors.PrivacyWarning`)."""

    domains: tuple[np.ndarray | None, ...]  # None: numeric
    bounds: tuple[tuple[float, float] | None, ...]  # None: nominal
    declared: tuple[bool, ...]

    @property
    def nominal(self) -> list[int]:
        """The indices of the nominal features."""
        return [j for j, d in enumerate(self.domains) if d is not None]

    @property
    def sizes(self) -> list[int]:
        """The domain size of every nominal feature (in :attr:`nominal` order)."""
        return [len(d) for d in self.domains if d is not None]

    def to_dict(self, names: np.ndarray | None) -> dict[str, Any]:
        """The public description of the features (JSON-serializable), with their names."""
        feats: list[dict[str, Any]] = []
        for dom, b, dec in zip(self.domains, self.bounds, self.declared):
            entry: dict[str, Any] = (
                {"bounds": [float(b[0]), float(b[1])]}
                if dom is None
                else {"domain": [py_scalar(v) for v in dom]}
            )
            entry["declared"] = bool(dec)
            feats.append(entry)
        return {"names": None if names is None else [str(c) for c in names], "features": feats}

    @classmethod
    def from_fields(cls, f: Any, n_features: int) -> tuple[Columns, np.ndarray | None]:
        """:meth:`to_dict`'s output read through a :class:`privlab._validate.Fields`
        (every field checked), and the feature names (or None)."""
        names_f = f.opt("names")
        names = None
        if names_f is not None:
            got = names_f.scalars(min_length=n_features)
            if len(got) != n_features or not all(isinstance(v, str) for v in got):
                raise names_f.fail(f"must be {n_features} distinct column names")
            names = np.asarray(got, dtype=object)
        domains: list[np.ndarray | None] = []
        bounds: list[tuple[float, float] | None] = []
        declared: list[bool] = []
        for x in f.get("features").items(length=n_features):
            if x.has("domain"):
                domains.append(_tidy(np.asarray(x.get("domain").scalars(min_length=1),
                                                dtype=object)))  # fmt: skip
                bounds.append(None)
            else:
                lo, hi = (float(v) for v in x.get("bounds").array(length=2))
                domains.append(None)
                bounds.append((lo, hi))
            dec = x.get("declared").value
            if not isinstance(dec, bool):
                raise x.get("declared").fail("must be true or false")
            declared.append(dec)
        return cls(tuple(domains), tuple(bounds), tuple(declared)), names

    def encode(self, X: np.ndarray, names: np.ndarray | None = None) -> np.ndarray:
        """``X`` (validated) as floats: the codes of the nominal features (a value outside
        the domain raises :class:`~privlab.errors.SchemaError`), the numbers of the others."""
        out = np.empty(X.shape, dtype=float)
        for j, dom in enumerate(self.domains):
            what = _feature_label(j, names)
            if dom is None:
                out[:, j] = _as_float(X[:, j], what)
            else:
                out[:, j] = _encode(X[:, j], dom, what, unseen="raise")
        return out


def nominal_table(
    X: np.ndarray, categories: Any, names: np.ndarray | None
) -> tuple[list[np.ndarray], np.ndarray]:
    """Every feature of ``X`` (validated, ``names`` its columns or None) as nominal: per
    feature its domain and ``X``'s ``int64`` codes into the domains.

    A feature's domain is its declared ``categories`` (``{column name or index: values}`` or
    one entry per feature; a value outside them raises
    :class:`~privlab.errors.SchemaError`), else the sorted values the column holds.  For the
    learners on PRAM data, whose input is a release (already public): reading a domain from
    it reveals nothing more, so no :class:`~privlab.errors.PrivacyWarning`.
    """
    p = X.shape[1]
    cats = per_feature(categories, "categories", p, names)
    domains: list[np.ndarray] = []
    codes = np.empty(X.shape, dtype=np.int64)
    for j in range(p):
        what = _feature_label(j, names)
        if cats[j] is not None:
            dom = _check_domain(cats[j], what)
        else:
            _is_numeric_column(X[:, j], what)  # refuses a column mixing strings and numbers
            dom = _tidy(np.asarray(np.unique(X[:, j]), dtype=object))
        codes[:, j] = _encode(X[:, j], dom, what, unseen="raise")
        domains.append(dom)
    return domains, codes


def encode_nominal(
    X: np.ndarray, domains: Sequence[np.ndarray], names: np.ndarray | None, *, unseen: str
) -> np.ndarray:
    """``X``'s codes into fitted nominal ``domains``: a value outside its domain raises a
    :class:`~privlab.errors.SchemaError` (``unseen="raise"``) or gets code -1
    (``unseen="ignore"``)."""
    out = np.empty(X.shape, dtype=np.int64)
    for j, dom in enumerate(domains):
        out[:, j] = _encode(X[:, j], dom, _feature_label(j, names), unseen=unseen)
    return out


def learn_columns(
    X: np.ndarray,
    categories: Any,
    bounds: Any,
    names: np.ndarray | None,
    *,
    numeric_note: str,
    stacklevel: int,
) -> tuple[Columns, list[np.ndarray]]:
    """Resolve every feature of ``X`` (validated, ``names`` its columns or None) and return
    its :class:`Columns` and per feature its values: ``int64`` codes into the domain of a
    nominal feature, floats of a numeric one.

    A feature is numeric with declared ``bounds``, nominal with declared ``categories`` (a
    value outside them raises :class:`~privlab.errors.SchemaError`); undeclared, a column of
    numbers is numeric over its training range and any other nominal over the values it holds,
    each with a :class:`~privlab.errors.PrivacyWarning` (``numeric_note`` says what the
    range is used for).  ``categories`` and ``bounds``: ``{column name or index: ...}``, one
    entry per feature (None: undeclared), None, or ``categories="auto"``.  A column named in
    neither raises :class:`UnknownFeature`, a :class:`~privlab.errors.ParameterError`.
    """
    p = X.shape[1]
    if isinstance(categories, str):
        cats: list[Any] = [None] * p
    else:
        cats = per_feature(categories, "categories", p, names)
    bnds = per_feature(bounds, "bounds", p, names)
    values: list[np.ndarray] = []
    domains: list[np.ndarray | None] = []
    ranges: list[tuple[float, float] | None] = []
    declared: list[bool] = []
    auto_cat, auto_num = [], []
    for j in range(p):
        what = _feature_label(j, names)
        col = X[:, j]
        cat = None if isinstance(cats[j], str) and cats[j] == "auto" else cats[j]
        if bnds[j] is not None and cat is not None:
            raise ParameterError(f"{what} has both categories and bounds; give one")
        dom, rng_ = None, None
        if bnds[j] is not None:
            rng_, dec = _check_bounds(bnds[j], what), True
            v = _as_float(col, what)
        elif cat is not None:
            dom, dec = _check_domain(cat, what), True
            v = _encode(col, dom, what, unseen="raise")
        elif _is_numeric_column(col, what):
            v = _as_float(col, what)
            rng_, dec = (v.min(), v.max()), False
            auto_num.append(what)
        else:
            dom, inv = np.unique(col, return_inverse=True)
            dom, dec = _tidy(np.asarray(dom, dtype=object)), False
            v = inv.ravel().astype(np.int64)
            auto_cat.append(what)
        values.append(v)
        domains.append(dom)
        ranges.append(rng_)
        declared.append(dec)
    if auto_cat:
        warnings.warn(
            f"the domains of {_listing(auto_cat)} are taken from the training data; pass "
            "categories=... to keep them public",
            PrivacyWarning,
            stacklevel=stacklevel,
        )
    if auto_num:
        warnings.warn(
            f"{_listing(auto_num)}: numeric without public bounds, {numeric_note} (its "
            "minimum and maximum leak); pass bounds=...",
            PrivacyWarning,
            stacklevel=stacklevel,
        )
    return Columns(tuple(domains), tuple(ranges), tuple(declared)), values


class ModelFile:
    """A fitted model that writes itself as one JSON file with :meth:`save`; a subclass says
    what goes in it through :meth:`_model_file`."""

    def _model_file(self) -> dict[str, Any]:  # pragma: no cover - every subclass states its own
        """The file's content and custody: ``doc`` (the JSON document), ``method`` and
        ``parameters`` (the custody's), ``seed_record`` and ``noise_source`` (the custody's
        seed, :func:`privlab._rng.estimator_record`), ``input_sha256`` and ``epsilon`` (the
        charge to the input's ledger)."""
        raise NotImplementedError

    def public_parameters(self) -> dict[str, Any]:
        """The parameters the registry's ledger records of the model (its epsilon, features,
        target, ...): what a custodian may know of it beside the file."""
        return dict(self._model_file()["parameters"])

    def save(
        self,
        path: str | Path,
        *,
        custody: str | Path | None = None,
        force: bool = False,
        not_for_publication: bool = False,
        custody_extra: dict[str, Any] | None = None,
        draft: bool = False,
    ) -> None:
        """Write the model as JSON (atomically; an existing file needs ``force``) and, with
        ``custody``, the custodian's directory (the seed and salt of the noise, the training
        table's fingerprint).

        A model whose noise came from the caller's own seed or generator (``rng=0`` on the
        estimator, a ``Generator``: an experiment) is refused unless
        ``not_for_publication=True``, which the file then says (its first field); fitted from
        a table (:func:`privlab.learn.dp_naive_bayes.train_from_table`,
        :func:`privlab.learn.dp_tree.fit_table`), a seed is salted and the model publishable,
        and its epsilon is added to its input's ledger in the custodian's registry
        (:func:`privlab._registry.save_output`).  ``custody_extra``: further custody fields
        (the CLI's held-out split).  A ``draft`` (an audit's candidate) is written with its
        custody but not added to the ledger.
        """
        import json

        from privlab._registry import save_output
        from privlab._rng import estimator_record

        f = self._model_file()
        doc = f["doc"]

        def write(tmp: Path, mark: str | None) -> None:
            body = {"not_for_publication": mark, **doc} if mark else doc
            tmp.write_text(json.dumps(body, indent=1) + "\n")

        save_output(
            path, write, method=f["method"], parameters=f["parameters"],
            record=estimator_record(f["seed_record"], f["noise_source"]),
            input_sha256=f["input_sha256"], epsilon=f["epsilon"], custody=custody, force=force,
            not_for_publication=not_for_publication, custody_extra=custody_extra, draft=draft,
        )  # fmt: skip


def held_out_split(table: Any, share: float, rng: np.random.Generator) -> tuple[Any, Any]:
    """``(train, held)``: the rows of the privlab ``table`` a model trains on and the
    ``round(share * n)`` rows held out to test it, drawn by one permutation of ``rng`` (both in
    the table's order: row order says nothing of who was held out).  ``held`` is None when
    the share holds out no row; holding out every row is the caller's to refuse."""
    cut = round(table.n_rows * share)
    if cut == 0:
        return table, None
    order = rng.permutation(table.n_rows)
    return table.take(np.sort(order[cut:])), table.take(np.sort(order[:cut]))
