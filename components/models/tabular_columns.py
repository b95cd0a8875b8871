"""What each input column of a tabular model's first dense layer means, read from the built model itself.

tabular_mlp (on its own encodings or a Transform's preprocessing model's) concatenates every feature's encoding
into one vector (`features`) that its first hidden layer reads: a category's one-hot (its out-of-vocabulary slots,
then its values), free text's multi-hot words, a date's parts, every number normalised, the integer codes'
one-hots and the missing-number flags. Retrained on more rows of the same table, the vector changes shape as the
data does (a state first seen, a constant column that now varies): a warm start then maps the earlier kernel's
rows onto the new one by these meanings (trainer/warm_start.py), as TensorFlow Estimators' `WarmStartSettings`
remapped a vocabulary's rows (`VocabInfo`).

A meaning is a tuple: ("category", layer, value), ("category_oov", layer, index, slots), ("word", layer, token),
("date", layer, part), ("number", input), ("code", input, code), ("code_other", input), ("missing", input). Its
`earlier` meaning (`stood_for`) is what the same value was read as by a model that lacked it: a new category value
was its feature's single out-of-vocabulary slot, a new integer code its column's "other" slot.
"""

from __future__ import annotations

from typing import Any

FEATURES = "features"  # tabular_mlp's concatenation of the encoded features


def first_dense(model: Any) -> str | None:
    """The name of the dense layer that reads the `features` vector, or None (no such tabular model)."""
    try:
        dense = [layer for layer in model.layers if type(layer).__name__ == "Dense"]
        return next((layer.name for layer in dense if source_layer(layer).name == FEATURES), None)
    except (AttributeError, IndexError):  # a subclassed model: no graph to read
        return None


def input_columns(model: Any) -> list[tuple] | None:
    """The meaning of each column of the `features` vector, in order, or None where a part is not one of
    tabular_mlp's encodings (a Transform's preprocessing model, another model)."""
    try:
        concat = model.get_layer(FEATURES)
        return _columns(concat)
    except (ValueError, AttributeError, IndexError):  # no such layer, or a subclassed model: no graph to read
        return None


def _columns(concat: Any) -> list[tuple] | None:
    columns: list[tuple] = []
    for tensor in map(_through_preprocessing, _inbound(concat)):
        layer = tensor._keras_history.operation
        kind = type(layer).__name__
        if kind == "StringLookup":
            vocabulary, slots = layer.get_vocabulary(), layer.num_oov_indices
            columns += [("category_oov", layer.name, index, slots) for index in range(slots)]
            columns += [("category", layer.name, str(value)) for value in vocabulary[slots:]]
        elif kind == "Flatten" and type(source_layer(layer)).__name__ == "TextVectorization":
            words = source_layer(layer)
            columns += [("word", words.name, str(token)) for token in words.get_vocabulary()]
        elif kind == "DateParts":
            columns += [("date", layer.name, part) for part in range(int(tensor.shape[-1]))]
        elif kind == "Normalization":  # norm <- fill <- the number block
            columns += [("number", name) for name in _block_inputs(source_layer(source_layer(layer)))]
        elif kind == "CodeOneHot":
            numbers = _block_inputs(source_layer(layer))
            columns += [("code", numbers[column], code) for column, codes in layer.codes for code in codes]
            columns += [("code_other", numbers[column]) for column, _ in layer.codes]
        elif kind == "MissingFlags":
            numbers = _block_inputs(source_layer(layer))
            columns += [("missing", numbers[column]) for column in layer.columns]
        else:
            return None
    return columns if len(columns) == int(concat.output.shape[-1]) else None


def stood_for(meaning: tuple, earlier: set[tuple]) -> tuple | None:
    """What a model without `meaning` read its value as (among the `earlier` model's meanings), or None."""
    if meaning[0] == "category":
        oov = ("category_oov", meaning[1], 0, 1)  # one slot: every unknown value's; hashed slots differ by value
        return oov if oov in earlier else None
    if meaning[0] == "code":
        other = ("code_other", meaning[1])
        return other if other in earlier else None
    return None


def _through_preprocessing(tensor: Any) -> Any:
    """The encoding a column block is: tabular_mlp on a Transform's preprocessing model (the table recipe's) reads
    each output of that embedded model flattened (`flat_out_<name>`, a cast before it): the output inside it."""
    layer = tensor._keras_history.operation
    if type(layer).__name__ != "Flatten" or not layer.name.startswith("flat_out_"):
        return tensor
    source = _inbound(layer)[0]
    if type(source._keras_history.operation).__name__ == "Cast":
        source = _inbound(source._keras_history.operation)[0]
    inner = source._keras_history.operation
    if type(inner).__name__ not in ("Functional", "Model"):
        return source
    return inner.outputs[source._keras_history.tensor_index]


def _inbound(layer: Any) -> list[Any]:
    return list(layer._inbound_nodes[0].input_tensors)


def source_layer(layer: Any) -> Any:
    """The layer whose output `layer` reads (its first input's)."""
    return _inbound(layer)[0]._keras_history.operation


def _block_inputs(block: Any) -> list[str]:
    """The names of the number block's columns, in order: the Input layers it concatenates, or its one Input."""
    if type(block).__name__ == "InputLayer":
        return [block.name]
    return [tensor._keras_history.operation.name for tensor in _inbound(block)]
