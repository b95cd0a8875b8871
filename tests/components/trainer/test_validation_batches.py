"""The validation batches `model.fit` reads at every epoch, kept in memory when small (validation_batches.py)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from kflow.components.trainer import validation_batches
from kflow.components.trainer.validation_batches import kept_in_memory


def _batches(rows: int, batch: int) -> tf.data.Dataset:
    """Endless batches of a little table: a dict of a number and a string feature, a label, a weight."""
    numbers = np.arange(rows, dtype=np.float32).reshape(-1, 1)
    words = np.array([[f"w{i}"] for i in range(rows)])
    labels = np.arange(rows) % 3
    return (
        tf.data.Dataset.from_tensor_slices(({"x": numbers, "word": words}, labels, labels * 0.5)).batch(batch).repeat()
    )


def _values(dataset: tf.data.Dataset, steps: int) -> list:
    return [tf.nest.map_structure(lambda tensor: tensor.numpy().tolist(), batch) for batch in dataset.take(steps)]


@pytest.mark.parametrize(("rows", "batch"), [(15, 16), (35, 16), (32, 16), (1, 4)])
def test_the_kept_batches_are_those_read_pass_after_pass(rows, batch):
    steps = -(-rows // batch)
    reads = tf.Variable(0)

    def counted(*batch):
        reads.assign_add(1)
        return batch

    kept = kept_in_memory(_batches(rows, batch).map(counted), steps)
    assert int(reads.numpy()) == steps  # one pass read
    assert _values(kept, 3 * steps) == _values(_batches(rows, batch), 3 * steps)
    assert int(reads.numpy()) == steps  # and no more: the passes came from memory


def test_a_split_larger_than_the_budget_is_read_as_before(monkeypatch):
    monkeypatch.setattr(validation_batches, "MAX_BYTES", 100)
    original = _batches(40, 8)
    assert kept_in_memory(original, 5) is original
    monkeypatch.setattr(validation_batches, "MAX_STEPS", 4)
    monkeypatch.setattr(validation_batches, "MAX_BYTES", 64 << 20)
    assert kept_in_memory(original, 5) is original


def test_batches_it_could_not_give_back_as_read_are_left_alone():
    # Batches of varying sizes (a bucketed split) would come back cut differently.
    varying = (
        tf.data.Dataset.from_tensor_slices(tf.range(10))
        .batch(3)
        .concatenate(tf.data.Dataset.from_tensor_slices(tf.range(10)).batch(5))
        .repeat()
    )
    assert kept_in_memory(varying, 6) is varying
    ragged = tf.data.Dataset.from_tensor_slices(tf.ragged.constant([[1], [2, 3], [4]])).batch(2).repeat()
    assert kept_in_memory(ragged, 2) is ragged
    finite = _batches(15, 16).take(1)
    assert kept_in_memory(finite, 2) is finite
    # Batches of one size cut to their own lengths (the masked LM's lines): tf.concat could not join them.
    widths = tf.data.Dataset.range(1, 4).map(lambda n: tf.zeros([2, n], tf.int32)).repeat()
    assert kept_in_memory(widths, 3) is widths
