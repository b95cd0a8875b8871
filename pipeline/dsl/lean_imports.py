"""Keras and TensorFlow, while they load, skip the optional libraries a kflow process never uses through them.

Each loads what it finds installed: Keras its scikit-learn wrappers (`keras.wrappers`) and matplotlib plots
(`keras.visualization`), TensorFlow its TFLite converter's JAX functions, each in a `try: import … except
ImportError`. Here that is ~1.9 s of a process's 4.7 s of loading Keras and TensorFlow (CPU time, median of 4;
1 s of 5 with the JAX backend), paid by every process that trains or evaluates, on the cores the training uses.
`install()` makes those imports fail while Keras or TensorFlow is loading only: anything may import scikit-learn,
matplotlib or JAX afterwards as usual (the Evaluator's plots do), and JAX is skipped only in a process whose
Keras backend is not JAX. What is lost: `keras.wrappers`' scikit-learn estimators and `keras.visualization`'s
plots, in kflow's own processes.
"""

from __future__ import annotations

import importlib.abc
import os
import sys
from types import ModuleType

LOADING = ("keras", "tensorflow")


def skipped() -> frozenset[str]:
    """The libraries skipped while Keras or TensorFlow loads in this process."""
    names = {"sklearn", "matplotlib"}
    if os.environ.get("KERAS_BACKEND", "tensorflow") != "jax":
        names.add("jax")
    return frozenset(names)


def _loading(module: ModuleType | None) -> bool:
    """Whether `module` is still being executed by its first import (importlib's own flag on the spec)."""
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


class _SkipWhileLoading(importlib.abc.MetaPathFinder):
    def __init__(self, names: frozenset[str]):
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if name not in self.names:
            return None
        loading = next((library for library in LOADING if _loading(sys.modules.get(library))), None)
        if loading is not None:
            raise ModuleNotFoundError(f"{name} is not loaded while {loading} loads (kflow lean_imports)", name=name)
        return None


def install() -> None:
    """Skips them from now on in this process (once: a second call changes nothing). Call it before anything
    imports Keras or TensorFlow: a process's entry point."""
    if not any(isinstance(finder, _SkipWhileLoading) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SkipWhileLoading(skipped()))
