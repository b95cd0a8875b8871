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
