"""transform.module checked without running it (the component's check, `kflow validate`): readable, valid Python,
with a `preprocessing_fn(inputs, analyzers)`; and loaded, when the Transform runs, as a module of its own."""

from __future__ import annotations

import hashlib
import sys
import types

from kflow.components.datasets.user_module import module_problems

FUNCTION = "preprocessing_fn"


def preprocessing_problems(module: str) -> list[str]:
    """Why `module` cannot serve as transform.module: unreadable, bad syntax, no preprocessing_fn."""
    return module_problems(module, FUNCTION, "inputs, analyzers")


def load_preprocessing_module(source: str, origin: str) -> types.ModuleType:
    """Imports `source` (named after its content, so the same bytes import once) with `origin` as its file name,
    which its tracebacks name."""
    name = f"kflow_preprocessing_{hashlib.sha256(source.encode()).hexdigest()[:12]}"
    if name in sys.modules:
        return sys.modules[name]
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
