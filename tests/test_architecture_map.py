"""docs/architecture.md lists every module under src/privlab/, one line each (issue: "The map
is the house").

The map is the fenced code block that starts with ``src/privlab/``.  Its lines form a tree by
indentation:

* a token ending in ``/`` at a package's *entry column* opens a package; the first token after
  it on the same line (or, when there is none, the indentation of the next line) fixes the
  entry column of the new package;
* a line indented exactly to the innermost open package's entry column is an entry of that
  package: its first token is a module (``name.py``), a subpackage (``name/``) or prose;
* a line indented further continues the description above it: a ``name.py`` mentioned there
  (``dp/histogram.py`` in data/stream.py's description) does not list a module;
* a line indented less closes packages until one whose entry column it matches; a line that
  matches none is an error (a module shifted by one column would otherwise vanish).

A package's ``__init__.py`` must be listed only when it defines a function or a class beyond a
lazy ``__getattr__`` / ``__dir__``; any other module must be listed.  A listed module that does
not exist fails as much as a missing one.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "privlab"
DOC = ROOT / "docs" / "architecture.md"
TREE_ROOT = "src/privlab/"

_FENCE = re.compile(r"^\s*```")
_TOKEN = re.compile(r"\S+")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.py")
_PACKAGE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*/")
_REEXPORT_HOOKS = {"__getattr__", "__dir__"}


class MapError(ValueError):
    """The map's layout cannot be read (a line at no package's entry column)."""


@dataclass
class _Package:
    heading_col: int
    entry_col: int | None
    path: str  # relative to src/privlab, "" for the root, else ending in "/"


def _code_blocks(text: str) -> list[list[tuple[int, str]]]:
    """The fenced code blocks of a Markdown text: (line number, line) pairs."""
    blocks: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            if current is None:
                current = []
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current.append((number, line.rstrip()))
    return blocks


def _entry(stack: list[_Package], line: str, col: int, listed: list[str]) -> None:
    """Read the entry of ``stack[-1]`` that starts at column ``col`` of ``line``."""
    match = _TOKEN.match(line, col)
    assert match is not None
    token = match.group()
    parent = stack[-1]
    if _MODULE.fullmatch(token):
        listed.append(parent.path + token)
    elif _PACKAGE.fullmatch(token):
        following = _TOKEN.search(line, match.end())
        package = _Package(
            heading_col=col,
            entry_col=None if following is None else following.start(),
            path=parent.path + token,
        )
        stack.append(package)
        if following is not None:
            _entry(stack, line, following.start(), listed)
    # anything else is prose about the package (report/'s heading line): no entry


def listed_modules(doc_text: str) -> list[str]:
    """Every module the map lists, as a path relative to src/privlab (``data/schema.py``),
    in the order of the map; a module listed twice appears twice."""
    listed: list[str] = []
    for block in _code_blocks(doc_text):
        lines = [(n, line) for n, line in block if line.strip()]
        if not lines or lines[0][1] != TREE_ROOT:
            continue
        stack = [_Package(heading_col=0, entry_col=None, path="")]
        for number, line in lines[1:]:
            col = len(line) - len(line.lstrip(" "))
            while len(stack) > 1 and col <= stack[-1].heading_col:
                stack.pop()
            top = stack[-1]
            if col <= top.heading_col:
                raise MapError(f"docs/architecture.md:{number}: a line outside {TREE_ROOT}")
            if top.entry_col is None:
                top.entry_col = col
            if col == top.entry_col:
                _entry(stack, line, col, listed)
            elif col < top.entry_col:
                where = f"src/privlab/{top.path}"
                raise MapError(
                    f"docs/architecture.md:{number}: indented {col}, between the heading of "
                    f"{where} (column {top.heading_col}) and its entries (column "
                    f"{top.entry_col}): {line.strip()!r}"
                )
            # col > entry_col: a description's continuation
    return listed


def _holds_code(init: Path) -> bool:
    """Whether a package's ``__init__.py`` defines more than re-exports."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef):
            return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name not in _REEXPORT_HOOKS:
                return True
    return False


def source_modules(package: Path) -> tuple[set[str], set[str]]:
    """(every module under ``package``, the modules the map must list)."""
    existing: set[str] = set()
    required: set[str] = set()
    for path in package.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        name = path.relative_to(package).as_posix()
        existing.add(name)
        if path.name != "__init__.py" or _holds_code(path):
            required.add(name)
    return existing, required


def map_problems(listed: list[str], existing: set[str], required: set[str]) -> list[str]:
    """What is wrong with the map, one message per kind of problem (none: the map is right)."""
    problems = []
    missing = sorted(required - set(listed))
    stale = sorted(set(listed) - existing)
    twice = sorted(name for name, count in Counter(listed).items() if count > 1)
    if missing:
        problems.append("modules missing from docs/architecture.md: " + ", ".join(missing))
    if stale:
        problems.append("docs/architecture.md lists modules that do not exist: " + ", ".join(stale))
    if twice:
        problems.append("docs/architecture.md lists modules more than once: " + ", ".join(twice))
    return problems


def test_the_map_lists_every_module_under_src():
    listed = listed_modules(DOC.read_text(encoding="utf-8"))
    existing, required = source_modules(PACKAGE)
    assert listed, f"no code block starting with {TREE_ROOT} in {DOC}"
    problems = map_problems(listed, existing, required)
    assert not problems, "\n".join(problems)


SYNTHETIC = """\
# Architecture

```
src/privlab/
  errors.py       the errors
  _rng.py         seeds; salted like the data/gone.py of old
                  (a continuation line: stream.py here lists nothing)
  data/           schema.py   the schema
                  table.py    the table; mentions counts.py and dp/histogram.py
                  old.py      a module that was removed
  report/         the custodian's report
                  build.py    the report
                  templates/  jinja2 templates
                  config.py   the thresholds
  demo.py         the demo
```

```
cli
data
```
"""

SYNTHETIC_SOURCE = {
    "__init__.py": '"""privlab."""\n__all__ = []\n',
    "errors.py": "",
    "_rng.py": "",
    "demo.py": "",
    "data/__init__.py": "from privlab.data.schema import Schema\n__all__ = ['Schema']\n",
    "data/schema.py": "",
    "data/table.py": "",
    "data/stream.py": "",
    "report/__init__.py": "def __getattr__(name):\n    raise AttributeError(name)\n",
    "report/build.py": "",
    "report/config.py": "",
    "cli/__init__.py": "def main():\n    pass\n",
}


def _synthetic_package(tmp_path: Path) -> Path:
    for name, text in SYNTHETIC_SOURCE.items():
        path = tmp_path / "privlab" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path / "privlab"


def test_the_parser_follows_packages_and_skips_descriptions():
    assert listed_modules(SYNTHETIC) == [
        "errors.py",
        "_rng.py",
        "data/schema.py",
        "data/table.py",
        "data/old.py",
        "report/build.py",
        "report/config.py",
        "demo.py",
    ]


def test_only_an_init_with_code_must_be_listed(tmp_path):
    existing, required = source_modules(_synthetic_package(tmp_path))
    assert "data/__init__.py" in existing and "data/__init__.py" not in required
    assert "report/__init__.py" not in required  # a lazy __getattr__ re-exports
    assert "cli/__init__.py" in required  # main() is code
    assert "data/stream.py" in required


def test_a_missing_and_a_stale_module_fail_by_name(tmp_path):
    existing, required = source_modules(_synthetic_package(tmp_path))
    problems = map_problems(listed_modules(SYNTHETIC), existing, required)
    assert problems == [
        "modules missing from docs/architecture.md: cli/__init__.py, data/stream.py",
        "docs/architecture.md lists modules that do not exist: data/old.py",
    ]


def test_a_module_listed_twice_fails():
    doc = "```\nsrc/privlab/\n  errors.py  one\n  errors.py  two\n```\n"
    problems = map_problems(listed_modules(doc), {"errors.py"}, {"errors.py"})
    assert problems == ["docs/architecture.md lists modules more than once: errors.py"]


def test_a_module_off_its_package_column_is_an_error():
    doc = (
        "```\nsrc/privlab/\n"
        "  data/    schema.py  the schema\n"
        "          table.py   one column short of the entries\n"
        "```\n"
    )
    with pytest.raises(MapError, match=r"between the heading of src/privlab/data/.*'table\.py"):
        listed_modules(doc)


def test_one_writer_of_release_json_and_of_custody_json():
    """Every engine (memory, stream, Spark) and the DP outputs write ``release.json`` and
    ``custody.json`` through privlab/_release_files.py, nowhere else."""
    src = Path(__file__).resolve().parents[1] / "src" / "privlab"
    writes = re.compile(
        r"(RELEASE_FILE|CUSTODY_FILE|release\.json|custody\.json)[\"')]*\s*\)?\s*\.write_(text|bytes)"
        r"|release_text\("
    )
    found = {
        str(p.relative_to(src))
        for p in src.rglob("*.py")
        if writes.search(p.read_text(encoding="utf-8"))
    }
    assert found == {"_release_files.py"}
