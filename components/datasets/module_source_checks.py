"""What a user's module (trainer.module, transform.module) says without running it: that kflow can call its
functions as it will (`build_model(schema, options)`, `loss()`, `metrics()`) and that the packages it imports at its
top level are installed. `kflow validate` refuses such a module as `run` would, before any data step: each problem is
`FILE:LINE: …`, the line of the `def` or the `import`."""

from __future__ import annotations

import ast
import importlib.util

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
