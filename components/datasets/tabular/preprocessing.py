"""The tabular preprocessing as a Keras model of its own: raw features in, model inputs out.

Built from the plan's state (components/datasets/tabular/plan.py: the Transform's analyzers, or the task's own
pass) passed to each layer's constructor, never learnt by `adapt`: `FillMissing` and `Normalization(mean=,
variance=)` for a number, `StringLookup(vocabulary=)` one-hot for a category, `TextVectorization(vocabulary=)`
multi-hot for free text. Saved in the Keras format, it loads with `safe_mode=True` (no lambda: every layer is
Keras' own or kflow's registered `FillMissing`), and a model built on it (`tabular_mlp.build_tabular_mlp_on`)
embeds it, so the Trainer, the Evaluator and the serving SavedModel apply the same preprocessing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import keras

from kflow.components.models.tabular_mlp import FillMissing, layer_name

GRAPH_MODEL_FILE = "preprocessing.keras"  # the Transform's model, as a Model's assets hold it


def build_preprocessing(features: Sequence[dict[str, Any]]) -> keras.Model:
    """{feature: [batch, 1] raw value} → {feature: [batch, k] float32}, one output per planned feature."""
    if not features:
        raise ValueError("the tabular preprocessing needs at least one feature besides the label")
    inputs, outputs, taken = {}, {}, set()
    for spec in features:
        name, kind = spec["name"], spec["kind"]
        safe = layer_name(name, taken)
        if kind == "numeric":
            inputs[name] = keras.Input(shape=(1,), dtype="float32", name=safe)
            filled = FillMissing(spec["mean"], name=f"fill_{safe}")(inputs[name])
            normalise = keras.layers.Normalization(mean=spec["mean"], variance=spec["variance"], name=f"norm_{safe}")
            outputs[name] = normalise(filled)
        elif kind == "categorical":
            inputs[name] = keras.Input(shape=(1,), dtype="string", name=safe)
            lookup = keras.layers.StringLookup(
                vocabulary=list(spec["vocabulary"]),
                num_oov_indices=int(spec.get("oov_buckets", 1)),
                output_mode="one_hot",
                name=f"lookup_{safe}",
            )
            outputs[name] = lookup(inputs[name])
        elif kind == "text":
            inputs[name] = keras.Input(shape=(1,), dtype="string", name=safe)
            vectorize = keras.layers.TextVectorization(
                vocabulary=list(spec["vocabulary"]), output_mode="multi_hot", name=f"words_{safe}"
            )
            outputs[name] = keras.layers.Flatten(name=f"flat_{safe}")(vectorize(inputs[name]))
        else:
            raise ValueError(f"feature {name!r}: unknown kind {kind!r} (numeric, categorical, text)")
    return keras.Model(inputs, outputs, name="preprocessing")


def load_preprocessing(path: str | Path) -> keras.Model:
    """The saved preprocessing model, loaded as safe_mode allows (no code is deserialized)."""
    return keras.saving.load_model(str(path), compile=False, safe_mode=True)
