"""The custom loops' loss of a batch (strategies/runtime.py `replica_loss`): per-example losses averaged over the
global batch, and a loss function of the user's own that averages its batch itself taken as that batch's mean."""

from __future__ import annotations

import numpy as np
import pytest

from kflow.components.trainer.strategies.runtime import replica_loss

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")


def focal(y_true, y_pred):
    """keras.io's way of writing a custom loss: one number for the batch (its own reduce_mean)."""
    probabilities = tf.reduce_sum(y_pred * tf.one_hot(tf.cast(tf.reshape(y_true, [-1]), tf.int32), 2), axis=-1)
    return tf.reduce_mean(-((1.0 - probabilities) ** 2.0) * tf.math.log(probabilities + 1e-7))


def test_a_loss_function_that_averages_its_batch_is_that_batchs_mean_not_divided_again():
    """Under the custom loops (the multi-worker and parameter-server strategies) such a loss failed the first step:
    `Invalid value passed for per_example_loss. Expected a tensor with at least rank 1`; `fit` trains with it."""
    from kflow.components.datasets.model_compile import loss_object

    wrapped = loss_object(focal)  # as kflow hands the loops a module's loss (user_module.py: per example)
    wrapped.reduction = None
    y = tf.constant([[0], [1], [1], [0]])
    predictions = tf.constant([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    expected = float(focal(y, predictions))
    np.testing.assert_allclose(float(replica_loss(wrapped, y, predictions, None, global_batch=4)), expected, rtol=1e-6)
    np.testing.assert_allclose(
        float(replica_loss(wrapped, y, predictions, None, global_batch=None)), expected, rtol=1e-6
    )
    # One of two replicas' halves of a global batch of 8: its share of the whole's mean.
    np.testing.assert_allclose(
        float(replica_loss(wrapped, y, predictions, None, global_batch=8)), expected / 2, rtol=1e-6
    )
    # Per-example losses are averaged over the global batch, as before.
    per_example = keras.losses.SparseCategoricalCrossentropy(reduction=None)
    mean = float(keras.losses.SparseCategoricalCrossentropy()(y, predictions))
    np.testing.assert_allclose(float(replica_loss(per_example, y, predictions, None, global_batch=4)), mean, rtol=1e-6)
