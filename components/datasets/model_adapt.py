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
a symbolic tensor computed from what the data feeds (the model's `keras.Input(name=column)`; a model's one unnamed
Input, which kflow feeds a table's number matrix or a task's images, model_graph.py), the graph from the data to the
layer is run on the first ADAPT_RECORDS records of Split-train, in the split's order, and the layer's `adapt` is
given what reaches it; then the call goes on, as after the example's `adapt`. That build is the first
(`Task.prepare`, on every process of a cluster alike); the layers' states (a mean and a variance, a vocabulary, bin
boundaries) go into the model's assets (ADAPTED_FILE), and every later build (a worker's, the export's) gives each
layer its state at the same call. model.keras and the serving SavedModel keep them, as any adapted layer's.
A `keras.utils.FeatureSpace` (keras.io's structured data examples) refuses to give its inputs or encodings until it
is adapted: a FeatureSpace of the data's columns is adapted there, as `space.adapt(dataset)` would be, on the same
records, its preprocessors' states kept and given back in the same way.

Not adapted: the layers of a subclassed model (Keras calls them in a graph it traces, not on the model's symbolic
inputs; a `Normalization()` never adapted there fails in Keras itself), and a lookup in `tf_idf` mode (its idf
weights); the Trainer's log says each layer left so.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

ADAPTED_FILE = "adapted_layers.json"
ADAPT_BATCH = 250
ADAPT_RECORDS = 100_000  # the most training records a layer is adapted on (Keras adapts on what it is given)


def names_now() -> dict[str, int]:
    """Keras' count of the automatic names it gave, by prefix (`dense`: 2)."""
    from keras.src.backend.common import global_state

    return dict(global_state.get_global_attribute("object_name_uids", default={}) or {})


@contextlib.contextmanager
def names_from(start: dict[str, int]) -> Iterator[None]:
    """A build of a user's model whose layers Keras names from the count `start` (the count as its module was
    imported: the layers the module made then keep theirs), however many builds came before (prepare's adapting
    build, the export's plain copy): every build of it names its layers alike, as the states adapted, the logs and
    an earlier model's file name them. What is named after it is numbered past both."""
    from keras.src.backend.common import global_state

    kept = names_now()
    global_state.set_global_attribute("object_name_uids", collections.defaultdict(int, start))
    try:
        yield
    finally:
        built = names_now()
        merged = {prefix: max(kept.get(prefix, 0), built.get(prefix, 0)) for prefix in {*kept, *built}}
        global_state.set_global_attribute("object_name_uids", collections.defaultdict(int, merged))


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
        return not layer.get_vocabulary(include_special_tokens=False)
    return False


class AdaptingBuild:
    """While a user's model is built (`with AdaptingBuild(...)`): each call of a preprocessing layer never adapted,
    on a symbolic tensor computed from the data's columns, gives the layer its state first: adapted on `batches`
    (a new iterator of the task's inputs a call: the first build's) and kept in `states`, or taken from `states`
    (a later build's), the k-th such call's the k-th state. `names`: the task's named inputs (its columns), in
    order, None for a task whose inputs are one unnamed tensor (images); `unnamed`: what kflow feeds a model's one
    unnamed input on a table (model_graph.unnamed_input_feed: {column: Input}, the tensor), None if nothing."""

    def __init__(
        self,
        batches: Callable[[], Iterable[Any]] | None,
        states: list[dict[str, Any]] | None,
        names: Iterable[str] | None,
        unnamed: Callable[[], tuple[dict[str, Any], Any] | None] | None = None,
    ):
        from kflow.components.models.tabular_mlp import layer_name

        self.batches = batches
        self.states = [] if states is None else states
        self.names: dict[str, str] | None = None
        if names is not None:  # An Input is fed the column it is named after, or that kflow named it after
            taken: set[str] = set()  # (model_graph.with_graph names a subclassed model's Inputs in this order)
            self.names = {layer_name(name, taken): name for name in names}
            self.names.update({name: name for name in names if name not in self.names})
        self.unnamed = functools.cache(unnamed) if unnamed is not None else None
        self.calls = 0
        self.saved: dict[tuple[type, str], Any] = {}

    def __enter__(self) -> AdaptingBuild:
        from keras.utils import FeatureSpace

        for cls in adapting_classes():
            original = cls.__call__
            self.saved[(cls, "__call__")] = cls.__dict__.get("__call__")

            def call(layer: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                if args and _symbolic(args[0]) and never_adapted(layer):
                    self._on_call(layer, args[0])
                return _original(layer, *args, **kwargs)

            cls.__call__ = call
        # keras.io's FeatureSpace checks that it was adapted before it gives its inputs or encodings: adapted there.
        checked = FeatureSpace._check_if_adapted
        self.saved[(FeatureSpace, "_check_if_adapted")] = checked

        def check(space: Any) -> None:
            if not space._is_adapted and space._list_adaptable_preprocessors():
                self._on_feature_space(space)
            return checked(space)

        FeatureSpace._check_if_adapted = check
        return self

    def __exit__(self, *exc: Any) -> None:
        for (cls, attribute), own in self.saved.items():
            if own is None:
                delattr(cls, attribute)
            else:
                setattr(cls, attribute, own)

    def _on_feature_space(self, space: Any) -> None:
        """A FeatureSpace of the data's columns (its features named by them), adapted as `space.adapt(dataset)`
        would be on the first records, or given its preprocessors' states; else left for Keras to refuse."""
        names = self.names.values() if self.names is not None else ()
        adaptable = space._list_adaptable_preprocessors()
        if not set(adaptable) <= set(names):
            return
        index, self.calls = self.calls, self.calls + 1
        if index < len(self.states):
            state = self.states[index]
            if state["class"] != "FeatureSpace" or sorted(state["features"]) != sorted(adaptable):
                raise ValueError(f"the module builds another model than the one adapted: {space.name!r} is no "
                                 f"{state['class']} of the same features")  # fmt: skip
            for name in adaptable:
                give_state(space.preprocessors[name], state["features"][name], (None, 1))
            space._is_adapted = True
        elif self.batches is not None:
            import tensorflow as tf

            columns: dict[str, list[np.ndarray]] = {name: [] for name in adaptable}
            for x in self.batches():
                for name in adaptable:
                    columns[name].append(_fed(space.inputs[name], x[name]))
            data = {name: np.concatenate(parts) for name, parts in columns.items()}
            space.adapt(tf.data.Dataset.from_tensor_slices(data).batch(ADAPT_BATCH))
            features = _finite_features(space, adaptable)
            self.states.append({"class": "FeatureSpace", "name": space.name, "features": features})
            log.info("adapted the model's FeatureSpace %r on the first %s training records: %d features",
                     space.name, f"{len(next(iter(data.values()))):,}", len(features))  # fmt: skip

    def _on_call(self, layer: Any, tensor: Any) -> None:
        if getattr(layer, "output_mode", getattr(layer, "_output_mode", None)) == "tf_idf":
            return  # its idf weights are not adapted here: give it vocabulary= and idf_weights=
        stages = self._stages(tensor)
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
            inputs = LayerInputs(stages, self.batches)
            layer.adapt(inputs.dataset())
            state = finite_state(layer)
            self.states.append({"class": type(layer).__name__, "name": layer.name, **state})
            log.info("adapted the model's %s %r on the first %s training records: %s", type(layer).__name__,
                     layer.name, f"{inputs.taken:,}", _said(self.states[-1]))  # fmt: skip

    def _stages(self, tensor: Any) -> list[Stage] | None:
        """How the data reaches `tensor` (`Stage`s); None if it does not: an Input that is no column, a task
        input kflow feeds nothing, a declared shape that is not what kflow feeds (said later, by model_graph)."""
        inputs = _inputs_of(tensor)
        if not inputs:
            return None
        if self.names is None:  # a task of one unnamed tensor (images) feeds a model's one input
            return [Stage(inputs, [None], tensor)] if len(inputs) == 1 else None
        columns = [self.names.get(_name(each)) for each in inputs]
        if all(columns):
            return [Stage(inputs, columns, tensor)]
        fed = self.unnamed() if self.unnamed is not None and len(inputs) == 1 else None
        if fed is None or not _fits(inputs[0].shape, fed[1].shape):
            return None
        return [Stage(list(fed[0].values()), list(fed[0]), fed[1]), Stage(inputs, [None], tensor)]


@dataclass
class Stage:
    """A graph of the data to a layer's input: from `inputs`, each fed its column of the task's batch (None: the
    batch as it is, or the previous stage's output), to `output`."""

    inputs: list[Any]
    columns: list[str | None]
    output: Any


def state_of(layer: Any) -> dict[str, Any]:
    """What an adapted layer learnt, as JSON: its mean and variance, vocabulary or bin boundaries."""
    import keras

    if isinstance(layer, keras.layers.Normalization):
        return {"mean": np.asarray(layer.adapt_mean).tolist(), "variance": np.asarray(layer.adapt_variance).tolist()}
    if isinstance(layer, keras.layers.Discretization):
        return {"bin_boundaries": [float(value) for value in layer.bin_boundaries]}
    vocabulary = layer.get_vocabulary(include_special_tokens=False)
    return {"vocabulary": [value.item() if isinstance(value, np.generic) else value for value in vocabulary]}


def finite_state(layer: Any) -> dict[str, Any]:
    """`state_of` an adapted layer, refused where a missing number made it NaN (the model would train to NaN)."""
    state = state_of(layer)
    key = _not_finite(state)
    if key is not None:
        raise ValueError(f"{type(layer).__name__} {layer.name!r} adapted to a {key} that is not a number: "
                         "what reaches it holds missing values (NaN, as the task gives a missing number); "
                         "fill them before it (keras.ops.nan_to_num)")  # fmt: skip
    return state


def _not_finite(state: dict[str, Any]) -> str | None:
    """The first part of a layer's state (`state_of`) that holds NaN or an infinity, or None."""
    return next((key for key in ("mean", "variance", "bin_boundaries")
                 if key in state and not np.all(np.isfinite(state[key]))), None)  # fmt: skip


def _finite_features(space: Any, names: list[str]) -> dict[str, dict[str, Any]]:
    """{feature: `state_of` its preprocessor} of an adapted FeatureSpace, refused naming every feature whose state a
    missing number made NaN: a FeatureSpace has no place to fill them."""
    states = {name: state_of(space.preprocessors[name]) for name in names}
    missing = [name for name, state in states.items() if _not_finite(state) is not None]
    if missing:
        one = len(missing) == 1
        beside = "a keras.Input(name=column), keras.ops.nan_to_num, a Normalization(), concatenated with its encodings"
        raise ValueError(f"FeatureSpace {space.name!r} adapted to states that are not numbers: "
                         f"{', '.join(map(repr, missing))} hold{'s' if one else ''} missing values (NaN, as the task "
                         f"gives a missing number), which a FeatureSpace passes on; leave {'it' if one else 'them'} "
                         f"out of it, or encode {'it' if one else 'each'} beside it: {beside}")  # fmt: skip
    return states


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
    """What reaches a layer's input from the data, for each batch, as a `tf.data.Dataset` that `layer.adapt`
    streams; `taken`: how many records it gave, once read. `stages`: the graph from the data's columns to it, or to
    what a model's own unnamed Input is fed, then that model's graph to it."""

    def __init__(self, stages: list[Stage], batches: Callable[[], Iterable[Any]]):
        import keras

        self.stages, self.batches, self.taken = stages, batches, 0
        self.graphs = [keras.Model(stage.inputs, stage.output) for stage in stages]

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
            first = self.stages[0]
            pairs = zip(first.inputs, first.columns, strict=True)
            value = [_fed(each, x if column is None else x[column]) for each, column in pairs]
            for graph, stage in zip(self.graphs, self.stages, strict=True):
                if stage is not first:
                    value = [_fed(stage.inputs[0], value)]
                value = graph(value, training=False)
            yield np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def _symbolic(value: Any) -> bool:
    """Whether a layer is called on a symbolic tensor (a build), not on values (a batch, or Keras tracing a
    subclassed model's call in a graph, where a lookup's state cannot be read)."""
    import keras

    return any(isinstance(each, keras.KerasTensor) for each in keras.tree.flatten(value))


def _inputs_of(tensor: Any) -> list[Any] | None:
    """The model Inputs a symbolic `tensor` is computed from, in the order found; None if it is not symbolic."""
    found: dict[int, Any] = {}
    seen: set[int] = set()
    stack = [tensor]
    while stack:
        each = stack.pop()
        if id(each) in seen:
            continue
        seen.add(id(each))
        history = getattr(each, "_keras_history", None)
        if history is None:
            return None
        operation, node_index, _ = history
        node = operation._inbound_nodes[node_index]
        if node.is_input:
            found[id(each)] = each
        else:
            stack.extend(node.input_tensors)
    return list(found.values())


def _name(column: Any) -> str:
    return column._keras_history[0].name  # the InputLayer's: keras.Input(name=...)


def _fits(declared: Any, fed: Any) -> bool:
    """Whether a tensor of shape `fed` fits an Input of shape `declared` (a dimension None fits any)."""
    return len(declared) == len(fed) and all(
        a is None or b is None or a == b for a, b in zip(declared, fed, strict=True)
    )


def _fed(column: Any, value: Any) -> np.ndarray:
    """`value` as the model Input `column` takes it: its shape (a trailing 1 more or less) and its dtype."""
    value = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
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
