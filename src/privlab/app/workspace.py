"""The app's working folder: the custodian's data, their roles, and the runs.

Everything the app writes lives under one folder (``privlab app --workdir``)::

    data/<id>/entry.json      the name, where it came from, the profile, the roles, the
                              risk preview, the hierarchies
    data/<id>/input.csv       an uploaded file (streamed to disk; CSV or Parquet)
    data/<id>/hierarchies/    uploaded generalization hierarchies (<column>.csv, ARX's format)
    runs/<id>/run.json        the settings, the commands, the state, the verdicts
    runs/<id>/audit.toml      the settings as `privlab audit` reads them
    runs/<id>/out/            what `privlab audit` writes: a release per setting
                              (out/anatomy-l4/), its report (out/reports/), the comparison
                              (out/report.html)
    runs/<id>/custody/        the seeds and the true values (never offered for download)

Ids are random hex strings checked against :data:`ID` before any path is built from them, so
nothing the browser sends names a file outside this folder.  A run is the command line's own
commands, run in a child process (:class:`Job`): the files are what ``privlab`` writes for the
same settings, an error is the command line's one line, and a cancel is the command line's
interrupt (it removes what it had not finished writing).
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from privlab.errors import PrivlabError
from privlab.report.config import (
    HIERARCHICAL,
    MASKING,
    NO_KEEP,
    Thresholds,
    check_also,
    grid_values,
)

#: The shape of every id the app hands out (data and runs).
ID = re.compile(r"^[0-9a-f]{12}$")

#: The roles a column can take in the app, in the order the page lists them.
ROLES = ("quasi-identifier", "sensitive", "kept", "dropped", "weights")

#: The sanitizers the app runs, each with its parameter, the parameter's range and the one
#: sentence that explains it.
METHODS: dict[str, dict[str, Any]] = {
    "anatomy": {
        "title": "Anatomy (Xiao & Tao 2006)",
        "what": "Publishes the quasi-identifiers exactly and the sensitive values in a "
        "separate table, linked only through groups of people with l different values.",
        "param": "l",
        "default": 4,
        "explain": "l: each group holds at least l different sensitive values, so a person's "
        "value is one of at least l (higher: safer, less precise). Give several (2, 3, 4) to "
        "compare them side by side.",
    },
    "generalization": {
        "title": "Generalization (k-anonymity)",
        "what": "Coarsens the quasi-identifiers (ages into ranges, values into groups) until "
        "every combination is shared by at least k records; the sensitive value is kept.",
        "param": "k",
        "default": 5,
        "explain": "k: each published combination of quasi-identifiers describes at least k "
        "people (higher: harder to single anyone out, coarser data). Give several (5, 10, "
        "20) to compare them side by side.",
        # further privacy models every setting of k must also meet (the audit's l and t)
        "also": {
            "l": "l (optional, a whole number): each published combination also holds at "
            "least l different sensitive values (l-diversity), so that no one's value can be "
            "read off their combination. Leave it empty for k alone.",
            "t": "t (optional, between 0 and 1): the mix of sensitive values in each "
            "combination stays within t of the whole table's (t-closeness: the share of "
            "records whose value would have to change); lower is safer. Leave it empty for "
            "none.",
        },
    },
    "suppression": {
        "title": "Local suppression (k-anonymity)",
        "what": "Blanks the fewest quasi-identifier cells (published as *, matching any "
        "value) until every record shares its combination with at least k records; every "
        "record and its sensitive value are kept.",
        "param": "k",
        "default": 3,
        "explain": "k: each record's combination of quasi-identifiers matches at least k "
        "records (higher: harder to single anyone out, more cells blanked). Give several "
        "(3, 5, 10) to compare them side by side.",
    },
    "microaggregation": {
        "title": "Microaggregation (MDAV)",
        "what": "Replaces the numbers of each group of k similar records by the group's "
        "means; the sensitive value is kept. Numeric quasi-identifiers only.",
        "param": "k",
        "default": 5,
        "explain": "k: at least k records share each published set of numbers (higher: "
        "harder to link a record to its person, less precise numbers). Give several (3, 5, "
        "10) to compare them side by side.",
    },
    "swap": {
        "title": "Rank swapping",
        "what": "Exchanges each number with one of a record close to it in rank, column by "
        "column: every column keeps its values, only who holds them changes; the sensitive "
        "value is kept. Numeric quasi-identifiers only.",
        "param": "p",
        "default": 10,
        "explain": "p: a value may move to any record within p percent of the records in "
        "rank (higher: harder to link a record to its person, weaker relations between "
        "columns). Give several (2, 10, 30) to compare them side by side.",
    },
    "noise": {
        "title": "Additive noise",
        "what": "Adds random noise to each numeric quasi-identifier, scaled to the column's "
        "spread; the sensitive value is kept. Numeric quasi-identifiers only.",
        "param": "noise",
        "default": 50,
        "explain": "noise: its standard deviation as a percentage of each column's (higher: "
        "harder to link a record to its person, less precise numbers). Give several (10, "
        "50, 100) to compare them side by side.",
    },
    "topcoding": {
        "title": "Top and bottom coding",
        "what": "Replaces the largest and the smallest numbers of each quasi-identifier by a "
        "threshold (every age above the 95th percentile shown as that percentile), so that "
        "no one stands out by an extreme value; the sensitive value is kept. Numeric "
        "quasi-identifiers only.",
        "param": "tail",
        "default": 5,
        "explain": "tail: the percentage of records coded at each end of a column (higher: "
        "fewer people stand out, less detail at the ends); the thresholds are read from the "
        "data and published. Give several (1, 5, 10) to compare them side by side.",
    },
    "pram": {
        "title": "PRAM (post-randomization)",
        "what": "Replaces each quasi-identifier and sensitive value, with probability p, by "
        "another value of its column drawn at random, and publishes the odds of each change "
        "so that analysts can correct their counts: no published value is sure to be true.",
        "param": "p",
        "default": 30,
        "explain": "p: the chance, in percent, that a value is replaced (higher: less can be "
        "learned about anyone, noisier counts). Give several (10, 30, 50) to compare them "
        "side by side.",
    },
    "alphabeta": {
        "title": "Alpha-beta (Rastogi et al. 2007)",
        "what": "Publishes the distinct combinations of the quasi-identifiers and the "
        "sensitive value, some of the real ones left out and invented ones added, so that no "
        "published combination is surely someone's; counts are estimated from it. No other "
        "column is published.",
        "param": "gamma",
        "default": 50,
        "explain": "gamma: the most, in percent, that an attacker can be sure a published "
        "combination is real (lower: safer, more invented combinations and fewer real ones). "
        "Give several (30, 50, 70) to compare them side by side.",
    },
    "synthetic": {
        "title": "Differentially private synthetic data (MST)",
        "what": "Publishes invented records drawn from a model of the quasi-identifiers and "
        "the sensitive value, fitted to noisy counts: differential privacy bounds what any "
        "one person's record can change in it, by a factor e^epsilon. No other column is "
        "published.",
        "param": "epsilon",
        "default": "1",
        "explain": "epsilon: the privacy budget (lower: safer, noisier counts, less faithful "
        "records; policies often ask for 1 or less). Give several (0.5, 1, 4) to compare "
        "them side by side; the report judges each against a control set of people the "
        "model was not fitted to.",
    },
    "dp-histogram": {
        "title": "Differentially private histogram",
        "what": "Publishes no records: the count of people with each combination of the "
        "quasi-identifiers and the sensitive value, every count with random noise added, "
        "so that differential privacy bounds what any one person's record can change in it, "
        "by a factor e^epsilon. No other column is published.",
        "param": "epsilon",
        "default": "0.5",
        "explain": "epsilon: the privacy budget (lower: safer, noisier counts; policies often "
        "ask for 1 or less, and every DP output of the same data spends from one budget). "
        "Give several (0.1, 0.5, 1) to compare the noise each adds.",
    },
    "dp-naive-bayes": {
        "title": "Differentially private classifier (naive Bayes)",
        "what": "Publishes no records: a model that predicts the sensitive value from the "
        "quasi-identifiers, learned from counts with random noise added, so that "
        "differential privacy bounds what any one person's record can change in it, by a "
        "factor e^epsilon. It is tested on a fifth of the people, held out and never "
        "learned from.",
        "param": "epsilon",
        "default": "0.5",
        "explain": "epsilon: the privacy budget (lower: safer, noisier counts, a less "
        "accurate model; policies often ask for 1 or less, and every DP output of the same "
        "data spends from one budget). Give several (0.1, 0.5, 1) to compare how often each "
        "model is right.",
        "share": "publish the model alone: its report gives its accuracy on the held-out "
        "people, computed exactly on them, which the privacy budget does not cover.",
    },
    "dp-tree": {
        "title": "Differentially private classifier (decision tree)",
        "what": "Publishes no records: a decision tree (up to 5 questions deep) that predicts "
        "the sensitive value from the quasi-identifiers, its questions and its leaves chosen "
        "with random noise, so that differential privacy bounds what any one person's record "
        "can change in it, by a factor e^epsilon. It is tested on a fifth of the people, "
        "held out and never learned from.",
        "param": "epsilon",
        "default": "0.5",
        "explain": "epsilon: the privacy budget (lower: safer, noisier choices, a less "
        "accurate tree; policies often ask for 1 or less, and every DP output of the same "
        "data spends from one budget). Give several (0.1, 0.5, 1) to compare how often each "
        "tree is right.",
        "share": "publish the model alone: its report gives its accuracy on the held-out "
        "people, computed exactly on them, which the privacy budget does not cover.",
    },
    "marginals": {
        "title": "Anonymized marginals (Kifer & Gehrke 2006)",
        "what": "Publishes counts instead of records: a k-anonymous table of the "
        "quasi-identifiers (coarsened where needed) with the sensitive value, and the "
        "tables of a few columns together that describe the data best while keeping every "
        "count of at least k people. No other column is published.",
        "param": "k",
        "default": 10,
        "explain": "k: every published count covers at least k people (higher: harder to "
        "single anyone out, coarser counts). Give several (5, 10, 50) to compare them side "
        "by side.",
    },
}

#: A bundled dataset's people apart from it (the control a synthetic table is judged beyond)
CONTROLS = {"adult": "adult-test"}

#: Names that are usually known about a person from outside (registers, social media).
_USUALLY_KNOWN = re.compile(
    r"age|sex|gender|birth|zip|post|region|county|country|nation|race|ethnic|marital|"
    r"relationship|education|occupation|job|work",
    re.IGNORECASE,
)


def new_id() -> str:
    return secrets.token_hex(6)


def check_id(value: str) -> str:
    """``value`` if it has the shape of an id the app hands out; else a 404's error."""
    if not ID.match(value or ""):
        raise LookupError(value)
    return value


def small_text(raw: bytes, name: str, mb: int, what: str) -> str:
    """An uploaded text file of at most ``mb`` MB (read with one byte more), as UTF-8."""
    if len(raw) > mb * 2**20:
        raise PrivlabError(f"{name}: larger than {mb} MB, not {what}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PrivlabError(f"{name} is not a UTF-8 text file") from None


def _read(path: Path) -> dict[str, Any]:
    """A JSON file the app wrote; a missing one is a 404's error."""
    if not path.is_file():
        raise LookupError(path.parent.name)
    return json.loads(path.read_text(encoding="utf-8"))


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    """Atomic: a reader sees the old file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, path)


# -- the profile of a table -------------------------------------------------------------------
def profile(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Per column: its type, distinct values, missing cells, how many records it alone makes
    unique, its most common values, and the role privlab suggests with the reason."""
    n = len(df)
    out = []
    for name in df.columns:
        col = df[name]
        counts = col.value_counts(dropna=True)
        distinct = int(counts.size)
        alone = int((counts == 1).sum())
        numeric = bool(pd.api.types.is_numeric_dtype(col))
        top = [(str(v), int(c)) for v, c in counts.head(3).items()]
        role, why = _suggest(str(name), n, distinct, alone)
        out.append({"name": str(name), "type": "number" if numeric else "text",
                    "distinct": distinct, "missing": int(col.isna().sum()),
                    "unique_alone": alone, "top": top, "suggested": role,
                    "why": why})  # fmt: skip
    return out


def preview(df: pd.DataFrame, qi: list[str], sensitive: str,
            weights: str | None = None) -> dict[str, Any]:  # fmt: skip
    """What the data risk before any protection, and how far Anatomy can go: cheap counts
    shown before a run.  ``unique``: records alone with their combination of
    quasi-identifiers (whoever knows those facts about them finds their record);
    ``under5``: records sharing theirs with fewer than 4 others; ``max_l``: the largest l
    Anatomy can reach (each sensitive value may be at most 1/l of the records: Xiao & Tao
    2006, the eligibility condition), from the most common value's share.

    With a column of sampling weights (the file is a sample of a population),
    ``weighted``: sdcMicro's individual risk (:func:`privlab.metrics.sdc_risk
    .individual_risk`, Benedetti-Franconi), its expected re-identifications (the sum of the
    records' risks), the population it estimates (the weights' sum) and the records whose
    risk exceeds the verdict's default ``max_prosecutor_risk`` (0.2)."""
    n = len(df)
    grouped = df.groupby(qi, dropna=False, sort=False)
    sizes = grouped.size().to_numpy()
    counts = df[sensitive].value_counts(dropna=False)
    top_share = float(counts.iloc[0] / n) if n else 0.0
    out = {"rows": n, "qi": list(qi), "combinations": int(sizes.size),
           "unique": int((sizes == 1).sum()), "under5": int(sizes[sizes < 5].sum()),
           "smallest": int(sizes.min()) if sizes.size else 0,
           "sensitive": sensitive, "top_value": str(counts.index[0]) if n else "",
           "top_share": top_share, "max_l": int(1 / top_share) if top_share else 0}  # fmt: skip
    if weights is not None and n:
        from privlab.metrics.sdc_risk import individual_risk

        key = grouped.ngroup().to_numpy().reshape(-1, 1)
        risk = individual_risk(key, df[weights].to_numpy(float)).risk
        above = Thresholds().max_prosecutor_risk  # the verdict's default limit
        out["weighted"] = {"column": weights, "population": float(df[weights].sum()),
                           "expected": float(risk.sum()), "above": int((risk > above).sum()),
                           "threshold": above}  # fmt: skip
    return out


def _check_weights(col: pd.Series, name: str) -> None:
    """Sampling weights: numbers, each at least 1 (the people a record stands for), as
    :func:`~privlab.metrics.sdc_risk.individual_risk` checks them (text is not a number)."""
    from privlab.metrics.sdc_risk import first_bad_weight

    i = first_bad_weight(pd.to_numeric(col, errors="coerce").to_numpy(float))
    if i is not None:
        raise PrivlabError(
            f"column {name!r} cannot be the sampling weights: record {i} holds "
            f"{str(col.iloc[i])!r}, and a weight is a number >= 1 (how many people the "
            "record stands for)"
        )


def _suggest(name: str, n: int, distinct: int, alone: int) -> tuple[str, str]:
    if n and distinct >= 0.5 * n:
        return "dropped", (
            f"{distinct} different values in {n} records: nearly every record has its own, "
            "so it identifies records (a name, a number, a weight); drop it unless it is needed"
        )
    if _USUALLY_KNOWN.search(name):
        return "quasi-identifier", (
            "values like this are usually known about a person from outside (registers, "
            "acquaintances), and can link a record to its person"
        )
    if alone:
        return "quasi-identifier", (
            f"alone it makes {alone} record{'s' if alone != 1 else ''} unique: anyone who "
            "knows this value of a person may find their record"
        )
    return "kept", "not usually known from outside: kept unchanged (choose otherwise if it is)"


# -- data -------------------------------------------------------------------------------------
def _table_name(filename: str | None, default: str) -> tuple[str, bool]:
    """An uploaded file's name as the user gave it (no folders), and whether it is Parquet;
    refused unless it is a CSV or Parquet file."""
    base = Path(filename or default).name
    suffix = "".join(Path(base).suffixes[-2:]).lower()
    if not (suffix.endswith(".csv") or suffix.endswith(".parquet") or suffix.endswith(".pq")):
        raise PrivlabError(f"{base}: not a CSV or Parquet file (.csv, .parquet)")
    return base, "parquet" in suffix or suffix.endswith(".pq")


def _read_as(path: Path, base: str) -> pd.DataFrame:
    """An uploaded table read as the command line reads it; its errors name the file as
    the user named it."""
    from privlab.data.table import read_frame

    try:
        return read_frame(path, sniff=True)
    except PrivlabError as e:
        raise PrivlabError(str(e).replace(str(path), base)) from None


@dataclass
class Workspace:
    """The working folder (created if missing)."""

    root: Path
    max_upload_bytes: int = 500 * 2**20

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        for sub in ("data", "runs"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self._jobs: dict[str, Job] = {}

    # data entries
    def data_dir(self, data_id: str) -> Path:
        return self.root / "data" / check_id(data_id)

    def data(self, data_id: str) -> dict[str, Any]:
        return _read(self.data_dir(data_id) / "entry.json")

    def save_data(self, entry: dict[str, Any]) -> None:
        _write_json(self.data_dir(entry["id"]) / "entry.json", entry)

    def all_data(self) -> list[dict[str, Any]]:
        return [self.data(i) for i in self._ids("data", "entry.json")]

    def _ids(self, sub: str, name: str) -> list[str]:
        """The ids under ``sub`` that hold ``name``, oldest first."""
        found = [
            d for d in (self.root / sub).iterdir() if ID.match(d.name) and (d / name).is_file()
        ]
        return [d.name for d in sorted(found, key=lambda d: d.stat().st_mtime)]

    def add_bundled(self, name: str) -> dict[str, Any]:
        from privlab.data.datasets import DATASETS, load_input

        if name not in DATASETS:
            raise PrivlabError(f"no bundled dataset named {name!r} ({', '.join(DATASETS)})")
        df = load_input(name).to_pandas()
        return self._add(name, "bundled", name, df, size=None)

    def add_upload(self, filename: str, chunks: Any) -> dict[str, Any]:
        """An uploaded file, streamed to disk chunk by chunk (``chunks``: an iterable of
        bytes); refused past :attr:`max_upload_bytes`, or when privlab cannot read it as a
        table (the command line's message, naming the file as the user named it)."""
        base, parquet = _table_name(filename, "upload")
        data_id = new_id()
        folder = self.data_dir(data_id)
        folder.mkdir(parents=True)
        path = folder / ("input.parquet" if parquet else "input.csv")
        try:
            size = self._receive(chunks, path, base)
            df = _read_as(path, base)
            return self._add(base, "upload", str(path), df, size=size, data_id=data_id)
        except BaseException:
            for p in folder.iterdir():
                p.unlink()
            folder.rmdir()
            raise

    def add_control(self, data_id: str, filename: str, chunks: Any) -> dict[str, Any]:
        """A control set for the data: people like its people but not among them (another
        sample, a later wave, records held back), whom a synthetic table is judged beyond
        (the audit's ``[control] public``).  Streamed as an upload is, and refused unless
        it holds every column of the data (a file without rows is refused as it is read, CSV
        or Parquet); it replaces an earlier one."""
        entry = self.data(data_id)
        base, parquet = _table_name(filename, "control")
        folder = self.data_dir(data_id)
        path = folder / ("control.parquet" if parquet else "control.csv")
        part = folder / f".control-{new_id()}{path.suffix}"  # renamed once it is checked
        try:
            self._receive(chunks, part, base)
            df = _read_as(part, base)
            names = [c["name"] for c in entry["columns"]]
            missing = [c for c in names if c not in df.columns]
            if missing:
                raise PrivlabError(
                    f"{base} has no column {missing[0]!r}: a control set holds the data's "
                    f"columns ({', '.join(names)})"
                )
            for old in folder.glob("control.*"):
                old.unlink()
            part.replace(path)
        finally:
            part.unlink(missing_ok=True)
        entry["control"] = {"file": base, "rows": len(df), "path": str(path)}
        self.save_data(entry)
        return entry

    def _receive(self, chunks: Any, path: Path, base: str) -> int:
        """Write ``chunks`` to ``path``; its size, or a refusal past the upload limit."""
        size = 0
        with path.open("wb") as f:
            for chunk in chunks:
                size += len(chunk)
                if size > self.max_upload_bytes:
                    raise PrivlabError(
                        f"{base}: larger than the upload limit of "
                        f"{self.max_upload_bytes / 2**20:.0f} MB (start the app with "
                        "--max-upload-mb to raise it)"
                    )
                f.write(chunk)
        return size

    def _add(self, name: str, source: str, spec: str, df: pd.DataFrame, *, size: int | None,
             data_id: str | None = None) -> dict[str, Any]:  # fmt: skip
        data_id = data_id or new_id()
        self.data_dir(data_id).mkdir(parents=True, exist_ok=True)
        prof = profile(df)
        entry = {"id": data_id, "name": name, "source": source, "spec": spec,
                 "size": size, "rows": len(df), "columns": prof,
                 "roles": {c["name"]: c["suggested"] for c in prof},
                 "roles_saved": False}  # fmt: skip
        self.save_data(entry)
        return entry

    def set_roles(self, data_id: str, roles: dict[str, str]) -> dict[str, Any]:
        entry = self.data(data_id)
        names = [c["name"] for c in entry["columns"]]
        bad = [r for r in roles.values() if r not in ROLES]
        if bad or set(roles) != set(names):
            raise PrivlabError("every column needs one role: " + ", ".join(ROLES))
        if sum(r == "sensitive" for r in roles.values()) != 1:
            raise PrivlabError("mark exactly one column as sensitive (the value to protect)")
        if not any(r == "quasi-identifier" for r in roles.values()):
            raise PrivlabError("mark at least one quasi-identifier (what an attacker may know)")
        weights = [c for c in names if roles[c] == "weights"]
        if len(weights) > 1:
            raise PrivlabError(
                f"mark one column of sampling weights at most ({', '.join(weights)} are marked)"
            )
        df = self._frame(entry)
        if weights:
            _check_weights(df[weights[0]], weights[0])
        entry["roles"] = {c: roles[c] for c in names}
        entry["roles_saved"] = True
        qi, sensitive, _ = _roles(entry)
        entry["preview"] = preview(df, qi, sensitive, weights[0] if weights else None)
        self.save_data(entry)
        return entry

    def hierarchy_dir(self, data_id: str) -> Path:
        return self.data_dir(data_id) / "hierarchies"

    def add_hierarchy(self, data_id: str, column: str, filename: str, raw: bytes) -> None:
        """A generalization hierarchy of ``column`` in ARX's format (a row per value: the
        value, then its label at each level up to one top label; ``;`` or ``,``), checked
        as the command line checks it (a tree, one top, every value of the data listed),
        then kept as ``hierarchies/<column>.csv`` for the runs of this data."""
        from privlab.data.datasets import load_input
        from privlab.data.hierarchy import read_hierarchy
        from privlab.errors import HierarchyError

        entry = self.data(data_id)
        names = [c["name"] for c in entry["columns"]]
        base = Path(filename or "hierarchy").name
        if column not in names:
            raise PrivlabError(f"choose a column of {entry['name']} for the hierarchy")
        if Path(column).name != column or column.startswith("."):
            raise PrivlabError(f"column {column!r} cannot name a file: rename it to give it a "
                               "hierarchy")  # fmt: skip
        text = small_text(raw, base, 4, "a hierarchy file")
        folder = self.hierarchy_dir(data_id)
        folder.mkdir(exist_ok=True)
        tmp = folder / f".{secrets.token_hex(4)}.tmp"
        try:
            tmp.write_text(text, encoding="utf-8")
            try:
                hier = read_hierarchy(tmp, attribute=column)
                # the values the audit reads (it drops records with a missing value)
                hier.compile(load_input(entry["spec"], drop_missing=True).schema[column])
            except HierarchyError as e:
                raise PrivlabError(f"{base}: {e}".replace(str(tmp), base)) from None
            os.replace(tmp, folder / f"{column}.csv")
        finally:
            tmp.unlink(missing_ok=True)
        entry.setdefault("hierarchies", {})[column] = {
            "file": base,
            "levels": hier.height,
            "values": len(hier.values),
        }
        self.save_data(entry)

    def build_hierarchy(self, data_id: str, column: str, spec: str) -> None:
        """A hierarchy written in the page, then checked and kept as an uploaded one
        (:meth:`add_hierarchy`).  Ranges for a column of numbers: the widths of its ranges,
        level by level, each a multiple of the one before (``5, 10, 20``: 34 -> 30-34 ->
        30-39 -> 20-39 -> ``*``), aligned at 0 (so nothing about the data's own smallest
        value is in the labels).  Groups for any column (a text with a colon): one group a
        line, ``name: value, value``; a value in no group is its own group one level up."""
        from privlab.data import hierarchy as h
        from privlab.data.datasets import load_input

        entry = self.data(data_id)
        if column not in [c["name"] for c in entry["columns"]]:
            raise PrivlabError(f"choose a column of {entry['name']} for the hierarchy")
        attr = load_input(entry["spec"], drop_missing=True).schema[column]
        spec = spec.strip()
        if not spec:
            what = "the widths of its ranges (5, 10, 20)"
            if not attr.numeric:
                what = "one group a line (name: value, value)"
            raise PrivlabError(f"describe the hierarchy of {column}: {what}")
        if ":" not in spec:  # the widths of nested ranges
            if not attr.numeric:
                raise PrivlabError(
                    f"{column} holds text, not numbers: write its groups, one a line "
                    "(name: value, value)"
                )
            widths = []
            for w in re.split(r"[,\s]+", spec):
                if not w.isdigit() or int(w) < 1:
                    raise PrivlabError(
                        f"the widths of {column}'s ranges are whole numbers >= 1, separated "
                        f"by commas (5, 10, 20), not {w!r}; groups need a colon (name: "
                        "value, value)"
                    )
                widths.append(int(w))
            try:
                hier = h.intervals(attr, widths=widths, start=0)
            except PrivlabError as e:
                raise PrivlabError(f"{column}: {e}") from None
        else:
            values = {h.value_key(v) for v in attr.domain}
            group_of: dict[str, str] = {}
            for line in spec.splitlines():
                if not line.strip():
                    continue
                name, sep, members = line.partition(":")
                name = name.strip()
                if not sep or not name or not members.strip():
                    raise PrivlabError(
                        f"each line of {column}'s groups is a name, a colon and its values "
                        f"(Group: value, value), not {line.strip()!r}"
                    )
                for v in (m.strip() for m in members.split(",")):
                    if v not in values:
                        raise PrivlabError(f"group {name!r}: {v!r} is not a value of {column}")
                    if v in group_of and group_of[v] != name:
                        raise PrivlabError(
                            f"{v!r} is in two groups of {column}: {group_of[v]!r} and {name!r}"
                        )
                    group_of[v] = name
            keys = [h.value_key(v) for v in attr.domain]
            hier = h.from_mapping(column, {key: (group_of.get(key, key),) for key in keys})
        self.add_hierarchy(data_id, column, "written in the app", hier.to_csv().encode())

    def declare_domain(self, data_id: str, column: str, spec: str) -> list[Any]:
        """A column's public values, typed in the page in order (the audit's
        ``[audit.domains]``, the command line's ``--domain``): separated by commas, or one a
        line (for values holding a comma); for a column of numbers, ``lo-hi`` stands for the
        whole numbers from lo to hi.  Every value the data holds must be among them (the
        audit would refuse the data otherwise); values nobody has are allowed (that is what
        keeps them from revealing who is there)."""
        from privlab.data.datasets import load_input

        entry = self.data(data_id)
        if column not in [c["name"] for c in entry["columns"]]:
            raise PrivlabError(f"choose a column of {entry['name']} to declare its values")
        attr = load_input(entry["spec"], drop_missing=True).schema[column]
        lines = [x.strip() for x in spec.splitlines() if x.strip()]
        tokens = lines if len(lines) > 1 else [x.strip() for x in spec.split(",") if x.strip()]
        if not tokens:
            raise PrivlabError(f"type the values {column} can take, in order, separated by commas")
        values: list[Any] = []
        for tok in tokens:
            values.extend(_numbers(tok, column) if attr.numeric else [tok])
        if len(values) > 100_000:
            raise PrivlabError(f"{column}: {len(values):,} values; declare at most 100,000")
        seen: set[Any] = set()
        for v in values:
            if v in seen:
                raise PrivlabError(f"{column}: {v!r} is declared twice")
            seen.add(v)
        held = [v for v in attr.domain if v not in seen]
        if held:
            raise PrivlabError(
                f"{column}: the data holds {held[0]!r}, which is not among the declared values "
                f"({len(held)} value(s) missing): declare every value the column can take"
            )
        entry.setdefault("domains", {})[column] = values
        self.save_data(entry)
        return values

    def remove_domain(self, data_id: str, column: str) -> None:
        entry = self.data(data_id)
        if column not in (entry.get("domains") or {}):
            raise LookupError(column)
        del entry["domains"][column]
        self.save_data(entry)

    def remove_hierarchy(self, data_id: str, column: str) -> None:
        entry = self.data(data_id)
        if column not in (entry.get("hierarchies") or {}):
            raise LookupError(column)
        (self.hierarchy_dir(data_id) / f"{column}.csv").unlink(missing_ok=True)
        del entry["hierarchies"][column]
        self.save_data(entry)

    def _frame(self, entry: dict[str, Any]) -> pd.DataFrame:
        """The data of an entry, read as the command line reads it."""
        from privlab.data.datasets import load_input
        from privlab.data.table import read_frame

        if entry["source"] == "bundled":
            return load_input(entry["spec"]).to_pandas()
        return read_frame(Path(entry["spec"]), sniff=True)

    def open_settings(self, filename: str, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """An audit TOML (one the app gave, or written by hand) opened in the app: its data
        (a bundled dataset, or a file uploaded to this app earlier: a TOML from the browser
        never names a path the app then reads), its roles saved, and the method's settings
        to fill in.  Refused with the command line's message when it does not parse."""
        import tomllib

        from privlab.report.config import parse_config

        name = Path(filename or "settings.toml").name
        try:
            cfg = parse_config(tomllib.loads(text), name)
        except tomllib.TOMLDecodeError as e:
            raise PrivlabError(f"{name} is not valid TOML: {e}") from None
        plan = cfg.audit
        if plan is None:
            raise PrivlabError(f"{name} has no [audit] section (data, method, qi, sensitive, grid)")
        if plan.method not in METHODS:
            raise PrivlabError(f"{name}: the app runs {', '.join(METHODS)}, not {plan.method}")
        entry = next((e for e in self.all_data() if e["spec"] == plan.data), None)
        if entry is None:
            from privlab.data.datasets import DATASETS, load_input

            if plan.data not in DATASETS:
                raise PrivlabError(
                    f"{name}: its data {plan.data!r} is neither a bundled dataset nor a file "
                    "uploaded to this app: upload the file first, then open the settings"
                )
            names, title = list(load_input(plan.data).names), plan.data
        else:
            names, title = [c["name"] for c in entry["columns"]], entry["name"]
        # checked before anything is added: a refused TOML leaves the app as it was
        named = (*plan.qi, plan.sensitive, *plan.keep, *([plan.weights] if plan.weights else []))
        missing = [c for c in named if c not in names]
        if missing:
            raise PrivlabError(f"{name} names column {missing[0]!r}, which {title} "
                               "does not have")  # fmt: skip
        if plan.hierarchies is not None and (
            entry is None
            or not entry.get("hierarchies")
            or Path(plan.hierarchies).resolve() != self.hierarchy_dir(entry["id"]).resolve()
        ):
            raise PrivlabError(
                f"{name}: its hierarchies {plan.hierarchies!r} are not a folder this app holds "
                "for that data: open the settings without them, then upload the hierarchies "
                "on the method screen"
            )
        if entry is None:
            entry = self.add_bundled(plan.data)
        roles = {c: "quasi-identifier" if c in plan.qi else "kept" if c in plan.keep
                 else "weights" if c == plan.weights else "dropped" for c in names}  # fmt: skip
        roles[plan.sensitive] = "sensitive"
        entry = self.set_roles(entry["id"], roles)
        entry["domains"] = {c: list(v) for c, v in plan.domains}  # as declared in it
        self.save_data(entry)
        ((_, values),) = plan.grid.items()
        also = {k: v for k, v in (("l", plan.l), ("t", plan.t)) if v is not None}
        return entry, {"method": plan.method, "values": ", ".join(map(str, values)),
                       "seed": plan.seed, **also}  # fmt: skip

    # runs
    def run_dir(self, run_id: str) -> Path:
        return self.root / "runs" / check_id(run_id)

    def run(self, run_id: str) -> dict[str, Any]:
        doc = _read(self.run_dir(run_id) / "run.json")
        job = self._jobs.get(run_id)
        if job is not None:
            doc.update(job.state())
        return doc

    def all_runs(self) -> list[dict[str, Any]]:
        return [self.run(i) for i in self._ids("runs", "run.json")]

    def start_run(self, data_id: str, method: str, values: list[int], seed: int,
                  also: dict[str, float] | None = None) -> dict[str, Any]:  # fmt: skip
        """Start a run: ``privlab audit`` of the settings (one or several, compared side by
        side), as the run's TOML says; ``also``: the privacy models every setting must also
        meet (a generalization's ``l`` and ``t``)."""
        entry = self.data(data_id)
        if not entry.get("roles_saved"):
            raise PrivlabError("save the roles first")
        if method not in METHODS:
            raise PrivlabError(f"unknown method {method!r} ({', '.join(METHODS)})")
        spec = METHODS[method]
        weights = weights_of(entry)
        if weights is not None and method not in MASKING:
            raise PrivlabError(
                f"{spec['title']} does not use sampling weights: mark {weights!r} kept "
                "(published unchanged) or dropped, or choose a method of masked numbers"
            )
        if method in NO_KEEP and any(r == "kept" for r in entry["roles"].values()):
            kept = [c for c, r in entry["roles"].items() if r == "kept"]
            raise PrivlabError(
                f"{spec['title']} publishes the quasi-identifiers and the sensitive value "
                f"only: mark {', '.join(map(repr, kept))} dropped, or choose another method"
            )
        if not values:
            raise PrivlabError(f"give a value of {spec['param']}")
        # the config's own checks, and its order: from the weakest protection to the strongest
        values = grid_values(method, values, spec["param"])
        also = {k: v for k, v in (also or {}).items() if v is not None}
        stray = [k for k in also if k not in spec.get("also", {})]
        if stray:
            raise PrivlabError(f"{spec['title']} takes no {stray[0]}")
        check_also(also, method, None)
        run_id = new_id()
        folder = self.run_dir(run_id)
        folder.mkdir()
        hier = self.hierarchy_dir(data_id) if entry.get("hierarchies") else None
        toml = audit_toml(entry, method, values, seed, hier, also)
        (folder / "audit.toml").write_text(toml, encoding="utf-8")
        command = run_command(folder)
        doc = {"id": run_id, "data": data_id, "data_name": entry["name"], "method": method,
               "param": spec["param"], "values": values, "seed": seed, "also": also,
               "commands": [shlex.join(["privlab", *command[3:]])],
               "status": "running", "started": time.time()}  # fmt: skip
        _write_json(folder / "run.json", doc)
        job = Job(folder, command, progress=f"{spec['param']} = ", settings=len(values))
        self._jobs[run_id] = job
        job.start()
        return self.run(run_id)

    def setting(self, run_id: str, value: str) -> dict[str, Any]:
        """One setting of a finished run: its name, release folder and report."""
        run = self.run(run_id)
        for row in run.get("rows") or []:
            if str(row["value"]) == value:
                return row
        raise LookupError(value)

    def cancel(self, run_id: str) -> None:
        job = self._jobs.get(check_id(run_id))
        if job is not None:
            job.cancel()

    def release_zip(self, run_id: str, value: str) -> Path:
        """The release of one setting as a zip (the custody is never in it)."""
        folder = self.run_dir(run_id)
        row = self.setting(run_id, value)
        release = folder / row["release"]
        # a release folder, or a DP output's (a histogram's or a model's one file; the
        # custody is elsewhere)
        files = ("release.json", "histogram.csv", "model.json")
        if not any((release / f).is_file() for f in files):
            raise LookupError(run_id)
        out = folder / f"release-{row['value']}.zip"
        tmp = folder / f".release.{secrets.token_hex(4)}.zip"
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for p in sorted(release.rglob("*")):
                if p.is_file():
                    z.write(p, Path("release") / p.relative_to(release))
        os.replace(tmp, out)
        return out


def _numbers(tok: str, column: str) -> list[int | float]:
    """A token of a numeric column's declared values: a number, or ``lo-hi`` (whole
    numbers, both ends included)."""
    m = re.fullmatch(r"(-?\d+)\s*-\s*(-?\d+)", tok)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        if hi < lo:
            raise PrivlabError(f"{column}: the range {tok!r} ends below its start")
        if hi - lo >= 100_000:
            raise PrivlabError(f"{column}: the range {tok!r} holds more than 100,000 values")
        return list(range(lo, hi + 1))
    try:
        x = float(tok)
    except ValueError:
        raise PrivlabError(
            f"{column} holds numbers: {tok!r} is neither a number nor a range lo-hi"
        ) from None
    if not math.isfinite(x):
        raise PrivlabError(f"{column}: {tok!r} is not a finite number")
    return [int(x) if x.is_integer() and "." not in tok and "e" not in tok.lower() else x]


def weights_of(entry: dict[str, Any]) -> str | None:
    """The column of sampling weights among the data's roles, if one is marked."""
    return next((c for c, r in entry["roles"].items() if r == "weights"), None)


def _roles(entry: dict[str, Any]) -> tuple[list[str], str, list[str]]:
    roles = entry["roles"]
    qi = [c for c, r in roles.items() if r == "quasi-identifier"]
    (sensitive,) = [c for c, r in roles.items() if r == "sensitive"]
    keep = [c for c, r in roles.items() if r == "kept"]
    return qi, sensitive, keep


def run_command(folder: Path) -> list[str]:
    """The command line of a run (an argv list, ``python -m privlab.cli`` first): ``privlab
    audit`` of the run's TOML (out/ and custody/ in the run's folder), so that the TOML
    replays it exactly (``--force`` over those folders)."""
    # every run is a candidate, not yet a publication: its own registry, so trying another
    # setting on the same data is not refused as a second release (the page says to publish
    # one release of the data at most; the audit does not register its candidates either)
    exe = [sys.executable, "-m", "privlab.cli", "--registry", str(folder / "registry")]
    out, custody = str(folder / "out"), str(folder / "custody")
    return [*exe, "audit", str(folder / "audit.toml"), "--out", out, "--custody", custody]


def audit_toml(entry: dict[str, Any], method: str, values: list[int], seed: int,
               hierarchies: Path | None = None,
               also: dict[str, float] | None = None) -> str:  # fmt: skip
    """The run's settings as the TOML ``privlab audit`` reads (``privlab report`` reads its
    thresholds and attack); ``hierarchies``: the data's folder of uploaded hierarchies;
    ``also``: the privacy models every setting must also meet (``[audit] l``, ``t``)."""
    qi, sensitive, keep = _roles(entry)
    weights = weights_of(entry)
    param = METHODS[method]["param"]

    def s(x: str) -> str:
        return json.dumps(x)  # a TOML basic string is a JSON string

    lines = [
        "# made by privlab app: `privlab audit THIS.toml --out DIR` runs the same settings",
        "[audit]",
        f"data = {s(entry['spec'])}",
        f"method = {s(method)}",
        f"qi = [{', '.join(s(q) for q in qi)}]",
        f"sensitive = {s(sensitive)}",
        *([f"keep = [{', '.join(s(c) for c in keep)}]"] if keep else []),
        *([f"weights = {s(weights)}"] if weights else []),
        *[f"{k} = {v!r}" for k, v in (also or {}).items()],
        f"grid = {{ {param} = [{', '.join(str(v) for v in values)}] }}",
        f"seed = {seed}",
        "releases = 1  # one release of each setting, as the app made",
    ]
    if method in HIERARCHICAL and hierarchies is not None:
        lines.insert(-2, f"hierarchies = {s(str(hierarchies))}")
    # an uploaded control set, else a bundled dataset's own
    control = (entry.get("control") or {}).get("path") or CONTROLS.get(entry["spec"])
    if method == "synthetic" and control is not None:
        # the people a synthetic table is judged beyond (it was not made from them)
        lines[1:1] = ["[control]", f"public = {s(control)}"]
    if entry.get("domains"):  # the values declared in the page (public domains)
        lines += ["", "[audit.domains]"]
        lines += [f"{s(c)} = {json.dumps(v)}" for c, v in entry["domains"].items()]
    return "\n".join(lines) + "\n"


# -- a run in the background ------------------------------------------------------------------
class Job:
    """The run's command in a child process (the server stays responsive: a run holds no
    lock the pages need), its output in ``run.log``.  ``cancel`` sends the command line's
    interrupt (SIGTERM: it removes its unfinished outputs) and waits for it."""

    def __init__(self, folder: Path, command: list[str], *, progress: str = "",
                 settings: int = 1) -> None:  # fmt: skip
        self.folder = folder
        self.command = command
        self.log = folder / "run.log"
        self.progress = progress  # the line the audit prints as each setting is done
        self.settings = settings
        self.status = "running"
        self.error: str | None = None
        self._proc: subprocess.Popen | None = None
        self._cancelled = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def state(self) -> dict[str, Any]:
        with self._lock:
            done = 0
            if self.status == "running" and self.log.exists():
                text = self.log.read_text(encoding="utf-8", errors="replace")
                done = sum(line.startswith(self.progress) for line in text.splitlines())
            return {"status": self.status, "settings_done": done, "settings": self.settings,
                    "error": self.error}  # fmt: skip

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)

    def wait(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        env = {**os.environ, "PRIVLAB_NO_BROWSER": "1", "NO_COLOR": "1", "COLUMNS": "200"}
        with self._lock:
            cancelled = self._cancelled
            if not cancelled:
                log = self.log.open("wb")
                self._proc = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, env=env,
                                              cwd=self.folder)  # fmt: skip
        if cancelled:  # cancelled before it started
            self._finish("cancelled", None)
            return
        rc = self._proc.wait()
        log.close()
        with self._lock:
            cancelled = self._cancelled
        if cancelled:
            self._finish("cancelled", None)
        elif rc != 0:
            self._finish("failed", _error_line(self.log))
        else:
            self._finish("done", None)

    def _finish(self, status: str, error: str | None) -> None:
        """Write the run's end into ``run.json`` (a finished run's results with it), and only
        then say it ended: a page never sees a run done whose results are not there yet
        (the status said "done" while the results were still being read, and a page then
        found no rows)."""
        try:
            path = self.folder / "run.json"
            doc = json.loads(path.read_text(encoding="utf-8"))
            doc.update(status=status, settings_done=0, settings=self.settings, error=error)
            doc["ended"] = time.time()
            if status == "done":
                doc.update(_results(self.folder, doc))
            doc["notes"] = _notes(self.log)
            _write_json(path, doc)
        finally:
            with self._lock:
                self.status, self.error = status, error


def _results(folder: Path, run: dict[str, Any]) -> dict[str, Any]:
    """What a finished run found: a row per setting (its verdict, reasons, next step, at-risk
    share, release folder and report), the recommendation and the recommended setting."""
    from privlab.report.audit import attribute_share

    out = folder / "out"
    param = run["param"]
    rows = []
    for value in run["values"]:
        name = f"{run['method']}-{param}{value}"
        rep = out / "reports" / f"{name}.json"
        if not rep.is_file():  # a setting the audit skipped (its reason is in the summary)
            continue
        doc = json.loads(rep.read_text(encoding="utf-8"))
        verdict, attribute = doc.get("verdict", {}), doc.get("attribute") or {}
        # the strongest attack's share of people at risk (a synthetic table's: beyond the
        # control), as the audit reads it
        judged = attribute_share(attribute)
        share = None if judged is None else judged[0]
        # a masked release (microaggregation, noise): its records linked to their people
        linkage = ((doc.get("identity") or {}).get("linkage") or {}).get("rate") or {}
        rows.append({"value": value, "name": name, "release": f"out/{name}",
                     "report": f"out/reports/{name}.html", "level": verdict.get("level"),
                     "reasons": verdict.get("reasons", []),
                     "next_step": verdict.get("next_step"),
                     "at_risk_share": share, "linked": linkage.get("value")})  # fmt: skip
    found: dict[str, Any] = {"rows": rows}
    summary = out / "report.json"
    if summary.is_file():
        audit = json.loads(summary.read_text(encoding="utf-8"))
        found["recommendation"] = audit.get("recommendation")
        found["recommended"] = audit.get("recommended")
        found["attacked"] = bool(audit.get("attacked", True))  # (a DP output: not attacked)
        # what each setting costs, as the audit measures it (its utility column)
        from privlab.report.audit import utility_column

        util = utility_column(str(audit.get("method")))
        costs = {r.get(param): r.get(util.key) for r in audit.get("rows", [])}
        for row in rows:
            cost = costs.get(row["value"])
            row["utility"] = "" if cost is None else util.text(cost)
        if any(row["utility"] for row in rows):  # (a model's accuracy needs a holdout)
            found["utility_label"] = util.label
    return found


def _notes(log: Path) -> list[str]:
    """The command line's warnings and notes (what it tells the custodian beside the
    outputs: a domain read from the data, where the custody is), without repeats."""
    out: list[str] = []
    if log.is_file():
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(("warning:", "note:")) and line not in out:
                out.append(line)
    return out


def _error_line(log: Path) -> str:
    """The command line's one error line (``error: ...``), else its last line."""
    lines = [x for x in log.read_text(encoding="utf-8", errors="replace").splitlines() if x]
    for line in reversed(lines):
        if line.startswith("error:"):
            return line[len("error:") :].strip()
    return lines[-1] if lines else "the command failed without a message"
