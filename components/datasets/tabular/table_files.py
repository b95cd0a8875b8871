"""The files of a tabular source: a file, a folder or a glob pattern, sorted by name (csv, parquet, tfrecord)."""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path


def table_files(dataset: str, source_path: str | None, patterns: Sequence[str], kind: str) -> list[str]:
    """`source_path`'s files: the file, a folder's files matching `patterns` (none: every file not hidden), or the
    files a glob pattern matches; a ValueError naming data.source.path when there are none (`kind`: what a file
    is, e.g. "CSV file")."""
    if not source_path:
        raise ValueError(f"data.source.path: the {dataset} dataset needs a file, a folder or a glob pattern")
    path = Path(source_path).expanduser()
    if path.is_dir() and patterns:
        files = sorted({name for pattern in patterns for name in glob.glob(str(path / pattern))})
    elif path.is_dir():
        files = sorted(str(p) for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    elif path.is_file():
        files = [str(path)]
    else:
        files = sorted(name for name in glob.glob(str(path)) if Path(name).is_file())
    if not files:
        raise ValueError(f"data.source.path: {source_path} matches no {kind}")
    return files
