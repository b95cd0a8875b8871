"""The TensorFlow Datasets ingest executor: a prepared TFDS dataset's splits into kflow's Examples.

The dataset is read from `data.source.path` (a TFDS data_dir) with `tfds.builder_from_directory`,
so neither the builder's code nor the network is needed once the dataset is prepared; with
`tfds.download: true` (and the builder importable) `download_and_prepare` fetches and prepares it
first. `tfds.splits` maps kflow's splits to TFDS split specs, slices included
({train: "train[:90%]", eval: "train[90%:]", test: "test"}). Features map to tf.train.Example
features: integer and boolean scalars → int, floating scalars → float, strings and `Text` →
string, `ClassLabel` → its class name (string), so reports show names, not ids. Other features
(images, sequences, nested dicts) are refused by name: the tabular task reads scalars. A record
is read as `<tfds split spec>#<index>`; each kflow split is cut into chunks of CHUNK records.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from kflow.components.datasets.tabular.examples import check_problem_type
from kflow.components.datasets.tabular.table_ingest import Table, TableReader, ingest_table
from kflow.components.ingest.ingest_job import IngestJob
from kflow.components.util.example_proto import Example

log = logging.getLogger(__name__)

CHUNK = 5000
DEFAULT_SPLITS = {"train": "train", "eval": "validation", "test": "test"}
OPTIONS = ("name", "version", "splits", "download")


def run(**parameters: Any) -> dict[str, Any]:
    """Ingests the TFDS dataset (`parameters`: the component's, and its outputs); returns {"read": N, "<split>": n,
    ..., "rejected": r, ...}."""
    return ingest_table(TfdsReader, parameters)


@dataclass(frozen=True)
class TfdsReader(TableReader):
    dataset: ClassVar[str] = "tfds"
    problem_type: str | None = "classification"
    tfds: dict[str, Any] | None = None

    def scan(self, job: IngestJob, staging: Any) -> Table:
        """The TFDS splits' records, `tfds.splits` naming kflow's splits (no shares: `data.split` is unused)."""
        options = _options(self.tfds)
        data_dir = str(Path(job.source_path).expanduser()) if job.source_path else None
        source = Source(data_dir, options["name"], options["version"])
        builder = source.builder(download=options["download"])
        kinds = feature_kinds(builder.info.features)
        label = self.label
        if label is None and builder.info.supervised_keys:
            label = builder.info.supervised_keys[1]
        check_problem_type(label, self.problem_type, None, list(kinds))
        if self.problem_type == "regression" and kinds[label] == "string":
            raise ValueError(f"data.label: regression needs a numeric label; feature {label!r} is a string")
        sizes = _sizes(builder, options, job.max_records)
        chunks = [
            Chunk(name, options["splits"][name], start, min(start + CHUNK, size))
            for name, size in sizes.items()
            for start in range(0, size, CHUNK)
        ]
        read = sum(sizes.values())
        log.info("tfds ingest: %s %s, %d records: %s", options["name"], builder.info.version, read, sizes)
        processor = ChunkProcessor(source, kinds, _class_names(builder.info.features))
        name = f"{options['name']} {builder.info.version}"
        return Table([name], kinds, label, self.problem_type, read, chunks, processor, tuple(options["splits"]))


def _sizes(builder: Any, options: dict[str, Any], max_records: int | None) -> dict[str, int]:
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
    options = _options(tfds)
    return [Source(source_path, options["name"], options["version"]).builder(download=False).data_path]


def _options(tfds: dict[str, Any] | None) -> dict[str, Any]:
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


def feature_kinds(features: Any) -> dict[str, str]:
    """{feature: int | float | string} of a FeaturesDict of scalars; a ValueError names the others."""
    import numpy as np
    import tensorflow_datasets as tfds

    kinds, refused = {}, []
    for name, feature in features.items():
        if isinstance(feature, tfds.features.ClassLabel):
            kinds[name] = "string"
        elif isinstance(feature, tfds.features.Text) or (feature.shape == () and feature.np_dtype == np.object_):
            kinds[name] = "string"
        elif isinstance(feature, tfds.features.Tensor) and feature.shape == ():
            dtype = np.dtype(feature.np_dtype)
            kinds[name] = "float" if dtype.kind == "f" else "int" if dtype.kind in "iub" else "string"
        else:
            refused.append(f"{name} ({type(feature).__name__} {getattr(feature, 'shape', '')})")
    if refused:
        raise ValueError(f"tfds: the tabular task reads scalar features; these are not: {', '.join(refused)}")
    return kinds


def _class_names(features: Any) -> dict[str, list[str]]:
    import tensorflow_datasets as tfds

    return {name: list(f.names) for name, f in features.items() if isinstance(f, tfds.features.ClassLabel)}


@dataclass(frozen=True)
class Chunk:
    split: str  # kflow's split
    spec: str  # the TFDS split spec it reads
    start: int
    stop: int


@dataclass(frozen=True)
class ChunkProcessor:
    source: Source
    kinds: dict[str, str]
    class_names: dict[str, list[str]]

    def __call__(self, chunk: Chunk) -> tuple[list, list]:
        import tensorflow_datasets as tfds

        builder = self.source.builder()
        dataset = (
            builder.as_dataset(split=chunk.spec, shuffle_files=False).skip(chunk.start).take(chunk.stop - chunk.start)
        )
        accepted = []
        for index, record in enumerate(tfds.as_numpy(dataset), start=chunk.start):
            example = Example()
            features = example.features.feature
            for name, kind in self.kinds.items():
                value = record[name]
                if name in self.class_names:
                    features[name].bytes_list.value.append(self.class_names[name][int(value)].encode())
                elif kind == "string":
                    features[name].bytes_list.value.append(value if isinstance(value, bytes) else str(value).encode())
                elif kind == "float":
                    features[name].float_list.value.append(float(value))
                else:
                    features[name].int64_list.value.append(int(value))
            accepted.append((f"{chunk.spec}#{index:09d}", chunk.split, example.SerializeToString(deterministic=True)))
        return accepted, []
