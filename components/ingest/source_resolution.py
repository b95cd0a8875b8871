"""Where an ingest finds its dataset: explicit path → $KFLOW_DATA_DIR → framework caches → download.

    path = find_source("wikitext2", source_path, candidates=("wikitext-2", "wikitext-2-raw"))

1. `source_path`, when given, must exist (FileNotFoundError otherwise: an explicit path is never second-guessed).
2. `$KFLOW_DATA_DIR/<candidate>` for each of the dataset's usual folder or file names.
3. The framework caches: `~/.keras/datasets/<candidate>`, then the tensorflow-datasets data
   dir (`$TFDS_DATA_DIR`, default `~/tensorflow_datasets`)`/<candidate>`.
4. None: the caller downloads when its `source_format` asks for it explicitly (ingests never
   download in `auto`), or raises `missing_source_error(...)`, which says where to put the files.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

DATA_DIR_ENV = "KFLOW_DATA_DIR"


def cache_dirs() -> list[Path]:
    """The framework caches, in the order they are searched."""
    keras_home = Path(os.environ.get("KERAS_HOME", Path.home() / ".keras")).expanduser()
    tfds_dir = Path(os.environ.get("TFDS_DATA_DIR", Path.home() / "tensorflow_datasets")).expanduser()
    return [keras_home / "datasets", tfds_dir]


def search_dirs() -> list[Path]:
    """$KFLOW_DATA_DIR (when set), then the framework caches."""
    dirs = []
    if os.environ.get(DATA_DIR_ENV):
        dirs.append(Path(os.environ[DATA_DIR_ENV]).expanduser())
    return dirs + cache_dirs()


def find_source(dataset: str, source_path: str | os.PathLike | None, candidates: Sequence[str]) -> Path | None:
    """The explicit path, else the first `candidate` found in the search dirs, else None."""
    if source_path is not None:
        path = Path(source_path).expanduser()
        if not path.exists():
            raise FileNotFoundError(f"{dataset}: source_path {str(path)!r} does not exist")
        return path
    for folder in search_dirs():
        for candidate in candidates:
            if (folder / candidate).exists():
                return folder / candidate
    return None


def missing_source_error(dataset: str, candidates: Sequence[str], what: str, download_hint: str) -> FileNotFoundError:
    """The one-line error for a dataset with no local copy, naming where it was looked for and where to put it."""
    looked = ", ".join(str(folder / candidates[0]) for folder in search_dirs())
    env = os.environ.get(DATA_DIR_ENV)
    where = f"{env}/{candidates[0]}" if env else f"${DATA_DIR_ENV}/{candidates[0]} (set {DATA_DIR_ENV})"
    return FileNotFoundError(
        f"no local copy of {dataset} found (looked in {looked}): put {what} in {where}, "
        f"or set data.source.path to it, or {download_hint}"
    )
