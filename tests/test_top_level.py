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
