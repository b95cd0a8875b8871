"""The model registry: the names a pipeline config may give `trainer.model`.

Each entry is a factory returning an uncompiled `keras.Model`; its keyword arguments
come from the task (e.g. `num_classes`, `vocabulary_size`, `vocabulary`) and from the
config's `trainer.model_options`.
"""

from __future__ import annotations

from collections.abc import Callable

import keras

from kflow.components.models import bert_mlm, image_convnet, mnist_convnet
from kflow.components.models.bert_mlm import build_bert_mlm
from kflow.components.models.image_convnet import build_image_convnet
from kflow.components.models.mnist_convnet import build_mnist_convnet
from kflow.components.models.tabular_mlp import build_tabular_mlp
from kflow.components.models.text_classifier import build_text_classifier

MODELS: dict[str, Callable[..., keras.Model]] = {
    "mnist_convnet": build_mnist_convnet,
    "bert_mlm": build_bert_mlm,
    "text_classifier": build_text_classifier,
    "tabular_mlp": build_tabular_mlp,
    "image_convnet": build_image_convnet,
}

# keras_model_parallel's default LayoutMap of each model (weight-path regex → mesh axis or None per
# dimension); a model without one trains with replicated weights unless trainer.layout_map is set.
LAYOUT_MAPS: dict[str, dict[str, tuple[str | None, ...]]] = {
    "mnist_convnet": mnist_convnet.LAYOUT_MAP,
    "bert_mlm": bert_mlm.LAYOUT_MAP,
    "image_convnet": image_convnet.LAYOUT_MAP,
}


def build_model(name: str, **kwargs) -> keras.Model:
    """Builds the registered model `name`; a `ValueError` lists the known names otherwise."""
    factory = MODELS.get(name)
    if factory is None:
        raise ValueError(f"unknown model {name!r}; registered models: {', '.join(sorted(MODELS))}")
    return factory(**kwargs)


__all__ = [
    "LAYOUT_MAPS",
    "MODELS",
    "build_bert_mlm",
    "build_image_convnet",
    "build_mnist_convnet",
    "build_model",
    "build_tabular_mlp",
    "build_text_classifier",
]
