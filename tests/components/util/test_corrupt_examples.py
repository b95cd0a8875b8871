"""A damaged Examples file read by any component: one line naming the artifact, whichever reader found it."""

from __future__ import annotations

import zlib

import pytest
import tensorflow as tf

from kflow.components.statistics_gen.executor import run as statistics
from kflow.components.trainer.executor import run as train
from kflow.components.transform.executor import run as transform
from kflow.components.util.corrupt_examples import data_loss
from kflow.pipeline.dsl.artifacts import ExampleStatistics, Model, ModelRun, TransformGraph
from tests.components.fixtures import write_examples, write_schema


def _damaged(tmp_path):
    examples = write_examples(tmp_path / "examples", {"train": 300, "eval": 20}, shards=1)
    (shard,) = examples.split_uri("train").glob("*.gz")
    data = bytearray(shard.read_bytes())  # a flipped block mid-file, the size kept (the ingest's hashes unchecked)
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(byte ^ 0xFF for byte in data[middle : middle + 64])
    shard.write_bytes(bytes(data))
    return examples


def test_beams_readers_say_it_in_one_line_naming_the_examples(tmp_path):
    examples = _damaged(tmp_path)
    with pytest.raises(ValueError) as raised:
        statistics(examples=examples, statistics=ExampleStatistics(tmp_path / "statistics"))
    message = str(raised.value)
    assert message.startswith(f"the Examples under {examples.uri} are corrupt: ") and "\n" not in message
    with pytest.raises(ValueError, match=r"^the Examples under .* are corrupt: "):
        transform(
            examples=examples,
            schema=write_schema(tmp_path / "schema"),
            transform_graph=TransformGraph(tmp_path / "graph"),
            dataset="mnist",
        )


def test_tensorflows_reader_in_the_trainer_says_it_too(tmp_path):
    examples = _damaged(tmp_path)
    with pytest.raises(ValueError, match=r"^the Examples under .* are corrupt: [^\n]*$"):
        train(
            dataset="mnist",
            examples=examples,
            schema=write_schema(tmp_path / "schema"),
            model=Model(tmp_path / "model"),
            model_run=ModelRun(tmp_path / "model_run"),
            epochs=1,
            batch_size=32,
        )


def test_each_readers_error_gives_its_reason_and_others_none():
    assert data_loss(zlib.error("Error -3 while decompressing data: incorrect data check")) == (
        "damaged gzip data (Error -3 while decompressing data: incorrect data check)"
    )
    frame = ValueError("Not a valid TFRecord. Mismatch of data mask: 0a0b0c")
    assert data_loss(frame) == "not a valid TFRecord (mismatch of data mask)"
    worker = RuntimeError("Error in a worker: Traceback …\nzlib.error: Error -3 while decompressing data: bad\n")
    assert data_loss(worker) == "damaged gzip data (Error -3 while decompressing data: bad)"
    try:
        try:
            raise zlib.error("Error -5 while decompressing data: incomplete or truncated stream")
        except zlib.error as inner:
            raise RuntimeError("the bundle failed") from inner
    except RuntimeError as outer:
        assert data_loss(outer).startswith("damaged gzip data (Error -5")
    loss = tf.errors.DataLossError(None, None, "{{function_node x}} corrupted record at 12 [Op:IteratorGetNext]")
    assert data_loss(loss) == "corrupted record at 12"
    truncated = tf.errors.DataLossError(None, None, "inflate() failed with error -3: incorrect data check")
    assert data_loss(truncated) == "inflate() failed with error -3: incorrect data check"
    weights = tf.errors.DataLossError(None, None, "Checksum does not match: stored 1 vs. calculated on the restored")
    assert data_loss(weights) is None  # a damaged model's variables: not the Examples'
    assert data_loss(ValueError("batch_size must be positive")) is None
    assert data_loss(OSError("No such file")) is None
