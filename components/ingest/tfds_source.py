"""A prepared TensorFlow Datasets dataset as an ingest reads it: `data.tfds` (name, version, splits, download), the
builder read from its data_dir without its code (`Source`), each kflow split's TFDS split spec and size, and the
chunks a Beam worker reads. The tabular `tfds` dataset and the images dataset's `tfds` format share it."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_SPLITS = {"train": "train", "eval": "validation", "test": "test"}
OPTIONS = ("name", "version", "splits", "download")


def with_splits(options: dict[str, Any], builder: Any, given: dict[str, Any] | None) -> dict[str, Any]:
    """`options` with the splits the dataset has (default_splits) when the config names none; said in the log."""
    if "splits" in (given or {}):
        return options
    splits = default_splits(list(builder.info.splits))
    if splits != DEFAULT_SPLITS:
        log.info(
            "tfds: %s's splits are %s; data.tfds.splits not set: %s",
            builder.name, ", ".join(builder.info.splits), splits,
        )  # fmt: skip
    return {**options, "splits": splits}


def default_splits(available: list[str]) -> dict[str, str]:
    """kflow's train, eval and test from a dataset's own splits: train, validation and test where it has them; a
    split it lacks is cut from train (iris has train alone: 80 %, 10 %, 10 %)."""
    validation, test = "validation" in available, "test" in available
    if validation and test:
        return dict(DEFAULT_SPLITS)
    if test:
        return {"train": "train[:90%]", "eval": "train[90%:]", "test": "test"}
    if validation:
        return {"train": "train[:90%]", "eval": "validation", "test": "train[90%:]"}
    return {"train": "train[:80%]", "eval": "train[80%:90%]", "test": "train[90%:]"}


def split_sizes(builder: Any, options: dict[str, Any], max_records: int | None) -> dict[str, int]:
    """{kflow split: records to read} of the TFDS split specs `options["splits"]` names."""
    available = ", ".join(builder.info.splits)
    sizes = {}
    for name, spec in options["splits"].items():
        try:
            sizes[name] = builder.info.splits[spec].num_examples
        except (KeyError, ValueError) as error:
            raise ValueError(
                f"data.tfds.splits.{name}: {spec!r} is not a split of {options['name']} ({available}): {error}"
            ) from None
    if max_records is not None:
        sizes = {name: min(size, max_records) for name, size in sizes.items()}
    return sizes


def source_files(*, source_path: str | None = None, tfds: dict[str, Any] | None = None, **_: Any) -> list[Path]:
    """The prepared dataset's folder (data_dir/name/version), for the data fingerprint."""
    options = read_options(tfds)
    return [Source.of(source_path, options).builder(download=False).data_path]


def read_options(tfds: dict[str, Any] | None) -> dict[str, Any]:
    """`data.tfds` with its defaults; a ValueError names the field that is wrong."""
    options = {"version": None, "splits": dict(DEFAULT_SPLITS), "download": False, **(tfds or {})}
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"data.tfds: unknown options {unknown} (allowed: {', '.join(OPTIONS)})")
    if not isinstance(options.get("name"), str) or not options["name"]:
        raise ValueError("data.tfds.name: the TensorFlow Datasets builder to read, e.g. iris")
    if not isinstance(options["splits"], dict) or not {"train", "eval"} <= set(options["splits"]):
        raise ValueError(f"data.tfds.splits: map train and eval (and test) to TFDS splits, got {options['splits']!r}")
    return options


@dataclass(frozen=True)
class Source:
    data_dir: str | None
    name: str
    version: str | None

    @classmethod
    def of(cls, source_path: str | None, options: dict[str, Any]) -> Source:
        """The dataset `options` (read_options) name, under the data_dir `source_path` (None: TFDS's own)."""
        return cls(str(Path(source_path).expanduser()) if source_path else None, options["name"], options["version"])

    def builder(self, download: bool = False) -> Any:
        import tensorflow_datasets as tfds

        folder = Path(self.data_dir or tfds.core.constants.DATA_DIR).expanduser() / self.name
        versions = sorted((p for p in folder.glob("*") if (p / "dataset_info.json").exists()), key=lambda p: p.name)
        if self.version is not None:
            versions = [p for p in versions if p.name == self.version]
        if versions and not download:
            return tfds.builder_from_directory(str(versions[-1]))
        if not download:
            wanted = f"{self.name}/{self.version}" if self.version else self.name
            raise ValueError(
                f"tfds: {wanted} is not prepared under {folder.parent} (found: "
                f"{', '.join(p.name for p in folder.glob('*')) or 'nothing'}); prepare it there "
                f"(`tfds build {self.name} --data_dir {folder.parent}`) "
                "or set data.tfds.download: true (needs internet)"
            )
        spec = f"{self.name}:{self.version}" if self.version else self.name
        builder = tfds.builder(spec, data_dir=self.data_dir)
        builder.download_and_prepare()
        return builder


@dataclass(frozen=True)
class Chunk:
    split: str  # kflow's split
    spec: str  # the TFDS split spec it reads
    start: int
    stop: int


def chunks(sizes: dict[str, int], options: dict[str, Any], records: int) -> list[Chunk]:
    """Each kflow split's records `sizes` names, in chunks of `records` (a Beam element each)."""
    return [
        Chunk(split, options["splits"][split], start, min(start + records, size))
        for split, size in sizes.items()
        for start in range(0, size, records)
    ]
