"""How far a low-precision model's outputs are from its own float32 answers: the serving check's yardstick for it.

A model trained with `trainer.mixed_precision` computes in bfloat16 (float16 on a GPU), which keeps 8 (11)
significant bits. Two runtimes of one such model (Keras' predict, the SavedModel's graph) round in another order,
and their outputs drift apart by far more than float32's `serving_check.TOLERANCE`: logits 1.81 apart at a scale of
17.5 for the shipped WikiText-2 MLM in bfloat16, 0.004 at 0.56 for an untrained one; float32 models, 1e-4 of the
scale at most. So for such a model the check also computes the same examples with a float32 twin of model.keras
(its weights, every layer's policy float32) and allows the serving model `MARGIN` times the distance the model's own
precision puts between its outputs and the twin's, at most `MOST` of the outputs' scale. A model whose export lost its
weights or preprocessing is off by about the outputs' scale, still refused.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np

LOW = ("bfloat16", "float16")
# The serving model's outputs may be this many times as far from model.keras's as those are from float32. Measured
# on the WikiText-2 MLM in bfloat16 (served distance / twin distance): 0.97 untrained, 1.37 after 3 epochs, 2.19 after
# 14 (1.81 apart at logits up to 17.5; its graph rounds where Keras' compiled predict does not).
MARGIN = 4.0
# However far the twin is (a difference that is no rounding, say), never more than this share of the outputs' scale:
# an export that lost its weights is off by about the scale (0.52 of softmax outputs).
MOST = 0.25


def low_compute_dtype(keras_model: Any) -> str | None:
    """The low-precision dtype some layer of `keras_model` computes in ("bfloat16", "float16"), else None."""
    found = {_low(policy.compute_dtype) for policy in _policies(keras_model)} - {None}
    return min(found) if found else None


def float32_twin(keras_model: Any) -> Any:
    """A copy of `keras_model` whose every layer computes in float32, holding its weights (mixed-precision layers
    keep their variables in float32: the weights carry over as they are)."""
    config = _in_float32(keras.saving.serialize_keras_object(keras_model))
    twin = keras.saving.deserialize_keras_object(config)
    twin.set_weights(keras_model.get_weights())
    return twin


def float32_difference(keras_model: Any, batches: list[Any], outputs: np.ndarray) -> float:
    """The largest absolute difference between `outputs` (the model's, on `batches` concatenated, perhaps cut
    short) and its float32 twin's on the same batches."""
    twin = float32_twin(keras_model)
    reference = np.concatenate([np.asarray(twin.predict_on_batch(x), dtype=np.float64) for x in batches])
    reference = reference[: len(outputs)]
    return float(np.max(np.abs(reference - outputs))) if outputs.size else 0.0


def _policies(keras_model: Any) -> list[Any]:
    layers = keras_model._flatten_layers(include_self=True, recursive=True)  # nested models' layers too
    return [layer.dtype_policy for layer in layers]


def _low(dtype: str | None) -> str | None:
    return dtype if dtype in LOW else None


def _in_float32(config: Any) -> Any:
    """A serialized model's config with its low-precision policies and tensor dtypes made float32."""
    if isinstance(config, list):
        return [_in_float32(item) for item in config]
    if not isinstance(config, dict):
        return config
    if config.get("class_name") in ("DTypePolicy", "FloatDTypePolicy"):
        name = config.get("config", {}).get("name", "")
        if name.startswith("mixed_") or name in LOW:
            return "float32"
    return {
        key: "float32" if key == "dtype" and (value in LOW or str(value).startswith("mixed_")) else _in_float32(value)
        for key, value in config.items()
    }
