"""The checks of a caller's counts, written once: a count is refused with one line that
names the parameter, the range and the value it got (``restarts must be an integer >= 1,
got 0``), the same sentence from the library and the command line.

An integer is a Python ``int`` or a numpy integer, never a ``bool`` (``True`` is an ``int``
to Python, and ``l=True`` is a mistake, not ``l = 1``) and never a float, even a whole one
(``iterations=2.0`` says the caller computed something they did not mean to).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privlab.errors import ParameterError, PrivlabError


def is_integer(value: Any) -> bool:
    """Whether ``value`` is an integer: an ``int`` or a numpy integer, not a ``bool``."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_int(
    name: str,
    value: Any,
    *,
    low: int | None = None,
    high: int | None = None,
    none: str | None = None,
) -> int:
    """``value`` as an ``int``, refused unless it is an integer (:func:`is_integer`) within
    ``[low, high]`` (either bound optional).

    ``none``: ``None`` is accepted too (and returned as it is: the caller's default), and
    the sentence says what it means (``workers must be an integer >= 1 or None (the
    machine's processors)``).
    """
    if value is None and none is not None:
        return value  # type: ignore[return-value]
    if (
        not is_integer(value)
        or (low is not None and value < low)
        or (high is not None and value > high)
    ):
        if low is not None and high is not None:
            bounds = f" from {low} to {high}"
        elif low is not None:
            bounds = f" >= {low}"
        elif high is not None:
            bounds = f" <= {high}"
        else:
            bounds = ""
        alt = f" or None ({none})" if none is not None else ""
        raise ParameterError(f"{name} must be an integer{bounds}{alt}, got {value!r}")
    return int(value)


def check_share(name: str, value: Any) -> float:
    """``value`` as a ``float`` in ``[0, 1]`` (a share or a probability threshold), refused
    otherwise in one line that names it (``threshold must be in [0, 1], got 2``)."""
    ok = not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, float, np.number))
    if not ok or not 0 <= value <= 1:
        raise ParameterError(f"{name} must be in [0, 1], got {value}")
    return float(value)


def check_codes(codes: Any, what: str = "codes") -> np.ndarray:
    """``codes`` as a 2-d array (records x columns), refused otherwise in one line."""
    c = np.asarray(codes)
    if c.ndim != 2:
        raise PrivlabError(f"{what} must be a 2-d array (records x columns), got {c.shape}")
    return c
