"""Several steps per call of Keras' `fit` under a tf.distribute strategy of several replicas (steps_per_execution).

Keras' own functions for `steps_per_execution` > 1 (a `tf.while_loop` over optional batches whose outputs' spec is
set while it is traced) fail under a MirroredStrategy of 2 replicas: "You must feed a value for placeholder tensor"
(keras-team/keras#19246, still so in Keras 3.15). kflow's batches let simpler functions do it: the train batches
repeat and an epoch is whole calls (training.split_sizes), so a train call runs exactly `steps` steps; a
validation call runs up to `steps`, as many as are left of the split's one pass (counted: its batches repeat
too). A call of several steps is what makes a small model fast: one step a call, the Python and dispatch around it
cost as much as the step itself here.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras.src.backend.tensorflow.trainer import reduce_per_replica


def run_steps_per_call(keras_model: keras.Model, steps: int, validation_steps: int | None) -> None:
    """Gives a compiled `keras_model` (built under its tf.distribute strategy) a train function of `steps` steps a
    call and a test function of up to `steps` a call, `validation_steps` in all (each validation of `fit`: the
    split's one pass)."""
    strategy = keras_model.distribute_strategy

    def on_replicas(step_function):
        def one_step(data):
            outputs = strategy.run(step_function, args=(data,))
            return reduce_per_replica(outputs, strategy, reduction="auto")

        return tf.function(one_step, reduce_retracing=True, jit_compile=keras_model.jit_compile)

    train_step = on_replicas(keras_model.train_step)
    test_step = on_replicas(keras_model.test_step)

    @tf.function(reduce_retracing=True)
    def train_function(iterator) -> dict[str, Any]:
        outputs = train_step(next(iterator))
        for _ in tf.range(steps - 1):
            outputs = train_step(next(iterator))
        return outputs

    @tf.function(reduce_retracing=True)
    def test_steps(iterator, count: tf.Tensor) -> None:
        for _ in tf.range(count):
            test_step(next(iterator))

    validation = _Validation()

    def test_function(iterator) -> dict[str, Any]:
        # Each call runs up to `steps` of the pass's `validation_steps`, counted here on the endless batches `fit`
        # reads (as with one step a call): at the end of a finite split tf.distribute gives a replica an empty
        # batch, where a 2-replica convnet failed ("input depth must be evenly divisible by filter depth: 1 vs 32").
        if iterator is not validation.iterator:  # Keras starts each validation pass on an iterator of its own.
            validation.iterator, validation.done = iterator, 0
        count = min(steps, validation_steps - validation.done)
        if count <= 0:
            raise StopIteration
        test_steps(iterator, tf.constant(count))
        validation.done += count
        # What Keras' evaluate keeps at the end anyway (Trainer._get_metrics_result_or_logs): the metrics so far.
        return keras_model.get_metrics_result()

    keras_model.train_function = train_function
    if validation_steps:
        keras_model.test_function = test_function


class _Validation:
    iterator: Any = None
    done = 0
