"""The model registry: the names a pipeline config may give `trainer.model`.

Each name's module has a `build_<name>` factory returning an uncompiled `keras.Model`; its
keyword arguments come from the task (e.g. `num_classes`, `vocabulary_size`, `vocabulary`) and from the config's
`trainer.model_options`. A module may also declare `LAYOUT_MAP`, its default under `keras_model_parallel`. A
model's module is imported when it is built: keras-hub, which `bert_mlm` needs, takes seconds to import, and a
process that trains a convnet has no use for it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import keras

# {name: module}, whole module names: a component's code version follows those it finds in string literals.
MODELS = {
    "bert_mlm": "kflow.components.models.bert_mlm",
    "image_convnet": "kflow.components.models.image_convnet",
    "mnist_convnet": "kflow.components.models.mnist_convnet",
    "tabular_mlp": "kflow.components.models.tabular_mlp",
    "text_classifier": "kflow.components.models.text_classifier",
}


def _module(name: str) -> ModuleType:
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; registered models: {', '.join(MODELS)}")
    return importlib.import_module(MODELS[name])


def build_model(name: str, **kwargs) -> keras.Model:
    """Builds the registered model `name`; a `ValueError` lists the known names otherwise."""
    return getattr(_module(name), f"build_{name}")(**kwargs)


def layout_map(name: str | None) -> dict[str, tuple[str | None, ...]]:
    """The model's default LayoutMap under keras_model_parallel (weight-path regex → a mesh axis or None per
    dimension); empty for a model without one, registered or a user's, which then trains with replicated weights."""
    return getattr(_module(name), "LAYOUT_MAP", {}) if name in MODELS else {}


__all__ = ["MODELS", "build_model", "layout_map"]
