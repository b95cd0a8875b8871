"""Fingerprints of the data a pipeline reads from outside itself (an ingest's source files).

As TFX's ExampleGen does with its input fingerprint, an ingest's cache key holds what it
reads, not where it was told to look: every source file's name, size and a streamed
SHA-256 of its bytes. Changing, replacing or truncating the data re-runs the ingest and
everything downstream; the same bytes at another path hit the cache. Paths and
modification times are kept beside the key, in run.json, for people to read.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_BLOCK = 1 << 20


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while block := file.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _keyed_name(path: str) -> str:
    """A file's name in the key, with the `column=value` folders above it (a partitioned table's values are in its
    folders' names: renaming `label=cat` to `label=dog` changes the data, not only where it is)."""
    found = Path(path)
    return "/".join([*(part for part in found.parent.parts if "=" in part), found.name])


def fingerprint_files(paths: Iterable[str | Path]) -> dict[str, Any]:
    """{"key": [[name, size, sha256], ...], "files": [{path, size, mtime, sha256}], "seconds": s} of `paths`
    (folders stand for every file below them), in a stable order."""
    started = time.perf_counter()
    files: list[Path] = []
    for path in map(Path, paths):
        files.extend(sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path])
    entries = []
    for path in files:
        stat = path.stat()
        entries.append(
            {"path": str(path.resolve()), "size": stat.st_size, "mtime": stat.st_mtime, "sha256": file_digest(path)}
        )
    entries.sort(key=lambda entry: (_keyed_name(entry["path"]), entry["sha256"]))
    return {
        "key": [[_keyed_name(entry["path"]), entry["size"], entry["sha256"]] for entry in entries],
        "files": entries,
        "seconds": round(time.perf_counter() - started, 3),
    }


def changed_files(fingerprint: dict[str, Any] | None) -> list[str]:
    """The files of a `fingerprint_files` result that are gone or whose size or mtime changed since."""
    changed = []
    for entry in (fingerprint or {}).get("files", []):
        try:
            stat = Path(entry["path"]).stat()
        except OSError:
            changed.append(entry["path"])
            continue
        if (stat.st_size, stat.st_mtime) != (entry["size"], entry["mtime"]):
            changed.append(entry["path"])
    return changed
