"""Write ``src/privlab/experiments/_catalogue.py``: every registered experiment's id, module,
title and source, so that listing them (``privlab experiments``) and running one
(``privlab reproduce ID``) import no other experiment's module.

    PYTHONPATH=src .venv/bin/python tools/experiments_catalogue.py

``tests/test_experiments_catalogue.py`` fails when the catalogue and the registry differ.
"""

from __future__ import annotations

from pathlib import Path

from privlab.experiments import discover

OUT = Path(__file__).resolve().parents[1] / "src" / "privlab" / "experiments" / "_catalogue.py"


def text() -> str:
    lines = [
        '"""Every registered experiment: id -> (module, title, source).  Written by',
        "``tools/experiments_catalogue.py`` from the modules' ``@register`` calls (a test checks",
        'that the two agree); listing the experiments reads this, not the modules."""',
        "",
        "CATALOGUE: dict[str, tuple[str, str, str]] = {",
    ]
    for e in discover().values():
        module = e.func.__module__.rsplit(".", 1)[1]
        lines.append(f"    {e.id!r}: ({module!r}, {e.title!r}, {e.source!r}),")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    OUT.write_text(text(), encoding="utf-8")
    print(f"wrote {OUT}")
