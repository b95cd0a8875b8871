"""The model registry: the names a pipeline config may give `trainer.model`.

Each name's module has a `build_<name>` factory returning an uncompiled `keras.Model`; its
keyword arguments come from the task (e.g. `num_classes`, `vocabulary_size`, `vocabulary`) and from the config's
`trainer.model_options`. A module may also declare `LAYOUT_MAP`, its default under `keras_model_parallel`. A
model's module is imported when it is built: keras-hub, which `bert_mlm` needs, takes seconds to import, and a
process that trains a convnet has no use for it.

`OPTION_CHECKS` says what a model's options must hold where the factory would fail on them late (a string where a
list goes): the Trainer's settings check them when they are read (`kflow validate`, the Trainer's start), without
importing the model.
"""

from __future__ import annotations

import importlib
import json
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

# keras-hub's BertMaskedLM overrides compile(): Keras warns on every load that it did not compile it, which scoring
# and evaluating never need (the Trainer compiles its own). Set once: catch_warnings is not thread-safe.
warnings.filterwarnings("ignore", message=r"`compile\(\)` was not called as part of model loading")

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
# The models that take an image Transform's learnt pixel scaling (`scaling=`, in place of their own `Rescaling(1/255)`):
# for another model, or a user's `trainer.module`, the standard pipeline learns no scaling (nothing would use it).
SCALED_BY_TRANSFORM = frozenset({"image_convnet", "mnist_convnet"})


def _layer_sizes(value: Any) -> str | None:
    if isinstance(value, list) and all(type(units) is int and units >= 1 for units in value):
        return None
    return "must be a list of positive whole numbers, the units of each hidden layer, e.g. [64, 32]"


def _fraction(value: Any) -> str | None:
    if type(value) in (int, float) and 0 <= value < 1:
        return None
    return "must be a number from 0 up to 1 (the fraction of units dropped)"


# {model: {option: what is wrong with a value, or None}}.
OPTION_CHECKS: dict[str, dict[str, Callable[[Any], str | None]]] = {
    "tabular_mlp": {"hidden_units": _layer_sizes, "dropout": _fraction},
}


def option_problems(model: str | None, options: dict[str, Any]) -> list[tuple[str, str]]:
    """(`model_options.NAME`, `must be … (got VALUE)`) for each option `model` would fail on; `model` None (the
    dataset's default) checks the options against every model that takes them."""
    models = [model] if model else list(OPTION_CHECKS)
    problems = []
    for name, value in options.items():
        for check in (OPTION_CHECKS.get(each, {}).get(name) for each in models):
            problem = check(value) if check else None
            if problem:
                problems.append((f"model_options.{name}", f"{problem} (got {json.dumps(value)})"))
                break
    return problems


def _module(name: str) -> ModuleType:
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; registered models: {', '.join(MODELS)}")
    return importlib.import_module(MODELS[name])


def build_model(name: str, **kwargs) -> keras.Model:
    """Builds the registered model `name`; a `ValueError` lists the known names otherwise."""
    return getattr(_module(name), f"build_{name}")(**kwargs)


# The modules of the layers kflow adds around a model of any task, a user's too: its heads (ClassProbabilities, ...),
# and FillMissing, by which a model of one unnamed input takes a table's numbers (datasets/model_graph.py).
WRAPPER_LAYERS = ("kflow.components.models.heads", "kflow.components.models.tabular_mlp")


def load_trained(keras_file: Any, name: str | None) -> keras.Model:
    """A saved model.keras, loaded in any process: the custom layers of the registered model `name` (and kflow's
    heads) are registered by importing their modules first, as only a process that built the model would have them
    otherwise (a cached Trainer: the Evaluator or BulkInferrer of a later run, a fresh KFP task). A user module's
    layers are registered by loading the module (components/datasets/task.py: task_for_model)."""
    import keras

    if name in MODELS:
        _module(name)
    for wrapper in WRAPPER_LAYERS:  # kflow's layers around any model, a user's too (heads, a table's matrix)
        importlib.import_module(wrapper)
    from pathlib import Path

    from kflow.components.datasets.preprocessing_module import register_preprocessing_layers

    register_preprocessing_layers(Path(keras_file).parent / "assets")  # a transform.module's layers, in its assets
    return keras.models.load_model(keras_file, compile=False)  # every caller predicts or reads weights: no optimizer


def layout_map(name: str | None) -> dict[str, tuple[str | None, ...]]:
    """The model's default LayoutMap under keras_model_parallel (weight-path regex → a mesh axis or None per
    dimension); empty for a model without one, registered or a user's, which then trains with replicated weights."""
    return getattr(_module(name), "LAYOUT_MAP", {}) if name in MODELS else {}


__all__ = ["MODELS", "OPTION_CHECKS", "build_model", "layout_map", "load_trained", "option_problems"]
