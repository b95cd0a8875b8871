"""trainer.warm_start: the new model starts from the weights of a compatible earlier one.

Compatible means the same model, fed the same way: the same inputs (names, types, shapes), the same layers in
the same order with weights of the same shapes, and the same vocabularies in the lookup layers (a category
added by the new data changes what each one-hot column means, even where the shapes happen to agree). The first
difference is the one line of the error. A numeric feature's normalisation is not compared: it is the new data's
(the earlier weights then adapt to it within the first epochs), as a model trained from scratch would have it.

The earlier model is resolved when the run starts (pipeline/app/warm_start.py) into `warm_start_model_uri`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from kflow.components.models import load_trained
from kflow.pipeline.dsl.artifacts import Model

log = logging.getLogger("kflow.trainer")


def warm_start(keras_model: Any, config: Any, model_name: str | None) -> str | None:
    """Copies the earlier model's weights into `keras_model`; returns its folder, or None (from scratch)."""
    if not config.warm_start:
        return None
    uri = config.warm_start_model_uri
    if uri is None:
        if config.warm_start != "latest_blessed":
            raise ValueError(f"trainer.warm_start: run {config.warm_start!r} was not resolved to a model")
        log.info("train: from scratch (trainer.warm_start: latest_blessed): %s", config.warm_start_reason)
        return None
    earlier = load_trained(Model(uri).keras_file, model_name)
    problem = incompatibility(earlier, keras_model)
    if problem:
        raise ValueError(f"trainer.warm_start: the model at {uri} is not compatible: {problem}")
    for layer, before in zip(keras_model.layers, earlier.layers, strict=True):
        if before.weights:
            layer.set_weights(before.get_weights())
    log.info("train: warm-started from %s (trainer.warm_start: %s)", uri, config.warm_start)
    return str(Path(uri))


def _inputs(model: Any) -> list[tuple[str, str, tuple]]:
    return [(tensor.name, str(tensor.dtype), tuple(tensor.shape)) for tensor in model.inputs]


def incompatibility(earlier: Any, model: Any) -> str | None:
    """The first difference that keeps `earlier`'s weights from meaning the same in `model`, or None."""
    before, now = _inputs(earlier), _inputs(model)
    if before != now:
        gone = [name for name, *_ in before if name not in {n for n, *_ in now}]
        new = [name for name, *_ in now if name not in {n for n, *_ in before}]
        if gone or new:
            return (
                f"the inputs differ (earlier only: {', '.join(gone) or 'none'}; now only: {', '.join(new) or 'none'})"
            )
        old, new = next((b, n) for b, n in zip(before, now, strict=True) if b != n)
        return f"input {new[0]!r} differs (earlier {old[1]} {old[2]}, now {new[1]} {new[2]})"
    if len(earlier.layers) != len(model.layers):
        return f"the earlier model has {len(earlier.layers)} layers, this one {len(model.layers)}"
    for old, new in zip(earlier.layers, model.layers, strict=True):
        if type(old).__name__ != type(new).__name__:
            return (
                f"layer {new.name!r} is a {type(new).__name__}, the earlier model's {old.name!r} a {type(old).__name__}"
            )
        if hasattr(new, "get_vocabulary") and list(old.get_vocabulary()) != list(new.get_vocabulary()):
            old_values, new_values = list(map(str, old.get_vocabulary())), list(map(str, new.get_vocabulary()))
            added = [value for value in new_values if value not in set(old_values)]
            if added:
                return f"layer {new.name!r} has new values in its vocabulary: {', '.join(added[:5])}"
            return f"layer {new.name!r} has another vocabulary: {new_values[:6]}, the earlier model's {old_values[:6]}"
        old_shapes = [tuple(weight.shape) for weight in old.weights]
        new_shapes = [tuple(weight.shape) for weight in new.weights]
        if old_shapes != new_shapes:
            return f"layer {new.name!r} has weights of shapes {new_shapes}, the earlier model's {old_shapes}"
    return None
