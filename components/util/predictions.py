"""A record's prediction as the BulkInferrer and the Predictor write it (InferenceResult's layout): a TFRecord
Example, a JSON line and a CSV row, each with the record's key, the class and a probability per class (by name) for
a classifier, or the value for a regression."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

TFRECORD, JSONL, CSV = "predictions.tfrecord.gz", "predictions.jsonl", "predictions.csv"
INPUTS_FILE = "inputs.json"  # in a serving SavedModel's assets: {feature: the signature's input name}


def serving_input_names(assets: Path) -> dict[str, str]:
    """{feature: the serving signature's input name} a SavedModel's assets record; {} for a model of one input."""
    path = Path(assets) / INPUTS_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def serving_names(keras_model: Any) -> dict[str, str]:
    """{feature name: the serving signature's name for it}: TensorFlow takes only some characters in a signature's
    input names (a SavedModel renames `Sepal.Length` to `Sepal_Length` in its function, not in its SignatureDef),
    so a model keeps its features' names as its input keys and the signature takes safe ones: the Input layer's own
    name where it is safe (the tabular models name them so: `glucose (mg/dl)` → `glucose__mg_dl_`), else one made
    from the feature's (a user's `keras.Input(name="Sepal.Length")`); {} for a model of one input."""
    from kflow.components.models.tabular_mlp import layer_name

    structure = keras_model.input
    if not isinstance(structure, dict):
        return {}
    taken: set[str] = set()
    names = {}
    for key, tensor in structure.items():
        # The Input layer's name, which a saved model keeps: an unnamed Input's tensor is `keras_tensor_3` as built,
        # `input_layer_1` as loaded (the export and the Evaluator's serving check hold the model each way).
        history = getattr(tensor, "_keras_history", None)
        own = str(getattr(getattr(history, "operation", None), "name", None) or getattr(tensor, "name", "") or "")
        safe = bool(own) and layer_name(own, set()) == own and own.lower() not in taken
        names[key] = own if safe else layer_name(str(key), taken)
        taken.add(names[key].lower())
    return names


def class_names(task: Any) -> list[str]:
    """The task's class names in the order of the model's scores (those its serving signature returns: an image
    folder's class names, not their indices); [] for a model that outputs a number."""
    serving = getattr(task, "serving_classes", None)
    classes = (serving() if serving is not None else None) or getattr(task, "classes", None)
    if classes:
        return [str(name) for name in classes]
    if count := getattr(task, "num_classes", None):
        return [str(index) for index in range(int(count))]
    return []


def predicting(classes: list[str] | None) -> str:
    """What a model predicts, by its class names: `a classifier of 12 classes (0, 1, 2, …)`, or `a number`."""
    if not classes:
        return "a model of a number (no classes)"
    shown = ", ".join(classes[:3]) + (", …" if len(classes) > 3 else "")
    return f"a classifier of {len(classes)} classes ({shown})"


# Where one of two models of a label predicts classes and the other a number: the label's task was inferred anew.
TASK_INFERRED = "data.problem_type, inferred from the label's values where unset: set it to keep one task as data grows"


def prediction_entry(key: str, output: np.ndarray, classes: list[str], label: Any = ...) -> dict[str, Any]:
    """{"key", ["label",] "predicted_class", "scores": {class: probability}} or {"key", ["label",] "prediction"};
    `label` (a class index or a number, None when missing) only for labelled data."""
    entry: dict[str, Any] = {"key": key}
    scored = bool(np.all(np.isfinite(output)))
    if classes:
        if output.ndim != 1 or len(output) != len(classes):
            raise ValueError(f"the model gives {output.shape} outputs a record; its task has {len(classes)} classes")
        if label is not ...:
            entry["label"] = None if label is None else classes[int(label)]
        # NaN scores are no class: argmax of them was the first class, said as confidently as any other.
        entry["predicted_class"] = classes[int(np.argmax(output))] if scored else None
        entry["scores"] = {name: float(score) for name, score in zip(classes, output, strict=True)} if scored else None
    else:
        if output.size != 1:
            raise ValueError(f"the model gives {output.shape} outputs a record: only classes or one number are scored")
        if label is not ...:
            entry["label"] = None if label is None else float(label)
        entry["prediction"] = float(output.reshape(-1)[0]) if scored else None
    if not scored:
        entry["unscored"] = UNSCORED
    return entry


# Why an entry has no class or value: what the model gave for its record is no number (a missing value its layers
# pass on as NaN, most often: keras.ops.nan_to_num fills one).
UNSCORED = "the model's output is not a number (NaN or infinite): most often a missing value its layers do not fill"


def prediction_example(entry: dict[str, Any]) -> tf.train.Example:
    example = tf.train.Example()
    features = example.features.feature
    features["key"].bytes_list.value.append(entry["key"].encode())
    if entry.get("label") is not None:
        if isinstance(entry["label"], str):
            features["label"].bytes_list.value.append(entry["label"].encode())
        else:
            features["label"].float_list.value.append(entry["label"])
    if entry.get("unscored"):
        features["unscored"].bytes_list.value.append(entry["unscored"].encode())
    elif "scores" in entry:
        features["predicted_class"].bytes_list.value.append(entry["predicted_class"].encode())
        features["scores"].float_list.value.extend(entry["scores"].values())
    else:
        features["prediction"].float_list.value.append(entry["prediction"])
    return example


def csv_header(classes: list[str], labelled: bool) -> list[str]:
    scores = ["predicted_class", *(f"score_{name}" for name in classes)] if classes else ["prediction"]
    return ["key", *(["label"] if labelled else []), *scores]


def csv_row(entry: dict[str, Any], classes: list[str]) -> list[Any]:
    row = [entry["key"]]
    if "label" in entry:
        row.append("" if entry["label"] is None else entry["label"])
    if entry.get("unscored"):  # empty cells: no class, no score
        return [*row, *([""] * (1 + len(classes)) if classes else [""])]
    if classes:
        return [*row, entry["predicted_class"], *(entry["scores"][name] for name in classes)]
    return [*row, entry["prediction"]]


class ClassTable:
    """How a classifier's or a regression's entries are written: a CSV row (`header`, `row`) and a TFRecord Example
    (`example`), the class names in the order of the model's scores."""

    def __init__(self, classes: list[str]):
        self.classes = list(classes)

    def header(self) -> list[str]:
        return csv_header(self.classes, labelled=False)

    def row(self, entry: dict[str, Any]) -> list[Any]:
        return csv_row(entry, self.classes)

    def example(self, entry: dict[str, Any]) -> tf.train.Example:
        return prediction_example(entry)
