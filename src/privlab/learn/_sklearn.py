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
  fixed seed, so an unseeded learner is tagged ``non_deterministic``.
* :func:`fresh_randomness_checks`: the ``check_estimator`` checks that compare two fits, which
  an estimator drawing fresh randomness on every fit cannot pass unless scikit-learn can seed
  it through ``random_state``.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, InvalidParameterError, Options, StrOptions

from privlab.errors import ParameterError

__all__ = [
    "RANDOM_STATE_CONSTRAINT",
    "REFIT_CHECKS",
    "Interval",
    "InvalidParameter",
    "InvalidParameterError",
    "Options",
    "StrOptions",
    "fresh_randomness_checks",
    "is_seeded",
    "random_source",
    "validate_params",
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
