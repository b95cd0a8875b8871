"""The explicit JAX loop reads its training batches a block at a time (components/trainer/jax_loop.py): each step's
batch, taken from its block by index, is the batch the dataset gave in that place, in order; blocks are smaller
where batches are large, one batch where shapes are not fixed."""

from __future__ import annotations

import jax
import numpy as np
import tensorflow as tf
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from kflow.components.trainer.jax_loop import BLOCK_STEPS, batches_in_blocks, block_steps


class OneDevice:
    mesh = Mesh(np.array(jax.devices()[:1]), ("batch",))
    replicated = NamedSharding(mesh, PartitionSpec())
    block_split = NamedSharding(mesh, PartitionSpec(None, "batch"))


def test_each_step_takes_the_batch_the_dataset_gave_in_its_place():
    rows = np.arange(200 * 3, dtype=np.float32).reshape(200, 3)
    data = tf.data.Dataset.from_tensor_slices((rows, np.arange(200))).batch(4, drop_remainder=True)
    taken = []
    for (block, index), _ in zip(batches_in_blocks(OneDevice, data), range(30), strict=False):
        x, y, weight = jax.tree.map(lambda array, index=index: np.asarray(array)[int(index)], block)
        taken.append((x, y))
        assert weight is None
    assert len(taken) == 30
    for step, (x, y) in enumerate(taken):
        np.testing.assert_array_equal(y, np.arange(step * 4, step * 4 + 4))
        np.testing.assert_array_equal(x, rows[step * 4 : step * 4 + 4])


def test_a_block_holds_fewer_batches_where_they_are_large_and_one_where_shapes_vary():
    small = (tf.TensorSpec([64, 28, 28], tf.uint8), tf.TensorSpec([64], tf.int64))
    assert block_steps(small) == BLOCK_STEPS
    large = (tf.TensorSpec([256, 224, 224, 3], tf.float32),)  # 154 MB a batch
    assert block_steps(large) == 1
    middle = (tf.TensorSpec([64, 1024, 1024], tf.uint8),)  # 64 MiB: two in 128 MiB
    assert block_steps(middle, limit_bytes=128 * 2**20) == 2
    varying = ({"tokens": tf.TensorSpec([32, None], tf.int32)}, tf.TensorSpec([32], tf.int64))
    assert block_steps(varying) == 1
