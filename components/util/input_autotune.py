"""Input without tf.data's autotuning threads (the Trainer's and the Evaluator's), so that deleting an iterator does
not stall.

tf.data starts an autotuning thread for each iterator of a pipeline that has anything marked AUTOTUNE, and in
TensorFlow 2.21 deleting the iterator often waits for that thread's next optimisation round, which comes
10 ms × (2^k - 1) after the iterator's first element: 10.2, 20.5, 41 s... A `tf.distribute` dataset feeds each
replica through a MultiDeviceIterator: one small dataset per device, prefetching a fixed number of elements (1),
each with such a thread although it has nothing to tune. Deleting a MirroredStrategy iterator that lived 12 s took
8.5 s here, one that lived 22 s 19 s (the same under MultiWorkerMirroredStrategy; an iterator of a plain pipeline
with parallel maps, now and then). Keras' `fit` drops its validation iterator at each validation and both at its
end: a mirrored `fit` of two 10-s epochs lost 10-20 s an epoch; an evaluation's iterator ends with it. Without
autotuning, AUTOTUNE parallelism is the core count and AUTOTUNE prefetch buffers grow on demand (tf.data's legacy
autotuner), which serves these pipelines as well (the same examples/s in bench/guides' mirrored_mnist).
"""

from __future__ import annotations

import functools

import tensorflow as tf
from tensorflow.python.data.ops import multi_device_iterator_ops

_UNTUNED = tf.data.Options()
_UNTUNED.autotune.enabled = False


def untuned(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset` with tf.data's autotuning thread off."""
    return dataset.with_options(_UNTUNED)


def untune_device_datasets() -> None:
    """Makes every per-device dataset `tf.distribute` creates from now on run without autotuning (once per process;
    they come from TensorFlow's private `_create_device_dataset`, pinned with TensorFlow: tests check it)."""
    create = multi_device_iterator_ops._create_device_dataset
    if getattr(create, "untuned", False):
        return

    @functools.wraps(create)
    def create_untuned(*args, **kwargs) -> tf.data.Dataset:
        return untuned(create(*args, **kwargs))

    create_untuned.untuned = True  # type: ignore[attr-defined]
    multi_device_iterator_ops._create_device_dataset = create_untuned
