"""The tabular preprocessing as a Keras model of its own: raw features in, model inputs out.

Built from the plan's state (components/datasets/tabular/plan.py: the Transform's analyzers, or the task's own
pass) passed to each layer's constructor, never learnt by `adapt`: `FillMissing` and `Normalization(mean=,
variance=)` for a number, `StringLookup(vocabulary=)` one-hot for a category, `TextVectorization(vocabulary=)`
multi-hot for free text. Saved in the Keras format, it loads with `safe_mode=True` (no lambda: every layer is
Keras' own or kflow's registered `FillMissing` and `CodeOneHot`), and a model built on it
(`tabular_mlp.build_tabular_mlp_on`) embeds it, so the Trainer, the Evaluator and the serving SavedModel apply the
same preprocessing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import keras

from kflow.components.datasets.preprocessing_module import register_preprocessing_layers
from kflow.components.models.tabular_mlp import encode_features

GRAPH_MODEL_FILE = "preprocessing.keras"  # the Transform's model, as a Model's assets hold it


def build_preprocessing(features: Sequence[dict[str, Any]]) -> keras.Model:
    """{feature: [batch, 1] raw value} → {feature: [batch, k] float32}, one output per planned feature."""
    inputs, outputs = encode_features(features, "the tabular preprocessing")
    return keras.Model(inputs, outputs, name="preprocessing")


def load_preprocessing(path: str | Path) -> keras.Model:
    """The saved preprocessing model, loaded as safe_mode allows (no code is deserialized); the layers of the
    transform.module saved beside it registered first."""
    register_preprocessing_layers(Path(path).parent)
    return keras.saving.load_model(str(path), compile=False, safe_mode=True)
