"""kflow's `tf.train.Example` without TensorFlow: TensorFlow's own bytes, both ways, and no TensorFlow imported."""

from __future__ import annotations

import random
import subprocess
import sys

from tensorflow.core.example import example_pb2

from kflow.components.util.example_proto import Example


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
