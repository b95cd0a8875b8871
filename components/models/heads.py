"""Output layers kflow adds to a user's model so that it returns what the task's loss, metrics and serving take.

`ClassProbabilities` turns the usual Keras binary head, `Dense(1, activation="sigmoid")` (one probability p of
the second class), into the two class probabilities `[1 - p, p]` a classification task trains on, evaluates and
serves: the sparse categorical cross-entropy of `[1 - p, p]` is the binary cross-entropy of p, so the model learns
exactly what Keras' binary recipe teaches it, and the Evaluator, the serving signature and the BulkInferrer read the
same two columns as from a softmax head. Registered, so a saved model.keras holding it loads with safe_mode on
wherever this module is imported (`user_module.load_module` imports it).
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
