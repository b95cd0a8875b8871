"""`tf.train.Example` without TensorFlow: the same messages, for the processes that only build or read records.

Importing `tensorflow.core.example.example_pb2` imports all of TensorFlow (~5 s and ~500 MB here), which every
Beam worker of an ingest paid before its first chunk. These classes are built from the descriptors of
tensorflow/core/example/{feature,example}.proto (same package, names and field numbers) in a pool of their
own, so they live beside TensorFlow's in one process; their serialised bytes are TensorFlow's, byte for byte
(tests/components/util/test_example_proto.py).
"""

from __future__ import annotations

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
