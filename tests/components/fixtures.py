"""Small fake artifacts for component tests: Examples in the ingest layout and the MNIST Schema.

The images are synthetic but learnable: class k is a bright horizontal bar at
rows 2k+2..2k+4 over dim noise, so a convnet separates the classes within an epoch or two.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import tensorflow as tf

from kflow.components.trainer.config import ModelChoice, TrainConfig
from kflow.components.trainer.worker import worker_spec
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun, Schema

REPO = Path(__file__).resolve().parents[2]
MNIST_SCHEMA = REPO / "schemas" / "mnist" / "schema.pbtxt"


def bar_images(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """uint8 [n, 28, 28] images: noise in 0..79 plus a bar of 200..255 at rows 2k+2..2k+4 for label k."""
    images = rng.integers(0, 80, size=(len(labels), 28, 28), dtype=np.uint8)
    for index, label in enumerate(labels):
        row = 2 * int(label) + 2
        images[index, row : row + 3, 2:26] = rng.integers(200, 256, size=(3, 24), dtype=np.uint8)
    return images


def make_arrays(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """`count` learnable (images, labels), labels cycling over the ten classes in a random order."""
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(count) % 10).astype(np.int64)
    return bar_images(labels, rng), labels


def write_split(examples: Examples, split: str, images: np.ndarray, labels: np.ndarray, shards: int = 2) -> None:
    """Writes one split as `shards` gzipped TFRecord files of tf.train.Example."""
    folder = examples.split_uri(split)
    folder.mkdir(parents=True, exist_ok=True)
    for shard in range(shards):
        path = folder / f"data_tfrecord-{shard:05d}-of-{shards:05d}.gz"
        with tf.io.TFRecordWriter(str(path), options="GZIP") as writer:
            for index in range(shard, len(labels), shards):
                feature = {
                    "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[images[index].tobytes()])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(labels[index])])),
                    "key": tf.train.Feature(bytes_list=tf.train.BytesList(value=[f"{split}-{index}".encode()])),
                }
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


def write_examples(uri: str | Path, counts: dict[str, int] | None = None, seed: int = 0, shards: int = 2) -> Examples:
    """An Examples artifact at `uri` with learnable splits of the given sizes (default 400/100/100)."""
    counts = counts or {"train": 400, "eval": 100, "test": 100}
    examples = Examples(uri)
    for offset, (split, count) in enumerate(counts.items()):
        images, labels = make_arrays(count, seed=seed + offset)
        write_split(examples, split, images, labels, shards=shards)
    examples.write_json("stats.json", {"read": sum(counts.values()), "accepted": counts, "rejected": {}})
    return examples


def read_split(examples: Examples, split: str) -> tuple[np.ndarray, np.ndarray]:
    """The (images, labels) of a split, in file order, decoded independently of the code under test."""
    images, labels = [], []
    for path in examples.split_files(split):
        for record in tf.data.TFRecordDataset(path, compression_type="GZIP").as_numpy_iterator():
            example = tf.train.Example.FromString(record)
            raw = example.features.feature["image"].bytes_list.value[0]
            images.append(np.frombuffer(raw, dtype=np.uint8).reshape(28, 28))
            labels.append(example.features.feature["label"].int64_list.value[0])
    return np.stack(images), np.array(labels, dtype=np.int64)


def write_schema(uri: str | Path) -> Schema:
    """A Schema artifact at `uri` holding the MNIST schema of the repo."""
    schema = Schema(uri)
    schema.path.mkdir(parents=True, exist_ok=True)
    shutil.copy(MNIST_SCHEMA, schema.file)
    return schema


def save_model(keras_model, model) -> None:
    """A Model artifact as the Trainer writes it: model.keras and the serving SavedModel (Format-Serving/)."""
    model.path.mkdir(parents=True, exist_ok=True)
    keras_model.save(model.keras_file)
    keras_model.export(str(model.serving_uri), format="tf_saved_model", verbose=False)


def cluster_spec(
    tmp_path: Path, examples: Examples, schema: Schema, config: TrainConfig, dataset: str = "mnist"
) -> dict:
    """What a launched cluster reads to train `config` on these inputs: the model and its run under `tmp_path`, the
    working dir `tmp_path / "work"`."""
    return worker_spec(
        ModelChoice(dataset),
        config,
        schema_file=schema.file,
        devices=None,
        examples=examples,
        model=Model(tmp_path / "model"),
        model_run=ModelRun(tmp_path / "run"),
        working_dir=tmp_path / "work",
    )
