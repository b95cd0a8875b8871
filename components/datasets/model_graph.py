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
training feeds), inside a functional model of the same name.

A model of one unnamed input (a Sequential, or a functional model on one `keras.Input`) on a table of one column takes
that column as the task gives it; on a table of several columns, the table's number columns as one matrix,
`[batch, numbers]` in the order of the task's features, a missing value filled with the column's Split-train mean:
what numpy-minded Keras code (tensorflow.org's "Basic regression", keras.io's regression examples) feeds a
Sequential. Its strings, dates and words are left out, as any model that takes only some columns is fed only those
(the log says which, once); its declared width must be the number of those columns, its dtype a number's.
"""

from __future__ import annotations

import logging
from typing import Any

from kflow.components.util.said_once import say_once

log = logging.getLogger(__name__)

NAMED_INPUTS_HINT = "build a keras.Model on a dict of keras.Input(name=feature) for the features it uses"


class NumberColumnsMismatch(ValueError):
    """A model of one unnamed input that a table's number columns cannot feed (none, or not as many as it takes)."""


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
    """`model` if it has a graph, else a functional model of it (above); NumberColumnsMismatch: a model of one unnamed
    input that a table's number columns cannot feed. An error of the model's own `call` on the task's inputs
    propagates, for the caller to name its line."""
    import keras

    columns = _table_columns(task)
    if columns and _takes_one_unnamed_input(model):
        return on_number_columns(model, columns) if len(columns) > 1 else _on_its_column(model, task, columns[0])
    if has_graph(model):
        if isinstance(model.input, dict) and columns:
            say_columns_left_out(list(model.input), columns)
        if isinstance(model.input, dict) and type(model.input) is not dict:
            # A FeatureSpace's inputs are a dict Keras tracks (TrackedDict): a model of them warned at every call
            # that the plain dict of columns it is given `doesn't match the expected structure`.
            return keras.Model(dict(model.input), model.output, name=model.name)
        return model
    if isinstance(model, keras.Sequential):
        try:  # Built from its keras.Input: the graph Keras keeps inside it (Sequential._functional).
            return keras.Model(model.inputs[0], model.outputs[0], name=model.name)
        except (AttributeError, ValueError):
            pass
    given = task_input_tensors(task)
    if isinstance(given, dict):
        from kflow.components.models.tabular_mlp import layer_name

        taken: set[str] = set()
        inputs = {name: _input_like(tensor, layer_name(name, taken)) for name, tensor in given.items()}
    else:
        inputs = _input_like(given, None)
    return keras.Model(inputs, model(inputs), name=model.name)


def on_number_columns(model: Any, columns: list[dict[str, Any]]) -> Any:
    """A functional model of the number `columns` (the task's planned features) as one matrix, filled with their
    means, into `model`, whose one input must take as many numbers a row if it says; NumberColumnsMismatch else."""
    import keras

    numbers = [column for column in columns if column["kind"] == "numeric"]
    others = [f"{column['name']} ({column['kind']})" for column in columns if column["kind"] != "numeric"]
    shape, dtype = _declared(model)
    if not numbers or (shape is not None and shape != (len(numbers),)) or dtype not in (None, *NUMBER_DTYPES):
        takes = "a matrix" if shape is None else f"{shape[0]} number(s) a row" if len(shape) == 1 else f"{shape}"
        takes += f" of {dtype}" if dtype not in (None, *NUMBER_DTYPES) else ""
        has = ", ".join(column["name"] for column in numbers) or "none"
        take_all = f"take them all (keras.Input(shape=({len(numbers)},))) or " if numbers else ""
        raise NumberColumnsMismatch(
            f"the model takes one unnamed input, {takes}; this table's number columns are {len(numbers)} ({has})"
            + (f", besides {', '.join(others)}" if others else "")
            + f": {take_all}{NAMED_INPUTS_HINT}"
        )
    inputs, matrix = number_matrix(numbers)
    left_out = f"; left out: {', '.join(others)}" if others else ""
    say_once(log, f"the model takes the table's {len(numbers)} number column(s) as one matrix, missing values "
                   f"filled with their Split-train means{left_out}")  # fmt: skip
    return keras.Model(inputs, model(matrix), name=model.name)


def say_columns_left_out(taken: list[str], columns: list[dict[str, Any]]) -> None:
    """Says once which of a table's `columns` a model of named inputs does not take (`taken`): it is fed only its
    own (UserModuleTask.dataset), as a model of one unnamed input its number columns (on_number_columns)."""
    others = [f"{column['name']} ({column['kind']})" for column in columns if column["name"] not in set(taken)]
    if others:
        say_once(log, f"the model takes {len(columns) - len(others)} of the table's {len(columns)} column(s) by name, "
                      f"{', '.join(taken)}; left out: {', '.join(others)}")  # fmt: skip


def number_matrix(numbers: list[dict[str, Any]]) -> tuple[dict[str, Any], Any]:
    """({column: Input}, the `[batch, numbers]` matrix of the number `columns`, missing values their means)."""
    import keras

    from kflow.components.models.tabular_mlp import FillMissing, layer_name

    taken: set[str] = set()
    inputs = {column["name"]: keras.Input(shape=(1,), dtype="float32", name=layer_name(column["name"], taken))
              for column in numbers}  # fmt: skip
    block = list(inputs.values())
    matrix = block[0] if len(block) == 1 else keras.layers.Concatenate(name="number_columns")(block)
    return inputs, FillMissing([float(column["mean"]) for column in numbers], name="fill_numbers")(matrix)


def unnamed_input_feed(task: Any) -> tuple[dict[str, Any], Any] | None:
    """What `with_graph` feeds a model of one unnamed input on a table ({column: Input}, the tensor): the number
    matrix, or a table's one column; None for any other task, or a table of no number column."""
    columns = _table_columns(task)
    if not columns:
        return None
    if len(columns) == 1:
        inputs = _column_input(task, columns[0])
        return inputs, inputs[columns[0]["name"]]
    numbers = [column for column in columns if column["kind"] == "numeric"]
    return number_matrix(numbers) if numbers else None


def _on_its_column(model: Any, task: Any, column: dict[str, Any]) -> Any:
    """A functional model of the table's one column, as the task gives it, into `model` (Keras takes a column for
    a `keras.Input(shape=())`)."""
    import keras

    inputs = _column_input(task, column)
    return keras.Model(inputs, model(inputs[column["name"]]), name=model.name)


def _column_input(task: Any, column: dict[str, Any]) -> dict[str, Any]:
    from kflow.components.models.tabular_mlp import layer_name

    given = task_input_tensors(task)[column["name"]]
    return {column["name"]: _input_like(given, layer_name(column["name"], set()))}


def _table_columns(task: Any) -> list[dict[str, Any]] | None:
    """A table task's planned features (`options["features"]`), in order; None for any other task."""
    context = task.model_context() if hasattr(task, "model_context") else {}
    features = context.get("features")
    if isinstance(features, list) and all(isinstance(each, dict) and "kind" in each for each in features):
        return features
    return None


def _takes_one_unnamed_input(model: Any) -> bool:
    """A Sequential (built or not), or a functional model of one input that is not a dict; not a subclassed model,
    which is handed the table's named columns."""
    import keras

    if isinstance(model, keras.Sequential):
        return True
    return has_graph(model) and not isinstance(model.input, dict) and len(model.inputs) == 1


def _declared(model: Any) -> tuple[tuple | None, str | None]:
    """(the shape of a row, the dtype) the model's one input declares (`keras.Input(shape=(k,))`: `(k,)`); None
    for what it does not declare (a Sequential without a keras.Input, a width left None)."""
    try:
        tensor = model.inputs[0]
    except (AttributeError, ValueError, IndexError, TypeError):
        return None, None
    shape = tuple(tensor.shape[1:])
    return (None if shape == (None,) else shape), getattr(tensor, "dtype", None)


NUMBER_DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64")


def _input_like(tensor: Any, name: str | None) -> Any:
    import keras

    return keras.Input(shape=tuple(tensor.shape[1:]), dtype=tensor.dtype.name, name=name)
