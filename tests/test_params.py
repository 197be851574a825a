"""privlab._params.check_int: one check of a caller's counts, one sentence."""

from __future__ import annotations

import numpy as np
import pytest

from privlab._params import check_int, is_integer
from privlab.errors import ParameterError


def test_integers_are_ints_and_numpy_integers_never_bools_or_floats():
    assert all(is_integer(v) for v in (0, -3, 2**70, np.int64(5), np.uint8(1)))
    assert not any(is_integer(v) for v in (True, np.bool_(True), 2.0, np.float64(1), "3", None))
    out = check_int("n", np.int32(7), low=1)
    assert out == 7 and type(out) is int


@pytest.mark.parametrize(
    ("value", "kw", "message"),
    [
        (0, {"low": 1}, "n must be an integer >= 1, got 0"),
        (True, {"low": 1}, "n must be an integer >= 1, got True"),
        (2.0, {"low": 1}, "n must be an integer >= 1, got 2.0"),
        (9, {"low": 1, "high": 8}, "n must be an integer from 1 to 8, got 9"),
        (0, {"low": 1, "high": 8}, "n must be an integer from 1 to 8, got 0"),
        (5, {"high": 4}, "n must be an integer <= 4, got 5"),
        ("x", {}, "n must be an integer, got 'x'"),
        (None, {"low": 1}, "n must be an integer >= 1, got None"),
        (0, {"low": 1, "none": "the default"}, "n must be an integer >= 1 or None (the default)"),
    ],
)
def test_a_bad_count_is_one_sentence_naming_it_its_range_and_the_value(value, kw, message):
    with pytest.raises(ParameterError) as e:
        check_int("n", value, **kw)
    assert str(e.value).startswith(message)


def test_the_bounds_are_inclusive_and_none_passes_where_allowed():
    assert check_int("n", 1, low=1, high=8) == 1 and check_int("n", 8, low=1, high=8) == 8
    assert check_int("n", -5) == -5
    assert check_int("n", None, low=1, none="the default") is None
