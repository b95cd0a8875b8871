"""The TensorFlow Datasets ingest executor: a prepared TFDS dataset's splits into kflow's Examples.

The dataset is read from `data.source.path` (a TFDS data_dir) with `tfds.builder_from_directory`,
so neither the builder's code nor the network is needed once the dataset is prepared; with
`tfds.download: true` (and the builder importable) `download_and_prepare` fetches and prepares it
first. `tfds.splits` maps kflow's splits to TFDS split specs, slices included
({train: "train[:90%]", eval: "train[90%:]", test: "test"}; unset: train, validation and test, or, for a
dataset without a validation split, its last tenth of train). Features map to tf.train.Example
features: integer and boolean scalars → int, floating scalars → float, strings and `Text` →
string, `ClassLabel` → its class name (string), so reports show names, not ids. Other features
(sequences, nested dicts) are refused by name: the tabular task reads scalars; an image dataset is read by the
images dataset (`data.source.format: tfds`, components/datasets/images/ingest/tfds_images.py). A record
is read as `<tfds split spec>#<index>`; each kflow split is cut into chunks of CHUNK records.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, ClassVar

from kflow.components.datasets.tabular.examples import check_problem_type
from kflow.components.datasets.tabular.table_ingest import Table, TableReader, ingest_table
from kflow.components.ingest.ingest_job import IngestJob
from kflow.components.ingest.tfds_source import Chunk, Source, read_options, split_sizes, with_splits
from kflow.components.util.example_proto import Example

log = logging.getLogger(__name__)

CHUNK = 5000


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
        options = read_options(self.tfds)
        source = Source.of(job.source_path, options)
        builder = source.builder(download=options["download"])
        options = with_splits(options, builder, given=self.tfds)
        kinds = feature_kinds(builder.info.features)
        label = self.label
        if label is None and builder.info.supervised_keys:
            label = builder.info.supervised_keys[1]
        check_problem_type(label, self.problem_type, None, list(kinds))
        if self.problem_type == "regression" and kinds[label] == "string":
            raise ValueError(f"data.label: regression needs a numeric label; feature {label!r} is a string")
        sizes = split_sizes(builder, options, job.max_records)
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
        images = [name for name, feature in features.items() if isinstance(feature, tfds.features.Image)]
        hint = (
            f"; {', '.join(images)}: an image dataset, read by data.dataset: images with data.source.format: tfds"
            if images
            else ""
        )
        raise ValueError(f"tfds: the tabular task reads scalar features; these are not: {', '.join(refused)}{hint}")
    return kinds


def _class_names(features: Any) -> dict[str, list[str]]:
    import tensorflow_datasets as tfds

    return {name: list(f.names) for name, f in features.items() if isinstance(f, tfds.features.ClassLabel)}


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
