"""Your own model: a Python module (`trainer.module`) whose `build_model` replaces the task's registered model.

The contract (docs/your-data.md, "Your own model"):

    def build_model(schema, options) -> keras.Model      # required; compiled or not (kflow compiles it)
    def loss() -> keras.losses.Loss                      # optional (or a function f(y_true, y_pred)); else the
                                                         # compiled model's loss, or the task's
    def metrics() -> list[keras.metrics.Metric]          # optional; else the task's metrics

`schema` is the TFMD `Schema` proto of the Examples; `options` holds `trainer.model_options` and
what the task learnt from the training split (`Task.model_context()`: for csv the label, the
classes, each feature's kind and statistics). The model takes the task's batches as they are
(csv: a dict {feature: [batch, 1]}, numbers as float32 with NaN when missing, strings as
strings) and returns what the task's loss expects (csv classification: class probabilities;
regression: one number). It trains under every TensorFlow strategy the task trains under.

A `keras.Sequential` or a subclassed model is made functional first (model_graph.py: kflow reads a model's graph).
Before training, the built model is checked against the task (`contract_problem`: its inputs, its outputs'
units, its last activation against the loss) and for what would fail only after training, when the Evaluator
loads the saved model with Keras' safe_mode (`saving_problem`: a `Lambda` layer, a custom class that is not
registered, a config that does not load back). A refusal names the layer and the line of the module that created
it. A binary classification model may end in the usual Keras head, `Dense(1, activation="sigmoid")`: kflow adds
`ClassProbabilities` after it (components/models/heads.py), so the task's loss, metrics, Evaluator and serving
read two class probabilities as from a softmax head; a loss() of the module and its metrics get what they read
(heads.on_positive_class, heads.on_class_pair).

The module's source, not its path, is what the Trainer gets (`module_source`), with its helpers (`module_imports`):
the cache key sees every edit, worker processes and pods import the same code, and pipeline.yaml carries it. The
Trainer copies them into the Model's assets (`user_module.py`): the Evaluator loads the code it was trained with.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import json
import logging
import re
import sys
import traceback
import types
from pathlib import Path
from typing import Any

from kflow.components.datasets.model_adapt import (
    ADAPT_BATCH,
    ADAPT_RECORDS,
    ADAPTED_FILE,
    AdaptingBuild,
    names_from,
    names_now,
    never_adapted,
)
from kflow.components.datasets.model_checks import (
    SOURCES,
    all_layers,
    contract_problem,
    is_sigmoid_binary_head,
    is_softmax_pair_head,
    layer_where,
    saving_problem,
)
from kflow.components.datasets.model_compile import (
    ends_in_logits,
    loss_object,
    on_class_indices,
    on_probabilities,
    predicts_classes,
    taken_compile,
    without_logits,
)
from kflow.components.datasets.model_graph import (
    NumberColumnsMismatch,
    task_input_tensors,
    unnamed_input_feed,
    with_graph,
)
from kflow.components.datasets.module_imports import importable, module_name
from kflow.components.datasets.module_source_checks import import_problems, signature_problems
from kflow.components.util.said_once import say_once
from kflow.pipeline.dsl.artifacts import Model

log = logging.getLogger(__name__)
MODULE_FILE = Model.MODULE_FILE
KERAS_STYLING = re.compile(r"\x1b\[[01]m")  # keras.src.utils.traceback_utils: bold on, off
MODEL_INPUTS_FILE = "model_inputs.json"  # The named inputs a user's model takes, beside its module in the assets.
# A module that names none of Keras' preprocessing layers that adapt has none to adapt (model_adapt.py): its model is
# not built an extra time before training to look.
ADAPTING_LAYERS = re.compile(
    r"\b(?:Normalization|StringLookup|IntegerLookup|TextVectorization|Discretization|FeatureSpace)\b"
)
# Keras' count of its automatic names as each user module was imported: every build of its model names from there.
NAMES_AT_IMPORT: dict[str, dict[str, int]] = {}


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


def module_problems(module: str, function: str = "build_model", arguments: str = "schema, options") -> list[str]:
    """Why `module` cannot serve as trainer.module (or another field whose module defines `function`), without
    running it: unreadable, bad syntax, no such function, one kflow cannot call as it will, a top-level import of a
    package not installed (module_source_checks.py)."""
    try:
        source = read_module_source(module)
    except ValueError as error:
        return [str(error).removeprefix("trainer.module: ")]
    try:
        tree = ast.parse(source, module)
    except SyntaxError as error:
        return [f"{module} line {error.lineno}: {error.msg}"]
    if not any(isinstance(node, ast.FunctionDef) and node.name == function for node in tree.body):
        return [f"{module} defines no {function}({arguments}) function"]
    return signature_problems(tree, module, function, arguments) + import_problems(tree, module)


def load_module(source: str, origin: str = MODULE_FILE, imports: dict[str, str] | None = None) -> types.ModuleType:
    """Imports `source` as a module named after its content and its `imports`' (once per process), those first."""
    import kflow.components.models.heads  # noqa: F401 - registers the layers kflow adds to a user's model

    name = module_name("kflow_user_module", source, imports)
    if name in sys.modules:
        return sys.modules[name]
    importable(imports)
    module = types.ModuleType(name)
    module.__file__, module.__kflow_imports__ = origin, imports or {}  # its helpers' code is searched for layers too
    sys.modules[name] = module  # Before exec: decorators such as register_keras_serializable look it up.
    try:
        exec(compile(source, origin, "exec"), module.__dict__)  # noqa: S102 - the user's own model code.
    except Exception as error:
        del sys.modules[name]
        frames = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == origin]
        line = getattr(error, "lineno", None) if isinstance(error, SyntaxError) else (frames or [None])[-1]
        raise UserModuleError(f"trainer.module: {origin}:{line or 1}: {failure(error)}") from error
    if not callable(getattr(module, "build_model", None)):
        del sys.modules[name]
        raise ValueError(f"trainer.module: {origin} defines no build_model(schema, options) function")
    SOURCES[name] = source
    NAMES_AT_IMPORT[name] = names_now()
    return module


class UserModuleError(ValueError):
    """The user's module failed or built a model the task cannot train: one line with its file and line."""


def failure(error: BaseException) -> str:
    """`KeyError: 'varience'`: the error's type and message, without the bold Keras wraps its messages in (a styling
    escape sequence of Keras' own, not of the data: printed escaped, it read `\x1b[1mKernel shape must ...`)."""
    said = f"{type(error).__name__}: {KERAS_STYLING.sub('', str(error))}"
    if "Shapes used to initialize variables must be fully-defined" in said:  # a width of None reached a Dense
        said += (" (a layer before it gives no width: a one-hot lookup of no vocabulary, which kflow adapts where the "
                 "module or its own files make it; else give it its vocabulary=)")  # fmt: skip
    if "cannot contain character `/`" in said:  # keras.Input(name=column) of a column such as wine's 'od280/od315'
        said += (' (a column name Keras refuses as a layer name: name the keras.Input feature["input_name"], '
                 'kflow\'s safe name for it, and key the inputs dict by feature["name"])')  # fmt: skip
    return said


def where(error: BaseException | None, module: types.ModuleType) -> str:
    """`trainer.module: my_model.py:LINE`: the user module's deepest frame of `error`'s traceback, else the line
    of its build_model."""
    line = module.build_model.__code__.co_firstlineno
    if error is not None:
        frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == module.__file__]
        if frames:
            line = frames[-1].lineno or line
    return f"trainer.module: {module.__file__}:{line}"


def with_user_module(task_class: type, module: types.ModuleType) -> type:
    """A subclass of `task_class` whose model (and loss and metrics, when the module has them) come from `module`."""
    import keras

    from kflow.components.models import heads

    class UserModuleTask(task_class):
        user_module = module
        model_inputs: list[str] | None = None  # The named inputs the built model takes: the only ones fed.
        saving_checked = False
        sigmoid_head = False  # build_model found Dense(1, activation="sigmoid") on two classes.
        softmax_pair_head = False  # ... or Dense(2, activation="softmax") on a task of one probability.
        compiled_loss: Any = None  # The loss build_model compiled its model with (model_compile.py).
        logits_head = False  # ... ends in logits, which its loss takes: kflow ended it in their probabilities.
        adapted_layers: list[dict[str, Any]] | None = None  # Its preprocessing layers' state (model_adapt.py).
        adapt_from: Any = None  # prepare's first records of Split-train, while its build adapts them.

        def check_options(self, data_options: Any, model_options: Any) -> None:
            """Options that are not the task's own go to the module's build_model."""

        def build_model(self) -> keras.Model:
            with self._adapting():  # its preprocessing layers never adapted get their state as they are called
                model = self._with_graph()
            for layer in all_layers(model):
                if never_adapted(layer):
                    say_once(log, f"{where(None, module)}: the model's {type(layer).__name__} {layer.name!r} is never "
                              "adapted: kflow adapts such a layer given no state where the module or its own files "
                              "make it and the data's columns reach it as the model is built (not in tf_idf mode, nor "
                              "in a subclassed model's call); give it its state (vocabulary=, mean= and variance=, "
                              "bin_boundaries=)", logging.WARNING)  # fmt: skip
            own_loss = self._module_loss() if callable(getattr(module, "loss", None)) else self.compiled_loss
            own_loss, problem = self._on_labels(own_loss)
            if problem:
                raise UserModuleError(f"{where(None, module)}: {problem}")
            self.logits_head = ends_in_logits(model, own_loss, self)
            if self.logits_head:  # tensorflow.org's quickstart: Dense(10), a loss from_logits=True
                model, own_loss = on_probabilities(model), without_logits(own_loss)
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
            self.softmax_pair_head = is_softmax_pair_head(model, self)
            if self.sigmoid_head:
                model = keras.Model(model.input, heads.ClassProbabilities(name="class_probabilities")(model.output),
                                    name=model.name)  # fmt: skip
            elif self.softmax_pair_head:
                head = heads.PositiveClassProbability(name="positive_class_probability")
                model = keras.Model(model.input, head(model.output), name=model.name)
            return model

        def _with_graph(self) -> keras.Model:
            """The module's model, made functional (model_graph.py), its compile state taken (model_compile.py), its
            layers named alike in every build (model_adapt.names_from)."""
            with names_from(NAMES_AT_IMPORT.get(module.__name__, {})):
                return self._functional()

        def _functional(self) -> keras.Model:
            options = {**self.model_options, **self.model_context()}
            try:
                model = module.build_model(self.schema, options)
            except Exception as error:
                raise UserModuleError(f"{where(error, module)}: {failure(error)}") from error
            if not isinstance(model, keras.Model):
                returned = type(model).__name__
                raise UserModuleError(f"{where(None, module)}: build_model returned {returned}, not a Keras model")
            self.compiled_loss = taken_compile(model, self.model_name, callable(getattr(module, "loss", None)))
            try:  # A Sequential or a subclassed model: made functional, as kflow reads a model's graph
                return with_graph(model, self)
            except NumberColumnsMismatch as refused:
                raise UserModuleError(f"{where(None, module)}: {refused}") from refused
            except Exception as error:
                raise UserModuleError(f"{where(error, module)}: {failure(error)}") from error

        def _adapting(self) -> Any:
            """What gives the model's preprocessing layers never adapted their state as they are called in a build
            (model_adapt.py): adapted on prepare's records, or the states recorded then; nothing to give, nothing."""
            if self.adapt_from is None and not self.adapted_layers:
                return contextlib.nullcontext()
            given = task_input_tensors(self)
            names = list(given) if isinstance(given, dict) else None
            states = None if self.adapt_from else self.adapted_layers
            return AdaptingBuild(self.adapt_from, states, names, lambda: unnamed_input_feed(self))

        def prepare(self, examples: Any, assets_dir: Path) -> dict[str, Any]:
            """The task's own, then a build of the model that adapts its preprocessing layers never adapted on
            Split-train's first records (model_adapt.py), their states in the assets for every later build."""
            figures = super().prepare(examples, assets_dir)
            self.adapted_layers = None
            code = [SOURCES.get(module.__name__, ""), *module.__kflow_imports__.values()]  # its helpers' too
            if not any(map(ADAPTING_LAYERS.search, code)):
                return figures

            def first_records():
                split = self.dataset(examples, "train", batch_size=ADAPT_BATCH, training=False, seed=0)
                for x, *_ in split.take(ADAPT_RECORDS // ADAPT_BATCH).as_numpy_iterator():
                    yield x

            self.adapt_from = first_records
            try:
                adapting = self._adapting()
                with adapting:
                    self._with_graph()
            finally:
                self.adapt_from = None
            self.adapted_layers = adapting.states
            adapted = Path(assets_dir) / ADAPTED_FILE
            adapted.unlink(missing_ok=True)
            if self.adapted_layers:
                adapted.write_text(json.dumps(self.adapted_layers) + "\n")
            return {**figures, "adapted_layers": len(self.adapted_layers or [])}

        def load_assets(self, assets_dir: Path) -> None:
            super().load_assets(assets_dir)
            recorded = Path(assets_dir) / MODEL_INPUTS_FILE
            if recorded.is_file():
                self.model_inputs = json.loads(recorded.read_text())
            adapted = Path(assets_dir) / ADAPTED_FILE
            self.adapted_layers = json.loads(adapted.read_text()) if adapted.is_file() else None

        def save_model_inputs(self, assets_dir: Path) -> None:
            if self.model_inputs is not None:
                (Path(assets_dir) / MODEL_INPUTS_FILE).write_text(json.dumps(self.model_inputs) + "\n")

        def inputs(self, serialized: Any) -> Any:
            """The task's inputs of Examples to score (`kflow predict`), of only the features the model takes."""
            features = super().inputs(serialized)
            names = self.model_inputs
            return features if names is None or not isinstance(features, dict) else {n: features[n] for n in names}

        def dataset(self, *args: Any, **kwargs: Any) -> Any:
            """The task's batches with only the features the model takes: a model that leaves a column out
            (a string one it does not encode) is not handed it, which Keras would try to cast."""
            batches = super().dataset(*args, **kwargs)
            names = self.model_inputs
            if names is None:
                return batches
            return batches.map(lambda x, *rest: ({name: x[name] for name in names}, *rest))

        def loss(self) -> keras.losses.Loss:
            if callable(getattr(module, "loss", None)):
                loss = self._module_loss()
            elif self.compiled_loss is not None:  # build_model compiled its model with it (model_compile.py)
                loss = self.compiled_loss
            else:
                return super().loss()
            loss, _ = self._on_labels(loss)  # build_model refused a loss that cannot take them
            if self.logits_head:  # The model now ends in probabilities (build_model): the loss takes those.
                loss = without_logits(loss)
            loss.reduction = None  # The loops average per-example losses over the global batch themselves.
            # A sigmoid head's loss (BinaryCrossentropy) takes the one probability it returns, not the two columns
            # kflow made of it; build_model, which finds the head, runs before the loss is asked for.
            if self.sigmoid_head:
                return OnPositiveClass(loss)
            return OnClassPair(loss) if self.softmax_pair_head else loss

        def _module_loss(self) -> keras.losses.Loss:
            """The module's loss(), as a Loss (a function of its own wrapped: model_compile.loss_object); what it
            raises or returns that is no loss is one line naming the module's line."""
            try:
                given = module.loss()
            except Exception as error:
                raise UserModuleError(f"{where(error, module)}: loss() failed: {failure(error)}") from error
            loss = loss_object(given)
            if loss is None:
                line = f"trainer.module: {module.__file__}:{module.loss.__code__.co_firstlineno}"
                raise UserModuleError(f"{line}: loss() returned {given!r}, not a loss (a keras.losses.Loss, its "
                                      "name, or a function of (y_true, y_pred))")  # fmt: skip
            return loss

        def _on_labels(self, loss: Any) -> tuple[Any, str | None]:
            """The module's loss on the task's labels: a classifier's are class indices (on_class_indices)."""
            return on_class_indices(loss) if predicts_classes(self) and loss is not None else (loss, None)

        def metrics(self) -> list[keras.metrics.Metric]:
            if not callable(getattr(module, "metrics", None)):  # `from keras import metrics`: no metrics()
                return super().metrics()
            try:  # named as in a process of their own: AUC is `auc` however many were made before (`auc_3`)
                with names_from({}):
                    given = list(module.metrics())
            except Exception as error:
                raise UserModuleError(f"{where(error, module)}: metrics() failed: {failure(error)}") from error
            if self.sigmoid_head:  # keras.io's binary metrics read p
                return heads.on_positive_class(given)
            return heads.on_class_pair(given) if self.softmax_pair_head else given  # SparseCategorical*: the pair

    class OnPositiveClass(keras.losses.Loss):
        """The module's loss on the second class's probability p of [1 - p, p] (a sigmoid head's own output)."""

        def __init__(self, inner: keras.losses.Loss):
            super().__init__(name=inner.name, reduction=None)
            self.inner = inner

        def call(self, y_true, y_pred):
            return self.inner.call(y_true, y_pred[..., 1:])

    class OnClassPair(keras.losses.Loss):
        """The module's loss on [1 - p, p], the pair its softmax head gave before kflow took p."""

        def __init__(self, inner: keras.losses.Loss):
            super().__init__(name=inner.name, reduction=None)
            self.inner = inner

        def call(self, y_true, y_pred):
            return self.inner.call(y_true, keras.ops.concatenate([1.0 - y_pred, y_pred], axis=-1))

    UserModuleTask.__name__ = f"{task_class.__name__}WithUserModule"
    UserModuleTask.__qualname__ = UserModuleTask.__name__
    return UserModuleTask
