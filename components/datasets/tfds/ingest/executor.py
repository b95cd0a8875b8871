"""The TensorFlow Datasets ingest executor: a prepared TFDS dataset's splits into kflow's Examples.

The dataset is read from `data.source.path` (a TFDS data_dir) with `tfds.builder_from_directory`,
so neither the builder's code nor the network is needed once the dataset is prepared; with
`tfds.download: true` (and the builder importable) `download_and_prepare` fetches and prepares it
first. `tfds.splits` maps kflow's splits to TFDS split specs, slices included
({train: "train[:90%]", eval: "train[90%:]", test: "test"}; unset: train, validation and test, a split the dataset
lacks cut from train: tfds_source.default_splits). Features map to tf.train.Example
features: integer and boolean scalars → int, floating scalars → float, strings and `Text` →
string, `ClassLabel` → its class name (string), so reports show names, not ids. As the datasets come (TFDS's
iris holds its four measures in one `features` vector, titanic its columns in a nested `features` dict): a
nested dict's features are columns of their own (named by their own name, or by their path `a/b` where two
share one), and a vector of at most MAX_VECTOR values a column per value (`features_0`, `features_1`, ...).
Other features (sequences, longer or unsized tensors) are refused by name; an image dataset is read by the
images dataset (`data.source.format: tfds`, components/datasets/images/ingest/tfds_images.py). A record
is read as `<tfds split spec>#<index>`; each kflow split is cut into chunks of CHUNK records.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kflow.components.datasets.tabular.examples import check_problem_type
from kflow.components.datasets.tabular.table_ingest import Table, TableReader, ingest_table
from kflow.components.ingest.ingest_job import IngestJob
from kflow.components.ingest.tfds_source import Chunk, Source, read_options, split_sizes, with_splits
from kflow.components.ingest.tfds_source import chunks as tfds_chunks
from kflow.components.util.example_proto import Example

log = logging.getLogger(__name__)

CHUNK = 5000
MAX_VECTOR = 64  # A fixed-length vector feature of at most this many values is a column per value.


def run(**parameters: Any) -> dict[str, Any]:
    """Ingests the TFDS dataset (`parameters`: the component's, and its outputs); returns {"read": N, "<split>": n,
    ..., "rejected": r, ...}."""
    return ingest_table(TfdsReader, parameters)


@dataclass(frozen=True)
class TfdsReader(TableReader):
    dataset: ClassVar[str] = "tfds"
    problem_type: str | None = None  # None: a float label is a regression, any other a classification
    tfds: dict[str, Any] | None = None

    def scan(self, job: IngestJob, staging: Any) -> Table:
        """The TFDS splits' records, `tfds.splits` naming kflow's splits (no shares: `data.split` is unused)."""
        options = read_options(self.tfds)
        source = Source.of(job.source_path, options)
        builder = source.builder(download=options["download"])
        options = with_splits(options, builder, given=self.tfds)
        columns = feature_columns(builder.info.features)
        kinds = {column.name: column.kind for column in columns}
        label = self.label
        if label is None and builder.info.supervised_keys:
            label = builder.info.supervised_keys[1]
        problem_type = self.problem_type
        if problem_type is None and label in kinds:  # a float label was classification unless set: a class a price
            problem_type = "regression" if kinds[label] == "float" else "classification"
            log.info("tfds ingest: data.problem_type not set: %s, as the label %r is %s", problem_type, label,
                     "a float" if kinds[label] == "float" else f"{kinds[label]} (a class label)")  # fmt: skip
        check_problem_type(label, problem_type, None, list(kinds))
        if problem_type == "regression" and kinds[label] == "string":
            raise ValueError(f"data.label: regression needs a numeric label; feature {label!r} is a string")
        sizes = split_sizes(builder, options, job.max_records)
        chunks = tfds_chunks(sizes, options, CHUNK)
        read = sum(sizes.values())
        log.info("tfds ingest: %s %s, %d records: %s", options["name"], builder.info.version, read, sizes)
        processor = ChunkProcessor(source, tuple(columns))
        name = f"{options['name']} {builder.info.version}"
        return Table([name], kinds, label, problem_type, read, chunks, processor, tuple(options["splits"]))


@dataclass(frozen=True)
class Column:
    """A column of the table: the feature at `path` in a record (nested dicts), its `index`-th value for a vector."""

    name: str
    path: tuple[str, ...]
    kind: str  # int | float | string
    index: int | None = None
    classes: tuple[str, ...] | None = None  # a ClassLabel's names: its value is written as the name

    def value(self, record: Any) -> Any:
        for key in self.path:
            record = record[key]
        return record if self.index is None else record[self.index]


def feature_columns(features: Any) -> list[Column]:
    """The table's columns of a FeaturesDict: scalars, nested dicts' scalars, short vectors' values; a ValueError
    names the features the tabular task cannot read."""
    import numpy as np
    import tensorflow_datasets as tfds

    columns: list[Column] = []
    refused: list[str] = []

    def kind_of(feature: Any) -> str:
        dtype = np.dtype(feature.np_dtype)
        return "float" if dtype.kind == "f" else "int" if dtype.kind in "iub" else "string"

    def walk(path: tuple[str, ...], feature: Any) -> None:
        name = "/".join(path)
        shape = tuple(getattr(feature, "shape", ()) or ())
        if isinstance(feature, tfds.features.FeaturesDict):
            for key, child in feature.items():
                walk((*path, key), child)
        elif isinstance(feature, tfds.features.ClassLabel):
            columns.append(Column(name, path, "string", classes=tuple(feature.names)))
        elif isinstance(feature, tfds.features.Text) or (shape == () and feature.np_dtype == np.object_):
            columns.append(Column(name, path, "string"))
        elif isinstance(feature, tfds.features.Tensor) and shape == ():
            columns.append(Column(name, path, kind_of(feature)))
        elif (
            isinstance(feature, tfds.features.Tensor)
            and len(shape) == 1
            and (shape[0] or 0) in range(1, MAX_VECTOR + 1)
        ):
            columns.extend(Column(f"{name}_{index}", path, kind_of(feature), index) for index in range(shape[0]))
        else:
            refused.append(f"{name} ({type(feature).__name__} {shape})")

    for key, feature in features.items():
        walk((key,), feature)
    if refused:
        images = [name for name, feature in features.items() if isinstance(feature, tfds.features.Image)]
        hint = (
            f"; {', '.join(images)}: an image dataset, read by data.dataset: images with data.source.format: tfds"
            if images
            else ""
        )
        raise ValueError(f"tfds: the tabular task reads scalar features; these are not: {', '.join(refused)}{hint}")
    # A nested feature is named by its own name where no other column has it (titanic's `age`), else by its path.
    leaves = Counter(column.name.rsplit("/", 1)[-1] for column in columns)
    return [
        replace(column, name=leaf) if leaves[leaf := column.name.rsplit("/", 1)[-1]] == 1 else column
        for column in columns
    ]


@dataclass(frozen=True)
class ChunkProcessor:
    source: Source
    columns: tuple[Column, ...]

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
            for column in self.columns:
                value, name = column.value(record), column.name
                if column.classes is not None:
                    features[name].bytes_list.value.append(column.classes[int(value)].encode())
                elif column.kind == "string":
                    features[name].bytes_list.value.append(value if isinstance(value, bytes) else str(value).encode())
                elif column.kind == "float":
                    features[name].float_list.value.append(float(value))
                else:
                    features[name].int64_list.value.append(int(value))
            accepted.append((f"{chunk.spec}#{index:09d}", chunk.split, example.SerializeToString(deterministic=True)))
        return accepted, []
