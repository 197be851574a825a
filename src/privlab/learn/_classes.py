"""The class labels a learner may use: public ones, or the data's with a PrivacyWarning."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from privlab.errors import ParameterError, PrivacyWarning


def public_classes(
    classes: Sequence[Any] | str, y: np.ndarray, *, warn: bool = True, stacklevel: int = 3
) -> np.ndarray:
    """``classes`` as given, or for ``"auto"`` the labels occurring in ``y``.

    Which labels occur is a fact about the data, so ``"auto"`` raises a
    :class:`PrivacyWarning` when ``warn`` (``stacklevel`` as for :func:`warnings.warn`,
    counted from this function: the default points at the caller of the learner's ``fit``).
    """
    if isinstance(classes, str):
        if classes != "auto":
            raise ParameterError(f"classes must be a sequence or 'auto', not {classes!r}")
        if warn:
            warnings.warn(
                "the class labels are taken from the training data; pass classes=... to keep "
                "them public",
                PrivacyWarning,
                stacklevel=stacklevel,
            )
        return np.unique(y)
    return np.asarray(list(classes))
