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


def test_notebook_views_escape_what_comes_from_the_data():
    """``_repr_html_`` of a report and a posterior: the verdict, reasons and next step, the
    first rows; every value from the data or the caller escaped."""
    import numpy as np

    from privlab.report import Report

    hostile = "<script>alert(1)</script>"
    report = Report(
        header={"label": hostile, "method": "anatomy"},
        verdict={"level": "FAIL", "reasons": [f"value {hostile} is named"], "next_step": "raise l"},
        identity={}, attribute={}, utility={}, diagnostics={},
    )  # fmt: skip
    html = report._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert ">FAIL</strong>" in html and "Next step: raise l" in html
    assert html.count("<li>") == 1 and "is named</li>" in html
    unnamed = Report(header={"method": "pram"}, verdict={"level": "PASS"}, identity={},
                     attribute={}, utility={}, diagnostics={})  # fmt: skip
    assert "pram release" in unnamed._repr_html_()

    post = privlab.Posterior(
        probs=np.array([[0.25, 0.75], [1.0, 0.0]]), group_id=np.array([0, 0]),
        values=("x", hostile), method="em", sensitive="<i>s</i>",
    )  # fmt: skip
    html = post._repr_html_()
    assert "<script>" not in html and "<i>" not in html and "&lt;i&gt;s&lt;/i&gt;" in html
    assert "attack em" in html and "people 2" in html and "values 2" in html
    assert "0.750" in html and html.count("<tr") == 3  # a header and the two people


def test_import_privlab_makes_openmp_threads_wait_asleep_unless_told_otherwise():
    """``import privlab`` sets ``OMP_WAIT_POLICY=PASSIVE`` before OpenMP is loaded (a
    spinning OpenMP thread held the core that another process needed: 2 synthetic-table
    reports side by side on 2 cores took 225 s instead of 10 s); a policy the user set stays,
    and what it set is what numba's and scikit-learn's OpenMP read."""
    import os

    code = "import os, privlab; print(os.environ['OMP_WAIT_POLICY'])"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout  # fmt: skip
    assert out.strip() == "PASSIVE"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**env, "OMP_WAIT_POLICY": "active"}, check=True).stdout  # fmt: skip
    assert out.strip() == "active"
