"""Output layers kflow adds to a user's model so that it returns what the task's loss, metrics and serving take.

`ClassProbabilities` turns the usual Keras binary head, `Dense(1, activation="sigmoid")` (one probability p of
the second class), into the two class probabilities `[1 - p, p]` a classification task trains on, evaluates and
serves: the sparse categorical cross-entropy of `[1 - p, p]` is the binary cross-entropy of p, so the model learns
exactly what Keras' binary recipe teaches it, and the Evaluator, the serving signature and the BulkInferrer read the
same two columns as from a softmax head.

`PositiveClassProbability` is its mirror for a task that predicts one probability (Quora: is a question
insincere?) and a model ending in keras.io's binary head, `Dense(2, activation="softmax")` (its text classification
with a Transformer): the second column, p, is what that task's binary cross-entropy, metrics and serving read, and
the binary cross-entropy of p is the sparse categorical cross-entropy of the pair.

`on_positive_class` gives the metrics of a module's `metrics()` on a sigmoid head what its model returns, p: keras.io's
binary metrics (`BinaryAccuracy`, `AUC`, `Precision`, ...) read one probability, and fed the two columns they failed
mid-fit with raw TensorFlow errors (`Dimensions must be equal ... [32], [32,2]`). The metrics of class probabilities
(`SparseCategoricalAccuracy`, ...) still read the two columns, as kflow's own. `on_class_pair` is its mirror for a
softmax pair head: its metrics of class probabilities are fed the pair back.

Registered, so a saved model.keras holding either loads with safe_mode on wherever this module is imported
(`user_module.load_module` imports it).
"""

from __future__ import annotations

import keras


@keras.saving.register_keras_serializable(package="kflow")
class ClassProbabilities(keras.layers.Layer):
    """[batch, 1] probabilities of the second class → [batch, 2] probabilities of both."""

    def call(self, inputs):
        return keras.ops.concatenate([1.0 - inputs, inputs], axis=-1)

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], 2)


@keras.saving.register_keras_serializable(package="kflow")
class PositiveClassProbability(keras.layers.Layer):
    """[batch, 2] probabilities of both classes → [batch, 1] the second's."""

    def call(self, inputs):
        return inputs[..., 1:]

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], 1)


class _FedHeadOutput(keras.metrics.Metric):
    """A module's metric fed what it reads of the head's output (`fed`); its name and result its own."""

    def __init__(self, metric: keras.metrics.Metric, **kwargs):
        super().__init__(name=metric.name, dtype=metric.dtype)
        self.metric = metric

    def fed(self, y_pred):
        raise NotImplementedError

    def update_state(self, y_true, y_pred, sample_weight=None):
        return self.metric.update_state(y_true, self.fed(y_pred), sample_weight=sample_weight)

    def result(self):
        return self.metric.result()

    def reset_state(self):
        self.metric.reset_state()

    def get_config(self):
        return {"metric": keras.saving.serialize_keras_object(self.metric)}

    @classmethod
    def from_config(cls, config):
        return cls(keras.saving.deserialize_keras_object(config["metric"]))


@keras.saving.register_keras_serializable(package="kflow")
class OnPositiveClass(_FedHeadOutput):
    """A metric of one probability fed p of the [1 - p, p] kflow made of a sigmoid head."""

    def fed(self, y_pred):
        return y_pred[..., 1:]


@keras.saving.register_keras_serializable(package="kflow")
class OnClassPair(_FedHeadOutput):
    """A metric of class probabilities fed [1 - p, p], the pair a softmax head gave before kflow took its p."""

    def fed(self, y_pred):
        return keras.ops.concatenate([1.0 - y_pred, y_pred], axis=-1)


def of_class_probabilities() -> tuple[type, ...]:
    """Keras' metrics that read a probability per class (kflow's labels: class indices)."""
    m = keras.metrics
    return (m.SparseCategoricalAccuracy, m.SparseTopKCategoricalAccuracy, m.SparseCategoricalCrossentropy,
            m.CategoricalAccuracy, m.TopKCategoricalAccuracy, m.CategoricalCrossentropy, m.CategoricalHinge,
            m.KLDivergence, m.OneHotIoU, m.OneHotMeanIoU, m.FBetaScore)  # fmt: skip


def on_positive_class(metrics: list) -> list:
    """A sigmoid head's metrics: each Keras metric of one probability fed p (OnPositiveClass); the metrics of class
    probabilities, and a name or function Keras' compile resolves by the shapes it sees, as they are."""
    return [
        OnPositiveClass(metric)
        if isinstance(metric, keras.metrics.Metric) and not isinstance(metric, of_class_probabilities())
        else metric
        for metric in metrics
    ]


def on_class_pair(metrics: list) -> list:
    """A softmax pair head's metrics: each Keras metric of class probabilities fed the pair (OnClassPair), which
    fed p alone read one class (`SparseCategoricalAccuracy` of any p: the share of negatives, silently); the metrics
    of one probability read p, as the task's own."""
    return [OnClassPair(metric) if isinstance(metric, of_class_probabilities()) else metric for metric in metrics]
