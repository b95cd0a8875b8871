"""A user's transform.module (`preprocessing_fn(inputs, analyzers)`) imported as a module of its own, and the layers
it registers made known to any process that loads a model built on it.

A preprocessing_fn may make a layer class of its own (`@keras.saving.register_keras_serializable`: a date's year by
`tf.strings`, which `inputs` take only inside a layer), which Keras finds when a model is loaded only where the
module was imported. The Transform imports it; a later process does not (`kflow predict`, a run whose Transform
was cached, a pod of its own), so the module's source travels beside the preprocessing model (the TransformGraph's
`preprocessing_fn.py`, copied into the Model's assets) and is imported before that model loads.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

from kflow.components.datasets.module_imports import importable, module_name, saved_imports

FUNCTION = "preprocessing_fn"
MODULE_FILE = "preprocessing_fn.py"  # the TransformGraph's copy of transform.module, and a Model's assets'


def load_preprocessing_module(source: str, origin: str, imports: dict[str, str] | None = None) -> types.ModuleType:
    """Imports `source` (named after its content, so the same bytes import once) with `origin` as its file name,
    which its tracebacks name; the helpers it imports (`imports`: module_imports.py) first."""
    name = module_name("kflow_preprocessing", source, imports)
    if name in sys.modules:
        return sys.modules[name]
    importable(imports)
    module = types.ModuleType(name)
    module.__file__ = origin
    module.__kflow_source__ = source  # the lines of the layers it makes (preprocessing_trace._where)
    sys.modules[name] = module
    try:
        exec(compile(source, origin, "exec"), module.__dict__)  # noqa: S102 - the user's own preprocessing code.
    except Exception:
        del sys.modules[name]
        raise
    if not callable(getattr(module, FUNCTION, None)):
        del sys.modules[name]
        raise ValueError(f"transform.module: {origin} defines no {FUNCTION}(inputs, analyzers) function")
    return module


def register_preprocessing_layers(folder: str | Path) -> None:
    """Imports the transform.module kept in `folder` (a TransformGraph, a Model's assets), if any: its layers are
    then known to `keras.saving.load_model` in this process."""
    module = Path(folder) / MODULE_FILE
    if module.is_file():
        load_preprocessing_module(module.read_text(), MODULE_FILE, saved_imports(module))
