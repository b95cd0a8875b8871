"""The files a user's module imports travel with it (TFX packages a module file's folder into a wheel for the same).

A module (trainer.module, transform.module) given as a file may import its own helpers: a file beside it
(`import helpers`, where TFX's penguin example keeps `penguin_utils_base.py`), a package of the user's
(`from models import features`, TFX's template). kflow reads the module's source when the pipeline is built, and
with it, every first-party file it imports (code_version's closure: not the installed libraries), searched on
PYTHONPATH and in the module's own folder, as Python searches a script's folder. They travel as one parameter,
`module_imports` ({path under its import root: source}): in the cache key (an edit of a helper trains again), in
pipeline.yaml (the pods import the helpers of the machine that compiled it), and into the model
(`assets/<module>_imports/`: the Evaluator, `kflow predict` and the serving export load it with the helpers it was
trained with, on any machine). Where the module runs, they are written once to a folder named by their content and
put first on `sys.path` (`importable`).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kflow.pipeline.dsl.module_files import imports_folder


@dataclass(frozen=True)
class UserCode:
    """A user's module as it runs: its source, the file name its errors name, the helpers it imports."""

    source: str
    origin: str
    imports: dict[str, str] | None = None


def module_parameters(module: str) -> dict[str, object]:
    """A module's parameters, read when the pipeline is built: its source, and the sources of the first-party files
    it imports where it imports any (all in the cache key: the Trainer's, the Transform's, the Tuner's trainer)."""
    from kflow.components.datasets.user_module import read_module_source

    source = read_module_source(module)
    imports = imported_sources(source, module)
    return {"module_source": source, **({"module_imports": imports} if imports else {})}


def imported_sources(source: str, module: str | None = None) -> dict[str, str]:
    """{path under its import root (`helpers.py`, `models/features.py`): source} of every first-party .py file the
    module imports, directly or through another, found on sys.path and in the folder of `module` (a file)."""
    from kflow.pipeline.dsl.code_version import source_files

    names = first_party_imports(source)
    if not names:
        return {}
    with folder_on_path(module):
        found = source_files(names)
    sources = {}
    for label, path in sorted(found.items()):
        name, colon, file_name = label.partition(":")
        if colon and path.suffix == ".py":  # a module's own file, not a data file beside it
            relative = name.replace(".", "/") + ("/__init__.py" if file_name == "__init__.py" else ".py")
            sources[relative] = path.read_text()
    return sources


def first_party_imports(source: str) -> list[str]:
    """The modules `source` imports by absolute name (and what `from package import name` may name: a submodule),
    but kflow's own (in every cache key already)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*")
    return sorted(name for name in names if name.split(".")[0] != "kflow")


@contextlib.contextmanager
def folder_on_path(module: str | None) -> Iterator[None]:
    """The folder of `module` (a .py file) searched first for imports while inside, as Python searches a script's
    own folder; nothing for a module named by its import name (found on sys.path already)."""
    path = Path(module).expanduser() if module else None
    if path is None or not path.is_file():
        yield
        return
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    importlib.invalidate_caches()
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)
        importlib.invalidate_caches()


def importable(imports: dict[str, str] | None) -> None:
    """Puts the module's traveled `imports` first on sys.path: written once to a folder named by their content (a
    pod, a worker, the Evaluator's process), and any module of theirs imported earlier from elsewhere forgotten, so
    that the user's module imports these very files."""
    if not imports:
        return
    folder = Path(tempfile.gettempdir()) / f"kflow-module-imports-{digest(imports)[:16]}"
    if not folder.is_dir():
        staging = Path(tempfile.mkdtemp(prefix=f"{folder.name}.", dir=folder.parent))
        save_imports(staging, imports)
        try:
            os.rename(staging, folder)
        except OSError:  # another process wrote the same files first
            shutil.rmtree(staging, ignore_errors=True)
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
        importlib.invalidate_caches()
    names = {relative.removesuffix(".py").removesuffix("/__init__").replace("/", ".") for relative in imports}
    for name in names:
        loaded = sys.modules.get(name)
        if loaded is not None and not str(getattr(loaded, "__file__", "") or "").startswith(str(folder)):
            del sys.modules[name]


def digest(imports: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(imports, sort_keys=True).encode()).hexdigest()


def module_name(prefix: str, source: str, imports: dict[str, str] | None) -> str:
    """The name a user's module is imported under: named by its content (the same code imports once a process)."""
    content = source + (digest(imports) if imports else "")  # without imports: the name kflow always gave it
    return f"{prefix}_{hashlib.sha256(content.encode()).hexdigest()[:12]}"


def save_imports(folder: Path, imports: dict[str, str]) -> None:
    """Writes each of `imports` at its path under `folder`."""
    for relative, source in imports.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)


def saved_imports(module_file: Path) -> dict[str, str] | None:
    """The imports saved beside a module file (`save_module`), None where it imports none."""
    folder = imports_folder(module_file)
    if not folder.is_dir():
        return None
    return {path.relative_to(folder).as_posix(): path.read_text() for path in sorted(folder.rglob("*.py"))}


def save_module(module_file: Path, source: str, imports: dict[str, str] | None) -> None:
    """A module's source and its imports, into a model or a transform graph: loadable elsewhere (`saved_imports`)."""
    module_file.write_text(source)
    if imports:
        save_imports(imports_folder(module_file), imports)
