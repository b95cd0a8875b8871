"""The checks of a user's model (`trainer.module`) before its first training step, each naming the layer at fault and
the line of the module that created it (components/datasets/user_module.py runs them):

- `contract_problem`: the model against the task: its named inputs, the image shape its input declares
  (`image_input_problem`), its outputs' units, its last activation against the loss (a binary task may end in
  `Dense(1, activation="sigmoid")`: `is_sigmoid_binary_head`);
- `saving_problem`: what would fail only after training, when the Evaluator loads the saved model with Keras'
  safe_mode: a `Lambda` layer, a custom class that is not registered, a config that does not load back.
"""

from __future__ import annotations

import ast
import types
from typing import Any

from kflow.components.datasets.model_compile import takes_logits

FIX_LAYER = (
    "write it as a layer class with get_config, registered with @keras.saving.register_keras_serializable() "
    "(docs/your-data.md, 'Your own model')"
)
# The loaded user modules' sources, by module name (user_module.load_module): where a refused layer was created.
SOURCES: dict[str, str] = {}


def _calls(module: types.ModuleType, callee: str) -> list[tuple[int, str | None]]:
    """(line, the `name=` it passes) of each call of `callee` (`Dense(…)`, `keras.layers.Dense(…)`) in the module,
    in source order."""
    source = SOURCES.get(module.__name__)
    if source is None:
        return []
    calls = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if called == callee:
            named = [kw.value.value for kw in node.keywords if kw.arg == "name" and isinstance(kw.value, ast.Constant)]
            calls.append((node.lineno, named[0] if named else None))
    return sorted(calls)


def layer_where(module: types.ModuleType, layer: Any, layers: list[Any]) -> str:
    """`trainer.module: my_model.py:LINE` of the call that created `layer`: the call of its class that gives its
    name; else the call in the same place among the calls of its class as the layer among the model's `layers` of
    that class (the last call for a later layer: a loop's layers share a line, the head comes after them); else
    the line of build_model. Keras keeps no creation site, so the module's own source is read."""
    kind = type(layer).__name__
    calls = _calls(module, "Input" if kind == "InputLayer" else kind)
    named = [line for line, name in calls if name == layer.name]
    if named:
        line = named[0]
    elif calls:
        same = [each for each in layers if type(each).__name__ == kind]
        place = next((index for index, each in enumerate(same) if each is layer), 0)
        line = calls[min(place, len(calls) - 1)][0]
    else:
        line = module.build_model.__code__.co_firstlineno
    return f"trainer.module: {module.__file__}:{line}"


def all_layers(model: Any) -> list[Any]:
    """The model's layers, those of nested models and layers included, in the model's order."""
    found = []
    for layer in model.layers:
        found.append(layer)
        found += all_layers(layer) if getattr(layer, "layers", None) else []
    return found


def output_layer(model: Any) -> Any | None:
    """The layer that returns the model's one output (None for several outputs); inside a nested model that returns
    it (a Sequential kflow made functional, model_graph.py), that model's own last layer."""
    import keras

    if len(model.outputs) != 1:
        return None
    history = getattr(model.outputs[0], "_keras_history", None)  # Keras' (operation, node, tensor) of a tensor.
    layer = history[0] if history else None
    if isinstance(layer, keras.Sequential) and layer.layers:
        return output_layer(layer) if has_outputs(layer) else layer.layers[-1]
    if isinstance(layer, keras.Model) and has_outputs(layer):
        return output_layer(layer)
    return layer


def has_outputs(model: Any) -> bool:
    """Whether the model has a graph's outputs (a functional model, a built Sequential); not a subclassed model."""
    try:
        return bool(model.outputs)
    except (AttributeError, ValueError):
        return False


def activation_of(layer: Any) -> str | None:
    """The name of the activation `layer` ends in (`softmax`, `sigmoid`, `linear`, …); None when unknown (a layer
    without one, a custom function)."""
    import keras

    if isinstance(layer, keras.layers.Softmax):
        return "softmax"
    activation = getattr(layer, "activation", None)
    if not callable(activation):
        return None
    try:
        name = keras.activations.serialize(activation)
    except (ValueError, TypeError):  # Not one of Keras' own: nothing to compare it with.
        return None
    return name if isinstance(name, str) else None


def is_sigmoid_binary_head(model: Any, task: Any) -> bool:
    """The usual Keras binary head, `Dense(1, activation="sigmoid")`, on a task of two classes."""
    outputs = model.outputs
    return (
        getattr(task, "output_size", None) == 2
        and len(outputs) == 1
        and outputs[0].shape[-1] == 1
        and activation_of(output_layer(model)) == "sigmoid"
    )


def is_softmax_pair_head(model: Any, task: Any) -> bool:
    """keras.io's binary head, `Dense(2, activation="softmax")`, on a task that predicts one probability (Quora)."""
    outputs = model.outputs
    return (
        getattr(task, "predicts_probability", False)
        and len(outputs) == 1
        and outputs[0].shape[-1] == 2
        and activation_of(output_layer(model)) == "softmax"
    )


def contract_problem(model: Any, task: Any, loss: Any = None) -> tuple[str, Any] | None:
    """What the built model cannot do for the task, checked before training, and the layer at fault (None: the
    model as a whole): its named inputs against the features the task feeds (`task.input_features`, where the task
    says), its outputs against the task's classes or single number (`task.output_size`), its last activation
    against what the task's loss, Evaluator and serving read (class probabilities; a number) and against the
    module's own `loss`, its loss() or the one build_model compiled the model with (from_logits)."""
    found = image_input_problem(model, task)
    if found:
        return found
    features = getattr(task, "input_features", None)
    structure = model.input
    if features is not None and isinstance(structure, dict):
        unknown = [name for name in structure if name not in features]
        if unknown:
            layer = next((each for each in model.layers if type(each).__name__ == "InputLayer"
                          and each.name == getattr(structure[unknown[0]], "name", None)), None)  # fmt: skip
            column = _column_named(task, unknown[0])
            hint = (f": key the inputs dict by the column, {column!r} (feature[\"name\"]); feature[\"input_name\"] is "
                    "the keras.Input's name= only") if column else ""  # fmt: skip
            return (
                f"the model takes the input {unknown[0]!r}, which the data has no feature of "
                f"(features: {', '.join(features)}){hint}"
            ), layer
    elif features is not None and len(features) > 1:
        return (
            f"the model takes one unnamed input, but the data has {len(features)} features: build it on a dict of "
            f"keras.Input(name=feature) for the features it uses ({', '.join(features)})"
        ), None
    expected = getattr(task, "output_size", None)
    outputs = model.outputs
    if expected is not None and len(outputs) != 1:
        return (
            f"the model has {len(outputs)} outputs; kflow trains, evaluates and serves a model of one output, "
            "the task's: keep the one head"
        ), None
    if expected is None:
        return None
    head = output_layer(model)
    units, activation = outputs[0].shape[-1], activation_of(head)
    named = f"its last layer {head.name!r}" if head is not None else "its output"
    if getattr(task, "predicts_probability", False):  # one probability, p of the positive class
        if not (is_softmax_pair_head(model, task) or (units == 1 and activation == "sigmoid")):
            given = f"{units} value(s) a record" if units is not None else f"outputs of shape {outputs[0].shape}"
            given += f" by a {activation}" if activation else ""
            return (
                f"{named} gives {given}; the task predicts the probability of its positive class: end in "
                'Dense(1, activation="sigmoid") or Dense(2, activation="softmax")'
            ), head
    elif is_sigmoid_binary_head(model, task):
        pass  # Trained as the two class probabilities [1 - p, p] (with_user_module).
    elif units is not None and units != expected:
        what = f"{expected} classes" if expected > 1 else "one number (a regression)"
        hint = ""
        if expected > 1:
            binary = ' or Dense(1, activation="sigmoid")' if expected == 2 else ""
            hint = f': end in Dense({expected}, activation="softmax"){binary}'
        return f"the model outputs {units} value(s) a record; the task predicts {what}{hint}", head
    elif expected > 1 and activation not in (None, "softmax"):
        return (
            f"{named} ends in activation {activation!r}; the task's loss, the Evaluator and serving read class "
            f'probabilities: give it activation="softmax" (or, to train on logits, a loss with from_logits=True)'
        ), head
    elif expected == 1 and activation == "softmax":
        return f"{named} ends in a softmax, whose one output is always 1; a regression ends in no activation", head
    from_logits = takes_logits(loss)
    if from_logits and activation in ("softmax", "sigmoid"):
        return (
            f"{named} ends in a {activation} (probabilities) but the module's loss takes logits "
            "(from_logits=True): drop from_logits"
        ), head
    return None


def image_input_problem(model: Any, task: Any) -> tuple[str, Any] | None:
    """A model of one input whose declared shape is not the task's images' (keras.io's MNIST convnet, its
    `keras.Input(shape=(28, 28, 1))`, on a folder of 32×32 images), and its Input layer; compared channels last, as
    Keras adds a grey image's trailing 1. Before: Keras' `expected shape=(None, 28, 28, 1), found shape=(None, 32,
    32)` at the first step. The size is the data's: `kflow validate`, before any data step, cannot know it."""
    given = getattr(task, "image_shape", None)
    if given is None or isinstance(model.input, dict) or len(model.inputs) != 1:
        return None
    declared = tuple(model.inputs[0].shape[1:])
    wanted, given = _channels_last(declared), _channels_last(tuple(given))
    if len(wanted) == len(given) and all(w is None or w == g for w, g in zip(wanted, given, strict=True)):
        return None
    layer = next((each for each in all_layers(model) if type(each).__name__ == "InputLayer"), None)
    fix = 'build it as keras.Input(shape=options["image_shape"])'
    if getattr(task, "name", None) == "images" and len(wanted) == 3 and None not in wanted:
        made = f"size: [{wanted[0]}, {wanted[1]}]" + (f", channels: {wanted[2]}" if wanted[2] != given[2] else "")
        fix += f", or have the images made {_dims(wanted)} (data.image: {{{made}}} in the config)"
    return (
        f"the model's input takes images of {_dims(wanted)}; this data's are {_dims(given)} "
        f'(options["image_shape"]: {list(given)}): {fix}'
    ), layer


def _column_named(task: Any, input_name: str) -> str | None:
    """The column whose safe Keras name (options["features"]'s input_name) is `input_name`, where it differs (a user
    trial keyed wine's inputs dict by input_name: 'od280_od315_of_diluted_wines' for 'od280/od315_of_diluted_wines')."""
    try:
        features = task.model_context().get("features") or []
    except Exception:  # a task with no such context, or not prepared: no hint
        return None
    return next((f["name"] for f in features if f.get("input_name") == input_name and f["name"] != input_name), None)


def _channels_last(shape: tuple) -> tuple:
    """(height, width) → (height, width, 1), as Keras takes grey images; any other shape as it is."""
    return (*shape, 1) if len(shape) == 2 else shape


def _dims(shape: tuple) -> str:
    return "×".join("?" if dim is None else str(dim) for dim in shape)


def saving_problem(model: Any) -> tuple[str, Any] | None:
    """Why the trained model could not be loaded back by the Evaluator (Keras' safe_mode, the module imported),
    and the layer at fault: a `Lambda` layer, a custom class Keras does not know by its registered name, or a
    config that does not deserialise. Checked on the built model, before the first step."""
    import keras

    layers = all_layers(model)
    for layer in layers:
        if isinstance(layer, keras.layers.Lambda):
            return (
                f"layer {layer.name!r} is a keras.layers.Lambda, whose Python function a saved model cannot load "
                f"safely (Keras' safe_mode), so the Evaluator and serving could not load the trained model: "
                f"{FIX_LAYER}"
            ), layer
    for layer in [model, *layers]:
        kind = type(layer)
        if kind.__module__.split(".")[0] == "keras":
            continue
        registered = keras.saving.get_registered_name(kind)
        if keras.saving.get_registered_object(registered) is not kind:
            what = "model" if layer is model else "layer"
            return (
                f"{what} {layer.name!r} is of the class {kind.__name__}, which Keras cannot find by name when the "
                f"saved model loads: register it with @keras.saving.register_keras_serializable() (with get_config "
                f"for its arguments)"
            ), (None if layer is model else layer)
    failure = _load_back_failure(model)
    if failure is None:
        return None
    culprit = None
    for layer in layers:  # The first layer that does not load back on its own is the one to name.
        own = _load_back_failure(layer)
        if own is not None:
            culprit, failure = layer, own
            break
    lines = str(failure).strip().splitlines()
    subject = f"layer {culprit.name!r}" if culprit is not None else "the model"
    return (
        f"{subject} does not load back from its saved config, so the Evaluator could not load the trained model "
        f"({type(failure).__name__}: {lines[0] if lines else ''}): give its class a get_config returning its "
        "__init__ arguments"
    ), culprit


def _load_back_failure(layer: Any) -> Exception | None:
    """The error of serialising `layer` and deserialising it with safe_mode on, as a saved model loads; None when
    it loads back."""
    import keras

    try:
        keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer), safe_mode=True)
    except Exception as error:  # noqa: BLE001 - whatever the user's get_config/from_config raise is the refusal.
        return error
    return None
