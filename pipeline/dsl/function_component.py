"""`@component`: a kflow component from a typed Python function, like KFP's `@dsl.component`.

    from kflow.pipeline.dsl.artifacts import Examples
    from kflow.pipeline.dsl.function_component import Input, Output, component

    @component
    def clip_pixels(examples: Input[Examples], clipped: Output[Examples], max_value: int = 255) -> dict:
        \"\"\"Clips every image's pixels to max_value.\"\"\"
        ...
        return {"clipped": n}  # the summary `kflow show` prints (optional)

The decorator returns a Component class with the function's name, so the same name is a
pipeline node in Python (`clip_pixels("clip", examples=ingest.outputs["examples"])`) and
a `type: package.module:clip_pixels` in a config. `Input[X]` parameters are input artifacts
(optional when they default to None), `Output[X]` ones output artifacts (folders the runner
creates), the other annotated parameters JSON parameters (int, float, str, bool, dict, list;
`X | None` for optional ones), and `working_dir` the folder kept across attempts. The function
itself is the executor, so its module is in the node's cache key like any component's code.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any

from kflow.pipeline.dsl.artifacts import Artifact
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter

_INPUT, _OUTPUT = "kflow-input", "kflow-output"
RESERVED = ("working_dir",)


class Input:
    """`Input[Examples]`: an input artifact of a function component."""

    def __class_getitem__(cls, kind: type[Artifact]) -> Any:
        return Annotated[kind, _INPUT]


class Output:
    """`Output[Model]`: an output artifact of a function component."""

    def __class_getitem__(cls, kind: type[Artifact]) -> Any:
        return Annotated[kind, _OUTPUT]


def component(function: Callable[..., Any]) -> type[Component]:
    """A Component class whose spec is read from `function`'s signature and whose executor is `function`."""
    hints = typing.get_type_hints(function, include_extras=True)
    inputs: dict[str, type[Artifact]] = {}
    outputs: dict[str, type[Artifact]] = {}
    optional_inputs: set[str] = set()
    parameters: dict[str, Parameter] = {}
    for name, declared in inspect.signature(function).parameters.items():
        if name in RESERVED:
            continue
        if declared.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError(f"@component {function.__name__}: *args and **kwargs cannot be declared as a spec")
        if name not in hints:
            raise TypeError(f"@component {function.__name__}: parameter {name!r} needs a type annotation")
        hint = hints[name]
        role = getattr(hint, "__metadata__", (None,))[0]
        if role in (_INPUT, _OUTPUT):
            kind = typing.get_args(hint)[0]
            (inputs if role == _INPUT else outputs)[name] = kind
            if role == _INPUT and declared.default is None:
                optional_inputs.add(name)
            continue
        kind, optional = _json_type(function.__name__, name, hint)
        has_default = declared.default is not inspect.Parameter.empty
        defaults = {"default": declared.default} if has_default else {}
        parameters[name] = Parameter(kind, optional=optional, **defaults)

    cls = types.new_class(function.__name__, (Component,))
    cls.__module__ = function.__module__
    cls.__qualname__ = function.__qualname__
    cls.__doc__ = function.__doc__
    cls.executor = staticmethod(function)  # type: ignore[attr-defined]
    cls.spec = ComponentSpec(  # type: ignore[attr-defined]
        inputs=inputs,
        outputs=outputs,
        parameters=parameters,
        executor=f"{function.__module__}:{function.__qualname__}.executor",
        optional_inputs=frozenset(optional_inputs),
    )
    return cls


def _json_type(function: str, name: str, hint: Any) -> tuple[type, bool]:
    """(JSON type, optional) of a parameter annotation: `int`, `dict[str, float]`, `str | None`, …"""
    arguments = typing.get_args(hint)
    optional = type(None) in arguments
    if optional:
        rest = [argument for argument in arguments if argument is not type(None)]
        hint = rest[0] if len(rest) == 1 else hint
    kind = typing.get_origin(hint) or hint
    if kind not in (int, float, str, bool, dict, list):
        raise TypeError(
            f"@component {function}: parameter {name!r} is {hint!r}; parameters are int, float, str, bool, dict "
            "or list (artifacts are Input[...] or Output[...])"
        )
    return kind, optional
