"""transform.module checked without running it (the component's check, `kflow validate`): readable, valid Python,
with a `preprocessing_fn(inputs, analyzers)`; and loaded, when the Transform runs, as a module of its own."""

from __future__ import annotations

from kflow.components.datasets.preprocessing_module import FUNCTION, load_preprocessing_module
from kflow.components.datasets.user_module import module_problems

__all__ = ["FUNCTION", "load_preprocessing_module", "preprocessing_problems"]


def preprocessing_problems(module: str) -> list[str]:
    """Why `module` cannot serve as transform.module: unreadable, bad syntax, no preprocessing_fn."""
    return module_problems(module, FUNCTION, "inputs, analyzers")
