"""The Trainer's split sizes: the ingest's counts (stats.json) where it recorded them, else counted by reading."""

from __future__ import annotations

from kflow.components.datasets.mnist.task import MnistTask
from kflow.components.trainer.config import TrainConfig
from kflow.components.trainer.training import count_examples, split_sizes
from kflow.components.util.schema import load_schema
from tests.components.fixtures import MNIST_SCHEMA, write_examples


def reading_factory(examples):
    """make_dataset over the MNIST task, noting each split it is asked to read."""
    task = MnistTask(load_schema(MNIST_SCHEMA))
    read: list[str] = []

    def make_dataset(split, training, batch_size):
        read.append(split)
        return task.dataset(examples, split, batch_size=batch_size, training=training, seed=0)

    return make_dataset, read


def test_the_ingests_counts_are_the_sizes_without_reading_a_split(tmp_path):
    examples = write_examples(tmp_path / "examples", counts={"train": 70, "eval": 30})
    make_dataset, read = reading_factory(examples)
    config = TrainConfig(batch_size=16, steps_per_execution=2)

    assert split_sizes(make_dataset, examples, config) == (70, 30, 6)  # 5 batches, in whole calls of 2
    assert read == []
    # the ingest's counts are the records the task reads
    assert [count_examples(make_dataset(split, False, 16)) for split in ("train", "eval")] == [70, 30]


def test_examples_no_ingest_counted_are_read_to_count_them(tmp_path):
    examples = write_examples(tmp_path / "examples", counts={"train": 70, "eval": 30})
    (examples.path / "stats.json").unlink()
    make_dataset, read = reading_factory(examples)

    assert split_sizes(make_dataset, examples, TrainConfig(batch_size=16)) == (70, 30, 5)
    assert read == ["train", "eval"]


def test_a_train_split_smaller_than_the_batch_trains_on_the_whole_split():
    config = TrainConfig(batch_size=32)

    assert config.batch_for(None, 1) == 32  # no counts recorded: as set
    assert config.batch_for(500, 2) == 32
    assert config.batch_for(25, 1) == 25  # a 32-row table's train split: one batch of all of it
    assert config.batch_for(25, 2) == 24  # whole batches for 2 replicas in sync
    assert config.batch_for(1, 2) == 32  # too small even for that: kept, and the loop says why it cannot train
