"""What a user's `build_model` said by compiling its model, and how kflow trains it.

Keras code often compiles a model where it builds it (tensorflow.org's `build_and_compile_model`, TFX's
`_build_keras_model`). kflow compiles every model itself: the optimizer, its learning rate and schedule are the
Trainer's settings (`trainer.optimizer`: `name`, `learning_rate`, `schedule`), declared once there. A
compiled model's loss is the user's choice of what to minimise, so it is kept where the module has no `loss()` of
its own (which comes first): one of keras.losses or a function of the user's own (keras.io's custom losses, a
`focal(y_true, y_pred)`), which kflow wraps as `compile` does. Its optimizer and metrics give way to the Trainer's
settings and the task's (or the module's) metrics, which the log says once. The model's own compile state is then
dropped: kflow wraps some models (a Sequential on a table, a sigmoid head), and a nested model still compiled saves
a second optimizer, never stepped, which Keras warns about at every load.
"""

from __future__ import annotations

import logging
from typing import Any

from kflow.components.util.said_once import say_once

log = logging.getLogger(__name__)


def taken_compile(model: Any, module_name: str, has_own_loss: bool) -> Any:
    """The loss `model` was compiled with as a `keras.losses.Loss` (None: not compiled, no single loss, or the
    module's `loss()` comes first); the model's compile state dropped. Logs what kflow takes and what it does not."""
    if not getattr(model, "compiled", False):
        return None
    given, optimizer = getattr(model, "loss", None), getattr(model, "optimizer", None)
    loss = None if has_own_loss or given is None else loss_object(given)
    parts = []
    if optimizer is not None:
        rate = _learning_rate(optimizer)
        parts.append(f"its optimizer, {type(optimizer).__name__}{f'(learning_rate={rate:g})' if rate else ''}, "
                     "gives way to trainer.optimizer (name, learning_rate)")  # fmt: skip
    if given is not None and loss is None and not has_own_loss:
        parts.append(f"its loss {given!r} is not one loss (one of keras.losses or a function of (y_true, y_pred)): "
                     "the task's loss is used (give the module a loss() returning one)")  # fmt: skip
    elif loss is not None:
        parts.append(f"its loss, {loss.name}, is kept")
    if (model.get_compile_config() or {}).get("metrics"):
        parts.append("its metrics give way to the module's metrics() or the task's")
    if parts:
        say_once(log, f"{module_name} compiled its model: {'; '.join(parts)}")
    model.compiled = False  # what Keras' compile set, unset: kflow compiles the model it trains itself
    model.optimizer = None
    model.loss = None
    model._compile_config = None
    return loss


def loss_object(given: Any) -> Any:
    """A Keras loss as `compile` takes one (an instance, a name, a function of keras.losses, a function of the user's
    own) as a Loss instance; None for a list or dict (several outputs) or what is no loss."""
    import keras

    if isinstance(given, keras.losses.Loss):
        return given
    try:
        function = keras.losses.get(given)
    except (ValueError, TypeError):
        return None
    kept = _keras_loss(function)
    if kept is None and callable(function) and not isinstance(function, type):
        # A function of the user's own, wrapped as compile wraps it: a Loss whose config says nothing of logits.
        from keras.src.losses.losses import LossFunctionWrapper

        return LossFunctionWrapper(function, name=getattr(function, "__name__", None))
    return kept


def _keras_loss(function: Any) -> Any:
    """`keras.losses.get`'s answer as a Loss instance of keras.losses (None: none of theirs)."""
    import keras

    if isinstance(function, keras.losses.Loss):  # a class or its name (`"MeanSquaredError"`): made by get
        return function
    for kind in vars(keras.losses).values():
        if isinstance(kind, type) and issubclass(kind, keras.losses.Loss) and kind is not keras.losses.Loss:
            try:
                candidate = kind()
            except TypeError:  # a loss that needs arguments
                continue
            if getattr(candidate, "fn", None) is function:  # the function the class wraps (Keras' LossFunctionWrapper)
                return candidate
    return None


def _learning_rate(optimizer: Any) -> float | None:
    import keras

    try:
        return float(keras.ops.convert_to_numpy(optimizer.learning_rate))
    except (TypeError, ValueError, AttributeError):  # a schedule
        return None


def ends_in_logits(model: Any, loss: Any, task: Any) -> bool:
    """A model of one output whose loss takes logits (`from_logits=True`) and that does not end in a softmax or
    sigmoid, on a task of classes: tensorflow.org's quickstart, `Dense(10)` with
    `SparseCategoricalCrossentropy(from_logits=True)`; `Dense(1)` with a binary one. The loss says its outputs are
    logits, whatever its last layer (a Dropout after the Dense); a softmax or sigmoid under such a loss is refused
    (model_checks.contract_problem)."""
    from kflow.components.datasets.model_checks import activation_of, output_layer

    return bool(predicts_classes(task) and takes_logits(loss)) and (
        len(model.outputs) == 1 and activation_of(output_layer(model)) not in ("softmax", "sigmoid")
    )


def takes_logits(loss: Any) -> bool:
    """The loss says it takes logits (`from_logits=True` in its config). A function of the user's own (wrapped:
    loss_object) says nothing of them: its model must end in probabilities, as the task's loss reads them."""
    get_config = getattr(loss, "get_config", None)
    return bool(callable(get_config) and (get_config() or {}).get("from_logits"))


def predicts_classes(task: Any) -> bool:
    """A task whose labels are class indices: several classes, or the one probability of a positive class."""
    return bool(getattr(task, "predicts_probability", False) or (getattr(task, "output_size", None) or 0) > 1)


def on_probabilities(model: Any) -> Any:
    """`model` ending in the probabilities its logits stand for: a softmax over several units, a sigmoid over one
    (then read as any such head: ClassProbabilities on two classes). The Evaluator, serving and the task's metrics
    read probabilities from every model; its loss takes them (`without_logits`)."""
    import keras

    activation = "softmax" if (model.outputs[0].shape[-1] or 1) > 1 else "sigmoid"
    head = keras.layers.Activation(activation, name=f"{activation}_of_logits")
    return keras.Model(model.input, head(model.output), name=model.name)


def without_logits(loss: Any) -> Any:
    """The same loss on probabilities (`from_logits=False`), its other settings (label smoothing, ...) kept."""
    return type(loss).from_config({**loss.get_config(), "from_logits": False})


def on_class_indices(loss: Any) -> tuple[Any, str | None]:
    """(a classifier's loss on kflow's labels, class indices; a problem when it cannot take them). keras.io's
    classifiers often compile `categorical_crossentropy` for one-hot labels: its sparse twin is the same loss on
    indices (from_logits kept; a label smoothing, which the sparse loss lacks, said and dropped). Other losses of
    one-hot labels are refused; any other loss is returned as it is."""
    import keras

    if isinstance(loss, keras.losses.CategoricalCrossentropy):
        config = loss.get_config()
        if config.get("label_smoothing"):
            say_once(log, f"{loss.name}'s label_smoothing ({config['label_smoothing']:g}) is dropped: kflow's "
                           "labels are class indices, trained with SparseCategoricalCrossentropy")  # fmt: skip
        return keras.losses.SparseCategoricalCrossentropy(from_logits=config.get("from_logits", False)), None
    if isinstance(loss, (keras.losses.CategoricalFocalCrossentropy, keras.losses.CategoricalHinge,
                         keras.losses.KLDivergence)):  # fmt: skip
        return loss, (
            f"the loss {type(loss).__name__} takes one-hot labels; kflow's are class indices: use "
            "SparseCategoricalCrossentropy, or leave the loss to the task"
        )
    return loss, None
