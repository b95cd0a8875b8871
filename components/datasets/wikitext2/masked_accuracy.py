"""The masked LM's training metric: accuracy over every masked token of a pass.

Keras' `SparseCategoricalAccuracy` with `[batch, slots]` weights averages each line's slots first
(keras/src/metrics/reduction_metrics.py, `reduce_to_samplewise_values`), so a pass's figure weighs each
batch by 1 / its slot count; exact while every batch has `mask_selection_length` slots, not once the
task cuts each batch to its most masked tokens (task.py). This metric sums hits and weights over all
slots: the same figure as Keras' with full batches, and the Evaluator's (metrics.py).
"""

from __future__ import annotations

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kflow")
class MaskedAccuracy(keras.metrics.Metric):
    def __init__(self, name: str = "masked_accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.hits = self.add_variable(shape=(), initializer="zeros", name="hits")
        self.slots = self.add_variable(shape=(), initializer="zeros", name="slots")

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        predicted = ops.argmax(y_pred, axis=-1)
        hits = ops.cast(ops.equal(ops.cast(predicted, "int32"), ops.cast(y_true, "int32")), self.dtype)
        weights = ops.ones_like(hits) if sample_weight is None else ops.cast(sample_weight, self.dtype)
        self.hits.assign_add(ops.sum(hits * weights))
        self.slots.assign_add(ops.sum(weights))

    def result(self):
        return ops.divide_no_nan(self.hits, self.slots)
