"""A user's model compiled in build_model (model_compile.py): its loss as kflow trains it, its compile state dropped."""

from __future__ import annotations

from types import SimpleNamespace

import keras
import pytest

from kflow.components.datasets.model_compile import (
    ends_in_logits,
    loss_object,
    on_class_indices,
    taken_compile,
    takes_logits,
)


@pytest.mark.parametrize(
    ("given", "kind"),
    [("mean_absolute_error", keras.losses.MeanAbsoluteError), ("mae", keras.losses.MeanAbsoluteError),
     ("sparse_categorical_crossentropy", keras.losses.SparseCategoricalCrossentropy),
     (keras.losses.huber, keras.losses.Huber), (keras.losses.BinaryCrossentropy(from_logits=True),
                                                 keras.losses.BinaryCrossentropy),
     ("MeanSquaredError", keras.losses.MeanSquaredError), (keras.losses.Huber, keras.losses.Huber)],
)  # fmt: skip
def test_a_loss_as_compile_takes_one_is_a_loss_object(given, kind):
    assert type(loss_object(given)) is kind


def mine(y_true, y_pred):
    return keras.ops.mean(keras.ops.abs(y_true - y_pred), axis=-1)


def test_a_loss_function_of_the_users_own_is_a_loss_object_that_says_nothing_of_logits():
    """keras.io's custom losses are functions of (y_true, y_pred): wrapped as compile wraps them (before: not taken,
    and one returned by loss() failed with `'function' object has no attribute 'get_config'`)."""
    import numpy as np

    loss = loss_object(mine)
    assert isinstance(loss, keras.losses.Loss) and loss.name == "mine"
    y_true, y_pred = np.array([[1.0], [0.0]], "float32"), np.array([[0.5], [0.25]], "float32")
    loss.reduction = None
    np.testing.assert_allclose(loss(y_true, y_pred), mine(y_true, y_pred))
    assert not takes_logits(loss) and not takes_logits(mine) and not takes_logits(None)
    assert takes_logits(keras.losses.BinaryCrossentropy(from_logits=True))
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    assert not ends_in_logits(model, mine, SimpleNamespace(output_size=2))  # a function on logits: not said so


def test_a_loss_of_one_an_output_is_not_taken():
    assert loss_object(["mae", "mse"]) is None
    assert loss_object({"out": "mae"}) is None


def _compiled(**compile_args):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(**compile_args)
    return model


def test_the_compiled_loss_is_taken_and_the_compile_state_dropped(caplog):
    model = _compiled(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    with caplog.at_level("INFO", logger="kflow.components.datasets.model_compile"):
        loss = taken_compile(model, "compiled_mse", has_own_loss=False)
    assert type(loss) is keras.losses.MeanSquaredError
    assert not model.compiled and model.optimizer is None and not model.get_compile_config()
    assert "compiled_mse compiled its model: its optimizer, SGD(learning_rate=0.05)" in caplog.text
    assert "its metrics give way to the module's metrics() or the task's" in caplog.text
    # The module's loss() comes first; a model never compiled has nothing to take.
    assert taken_compile(_compiled(optimizer="adam", loss="mse"), "own", has_own_loss=True) is None
    assert taken_compile(keras.Sequential([keras.layers.Dense(1)]), "plain", has_own_loss=False) is None


def test_a_compiled_loss_function_of_the_users_own_is_kept(caplog):
    with caplog.at_level("INFO", logger="kflow.components.datasets.model_compile"):
        loss = taken_compile(_compiled(optimizer="adam", loss=mine), "compiled_own", has_own_loss=False)
    assert isinstance(loss, keras.losses.Loss) and loss.fn is mine
    assert "its loss, mine, is kept" in caplog.text


def test_a_loss_of_one_hot_labels_takes_class_indices_or_is_refused():
    """kflow's class labels are indices: keras.io's `categorical_crossentropy` trains as its sparse twin, the same
    loss on them; a loss that has no such twin is one line."""
    import numpy as np

    sparse, problem = on_class_indices(keras.losses.CategoricalCrossentropy(from_logits=True))
    assert problem is None and isinstance(sparse, keras.losses.SparseCategoricalCrossentropy)
    logits, labels = np.array([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]], "float32"), np.array([0, 2])
    one_hot = keras.losses.CategoricalCrossentropy(from_logits=True)(np.eye(3)[labels], logits)
    np.testing.assert_allclose(sparse(labels, logits), one_hot, rtol=1e-6)
    _, problem = on_class_indices(keras.losses.CategoricalHinge())
    assert problem.startswith("the loss CategoricalHinge takes one-hot labels; kflow's are class indices"), problem
    kept = keras.losses.MeanSquaredError()
    assert on_class_indices(kept) == (kept, None)
