"""What any config may hold, whatever its fields: plain, finite data, a line per value that is not.

Checked once for the whole config before the schema sees it, so that no field, present or added later, needs
its own guard: a NaN or an infinity is refused in every number (a NaN watchdog never fires, and protobuf
refuses it once compiled), a key is text, no text holds a NUL, a value is JSON data, and the nesting is
bounded (the YAML loader bounds it for a file; a config built in Python or by `--set` comes through here too).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from kflow.pipeline.dsl.config_yaml import MAX_DEPTH

_PLAIN = (str, int, float, bool, type(None))


def field_path(parts: Iterable[Any]) -> str:
    """`trainer.optimizer.name` from its parts; an empty key shows as "" so that no part of the path goes missing."""
    return ".".join(str(part) if part != "" else '""' for part in parts)


def _number_text(value: float) -> str:
    return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")


def plain_data_problems(config: Any) -> list[str]:
    """`path: message` for each value of `config` that is not plain, finite data; [] when all are."""
    problems: list[str] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), config)]
    while stack:  # no recursion: a deep config must not end in a RecursionError here
        path, value = stack.pop()
        where, depth = field_path(path) or "(top level)", len(path)
        if isinstance(value, (dict, list)) and depth >= MAX_DEPTH:
            problems.append(f"{where}: nested more than {MAX_DEPTH} levels deep")
        elif isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str) or "\x00" in key:
                    problems.append(f"{where}: a key must be text without NUL characters (got {key!r})")
                else:
                    stack.append(((*path, key), item))
        elif isinstance(value, list):
            stack.extend(((*path, index), item) for index, item in enumerate(value))
        elif isinstance(value, str) and "\x00" in value:  # no path, name or option holds one: os calls refuse it
            problems.append(f"{where}: must not hold a NUL character (\\x00)")
        elif isinstance(value, float) and not math.isfinite(value):
            problems.append(f"{where}: must be a finite number (got {_number_text(value)})")
        elif not isinstance(value, _PLAIN):
            problems.append(
                f"{where}: must be text, a number, true or false, a list or a mapping (got a {type(value).__name__})"
            )
    return sorted(problems)
