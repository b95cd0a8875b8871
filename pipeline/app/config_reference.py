"""The config reference page (docs/reference/config.md), rendered from the config's JSON Schema.

The schema is the one `kflow schema` writes to schemas/config.schema.json: generated from the config model
(pipeline/dsl/config_model/), with the names the dataset and strategy registries know. One section per
top-level field, and one table per object under it (a field as its dotted path, its type, default, allowed
values or bounds, and description), so the page says what `kflow validate` checks and which defaults a loaded
config gets. Regenerate the page with

    .venv/bin/python -m kflow.pipeline.app.config_reference > docs/reference/config.md

(tests/docs/test_docs.py fails when the committed page differs from what this renders).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from kflow.pipeline.app.schema import config_schema_text
from kflow.pipeline.dsl.config import read_value

REGENERATE = ".venv/bin/python -m kflow.pipeline.app.config_reference > docs/reference/config.md"

_TYPE_NAMES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "object": "mapping",
    "array": "list",
    "null": "null",
}


def config_reference(schema: dict[str, Any]) -> str:
    """The Markdown reference of a config JSON Schema: a section per top-level field, a table per object."""
    root = _schema(schema)
    lines = [
        "# Config reference",
        "",
        f"<!-- Generated from schemas/config.schema.json; do not edit. Regenerate: {REGENERATE} -->",
        "",
    ]
    if root.get("description"):
        lines += [_text(root["description"]), ""]
    lines += [
        "Every field a config may hold, as `kflow validate` checks it. A field is written as its dotted path "
        "(the path `--set` takes); `<key>` stands for a key you choose (a metric, a component id), `[]` for "
        "each entry of a list. A default is filled in when the config is loaded; a field with no default and "
        "not marked required may be left out. How configs are read: [The config](../config.md).",
        "",
    ]
    required = set(root.get("required", ()))
    for name, sub in root.get("properties", {}).items():
        lines += _section(name, sub, name in required)
    return "\n".join(lines).rstrip("\n") + "\n"


def _section(name: str, raw: dict[str, Any], required: bool) -> list[str]:
    schema = _schema(raw)
    lines = [f"## `{name}`", ""]
    tables = _Tables()
    tables.collect(name, raw, required)
    if not tables.objects or tables.objects[0].path != name:  # A scalar or list field: one row for itself.
        lines += _table([_row(name, raw, required)])
    elif schema.get("description"):
        lines += [_text(schema["description"]), ""]
    for obj in tables.objects:
        if obj.path != name:
            lines += [f"### `{obj.path}`", ""]
            if obj.description:
                lines += [_text(obj.description), ""]
        summary = _summary(obj.schema, required if obj.path == name else obj.required)
        if summary:
            lines += [summary, ""]
        lines += _table(obj.rows) if obj.rows else ["No fields of its own.", ""]
    return lines


@dataclass
class _Object:
    path: str
    schema: dict[str, Any]
    description: str
    required: bool
    rows: list[list[str]] = field(default_factory=list)


class _Tables:
    """The objects (with their rows) under one top-level field, parents before children, in schema order."""

    def __init__(self) -> None:
        self.objects: list[_Object] = []

    def collect(self, path: str, schema: dict[str, Any], required: bool = False, description: str = "") -> None:
        schema = _schema(schema)
        if _properties(schema) is not None:
            self._object(path, schema, required, description)
        elif isinstance(_entries(schema), dict):  # {<key>: {...}}: a table for the entries' fields.
            self.collect(f"{path}.<key>", _entries(schema), description=_text_of(_entries(schema)))
        elif isinstance(_items(schema), dict):
            self.collect(f"{path}[]", _items(schema), description=_text_of(_items(schema)))
        else:
            for alternative in _alternatives(schema):
                self.collect(path, alternative, required, description)

    def _object(self, path: str, schema: dict[str, Any], required: bool, description: str) -> None:
        obj = _Object(path, schema, description, required)
        self.objects.append(obj)
        needed = set(schema.get("required", ()))
        children = []
        for name, sub in _properties(schema).items():
            child = f"{path}.{name}"
            obj.rows.append(_row(child, sub, name in needed))
            children.append((child, sub, name in needed))
        for child, sub, child_required in children:
            resolved = _schema(sub)
            if _has_table(resolved):
                self.collect(child, sub, child_required, resolved.get("description", ""))


def _has_table(schema: dict[str, Any]) -> bool:
    """Whether an object with fields of its own is in `schema` (itself, its entries, its items, an alternative)."""
    schema = _schema(schema)
    if _properties(schema) is not None:
        return True
    nested = [_entries(schema), _items(schema), *_alternatives(schema)]
    return any(isinstance(sub, dict) and _has_table(sub) for sub in nested)


def _properties(schema: dict[str, Any]) -> dict[str, Any] | None:
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) and properties else None


def _entries(schema: dict[str, Any]) -> Any:
    return schema.get("additionalProperties") if not _properties(schema) else None


def _items(schema: dict[str, Any]) -> Any:
    return schema.get("items")


def _alternatives(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return [sub for key in ("oneOf", "anyOf") for sub in schema.get(key, ()) if isinstance(sub, dict)]


def _text_of(schema: dict[str, Any]) -> str:
    return schema.get("description", "") if isinstance(schema, dict) else ""


def _summary(schema: dict[str, Any], required: bool) -> str:
    """The line under an object's heading: its type, default and bounds."""
    kind, allowed = _describe(schema)
    parts = [kind + (", required" if required else "")]
    if "default" in schema:
        parts.append(f"default {_code(_value(schema['default']))}")
    if allowed:
        parts.append(allowed)
    return _capitalise("; ".join(parts)) + "."


def _row(path: str, schema: dict[str, Any], required: bool) -> list[str]:
    schema = _schema(schema)
    kind, allowed = _describe(schema)
    if required:
        kind += ", required"
    default = _code(_value(schema["default"])) if "default" in schema else ""
    return [_code(path), kind, default, allowed, _text(schema.get("description", ""))]


def _table(rows: list[list[str]]) -> list[str]:
    lines = ["| field | type | default | allowed | description |", "| --- | --- | --- | --- | --- |"]
    lines += ["| " + " | ".join(cell if cell else " " for cell in row) + " |" for row in rows]
    return [*lines, ""]


def _describe(schema: dict[str, Any]) -> tuple[str, str]:
    """(type, allowed values and bounds) of a schema, in words."""
    schema = _schema(schema)
    alternatives = _alternatives(schema)
    if alternatives:
        described = [_describe(alternative) for alternative in alternatives]
        kinds = _unique(kind for kind, _ in described)
        allowed = [f"{kind}: {bounds}" if len(kinds) > 1 and bounds else bounds for kind, bounds in described]
        own_kind, own_bounds = _describe({k: v for k, v in schema.items() if k not in ("oneOf", "anyOf")})
        kind = " or ".join(kinds) if own_kind == "any" else own_kind
        return kind, "; ".join(filter(None, [*allowed, own_bounds]))
    if "const" in schema:
        return _json_type(schema["const"]), _code(_value(schema["const"]))
    if "enum" in schema:
        values = schema["enum"]
        kinds = schema.get("type") or _unique(_json_type(value) for value in values)
        return _kind(kinds, schema), ", ".join(_code(_value(value)) for value in values)
    return _kind(schema.get("type"), schema), ", ".join(_bounds(schema))


def _kind(types: Any, schema: dict[str, Any], plural: bool = False) -> str:
    """ "integer or null", "list of strings", "mapping of (strings or integers)"; `plural`: "lists of strings"."""
    if not types:
        return "any"
    names = [types] if isinstance(types, str) else list(types)
    words = []
    for name in names:
        word = _TYPE_NAMES.get(name, name) + ("s" if plural else "")
        inner = _items(schema) if name == "array" else _entries(schema) if name == "object" else None
        inner_types = [inner.get("type")] if isinstance(inner, dict) and isinstance(inner.get("type"), str) else None
        inner_types = inner_types or (list(inner.get("type") or []) if isinstance(inner, dict) else [])
        if {"array", "object"} <= set(inner_types):  # JSON-like values nested level by level: said once.
            scalars = " or ".join(
                _TYPE_NAMES.get(kind, kind) + "s" for kind in inner_types if kind not in ("array", "object")
            )
            word += f" of ({scalars}, or lists and mappings of them)"
        elif isinstance(inner, dict) and inner.get("type"):
            of = _kind(inner["type"], inner, plural=True)
            word += f" of ({of})" if " or " in of else f" of {of}"
        words.append(word)
    return " or ".join(_unique(words))


def _bounds(schema: dict[str, Any]) -> list[str]:
    bounds = []
    for key, word in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<")):
        if key in schema:
            bounds.append(f"{word} {_value(schema[key])}")
    if schema.get("minLength") == 1 and "maxLength" not in schema:
        bounds.append("not empty")
    elif "minLength" in schema or "maxLength" in schema:
        bounds.append(_count(schema.get("minLength"), schema.get("maxLength"), "character"))
    if "minItems" in schema or "maxItems" in schema:
        bounds.append(_count(schema.get("minItems"), schema.get("maxItems"), "item"))
    if schema.get("minProperties") == 1:
        bounds.append("not empty")
    if "pattern" in schema:
        bounds.append(f"matches {_code(schema['pattern'])}")
    names = schema.get("propertyNames")
    if isinstance(names, dict):
        _, allowed = _describe(names)
        if allowed:
            bounds.append(f"keys: {allowed}")
    items = _items(schema)
    if isinstance(items, dict):
        _, allowed = _describe(items)
        if allowed:
            bounds.append(f"each {allowed}")
    entries = _entries(schema)
    if isinstance(entries, dict) and not _properties(_schema(entries)):
        _, allowed = _describe(entries)
        if allowed:
            bounds.append(f"each value {allowed}")
    if isinstance(schema.get("required"), list) and not _properties(schema):
        bounds.append("keys " + ", ".join(_code(name) for name in schema["required"]) + " required")
    return bounds


def _count(low: int | None, high: int | None, noun: str) -> str:
    if low is not None and low == high:
        return f"exactly {low} {noun}{'s' if low != 1 else ''}"
    if high is None:
        return f"at least {low} {noun}{'s' if low != 1 else ''}"
    if low is None:
        return f"at most {high} {noun}{'s' if high != 1 else ''}"
    return f"{low} to {high} {noun}s"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "list" if isinstance(value, list) else "mapping"


def _value(value: Any) -> str:
    """A value as it is written in YAML: null, true, 0.01, runs, {}, [train, eval]."""
    if isinstance(value, str):
        plain = re.fullmatch(r"[A-Za-z0-9_./@+-][A-Za-z0-9_.:/@*+ -]*", value) and read_value(value) == value
        return value if plain else json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {_value(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    return json.dumps(value)


def _code(text: str) -> str:
    """Inline code that renders the same in MkDocs and on GitHub, also inside a table (a `|` in it)."""
    if "`" not in text and "|" not in text:
        return f"`{text}`"
    escaped = "".join(_ENTITIES.get(char, char) for char in text)
    return f"<code>{escaped}</code>"


_ENTITIES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "|": "&#124;",
    "\\": "&#92;",
    "*": "&#42;",
    "_": "&#95;",
    "`": "&#96;",
    "[": "&#91;",
}


def _text(text: str) -> str:
    """Prose from the schema as Markdown on one line: its `code` kept, everything else taken literally."""
    parts = " ".join(str(text).split()).split("`")
    out = []
    for index, part in enumerate(parts):
        if index % 2 and index < len(parts) - 1:
            out.append(_code(part))
        else:
            out.append(re.sub(r"([\\*_\[\]|])", r"\\\1", part).replace("<", "&lt;"))
    return "".join(out)


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def _unique(values: Any) -> list[Any]:
    return list(dict.fromkeys(values))


def _schema(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def documented_schema() -> dict[str, Any]:
    """The schema the reference documents: schemas/config.schema.json as `kflow schema` writes it."""
    return json.loads(config_schema_text())


def main() -> int:
    sys.stdout.write(config_reference(documented_schema()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
