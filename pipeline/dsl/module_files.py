"""Where a user module's own files lie beside its saved copy: a Model's assets, a TransformGraph
(components/datasets/module_imports.py writes and reads them; a Model's `module_digest` covers them)."""

from __future__ import annotations

from pathlib import Path


def imports_folder(module_file: Path) -> Path:
    """`user_module_imports/` beside `user_module.py`, `preprocessing_fn_imports/` beside `preprocessing_fn.py`."""
    return module_file.with_name(f"{module_file.stem}_imports")
