"""The result of every attack: each person's probability of each sensitive value.

On disk a posterior is ``posterior.csv`` with the header ``row,group_id,<v1>,<v2>,...``:
``row`` is the 0-based row of the attacked rows (the release's published rows, or the
population file's people), ``group_id`` its group, then one probability column per value of
the sensitive domain (in domain order); rows sum to 1.  Beside it, ``posterior.meta.json``
says what was attacked and by whom: the attack, the release's kind, the sensitive attribute
and the threat model in words (one Posterior for every attack on every kind of release).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privlab._csv import restore_frame, warn_neutralized, write_csv
from privlab._frames import ToFrames
from privlab._io import atomic_outputs, dumps, read_json
from privlab.errors import PrivlabError

#: Rows of a posterior must sum to 1 within this tolerance.
SUM_TOLERANCE = 1e-6


@dataclass(frozen=True, eq=False)
class Posterior(ToFrames):
    """Per-tuple disclosure probabilities.

    Attributes
    ----------
    probs
        ``(n_rows, n_values)`` float array; ``probs[i, v]`` is the attacker's probability that
        QIT row ``i`` has sensitive value ``values[v]``.  Rows sum to 1.
    group_id
        The group of each row.
    values
        The sensitive domain (column labels), as strings.
    method
        The attack that produced it (``"definetti"``, ``"em"``, ``"random-worlds"``, ...).
    diagnostics
        Attack-specific run information (chains, R-hat, iterations per second, ...).
    release_kind
        The attacked release's method (``"anatomy"``, ``"generalization"``, ``"pram"``).
    sensitive
        The sensitive attribute's name.
    threat_model
        What the attacker knows and learns from, in words.
    """

    probs: np.ndarray
    group_id: np.ndarray
    values: tuple[str, ...]
    method: str = "unknown"
    diagnostics: dict[str, Any] = field(default_factory=dict)
    release_kind: str | None = None
    sensitive: str | None = None
    threat_model: str | None = None

    def __post_init__(self) -> None:
        p = np.ascontiguousarray(self.probs, dtype=np.float64)
        gid = np.ascontiguousarray(self.group_id, dtype=np.int64)
        values = tuple(str(v) for v in self.values)
        if p.ndim != 2 or p.shape[1] != len(values):
            raise PrivlabError(f"posterior has shape {p.shape} for {len(values)} sensitive values")
        if gid.shape != (p.shape[0],):
            raise PrivlabError(f"posterior has {p.shape[0]} rows but {gid.size} group ids")
        if not np.all(np.isfinite(p)) or np.any(p < -SUM_TOLERANCE):
            raise PrivlabError("posterior holds a negative or non-finite probability")
        sums = p.sum(axis=1)
        bad = np.flatnonzero(np.abs(sums - 1.0) > SUM_TOLERANCE)
        if bad.size:
            i = int(bad[0])
            raise PrivlabError(
                f"posterior row {i} sums to {sums[i]:.6g}, not 1 ({bad.size} such rows)"
            )
        p.setflags(write=False)
        gid.setflags(write=False)
        object.__setattr__(self, "probs", p)
        object.__setattr__(self, "group_id", gid)
        object.__setattr__(self, "values", values)

    @property
    def n_rows(self) -> int:
        return int(self.probs.shape[0])

    def top(self) -> tuple[np.ndarray, np.ndarray]:
        """Each row's most probable value code and its probability."""
        return self.probs.argmax(axis=1), self.probs.max(axis=1)

    def frame(self) -> pd.DataFrame:
        df = pd.DataFrame(self.probs.copy(), columns=list(self.values))  # never alias state
        df.insert(0, "group_id", self.group_id)
        df.insert(0, "row", np.arange(self.n_rows))
        return df

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "release_kind": self.release_kind,
            "sensitive": self.sensitive,
            "threat_model": self.threat_model,
            "n_rows": self.n_rows,
            "values": list(self.values),
            "diagnostics": self.diagnostics,
        }

    def to_pandas(self) -> pd.DataFrame:
        """``row``, ``group_id`` and one probability column per sensitive value."""
        return self.frame()

    def _repr_html_(self) -> str:
        """A notebook's view: what the posterior is about and its first rows (escaped)."""
        from html import escape

        head = self.frame().head(5).to_html(index=False, float_format="%.3f", escape=True)
        about = ", ".join(
            f"{k} {escape(str(v))}"
            for k, v in (
                ("attack", self.method),
                ("release", self.release_kind),
                ("sensitive attribute", self.sensitive),
                ("people", self.n_rows),
                ("values", len(self.values)),
            )
            if v is not None
        )
        return f'<div class="privlab-posterior"><p>Posterior: {about}</p>{head}</div>'

    def save(self, path: str | Path, *, force: bool = False) -> Path:
        """Write ``posterior.csv`` and its ``.meta.json`` together, atomically (refusing to
        overwrite unless ``force``)."""
        return save_posteriors((self, path), force=force)[0]

    def _write(self, table: Path, meta: Path) -> int:
        n = write_csv(self.frame(), table, float_format="%.10g")
        meta.write_text(dumps({"format": "privlab-posterior/1", **self.to_dict()}))
        return n

    @classmethod
    def load(cls, path: str | Path) -> Posterior:
        """Read a ``posterior.csv``; raise :class:`PrivlabError` naming what is wrong."""
        path = Path(path)
        if not path.is_file():
            raise PrivlabError(f"posterior file not found: {path}")
        try:
            df = restore_frame(pd.read_csv(path, dtype={"row": np.int64, "group_id": np.int64}))
        except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
            raise PrivlabError(f"{path} is not a posterior CSV ({e})") from None
        cols = list(df.columns)
        if cols[:2] != ["row", "group_id"] or len(cols) < 3:
            raise PrivlabError(
                f"{path} has header {','.join(map(str, cols))}; expected row,group_id,<values>"
            )
        rows = df["row"].to_numpy()
        if not np.array_equal(np.sort(rows), np.arange(len(df))):
            raise PrivlabError(f"{path}: column 'row' must list 0..{len(df) - 1} once each")
        order = np.argsort(rows)
        try:
            probs = df.iloc[order, 2:].to_numpy(dtype=np.float64)
        except ValueError:
            raise PrivlabError(f"{path}: the probability columns must be numbers") from None
        meta = _read_meta(path, tuple(cols[2:]), len(df))
        try:
            return cls(
                probs=probs,
                group_id=df["group_id"].to_numpy()[order],
                values=tuple(cols[2:]),
                method=meta.get("method") or "loaded",
                diagnostics=meta.get("diagnostics") or {},
                release_kind=meta.get("release_kind"),
                sensitive=meta.get("sensitive"),
                threat_model=meta.get("threat_model"),
            )
        except PrivlabError as e:
            raise PrivlabError(f"{path}: {e}") from None


def save_posteriors(*pairs: tuple[Posterior, str | Path], force: bool = False) -> list[Path]:
    """Write several posteriors (each ``posterior.csv`` with its ``.meta.json``) together:
    all or none of them, atomically."""
    paths = [Path(p) for _, p in pairs]
    outputs = [o for p in paths for o in ((p, "file"), (meta_path(p), "file"))]
    neutralized = {}
    with atomic_outputs(*outputs, force=force) as temps:
        for k, (post, _) in enumerate(pairs):
            neutralized[paths[k].name] = post._write(temps[2 * k], temps[2 * k + 1])
    warn_neutralized(neutralized)
    return paths


def meta_path(path: str | Path) -> Path:
    """``post.csv`` -> ``post.meta.json``: where a posterior's metadata lives."""
    path = Path(path)
    return path.with_name(f"{path.stem}.meta.json")


def _read_meta(path: Path, values: tuple[str, ...], n_rows: int) -> dict[str, Any]:
    """The metadata beside a posterior file ({} when there is none: a posterior written by
    hand or by an older privlab), checked against the file."""
    from privlab._validate import Fields

    where = meta_path(path)
    if not where.is_file():
        return {}
    d = read_json(where, what="posterior metadata")
    f = Fields(d, where)
    f.obj()
    if d.get("format") != "privlab-posterior/1":
        raise PrivlabError(f"{where} is not the metadata of a privlab posterior")
    if f.get("n_rows").integer(lo=0) != n_rows or f.get("values").scalars() != list(values):
        raise PrivlabError(f"{where} belongs to another posterior (its rows or values differ)")
    out: dict[str, Any] = {}
    for key in ("method", "release_kind", "sensitive", "threat_model"):
        field_ = f.opt(key)
        out[key] = None if field_ is None else field_.string()
    diag = f.opt("diagnostics")
    out["diagnostics"] = {} if diag is None else diag.obj()
    return out
