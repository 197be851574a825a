"""The API reference (issue 32, "the map is the house"): ``make docs`` builds it from the
docstrings with Sphinx, and here it must build without a single warning and hold every name
each package exports."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"
PACKAGES = ["data", "release", "publish", "dp", "attacks", "metrics", "estimate", "learn", "report"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("api")
    # -E: read every page afresh; -W: any warning fails; --keep-going: report them all
    cmd = [sys.executable, "-m", "sphinx", "-E", "-q", "-W", "--keep-going", "-b", "html",
           "-d", str(out / "doctrees"), str(API), str(out / "html")]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "WARNING" not in proc.stderr and "ERROR" not in proc.stderr, proc.stderr[-4000:]
    return out / "html"


def test_every_package_has_a_page_in_the_reference(built):
    pages = sorted(p.stem for p in API.glob("*.rst") if p.stem != "index")
    assert pages == sorted(PACKAGES)
    on_disk = {i.name for i in pkgutil.iter_modules([str(ROOT / "src" / "privlab")])
               if i.ispkg and i.name not in ("app", "cli", "experiments")}  # fmt: skip
    assert on_disk <= set(PACKAGES), "a new package needs its page in docs/api"
    index = (built / "index.html").read_text()
    for p in PACKAGES:
        assert f'href="{p}.html"' in index


@pytest.mark.parametrize("package", PACKAGES)
def test_every_export_is_documented(built, package):
    module = importlib.import_module(f"privlab.{package}")
    html = (built / f"{package}.html").read_text()
    names = list(getattr(module, "__all__", []))
    if names:
        ids = [f'id="privlab.{package}.{n}"' for n in names]
    else:  # no exports: each public module's page section
        ids = [f'id="module-privlab.{package}.{i.name}"' for i in pkgutil.iter_modules(
            module.__path__) if not i.name.startswith("_")]  # fmt: skip
    assert ids
    missing = [i for i in ids if i not in html]
    assert missing == []
    # the package's own docstring opens its page
    first = (module.__doc__ or "").strip().split("\n")[0].split(":")[0][:30]
    assert first and first.split()[0] in html
