"""The one-pass row encoder: the Example that parsing each field and serialising the values gives; its refusals."""

from __future__ import annotations

import pickle
import random

import pytest
from tensorflow.core.example import example_pb2

from kflow.components.datasets.tabular import columns as cols
from kflow.components.datasets.tabular.row_encoder import RowEncoder

HEADER = ("score", "count", "name", "ok", "Zone", "é")
TYPES = {"score": "float", "count": "int", "name": "string", "ok": "bool", "Zone": "string", "é": "int"}
MISSING = frozenset(cols.DEFAULT_MISSING)


def _field(chosen: random.Random, kind: str) -> str:
    if chosen.random() < 0.15:
        return chosen.choice(["", " NA ", "null", "nan"])
    if kind == "float":
        return chosen.choice(["1.5", " -0.25", "3e38", "1e39 ", "7", "-1e-45"])
    if kind == "int":
        return chosen.choice(["0", " 127", "128", "-1", "9223372036854775807", "16384"])
    if kind == "bool":
        return chosen.choice(["true", " No", "YES", "0", "1 "])
    return chosen.choice(["a", " padded ", "日本", "x" * 200, "comma, inside"])


def _expected(fields: list[str], wanted: tuple[str, ...]) -> tuple[bytes, dict]:
    values = {}
    for name, text in zip(HEADER, fields, strict=True):
        if text.strip() not in MISSING:  # strings keep their spaces, but the label's and key's (the wanted ones)
            whole = TYPES[name] == "string" and name not in wanted
            values[name] = cols.parse_value(text if whole else text.strip(), TYPES[name])
    return cols.serialized_example(values), values


def test_it_gives_the_example_that_parsing_each_field_and_serialising_gives():
    encode = RowEncoder(HEADER, TYPES, MISSING, wanted=["count", "name"])
    chosen = random.Random(7)
    for _ in range(500):
        fields = [_field(chosen, TYPES[name]) for name in HEADER]
        example, values = encode(fields)
        expected, parsed = _expected(fields, ("count", "name"))
        assert example == expected, fields
        assert values == {name: parsed[name] for name in ("count", "name") if name in parsed}
        parsed_back = example_pb2.Example.FromString(example).features.feature
        assert sorted(parsed_back) == sorted(parsed)


def test_a_field_that_does_not_parse_is_refused_and_the_encoder_travels_pickled():
    encode = pickle.loads(pickle.dumps(RowEncoder(HEADER, TYPES, MISSING, wanted=["score"])))
    good = ["2.5", "3", "n", "yes", "z", "1"]
    assert encode(good)[1] == {"score": 2.5}
    for column, text in ((0, "inf"), (1, "3.5"), (3, "maybe"), (1, str(2**63))):
        bad = [*good[:column], text, *good[column + 1 :]]
        with pytest.raises(cols.BadValue):
            encode(bad)
