"""The model registry: the names a pipeline config may give `trainer.model`.

Each entry is a factory `build(num_classes=...) -> keras.Model` returning an
uncompiled model that takes uint8 images; the trainer compiles it.
"""

from __future__ import annotations

from collections.abc import Callable

import keras

from components.trainer.models.mnist_convnet import build_mnist_convnet

MODELS: dict[str, Callable[..., keras.Model]] = {
    "mnist_convnet": build_mnist_convnet,
}


def build_model(name: str, **kwargs) -> keras.Model:
    """Builds the registered model `name`; a `ValueError` lists the known names otherwise."""
    factory = MODELS.get(name)
    if factory is None:
        raise ValueError(f"unknown model {name!r}; registered models: {', '.join(sorted(MODELS))}")
    return factory(**kwargs)


__all__ = ["MODELS", "build_model", "build_mnist_convnet"]
