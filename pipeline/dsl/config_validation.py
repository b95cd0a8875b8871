"""The config's JSON Schema validation as kflow reports it: a validator that fills in each missing property's default
(and whose integers are ints), and one line per problem naming the field (`trainer.epochs: must be ≥ 1 (got 0)`)."""

from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Iterable
from typing import Any

import jsonschema

from kflow.pipeline.dsl.config_data import field_path
from kflow.pipeline.dsl.config_model.base import ALTERNATIVES, FORMS


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """ "; did you mean X?" when a choice is close to `word` (the same but for case first: BMI → bmi), else ""."""
    choices = list(choices)
    same_but_case = [choice for choice in choices if choice.casefold() == word.casefold() and choice != word]
    close = same_but_case or difflib.get_close_matches(word, choices, n=1)
    return f"; did you mean {close[0]}?" if close else ""


def _fill_defaults(validator_class: type) -> type:
    validate_properties = validator_class.VALIDATORS["properties"]

    def properties_with_defaults(validator, properties, instance, schema):
        if validator.is_type(instance, "object"):
            for name, subschema in properties.items():
                if "default" in subschema and name not in instance:
                    instance[name] = copy.deepcopy(subschema["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(
        validator_class, {"properties": properties_with_defaults}, type_checker=_STRICT_TYPES
    )


# JSON Schema counts 2.0 as an integer; the components' parameters do not (`--set trainer.epochs=2.0` would pass
# validation and end in a TypeError where the Trainer is built), so an integer is an int here.
_STRICT_TYPES = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
)

# A JSON Schema validator that also fills in each missing property's `default`, in place, and whose integers are ints.
DefaultFillingValidator = _fill_defaults(jsonschema.Draft202012Validator)

_TYPE_NAMES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "object": "a mapping",
    "array": "a list",
    "boolean": "true or false",
    "null": "null",
}


def _shown(value: Any, limit: int = 80) -> str:
    """A value as JSON (control characters escaped), cut to `limit` characters: the line stays one short line."""
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _as_written(value: Any) -> str:
    """A value as a config writes it, in one short line: a string quoted, a mapping in flow style without the nulls
    the validator filled in as its alternatives' defaults ({first: 2}, not {first: 2, from: null, to: null})."""
    if isinstance(value, str):
        return _shown(value).replace('"', "'") if '"' not in value and "'" not in value else _shown(value)
    if isinstance(value, dict):
        text = "{" + ", ".join(f"{key}: {_shown(item)}" for key, item in value.items() if item is not None) + "}"
        return text if len(text) <= 80 else text[:79] + "…"
    return _shown(value)


def describe_error(error: jsonschema.ValidationError, section: str = "") -> list[str]:
    """One line per problem, naming the field (under `section` when the schema validated only that section)."""
    path = field_path([*filter(None, [section]), *error.absolute_path])
    value = error.validator_value
    got = f" (got {_shown(error.instance)})" if not isinstance(error.instance, (dict, list)) else ""
    match error.validator:
        case "type":
            names = [_TYPE_NAMES.get(t, t) for t in ([value] if isinstance(value, str) else value)]
            message = f"must be {' or '.join(names)}{got}"
        case "minimum":
            message = f"must be ≥ {value}{got}"
        case "maximum":
            message = f"must be ≤ {value}{got}"
        case "exclusiveMinimum":
            message = f"must be > {value}{got}"
        case "enum":
            message = f"must be one of {', '.join('null' if choice is None else str(choice) for choice in value)}{got}"
        case "pattern" | "maxLength" if error.schema.get("pattern") in FORMS:
            message = f"must be {FORMS[error.schema['pattern']]}{got}"
        case "pattern":
            message = f"must match {value}{got}"
        case "maxLength":
            message = f"must be at most {value} characters (got {len(error.instance)})"
        case "minLength":
            message = "must not be empty"
        case "minProperties":
            message = "must not be empty"
        case "required":
            missing = [name for name in value if name not in error.instance]
            path = field_path([*filter(None, [path]), *missing[:1]])
            message = "is required"
        case "additionalProperties" if isinstance(error.instance, dict):
            allowed = sorted(error.schema.get("properties", {}))
            extras = sorted(set(error.instance) - set(allowed))
            return [
                f"{field_path([*filter(None, [path]), extra])}: unknown field{did_you_mean(extra, allowed)} "
                f"(allowed: {', '.join(allowed)})"
                for extra in extras
            ]
        case "anyOf" if all(_option_text(option) for option in value):
            message = f"must be {' or '.join(_option_text(option) for option in value)}{got}"
        case "anyOf" | "oneOf" if (nearest := _nearest(error)) is not None:  # in the words of the form it has
            return describe_error(nearest, section)
        case "anyOf" | "oneOf" if path in ALTERNATIVES:  # of no form: the forms, not "not valid under any of …"
            message = f"{_as_written(error.instance)} is not {ALTERNATIVES[path]}"
        case _:
            message = error.message
    return [f"{path or '(top level)'}: {message}"]


def _nearest(error: jsonschema.ValidationError) -> jsonschema.ValidationError | None:
    """Of an anyOf's alternatives, those the value has the form of (a mapping, a list: no type error of their own),
    and the deepest problem among them (`data.spans.last: must be ≥ 1`, not `is not valid under any of the given
    schemas`); None when it has the form of none, or of several with no problem inside the value."""
    by_option: dict[Any, list[jsonschema.ValidationError]] = {}
    for sub in error.context or ():
        by_option.setdefault(sub.relative_schema_path[0], []).append(sub)
    shaped = [
        subs
        for subs in by_option.values()
        if not any(sub.validator in ("type", "enum", "const") and not sub.relative_path for sub in subs)
    ]
    deepest = max((sub for subs in shaped for sub in subs), key=lambda sub: len(sub.relative_path), default=None)
    if deepest is None or (len(shaped) > 1 and not deepest.relative_path):  # several forms, none gone into
        return None
    return deepest


def _option_text(schema: dict[str, Any]) -> str | None:
    """One alternative of an `anyOf` in words (`auto`, `an integer from 1 to 10000`), or None past simple ones."""
    if set(schema) == {"enum"}:
        return " or ".join(map(str, schema["enum"]))
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in _TYPE_NAMES or set(schema) - {"type", "minimum", "maximum"}:
        return None
    low, high = schema.get("minimum"), schema.get("maximum")
    bounds = f" from {low} to {high}" if low is not None and high is not None else ""
    bounds = bounds or (f" ≥ {low}" if low is not None else f" ≤ {high}" if high is not None else "")
    return _TYPE_NAMES[kind] + bounds
