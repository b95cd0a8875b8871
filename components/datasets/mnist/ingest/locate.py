"""Where the MNIST ingest finds its source, without reading it (no TensorFlow): the runner calls
`source_files` on every run, cached or not, to fingerprint the data."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from kflow.components.ingest.source_resolution import DATA_DIR_ENV, find_source

FORMATS = ("auto", "npz", "idx", "sklearn_digits", "tfds", "download")
SOURCE_SPLITS = ("train", "test")

_NPZ_NAME = "mnist.npz"
_IDX_PREFIXES = {"train": "train", "test": "t10k"}
_IDX_KINDS = {"images": 3, "labels": 1}  # The number of dimensions in each kind of file's name: idx3, idx1.
# The IDX element type codes (third byte of the magic number) and their big-endian numpy types.


def default_npz() -> Path:
    """Where Keras keeps MNIST once downloaded, and where kflow looks without a source path."""
    return Path.home() / ".keras" / "datasets" / _NPZ_NAME


def source_files(*, source_path: str | None = None, source_format: str = "auto", **_: Any) -> list[Path]:
    """The files the ingest reads, for the data fingerprint in its cache key.

    None is known for `download` before the download, nor for `tfds` without a data dir: then the
    Keras copy, if any, or nothing stands for the data.
    """
    source_format, path = resolve(source_path, source_format)
    if source_format == "npz":
        return [path]
    if source_format == "idx":
        return [file for file in _idx_files(path).values() if file is not None]
    if source_format == "sklearn_digits":
        # Located without importing scikit-learn (a second and a half), as this runs on every cached run.
        return [Path(importlib.util.find_spec("sklearn").origin).parent / "datasets" / "data" / "digits.csv.gz"]
    if source_format == "tfds":
        return [] if path is None else [path / "mnist" if (path / "mnist").is_dir() else path]
    return [default_npz()] if default_npz().is_file() else []


def resolve(source_path: str | None, source_format: str) -> tuple[str, Path | None]:
    """The concrete format ("npz", "idx", ...) and the path to read it from."""
    if source_format not in FORMATS:
        raise ValueError(f"source_format must be one of {', '.join(FORMATS)}; got {source_format!r}")
    if source_format in ("sklearn_digits", "download"):
        if source_path is not None:
            raise ValueError(f"source_format {source_format!r} reads no file; leave source_path unset")
        return source_format, None
    if source_format == "tfds":
        return source_format, None if source_path is None else Path(source_path).expanduser()
    if source_path is None:
        # $KFLOW_DATA_DIR, then ~/.keras/datasets and the TFDS data dir (components/ingest/source_resolution.py).
        found = find_source("mnist", None, (_NPZ_NAME, "mnist")) if source_format in ("auto", "npz", "idx") else None
        if found is None:
            raise ValueError(
                f"no MNIST source: set source_path to a mnist.npz file or to a folder holding mnist.npz or the four "
                f"IDX files, or put mnist.npz at {default_npz()} or in ${DATA_DIR_ENV}, or set source_format to "
                f"'download' to fetch it (needs internet)"
            )
        source_path = str(found)

    path = Path(source_path).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"source_path {str(path)!r} does not exist")
    if path.is_file():
        if source_format == "idx":
            raise ValueError(f"source_format 'idx' needs the folder holding the four IDX files, not the file {path}")
        if source_format == "npz" or path.suffix == ".npz":
            return "npz", path
        raise ValueError(f"source_path {str(path)!r} is a file but not an .npz file; for IDX files give their folder")
    if source_format in ("auto", "npz") and (path / _NPZ_NAME).is_file():
        return "npz", path / _NPZ_NAME
    if source_format == "idx" or (source_format == "auto" and any(_idx_files(path).values())):
        return "idx", path
    expected = ", ".join(_idx_names(split, kind)[0] for split in SOURCE_SPLITS for kind in _IDX_KINDS)
    raise ValueError(
        f"{path} holds neither {_NPZ_NAME} nor the MNIST IDX files ({expected}, gzipped or not) "
        f"that source_format {source_format!r} looks for"
    )


def _idx_names(split: str, kind: str) -> list[str]:
    """The names an IDX file goes by, e.g. train-images-idx3-ubyte.gz (the official one) or t10k-labels.idx1-ubyte."""
    stem, ndim = f"{_IDX_PREFIXES[split]}-{kind}", _IDX_KINDS[kind]
    return [
        f"{stem}-idx{ndim}-ubyte.gz",
        f"{stem}-idx{ndim}-ubyte",
        f"{stem}.idx{ndim}-ubyte",
        f"{stem}.idx{ndim}-ubyte.gz",
    ]


def _idx_files(folder: Path) -> dict[tuple[str, str], Path | None]:
    """The IDX file of each (split, kind) in `folder`, or None."""
    files = {}
    for split in SOURCE_SPLITS:
        for kind in _IDX_KINDS:
            found = [folder / name for name in _idx_names(split, kind) if (folder / name).is_file()]
            files[(split, kind)] = found[0] if found else None
    return files
