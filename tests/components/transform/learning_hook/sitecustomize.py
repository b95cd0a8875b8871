"""Put on PYTHONPATH by test_replicas_learn_nothing.py: in every Python process started with KFLOW_LEARNING_CALLS set,
records each pass that learns preprocessing from data (the tabular task's read of a split, a Keras preprocessing
layer's adapt) as a line `<pid> <what>` of that file, and `<pid> hooked` once the tabular task is imported (so a
test knows which processes it watched). Nothing is replaced: the real methods run."""

import importlib.abc
import os
import sys

TASK = "kflow.components.datasets.tabular.task"
ADAPTING = ("Normalization", "StringLookup", "IntegerLookup", "TextVectorization", "Discretization")


def _record(what: str) -> None:
    with open(os.environ["KFLOW_LEARNING_CALLS"], "a") as calls:
        calls.write(f"{os.getpid()} {what}\n")


def _counted(owner, name: str) -> None:
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        _record(f"{owner.__name__}.{name}")
        return original(*args, **kwargs)

    setattr(owner, name, wrapper)


def _watch(module) -> None:
    import keras

    _counted(module.TabularTask, "_read")
    for layer in ADAPTING:
        _counted(getattr(keras.layers, layer), "adapt")
    _record("hooked")


class _AfterImport(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != TASK:
            return None
        for finder in sys.meta_path:
            spec = None if finder is self else getattr(finder, "find_spec", lambda *a: None)(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            _watch(module)

        spec.loader.exec_module = exec_module
        return spec


if os.environ.get("KFLOW_LEARNING_CALLS"):
    sys.meta_path.insert(0, _AfterImport())
