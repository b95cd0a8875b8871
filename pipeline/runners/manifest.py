"""The manifest of a published execution: every file its outputs hold, with its size and SHA-256.

Written into the staging folder just before the atomic publish, so a published node folder
always has one. Before an execution is reused from the cache, its outputs are checked against
it: sizes always (cheap: one `stat` a file), content hashes too with `kflow run --verify`. A
missing, added or altered file makes the cached execution unusable, and the node runs again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.fingerprint import file_digest

MANIFEST = "manifest.json"


def _files(folder: Path) -> dict[str, Path]:
    return {
        path.relative_to(folder).as_posix(): path
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.relative_to(folder).as_posix() != MANIFEST
    }


def write_manifest(folder: Path) -> dict[str, Any]:
    """Lists every file under `folder` with its size and hash in `folder/manifest.json` (synced to disk)."""
    files = {name: {"size": path.stat().st_size, "sha256": file_digest(path)} for name, path in _files(folder).items()}
    manifest = {"files": files}
    with open(folder / MANIFEST, "w") as file:
        json.dump(manifest, file, indent=1, sort_keys=True)
        file.flush()
        os.fsync(file.fileno())
    return manifest


def manifest_problem(folder: Path, *, hashes: bool = False) -> str | None:
    """None when `folder` holds exactly the files its manifest lists, with their sizes (and hashes);
    else what is wrong with the first file that differs, e.g. `model/model.keras: 1200 bytes, recorded 4096`."""
    try:
        recorded = json.loads((folder / MANIFEST).read_text())["files"]
    except (OSError, ValueError, KeyError):
        return f"{folder / MANIFEST}: missing or unreadable"
    present = _files(folder)
    for name, entry in recorded.items():
        path = present.get(name)
        if path is None:
            return f"{folder / name}: missing"
        size = path.stat().st_size
        if size != entry["size"]:
            return f"{folder / name}: {size} bytes, recorded {entry['size']}"
        if hashes and file_digest(path) != entry["sha256"]:
            return f"{folder / name}: content differs from its recorded SHA-256"
    added = sorted(set(present) - set(recorded))
    if added:
        return f"{folder / added[0]}: not in the manifest (added after publish)"
    return None
