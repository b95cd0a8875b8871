"""A user's model as kflow reads it: a graph from its inputs to its outputs.

kflow reads a built model's inputs and outputs from its graph (`model.input`, `model.output`): the columns it
takes, its head, the checks before training, the serving signature. A functional `keras.Model` has one as soon
as it is built. Two of Keras' most usual ways to write a model have none until something calls them:

- a `keras.Sequential` (keras.io's MNIST convnet): Keras keeps its graph inside it, so its own `input` is never
  defined, with a `keras.Input` first or without one;
- a subclassed `keras.Model` (a `call` of its own: keras.io's decision forests, its GRN/VSN classifier).

Such a model is made functional here, as Keras itself builds one on the first batch `fit` hands it: a Sequential
that has its `keras.Input` is its own graph; any other is called on symbolic inputs shaped as the task's batches
(traced from `Task.inputs`, the task's parsing of a batch of Examples, so their shapes and dtypes are the ones
training feeds), inside a functional model of the same name. A Sequential (one unnamed input) on a task of named
columns is refused, as a functional model of one unnamed input is there.
"""

from __future__ import annotations

from typing import Any

SEQUENTIAL_ON_COLUMNS = (
    "a keras.Sequential takes one unnamed input, but the data has named features ({features}): build a "
    "keras.Model on a dict of keras.Input(name=feature) for the features it uses"
)


class SequentialOnColumns(ValueError):
    """A keras.Sequential (one unnamed input) for a task of named columns."""


def has_graph(model: Any) -> bool:
    """Whether the model is a graph of its inputs to its outputs (`model.input`, `model.outputs`): a functional
    model; not a subclassed one, even once called on a `keras.Input` (its `input` is then said, its `outputs` not)."""
    try:
        model.input  # noqa: B018 - the properties raise for a model never called, or one of no graph
        model.outputs  # noqa: B018
    except (AttributeError, ValueError):
        return False
    return True


def task_input_tensors(task: Any) -> Any:
    """Symbolic tensors shaped as the task's model inputs: `Task.inputs` traced on a batch of serialized Examples."""
    import tensorflow as tf

    traced = tf.function(task.inputs).get_concrete_function(tf.TensorSpec([None], tf.string))
    return traced.structured_outputs


def with_graph(model: Any, task: Any) -> Any:
    """`model` if it has a graph, else a functional model of it (above); SequentialOnColumns: a Sequential on named
    columns. An error of the model's own `call` on the task's inputs propagates, for the caller to name its line."""
    import keras

    if has_graph(model):
        return model
    if isinstance(model, keras.Sequential):
        try:  # Built from its keras.Input: the graph Keras keeps inside it (Sequential._functional).
            return keras.Model(model.inputs[0], model.outputs[0], name=model.name)
        except (AttributeError, ValueError):
            pass
    given = task_input_tensors(task)
    if isinstance(given, dict):
        if isinstance(model, keras.Sequential):
            raise SequentialOnColumns(SEQUENTIAL_ON_COLUMNS.format(features=", ".join(given)))
        from kflow.components.models.tabular_mlp import layer_name

        taken: set[str] = set()
        inputs = {name: _input_like(tensor, layer_name(name, taken)) for name, tensor in given.items()}
    else:
        inputs = _input_like(given, None)
    return keras.Model(inputs, model(inputs), name=model.name)


def _input_like(tensor: Any, name: str | None) -> Any:
    import keras

    return keras.Input(shape=tuple(tensor.shape[1:]), dtype=tensor.dtype.name, name=name)
