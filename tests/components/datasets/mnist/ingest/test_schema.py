"""kflow.components.util.schema on the MNIST schema and on small hand-written ones."""

import pytest
import tensorflow as tf
from google.protobuf import text_format
from tensorflow_metadata.proto.v0 import schema_pb2

from kflow.components.util.schema import annotation_tags, feature_spec, int_domain, load_schema
from tests.conftest import REPO

MNIST_SCHEMA = REPO / "schemas" / "mnist" / "schema.pbtxt"


def schema(text: str) -> schema_pb2.Schema:
    return text_format.Parse(text, schema_pb2.Schema())


def test_mnist_schema_feature_spec_and_domain():
    mnist = load_schema(MNIST_SCHEMA)
    assert feature_spec(mnist) == {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "key": tf.io.FixedLenFeature([], tf.string),
    }
    assert int_domain(mnist, "label") == (0, 9)
    assert annotation_tags(mnist, "image") == {"shape": "28,28", "dtype": "uint8"}


def test_feature_spec_shapes_and_types():
    spec = feature_spec(
        schema(
            """
            feature { name: "x" type: FLOAT value_count { min: 3 max: 3 } }
            feature { name: "y" type: INT shape { dim { size: 2 } dim { size: 2 } } }
            """
        )
    )
    assert spec == {"x": tf.io.FixedLenFeature([3], tf.float32), "y": tf.io.FixedLenFeature([2, 2], tf.int64)}
    with pytest.raises(ValueError, match="no fixed length"):
        feature_spec(schema('feature { name: "z" type: INT value_count { min: 1 max: 5 } }'))


def test_int_domain_of_a_named_domain_and_errors():
    named = schema(
        """
        int_domain { name: "digits" min: 0 max: 9 }
        feature { name: "label" type: INT domain: "digits" }
        feature { name: "free" type: INT }
        """
    )
    assert int_domain(named, "label") == (0, 9)
    with pytest.raises(ValueError, match="no int_domain"):
        int_domain(named, "free")
    with pytest.raises(KeyError, match="no feature 'missing'"):
        int_domain(named, "missing")


def test_load_schema_names_a_broken_file(tmp_path):
    path = tmp_path / "schema.pbtxt"
    path.write_text("feature { name: ")
    with pytest.raises(ValueError, match=str(path)):
        load_schema(path)
