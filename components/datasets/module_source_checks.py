"""What a user's module (trainer.module, transform.module) says without running it: that kflow can call its
functions as it will (`build_model(schema, options)`, `loss()`, `metrics()`) and that the packages it imports at its
top level are installed. `kflow validate` refuses such a module as `run` would, before any data step: each problem is
`FILE:LINE: …`, the line of the `def` or the `import`."""

from __future__ import annotations

import ast
import importlib.util

from kflow.components.datasets.module_imports import folder_on_path

# The functions kflow calls with no arguments where a module that defines `function` has them.
CALLED_WITHOUT_ARGUMENTS = {"build_model": ("loss", "metrics")}


def signature_problems(tree: ast.Module, module: str, function: str, arguments: str) -> list[str]:
    """`function` of `tree` not callable as `function(arguments)`, positionally, nor its companions with none."""
    given = [name.strip() for name in arguments.split(",") if name.strip()]
    problems = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        if node.name == function:
            problem = _not_callable_with(node.args, len(given))
            if problem:
                problems.append(f"{module}:{node.lineno}: {_signature(node)} {problem}; kflow calls "
                                f"{function}({', '.join(given)})")  # fmt: skip
        elif node.name in CALLED_WITHOUT_ARGUMENTS.get(function, ()):
            problem = _not_callable_with(node.args, 0)
            if problem:
                problems.append(f"{module}:{node.lineno}: {_signature(node)} {problem}; kflow calls {node.name}() "
                                f"and trains with what it returns (a function of yours: def {node.name}(): return "
                                "it)")  # fmt: skip
    return problems


def _not_callable_with(args: ast.arguments, count: int) -> str | None:
    """Why a function of these parameters cannot be called with `count` positional arguments (None: it can)."""
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    if count > len(positional) and args.vararg is None:
        return f"takes {len(positional)} positional argument(s), not {count}"
    if required > count:
        return f"requires {required} argument(s), not {count}"
    keywords = [arg.arg for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True) if default is None]
    if keywords:
        return f"requires the keyword argument(s) {', '.join(keywords)}"
    return None


def _signature(node: ast.FunctionDef) -> str:
    return f"{node.name}({ast.unparse(node.args)})"


def import_problems(tree: ast.Module, module: str) -> list[str]:
    """The module's top-level imports of a package that is not installed (found by `importlib.util.find_spec` on
    the package's name, which runs none of it); an import inside a `try` or a function is the module's to handle."""
    problems, seen = [], set()
    with folder_on_path(module):  # a helper beside the module (module_imports.py)
        for node in tree.body:
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                package = name.split(".")[0]
                if package in seen:
                    continue
                seen.add(package)
                try:
                    found = importlib.util.find_spec(package) is not None
                except (ImportError, ValueError):
                    found = False
                if not found:
                    problems.append(f"{module}:{node.lineno}: imports {package}, which is not installed here "
                                    f"(ModuleNotFoundError: No module named {package!r})")  # fmt: skip
    return problems


def defines(tree: ast.Module, name: str) -> bool:
    """Whether the module defines `name` at its top level, as kflow finds it (a `def`, or a name bound to a value
    of its own); `from keras import metrics`, a module, is not a `metrics()` of the module's."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            return True
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(target, ast.Name) and target.id == name for target in targets):
                return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] not in ("keras", "tensorflow"):
            if any((alias.asname or alias.name) == name for alias in node.names):
                return True
    return False


def options_read(tree: ast.Module, function: str = "build_model") -> set[str] | None:
    """The keys `function` reads of its options (its second parameter) by name: `options["units"]`,
    `options.get("units", 16)`, `"units" in options`. None where it uses them otherwise too (passes them on,
    `**options`, a key of a variable, a loop over them): then any key may be read."""
    node = next((n for n in reversed(tree.body) if isinstance(n, ast.FunctionDef) and n.name == function), None)
    positional = [*node.args.posonlyargs, *node.args.args] if node is not None else []
    if len(positional) < 2:
        return None
    name, keys = positional[1].arg, set()
    parents = {child: parent for parent in ast.walk(node) for child in ast.iter_child_nodes(parent)}
    for use in ast.walk(node):
        if not (isinstance(use, ast.Name) and use.id == name) or use is positional[1]:
            continue
        parent = parents.get(use)
        key = _key_read(use, parent, parents.get(parent))
        if key is None:
            return None
        keys.add(key)
    return keys


def _key_read(use: ast.Name, parent: ast.AST | None, grandparent: ast.AST | None) -> str | None:
    """The literal key this use of the options reads (None: it is used otherwise)."""
    if isinstance(parent, ast.Subscript) and parent.value is use and isinstance(parent.ctx, ast.Load):
        return _literal(parent.slice)
    if isinstance(parent, ast.Attribute) and parent.attr == "get" and isinstance(grandparent, ast.Call):
        return _literal(grandparent.args[0]) if grandparent.args else None
    if isinstance(parent, ast.Compare) and parent.comparators == [use] and len(parent.ops) == 1:
        return _literal(parent.left) if isinstance(parent.ops[0], ast.In | ast.NotIn) else None
    return None


def _literal(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
