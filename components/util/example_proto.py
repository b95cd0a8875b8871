"""`tf.train.Example` without TensorFlow: the same messages, for the processes that only build or read records.

Importing `tensorflow.core.example.example_pb2` imports all of TensorFlow (~5 s and ~500 MB here), which every
Beam worker of an ingest paid before its first chunk. These classes are built from the descriptors of
tensorflow/core/example/{feature,example}.proto (same package, names and field numbers) in a pool of their
own, so they live beside TensorFlow's in one process; their serialised bytes are TensorFlow's, byte for byte
(tests/components/util/test_example_proto.py).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_Field = descriptor_pb2.FieldDescriptorProto


def _field(name: str, number: int, kind: int, *, repeated: bool = False, message: str = "", **options) -> _Field:
    field = _Field(
        name=name,
        number=number,
        type=kind,
        label=_Field.LABEL_REPEATED if repeated else _Field.LABEL_OPTIONAL,
        type_name=f".tensorflow.{message}" if message else None,
    )
    if options:
        field.options.CopyFrom(descriptor_pb2.FieldOptions(**options))
    return field


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(name="kflow/example.proto", package="tensorflow", syntax="proto3")
    feature = descriptor_pb2.DescriptorProto(name="Feature", oneof_decl=[{"name": "kind"}])
    kinds = {"bytes": _Field.TYPE_BYTES, "float": _Field.TYPE_FLOAT, "int64": _Field.TYPE_INT64}
    for number, (kind, value_type) in enumerate(kinds.items(), 1):
        packed = {} if kind == "bytes" else {"packed": True}
        values = proto.message_type.add(name=f"{kind.capitalize()}List")
        values.field.append(_field("value", 1, value_type, repeated=True, **packed))
        field = _field(f"{kind}_list", number, _Field.TYPE_MESSAGE, message=values.name)
        field.oneof_index = 0
        feature.field.append(field)
    proto.message_type.append(feature)
    features = proto.message_type.add(name="Features")
    entry = features.nested_type.add(name="FeatureEntry", options={"map_entry": True})
    entry.field.append(_field("key", 1, _Field.TYPE_STRING))
    entry.field.append(_field("value", 2, _Field.TYPE_MESSAGE, message="Feature"))
    features.field.append(_field("feature", 1, _Field.TYPE_MESSAGE, repeated=True, message="Features.FeatureEntry"))
    example = proto.message_type.add(name="Example")
    example.field.append(_field("features", 1, _Field.TYPE_MESSAGE, message="Features"))
    return proto


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())

Example = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("tensorflow.Example"))
Feature = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("tensorflow.Feature"))


def serialize_example(features: Mapping[str, str | bytes | int | float]) -> bytes:
    """An Example of one value a feature (str or bytes → bytes_list, float → float_list, int or bool → int64_list),
    serialised: the bytes `Example.SerializeToString(deterministic=True)` gives (features in the order of their
    names' UTF-8 bytes), in a fifth of its time on Quora's records. The wire format is written directly: each
    name's constant bytes are built once, and a value's length prefix once per name and length.
    """
    names = tuple(features)
    order = _ORDERS.get(names)
    if order is None:
        order = name_order(names)
        if len(_ORDERS) < _MOST_CACHED:
            _ORDERS[names] = order
    entries = []
    for name in order:
        value = features[name]
        kind = _KINDS.get(type(value)) or _kind_of(name, value)
        encode = _ENCODERS.get((name, kind)) or feature_encoder(name, kind)
        entries.append(encode(value))
    return example_of(entries)


def name_order(names: Iterable[str]) -> list[str]:
    """Features in the order a deterministic Example keeps them: by their names' UTF-8 bytes."""
    return sorted(names, key=str.encode)


def example_of(entries: list[bytes]) -> bytes:
    """The Example of these features' entries (`feature_encoder`'s bytes), given in `name_order`."""
    if not entries:
        return b""
    body = b"".join(entries)
    size = len(body)
    return b"\x0a" + (_VARINTS[size] if size < len(_VARINTS) else _varint(size)) + body


def feature_encoder(name: str, kind: str) -> Callable[[Any], bytes]:
    """A function from one value of feature `name` to its entry in an Example: `kind` "bytes" (str, UTF-8, or
    bytes), "float" (a float32: past its range ±inf, as a C cast gives) or "int64" (an int or bool in int64's
    range, else ValueError). An ingest that knows its columns' kinds builds one per column and skips the per-value
    type checks of `serialize_example`."""
    encoder = _ENCODERS.get((name, kind))
    if encoder is None:
        encoder = _BUILDERS[kind](name)
        if len(_ENCODERS) < _MOST_CACHED:
            _ENCODERS[(name, kind)] = encoder
    return encoder


def _bytes_encoder(name: str) -> Callable[[str | bytes], bytes]:
    prefixes: dict[int, bytes] = {}

    def encode(value: str | bytes) -> bytes:
        if isinstance(value, str):
            value = value.encode("utf-8")
        size = len(value)
        prefix = prefixes.get(size)
        if prefix is None:
            prefix = _prefix(name, _BYTES, size)
            if len(prefixes) < _MOST_CACHED:
                prefixes[size] = prefix
        return prefix + value

    return encode


def _float_encoder(name: str) -> Callable[[float], bytes]:
    prefix, pack = _prefix(name, _FLOAT, 4), _FLOAT32.pack

    def encode(value: float) -> bytes:
        try:
            return prefix + pack(value)
        except OverflowError:  # Past float32's range: the proto stores ±inf, as a C cast does.
            return prefix + pack(math.copysign(math.inf, value))

    return encode


def _int64_encoder(name: str) -> Callable[[int], bytes]:
    prefixes = [_prefix(name, _INT64, size) for size in range(11)]  # an int64's varint takes 1 to 10 bytes
    small = len(_VARINTS)

    def encode(value: int) -> bytes:
        if 0 <= value < small:
            encoded = _VARINTS[value]
        elif _INT64_MIN <= value <= _INT64_MAX:
            encoded = _varint(value & _UINT64)
        else:
            raise ValueError(f"feature {name!r}: {value} is out of the int64 range")
        return prefixes[len(encoded)] + encoded

    return encode


def _kind_of(name: str, value: Any) -> str:
    if isinstance(value, str | bytes):
        return "bytes"
    if isinstance(value, int):  # bool too, as TensorFlow takes it: 0 or 1
        return "int64"
    if isinstance(value, float):
        return "float"
    raise TypeError(f"feature {name!r}: a str, bytes, int or float, not {type(value).__name__}")


_BYTES, _FLOAT, _INT64 = 1, 2, 3  # Feature's fields: bytes_list, float_list, int64_list
_BUILDERS = {"bytes": _bytes_encoder, "float": _float_encoder, "int64": _int64_encoder}
_KINDS = {str: "bytes", bytes: "bytes", int: "int64", bool: "int64", float: "float"}
_INT64_MIN, _INT64_MAX, _UINT64 = -(2**63), 2**63 - 1, 2**64 - 1
_FLOAT32 = struct.Struct("<f")
_MOST_CACHED = 1 << 16  # Encoders, orders and prefixes kept: a dataset has few names and value lengths.
_ORDERS: dict[tuple[str, ...], list[str]] = {}
_ENCODERS: dict[tuple[str, str], Callable[[Any], bytes]] = {}


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_VARINTS = [_varint(value) for value in range(1 << 14)]


def _prefix(name: str, kind: int, size: int) -> bytes:
    """A map entry's bytes up to a value of `size` bytes: the entry, its key, the Feature, its list, the value's
    tag and length (a packed list's length for float and int64)."""
    key = name.encode("utf-8")
    value_list = b"\x0a" + _varint(size)  # field 1 of the list: one bytes value, or the packed numbers
    feature = bytes([kind << 3 | 2]) + _varint(len(value_list) + size) + value_list
    entry = b"\x0a" + _varint(len(key)) + key + b"\x12" + _varint(len(feature) + size) + feature
    return b"\x0a" + _varint(len(entry) + size) + entry
