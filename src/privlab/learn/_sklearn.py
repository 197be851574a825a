"""The learners' shared scikit-learn plumbing, in one place.

* scikit-learn's parameter-validation vocabulary (:class:`Interval`, :class:`StrOptions`,
  :class:`Options`, :class:`InvalidParameterError`) comes from its *private*
  ``sklearn.utils._param_validation``; this is the only privlab module that imports it, so a
  scikit-learn upgrade that moves it breaks one file.
* :class:`InvalidParameter`: scikit-learn's parameter-validation error that is also a privlab
  :class:`~privlab.errors.ParameterError`; :func:`validate_params` raises it.
* :func:`fresh_randomness_checks`: the ``check_estimator`` checks that compare two fits, which
  an estimator drawing fresh randomness on every fit cannot pass.
"""

from __future__ import annotations

from typing import Any

from sklearn.utils._param_validation import Interval, InvalidParameterError, Options, StrOptions

from privlab.errors import ParameterError

__all__ = [
    "REFIT_CHECKS",
    "Interval",
    "InvalidParameter",
    "InvalidParameterError",
    "Options",
    "StrOptions",
    "fresh_randomness_checks",
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


#: The checks of scikit-learn's ``check_estimator`` that fit one estimator twice (or on two
#: encodings of the same data) and demand identical results.
REFIT_CHECKS = (
    "check_fit_idempotent",
    "check_supervised_y_2d",
    "check_classifier_data_not_an_array",
)


def fresh_randomness_checks(estimator: Any, why: str) -> dict[str, str]:
    """:data:`REFIT_CHECKS`, each with the reason ``why``, when ``estimator`` is unseeded
    (its ``rng`` is None): its randomness is fresh on every fit, so two fits differ; ``{}``
    with a seed."""
    return dict.fromkeys(REFIT_CHECKS, why) if getattr(estimator, "rng", None) is None else {}
