"""Judge a release privlab did not make: a CSV or Parquet file and the roles of its columns.

A custodian who generalized a file in ARX or sdcMicro holds a plain table, not privlab's
``release.json``.  :func:`assess` reads such a file with the original it was made from and a
*roles* file (which columns are quasi-identifiers, which is sensitive, which were published
unchanged, the sampling weights, the public hierarchies), puts it into privlab's own release
form, and writes the same report and verdict as ``privlab report`` on a release of
privlab's.

What it reads, and how:

* **generalized cells** (``kind = "generalization"``, inferred when a quasi-identifier holds
  values the original does not): a cell covers an exact value when it is the value itself,
  ``*``, a numeric range (``20-29``, ``[20, 30[``, ``[20, 30)``), a set ``{a, b}`` or an
  ancestor of the value in the column's hierarchy (ARX's hierarchy files; the cover rule of
  :func:`privlab.attacks.population.covers`).  A cell that covers no value of the original
  is refused in one line naming it (give its hierarchy);
* **suppression**: a quasi-identifier cell holding a marker of ``suppressed`` (``*`` by
  default; an empty cell too) is suppressed; a row whose quasi-identifiers are all
  suppressed is a suppressed *record* (ARX writes them so) and is not published, as privlab
  does not publish its own suppressed records;
* **the people**: the original's rows are the people the attacker links (threat model (a) of
  Kifer 2009).  When the file has as many rows as the original and each of its rows covers
  the original's row of the same number (ARX keeps the input's order), the rows are paired,
  and the people of the suppressed records are left out; otherwise the original must hold
  exactly the published records' people, or the file is refused in one line saying so.

The verdict is judged exactly as for privlab's own releases (:func:`privlab.report.build.
build`): the attack's truth is the original's sensitive values, and the identity risk is
measured on the published linkable columns.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privlab.data.hierarchy import Hierarchy, read_hierarchies, read_hierarchy
from privlab.data.schema import _keys
from privlab.data.table import Table
from privlab.errors import ParameterError, PrivlabError, SchemaError

#: The kinds of outside release :func:`assess` reads.
KINDS = ("generalization", "pram", "synthetic")
#: The marker of a suppressed cell in privlab's form of a generalized table.
STAR = "*"
_ROLE_KEYS = {
    "quasi_identifiers", "sensitive", "keep", "ignore", "weights", "kind", "suppressed",
    "hierarchies", "k", "pram",
}  # fmt: skip


@dataclass(frozen=True)
class Roles:
    """What each column of an outside release is (the ``--roles`` TOML file).

    Attributes
    ----------
    quasi_identifiers
        The columns an attacker knows of a person (generalized or not).
    sensitive
        The column the attacks guess, or None.
    keep
        Columns published unchanged that an attacker may also link on.
    ignore
        Columns of the file the assessment leaves out (named in the report).
    weights
        The sampling-weight column of the file, or None.
    kind
        ``"generalization"``, or None: inferred from the cells.
    suppressed
        The texts of a suppressed cell (an empty cell is one too).
    hierarchies
        The public hierarchies that read generalized cells, by column.
    k
        The k the file was made to (its claim, checked in the report), or None: the size of
        its smallest class of quasi-identifiers.
    pram
        The PRAM matrix of each randomized column: ``(values, matrix)``, ``matrix[i, j]``
        the probability that true value ``values[i]`` is published as ``values[j]`` (a
        ``[pram]`` table of the roles file: column = matrix CSV file).
    """

    quasi_identifiers: tuple[str, ...]
    sensitive: str | None = None
    keep: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    weights: str | None = None
    kind: str | None = None
    suppressed: tuple[str, ...] = (STAR,)
    hierarchies: Mapping[str, Hierarchy] = field(default_factory=dict)
    k: int | None = None
    pram: Mapping[str, tuple[tuple[str, ...], np.ndarray]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.k is not None and (isinstance(self.k, bool) or not isinstance(self.k, int)
                                   or self.k < 1):  # fmt: skip
            raise ParameterError(f"k must be a whole number of at least 1, not {self.k!r}")
        if not self.quasi_identifiers:
            raise ParameterError("the roles name no quasi-identifier (quasi_identifiers = [...])")
        if self.kind is not None and self.kind not in KINDS:
            raise ParameterError(f"kind {self.kind!r} is not one of {', '.join(KINDS)}")
        named = [*self.quasi_identifiers, *self.keep, *self.ignore]
        named += [c for c in (self.sensitive, self.weights) if c is not None]
        twice = sorted({c for c in named if named.count(c) > 1})
        if twice:
            raise ParameterError(f"column {twice[0]!r} has two roles in the roles file")
        if self.pram and self.kind not in (None, "pram"):
            raise ParameterError(f"PRAM matrices are given, but kind is {self.kind!r}")
        linkable = {
            *self.quasi_identifiers,
            *self.keep,
            *([self.sensitive] if self.sensitive else []),
        }
        for name in self.pram:
            if name not in linkable:
                raise ParameterError(
                    f"a PRAM matrix is given for {name!r}, which is not a published column "
                    "of the roles (quasi_identifiers, sensitive or keep)"
                )
        for name in self.hierarchies:
            if name not in self.quasi_identifiers:
                raise ParameterError(
                    f"a hierarchy is given for {name!r}, which is not a quasi-identifier"
                )

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column the roles name, quasi-identifiers first."""
        extra = [c for c in (self.sensitive, self.weights) if c is not None]
        return (*self.quasi_identifiers, *self.keep, *extra, *self.ignore)

    def to_dict(self) -> dict[str, Any]:
        return {
            "quasi_identifiers": list(self.quasi_identifiers),
            "sensitive": self.sensitive,
            "keep": list(self.keep),
            "ignore": list(self.ignore),
            "weights": self.weights,
            "kind": self.kind,
            "suppressed": list(self.suppressed),
            "hierarchies": sorted(self.hierarchies),
            "k": self.k,
            "pram": sorted(self.pram),
        }


def _names(doc: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    v = doc.get(key, [])
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise ParameterError(f"{where}: {key} must be a list of column names")
    return tuple(v)


def _name(doc: Mapping[str, Any], key: str, where: str) -> str | None:
    v = doc.get(key)
    if v is not None and (not isinstance(v, str) or not v):
        raise ParameterError(f"{where}: {key} must be one column name")
    return v


def _hierarchy_name(stem: str) -> str:
    """The column of an ARX hierarchy file: ``adult_hierarchy_age`` -> ``age``."""
    return stem.split("_hierarchy_", 1)[1] if "_hierarchy_" in stem else stem


def parse_roles(
    doc: Mapping[str, Any], where: str = "the roles", base: Path | None = None
) -> Roles:
    """:class:`Roles` from a parsed TOML document (paths relative to ``base``)."""
    unknown = sorted(set(doc) - _ROLE_KEYS)
    if unknown:
        raise ParameterError(
            f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_ROLE_KEYS))})"
        )
    base = base or Path(".")
    spec = doc.get("hierarchies", {})
    hierarchies: dict[str, Hierarchy] = {}
    if isinstance(spec, str):  # a folder of hierarchy files
        folder = base / spec
        arx = sorted(folder.glob("*_hierarchy_*.csv")) if folder.is_dir() else []
        if arx:  # ARX's names (<data>_hierarchy_<column>.csv): those files only
            hierarchies = {_hierarchy_name(f.stem): read_hierarchy(f) for f in arx}
        else:  # <column>.csv
            hierarchies = read_hierarchies(folder)
    elif isinstance(spec, dict):
        for col, file in spec.items():
            if not isinstance(file, str):
                raise ParameterError(f"{where}: hierarchies.{col} must be a file name")
            hierarchies[col] = read_hierarchy(base / file, col)
    else:
        raise ParameterError(f"{where}: hierarchies must be a folder or a table of files")
    qi = _names(doc, "quasi_identifiers", where)
    # a folder may hold hierarchies of columns that are not quasi-identifiers here
    hierarchies = {k: h for k, h in hierarchies.items() if k in qi or isinstance(spec, dict)}
    markers = _names(doc, "suppressed", where) if "suppressed" in doc else (STAR,)
    kind = doc.get("kind")
    if kind is not None and not isinstance(kind, str):
        raise ParameterError(f"{where}: kind must be a string")
    return Roles(
        quasi_identifiers=qi,
        sensitive=_name(doc, "sensitive", where),
        keep=_names(doc, "keep", where),
        ignore=_names(doc, "ignore", where),
        weights=_name(doc, "weights", where),
        kind=kind,
        suppressed=markers,
        hierarchies=hierarchies,
        k=doc.get("k"),
        pram=_matrices(doc.get("pram", {}), base, where),
    )


def read_matrix(path: str | Path, name: str) -> tuple[tuple[str, ...], np.ndarray]:
    """A PRAM matrix from a CSV: a header of the published values, then one row per true
    value (its value first, then the probabilities of publishing each), as sdcMicro's
    ``pram()`` prints its transition matrix.  Rows and columns must list the same values;
    the columns are put in the rows' order."""
    from privlab.data.matrices import validate_matrix

    path = Path(path)
    if not path.is_file():
        raise ParameterError(f"PRAM matrix file not found: {path}")
    try:
        frame = pd.read_csv(path, index_col=0, dtype=str, keep_default_na=False)
    except (ValueError, OSError, pd.errors.EmptyDataError) as e:
        first = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise ParameterError(f"cannot read the PRAM matrix {path}: {first}") from None
    rows = [str(v).strip() for v in frame.index]
    cols = [str(v).strip() for v in frame.columns]
    if sorted(rows) != sorted(cols) or len(set(rows)) != len(rows):
        raise ParameterError(
            f"the PRAM matrix {path} must list the same values, once each, in its header "
            "and its first column"
        )
    frame.columns = cols
    try:
        m = frame[rows].to_numpy(dtype=float)
    except ValueError:
        raise ParameterError(f"the PRAM matrix {path} holds a cell that is not a number") from None
    return tuple(rows), validate_matrix(m, name=f"the PRAM matrix of {name} ({path})")


def _matrices(spec: Any, base: Path, where: str) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
    if not isinstance(spec, dict):
        raise ParameterError(f"{where}: pram must be a table (column = matrix file)")
    out = {}
    for col, file in spec.items():
        if not isinstance(file, str):
            raise ParameterError(f"{where}: pram.{col} must be a file name")
        out[col] = read_matrix(base / file, col)
    return out


def load_roles(path: str | Path) -> Roles:
    """Read a roles TOML file (its hierarchy paths are relative to it)."""
    path = Path(path)
    if not path.is_file():
        raise ParameterError(f"roles file not found: {path}")
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ParameterError(f"{path} is not a UTF-8 text file") from None
    except tomllib.TOMLDecodeError as e:
        raise ParameterError(f"{path} is not valid TOML: {e}") from None
    return parse_roles(doc, str(path), path.parent)


# -- reading the file -------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class OutsideRelease:
    """An outside file in privlab's release form, with what was inferred reading it.

    Attributes
    ----------
    release
        The release (a :class:`~privlab.publish.generalization_core.GeneralizedRelease`).
    people
        The people the attacker links: the original's rows of the published records.
    kind
        How the file was read.
    paired
        Whether the file's rows were paired with the original's by position.
    n_rows, n_suppressed
        The file's rows, and its suppressed records (not published).
    weights
        The published records' sampling weights, or None.
    hierarchies
        The hierarchies the cells were read with (the roles', else a bundled original's).
    notes
        What was inferred, in sentences for the report.
    """

    release: Any
    people: Table
    kind: str
    paired: bool
    n_rows: int
    n_suppressed: int
    weights: np.ndarray | None
    notes: tuple[str, ...]
    hierarchies: Mapping[str, Hierarchy] = field(default_factory=dict)

    def header(self, path: Path | str, original: Any) -> dict[str, Any]:
        return {
            "file": str(path),
            "original": str(original) if isinstance(original, (str, Path)) else "a table",
            "kind": self.kind,
            "rows": self.n_rows,
            "suppressed records": self.n_suppressed,
            "paired with the original by row": self.paired,
            "notes": list(self.notes),
        }


def _texts(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The cells of a column as text keys (as privlab encodes values), and which are empty."""
    values = col.to_numpy()
    empty = np.asarray(pd.isna(col), dtype=bool)
    out = np.full(values.size, "", dtype=object)
    if (~empty).any():
        kept = values[~empty]
        if kept.dtype == object:
            kept = np.array([v.strip() if isinstance(v, str) else v for v in kept], dtype=object)
        out[~empty] = _keys(np.asarray(kept))
    return out, empty


def _load_original(original: Any, encoding: str | None) -> Table:
    """The original as a Table: a Table, a bundled dataset, or a CSV (``,`` or ``;``
    separated, as ARX writes them) or Parquet file."""
    from privlab.data.datasets import DATASETS, load_input
    from privlab.data.table import read_frame

    if isinstance(original, Table):
        return original
    if str(original) in DATASETS and not Path(original).exists():
        return load_input(str(original))
    frame = read_frame(original, encoding=encoding, sniff=True)
    try:
        return Table.from_pandas(frame)
    except PrivlabError as e:
        raise type(e)(f"{original}: {e}") from None


def read_outside(
    path: str | Path, original: Any, roles: Roles, *, encoding: str | None = None
) -> OutsideRelease:
    """Read an outside release into privlab's form (see the module docstring)."""
    from privlab.attacks.population import cover_matrix
    from privlab.data.counts import distinct_rows
    from privlab.data.table import read_frame
    from privlab.publish.generalization_core import GeneralizedRelease
    from privlab.publish.models import PrivacyModel

    path = Path(path)
    frame = read_frame(path, encoding=encoding, sniff=True)
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in roles.columns if c not in frame.columns and c not in roles.ignore]
    if missing:
        raise SchemaError(f"{path} has no column {missing[0]!r}, which the roles name")
    loose = [c for c in frame.columns if c not in roles.columns]
    if loose:
        raise SchemaError(
            f"{path} has a column {loose[0]!r} without a role: name it in the roles file "
            "(quasi_identifiers, sensitive, keep, weights, or ignore)"
        )
    people = _load_original(original, encoding)
    need = [*roles.quasi_identifiers, *([roles.sensitive] if roles.sensitive else [])]
    absent = [c for c in need if c not in people.names]
    if absent:
        raise SchemaError(
            f"the original has no column {absent[0]!r}: it needs every quasi-identifier "
            "and the sensitive column, with each person's exact value"
        )
    if roles.pram or roles.kind == "pram":
        return _read_pram(path, frame, people, roles)
    n = len(frame)
    qi = list(roles.quasi_identifiers)
    markers = set(roles.suppressed)
    hierarchies = {**_bundled(original, qi), **roles.hierarchies}
    cells: dict[str, np.ndarray] = {}
    starred = np.zeros((n, len(qi)), dtype=bool)
    generalized: list[str] = []
    for j, q in enumerate(qi):
        text, empty = _texts(frame[q])
        star = empty | np.isin(text, list(markers))
        text[star] = STAR
        starred[:, j] = star
        cells[q] = text
        exact = set(_keys(np.asarray(people.schema[q].domain, dtype=object)))
        if any(v not in exact for v in np.unique(text[~star])):
            generalized.append(q)
    kind = roles.kind
    if kind is None:
        if not generalized and not starred.any():
            raise PrivlabError(
                f"the quasi-identifiers of {path} hold only exact values of the original "
                '(nothing generalized or suppressed): say kind = "synthetic" in the roles '
                "file if its rows were generated (give --control too), or kind = "
                '"generalization" if it was published so'
            )
        kind = "generalization"
    suppressed_rows = starred.all(axis=1)
    published = ~suppressed_rows
    if not published.any():
        raise PrivlabError(f"every record of {path} is suppressed: nothing is published")
    # every distinct cell must cover some value of the original (else it cannot be read)
    cover: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for q in qi:
        labels, codes = np.unique(cells[q], return_inverse=True)
        domain = people.schema[q].domain
        m = cover_matrix(labels, domain, hierarchies.get(q))
        dead = np.flatnonzero(~m.any(axis=0))
        if dead.size:
            bad = str(labels[dead[0]])
            if _number(bad) and all(_number(str(v)) for v in domain):
                raise PrivlabError(
                    f"{path}: {q} holds {bad!r}, a number the original's {q} does not hold "
                    "(noise or microaggregation?): privlab reads generalized cells, not "
                    "perturbed numbers; write them as ranges (20-29) if they were generalized"
                )
            raise PrivlabError(
                f"{path}: the cell {bad!r} of {q} covers no value of the original's {q}: give "
                f"{q}'s hierarchy in the roles file ([hierarchies]), or write it as a range "
                "(20-29, [20, 30[) or a set ({a, b})"
            )
        cover[q] = (labels, codes, m)
    # pair the rows by position when they fit (ARX keeps the input's order)
    paired = False
    if n == people.n_rows:
        ok = np.ones(n, dtype=bool)
        for q in qi:
            _, codes, m = cover[q]
            ok &= m[people.column(q), codes]
        for c in ([roles.sensitive] if roles.sensitive else []) + list(roles.keep):
            if c in people.names:
                ok &= _texts(frame[c])[0] == _keys(np.asarray(people.decode(c), dtype=object))
        paired = bool(ok.all())
    notes = []
    n_pub = int(published.sum())
    n_supp = n - n_pub
    if paired:
        notes.append(
            f"the file's {n:,} rows are the original's, in its order (every cell covers the "
            "original's value on the same row)"
        )
        if n_supp:
            people = people.take(np.flatnonzero(published))
    elif people.n_rows != n_pub:
        raise PrivlabError(
            f"{path} publishes {n_pub:,} records and the original has {people.n_rows:,} "
            "people, and its rows do not follow the original's: give the original of the "
            "published records only, or the file with its suppressed records kept (their "
            "quasi-identifiers '*', in the original's order, as ARX writes them)"
        )
    if n_supp:
        notes.append(
            f"{n_supp:,} record(s) have every quasi-identifier suppressed: they are not "
            "published, and their people are not attacked"
        )
    if generalized:
        notes.append(f"generalized cells read in {', '.join(generalized)}")
    stars = [f"{q} {int(starred[published, j].sum()):,}" for j, q in enumerate(qi)
             if starred[published, j].any()]  # fmt: skip
    if stars:
        notes.append(
            "published cells '*' (suppressed, or generalized to any value): " + ", ".join(stars)
        )
    if roles.ignore:
        notes.append(f"left out: {', '.join(roles.ignore)} (ignore in the roles file)")
    rows = np.flatnonzero(published)
    data = {q: cells[q][rows] for q in qi}
    for c in roles.keep:
        data[c] = frame[c].to_numpy()[rows]
    if roles.sensitive is not None:
        data[roles.sensitive] = frame[roles.sensitive].to_numpy()[rows]
    try:
        table = Table.from_pandas(pd.DataFrame(data)).with_roles(
            qi=qi, sensitive=roles.sensitive, keep=list(roles.keep)
        )
    except PrivlabError as e:
        raise type(e)(f"{path}: {e}") from None
    weights = None if roles.weights is None else _weights(path, frame, roles.weights, rows)
    q_codes = table.select(qi)
    sizes = np.bincount(distinct_rows(q_codes.codes, q_codes.schema.sizes)[1])
    release = GeneralizedRelease(
        table=table,
        qi=tuple(qi),
        sensitive=roles.sensitive,
        algorithm="outside",
        model=PrivacyModel(k=roles.k if roles.k is not None else int(sizes.min())),
        suppression=n_supp / n,
        node=None,
        n_input=n,
        n_suppressed=n_supp,
    )
    return OutsideRelease(
        release=release,
        people=people,
        kind=kind,
        paired=paired,
        n_rows=n,
        n_suppressed=n_supp,
        weights=weights,
        notes=tuple(notes),
        hierarchies=hierarchies,
    )


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _bundled(original: Any, qi: Sequence[str]) -> dict[str, Hierarchy]:
    """A bundled dataset's default hierarchies of ``qi`` when ``original`` names one."""
    from privlab.attacks.population import bundled_hierarchies

    if not isinstance(original, (str, Path)):
        return {}
    found = bundled_hierarchies(original) or {}
    return {q: h for q, h in found.items() if q in qi}


def _read_pram(path: Path, frame: pd.DataFrame, people: Table, roles: Roles) -> OutsideRelease:
    """A PRAM file with its matrices: every record, in the original's order (as sdcMicro's
    ``pram()`` writes them); the original's values of the randomized columns are the truth
    the PRAM attack is judged against."""
    from privlab.publish.pram_core import Block
    from privlab.publish.randomization import PramRelease
    from privlab.release.base import Custody

    if not roles.pram:
        raise PrivlabError('kind is "pram" but the roles give no matrix ([pram] column = file)')
    n = len(frame)
    if n != people.n_rows:
        raise PrivlabError(
            f"{path} has {n:,} records and the original {people.n_rows:,}: a PRAM file keeps "
            "every record, in the original's order"
        )
    published = [c for c in frame.columns if c in roles.columns and c not in roles.ignore]
    published = [c for c in published if c != roles.weights]
    data: dict[str, np.ndarray] = {}
    truth: dict[str, np.ndarray] = {}
    domains: dict[str, tuple[str, ...]] = {}
    for c in published:
        text, empty = _texts(frame[c])
        if empty.any():
            raise PrivlabError(
                f"{path}: {c} has an empty cell on row {int(np.argmax(empty)) + 1} (a PRAM "
                "file publishes every value)"
            )
        data[c] = text
        if c not in roles.pram:
            continue
        values, _ = roles.pram[c]
        known = set(values)
        bad = [v for v in np.unique(text) if v not in known]
        if bad:
            raise PrivlabError(f"{path}: {c} holds {bad[0]!r}, which its PRAM matrix does not list")
        if c not in people.names:
            raise PrivlabError(f"the original has no column {c!r}: it holds the true values")
        true = _keys(np.asarray(people.decode(c), dtype=object))
        bad = [v for v in np.unique(true) if v not in known]
        if bad:
            raise PrivlabError(
                f"the original's {c} holds {bad[0]!r}, which the PRAM matrix does not list"
            )
        domains[c] = values
        truth[c] = true
    unchanged = [c for c in published if c not in roles.pram and c in people.names]
    for c in unchanged:
        differ = data[c] != _keys(np.asarray(people.decode(c), dtype=object))
        if differ.any():
            i = int(np.argmax(differ))
            raise PrivlabError(
                f"row {i + 1} of {path} does not follow the original's: its {c} is "
                f"{data[c][i]!r}, the original's {people.decode(c)[i]!r} (a PRAM file keeps "
                "every record in the original's order; give its matrix if it was randomized)"
            )
    try:
        table = Table.from_pandas(pd.DataFrame(data), domains=domains).with_roles(
            qi=list(roles.quasi_identifiers), sensitive=roles.sensitive, keep=list(roles.keep)
        )
        true_table = Table.from_pandas(pd.DataFrame(truth), domains=domains)
    except PrivlabError as e:
        raise type(e)(f"{path}: {e}") from None
    blocks = tuple(Block((c,), roles.pram[c][1], scheme="outside") for c in roles.pram)
    release = PramRelease(table=table, blocks=blocks, scheme="outside",
                          custody=Custody(truth=true_table))  # fmt: skip
    notes = [
        f"randomized by PRAM, with the matrices given: {', '.join(roles.pram)}",
        f"the file's {n:,} rows are the original's, in its order"
        + (f" (checked on {', '.join(unchanged)}, published unchanged)" if unchanged else
           " (no column is published unchanged to check it)"),
    ]  # fmt: skip
    if roles.ignore:
        notes.append(f"left out: {', '.join(roles.ignore)} (ignore in the roles file)")
    weights = None
    if roles.weights is not None:
        weights = _weights(path, frame, roles.weights, np.arange(n))
    return OutsideRelease(
        release=release, people=people, kind="pram", paired=True, n_rows=n, n_suppressed=0,
        weights=weights, notes=tuple(notes),
    )  # fmt: skip


def _weights(path: Path, frame: pd.DataFrame, column: str, rows: np.ndarray) -> np.ndarray:
    w = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)[rows]
    if not np.isfinite(w).all() or (w <= 0).any():
        raise PrivlabError(
            f"{path}: the weights {column!r} must be positive numbers on every published record"
        )
    return w


def assess(
    path: str | Path,
    original: Any,
    roles: Roles | str | Path,
    *,
    config: Any = None,
    attacks: Sequence[str] | None = None,
    progress: bool = False,
    attack_salt: int | None = None,
    person_risk: str | Path | None = None,
    encoding: str | None = None,
    control: Any = None,
) -> Any:
    """The report and verdict of an outside release (a :class:`~privlab.report.build.Report`).

    Parameters
    ----------
    path
        The release: a CSV (``,`` or ``;`` separated) or Parquet file.
    original
        The table it was made from (a path, a bundled dataset's name or a ``Table``): each
        person's exact quasi-identifiers and true sensitive value.
    roles
        :class:`Roles` or a roles TOML file.
    config, attacks, progress, attack_salt, person_risk
        As for :func:`privlab.report.build.build`.
    encoding
        The file's text encoding (default UTF-8).
    control
        For a synthetic table (``kind = "synthetic"``): real rows of the same population it
        was not made from (:func:`privlab.report.synthetic.assess_synthetic`).
    """
    from privlab.report.build import build

    if not isinstance(roles, Roles):
        roles = load_roles(roles)
    if roles.kind == "synthetic":
        from privlab.report.synthetic import assess_synthetic

        return assess_synthetic(path, original, roles, control=control, config=config,
                                attack_salt=attack_salt, encoding=encoding)  # fmt: skip
    if control is not None:
        raise ParameterError('a control set applies to a synthetic table (kind = "synthetic")')
    outside = read_outside(path, original, roles, encoding=encoding)
    header = {"assessed": outside.header(path, original), "release": str(path)}
    header["release_file_sha256"] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return build(
        outside.release,
        config=config,
        attacks=tuple(attacks) if attacks is not None else None,
        person_risk=person_risk,
        population=outside.people if outside.kind == "generalization" else None,
        progress=progress,
        label=Path(path).name,
        attack_salt=attack_salt,
        hierarchies=dict(outside.hierarchies),
        header=header,
        weights=outside.weights,
    )


__all__ = [
    "KINDS",
    "OutsideRelease",
    "Roles",
    "assess",
    "load_roles",
    "parse_roles",
    "read_outside",
]
