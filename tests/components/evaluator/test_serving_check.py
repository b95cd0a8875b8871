"""The serving check's sample: the evaluation's own first examples and outputs, sent to the client once, as soon as
they are in."""

from __future__ import annotations

import keras
import numpy as np

from kflow.components.evaluator.serving_check import EXAMPLES, TOLERANCE, ServingClient, ServingSample
from kflow.pipeline.dsl.artifacts import Model


class SentInputs:
    """Stands in for the client process (tested with a real one in test_evaluator_executor.py): records sends."""

    def __init__(self) -> None:
        self.sent: list = []

    def send(self, inputs) -> None:
        self.sent.append(inputs)


def two_input_model() -> keras.Model:
    inputs = {"glucose (mg/dl)": keras.Input((1,), name="glucose__mg_dl_"), "age": keras.Input((1,), name="age")}
    return keras.Model(inputs, keras.layers.Concatenate()([inputs["glucose (mg/dl)"], inputs["age"]]))


def test_the_first_examples_are_sent_once_as_soon_as_they_are_in():
    client, model = SentInputs(), two_input_model()
    sample = ServingSample(client)
    batch = 100
    for start in range(0, 500, batch):
        rows = np.arange(start, start + batch, dtype=np.float32)[:, None]
        sample.add(model, {"glucose (mg/dl)": rows, "age": -rows}, np.hstack([rows, -rows]).astype(np.float64))
        assert len(client.sent) == (1 if start + batch >= EXAMPLES else 0)
    sample.send()
    (inputs,) = client.sent
    assert set(inputs) == {"glucose__mg_dl_", "age"}  # the serving signature's names
    assert inputs["glucose__mg_dl_"][:, 0].tolist() == list(range(EXAMPLES))
    expected = sample.expected()
    assert expected.shape == (EXAMPLES, 2) and expected[-1].tolist() == [EXAMPLES - 1, -(EXAMPLES - 1)]


def test_a_small_split_is_sent_whole_and_an_empty_one_as_none():
    client = SentInputs()
    sample = ServingSample(client)
    unbuilt = keras.Sequential([keras.layers.Dense(2)])  # has no `input`: not asked for one with array inputs
    sample.add(unbuilt, np.ones((3, 4)), np.zeros((3, 2)))
    assert client.sent == [] and sample.expected().shape == (3, 2)
    assert client.sent[0].shape == (3, 4)
    empty = ServingSample(client)
    assert empty.expected() is None and client.sent[-1] is None


def test_batches_of_another_length_end_the_sample():
    """A task whose batches are padded to their own longest line (a user module's, say) gives batches of their own
    lengths, which cannot be concatenated: the sample is the batches of the first one's shapes, sent when another
    comes."""
    client = SentInputs()
    sample = ServingSample(client)
    inputs = {"token_ids": keras.Input((None,), name="token_ids")}
    model = keras.Model(inputs, keras.layers.Dense(3)(inputs["token_ids"][..., None]))
    for length in (7, 7, 5):
        sample.add(model, {"token_ids": np.full((100, length), length)}, np.zeros((100, length, 3)))
    (inputs,) = client.sent
    assert inputs["token_ids"].shape == (200, 7)
    assert sample.expected().shape == (200, 7, 3)


def test_the_bound_grows_with_the_outputs_scale(tmp_path):
    """Rounding between the two runtimes grows with the outputs (logits, a regression's targets): the bound is
    TOLERANCE times their largest magnitude, so a large output passes and a difference over the bound fails."""
    inputs = keras.Input((3,), name="x")
    big = keras.Model(inputs, keras.layers.Dense(2, kernel_initializer=keras.initializers.Constant(5000.0))(inputs))
    model = Model(tmp_path / "model")
    big.export(str(model.serving_uri), format="tf_saved_model", verbose=False)
    x = np.random.default_rng(0).uniform(0.5, 1.0, (8, 3)).astype(np.float32)
    expected = np.asarray(big.predict_on_batch(x), dtype=np.float64)
    scale = float(np.abs(expected).max())
    assert scale > 5000
    for shift, passes in [(0.0, True), (3 * TOLERANCE * scale, False)]:
        with ServingClient(model) as client:
            client.send(x)
            result = client.result(expected + shift)
        assert result["passed"] is passes, result
        shifted_scale = float(np.abs(expected + shift).max())
        assert result["output_scale"] == shifted_scale and result["tolerance"] == TOLERANCE * shifted_scale


def test_a_mixed_precision_models_bfloat16_outputs_are_compared(tmp_path):
    """A model trained with `trainer.mixed_precision` on a CPU answers in bfloat16, which NumPy cannot read back from
    a .npy file: the client hands float32 over (the evaluation of every such model failed on it)."""
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        inputs = keras.Input((3,), name="x")
        low = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    model = Model(tmp_path / "model")
    low.export(str(model.serving_uri), format="tf_saved_model", verbose=False)
    x = np.random.default_rng(0).uniform(0.5, 1.0, (8, 3)).astype(np.float32)
    output = low.predict_on_batch(x)
    assert str(output.dtype) == "bfloat16"
    with ServingClient(model) as client:
        client.send(x)
        result = client.result(np.asarray(output, dtype=np.float64))
    assert result["passed"] and result["max_abs_difference"] == 0.0, result


def test_the_next_check_of_a_process_takes_the_client_that_answered_and_a_failed_one_is_replaced(tmp_path):
    """A client that answered is kept for the process's next check, of another model (its TensorFlow import, 5 s of
    CPU, paid once): it answers with that model's outputs. A client that failed is not kept."""
    from kflow.components.evaluator import serving_check

    x = np.random.default_rng(0).uniform(0.5, 1.0, (8, 3)).astype(np.float32)
    checked = []
    for weight in (1.0, -7.0):
        inputs = keras.Input((3,), name="x")
        dense = keras.layers.Dense(2, kernel_initializer=keras.initializers.Constant(weight))
        keras_model = keras.Model(inputs, dense(inputs))
        model = Model(tmp_path / f"model{weight}")
        keras_model.export(str(model.serving_uri), format="tf_saved_model", verbose=False)
        with ServingClient(model) as client:
            client.send(x)
            checked.append((client.process.pid, client.result(np.asarray(keras_model.predict_on_batch(x), float))))
    (first, one), (second, other) = checked
    assert first == second and one["passed"] and other["passed"], checked
    (spare,) = serving_check._SPARE
    assert len(list(spare.scratch.glob("*.np*"))) == 3  # the last answer's files only
    assert other["output_scale"] > one["output_scale"] * 5  # the second model's own outputs, not the first's

    broken = Model(tmp_path / "broken")
    broken.serving_uri.mkdir(parents=True)
    (broken.serving_uri / "saved_model.pb").write_bytes(b"not a SavedModel")
    with ServingClient(broken) as client:
        assert client.process.pid == first
        client.send(x)
        failed = client.result(np.zeros((8, 2)))
    assert not failed["passed"] and failed["reason"].startswith("the serving model failed"), failed
    assert spare.popen.returncode is not None and not spare.scratch.exists() and serving_check._SPARE == []
