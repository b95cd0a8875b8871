"""Your own model: a Python module (`trainer.module`) whose `build_model` replaces the task's registered model.

The contract (docs/your-data.md, "Your own model"):

    def build_model(schema, options) -> keras.Model      # required; compiled or not (kflow compiles it)
    def loss() -> keras.losses.Loss                      # optional; else the task's loss
    def metrics() -> list[keras.metrics.Metric]          # optional; else the task's metrics

`schema` is the TFMD `Schema` proto of the Examples; `options` holds `trainer.model_options` and
what the task learnt from the training split (`Task.model_context()`: for csv the label, the
classes, each feature's kind and statistics). The model takes the task's batches as they are
(csv: a dict {feature: [batch, 1]}, numbers as float32 with NaN when missing, strings as
strings) and returns what the task's loss expects (csv classification: class probabilities;
regression: one number). It trains under every TensorFlow strategy the task trains under.

Before training, the built model is checked against the task (`contract_problem`: its inputs, its outputs'
units, its last activation against the loss) and for what would fail only after training, when the Evaluator
loads the saved model with Keras' safe_mode (`saving_problem`: a `Lambda` layer, a custom class that is not
registered, a config that does not load back). A refusal names the layer and the line of the module that created
it. A binary classification model may end in the usual Keras head, `Dense(1, activation="sigmoid")`: kflow adds
`ClassProbabilities` after it (components/models/heads.py), so the task's loss, metrics, Evaluator and serving
read two class probabilities as from a softmax head, and a loss() of the module gets the one probability.

The module's source, not its path, is what the Trainer gets (`module_source`): the cache key
sees every edit, worker processes and pods import the same code, and a compiled pipeline.yaml
carries it, so no shared volume or image rebuild is needed for it. The Trainer copies it into
the Model's assets (`user_module.py`), so the Evaluator loads a model with the code it was
trained with.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import sys
import traceback
import types
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.artifacts import Model

MODULE_FILE = Model.MODULE_FILE
MODEL_INPUTS_FILE = "model_inputs.json"  # The named inputs a user's model takes, beside its module in the assets.
FIX_LAYER = (
    "write it as a layer class with get_config, registered with @keras.saving.register_keras_serializable() "
    "(docs/your-data.md, 'Your own model')"
)
# The loaded modules' sources, by module name: where a refused layer was created (layer_where).
_SOURCES: dict[str, str] = {}


def read_module_source(module: str) -> str:
    """The source of `module`: a .py file, or an importable `package.module`."""
    path = Path(module).expanduser()
    if path.suffix == ".py" or path.exists():
        if not path.is_file():
            raise ValueError(f"trainer.module: {module} is not a file")
        return path.read_text()
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError) as error:
        raise ValueError(f"trainer.module: cannot import {module!r}: {error}") from error
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise ValueError(f"trainer.module: {module!r} is neither a .py file nor an importable Python module")
    return Path(spec.origin).read_text()


def module_problems(module: str) -> list[str]:
    """Why `module` cannot serve as trainer.module, without running it: unreadable, bad syntax, no build_model."""
    try:
        source = read_module_source(module)
    except ValueError as error:
        return [str(error).removeprefix("trainer.module: ")]
    try:
        tree = ast.parse(source, module)
    except SyntaxError as error:
        return [f"{module} line {error.lineno}: {error.msg}"]
    if not any(isinstance(node, ast.FunctionDef) and node.name == "build_model" for node in tree.body):
        return [f"{module} defines no build_model(schema, options) function"]
    return []


def load_module(source: str, origin: str = MODULE_FILE) -> types.ModuleType:
    """Imports `source` as a module named after its content (the same source is imported once per process)."""
    # Registers the layers kflow adds to a user's model (a sigmoid head's ClassProbabilities) before one loads.
    import kflow.components.models.heads  # noqa: F401

    name = f"kflow_user_module_{hashlib.sha256(source.encode()).hexdigest()[:12]}"
    if name in sys.modules:
        return sys.modules[name]
    module = types.ModuleType(name)
    module.__file__ = origin
    sys.modules[name] = module  # Before exec: decorators such as register_keras_serializable look it up.
    try:
        exec(compile(source, origin, "exec"), module.__dict__)  # noqa: S102 - the user's own model code.
    except Exception:
        del sys.modules[name]
        raise
    if not callable(getattr(module, "build_model", None)):
        del sys.modules[name]
        raise ValueError(f"trainer.module: {origin} defines no build_model(schema, options) function")
    _SOURCES[name] = source
    return module


class UserModuleError(ValueError):
    """The user's module failed or built a model the task cannot train: one line with its file and line."""


def where(error: BaseException | None, module: types.ModuleType) -> str:
    """`trainer.module: my_model.py:LINE`: the user module's deepest frame of `error`'s traceback, else the line
    of its build_model."""
    line = module.build_model.__code__.co_firstlineno
    if error is not None:
        frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == module.__file__]
        if frames:
            line = frames[-1].lineno or line
    return f"trainer.module: {module.__file__}:{line}"


def _calls(module: types.ModuleType, callee: str) -> list[tuple[int, str | None]]:
    """(line, the `name=` it passes) of each call of `callee` (`Dense(…)`, `keras.layers.Dense(…)`) in the module,
    in source order."""
    source = _SOURCES.get(module.__name__)
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
    """The layer that returns the model's one output (None for several outputs)."""
    if len(model.outputs) != 1:
        return None
    history = getattr(model.outputs[0], "_keras_history", None)  # Keras' (operation, node, tensor) of a tensor.
    return history[0] if history else None


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


def contract_problem(model: Any, task: Any, loss: Any = None) -> tuple[str, Any] | None:
    """What the built model cannot do for the task, checked before training, and the layer at fault (None: the
    model as a whole): its named inputs against the features the task feeds (`task.input_features`, where the task
    says), its outputs against the task's classes or single number (`task.output_size`), its last activation
    against what the task's loss, Evaluator and serving read (class probabilities; a number) and against the
    module's own `loss` (from_logits)."""
    features = getattr(task, "input_features", None)
    structure = model.input
    if features is not None and isinstance(structure, dict):
        unknown = [name for name in structure if name not in features]
        if unknown:
            layer = next((each for each in model.layers if type(each).__name__ == "InputLayer"
                          and each.name == getattr(structure[unknown[0]], "name", None)), None)  # fmt: skip
            return (
                f"the model takes the input {unknown[0]!r}, which the data has no feature of "
                f"(features: {', '.join(features)})"
            ), layer
    elif features is not None and len(features) > 1:
        return (
            f"the model takes one unnamed input, but the data has {len(features)} features: build it on a dict of "
            f"keras.Input(name=feature) for the features it uses ({', '.join(features)})"
        ), None
    expected = getattr(task, "output_size", None)
    outputs = model.outputs
    if expected is None or len(outputs) != 1:
        return None
    head = output_layer(model)
    units, activation = outputs[0].shape[-1], activation_of(head)
    named = f"its last layer {head.name!r}" if head is not None else "its output"
    if is_sigmoid_binary_head(model, task):
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
            f'probabilities: give it activation="softmax"'
        ), head
    elif expected == 1 and activation == "softmax":
        return f"{named} ends in a softmax, whose one output is always 1; a regression ends in no activation", head
    from_logits = (loss.get_config() or {}).get("from_logits") if loss is not None else None
    if from_logits and activation in ("softmax", "sigmoid"):
        return (
            f"{named} ends in a {activation} (probabilities) but the module's loss() takes logits "
            "(from_logits=True): drop from_logits"
        ), head
    return None


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


def with_user_module(task_class: type, module: types.ModuleType) -> type:
    """A subclass of `task_class` whose model (and loss and metrics, when the module has them) come from `module`."""
    import keras

    from kflow.components.models.heads import ClassProbabilities

    class UserModuleTask(task_class):
        user_module = module
        model_inputs: list[str] | None = None  # The named inputs the built model takes: the only ones fed.
        saving_checked = False
        sigmoid_head = False  # build_model found Dense(1, activation="sigmoid") on two classes.

        def check_options(self, data_options: Any, model_options: Any) -> None:
            """Options that are not the task's own go to the module's build_model."""

        def build_model(self) -> keras.Model:
            options = {**self.model_options, **self.model_context()}
            try:
                model = module.build_model(self.schema, options)
            except Exception as error:
                raise UserModuleError(f"{where(error, module)}: {type(error).__name__}: {error}") from error
            if not isinstance(model, keras.Model):
                returned = type(model).__name__
                raise UserModuleError(f"{where(None, module)}: build_model returned {returned}, not a Keras model")
            own_loss = module.loss() if hasattr(module, "loss") else None
            checks = [lambda: contract_problem(model, self, own_loss)]
            if not self.saving_checked:  # Once a process: the export builds the same model again.
                checks.append(lambda: saving_problem(model))
            for check in checks:
                found = check()
                if found:
                    problem, layer = found
                    place = layer_where(module, layer, all_layers(model)) if layer is not None else where(None, module)
                    raise UserModuleError(f"{place}: {problem}")
            self.saving_checked = True
            if isinstance(model.input, dict):
                self.model_inputs = list(model.input)
            self.sigmoid_head = is_sigmoid_binary_head(model, self)
            if self.sigmoid_head:
                model = keras.Model(model.input, ClassProbabilities(name="class_probabilities")(model.output),
                                    name=model.name)  # fmt: skip
            return model

        def load_assets(self, assets_dir: Path) -> None:
            super().load_assets(assets_dir)
            recorded = Path(assets_dir) / MODEL_INPUTS_FILE
            if recorded.is_file():
                self.model_inputs = json.loads(recorded.read_text())

        def save_model_inputs(self, assets_dir: Path) -> None:
            if self.model_inputs is not None:
                (Path(assets_dir) / MODEL_INPUTS_FILE).write_text(json.dumps(self.model_inputs) + "\n")

        def dataset(self, *args: Any, **kwargs: Any) -> Any:
            """The task's batches with only the features the model takes: a model that leaves a column out
            (a string one it does not encode) is not handed it, which Keras would try to cast."""
            batches = super().dataset(*args, **kwargs)
            names = self.model_inputs
            if names is None:
                return batches
            return batches.map(lambda x, *rest: ({name: x[name] for name in names}, *rest))

        def loss(self) -> keras.losses.Loss:
            if not hasattr(module, "loss"):
                return super().loss()
            loss = module.loss()
            loss.reduction = None  # The loops average per-example losses over the global batch themselves.
            # A sigmoid head's loss (BinaryCrossentropy) takes the one probability it returns, not the two columns
            # kflow made of it; build_model, which finds the head, runs before the loss is asked for.
            return OnPositiveClass(loss) if self.sigmoid_head else loss

        def metrics(self) -> list[keras.metrics.Metric]:
            return list(module.metrics()) if hasattr(module, "metrics") else super().metrics()

    class OnPositiveClass(keras.losses.Loss):
        """The module's loss on the second class's probability p of [1 - p, p] (a sigmoid head's own output)."""

        def __init__(self, inner: keras.losses.Loss):
            super().__init__(name=inner.name, reduction=None)
            self.inner = inner

        def call(self, y_true, y_pred):
            return self.inner.call(y_true, y_pred[..., 1:])

    UserModuleTask.__name__ = f"{task_class.__name__}WithUserModule"
    UserModuleTask.__qualname__ = UserModuleTask.__name__
    return UserModuleTask
