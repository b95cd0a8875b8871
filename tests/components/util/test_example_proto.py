"""kflow's `tf.train.Example` without TensorFlow: TensorFlow's own bytes, both ways, and no TensorFlow imported."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
from tensorflow.core.example import example_pb2

from kflow.components.util.example_proto import Example, serialize_example


def _fill(example, seed: int) -> None:
    chosen = random.Random(seed)
    features = example.features.feature
    for _ in range(chosen.randint(0, 8)):
        name, kind = chosen.choice("abcdefgh"), chosen.randrange(3)
        if kind == 0:
            features[name].bytes_list.value.extend(chosen.randbytes(chosen.randint(0, 30)) for _ in range(2))
        elif kind == 1:
            features[name].float_list.value.extend(chosen.uniform(-1e6, 1e6) for _ in range(chosen.randint(0, 4)))
        else:
            features[name].int64_list.value.append(chosen.randint(-(2**63), 2**63 - 1))


def test_the_same_values_serialise_to_tensorflows_bytes_and_parse_back():
    for seed in range(300):
        ours, theirs = Example(), example_pb2.Example()
        _fill(ours, seed)
        _fill(theirs, seed)
        data = ours.SerializeToString(deterministic=True)
        assert data == theirs.SerializeToString(deterministic=True), seed
        assert example_pb2.Example.FromString(data) == theirs
        assert Example.FromString(theirs.SerializeToString()) == ours
    assert Example.DESCRIPTOR.full_name == example_pb2.Example.DESCRIPTOR.full_name == "tensorflow.Example"


def test_it_is_built_without_importing_tensorflow():
    code = (
        "import sys; from kflow.components.util.example_proto import Example; "
        "e = Example(); e.features.feature['k'].int64_list.value.append(3); "
        "print(e.SerializeToString().hex(), 'tensorflow' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    # features { feature { key: "k" value { int64_list { value: 3 } } } }, in protobuf's wire format
    assert done.stdout.split() == ["0a0c0a0a0a016b12051a030a0103", "False"]


def _values(seed: int) -> dict:
    """One value a feature, of every kind and size the wire format treats apart (lengths past 127 and 16,383
    bytes take longer varints; negative ints ten bytes; floats past float32's range become ±inf)."""
    chosen = random.Random(seed)
    names = ["a", "label", "é-name", "Z", "key", "text", "x" * 200, "日本"]
    values = {}
    for name in chosen.sample(names, chosen.randint(0, len(names))):
        kind = chosen.randrange(6)
        if kind == 0:
            values[name] = "ü" * chosen.choice([0, 1, 63, 64, 8191, 8192, 40_000])
        elif kind == 1:
            values[name] = chosen.randbytes(chosen.choice([0, 5, 127, 128, 16_383, 16_384]))
        elif kind == 2:
            values[name] = chosen.choice([0, 1, 127, 128, 16_383, 16_384, -1, 2**63 - 1, -(2**63), True, False])
        elif kind == 3:
            values[name] = chosen.randint(-(2**63), 2**63 - 1)
        else:
            values[name] = chosen.choice([0.0, -0.0, 1e-45, 0.1, -2.5e38, 3.4028235e38, 1e39, -1e300, 1e-300])
    return values


def test_serialize_example_gives_the_protos_deterministic_bytes():
    for seed in range(400):
        values = _values(seed)
        expected = example_pb2.Example()
        for name, value in values.items():
            feature = expected.features.feature[name]
            if isinstance(value, str | bytes):
                feature.bytes_list.value.append(value.encode() if isinstance(value, str) else value)
            elif isinstance(value, float):
                feature.float_list.value.append(value)
            else:
                feature.int64_list.value.append(value)
        assert serialize_example(values) == expected.SerializeToString(deterministic=True), (seed, values)


def test_serialize_example_refuses_what_the_proto_cannot_hold():
    with pytest.raises(ValueError, match="'n': 9223372036854775808 is out of the int64 range"):
        serialize_example({"n": 2**63})
    with pytest.raises(TypeError, match="'n': a str, bytes, int or float, not list"):
        serialize_example({"n": [1]})
