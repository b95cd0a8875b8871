"""Where an image dataset's files are and what they are: a folder with one sub-folder per class (Keras'
`image_dataset_from_directory` layout), or a manifest (`.csv` with `path,label` columns, or `.jsonl` of
{"path": ..., "label": ...}) whose paths are relative to its folder. The driver lists the files and the classes
(what each image becomes: image_format.py); a worker decodes and converts (executor.py).

The source is a folder, and the ingest reads nothing outside it: a class folder's file that is a link to a file
elsewhere, or a manifest path that is absolute or climbs out with `../`, is refused (`outside_source`), resolved
with every link followed, so links that stay inside the folder are fine. Only regular files are opened, without
waiting: a FIFO, a device or a socket is refused at once (`not_a_file`) instead of blocking the decode
(`open_source`).
"""

from __future__ import annotations

import csv
import functools
import json
import logging
import os
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kflow.components.util.said_once import say_once

log = logging.getLogger(__name__)

# `kflow predict`'s source format: images without classes (a folder, read recursively, or one file), each keyed by
# its path under the folder.
UNLABELLED = "unlabelled"


@dataclass(frozen=True)
class ImageFile:
    """One record: the file, its class as named by the source, and its position in messages (and split key)."""

    path: str
    label: str | None  # None: an image to score (UNLABELLED)
    position: str
    root: str = ""  # The folder the file must be in (data.source.path, or the manifest's folder); "": anywhere.
    split: str | None = None  # The source's own split (train, eval, test: its split folder's), else None
    # False: a folder's file whose name is not an image's (image_named): left out unread, as Keras'
    # image_dataset_from_directory leaves out what its extensions do not name, but counted and kept (filtered).
    named: bool = True


class RefusedFile(Exception):
    """A file the ingest does not open: `reason` (outside_source, not_a_file, missing_file) and why, in one line."""

    def __init__(self, reason: str, error: str) -> None:
        super().__init__(error)
        self.reason, self.error = reason, error


def _inside(path: str, root: str) -> bool:
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def open_source(file: ImageFile) -> IO[bytes]:
    """The file opened for reading, or RefusedFile: outside its source folder once every link is followed, or not a
    regular file (opened without blocking, so a FIFO is refused at once, not waited on), or missing."""
    if file.root and not _inside(file.path, file.root):
        raise RefusedFile("outside_source", f"{file.path} leads outside the source folder {file.root}")
    try:
        handle = os.open(file.path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError as error:
        raise RefusedFile("missing_file", str(error)) from None
    opened = os.fdopen(handle, "rb")
    kind = os.fstat(handle).st_mode
    if not stat.S_ISREG(kind):
        opened.close()
        what = "a FIFO" if stat.S_ISFIFO(kind) else "a folder" if stat.S_ISDIR(kind) else "not a regular file"
        raise RefusedFile("not_a_file", f"{file.path} is {what}")
    os.set_blocking(handle, True)
    return opened


def list_images(source_path: str | None, source_format: str = "auto") -> list[ImageFile]:
    """The source's images in a stable order (class folders, then files, by name; a manifest's order)."""
    if not source_path:
        raise ValueError("data.source.path: the images dataset needs a folder of class folders or a manifest file")
    path = Path(source_path).expanduser()
    if source_format not in ("auto", "folders", "manifest", UNLABELLED):
        formats = "auto | folders | manifest | tfrecord | parquet | tfds"
        raise ValueError(f"data.source.format: images reads {formats}, got {source_format!r}")
    if not path.exists():
        raise ValueError(f"data.source.path: {source_path} does not exist")
    if source_format == UNLABELLED:
        return _unlabelled(path)
    if path.is_dir() and source_format != "manifest":
        return _from_folders(path)
    if path.is_file() and source_format != "folders":
        return _from_manifest(path)
    raise ValueError(f"data.source.path: {source_path} is not a {'folder' if source_format == 'folders' else 'file'}")


def _unlabelled(path: Path) -> list[ImageFile]:
    """Every file under the folder `path` (sub-folders too, hidden ones left out), or the file `path`, by name."""
    if path.is_file():
        return [ImageFile(str(path), None, path.name, str(path.parent))]
    files = [_listed(file, path, None) for file in _files_under(path, path)]
    if not files:
        raise ValueError(f"--data: {path} holds no files")
    return files


# A dataset's own split folders (Kaggle's and many papers' layout: train/<class>/*.jpg, test/<class>/*.jpg), by the
# kflow split each is.
SPLIT_FOLDERS = {
    "train": "train", "training": "train", "val": "eval", "valid": "eval", "validation": "eval", "eval": "eval",
    "dev": "eval", "test": "test", "testing": "test",
}  # fmt: skip


def _from_folders(root: Path) -> list[ImageFile]:
    classes = sorted(child for child in root.iterdir() if child.is_dir() and not child.name.startswith("."))
    if not classes:
        raise ValueError(f"data.source.path: {root} has no class folders (one sub-folder of images per class)")
    if _split_folders(classes):
        return _from_split_folders(root, classes)
    files = [_listed(file, root, folder.name) for folder in classes for file in _files_under(folder, root)]
    if not files:
        raise ValueError(f"data.source.path: the class folders of {root} hold no files")
    _say_empty_class_folders(classes, files, root)
    return files


def _say_empty_class_folders(folders: list[Path], files: list[ImageFile], root: Path) -> None:
    """A class folder that holds no file is no class of the model: said, not dropped without a word."""
    held = set()  # the folders, class or split/class, that hold a file (its position is its path under root)
    for file in files:
        parts = Path(file.position).parts
        held.update(os.path.join(*parts[:depth]) for depth in (1, 2) if len(parts) > depth)
    empty = [str(folder.relative_to(root)) for folder in folders if str(folder.relative_to(root)) not in held]
    if empty:
        shown = ", ".join(empty[:10]) + (", ..." if len(empty) > 10 else "")
        # Once a process: the folders are listed by validate, the data's fingerprint and the ingest (said 4 times).
        said = f"images ingest: {len(empty)} class folder(s) of {root} hold no file and are no class: {shown}"
        say_once(log, said, logging.WARNING)


def _split_folders(folders: list[Path]) -> bool:
    """Whether the folders are a dataset's splits, each holding class folders (a class named like a split holds
    images, not folders)."""
    names = [SPLIT_FOLDERS.get(folder.name.lower()) for folder in folders]
    if None in names or len(set(names)) != len(names):
        return False
    return all(
        any(child.is_dir() and not child.name.startswith(".") for child in folder.iterdir()) for folder in folders
    )


def _from_split_folders(root: Path, folders: list[Path]) -> list[ImageFile]:
    """The images of each split folder's class folders, each with its split; a train folder is required (the
    splits the source lacks are cut from it)."""
    if not any(SPLIT_FOLDERS[folder.name.lower()] == "train" for folder in folders):
        names = ", ".join(folder.name for folder in folders)
        raise ValueError(f"data.source.path: the split folders of {root} ({names}) have no train folder to train on")
    labels = [
        (folder, label)
        for folder in folders
        for label in sorted(child for child in folder.iterdir() if child.is_dir() and not child.name.startswith("."))
    ]
    files = [
        _listed(file, root, label.name, SPLIT_FOLDERS[folder.name.lower()])
        for folder, label in labels
        for file in _files_under(label, root)
    ]
    if not files:
        raise ValueError(f"data.source.path: the class folders of {root}'s splits hold no files")
    _say_empty_class_folders([label for _, label in labels], files, root)
    return files


def _listed(file: Path, root: Path, label: str | None, split: str | None = None) -> ImageFile:
    """A folder's file as a record, `named` by its extension (a manifest's files are named by the user)."""
    return ImageFile(str(file), label, str(file.relative_to(root)), str(root), split, image_named(file.name))


def image_named(name: str) -> bool:
    """Whether a file name ends in an extension Pillow reads as an image (.png, .jpg, .jpeg, .bmp, .gif, .tif,
    .webp, .ppm, ... any case). A README, a Thumbs.db, an .svg or an extensionless file in a class folder is not
    training data, and read as an image it would be refused, fail the ingest's invalid share and add its class."""
    return Path(name).suffix.lower() in _image_suffixes()


@functools.cache
def _image_suffixes() -> frozenset[str]:
    from PIL import Image

    return frozenset(suffix for suffix, kind in Image.registered_extensions().items() if kind in Image.OPEN)


def _files_under(folder: Path, root: Path) -> list[Path]:
    """The entries under `folder` but folders and hidden ones (under `root`), by name. Every entry but a folder is
    a record (a FIFO or a link to elsewhere is refused by the worker, with its reason, not left out unsaid); rglob
    does not enter linked folders."""
    return [
        file
        for file in sorted(folder.rglob("*"))
        if not file.is_dir() and not any(part.startswith(".") for part in file.relative_to(root).parts)
    ]


def _from_manifest(manifest: Path) -> list[ImageFile]:
    rows: list[tuple[Any, Any, str]] = []
    if manifest.suffix == ".jsonl":
        with manifest.open() as lines:
            for number, line in enumerate(lines, start=1):
                if line.strip():
                    entry = json.loads(line)
                    rows.append((entry.get("path"), entry.get("label"), f"{manifest.name}:{number}"))
    elif manifest.suffix == ".csv":
        with manifest.open(newline="") as file:
            reader = csv.DictReader(file)
            if not {"path", "label"} <= set(reader.fieldnames or ()):
                raise ValueError(f"data.source.path: the manifest {manifest} needs the columns path and label")
            rows = [(row["path"], row["label"], f"{manifest.name}:{number}") for number, row in enumerate(reader, 2)]
    else:
        raise ValueError(f"data.source.path: a manifest is a .csv (path,label) or .jsonl file, got {manifest.name}")
    files = []
    for path, label, position in rows:
        # A row without a path or label is kept as a record, so the worker rejects it with its position.
        file = str(manifest.parent / path) if isinstance(path, str) and path else ""
        files.append(ImageFile(file, "" if label is None else str(label), f"{position} {path}", str(manifest.parent)))
    if not files:
        raise ValueError(f"data.source.path: the manifest {manifest} lists no images")
    return files


def named_images(files: list[ImageFile], source_path: str | None, say: bool = True) -> list[ImageFile]:
    """The files named as images; the others (a folder's README, .svg, extensionless files) are said in one line
    (`say`), and the ingest's workers keep them as filtered rejects (not_an_image_name), unread. A source without
    any is refused (by `kflow validate` too)."""
    images = [file for file in files if file.named]
    others = Counter(Path(file.path).suffix.lower() or "no extension" for file in files if not file.named)
    if others and say:
        first = next(file.position for file in files if not file.named)
        log.warning(
            "images ingest: %d of %d files left out, not named as images (%s; the first: %s): see rejects.jsonl",
            sum(others.values()), len(files), ", ".join(f"{kind} {count}" for kind, count in others.most_common()),
            first,
        )  # fmt: skip
    if not images:
        raise ValueError(f"data.source.path: {source_path} holds no files named as images (.png, .jpg, ...)")
    return images


# Fewer images in a class are said: hardly learnt, and an 8:1:1 split of 4 expects 0.4 of them in eval and in test.
FEW_IMAGES = 5


def checked_classes(images: list[ImageFile], source_path: str | None) -> list[str]:
    """The classes of labelled images (class_names); a ValueError when there are fewer than two."""
    classes = class_names(images)
    if len(classes) < 2:
        raise ValueError(
            f"data.source.path: {source_path} holds {len(classes)} class(es); a classifier needs two{_inner(images)}"
        )
    counts = Counter(file.label for file in images if file.label)
    in_splits = {file.split for file in images} - {None}
    if in_splits - {"train"}:  # the source's own split folders: a class they hold only outside train is never learnt
        trained = {file.label for file in images if file.split == "train"}
        untrained = [name for name in classes if name not in trained]
        if untrained:
            shown = ", ".join(repr(name) for name in untrained[:10]) + (", ..." if len(untrained) > 10 else "")
            log.warning("images ingest: %d class(es) have no training image, only eval or test ones: %s; the model "
                        "cannot learn them", len(untrained), shown)  # fmt: skip
    few = sorted(name for name in classes if counts[name] < FEW_IMAGES)
    if few:  # a class a split may lack and the model can hardly learn: trained, but said
        shown = ", ".join(f"{name!r} ({counts[name]})" for name in few[:10]) + (", ..." if len(few) > 10 else "")
        log.warning("images ingest: %d class(es) hold fewer than %d images: %s; the model can hardly learn them, and a "
                    "split may hold none", len(few), FEW_IMAGES, shown)  # fmt: skip
    return classes


def _inner(images: list[ImageFile]) -> str:
    """Where the class folders are when the one class folder holds only folders of images: an archive unzipped into
    a folder of its name (`digits/digits/3/*.png`, with or without a Mac's `__MACOSX/` beside it)."""
    if len({file.label for file in images}) != 1 or any(file.split for file in images):
        return ""
    parts = [Path(file.position).parts for file in images]
    inner = sorted({part[1] for part in parts if len(part) > 2})
    if len(inner) < 2 or any(len(part) < 3 for part in parts):
        return ""
    shown = ", ".join(inner[:5]) + (", ..." if len(inner) > 5 else "")
    folder = Path(images[0].root) / parts[0][0]
    where = f"its folder {parts[0][0]!r} holds {len(inner)} folders of images ({shown})"
    return f": {where}; if they are the classes, set data.source.path to {folder}"


def class_names(files: list[ImageFile]) -> list[str]:
    """The classes in index order: by number when every name is a whole number, else by name."""
    names = {file.label for file in files if file.label}
    if all(name.lstrip("-").isdigit() for name in names):
        return sorted(names, key=int)
    return sorted(names)


def source_files(
    *, source_path: str | None = None, source_format: str = "auto", tfds: dict[str, Any] | None = None, **_: Any
) -> list[Path]:
    """The files the ingest reads, for the data fingerprint in its cache key (the manifest too; a TFDS dataset's
    prepared folder)."""
    if source_format == "tfds":
        from kflow.components.ingest.tfds_source import source_files as tfds_files

        return tfds_files(source_path=source_path, tfds=tfds)
    from kflow.components.datasets.images.ingest.table_images import table_files_of, table_kind

    if kind := table_kind(source_path, source_format):
        return [Path(name) for name in table_files_of(source_path, kind)]
    # Only what the ingest would read: a file outside the source folder or a FIFO is neither read nor hashed.
    listed = []
    for file in list_images(source_path, source_format):
        if file.path:
            try:
                open_source(file).close()
            except RefusedFile:
                continue
            listed.append(Path(file.path))
    path = Path(source_path or "")
    return [path, *listed] if path.is_file() else listed
