"""kflow's YAML loader: a config file read as plain data, or a `yaml.YAMLError` that names the line.

A config is data, so the loader reads only what JSON can hold: mappings with text keys, lists, text, numbers,
true/false and null. Everything else is refused where it is written, before it can reach a validator or a
component that would fail on it with a traceback:

- aliases (`*name`): nested ones could expand a few lines into gigabytes (a "billion laughs"), one could refer
  to itself;
- tags that make other Python types (`!!binary` bytes, `!!set` a set, `!!timestamp` a date, `!!omap` pairs);
- nesting deeper than `MAX_DEPTH`: PyYAML composes recursively and would end in a RecursionError.

Numbers and dates are read as YAML 1.2 reads them: `2e-3` is a float (YAML 1.1 makes it a string), and
`2024-01-01` is the text it looks like (YAML 1.1 makes it a date). A mapping's keys are the text written
(`2020: int` is the column "2020"), so every key is a string.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, ScalarNode

# Far deeper than any config (model_options maps included) and far below the interpreter's recursion limit:
# composing one level takes three frames.
MAX_DEPTH = 64

_STANDARD = "tag:yaml.org,2002:"
_REFUSED_TAGS = ("binary", "set", "timestamp", "omap", "pairs")


def _short(tag: str) -> str:
    return "!!" + tag.removeprefix(_STANDARD) if tag.startswith(_STANDARD) else tag


class ConfigLoader(yaml.SafeLoader):
    """A SafeLoader that reads plain data only (see the module's docstring)."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            alias = self.peek_event()
            raise ComposerError(
                None, None, f"the alias *{alias.anchor} is not allowed in a kflow config: write the value out",
                alias.start_mark,
            )  # fmt: skip
        if self._depth >= MAX_DEPTH:
            raise ComposerError(
                None, None, f"nested more than {MAX_DEPTH} levels deep", self.peek_event().start_mark
            )  # fmt: skip
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        # `!!int x`, `!!float x`, `!!bool x` end in PyYAML's ValueError or KeyError, without a line.
        try:
            value = super().construct_object(node, deep)
            return _text(value, node) if isinstance(value, str) else value
        except (ValueError, KeyError, TypeError) as error:
            text = f" {node.value!r}" if isinstance(node, ScalarNode) else ""
            raise ConstructorError(
                None, None, f"{_short(node.tag)}{text} cannot be read ({error})", node.start_mark
            ) from None

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[str, Any]:
        if not isinstance(node, MappingNode):
            raise ConstructorError(None, None, f"expected a mapping, found {node.id}", node.start_mark)
        self.flatten_mapping(node)  # `<<: {…}` merges
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                raise ConstructorError(None, None, "a key must be text, not a list or a mapping", key_node.start_mark)
            mapping[_text(key_node.value, key_node)] = self.construct_object(value_node, deep=deep)
        return mapping


def _text(text: str, node: Any) -> str:
    """`text` with its escaped surrogate pairs (`"\\ud83d\\ude00"`, as JSON writes 😀) made the character they
    encode: PyYAML reads each half alone, and a lone half is not text (no path, no file, no terminal takes it)."""
    if text.isascii() or not any("\ud800" <= character <= "\udfff" for character in text):
        return text
    joined = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if "\ufffd" in joined and "\ufffd" not in text:
        raise ConstructorError(None, None, "a lone surrogate (\\ud800-\\udfff) is not text", node.start_mark)
    return joined


def _refuse(loader: ConfigLoader, node: Any) -> Any:
    raise ConstructorError(
        None, None, f"the tag {_short(node.tag)} is not allowed in a kflow config: write plain data", node.start_mark
    )


for _name in _REFUSED_TAGS:
    ConfigLoader.add_constructor(_STANDARD + _name, _refuse)

# No implicit dates (YAML 1.2): `2024-01-01` stays text. The lists are copied, so SafeLoader keeps its own.
ConfigLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _STANDARD + "timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
ConfigLoader.add_implicit_resolver(
    _STANDARD + "float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def read_yaml(text: str) -> Any:
    return yaml.load(text, Loader=ConfigLoader)  # noqa: S506 (a SafeLoader)
