"""The config's JSON Schema, generated from the config model (`pipeline/dsl/config_model/`).

Pydantic writes the schema; this module only makes it the one people and validators read: every definition inline
(no `$ref`), no generated titles, `X | None` as `"type": [X, "null"]` and `Literal` as a bare `enum`, so that a bad
value gets one line naming the field (`trainer.epochs: must be ≥ 1 (got 0)`) instead of "not valid under any of the
given schemas".
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

from pydantic.json_schema import GenerateJsonSchema

from kflow.pipeline.dsl.config_model import KflowConfig

SCHEMA_ID = "https://kflow.dev/schemas/config.schema.json"


class _Schema(GenerateJsonSchema):
    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


@functools.cache
def generated_schema() -> dict[str, Any]:
    """The config's JSON Schema (draft 2020-12), as `kflow schema` prints it and schemas/config.schema.json holds it."""
    raw = KflowConfig.model_json_schema(schema_generator=_Schema)
    definitions = raw.pop("$defs", {})
    body = _tidy(raw, definitions)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "kflow pipeline config",
        **body,
    }


def schema_text(choices: dict[str, list[str]] | None = None, settings: dict[str, Any] | None = None) -> str:
    """The schema as a file, with `choices` ({dotted field: the names a registry knows}) as those fields' enums and
    `settings` ({dataset: its settings model}) as the alternatives of `data.settings`.

    Validation reads the schema without them: the registries' own checks (pipeline/app/config_checks.py) refuse
    an unknown name with a did-you-mean and check `data.settings` against its dataset's model; the enums and
    alternatives are for people and editors reading the file.
    """
    schema = copy.deepcopy(generated_schema())
    for dotted, names in (choices or {}).items():
        node = _field(schema, dotted)
        node["enum"] = list(names)
        node.pop("type", None)
    if settings:
        node = _field(schema, "data.settings")
        node.pop("type", None)
        node["anyOf"] = [*(_settings_schema(name, model) for name, model in settings.items()), {"type": "null"}]
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def _field(schema: dict[str, Any], dotted: str) -> dict[str, Any]:
    node = schema
    for part in dotted.split("."):
        node = node["properties"][part]
    return node


def _settings_schema(dataset: str, model: Any) -> dict[str, Any]:
    raw = model.model_json_schema(schema_generator=_Schema)
    body = _tidy(raw, raw.pop("$defs", {}))
    return {**body, "description": f"data.dataset {dataset}: {body.get('description', model.__name__)}"}


def _tidy(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_tidy(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    if "$ref" in node:  # a section: its definition inline, this field's own keys (description, default) over it
        referenced = definitions[node.pop("$ref").rsplit("/", 1)[-1]]
        node = {**referenced, **{key: value for key, value in node.items() if key != "description"}, **_doc(node)}
    node.pop("title", None)
    node = {key: _tidy(value, definitions) for key, value in node.items()}
    if "anyOf" in node:
        node = _merge_types(_merge_null(node))
    if node.get("additionalProperties") is True:
        del node["additionalProperties"]
    if "patternProperties" in node:  # dict keys with a pattern: read as "every key must match"
        ((pattern, values),) = node.pop("patternProperties").items()
        node["propertyNames"] = {"pattern": pattern}
        node["additionalProperties"] = values
    if "const" in node:
        node = {"enum": [node.pop("const")], **{key: value for key, value in node.items() if key != "type"}}
    if "enum" in node:
        node.pop("type", None)
    return _ordered(node)


def _doc(node: dict[str, Any]) -> dict[str, Any]:
    return {"description": node["description"]} if "description" in node else {}


def _merge_null(node: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [X, {type: null}]` → X with null allowed, when X is one type or an enum."""
    options = node["anyOf"]
    rest = [option for option in options if option != {"type": "null"}]
    if len(rest) != 1 or len(rest) == len(options):
        return node
    (inner,) = rest
    outer = {key: value for key, value in node.items() if key != "anyOf"}
    if "enum" in inner:
        return {**inner, "enum": [*inner["enum"], None], **outer}
    if isinstance(inner.get("type"), str):
        return {**inner, "type": [inner["type"], "null"], **outer}
    return node


def _merge_types(node: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [{type: string}, {type: integer}]` → `type: [string, integer]` (an array's `items` kept)."""
    options = node.get("anyOf", [])
    if not options or not all(
        isinstance(option.get("type"), str) and set(option) <= {"type", "items"} for option in options
    ):
        return node
    types = [option["type"] for option in options]
    items = [option["items"] for option in options if "items" in option]
    merged = {key: value for key, value in node.items() if key != "anyOf"}
    return {"type": types, **({"items": items[0]} if items else {}), **merged}


_ORDER = ("type", "enum", "anyOf", "oneOf", "const", "pattern", "minimum", "exclusiveMinimum", "maximum")


def _ordered(node: dict[str, Any]) -> dict[str, Any]:
    """Keys in the order people read them: what it is, its bounds, its default, its description, then its insides."""
    last = ("description", "required", "additionalProperties", "propertyNames", "properties", "items")
    head = [key for key in _ORDER if key in node]
    tail = [key for key in last if key in node]
    middle = [key for key in node if key not in head and key not in tail]
    return {key: node[key] for key in [*head, *middle, *tail]}
