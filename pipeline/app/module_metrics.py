"""The validation metrics a trainer.module's own `metrics()` makes the training report (`val_loss`, and `val_` and
each metric's name, as the Trainer's `watched_metric` lists them), for `kflow validate` to check
trainer.early_stopping_monitor and tuner.objective.metric against.

The module is imported as the Trainer imports it, but apart: under a name of its own, removed after, its registered
classes taken back and Keras' automatic names put back as they were. `kflow run` checks its config first; its
Trainer then imports the module afresh, registers its own classes and names the model's layers as it would have
without the check.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def module_metric_names(module: str) -> list[str] | None:
    """The names the Trainer accepts as a monitor for `module`'s metrics(); None when the check cannot tell without
    training: no callable metrics(), one that needs arguments or raises, a metric with no name of its own (a string
    or a function Keras resolves as it compiles), or a module that fails as it is imported (the Trainer says why)."""
    from kflow.components.datasets.model_adapt import names_from
    from kflow.components.datasets.user_module import read_module_source

    source = read_module_source(module)
    module_name = f"kflow_module_metrics_{hashlib.sha256(source.encode()).hexdigest()[:12]}"
    with _apart(module_name):
        try:
            namespace = _imported(source, module_name, Path(module).name)
            metrics = namespace.get("metrics")
            if not callable(metrics):  # a list named metrics: the Trainer takes the task's (unchecked, as before)
                return None
            with names_from({}):  # named as the Trainer names them: AUC() is `auc` however many were made before
                made = list(metrics())
        except Exception:  # noqa: BLE001 - the user's code: what it raises is the Trainer's to say, in its words.
            return None
    names = [getattr(metric, "name", None) for metric in made]
    if not all(isinstance(name, str) for name in names):
        return None
    return list(dict.fromkeys(["val_loss", *(f"val_{name}" for name in names)]))


def _imported(source: str, name: str, origin: str) -> dict[str, Any]:
    """`source` run as the module `name`, its tracebacks' file `origin`, in sys.modules only while it runs
    (decorators and dataclasses look it up there)."""
    import kflow.components.models.heads  # noqa: F401 - as the Trainer's load_module: kflow's layers registered

    module = types.ModuleType(name)
    module.__file__ = origin
    sys.modules[name] = module
    try:
        exec(compile(source, origin, "exec"), module.__dict__)  # noqa: S102 - the user's own model code.
    finally:
        del sys.modules[name]
    return module.__dict__


@contextlib.contextmanager
def _apart(name: str) -> Iterator[None]:
    """After the block, Keras' count of automatic names as it was, and no class or function of the module `name`
    registered (one it replaced, the Trainer's import of the same module, registered again). What the packages it
    imports register stays: they register once a process."""
    from keras.src.backend.common import global_state
    from keras.src.saving import object_registration

    registered = dict(object_registration.GLOBAL_CUSTOM_OBJECTS)
    counted = global_state.get_global_attribute("object_name_uids", default=None)
    counted = collections.defaultdict(int, counted) if counted is not None else None  # None: never set, as before
    try:
        yield
    finally:
        objects, names = object_registration.GLOBAL_CUSTOM_OBJECTS, object_registration.GLOBAL_CUSTOM_NAMES
        for key, value in list(objects.items()):
            if getattr(value, "__module__", None) == name:
                if key in registered:
                    objects[key] = registered[key]
                else:
                    del objects[key]
        for value in [value for value in names if getattr(value, "__module__", None) == name]:
            del names[value]
        global_state.set_global_attribute("object_name_uids", counted)
