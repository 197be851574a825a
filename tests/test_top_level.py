"""The top-level ``privlab`` namespace: the main entry points, loaded on first use."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import privlab


def test_every_export_is_its_home_object():
    for name, (package, attr) in privlab._EXPORTS.items():
        home = getattr(importlib.import_module(f"privlab.{package}"), attr)
        assert getattr(privlab, name) is home, name
        assert name in dir(privlab) and name in privlab.__all__
    assert privlab.build_report is importlib.import_module("privlab.report").build


def test_alphabeta_is_the_function_even_once_its_module_is_imported():
    import privlab.publish.alpha_beta as module
    from privlab.publish import alphabeta, pram

    assert alphabeta is module.alphabeta is privlab.alphabeta and callable(pram)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'anonymize'"):
        privlab.anonymize  # noqa: B018


def test_import_privlab_loads_no_subpackage():
    code = (
        "import sys, privlab; "
        "print(sorted(m for m in sys.modules if m.startswith(('privlab.', 'numpy', 'pandas'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_tour_in_the_docstring_runs():
    adult = privlab.load_adult()
    release = privlab.anatomize(
        adult.to_pandas().iloc[:2000], qi=["age", "sex"], sensitive="occupation", l=4, rng=1
    )
    assert isinstance(release, importlib.import_module("privlab.publish").AnatomyRelease)
    assert set(release.group_sizes().tolist()) <= {4, 5}


def test_results_and_releases_give_arrow_and_polars_frames():
    """Every class with ``to_pandas()`` also gives ``to_arrow()`` and ``to_polars()``: the
    same columns and values; a meaningful index becomes the first column."""
    import numpy as np
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    from privlab._frames import ToFrames

    df = privlab.load_adult().to_pandas().iloc[:600]
    rel = privlab.anatomize(df, qi=["age", "sex"], sensitive="occupation", l=3, rng=2)
    for table in ("qit", "st"):
        want = rel.to_pandas(table)
        arrow = rel.to_arrow(table)
        assert isinstance(arrow, pa.Table) and arrow.column_names == list(want.columns)
        pd.testing.assert_frame_equal(arrow.to_pandas(), want.reset_index(drop=True))
        polars = rel.to_polars(table)
        assert isinstance(polars, pl.DataFrame) and polars.columns == list(want.columns)
        assert polars.height == len(want)
        assert polars.to_pandas().astype(str).equals(want.astype(str).reset_index(drop=True))

    class Indexed(ToFrames):
        def to_pandas(self):
            return pd.DataFrame({"x": [1.5, 2.5]}, index=pd.Index(["a", "b"], name="who"))

    assert Indexed().to_arrow().column_names == ["who", "x"]
    assert Indexed().to_polars()["who"].to_list() == ["a", "b"]
    post = privlab.Posterior  # a result class of another layer has them too
    assert issubclass(post, ToFrames) and issubclass(privlab.Report, ToFrames)
    assert np.array_equal(Indexed().to_polars()["x"].to_numpy(), [1.5, 2.5])
