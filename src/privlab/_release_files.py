"""The one writer of ``release.json`` (a release's public metadata, with the digest of its
fields) and of ``custody.json`` (what only the custodian keeps), for every engine (memory,
stream, Spark) and for the DP outputs' custody (:mod:`privlab._registry`).

Readers live beside the release classes (:func:`privlab.release.base.read_meta` checks the
digest written here).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from privlab._io import dumps, sha256_file

RELEASE_FILE = "release.json"
CUSTODY_FILE = "custody.json"
#: The field of ``release.json`` that holds the SHA-256 of its other fields.
DIGEST_FIELD = "digest"
_DIGEST_COVERS = (
    "the SHA-256 of every other field of this file, as JSON with sorted keys, no spaces and "
    "ASCII escapes (json.dumps(..., sort_keys=True, separators=(',', ':')))"
)


def meta_digest(meta: Mapping[str, Any]) -> str:
    """The SHA-256 of ``release.json``'s content without its digest field (canonical JSON:
    sorted keys, no whitespace, ASCII escapes), so that any edit of a field is seen."""
    body = {k: v for k, v in meta.items() if k != DIGEST_FIELD}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def release_text(meta: Mapping[str, Any]) -> str:
    """The text of ``release.json`` for ``meta``: its fields, then (beside the tables' own
    digests) ``digest``, the SHA-256 of the other fields, which ``read_meta`` checks."""
    plain = json.loads(dumps(meta))  # numpy values as JSON has them, as read back
    out: dict[str, Any] = {}
    for key, value in plain.items():
        if key != DIGEST_FIELD:
            out[key] = value
        if key == "tables":
            out[DIGEST_FIELD] = None
    out[DIGEST_FIELD] = {"sha256": meta_digest(plain), "covers": _DIGEST_COVERS}
    return dumps(out)


def write_release_json(directory: str | Path, meta: Mapping[str, Any]) -> str:
    """Write ``directory/release.json`` for ``meta`` (:func:`release_text`); returns the
    file's SHA-256 (what the custody records as ``release_sha256``)."""
    path = Path(directory) / RELEASE_FILE
    path.write_text(release_text(meta))
    return sha256_file(path)


def write_custody_json(directory: str | Path, meta: Mapping[str, Any]) -> None:
    """Write ``directory/custody.json`` (the seed, its salt, the input's fingerprint, the
    truth's file and digest: never published)."""
    (Path(directory) / CUSTODY_FILE).write_text(dumps(meta))
