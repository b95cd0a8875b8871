"""Your own model: a Python module (`trainer.module`) whose `build_model` replaces the task's registered model.

The contract (README, "Your own model"):

    def build_model(schema, options) -> keras.Model      # required; compiled or not (kflow compiles it)
    def loss() -> keras.losses.Loss                      # optional; else the task's loss
    def metrics() -> list[keras.metrics.Metric]          # optional; else the task's metrics

`schema` is the TFMD `Schema` proto of the Examples; `options` holds `trainer.model_options` and
what the task learnt from the training split (`Task.model_context()`: for csv the label, the
classes, each feature's kind and statistics). The model takes the task's batches as they are
(csv: a dict {feature: [batch, 1]}, numbers as float32 with NaN when missing, strings as
strings) and returns what the task's loss expects (csv classification: class probabilities;
regression: one number). It trains under every TensorFlow strategy the task trains under.

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
import sys
import types
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.artifacts import Model

MODULE_FILE = Model.MODULE_FILE


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
    return module


def with_user_module(task_class: type, module: types.ModuleType) -> type:
    """A subclass of `task_class` whose model (and loss and metrics, when the module has them) come from `module`."""
    import keras

    class UserModuleTask(task_class):
        user_module = module

        def check_options(self, data_options: Any, model_options: Any) -> None:
            """Options that are not the task's own go to the module's build_model."""

        def build_model(self) -> keras.Model:
            options = {**self.model_options, **self.model_context()}
            model = module.build_model(self.schema, options)
            if not isinstance(model, keras.Model):
                raise TypeError(f"trainer.module: build_model returned {type(model).__name__}, not a keras.Model")
            return model

        def loss(self) -> keras.losses.Loss:
            if not hasattr(module, "loss"):
                return super().loss()
            loss = module.loss()
            loss.reduction = None  # The loops average per-example losses over the global batch themselves.
            return loss

        def metrics(self) -> list[keras.metrics.Metric]:
            return list(module.metrics()) if hasattr(module, "metrics") else super().metrics()

    UserModuleTask.__name__ = f"{task_class.__name__}WithUserModule"
    UserModuleTask.__qualname__ = UserModuleTask.__name__
    return UserModuleTask
