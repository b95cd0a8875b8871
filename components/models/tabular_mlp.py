"""A multilayer perceptron for tabular data whose preprocessing lives inside the model.

Each feature is an input of shape [batch, 1] holding its raw value: numbers (float32; NaN when
missing) are filled with the training mean and normalised with the training mean and variance, all the number
columns side by side by one pair of layers, an integer column of codes also one-hot over them (`CodeOneHot`);
categorical strings go through `StringLookup` to a one-hot vector (unknown and missing values
share the out-of-vocabulary slot, or `oov_buckets` hashed slots for a feature with more values than
its vocabulary); free text goes through `TextVectorization` to a multi-hot bag of words; many dates or times
go through `DateParts` (date_parts.py) to their time, season, weekday and time of day. The saved
model and its serving SavedModel therefore take raw feature values.

Heads: classification ends in a softmax over the classes; regression ends in one unit rescaled
by the training label's standard deviation and mean, so the network learns a standardised target.
"""

from __future__ import annotations

import itertools
import keyword
import warnings
from collections.abc import Sequence
from typing import Any

import keras

from kflow.components.models.date_parts import DateParts

# The model's input keys are the features' names as written in the data; its Input layers carry safe names for
# TensorFlow (`layer_name`). Keras warns about the difference on every build and load: it is deliberate.
warnings.filterwarnings("ignore", message="When providing `inputs` as a dict, all keys in the dict must match")


@keras.saving.register_keras_serializable(package="kflow")
class FillMissing(keras.layers.Layer):
    """Replaces NaN (a missing number) with a fixed value, the training mean: one for a [batch, 1] column, or one a
    column of a [batch, k] block of numbers."""

    def __init__(self, value: float | Sequence[float], **kwargs: Any):
        super().__init__(**kwargs)
        self.value = [float(v) for v in value] if isinstance(value, (list, tuple)) else float(value)

    def call(self, inputs):
        if isinstance(self.value, float):
            filler = keras.ops.full_like(inputs, self.value)
        else:
            filler = keras.ops.broadcast_to(
                keras.ops.convert_to_tensor(self.value, inputs.dtype), keras.ops.shape(inputs)
            )
        return keras.ops.where(keras.ops.isnan(inputs), filler, inputs)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "value": self.value}


@keras.saving.register_keras_serializable(package="kflow")
class MissingFlags(keras.layers.Layer):
    """1.0 where a number of a [batch, numbers] block is missing (NaN), for its `columns` (those missing somewhere in
    the training split): [batch, len(columns)]. Filled with the mean alone, a missing value is the average one,
    and a model cannot tell it from one measured there; where its absence says something (a test not ordered, a
    salary not disclosed), the flag carries it, as scikit-learn's `SimpleImputer(add_indicator=True)`."""

    def __init__(self, columns: Sequence[int], **kwargs: Any):
        super().__init__(**kwargs)
        self.columns = [int(column) for column in columns]

    def call(self, inputs):
        picked = keras.ops.take(inputs, keras.ops.convert_to_tensor(self.columns, "int32"), axis=1)
        return keras.ops.cast(keras.ops.isnan(picked), "float32")

    def compute_output_shape(self, input_shape):
        return (input_shape[0], len(self.columns))

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "columns": self.columns}


@keras.saving.register_keras_serializable(package="kflow")
class CodeOneHot(keras.layers.Layer):
    """The integer columns of codes of a [batch, numbers] block, each one-hot over its `codes` with a last slot for
    any other value, a missing one (NaN) included: [batch, sum of (codes + 1)], by one layer for every such column
    (a layer each would make a genotype table of thousands of 0/1/2 columns a graph of thousands of layers, as
    the numbers' normalisation once did). `codes`: [(column index in the block, [its codes])]. (IntegerLookup would
    need integer inputs; the serving signature's are the raw float32 values.)"""

    def __init__(self, codes: Sequence[Sequence[Any]], **kwargs: Any):
        super().__init__(**kwargs)
        self.codes = [[int(column), [int(code) for code in values]] for column, values in codes]
        self._columns = [column for column, values in self.codes for _ in values]
        self._values = [float(code) for _, values in self.codes for code in values]
        self._ends = list(itertools.accumulate(len(values) for _, values in self.codes))

    def call(self, inputs):
        values = keras.ops.take(keras.ops.cast(inputs, "float32"), self._columns, axis=1)
        hits = keras.ops.cast(keras.ops.equal(values, keras.ops.convert_to_tensor(self._values)[None, :]), "float32")
        # A column's hits are contiguous: their sum is the difference of the running sum at its ends.
        running = keras.ops.pad(keras.ops.cumsum(hits, axis=1), [[0, 0], [1, 0]])
        ends = keras.ops.take(running, self._ends, axis=1)
        starts = keras.ops.take(running, [0, *self._ends[:-1]], axis=1)
        return keras.ops.concatenate([hits, 1.0 - (ends - starts)], axis=-1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], len(self._values) + len(self.codes))

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "codes": self.codes}


def encode_features(features: Sequence[dict[str, Any]], what: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """({feature: keras.Input}, {feature: its encoding}) for the planned features, in their order: a number filled
    and normalised, a category one-hot, free text multi-hot; the state comes from the plan (the layers' constructors,
    never `adapt`). `what` names the model in the error for no feature."""
    if not features:
        raise ValueError(f"{what} needs at least one feature besides the label")
    inputs, outputs, taken, numbers = {}, {}, set(), []
    for spec in features:
        name, kind = spec["name"], spec["kind"]
        safe = layer_name(name, taken)
        if kind == "numeric":
            inputs[name] = keras.Input(shape=(1,), dtype="float32", name=safe)
            numbers.append(spec)
        elif kind == "categorical":
            inputs[name] = keras.Input(shape=(1,), dtype="string", name=safe)
            lookup = keras.layers.StringLookup(
                vocabulary=list(spec["vocabulary"]),
                num_oov_indices=int(spec.get("oov_buckets", 1)),
                output_mode="one_hot",
                name=f"lookup_{safe}",
            )
            outputs[name] = lookup(inputs[name])
        elif kind == "text":
            inputs[name] = keras.Input(shape=(1,), dtype="string", name=safe)
            vectorize = keras.layers.TextVectorization(
                vocabulary=list(spec["vocabulary"]), output_mode="multi_hot", name=f"words_{safe}"
            )
            # A [batch, 1] string input gives [batch, 1, vocabulary]: flatten it beside the other features.
            outputs[name] = keras.layers.Flatten(name=f"flat_{safe}")(vectorize(inputs[name]))
        elif kind == "date":
            inputs[name] = keras.Input(shape=(1,), dtype="string", name=safe)
            outputs[name] = DateParts(spec["order"], name=f"date_{safe}")(inputs[name])
        else:
            raise ValueError(f"feature {name!r}: unknown kind {kind!r} (numeric, categorical, text, date)")
    if numbers:
        columns = [inputs[spec["name"]] for spec in numbers]
        block = columns[0] if len(columns) == 1 else keras.layers.Concatenate(name="number_columns")(columns)
        outputs[_free_key(NUMBERS, outputs)] = _normalised_numbers(block, numbers)
        codes = [(index, spec["codes"]) for index, spec in enumerate(numbers) if spec.get("codes")]
        if codes:  # integer columns of codes (plan.integer_codes): which code, beside the value
            outputs[_free_key(CODES, outputs)] = CodeOneHot(codes, name="integer_codes")(block)
        gaps = [index for index, spec in enumerate(numbers) if spec.get("missing")]
        if gaps:  # columns with missing values in training (plan.numeric_spec): whether each is, beside its mean
            outputs[_free_key(MISSING, outputs)] = MissingFlags(gaps, name="missing_numbers")(block)
    return inputs, outputs


NUMBERS = "numbers"  # the output of every number column at once, [batch, numbers]
CODES = "integer_codes"  # the one-hot codes of every integer column of codes at once
MISSING = "missing_numbers"  # whether each number column missing somewhere in training is missing, at once


def _normalised_numbers(block: Any, specs: list[dict[str, Any]]) -> Any:
    """The number columns side by side (`block`), each filled with its mean and normalised, by one FillMissing and
    one Normalization over all of them: a layer pair a column made a wide table (6,830 numbers, ISLR's NCI60) a
    graph of 13,660 layers that Keras took minutes to build, save and load."""
    means = [float(spec["mean"]) for spec in specs]
    filled = FillMissing(means, name="fill_numbers")(block)
    variances = [float(spec["variance"]) for spec in specs]
    return keras.layers.Normalization(mean=means, variance=variances, name="norm_numbers")(filled)


def _free_key(key: str, taken: dict[str, Any]) -> str:
    while key in taken:  # a string feature of that name keeps its own output
        key += "_"
    return key


def build_tabular_mlp(
    features: Sequence[dict[str, Any]],
    head: dict[str, Any],
    hidden_units: Sequence[int] = (64, 32),
    dropout: float = 0.1,
) -> keras.Model:
    """Builds the uncompiled model.

    `features`: [{"name", "kind": "numeric", "mean", "variance"} | {"name", "kind": "categorical" | "text",
    "vocabulary": [...]}]; `head`: {"kind": "classification", "classes": [...]} or
    {"kind": "regression", "mean", "std"}.
    """
    inputs, encoded = encode_features(features, "the tabular model")
    encoded = list(encoded.values())
    x = encoded[0] if len(encoded) == 1 else keras.layers.Concatenate(name="features")(encoded)
    return keras.Model(inputs, _mlp_head(x, head, hidden_units, dropout), name="tabular_mlp")


def build_tabular_mlp_on(
    preprocessing: keras.Model,
    types: dict[str, str],
    head: dict[str, Any],
    hidden_units: Sequence[int] = (64, 32),
    dropout: float = 0.1,
) -> keras.Model:
    """The MLP on a preprocessing model (a Transform's: raw features in, model inputs out), which it embeds.

    `types`: {raw feature: int | float | bool | string}, the preprocessing model's inputs. Its outputs, whatever
    they are (a z-score, a one-hot category, a bucket index), are read as float32, flattened and concatenated."""
    inputs, taken = {}, set()
    for name, kind in types.items():
        dtype = "string" if kind == "string" else "float32"
        inputs[name] = keras.Input(shape=(1,), dtype=dtype, name=layer_name(name, taken))
    encoded = preprocessing(inputs)
    encoded = encoded if isinstance(encoded, dict) else {"output": encoded}
    columns = []
    for name in sorted(encoded):
        column = keras.ops.cast(encoded[name], "float32")
        columns.append(keras.layers.Flatten(name=f"flat_out_{layer_name(name, taken)}")(column))
    x = columns[0] if len(columns) == 1 else keras.layers.Concatenate(name="features")(columns)
    return keras.Model(inputs, _mlp_head(x, head, hidden_units, dropout), name="tabular_mlp")


def _mlp_head(x: Any, head: dict[str, Any], hidden_units: Sequence[int], dropout: float) -> Any:
    for index, units in enumerate(hidden_units):
        x = keras.layers.Dense(int(units), activation="relu", name=f"hidden_{index}")(x)
        if dropout:
            x = keras.layers.Dropout(dropout, name=f"dropout_{index}")(x)
    if head["kind"] == "classification":
        return keras.layers.Dense(len(head["classes"]), activation="softmax", name="probabilities")(x)
    if head["kind"] == "regression":
        standardised = keras.layers.Dense(1, name="standardised")(x)
        return keras.layers.Rescaling(scale=head["std"], offset=head["mean"], name="prediction")(standardised)
    raise ValueError(f"unknown head kind {head['kind']!r} (classification, regression)")


def layer_name(name: str, taken: set[str]) -> str:
    """A name Keras and TensorFlow take for a layer and a serving signature's argument (ASCII letters, digits and
    `_`, a letter first, no Python keyword: the SavedModel renames `x.radius` to `x_radius` in its signature, which
    then no longer matches the Input's name, and refuses `yield` as an argument), unique case-insensitively among
    `taken`: the features keep their names as written in the data (the model's input dict keys)."""
    safe = "".join(char if char.isascii() and (char.isalnum() or char == "_") else "_" for char in name)
    safe = safe if safe[:1].isascii() and safe[:1].isalpha() else f"f_{safe}"
    safe = f"{safe}_" if keyword.iskeyword(safe) or keyword.issoftkeyword(safe) else safe
    unique, number = safe, 1
    while unique.lower() in taken:
        number += 1
        unique = f"{safe}_{number}"
    taken.add(unique.lower())
    return unique
