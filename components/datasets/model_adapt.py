"""A user's Keras preprocessing layers that were never adapted, adapted on the training split as the model is built.

Keras' preprocessing layers learn their state from data, by `layer.adapt(data)`: a `Normalization` its mean and
variance, a `StringLookup`, `IntegerLookup` or `TextVectorization` its vocabulary, a `Discretization` its bin
boundaries. tensorflow.org's and keras.io's examples call it on their training data before they build the rest of the
model (`normalizer.adapt(np.array(train_features))`; keras.io's structured data example adapts each column's lookup,
whose vocabulary sets the width of what follows). A trainer.module's `build_model` has no data to call it on, so a
model written as those examples write it, less that line, holds layers never adapted: a `Normalization` passes its
inputs through unchanged (a mean of 0, a variance of 1: no error, a model trained on raw numbers), a lookup or a
`Discretization` fails at the first step (`Table not initialized`), a one-hot lookup cannot even be followed by a
`Dense` (its width is unknown).

kflow adapts them as those examples do, while the model is built (`AdaptingBuild`): when such a layer is called on
a symbolic tensor computed from the data's columns (the model's own `keras.Input(name=column)`, or kflow's inputs
around a Sequential, model_graph.py), the graph from those columns to the layer is run on the first ADAPT_RECORDS
records of Split-train, in the split's order, and the layer's `adapt` is given what reaches it; then the call goes
on, as after the example's `adapt`. That build is the first (`Task.prepare`, on every process of a cluster alike);
the layers' states (a mean and a variance, a vocabulary, bin boundaries) go into the model's assets (ADAPTED_FILE),
and every later build (a worker's, the export's) gives each layer its state at the same call. model.keras and the
serving SavedModel keep them, as any adapted layer's.
"""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

ADAPTED_FILE = "adapted_layers.json"
ADAPT_RECORDS = 100_000  # the most training records a layer is adapted on (Keras adapts on what it is given)
ADAPT_BATCH = 256
_FEEDING: list[Any] = []  # what kflow is calling a model of one unnamed input on, innermost last (`feeding`)


@contextlib.contextmanager
def feeding(tensor: Any) -> Iterator[None]:
    """While kflow calls a model of one unnamed input on `tensor` (model_graph.py: a table's number matrix): a layer
    on the model's own Input (a Sequential's, made as it is called) is fed what `tensor` holds."""
    _FEEDING.append(tensor)
    try:
        yield
    finally:
        _FEEDING.pop()


@contextlib.contextmanager
def names_unspent() -> Iterator[None]:
    """A build of a model that leaves Keras' automatic names as they were: the next build's layers are named as
    if it had not happened (`dense`, not `dense_1`), as the user's refusals and logs name them."""
    from keras.src.backend.common import global_state

    kept = dict(global_state.get_global_attribute("object_name_uids", default={}) or {})
    try:
        yield
    finally:
        global_state.set_global_attribute("object_name_uids", collections.defaultdict(int, kept))


def adapting_classes() -> tuple[type, ...]:
    import keras
    from keras.src.layers.preprocessing.index_lookup import IndexLookup

    return keras.layers.Normalization, IndexLookup, keras.layers.TextVectorization, keras.layers.Discretization


def never_adapted(layer: Any) -> bool:
    """Whether a preprocessing layer was neither given its state nor adapted (a `Normalization` of an unbuilt or
    untouched mean and variance, a lookup of no vocabulary, a `Discretization` of no boundaries)."""
    import keras

    if isinstance(layer, keras.layers.Normalization):
        if layer.input_mean is not None:
            return False
        if not layer.built:
            return True
        return not np.any(np.asarray(layer.adapt_mean)) and bool(np.all(np.asarray(layer.adapt_variance) == 1))
    if isinstance(layer, keras.layers.Discretization):
        return layer.bin_boundaries is None
    if isinstance(layer, adapting_classes()):
        mode = getattr(layer, "output_mode", getattr(layer, "_output_mode", None))  # TextVectorization's is private
        return mode != "tf_idf" and not layer.get_vocabulary(include_special_tokens=False)
    return False


class AdaptingBuild:
    """While a user's model is built (`with AdaptingBuild(...)`): each call of a preprocessing layer never adapted,
    on a symbolic tensor computed from the data's columns, gives the layer its state first: adapted on `batches`
    (a new iterator of the task's inputs a call: the first build's) and kept in `states`, or taken from `states`
    (a later build's), the k-th such call's the k-th state. `names`: the task's named inputs (its columns), None
    for a task whose inputs are one unnamed tensor (images)."""

    def __init__(
        self,
        batches: Callable[[], Iterable[Any]] | None,
        states: list[dict[str, Any]] | None,
        names: Iterable[str] | None,
    ):
        from kflow.components.models.tabular_mlp import layer_name

        self.batches = batches
        self.states = [] if states is None else states
        # An Input is fed the column it is named after: its own name, or kflow's layer name of it (model_graph.py).
        self.names = None if names is None else {**{layer_name(n, set()): n for n in names}, **{n: n for n in names}}
        self.calls = 0
        self.saved: dict[type, Any] = {}

    def __enter__(self) -> AdaptingBuild:
        for cls in adapting_classes():
            original = cls.__call__
            self.saved[cls] = cls.__dict__.get("__call__")

            def call(layer: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                if args and never_adapted(layer):
                    self._on_call(layer, args[0])
                return _original(layer, *args, **kwargs)

            cls.__call__ = call
        return self

    def __exit__(self, *exc: Any) -> None:
        for cls, own in self.saved.items():
            if own is None:
                del cls.__call__
            else:
                cls.__call__ = own

    def _on_call(self, layer: Any, tensor: Any) -> None:
        stages = _stages(tensor, self.names)
        if stages is None:  # not a symbolic tensor of the data's columns: a later call may be
            return
        index, self.calls = self.calls, self.calls + 1
        if index < len(self.states):
            state = self.states[index]
            if state["class"] != type(layer).__name__:
                raise ValueError(f"the module builds another model than the one adapted: {layer.name!r} is no "
                                 f"{state['class']}")  # fmt: skip
            give_state(layer, state, tensor.shape)
        elif self.batches is not None:
            inputs = LayerInputs(stages, self.batches, self.names)
            layer.adapt(inputs.dataset())
            self.states.append({"class": type(layer).__name__, "name": layer.name, **state_of(layer)})
            log.info("adapted the model's %s %r on the first %s training records: %s", type(layer).__name__,
                     layer.name, f"{inputs.taken:,}", _said(self.states[-1]))  # fmt: skip


def state_of(layer: Any) -> dict[str, Any]:
    """What an adapted layer learnt, as JSON: its mean and variance, vocabulary or bin boundaries."""
    import keras

    if isinstance(layer, keras.layers.Normalization):
        return {"mean": np.asarray(layer.adapt_mean).tolist(), "variance": np.asarray(layer.adapt_variance).tolist()}
    if isinstance(layer, keras.layers.Discretization):
        return {"bin_boundaries": [float(value) for value in layer.bin_boundaries]}
    vocabulary = layer.get_vocabulary(include_special_tokens=False)
    return {"vocabulary": [value.item() if isinstance(value, np.generic) else value for value in vocabulary]}


def give_state(layer: Any, state: dict[str, Any], input_shape: Any) -> None:
    """Gives a layer the state `state_of` recorded of its twin in an earlier build, before it is called on a tensor
    of `input_shape` (a Normalization is built with the weights adapt would have given it)."""
    import keras

    if isinstance(layer, keras.layers.Normalization):
        if not layer.built:
            layer.build(tuple(input_shape))
        layer.adapt_mean.assign(np.asarray(state["mean"], "float32"))
        layer.adapt_variance.assign(np.asarray(state["variance"], "float32"))
        layer.finalize_state()
    elif isinstance(layer, keras.layers.Discretization):
        layer.bin_boundaries = list(state["bin_boundaries"])
    else:
        layer.set_vocabulary(state["vocabulary"])


class LayerInputs:
    """What reaches a layer's input from the data's columns, for each batch, as a `tf.data.Dataset` that
    `layer.adapt` streams; `taken`: how many records it gave, once read. `stages` (`_stages`): the columns it is
    computed from and the graph from them to it, or to what a model's own Input is fed, then that model's graph."""

    def __init__(self, stages: list[tuple[list[Any], Any]], batches: Callable[[], Iterable[Any]], names: Any):
        import keras

        self.columns = stages[0][0]
        self.graphs = [keras.Model(inputs, output) for inputs, output in stages]
        self.batches, self.names, self.taken = batches, names, 0

    def dataset(self) -> Any:
        import tensorflow as tf

        first = next(self._inputs(), None)
        if first is None:
            raise ValueError("the training split has no records to adapt the model's preprocessing layers on")
        spec = tf.TensorSpec((None, *first.shape[1:]), tf.as_dtype(first.dtype))
        return tf.data.Dataset.from_generator(self._counted, output_signature=spec)

    def _counted(self) -> Iterator[np.ndarray]:
        self.taken = 0
        for value in self._inputs():
            self.taken += len(value)
            yield value

    def _inputs(self) -> Iterator[np.ndarray]:
        for x in self.batches():
            value = [_fed(column, x, self.names) for column in self.columns]
            for graph in self.graphs:
                value = graph(value, training=False)
            yield np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def _stages(tensor: Any, names: dict[str, str] | None) -> list[tuple[list[Any], Any]] | None:
    """How the data's columns reach `tensor`: [(the column Inputs, tensor)]; for a tensor of a model's own unnamed
    Input while kflow feeds that model (`feeding`), [(the column Inputs, what it feeds), (that Input, tensor)];
    None if the data's columns do not reach it."""
    columns = _columns(tensor, names)
    if columns is not None:
        return [(columns, tensor)]
    own = _columns(tensor, None)
    fed = _columns(_FEEDING[-1], names) if _FEEDING and own is not None else None
    return None if fed is None else [(fed, _FEEDING[-1]), (own, tensor)]


def _columns(tensor: Any, names: dict[str, str] | None) -> list[Any] | None:
    """The Input tensors `tensor` is computed from, if it is symbolic and each of them is one the data feeds (an
    Input named as a column, `names`, or the one input of a task whose inputs are not named); None else."""
    found: dict[int, Any] = {}
    stack = [tensor]
    while stack:
        each = stack.pop()
        history = getattr(each, "_keras_history", None)
        if history is None:
            return None
        operation, node_index, _ = history
        node = operation._inbound_nodes[node_index]
        if node.is_input:
            found[id(each)] = each
        else:
            stack.extend(node.input_tensors)
    columns = list(found.values())
    if names is None:
        return columns if len(columns) == 1 else None
    return columns if columns and all(_name(column) in names for column in columns) else None


def _name(column: Any) -> str:
    return column._keras_history[0].name  # the InputLayer's: keras.Input(name=...)


def _fed(column: Any, x: Any, names: dict[str, str] | None) -> np.ndarray:
    """The batch's values for the model Input `column`: the column it is named after, or the whole of a task's
    unnamed inputs; shaped and typed as it declares."""
    if names is not None:
        value = np.asarray(x[names[_name(column)]])
    else:
        value = np.asarray(x)
    rank = len(column.shape)
    if value.ndim == rank + 1 and value.shape[-1] == 1:
        value = value[..., 0]
    elif value.ndim == rank - 1:
        value = value[..., None]
    dtype = str(column.dtype)
    return value if dtype == "string" or value.dtype.kind in "OSU" else value.astype(dtype)


def _said(state: dict[str, Any]) -> str:
    if "mean" in state:
        return f"{len(np.ravel(state['mean']))} mean(s) and variance(s)"
    if "bin_boundaries" in state:
        return f"{len(state['bin_boundaries'])} bin boundaries"
    return f"{len(state['vocabulary']):,} values in its vocabulary"
