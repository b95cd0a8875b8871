"""The code version in a cache key: a hash of every first-party source file a component can run.

Starting from the component's module and its executor's module, the closure follows
- `import` and `from … import` statements (relative ones too) and the packages they pass
  through, whose `__init__.py` runs on import;
- string literals that name a first-party module, such as `"kflow.components.datasets.mnist.task:MnistTask"`
  in a registry or `-m kflow.components.trainer.worker` in a command line, since those modules
  are imported or run later by name (not in a package reached only as another's parent: its
  `__init__` runs, but the names in its strings are loaded only by whoever reads them);
- data files: every non-Python file beside a followed module (templates next to the code),
  and every file of a package named by a string literal (`files("kflow.schemas")`).

First-party means kflow itself and any module that is not installed in site-packages or
the standard library (a user's own components); third-party code is versioned by the
lock file, not here. Nothing is imported: files are located and parsed with `ast`.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import json
import os
import re
import sys
import sysconfig
import threading
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.user_cache import user_cache

_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")
_THIRD_PARTY_ROOTS = tuple(
    Path(p).resolve() for key in ("stdlib", "platstdlib", "purelib", "platlib") if (p := sysconfig.get_paths().get(key))
)


def code_version(modules: Iterable[str]) -> str:
    """A short hash of the files `source_files(modules)` finds, their paths relative to their roots and their bytes."""
    modules = tuple(modules)
    with _RUN_LOCK:
        if _RUN_VERSIONS is not None and modules in _RUN_VERSIONS:
            return _RUN_VERSIONS[modules]
    digest = hashlib.sha256()
    for label, path in sorted(source_files(modules).items()):
        digest.update(label.encode() + b"\0" + path.read_bytes() + b"\0")
    version = digest.hexdigest()[:16]
    with _RUN_LOCK:
        if _RUN_VERSIONS is not None:
            _RUN_VERSIONS[modules] = version
    return version


# Within one run, the code is what it was when the run started: each component's version is computed once, not
# once per node and lookup (mnist_compare's 7 nodes asked 10 times). Outside a run, always afresh.
_RUN_LOCK = threading.Lock()
_RUN_VERSIONS: dict[tuple[str, ...], str] | None = None


@contextlib.contextmanager
def one_code_version_per_run() -> Iterator[None]:
    global _RUN_VERSIONS
    with _RUN_LOCK:
        outer, _RUN_VERSIONS = _RUN_VERSIONS, ({} if _RUN_VERSIONS is None else _RUN_VERSIONS)
    try:
        yield
    finally:
        with _RUN_LOCK:
            _RUN_VERSIONS = outer


def source_files(modules: Iterable[str]) -> dict[str, Path]:
    """{module-relative label: path} of every first-party file reachable from `modules`."""
    found: dict[str, Path] = {}
    # (module, reached only as the parent package of another): a parent's __init__ runs, and so do
    # its imports, but the module names in its strings are loaded only by whoever reads them.
    pending = [(name, False) for name in modules]
    seen: set[tuple[str, bool]] = set()
    while pending:
        name, as_parent = pending.pop()
        if (name, as_parent) in seen or (name, False) in seen:
            continue
        seen.add((name, as_parent))
        located = _locate(name)
        if located is None:
            continue
        path, is_package = located
        if path.is_file():  # a namespace folder has no file of its own
            found[_label(name, path)] = path
        parent = name.rpartition(".")[0]
        if parent:
            pending.append((parent, True))
        if path.suffix != ".py":
            continue
        package = name if is_package else parent
        for data in _data_beside(path):
            found[_label(package, data, base=path.parent)] = data
        for referenced, by_string in _references(path, package):
            if as_parent and by_string:
                continue
            pending.append((referenced, False))
            if by_string:
                for data in _package_data(referenced):
                    found[_label(referenced, data[1], base=data[0])] = data[1]
    _save_statements()
    return found


def _label(name: str, path: Path, base: Path | None = None) -> str:
    if base is None:
        return f"{name}:{path.name}"
    return f"{name}/{path.relative_to(base).as_posix()}"


def _locate(name: str) -> tuple[Path, bool] | None:
    """(file, is_package) of a first-party module, package or namespace folder; None for anything else."""
    parts = name.split(".")
    # kflow is a namespace over folders mapped by the installer: start from its second level.
    anchor = 2 if parts[0] == "kflow" and len(parts) >= 2 else 1
    base = _spec_location(".".join(parts[:anchor]))
    if base is None:
        return None
    for part in parts[anchor:]:
        if not base.is_dir():
            return None
        base = base / part
    if base.is_dir():
        init = base / "__init__.py"
        return (init, True) if init.is_file() else (base, True)
    module = base.with_suffix(".py")
    return (module, False) if module.is_file() else None


def _spec_location(name: str) -> Path | None:
    """Where a top-level (or kflow second-level) name lives, if it is first-party: its folder or its file."""
    return _spec_location_on(name, tuple(sys.path))


@cache
def _spec_location_on(name: str, search_path: tuple[str, ...]) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        locations = [Path(p) for p in spec.submodule_search_locations if Path(p).is_dir()]
        if len(locations) != 1:
            return None
        location = locations[0].resolve()
    elif spec.origin and spec.origin.endswith(".py"):
        location = Path(spec.origin).resolve()
    else:
        return None  # built-in or compiled
    if not name.startswith("kflow.") and any(location.is_relative_to(root) for root in _THIRD_PARTY_ROOTS):
        return None
    return location


def _data_beside(module: Path) -> list[Path]:
    return sorted(p for p in module.parent.iterdir() if p.is_file() and p.suffix not in (".py", ".pyc"))


def _package_data(name: str) -> list[tuple[Path, Path]]:
    located = _locate(name)
    if located is None or not located[1]:
        return []
    folder = located[0] if located[0].is_dir() else located[0].parent
    return [(folder, p) for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix not in (".py", ".pyc")]


# CPython 3.11's AST conversion keeps its recursion depth in interpreter state: two threads parsing at once
# (two nodes of a wave starting together) can fail with "SystemError: AST constructor recursion depth mismatch".
_PARSE_LOCK = threading.Lock()


def _parse(path: Path, source: bytes) -> ast.Module:
    with _PARSE_LOCK:
        return ast.parse(source, filename=str(path))


def _references(path: Path, package: str) -> tuple[tuple[str, bool], ...]:
    """(module name, whether its package data counts) for each module `path` imports or names."""
    source = path.read_bytes()
    return _references_of(hashlib.sha256(source).hexdigest(), path, source, package, tuple(sys.path))


# Every node's cache key walks the same modules (the runner, the DSL, the shared layer): a file's references are read
# once per process for given contents, not once per node.
@cache
def _references_of(
    digest: str, path: Path, source: bytes, package: str, search_path: tuple[str, ...]
) -> tuple[tuple[str, bool], ...]:
    found: list[tuple[str, bool]] = []
    for kind, *value in _statements(digest, path, source):
        if kind == "import":
            found.append((value[0], False))
        elif kind == "from":
            module, level, names = value
            base = _absolute(module or None, level, package)
            if base:
                found.append((base, False))
                # `from package import module` names a submodule, or just an attribute (then not found).
                found += [(f"{base}.{name}", False) for name in names if name != "*"]
        elif _locate(value[0]) is not None:  # a string naming a module, looked up now: it may be new
            found.append((value[0], True))
    return tuple(found)


def _statements(digest: str, path: Path, source: bytes) -> list[list[Any]]:
    """What in a file may name a module: ["import", name], ["from", module, level, names], ["string", name].

    Parsing is most of a code version's cost, so the result is kept on disk (STATEMENTS_CACHE) under the SHA-256 of
    the file's bytes; what the names resolve to is looked up afresh."""
    store = _statement_store()
    if digest in store:
        return store[digest]
    statements: list[list[Any]] = []
    for node in ast.walk(_parse(path, source)):
        if isinstance(node, ast.Import):
            statements += [["import", alias.name] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            statements.append(["from", node.module or "", node.level, [alias.name for alias in node.names]])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for word in node.value.split():
                candidate = word.partition(":")[0]
                if _MODULE_NAME.fullmatch(candidate):
                    statements.append(["string", candidate])
    with _STORE_LOCK:
        store[digest] = statements
        _STORE_STATE["dirty"] = True
    return statements


STATEMENTS_CACHE = user_cache("code-statements-2.json")
_STORE_LOCK = threading.Lock()
_STORE_STATE: dict[str, Any] = {"store": None, "dirty": False}


def _statement_store() -> dict[str, list[Any]]:
    with _STORE_LOCK:
        if _STORE_STATE["store"] is None:
            try:
                _STORE_STATE["store"] = json.loads(STATEMENTS_CACHE.read_text())
            except (OSError, ValueError):
                _STORE_STATE["store"] = {}
        return _STORE_STATE["store"]


def _save_statements() -> None:
    """Writes the store back when it learnt files (atomically: concurrent processes lose entries, never the file);
    a cache folder that cannot be written only costs the next process the parsing."""
    with _STORE_LOCK:
        if not _STORE_STATE["dirty"]:
            return
        text = json.dumps(_STORE_STATE["store"])
        _STORE_STATE["dirty"] = False
    try:
        STATEMENTS_CACHE.parent.mkdir(parents=True, exist_ok=True)
        temporary = STATEMENTS_CACHE.with_name(f"{STATEMENTS_CACHE.name}.{os.getpid()}.{threading.get_ident()}")
        temporary.write_text(text)
        os.replace(temporary, STATEMENTS_CACHE)
    except OSError:
        pass


def _absolute(module: str | None, level: int, package: str) -> str | None:
    if level == 0:
        return module
    parts = package.split(".")
    if level - 1 > len(parts):
        return None
    base = ".".join(parts[: len(parts) - (level - 1)])
    return f"{base}.{module}" if module else base
