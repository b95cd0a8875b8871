"""The layers of a traced preprocessing_fn that its saved preprocessing model could not load where it is used (the
Transform's own check, the Trainer, `kflow predict`, a pod, serving), refused when the function is traced, before
any Beam pass: a `keras.layers.Lambda` (Keras' safe_mode loads no Python function), a layer class Keras cannot find
by its registered name, one whose config does not load back.

A registered class of the module's own is fine: the module travels beside the preprocessing model and in the
Model's assets, and is imported, registering it, before a model built on it loads
(components/datasets/preprocessing_module.py).
"""

from __future__ import annotations

import ast
from typing import Any

import keras

from kflow.components.datasets.model_checks import all_layers

WAY_OUT = (
    "use keras.ops in preprocessing_fn directly, or a keras.layers.Layer subclass of your module decorated with "
    "@keras.saving.register_keras_serializable() (docs/transform.md, 'A layer of your own')"
)


def unsavable_layer(inputs: dict[str, Any], outputs: dict[str, Any], source: str) -> tuple[str, int | None] | None:
    """(why, the module's line that made the layer) of the first such layer, in the module's order, among those
    between `inputs` and `outputs`; the line None when `source` has no call of its class. None when all load."""
    refused = []
    for layer in all_layers(keras.Model(inputs, outputs)):
        why = _why(layer)
        if why is not None:
            lines = calls_of(source, "Lambda" if isinstance(layer, keras.layers.Lambda) else type(layer).__name__)
            refused.append((lines[0] if lines else None, why))
    if not refused:
        return None
    line, why = min(refused, key=lambda found: (found[0] is None, found[0] or 0))
    return why, line


def _why(layer: Any) -> str | None:
    if isinstance(layer, keras.layers.Lambda):
        return (
            "a keras.layers.Lambda is not saved with the preprocessing model (Keras' safe_mode loads no Python "
            f"function, and the Trainer, kflow predict and serving load it safely): {WAY_OUT}"
        )
    kind = type(layer)
    if kind.__module__.split(".")[0] == "keras":
        return None
    if keras.saving.get_registered_object(keras.saving.get_registered_name(kind)) is not kind:
        return (
            f"the layer class {kind.__name__} is not registered with Keras, which cannot find it by name when the "
            "saved preprocessing model loads: decorate it with @keras.saving.register_keras_serializable() (and "
            "give it a get_config returning its __init__ arguments, if it takes any; docs/transform.md, 'A layer "
            "of your own')"
        )
    try:
        keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer), safe_mode=True)
    except Exception as error:  # noqa: BLE001 - whatever the user's get_config/from_config raise is the refusal.
        said = " ".join(str(error).split())  # Keras' first sentence, on one line
        said = said[: said.find(". ") + 1] if ". " in said else said
        return (
            f"the layer class {kind.__name__} does not load back from its saved config ({type(error).__name__}: "
            f"{said}): give it a get_config returning its __init__ arguments"
        )
    return None


def calls_of(source: str, callee: str) -> list[int]:
    """The lines of the calls of `callee` (`TextVectorization(…)`, `keras.layers.TextVectorization(…)`) in source."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and callee in (getattr(node.func, "attr", None), getattr(node.func, "id", None))
    )
