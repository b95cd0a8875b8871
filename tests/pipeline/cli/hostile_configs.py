"""Configs generated from kflow's own config JSON Schema, then made hostile, and the check of what `kflow` said.

`configs()` draws a config from the schema (hypothesis-jsonschema), either whole or as the iris CSV config with
some of its sections drawn, then mutates it: wrong types, strings where numbers go, NaN and infinities, deep
nesting, YAML tags, anchors and aliases, dates, control characters, unknown fields. The result is YAML text
(`to_yaml`), so that what reaches kflow is what a person could have written.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import shutil
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from kflow.pipeline.cli.main import main
from kflow.pipeline.dsl.config import config_schema
from kflow.pipeline.dsl.printable import printable

REPO = Path(__file__).resolve().parents[3]
IRIS_CSV = REPO / "pipeline" / "configs" / "data" / "iris.csv"
SCHEMA = {key: value for key, value in config_schema().items() if key not in ("$schema", "$id")}
SECTIONS = ("data", "trainer", "evaluator", "beam", "orchestration", "kubeflow", "tracking")
# A config that validates: the base of the drawn ones, so that most of them get past the schema to the checks.
IRIS = {
    "name": "fuzz",
    "data": {"dataset": "csv", "source": {"path": "iris.csv"}, "label": "species", "problem_type": "classification"},
    "trainer": {"model": "tabular_mlp", "epochs": 1, "batch_size": 16},
}


class Raw(str):
    """YAML written as it is: a tag, an anchor or an alias, `.nan`, a date."""


HOSTILE = [
    Raw(".nan"), Raw(".inf"), Raw("-.inf"), Raw(".NaN"), Raw("1e999"), Raw("-1e999"),
    Raw("!!binary aGVsbG8="), Raw("!!set {a, b}"), Raw("!!timestamp 2024-01-01"), Raw("!!omap [{a: 1}]"),
    Raw("!!pairs [{a: 1}]"), Raw("!!python/object/apply:os.getcwd []"), Raw("!!float abc"), Raw("!!int 2.5"),
    Raw("!!bool maybe"), Raw("!!float .nan"), Raw("!!str 3"), Raw("!unknown x"), Raw("&anchor 3"), Raw("*anchor"),
    Raw("&list [1, 2]"), Raw("{<<: {a: 1}}"), Raw("2024-01-01"), Raw("2024-01-01 12:30:00"), Raw("12:30:00"),
    Raw("0x1F"), Raw("0o17"), Raw("1_000"), Raw("yes"), Raw("off"), Raw("~"), Raw("''"), Raw("{? [a, b] : c}"),
    Raw("{1: a, true: b, null: c, 2.5: d}"), Raw('"\\x1b[2J\\x1b[31mred\\u202e\\n"'), Raw('"\\0"'),
    Raw('"\\ud83d"'), Raw('"a\\tb"'), 2.0, 1e9, 1e300, 2**63, 10**30, -(2**63) - 1, -1, 0, True, False, None, "3",
    "2.5", "abc", "", " ", [], {}, [1, "a", None], {"a": 1}, {"": ""},
]  # fmt: skip


def to_yaml(value: Any) -> str:
    """`value` as flow-style YAML; a Raw is written as it is, a float that is not finite as .nan/.inf/-.inf."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(key)}: {to_yaml(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(to_yaml, value)) + "]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value)  # a double-quoted YAML scalar, its control characters escaped


def _key(key: Any) -> str:
    return str(key) if isinstance(key, Raw) else json.dumps(str(key))


def _nodes(value: Any, path: tuple = ()) -> list[tuple]:
    """The path of every node of `value` (the root included), in document order."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _nodes(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _nodes(item, (*path, index))
    return found


def _set(config: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    node = config
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return config


def _get(config: Any, path: tuple) -> Any:
    for part in path:
        config = config[part]
    return config


def _nested(depth: int, leaf: Any, as_mapping: bool) -> Any:
    """`leaf` inside `depth` mappings or lists; past SHALLOW levels written as YAML text at once: a structure that
    deep would take the test's own recursive helpers (`to_yaml`, `_nodes`) past the interpreter's limit, nearer it
    the deeper pytest's and hypothesis' frames already are."""
    if depth > SHALLOW:
        opening, closing = ("{a: ", "}") if as_mapping else ("[", "]")
        return Raw(opening * depth + to_yaml(leaf) + closing * depth)
    for _ in range(depth):
        leaf = {"a": leaf} if as_mapping else [leaf]
    return leaf


SHALLOW = 50


@st.composite
def hostile_value(draw: Any) -> Any:
    kind = draw(st.sampled_from(["listed", "float", "integer", "text", "deep", "schema"]))
    if kind == "listed":
        return copy.deepcopy(draw(st.sampled_from(HOSTILE)))
    if kind == "float":
        return draw(st.floats())  # NaN and infinities included
    if kind == "integer":
        return draw(st.integers())
    if kind == "text":
        return draw(st.text(max_size=20))
    if kind == "deep":
        return _nested(draw(st.integers(60, 500)), draw(st.sampled_from([1, "x", Raw(".nan")])), draw(st.booleans()))
    return draw(from_schema(SCHEMA["properties"][draw(st.sampled_from(SECTIONS))]))  # a section where it is not


@st.composite
def mutated(draw: Any, config: dict[str, Any]) -> dict[str, Any]:
    """`config` with one mutation: a node replaced, a field added or removed, a node nested deep. On a copy: a
    drawn value mutated in place (a HOSTILE entry, a schema example) would change what later draws give, which
    hypothesis refuses as flaky data generation (FlakyStrategyDefinition, seen in CI)."""
    config = copy.deepcopy(config)
    paths = _nodes(config)
    path = paths[draw(st.integers(0, len(paths) - 1))]
    node = _get(config, path)
    kind = draw(st.sampled_from(["replace", "replace", "add", "remove", "nest"]))
    if kind == "add" and isinstance(node, dict):
        node[draw(st.one_of(st.text(max_size=12), st.sampled_from(["epochs", "data", "<<", "1", "true"])))] = draw(
            hostile_value()
        )
    elif kind == "remove" and isinstance(node, dict) and node:
        del node[draw(st.sampled_from(sorted(node)))]
    elif kind == "nest" and path:
        config = _set(config, path, _nested(draw(st.integers(2, 300)), node, draw(st.booleans())))
    elif path:
        config = _set(config, path, draw(hostile_value()))
    return config


@st.composite
def drawn_config(draw: Any, min_sections: int = 0) -> dict[str, Any]:
    """A config from the schema: a whole one, or the iris config with some (at least `min_sections`) of its
    sections drawn."""
    if not min_sections and draw(st.integers(0, 4)) == 0:
        return draw(from_schema(SCHEMA))
    config = json.loads(json.dumps(IRIS))
    for name in draw(st.lists(st.sampled_from(SECTIONS), min_size=min_sections, max_size=3, unique=True)):
        drawn = draw(from_schema(SCHEMA["properties"][name]))
        if name == "data":  # keep the source and the label, so that the drawn fields meet the checks, not a path
            drawn = {**drawn, **{key: config["data"][key] for key in ("dataset", "source", "label")}}
        config[name] = drawn if name != "trainer" else {**config["trainer"], **drawn}
    return config


@st.composite
def configs(draw: Any) -> tuple[dict[str, Any], list[str]]:
    """(a config, `--set` overrides): drawn from the schema, then given up to three mutations (none in 2 of 5, so
    that valid configs stay a share of the draws that a fixed seed of 60 cannot miss by chance: 1 in 20 valid
    before, 0 of CI's 60 once)."""
    config = draw(drawn_config())
    for _ in range(draw(st.sampled_from([0, 0, 1, 2, 3]))):
        config = draw(mutated(config))
    overrides = []
    if isinstance(config, dict) and draw(st.integers(0, 3)) == 0:
        paths = [path for path in _nodes(config) if path and all(isinstance(part, str) for part in path)]
        if paths:
            path = paths[draw(st.integers(0, len(paths) - 1))]
            overrides.append(f"{'.'.join(path)}={to_yaml(draw(hostile_value()))}")
    return config, overrides


def workdir(folder: Path) -> Path:
    """A folder with the small CSV the iris-based configs read."""
    shutil.copy(IRIS_CSV, folder / "iris.csv")
    return folder


def kflow_in_process(*args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `kflow ARGS` run in this process: its main(), as the program calls it."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exit_:  # argparse's usage errors
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


# What a refusal may name, besides a field: the file itself, or the `--set` that could not be applied.
_FILE_PROBLEMS = ("not valid YAML: line ", "not UTF-8 text", "is a folder", "no such config file", "--set ")


def check_refusal(code: int, out: str, err: str, config: Any, source: str) -> list[str]:
    """The problems of a refusal, after asserting it is one: exit 2, one line a problem, each naming a field."""
    assert "Traceback" not in out + err, err
    assert code == 2, (code, out, err)
    lines = err.rstrip("\n").split("\n")
    assert all(printable(line) == line for line in lines), lines  # control characters escaped
    first = lines[0].removeprefix("kflow: ").removeprefix(f"{source}: ")
    problems = [first] if len(lines) == 1 else [line.removeprefix("  ") for line in lines[1:]]
    assert len(lines) == 1 or first == "invalid config:", lines
    keys = set(SCHEMA["properties"]) | {"(top level)"}
    keys |= {printable(str(key)) or '""' for key in config} if isinstance(config, dict) else set()
    for problem in problems:
        names_a_field = any(problem.startswith((f"{key}.", f"{key}: ", f"{key}[")) for key in keys)
        assert names_a_field or problem.startswith(_FILE_PROBLEMS), problem
    return problems
