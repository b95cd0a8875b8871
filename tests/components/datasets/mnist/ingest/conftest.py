"""Fixtures for the MNIST ingest tests: small sources written on the fly and an executor harness."""

from __future__ import annotations

import gzip
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from kflow.components.datasets.mnist.ingest.executor import run
from kflow.components.util.schema import feature_spec, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

TRAIN_RECORDS = 300
TEST_RECORDS = 50
# The IDX element type code of each numpy dtype the tests write.
_IDX_TYPE_CODES = {np.dtype(np.uint8): 0x08, np.dtype(np.int32): 0x0C, np.dtype(np.float32): 0x0D}


@dataclass(frozen=True)
class Arrays:
    """A small MNIST in the Keras layout."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    def as_dict(self) -> dict[str, np.ndarray]:
        return {"x_train": self.x_train, "y_train": self.y_train, "x_test": self.x_test, "y_test": self.y_test}


@dataclass(frozen=True)
class Ingested:
    """The outputs and summary of one executor run."""

    examples: Examples
    schema: Schema
    rejects: Rejects
    summary: dict

    @property
    def stats(self) -> dict:
        return self.examples.stats


def random_arrays(train: int = TRAIN_RECORDS, test: int = TEST_RECORDS, seed: int = 0) -> Arrays:
    rng = np.random.default_rng(seed)
    return Arrays(
        x_train=rng.integers(0, 256, size=(train, 28, 28), dtype=np.uint8),
        y_train=rng.integers(0, 10, size=train).astype(np.uint8),
        x_test=rng.integers(0, 256, size=(test, 28, 28), dtype=np.uint8),
        y_test=rng.integers(0, 10, size=test).astype(np.uint8),
    )


def idx_bytes(array: np.ndarray) -> bytes:
    """An array in the IDX format: magic number, big-endian dimensions, big-endian values."""
    header = bytes([0, 0, _IDX_TYPE_CODES[array.dtype], array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write_idx(folder: Path, arrays: Arrays, gzipped: bool = True) -> Path:
    """Writes the four MNIST IDX files into `folder`, gzipped (*.gz) or not."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "train-images-idx3-ubyte": arrays.x_train,
        "train-labels-idx1-ubyte": arrays.y_train,
        "t10k-images-idx3-ubyte": arrays.x_test,
        "t10k-labels-idx1-ubyte": arrays.y_test,
    }
    for name, array in files.items():
        content = idx_bytes(array)
        if gzipped:
            (folder / f"{name}.gz").write_bytes(gzip.compress(content, mtime=0))
        else:
            (folder / name).write_bytes(content)
    return folder


def write_npz(folder: Path, arrays: Arrays | dict[str, np.ndarray]) -> Path:
    """Writes `folder/mnist.npz` and returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(folder / "mnist.npz", **(arrays.as_dict() if isinstance(arrays, Arrays) else arrays))
    return folder


def ingest(output: Path, **parameters) -> Ingested:
    """Runs the executor as the runner would, into fresh artifact folders under `output`."""
    output.mkdir(parents=True, exist_ok=True)
    examples, schema, rejects = Examples(output / "examples"), Schema(output / "schema"), Rejects(output / "rejects")
    summary = run(examples=examples, schema=schema, rejects=rejects, **parameters)
    return Ingested(examples, schema, rejects, summary)


def read_split(ingested: Ingested, split: str) -> dict[str, tuple[bytes, int]]:
    """The records of a split, parsed with the schema's feature spec: {key: (image bytes, label)}."""
    spec = feature_spec(load_schema(ingested.schema.file))
    records = {}
    for path in ingested.examples.split_files(split):
        for batch in tf.data.TFRecordDataset(path, compression_type="GZIP").batch(1000):
            parsed = tf.io.parse_example(batch, spec)
            for key, image, label in zip(
                parsed["key"].numpy(), parsed["image"].numpy(), parsed["label"].numpy(), strict=True
            ):
                records[key.decode()] = (image, int(label))
    return records


def shard_keys(path: str) -> list[str]:
    """The keys of one shard file, in file order."""
    spec = {"key": tf.io.FixedLenFeature([], tf.string)}
    return [
        tf.io.parse_single_example(record, spec)["key"].numpy().decode()
        for record in tf.data.TFRecordDataset(path, compression_type="GZIP")
    ]


@pytest.fixture(scope="session")
def arrays() -> Arrays:
    return random_arrays()


@pytest.fixture(scope="session")
def npz_folder(tmp_path_factory, arrays) -> Path:
    return write_npz(tmp_path_factory.mktemp("npz"), arrays)


@pytest.fixture(scope="session")
def npz_ingested(tmp_path_factory, npz_folder) -> Ingested:
    """The small npz, ingested with the default parameters and DirectRunner options."""
    return ingest(tmp_path_factory.mktemp("npz-ingested"), source_path=str(npz_folder))
