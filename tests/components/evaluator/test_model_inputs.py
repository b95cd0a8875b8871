"""A model's inputs against the data's before it is scored (components/evaluator/model_inputs.py), on real Keras
models and tf.data batches: a baseline that reads a column as numbers which this data holds as text is no baseline
(Keras failed casting the string mid-evaluation), said in one line."""

from __future__ import annotations

import keras
import pytest
import tensorflow as tf

from kflow.components.evaluator.model_inputs import OtherInputs, check_inputs
from kflow.pipeline.dsl.artifacts import Model


def model_reading(**dtypes: str) -> keras.Model:
    inputs = {name: keras.Input((1,), name=name, dtype=dtype) for name, dtype in dtypes.items()}
    numbers = [keras.ops.cast(tensor, "float32") for tensor in inputs.values() if dtype_is_number(tensor)]
    return keras.Model(inputs, keras.layers.Dense(1)(keras.ops.concatenate(numbers) if numbers else inputs["x"]))


def dtype_is_number(tensor) -> bool:
    return "string" not in str(tensor.dtype)


def batches(**values) -> tf.data.Dataset:
    return tf.data.Dataset.from_tensor_slices(({name: [[v] for v in column] for name, column in values.items()},
                                               [0.0] * len(next(iter(values.values()))))).batch(2)  # fmt: skip


def test_a_column_read_as_numbers_that_the_data_holds_as_text_is_other_inputs(tmp_path):
    baseline = model_reading(x="float32", ind="float32")
    with pytest.raises(OtherInputs) as raised:
        check_inputs(Model(tmp_path / "m"), baseline, batches(x=[1.0, 2.0], ind=["other", "manufacturing"]))
    assert raised.value.reads == "reads 'ind' as numbers, which this data holds otherwise"
    # Whole numbers and decimals are one quantity; the same types pass.
    check_inputs(Model(tmp_path / "m"), baseline, batches(x=[1.0, 2.0], ind=[0, 1]))
    check_inputs(Model(tmp_path / "m"), baseline, batches(x=[1.0, 2.0], ind=[0.5, 1.5]))
