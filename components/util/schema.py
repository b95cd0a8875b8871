"""Reading TensorFlow Metadata schemas: the feature spec to parse Examples, and feature domains.

schema = load_schema(schema_artifact.file)
features = tf.io.parse_example(serialized, feature_spec(schema))
low, high = int_domain(schema, "label")
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from google.protobuf import text_format
from tensorflow_metadata.proto.v0 import schema_pb2

if TYPE_CHECKING:
    import tensorflow as tf

# TensorFlow is imported by the two functions that build parse specs, not here: the executors' `source_files`, which
# a cached run calls to fingerprint the data, import their modules, and a cached run must not pay TensorFlow's import.
_DTYPES = {schema_pb2.BYTES: "string", schema_pb2.INT: "int64", schema_pb2.FLOAT: "float32"}
# SchemaGen's tag on a Schema it inferred (schema-level annotation): its domains and ranges describe Split-train, a
# sample, so ExampleValidator counts values outside them as warnings; a frozen schema has no tag: the user's rules.
INFERRED_TAG = "kflow_inferred"


def load_schema(path: str | Path) -> schema_pb2.Schema:
    """Parses a schema in text format (`schema.pbtxt`)."""
    path = Path(path)
    try:
        return text_format.Parse(path.read_text(), schema_pb2.Schema())
    except text_format.ParseError as error:
        raise ValueError(f"{path} is not a valid TensorFlow Metadata schema: {error}") from error


def find_feature(schema: schema_pb2.Schema, name: str) -> schema_pb2.Feature:
    for feature in schema.feature:
        if feature.name == name:
            return feature
    names = ", ".join(feature.name for feature in schema.feature)
    raise KeyError(f"the schema has no feature {name!r} (features: {names})")


def feature_spec(schema: schema_pb2.Schema) -> dict[str, tf.io.FixedLenFeature]:
    """The `tf.io.parse_example` spec of the schema's features, all of them of fixed length.

    A feature with `value_count { max: 1 }` is a scalar (shape []); a feature with a
    `shape` or with `value_count { min: n max: n }` has that fixed shape.
    """
    return {feature.name: _fixed_len_feature(feature) for feature in schema.feature}


def int_domain(schema: schema_pb2.Schema, name: str) -> tuple[int, int]:
    """The (min, max) bounds of an INT feature, from its own `int_domain` or a named schema-level one."""
    feature = find_feature(schema, name)
    if feature.HasField("int_domain"):
        domain = feature.int_domain
    elif feature.HasField("domain"):
        matches = [domain for domain in schema.int_domain if domain.name == feature.domain]
        if not matches:
            raise ValueError(f"feature {name!r} refers to int domain {feature.domain!r}, which the schema lacks")
        domain = matches[0]
    else:
        raise ValueError(f"feature {name!r} has no int_domain")
    if not (domain.HasField("min") and domain.HasField("max")):
        raise ValueError(f"the int_domain of feature {name!r} must set both min and max")
    return domain.min, domain.max


def annotation_tags(schema: schema_pb2.Schema, name: str) -> dict[str, str]:
    """A feature's `key=value` annotation tags as a dict, e.g. {"shape": "28,28", "dtype": "uint8"}."""
    tags = find_feature(schema, name).annotation.tag
    return dict(tag.split("=", 1) for tag in tags if "=" in tag)


def input_types(schema: schema_pb2.Schema) -> dict[str, str]:
    """{feature: its kflow type (int, float, bool, string)} of the features a table's model takes: all but the label,
    the key and the row names, typed by their `kflow_type` tag, else by their proto type."""
    proto_types = {schema_pb2.INT: "int", schema_pb2.FLOAT: "float"}
    types = {}
    for feature in schema.feature:
        tags = annotation_tags(schema, feature.name)
        if tags.get("role") not in ("label", "key", "row_names"):
            types[feature.name] = tags.get("kflow_type") or proto_types.get(feature.type, "string")
    return types


def may_be_absent(schema: schema_pb2.Schema, name: str) -> bool:
    """Whether training saw records without feature `name` (its presence is not required of every record, as an
    inferred schema writes `min_fraction: 1.0` for a feature no record lacked): data to score may lack it too, and
    its model fills it in as it did those records'."""
    feature = find_feature(schema, name)
    return feature.presence.min_fraction < 1.0


def _fixed_len_feature(feature: schema_pb2.Feature) -> tf.io.FixedLenFeature:
    import tensorflow as tf

    dtype = getattr(tf, _DTYPES[feature.type]) if feature.type in _DTYPES else None
    if dtype is None:
        type_name = schema_pb2.FeatureType.Name(feature.type)
        raise ValueError(f"feature {feature.name!r} has type {type_name}; feature_spec handles BYTES, INT and FLOAT")
    if feature.HasField("shape"):
        shape = [dim.size for dim in feature.shape.dim]
    elif feature.HasField("value_count") and feature.value_count.max == 1:
        shape = []
    elif feature.HasField("value_count") and feature.value_count.min == feature.value_count.max > 0:
        shape = [feature.value_count.max]
    else:
        raise ValueError(
            f"feature {feature.name!r} has no fixed length (set `shape` or `value_count {{ min: n max: n }}`)"
        )
    return tf.io.FixedLenFeature(shape, dtype)
