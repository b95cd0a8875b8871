"""The union's schema: every span's columns, each of the widest type a span holds it as, and the records that agree.

Each span's ingest infers its columns' types from that span alone: a price of whole numbers in March is an int
column, the same price with cents in April a float one; a column a newer export dropped is in the older spans'
schemas only. The union holding both kinds of records broke everything that read it ("feature 'a' holds int64_list
in one record and float_list in another", from the statistics). The union's schema has each span's columns, each
of the widest of its spans' types (bool < int < float < string: a bool is an int of 0 and 1, any number reads as
text), its other properties (roles, the task) the newest span's where it holds the column, else the newest span's
that does. The records of a span holding a column of a narrower type are rewritten when they are joined
(`widened_record`), so that every record agrees with the union's schema; other spans' shards are only linked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from tensorflow_metadata.proto.v0 import schema_pb2

from kflow.components.datasets.tabular.examples import PROTO_TYPES as _PROTO_TYPES
from kflow.components.util.example_proto import Example

_RANK = {"bool": 0, "int": 1, "float": 2, "string": 3}
_KINDS = {schema_pb2.INT: "int", schema_pb2.FLOAT: "float", schema_pb2.BYTES: "string"}
_TYPE_TAG = "kflow_type="
SPANS_TAG = "kflow_spans"  # `kflow_spans=2,3`: the spans that hold a column some of the union's spans lack


def kind_of(feature: schema_pb2.Feature) -> str | None:
    """A feature's kflow type: its `kflow_type=` tag, else its proto type's; None for a type kflow does not widen."""
    tagged = [tag[len(_TYPE_TAG) :] for tag in feature.annotation.tag if tag.startswith(_TYPE_TAG)]
    kind = tagged[0] if tagged else _KINDS.get(feature.type)
    return kind if kind in _RANK else None


def merged_schema(schemas: Sequence[schema_pb2.Schema]) -> tuple[schema_pb2.Schema, list[dict[str, str]]]:
    """(the union's schema, for each span in `schemas`' order (oldest first) the columns whose values its records
    hold as another proto type than the union's: name → the union's kind)."""
    widest = {name: max(held, key=_RANK.__getitem__)
              for name, kinds in _kinds(schemas).items() if (held := [kind for kind in kinds if kind])}  # fmt: skip
    merged = schema_pb2.Schema()
    merged.CopyFrom(schemas[-1])
    held = {feature.name for feature in merged.feature}
    for schema in reversed(schemas[:-1]):  # a column the newest lacks: from the newest span that holds it
        for feature in schema.feature:
            if feature.name not in held:
                merged.feature.add().CopyFrom(feature)
                held.add(feature.name)
    for feature in merged.feature:
        kind = widest.get(feature.name)
        if kind is not None and kind_of(feature) != kind:
            feature.type = _PROTO_TYPES[kind]
            tags = [tag for tag in feature.annotation.tag if not tag.startswith(_TYPE_TAG)]
            del feature.annotation.tag[:]
            feature.annotation.tag.extend([f"{_TYPE_TAG}{kind}", *tags])
    changes = [
        {
            feature.name: widest[feature.name]
            for feature in schema.feature
            if feature.name in widest and feature.type != _PROTO_TYPES[widest[feature.name]]
        }
        for schema in schemas
    ]
    return merged, changes


def widenings(schemas: Sequence[schema_pb2.Schema], spans: Sequence[str]) -> list[str]:
    """What the union reads otherwise than a span's ingest did: `'a': int in span 1, float in span 2: read as float`."""
    said = []
    for name, held in _kinds(schemas).items():
        kinds: dict[str, list[str]] = {}
        for span, kind in zip(spans, held, strict=True):
            if kind is not None:
                kinds.setdefault(kind, []).append(span)
        if len({_PROTO_TYPES[kind] for kind in kinds}) > 1:  # a bool's records are an int's
            widest = max(kinds, key=_RANK.__getitem__)
            held = ", ".join(f"{kind} in span{'s' * (len(at) > 1)} {', '.join(at)}" for kind, at in kinds.items())
            said.append(f"{name!r}: {held}: read as {widest} in every span")
    return said


def _kinds(schemas: Sequence[schema_pb2.Schema]) -> dict[str, list[str | None]]:
    """{column: its kind in each schema, None where the schema lacks it or holds a kind kflow does not widen}."""
    kinds: dict[str, list[str | None]] = {}
    for index, schema in enumerate(schemas):
        for feature in schema.feature:
            kinds.setdefault(feature.name, [None] * len(schemas))[index] = kind_of(feature)
    return kinds


def widened_record(record: bytes, changes: Mapping[str, str]) -> bytes:
    """The serialized Example with each column of `changes` held as its kind: float, or string (a number written as
    its shortest text: 3, 2.5)."""
    example = Example.FromString(record)
    for name, kind in changes.items():
        if name not in example.features.feature:
            continue
        feature = example.features.feature[name]
        held = feature.WhichOneof("kind")
        values = list(getattr(feature, held).value) if held else []
        feature.Clear()
        if kind == "float":
            feature.float_list.value.extend(float(value) for value in values)
        elif held == "float_list":  # float32 in the record: its shortest text, as the source most likely wrote it
            feature.bytes_list.value.extend(str(np.float32(value)).encode() for value in values)
        else:
            feature.bytes_list.value.extend(str(value).encode() for value in values)
    return example.SerializeToString(deterministic=True)


def mark_partial(merged: schema_pb2.Schema, schemas: Sequence[schema_pb2.Schema], spans: Sequence[str]) -> None:
    """Tags each column of `merged` that only some spans hold with those spans (`kflow_spans=2`): a column with one
    value wherever it is present then tells a record's span alone, which the model is not to learn (plan.py)."""
    for feature in merged.feature:
        held = [span for span, schema in zip(spans, schemas, strict=True)
                if any(other.name == feature.name for other in schema.feature)]  # fmt: skip
        if len(held) < len(spans):
            feature.annotation.tag.append(f"{SPANS_TAG}={','.join(held)}")
