"""Sphinx configuration of privlab's API reference (``make docs``; built warning-free by
``tests/test_api_docs.py`` in ``make test``).

The docstrings are numpy-style reStructuredText (``:func:`` roles, double backticks), so
Sphinx's autodoc and napoleon read them as written.  Each page holds one
``.. privlab-package:: privlab.NAME`` directive that expands to the package's docstring and
every name in its ``__all__`` (a package without one: each of its public modules), so a new
export is documented without editing a page.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from docutils.parsers.rst import Directive
from docutils.statemachine import StringList

project = "privlab"
author = "privlab's developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
napoleon_numpy_docstring = True
napoleon_google_docstring = False
autodoc_typehints = "none"  # the signatures show them; the docstrings say what they mean
autodoc_member_order = "bysource"
html_theme = "alabaster"
exclude_patterns = ["_build"]


def package_rst(name: str) -> list[str]:
    """The reStructuredText of one package's page: its docstring and its exports."""
    module = importlib.import_module(name)
    names = list(getattr(module, "__all__", []))
    for n in names:  # the exports a package loads lazily, made real attributes for autodoc
        setattr(module, n, getattr(module, n))
    lines = [f".. automodule:: {name}"]
    if names:
        # classes and functions with their docstrings; constants (which carry none of their
        # own once imported) each as data, with the comment of the module that defines them
        code = [n for n in names if inspect.isclass(getattr(module, n))
                or callable(getattr(module, n))]  # fmt: skip
        lines += ["   :members: " + ", ".join(code), "   :imported-members:"]
        for n in names:
            if n not in code:
                lines += ["", f".. py:data:: {n}", ""]  # in the current module, {name}
                lines += [f"   {line}" for line in _comment(module, n)]
        return lines
    for info in pkgutil.iter_modules(module.__path__):
        if not info.name.startswith("_"):
            sub = f"{name}.{info.name}"
            lines += ["", sub, "-" * len(sub), "", f".. automodule:: {sub}", "   :members:"]
    return lines


def _comment(package, name: str) -> list[str]:
    """The ``#:`` comment above ``name`` in the package's module that defines it."""
    from sphinx.pycode import ModuleAnalyzer

    for info in pkgutil.iter_modules(package.__path__):
        docs = ModuleAnalyzer.for_module(f"{package.__name__}.{info.name}").find_attr_docs()
        if ("", name) in docs:
            return [line for line in docs["", name] if line.strip()]
    return []


class PackageDirective(Directive):
    """``.. privlab-package:: privlab.NAME``: the package's page (:func:`package_rst`)."""

    required_arguments = 1

    def run(self) -> list:
        lines = package_rst(self.arguments[0])
        self.state_machine.insert_input(StringList(lines, source=self.arguments[0]),
                                        self.arguments[0])  # fmt: skip
        return []


def _skip(app, what, name, obj, skip, options):
    """scikit-learn's generated metadata-routing setters (``set_fit_request``, ...) are
    scikit-learn's, documented there."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app) -> None:
    app.add_directive("privlab-package", PackageDirective)
    app.connect("autodoc-skip-member", _skip)
