"""trainer.warm_start: the new model starts from the weights of a compatible earlier one.

Compatible means the same model, fed the same way. For a tabular model (components/models/tabular_columns.py)
that is the same layers by name with weights of the same shapes, but for the first hidden layer, whose input
columns are matched by meaning: retrained on more rows of the same table, a category gains values, a constant
column starts to vary, an integer column gains codes, and each earlier column's row of the kernel moves to where
its value now is (a new value starts from the row of the earlier model's unknown-value slot that scored it, or
from zero; a column gone is dropped), as TensorFlow Estimators' `WarmStartSettings` remapped vocabularies; so is a
user's functional model of Keras' encodings of its columns, adapted on the data (keras.io's structured data), and a
user's Sequential kflow feeds the table's number columns as one matrix (tensorflow.org's "Basic regression"). Any
other model must have the same inputs (types and shapes; named ones by name, unnamed ones by place, as Keras
names them anew in each build), the same layers in the same order with weights of the same shapes, and the same
vocabularies in its lookup layers. A classifier's output columns follow the class names (`assets/classes.txt`): a
new class starts as the earlier model's least likely one. The first difference that no mapping covers is one line:
the error of a model named by its run, `latest_blessed`'s warning as it trains from scratch. A numeric feature's
normalisation is not compared: it is the new data's (the earlier weights then adapt to it within the first
epochs), as a model trained from scratch would have it.

The earlier model is resolved when the run starts (pipeline/app/warm_start.py) into `warm_start_model_uri`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from kflow.components.models import load_trained
from kflow.components.models.tabular_columns import (
    encodings_read,
    first_dense_columns,
    readers,
    source_layer,
    stood_for,
)
from kflow.components.util.predictions import TASK_INFERRED, class_names, predicting
from kflow.pipeline.dsl.artifacts import Model

log = logging.getLogger("kflow.trainer")
# Why a Trainer under latest_blessed has no model and no reason: nothing resolved it (kflow run's standard pipeline
# does, pipeline/app/warm_start.py; a compiled pipeline's tasks do not).
NOT_RESOLVED = "no earlier model was resolved for this run (kflow run resolves it; a compiled pipeline does not)"


def warm_start(keras_model: Any, config: Any, task: Any) -> str | None:
    """Copies the earlier model's weights into `keras_model`; returns its folder, or None (from scratch)."""
    if not config.warm_start:
        return None
    uri = config.warm_start_model_uri
    if uri is None:
        if config.warm_start != "latest_blessed":
            raise ValueError(f"trainer.warm_start: run {config.warm_start!r} was not resolved to a model")
        reason = config.warm_start_reason or NOT_RESOLVED  # none given: a compiled pipeline's Trainer
        log.info("train: from scratch (trainer.warm_start: latest_blessed): %s", reason)
        return None
    artifact = Model(uri)
    earlier_classes, classes = artifact.class_names, class_names(task)
    # A classifier then a number (a gauntlet retraining: 20 distinct counts, then 25): no layer maps. Said only where
    # the earlier model's classes are known: one of no classes.txt is a number's, or a classifier kflow trained
    # before it wrote one (the layers then say what differs).
    if earlier_classes and not classes:
        why = f"the model at {uri} is {predicting(earlier_classes)}, this run's {predicting(classes)} ({TASK_INFERRED})"
        return _from_scratch(config, why)
    earlier = load_trained(artifact.keras_file, task.model_name)
    try:
        weights, changes = carried_weights(earlier, keras_model, earlier_classes, classes)
    except Incompatible as problem:
        return _from_scratch(config, f"the model at {uri} is not compatible: {problem}")
    start_from(keras_model, weights)
    said = f"; {'; '.join(changes)}" if changes else ""
    log.info("train: warm-started from %s (trainer.warm_start: %s)%s", uri, config.warm_start, said)
    return str(Path(uri))


def _from_scratch(config: Any, why: str) -> None:
    """A model named by its run is refused (`why`); the latest blessed, found for the user, is passed over with a
    warning: the layers may differ for good (a tuner's `hidden_units`, an edited model, another task inferred)."""
    if config.warm_start != "latest_blessed":
        raise ValueError(f"trainer.warm_start: {why}")
    log.warning("train: from scratch (trainer.warm_start: latest_blessed): %s", why)


def start_from(model: Any, weights: list[tuple[Any, list[np.ndarray]]]) -> None:
    """Sets the carried weights (`carried_weights`) into `model`, but for its adapted `Normalization` layers' mean and
    variance: the new data's, as the docstring says."""
    kept = _adapted_normalization(model)
    for layer, values in weights:
        layer.set_weights(values)
    for layer, (mean, variance) in kept.items():
        layer.adapt_mean.assign(mean)
        layer.adapt_variance.assign(variance)
        layer.finalize_state()  # what training computes with (set_weights alone: the earlier model's in the file only)


def _adapted_normalization(model: Any) -> dict[Any, tuple[np.ndarray, np.ndarray]]:
    """The model's adapted `Normalization` layers (a user's, components/datasets/model_adapt.py) and their mean and
    variance, which are weights: copied from the earlier model, they would be its data's."""
    import keras

    from kflow.components.datasets.model_checks import all_layers

    return {
        layer: (np.asarray(layer.adapt_mean), np.asarray(layer.adapt_variance))
        for layer in all_layers(model)
        if isinstance(layer, keras.layers.Normalization) and layer.input_mean is None and layer.built
    }


class Incompatible(ValueError):
    """The earlier model's weights cannot mean the same in the new one: the first reason."""


def carried_weights(
    earlier: Any, model: Any, earlier_classes: list[str] | None, classes: list[str] | None
) -> tuple[list[tuple[Any, list[np.ndarray]]], list[str]]:
    """[(layer of `model`, the weights it starts from)] and what was mapped, said in a line each."""
    output = _output_dense(model)
    new_classes = bool(earlier_classes and classes and earlier_classes != classes)
    if new_classes and output is None:
        raise Incompatible(f"the classes differ ({classes[:6]}, the earlier model's {earlier_classes[:6]})")
    reading_before, reading_now = first_dense_columns(earlier), first_dense_columns(model)
    mapped = reading_before is not None and reading_now is not None and reading_before[0] == reading_now[0]
    dense, before, now = (reading_now[0], reading_before[1], reading_now[1]) if mapped else (None, None, None)
    tokens = {} if mapped else _embedded_vocabularies(earlier, model)
    if mapped and not set(before) & set(now):
        raise Incompatible(f"none of the input columns of {dense!r} is the earlier model's (another table's model?)")
    if mapped:
        problem = _lookups_beside(earlier, model)
        if problem:
            raise Incompatible(problem)
        pairs = [pair for new, old in _by_name(earlier, model)
                 for pair in (_by_name(old, new) if _holds(new, dense) else [(new, old)])]  # fmt: skip
    else:
        skipped = {*tokens, *(lookup for lookup, _, _ in tokens.values())} | ({output.name} if new_classes else set())
        problem = incompatibility(earlier, model, skipped)
        if problem:
            raise Incompatible(problem)
        pairs = [(new, old) for new, old in zip(model.layers, earlier.layers, strict=True) if old.weights]
    carried, changes = [], []
    for new, old in pairs:
        values = [np.asarray(value) for value in old.get_weights()]
        if new.name == dense and before != now:
            values[0], change = _remap_rows(values[0], before, now, stood_for, _named)
            changes.append(f"{new.name}'s input columns mapped by meaning: {change}")
        elif new.name in tokens and tokens[new.name][1] != tokens[new.name][2]:
            _, old_tokens, new_tokens = tokens[new.name]
            values[0], change = _remap_rows(values[0], old_tokens, new_tokens, _unknown_token, repr)
            changes.append(f"{new.name}'s rows mapped by token: {change}")
        if new is output and new_classes:  # also the first Dense's, in a model without hidden layers
            values, change = _remap_classes(values, earlier_classes, classes)
            changes.append(f"the classes mapped by name: {change}")
        shapes, expected = [tuple(v.shape) for v in values], [tuple(w.shape) for w in new.weights]
        if shapes != expected:
            raise Incompatible(f"layer {new.name!r} has weights of shapes {expected}, the earlier model's {shapes}")
        carried.append((new, values))
    return carried, changes


def _by_name(earlier: Any, model: Any) -> list[tuple[Any, Any]]:
    """Each layer of `model` with weights and the earlier model's of its name; not the adapted `Normalization`
    layers (`start_from` gives them the new data's state): Keras numbers a user's anew when a column is added."""
    adapted = {*_adapted_normalization(model), *_adapted_normalization(earlier)}
    old_layers = {layer.name: layer for layer in earlier.layers if layer not in adapted}
    pairs = []
    for new in model.layers:
        old = old_layers.get(new.name)
        if new in adapted or (not new.weights and not (old is not None and old.weights)):
            continue
        if old is None:
            raise Incompatible(f"layer {new.name!r} is new (the earlier model has no layer of that name)")
        if type(old).__name__ != type(new).__name__:
            raise Incompatible(
                f"layer {new.name!r} is a {type(new).__name__}, the earlier model's a {type(old).__name__}"
            )
        pairs.append((new, old))
    paired = {new.name for new, _ in pairs}
    gone = [layer.name for layer in old_layers.values() if layer.weights and layer.name not in paired]
    if gone:
        raise Incompatible(f"the earlier model's layer {gone[0]!r} has no counterpart")
    return pairs


def _holds(layer: Any, name: str) -> bool:
    """Whether `layer` is a nested model holding the layer `name` (a user's Sequential kflow feeds a table's number
    matrix, tabular_columns._number_matrix_columns): its layers are paired one by one, the first Dense mapped."""
    return any(inner.name == name for inner in getattr(layer, "layers", []))


def _lookups_beside(earlier: Any, model: Any) -> str | None:
    """The first vocabulary change of a lookup whose columns the first Dense's mapping does not read (a wide path's:
    the weights that read it keep their places), or None."""
    read_before, read_now = encodings_read(earlier), encodings_read(model)
    old = {layer.name: layer for layer in earlier.layers
           if hasattr(layer, "get_vocabulary") and layer not in read_before}  # fmt: skip
    for layer in model.layers:
        if hasattr(layer, "get_vocabulary") and layer not in read_now:
            if layer.name not in old:
                return f"layer {layer.name!r} is new (the earlier model has no lookup of that name)"
            problem = _vocabulary_change(old[layer.name], layer, layer.name)
            if problem:
                return problem
    return None


def _output_dense(model: Any) -> Any | None:
    """The Dense layer that outputs the model's scores, a unit a class (its own softmax), or None."""
    try:
        layer = model.outputs[0]._keras_history.operation
    except (AttributeError, IndexError, TypeError):  # a subclassed model: no graph to read
        return None
    return layer if type(layer).__name__ == "Dense" else None


def _embedded_vocabularies(earlier: Any, model: Any) -> dict[str, tuple[str, list[str], list[str]]]:
    """{Embedding layer: (the lookup whose ids it reads, its earlier vocabulary, its vocabulary now)} for each
    Embedding of both models whose rows are a lookup's vocabulary (a text model's TextVectorization, in `int` mode:
    row i is token i), as Estimators' `VocabInfo` names an embedding's vocabulary. More text reorders and renews the
    words kept, and each row follows its token."""
    found, earlier_embeddings = {}, _embeddings(earlier)
    for name, (lookup, size) in _embeddings(model).items():
        before = earlier_embeddings.get(name)
        # Each lookup read by its Embedding alone: another reader's weights would keep their places.
        if before is not None and before[0].name == lookup.name and len(readers(lookup)) == 1:
            old_tokens, new_tokens = list(map(str, before[0].get_vocabulary())), list(map(str, lookup.get_vocabulary()))
            if (len(old_tokens), len(new_tokens)) == (before[1], size):
                found[name] = (lookup.name, old_tokens, new_tokens)
    return found


def _embeddings(model: Any) -> dict[str, tuple[Any, int]]:
    found = {}
    for layer in getattr(model, "layers", []):
        if type(layer).__name__ == "Embedding":
            try:
                lookup = source_layer(layer)
            except (AttributeError, IndexError):  # a subclassed model: no graph to read
                continue
            if hasattr(lookup, "get_vocabulary"):
                found[layer.name] = (lookup, int(layer.input_dim))
    return found


def _unknown_token(token: str, known: set[str]) -> str | None:
    """A token new to the vocabulary was the earlier model's unknown one."""
    return "[UNK]" if "[UNK]" in known else None


def _remap_rows(kernel: np.ndarray, before: list, now: list, stood_for, named) -> tuple[np.ndarray, str]:
    """`kernel`'s rows for `before`'s meanings moved to `now`'s; a new meaning starts from the row of what it
    `stood_for` in the earlier model, or zero; `named` says a meaning in the log."""
    index = {meaning: row for row, meaning in enumerate(before)}
    known = set(before)
    rows = np.zeros((len(now), kernel.shape[1]), kernel.dtype)
    added = []
    for row, meaning in enumerate(now):
        source = index.get(meaning)
        if source is None:
            added.append(meaning)
            was = stood_for(meaning, known)
            source = index.get(was) if was is not None else None
        if source is not None:
            rows[row] = kernel[source]
    current = set(now)
    gone = [meaning for meaning in before if meaning not in current]
    # A category's values are ordered by their counts: more rows reorder them (a swap a positional copy would miss).
    order_before, order_now = [m for m in before if m in current], [m for m in now if m in index]
    moved = sum(a != b for a, b in zip(order_before, order_now, strict=True))
    kept = f"{len(now) - len(added)} kept" + (f" ({moved} moved)" if moved else "")
    return rows, f"{kept}, {len(added)} new{_some(added, named)}, {len(gone)} gone{_some(gone, named)}"


def _some(meanings: list, named) -> str:
    said = list(dict.fromkeys(map(named, meanings)))  # a feature's hashed slots said once
    if not said:
        return ""
    return f" ({', '.join(said[:5])}{', …' if len(said) > 5 else ''})"


def _named(meaning: tuple) -> str:
    kind, where, *rest = meaning
    where = where.removeprefix("lookup_").removeprefix("words_").removeprefix("date_")
    if kind in ("category", "word", "code"):
        return f"{where}={rest[0]!r}"
    if kind == "category_oov":
        return f"{where}'s {rest[1]} unknown-value slot{'s' if rest[1] > 1 else ''}"
    if kind == "number":
        return where
    return f"{where} ({kind.replace('_', ' ')})"


def _remap_classes(values: list[np.ndarray], before: list[str], now: list[str]) -> tuple[list[np.ndarray], str]:
    if len(values) != 2:  # a Dense without a bias
        raise Incompatible(f"the classes differ ({now[:6]}, the earlier model's {before[:6]})")
    kernel, bias = values
    index = {name: column for column, name in enumerate(before)}
    new_kernel = np.zeros((kernel.shape[0], len(now)), kernel.dtype)
    new_bias = np.full((len(now),), bias.min(), bias.dtype)  # a new class starts as the least likely earlier one
    for column, name in enumerate(now):
        if name in index:
            new_kernel[:, column], new_bias[column] = kernel[:, index[name]], bias[index[name]]
    added = [name for name in now if name not in index]
    gone = [name for name in before if name not in set(now)]
    return [new_kernel, new_bias], f"new {added or 'none'}, gone {gone or 'none'}"


def _inputs(model: Any) -> list[tuple[str, str, tuple]]:
    """(name, dtype, shape) of each input: named inputs (a dict: a table's columns) by their keys; unnamed ones by
    their place, as Keras names them anew in each build (`input_layer_2`, `keras_tensor`: a Sequential's)."""
    structure = model.input
    if isinstance(structure, dict):
        return [(str(key), str(tensor.dtype), tuple(tensor.shape)) for key, tensor in sorted(structure.items())]
    return [(f"input {index}", str(tensor.dtype), tuple(tensor.shape)) for index, tensor in enumerate(model.inputs)]


def incompatibility(earlier: Any, model: Any, mapped: set[str] = frozenset()) -> str | None:
    """The first difference that keeps `earlier`'s weights from meaning the same in `model`, or None; the layers
    `mapped` are mapped by name (an output by class, an embedding and its lookup by token): their vocabularies and
    shapes may differ."""
    before, now = _inputs(earlier), _inputs(model)
    if before != now:
        gone = [name for name, *_ in before if name not in {n for n, *_ in now}]
        new = [name for name, *_ in now if name not in {n for n, *_ in before}]
        if gone or new:
            return (
                f"the inputs differ (earlier only: {', '.join(gone) or 'none'}; now only: {', '.join(new) or 'none'})"
            )
        old, new = next((b, n) for b, n in zip(before, now, strict=True) if b != n)
        return f"input {new[0]!r} differs (earlier {old[1]} {old[2]}, now {new[1]} {new[2]})"
    if len(earlier.layers) != len(model.layers):
        return f"the earlier model has {len(earlier.layers)} layers, this one {len(model.layers)}"
    for old, new in zip(earlier.layers, model.layers, strict=True):
        if type(old).__name__ != type(new).__name__:
            return (
                f"layer {new.name!r} is a {type(new).__name__}, the earlier model's {old.name!r} a {type(old).__name__}"
            )
        if new.name in mapped:
            continue
        problem = _vocabulary_change(old, new, new.name)
        if problem:
            return problem
        old_shapes = [tuple(weight.shape) for weight in old.weights]
        new_shapes = [tuple(weight.shape) for weight in new.weights]
        if old_shapes != new_shapes:
            return f"layer {new.name!r} has weights of shapes {new_shapes}, the earlier model's {old_shapes}"
    return None


def _vocabulary_change(old: Any, new: Any, name: str) -> str | None:
    """How a lookup layer's vocabulary changed, that of every lookup in a nested model too (a Transform's
    preprocessing model, embedded whole: its lookups are no layers of the outer model), or None."""
    if hasattr(new, "get_vocabulary") and hasattr(old, "get_vocabulary"):
        old_values, new_values = list(map(str, old.get_vocabulary())), list(map(str, new.get_vocabulary()))
        if old_values == new_values:
            return None
        return (
            f"layer {name!r} has another vocabulary: {_vocabulary_diff(old_values, new_values)}; {VOCABULARY_WAY_OUT}"
        )
    if hasattr(new, "layers") and hasattr(old, "layers"):
        inner = {layer.name: layer for layer in old.layers}
        if [type(layer) for layer in old.layers] == [type(layer) for layer in new.layers]:
            inner = {layer.name: before for before, layer in zip(old.layers, new.layers, strict=True)}  # by place:
            # a nested Sequential's layers are named anew in each build (`rescaling`, `rescaling_1`)
        for layer in new.layers:
            if layer.name not in inner:
                return f"layer {name}/{layer.name!r} is new"
            problem = _vocabulary_change(inner[layer.name], layer, f"{name}/{layer.name}")
            if problem:
                return problem
    return None


# The way out of a lookup's vocabulary changed (a preprocessing_fn's analyzers.vocabulary, a lookup adapted anew).
VOCABULARY_WAY_OUT = (
    "weights read its values by place: give the lookup a fixed vocabulary=[...] to keep it (analyzers.vocabulary's "
    "and adapt()'s follow the data's counts), or set trainer.warm_start: none to train from scratch"
)


def _vocabulary_diff(before: list[str], now: list[str]) -> str:
    """What differs between a lookup's two vocabularies, each part counted with a few of its values: the values new,
    those gone, those kept whose order changed (a vocabulary ordered by counts reorders as the data grows)."""
    known, current = set(before), set(now)
    added = [value for value in now if value not in known]
    gone = [value for value in before if value not in current]
    kept_before, kept_now = [value for value in before if value in current], [value for value in now if value in known]
    moved = [value for value, was in zip(kept_now, kept_before, strict=False) if value != was]
    parts = [f"{len(values)} {what}{_few(values)}" for what, values in (("new", added), ("gone", gone)) if values]
    if moved and parts:
        parts.append(f"{len(moved)} of the {len(kept_now)} kept in another order{_few(moved)}")
    elif moved:
        parts.append(f"the same {len(now)} values, {len(moved)} in another order{_few(moved)}")
    return ", ".join(parts) or f"{len(now)} values, the earlier model's {len(before)}"


def _few(values: list[str], shown: int = 3, width: int = 24) -> str:
    """('a', 'b', 'c', …): the first `shown` values, each cut to `width` characters."""
    said = [repr(value if len(value) <= width else value[: width - 1] + "…") for value in values[:shown]]
    return f" ({', '.join(said)}{', …' if len(values) > shown else ''})"
