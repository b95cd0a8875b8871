"""Does a model read the inputs this data has? Checked before the Evaluator scores a model (its own, or a baseline
trained before a column was dropped or on images of another size), where Keras would fail mid-evaluation
("Missing data for input", "incompatible with the layer"): a baseline that reads other inputs is no comparison.
"""

from __future__ import annotations

from typing import Any

from kflow.pipeline.dsl.artifacts import Model


class OtherInputs(ValueError):
    """A model reads other inputs than this data's (a baseline trained before a column was dropped, or on images of
    another size): `reads` says what, after the model's name."""

    def __init__(self, model: Model, reads: str):
        super().__init__(f"the model {model.uri} {reads}")
        self.reads = reads


def check_inputs(model: Model, keras_model: Any, batches: Any) -> None:
    """Raises OtherInputs naming the inputs `keras_model` reads that the data's batches lack, or the input shape
    they do not have; Keras would fail mid-evaluation ("Missing data for input", "incompatible with the layer")."""
    features = batches.element_spec[0]
    try:
        inputs = keras_model.input  # the structure the model was built on: a dict of its columns, as named in the data
    except (AttributeError, ValueError):  # a subclassed model: no structure to compare
        return
    if isinstance(features, dict) and isinstance(inputs, dict):
        missing = sorted(set(inputs) - set(features))
        if missing:
            shown = ", ".join(repr(name) for name in missing[:8]) + (", ..." if len(missing) > 8 else "")
            raise OtherInputs(model, f"reads columns this data lacks ({shown})")
        # A column the model reads as numbers that this data holds as text (a code exported as its names in a newer
        # span: the union reads it as text), or the other way: Keras fails casting a string to float mid-evaluation.
        retyped = sorted(name for name in inputs if _is_text(inputs[name].dtype) != _is_text(features[name].dtype))
        if retyped:
            said = ", ".join(f"{name!r} as {'text' if _is_text(inputs[name].dtype) else 'numbers'}" for name in retyped)
            raise OtherInputs(model, f"reads {said}, which this data holds otherwise")
    elif not isinstance(features, dict) and hasattr(inputs, "shape") and hasattr(features, "shape"):
        wanted, given = without_trailing_one(tuple(inputs.shape[1:]), tuple(features.shape[1:]))
        if len(wanted) != len(given) or any(
            w is not None and g is not None and w != g for w, g in zip(wanted, given, strict=True)
        ):
            raise OtherInputs(model, f"reads inputs of shape {_shape(wanted)}; this data's are {_shape(given)} "
                                     "(images of another size or channels?)")  # fmt: skip


def _is_text(dtype: Any) -> bool:
    return "string" in str(getattr(dtype, "name", dtype))


def without_trailing_one(wanted: tuple, given: tuple) -> tuple[tuple, tuple]:
    """Shapes a rank apart by a trailing 1 compared without it, as functional Keras models take them (keras.io's
    MNIST convnet's `keras.Input(shape=(28, 28, 1))` fed 28×28 images)."""
    if len(wanted) == len(given) + 1 and wanted[-1] == 1:
        return wanted[:-1], given
    if len(given) == len(wanted) + 1 and given[-1] == 1:
        return wanted, given[:-1]
    return wanted, given


def _shape(dims: tuple) -> str:
    return "×".join("?" if dim is None else str(dim) for dim in dims)
