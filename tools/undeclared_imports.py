# A copy of the workplace tool ../shared/tools/undeclared_imports.py, for clones without it
# (`make test` runs the shared one where it exists).
"""List third-party modules that src/ imports at module level or inside functions but that
pyproject.toml does not declare as a runtime dependency (or, for optional code, as an extra).

Run from the project root with the project's venv:
    .venv/bin/python ../shared/tools/undeclared_imports.py
Exit 1 and one line per undeclared module; exit 0 when every import is declared.
A module that is only reachable through an extra counts as declared if that extra names it.
An optional import guarded by `try: ... except ImportError` (or ModuleNotFoundError) counts as
declared: the code says what to install when it is missing.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def main() -> int:
    root = Path.cwd()
    py = tomllib.loads((root / "pyproject.toml").read_text())
    proj = py["project"]
    own = {"privlab"}
    declared: dict[str, str] = {}
    for req in proj.get("dependencies", []):
        declared[norm(re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0])] = "runtime"
    for extra, reqs in proj.get("optional-dependencies", {}).items():
        for req in reqs:
            declared.setdefault(
                norm(re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0]), f"extra {extra}"
            )
    dists = md.packages_distributions()  # import name -> [distribution names]
    std = set(sys.stdlib_module_names)
    missing: dict[str, list[str]] = {}
    for f in sorted((root / "src").rglob("*.py")):
        try:
            tree = ast.parse(f.read_text(), filename=str(f))
        except SyntaxError:
            continue
        guarded = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Try) and any(
                (
                    isinstance(h.type, ast.Name)
                    and h.type.id in ("ImportError", "ModuleNotFoundError")
                )
                or (
                    isinstance(h.type, ast.Tuple)
                    and any(
                        isinstance(e, ast.Name) and e.id in ("ImportError", "ModuleNotFoundError")
                        for e in h.type.elts
                    )
                )
                for h in node.handlers
            ):
                for stmt in node.body:
                    for sub in ast.walk(stmt):
                        guarded.add(id(sub))
        for node in ast.walk(tree):
            if id(node) in guarded:
                continue
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top in std or top in own or top == "__future__":
                    continue
                owners = [norm(d) for d in dists.get(top, [top])]
                if not any(o in declared for o in owners):
                    missing.setdefault(top, []).append(f"{f.relative_to(root)}:{node.lineno}")
    for top, where in sorted(missing.items()):
        at = ", ".join(where[:3])
        print(f"undeclared import '{top}' (not in [project] dependencies or an extra): {at}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
