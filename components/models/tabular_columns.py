"""What each input column of a tabular model's first dense layer means, read from the built model itself.

tabular_mlp (on its own encodings or a Transform's preprocessing model's) concatenates every feature's encoding
into one vector (`features`) that its first hidden layer reads: a category's one-hot (its out-of-vocabulary slots,
then its values), free text's multi-hot words, a date's parts, every number normalised, the integer codes'
one-hots and the missing-number flags. A user's functional model on a table's columns, as keras.io's structured
data examples write it, is read the same way: a concatenation of each `keras.Input(name=column)`'s encoding by
Keras' own layers (a `StringLookup` or `IntegerLookup` one-hot, a `TextVectorization` multi-hot, a
`Normalization`, a `Discretization`'s bins, the number itself), their states adapted on the data
(components/datasets/model_adapt.py). Retrained on more rows of the same table, the vector changes shape as the
data does (a state first seen, a constant column that now varies): a warm start then maps the earlier kernel's
rows onto the new one by these meanings (trainer/warm_start.py), as TensorFlow Estimators' `WarmStartSettings`
remapped a vocabulary's rows (`VocabInfo`).

A meaning is a tuple: ("category", feature, value), ("category_oov", feature, index, slots), ("word", feature,
token), ("date", feature, part), ("number", feature), ("code", feature, code), ("code_other", feature), ("missing",
feature), ("bin", feature, index: the bins' boundaries are the data's), a feature named by the Input layer it comes
in by. Its
`earlier` meaning (`stood_for`) is what the same value was read as by a model that lacked it: a new category value
was its feature's single out-of-vocabulary slot, a new integer code its column's "other" slot.
"""

from __future__ import annotations

from typing import Any

_WIDE_MODES = ("one_hot", "multi_hot", "count")  # a column a value (not `int`'s index, nor `tf_idf`'s weights)
_KFLOWS = ("lookup_", "words_", "date_")  # kflow's own encodings, named by the feature they read


def first_dense_columns(model: Any) -> tuple[str, list[tuple]] | None:
    """(the name of the model's first Dense, the meaning of each column it reads, in order) where that input is a
    concatenation of the features' encodings (tabular_mlp's `features`, a user's) or one feature's encoding (a table
    of one column), each read by that Dense alone (another layer reading the same columns would keep its rows by
    position); None where a part is not one of the encodings above (a Transform's own layers, an embedding)."""
    read = _first_dense(model)
    if read is None:
        return _number_matrix_columns(model)
    dense, tensor, parts = read
    try:
        columns = _columns(parts)
    except (ValueError, AttributeError, IndexError):  # a part of no graph to read back (an op called twice)
        return None
    if columns is None or len(columns) != int(tensor.shape[-1]) or len(set(columns)) != len(columns):
        return None  # a part read otherwise, or two columns of one meaning (a Transform's own computed numbers)
    return dense.name, columns


# Layers that compute each value of a row from that value alone (a Normalization's state is the new data's: the
# warm start does not carry it), through which a row of the first Dense still reads one number column.
_VALUE_BY_VALUE = ("Normalization", "Dropout", "GaussianNoise", "GaussianDropout", "Activation", "Rescaling")


def _number_matrix_columns(model: Any) -> tuple[str, list[tuple]] | None:
    """(the first Dense, a number a column) of a model of one unnamed input kflow feeds the table's number columns
    as one matrix (`fill_numbers`, components/datasets/model_graph.py: tensorflow.org's "Basic regression"
    Sequential), where that Dense reads the matrix alone, through layers of one value a value; else None."""
    try:
        fill = next((layer for layer in model.layers if layer.name == "fill_numbers"), None)
        if fill is None or type(fill).__name__ != "FillMissing" or not _one_reader(fill):
            return None
        nested = readers(fill)[0]
        dense = next((layer for layer in getattr(nested, "layers", []) if type(layer).__name__ == "Dense"), None)
        if dense is None or len(nested.inputs) != 1:
            return None
        layer = source_layer(dense)
        while type(layer).__name__ != "InputLayer":
            if type(layer).__name__ not in _VALUE_BY_VALUE or not _one_reader(layer):
                return None  # a layer of its own weights a row, or another reader (its rows keep their places)
            layer = source_layer(layer)
        if not _one_reader(layer):
            return None
        return dense.name, [("number", name) for name in _block_inputs(source_layer(fill))]
    except (ValueError, AttributeError, IndexError, TypeError):  # a subclassed model: no graph to read
        return None


def _one_reader(layer: Any) -> bool:
    """Whether one layer reads `layer`'s output (a loaded Sequential's layers have a node a build of it, each the
    same reader's)."""
    return len({id(reader) for reader in readers(layer)}) == 1


def encodings_read(model: Any) -> set[Any]:
    """The layers of `model` whose outputs `first_dense_columns` reads the meanings of (a lookup, a vectorizer)."""
    read = _first_dense(model)
    if read is None:
        return set()
    try:
        layers = {tensor._keras_history.operation for tensor in map(_through_preprocessing, read[2])}
        return layers | {source_layer(layer) for layer in layers if type(layer).__name__ == "Flatten"}
    except (ValueError, AttributeError, IndexError):
        return set()


def _first_dense(model: Any) -> tuple[Any, Any, list[Any]] | None:
    """(the model's first Dense, the tensor it reads, the encodings that tensor concatenates), or None."""
    try:
        dense = next((layer for layer in model.layers if type(layer).__name__ == "Dense"), None)
        if dense is None:
            return None
        tensor = _inbound(dense)[0]
        source = tensor._keras_history.operation
        if len(readers(source)) != 1:
            return None
        parts = _inbound(source) if type(source).__name__ == "Concatenate" else [tensor]
        if len(parts) > 1 and any(len(readers(part._keras_history.operation)) != 1 for part in parts):
            return None  # a part another layer reads too: its rows there keep their places
    except (ValueError, AttributeError, IndexError):  # a subclassed model: no graph to read
        return None
    return dense, tensor, parts


def _output_mode(layer: Any) -> str | None:
    """A layer's output mode, from its config: Keras 3's TextVectorization keeps it private (`_output_mode`), so
    reading `output_mode` failed and no table with a free-text column warm-started (a gauntlet retraining)."""
    return layer.get_config().get("output_mode")


def _columns(parts: list[Any]) -> list[tuple] | None:
    columns: list[tuple] = []
    for tensor in map(_through_preprocessing, parts):
        layer = tensor._keras_history.operation
        kind = type(layer).__name__
        if kind in ("StringLookup", "IntegerLookup"):
            if layer.output_mode not in _WIDE_MODES or layer.mask_token is not None:
                return None
            vocabulary, slots, feature = layer.get_vocabulary(), layer.num_oov_indices, _feature(layer)
            columns += [("category_oov", feature, index, slots) for index in range(slots)]
            columns += [("category", feature, str(value)) for value in vocabulary[slots:]]
        elif kind == "Flatten" and type(source_layer(layer)).__name__ == "TextVectorization":
            if _output_mode(source_layer(layer)) not in _WIDE_MODES:
                return None
            words = source_layer(layer)
            columns += [("word", _feature(words), str(token)) for token in words.get_vocabulary()]
        elif kind == "TextVectorization" and _output_mode(layer) in _WIDE_MODES:  # a user's, read as it comes
            columns += [("word", _feature(layer), str(token)) for token in layer.get_vocabulary()]
        elif kind == "DateParts":
            columns += [("date", _feature(layer), part) for part in range(int(tensor.shape[-1]))]
        elif kind == "Normalization" and type(source_layer(layer)).__name__ == "FillMissing":  # the number block
            columns += [("number", name) for name in _block_inputs(source_layer(source_layer(layer)))]
        elif kind in ("Normalization", "InputLayer") and int(tensor.shape[-1]) == 1:  # a user's number column
            columns.append(("number", _feature(layer)))
        elif kind == "Discretization" and layer.output_mode in _WIDE_MODES:
            columns += [("bin", _feature(layer), index) for index in range(int(tensor.shape[-1]))]
        elif kind == "CodeOneHot":
            numbers = _block_inputs(source_layer(layer))
            columns += [("code", numbers[column], code) for column, codes in layer.codes for code in codes]
            columns += [("code_other", numbers[column]) for column, _ in layer.codes]
        elif kind == "MissingFlags":
            numbers = _block_inputs(source_layer(layer))
            columns += [("missing", numbers[column]) for column in layer.columns]
        else:
            return None
    if any(meaning[1] is None for meaning in columns):
        return None  # an encoding of no one column
    return columns


def readers(layer: Any) -> list[Any]:
    """The layers that read `layer`'s output (not the ops Keras adds beside them: an Embedding's mask)."""
    return [node.operation for node in layer._outbound_nodes if hasattr(node.operation, "weights")]


def _feature(layer: Any) -> str | None:
    """The feature an encoding layer reads: the one Input it comes from through operations of no state before it
    (a user's `keras.ops.nan_to_num`, `ops.where(ops.isnan(x), 0.0, x)`, a cast), as a layer's own name may be Keras'
    numbering, which another feature shifts; else kflow's own layer's name (`lookup_<feature>`), else None."""
    import keras

    if type(layer).__name__ == "InputLayer":
        return layer.name
    found, todo, seen = set(), [layer], set()
    while todo:
        for tensor in _inbound(todo.pop()):
            source = tensor._keras_history.operation
            if type(source).__name__ == "InputLayer":
                found.add(source.name)
            elif isinstance(source, keras.layers.Layer):
                found.add(None)  # another layer's output: what it means is that layer's
            elif id(source) not in seen:
                seen.add(id(source))
                todo.append(source)
    if len(found) == 1 and None not in found:
        return found.pop()
    return layer.name if layer.name.startswith(_KFLOWS) else None


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
