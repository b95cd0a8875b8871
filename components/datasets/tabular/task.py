"""Tabular classification and regression on Examples whose schema tags the label (`role=label`, `task=...`).

Every other feature except the key (`role=key`) is an input. `prepare()` reads the training
split once and writes `tabular.json` into the assets: per numeric feature (int, float, bool)
its mean and variance over the present values; per string feature its kind and vocabulary
(categorical: at most `max_categories` distinct values seen in training, else the most frequent
`max_categories` ones with OOV_BUCKETS hashed buckets for the rest, unless the values average
`text_min_chars` characters or more: then free text with a vocabulary of the `max_tokens` most
frequent words; many dates or times read as their parts (`date`: models/date_parts.py); left out, said in
the log, when it holds dates written otherwise, or a distinct value in every row (an identifier): neither
generalises to new rows as a category); the classes (the sorted label
values of every split: knowing which classes exist is not learning from eval or test data) and
their class weights; for regression the label's mean and standard deviation.

Batches are `({feature: [batch, 1]}, label, [sample_weight])`: numbers as float32 with NaN when
missing, strings with "" when missing; labels are class indices [batch] or float32 [batch, 1].
"""

from __future__ import annotations

import json
import logging
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from kflow.components.datasets.module_imports import save_module, saved_imports
from kflow.components.datasets.tabular.cached_rows import cached_rows, fits_in_memory
from kflow.components.datasets.tabular.dataset import TRAINING_METRICS
from kflow.components.datasets.tabular.plan import (
    CODED_KINDS,
    DATA_OPTIONS,
    classification_head,
    label_text,
    numeric_spec,
    regression_head,
    string_spec,
    summarize_strings,
    whole_values,
    within_code_budget,
)
from kflow.components.datasets.tabular.preprocessing import GRAPH_MODEL_FILE, load_preprocessing
from kflow.components.datasets.tabular.scaled_loss import ScaledSquaredError
from kflow.components.datasets.task import LearntByTransform, Task
from kflow.components.models import build_model
from kflow.components.models.tabular_mlp import build_tabular_mlp_on, layer_name
from kflow.components.util.schema import annotation_tags, input_types
from kflow.pipeline.dsl.artifacts import Examples, TransformGraph

log = logging.getLogger(__name__)

PREPROCESSING_FILE = "tabular.json"
MODEL_OPTIONS = {"hidden_units", "dropout"}
_INT_MISSING = np.iinfo(np.int64).min  # Parse default of an absent int feature, turned into NaN.
_NUMERIC = ("int", "float", "bool")


class TabularTask(LearntByTransform, Task):
    name = "tabular"
    default_model = "tabular_mlp"

    def __init__(self, schema, model_name: str | None = None, model_options: dict | None = None):
        super().__init__(schema, model_name, model_options)
        self.check_options(DATA_OPTIONS, MODEL_OPTIONS)
        self.options = {**DATA_OPTIONS, **{k: v for k, v in self.model_options.items() if k in DATA_OPTIONS}}
        if self.options["class_weighting"] not in ("balanced", "none"):
            raise ValueError(f"class_weighting must be 'balanced' or 'none', got {self.options['class_weighting']!r}")
        self.model_kwargs = {k: v for k, v in self.model_options.items() if k in MODEL_OPTIONS}
        self.label, self.kind, self.types = None, None, input_types(schema)  # the Trainer's JAX check reads them too
        self.spans: dict[str, str] = {}  # {column: the spans holding it} where only some of a union's do (plan.py)
        for feature in schema.feature:
            tags = annotation_tags(schema, feature.name)
            if tags.get("role") == "label":
                self.label, self.kind = feature.name, tags.get("task", "classification")
            elif feature.name in self.types and "kflow_spans" in tags:
                self.spans[feature.name] = tags["kflow_spans"]
        if self.label is None:
            raise ValueError(
                "a tabular task needs a schema whose label feature is tagged role=label: the ingest's, or a "
                "schema_gen's given it (in a declared pipeline: inputs: {statistics: …, ingest_schema: ingest.schema})"
            )
        if self.kind not in ("classification", "regression"):
            raise ValueError(f"the label {self.label!r} is tagged task={self.kind}; use classification or regression")
        if not self.types:
            raise ValueError(f"the schema has no feature besides the label {self.label!r}")
        self.label_type = annotation_tags(schema, self.label).get("kflow_type", "string")
        self.preprocessing: dict[str, Any] | None = None
        self.graph_model_file: Path | None = None  # the Transform's preprocessing model, copied into the assets

    # --- Assets -------------------------------------------------------------------------------------

    def prepare(self, examples: Examples, assets_dir: Path) -> dict[str, Any]:
        assets_dir = Path(assets_dir)
        assets_dir.mkdir(parents=True, exist_ok=True)
        if self.transform_graph is not None:
            return self._take_graph(self.transform_graph, assets_dir)
        numbers = {name: [0, 0.0, 0.0, {} if kind in CODED_KINDS else None] for name, kind in self.types.items()
                   if kind in _NUMERIC}  # fmt: skip
        strings = {name: Counter() for name, kind in self.types.items() if kind == "string"}
        labels: list[np.ndarray] = []
        for features, label in self._read(examples, "train", 1024).as_numpy_iterator():
            labels.append(label.ravel())
            for name, moments in numbers.items():
                values = features[name].ravel().astype(np.float64)
                values = values[np.isfinite(values)]  # a number past float32's range is stored as inf: missing
                moments[0] += len(values)
                moments[1] += float(values.sum())
                moments[2] += float((values**2).sum())
                moments[3] = whole_values(moments[3], values)
            for name, counts in strings.items():
                counts.update(value for value in features[name].ravel() if value)
        if not labels:
            raise ValueError(f"the training split under {examples.uri} is empty")
        train_labels = np.concatenate(labels)
        rows = len(train_labels)
        features = [_numeric(name, *moments, rows, self.spans.get(name)) for name, moments in numbers.items()]
        features += [
            string_spec(name, summarize_strings(counts, self.options), self.options, rows, self.spans.get(name))
            for name, counts in strings.items()
        ]
        features.sort(key=lambda spec: list(self.types).index(spec["name"]))
        features = within_code_budget(features)
        left_out = {spec["name"]: spec["left_out"] for spec in features if spec["kind"] == "left_out"}
        for name, why in left_out.items():
            log.info("tabular: the feature %r is left out: %s", name, why)
        features = [spec for spec in features if spec["kind"] != "left_out"]
        if not features:
            raise ValueError(
                f"no feature is left to learn from: {', '.join(f'{n!r} ({w})' for n, w in left_out.items())}"
            )
        head = self._head(examples, train_labels)
        self.preprocessing = {"label": self.label, "features": features, "head": head, "left_out": left_out}
        self._keep_model_inputs()
        (assets_dir / PREPROCESSING_FILE).write_text(json.dumps(self.preprocessing, indent=1) + "\n")
        kinds = Counter(spec["kind"] for spec in features)
        return {"train_examples": len(train_labels), **{f"{kind}_features": n for kind, n in sorted(kinds.items())}}

    def _head(self, examples: Examples, train_labels: np.ndarray) -> dict[str, Any]:
        if self.kind == "regression":
            return regression_head(float(train_labels.mean()), float(train_labels.std()))
        values = set()
        for split in examples.splits:
            for _, label in self._read(examples, split, 4096).as_numpy_iterator():
                values.update(label.ravel().tolist())
        classes = [label_text(value) for value in sorted(values)]
        counts = Counter(label_text(value) for value in train_labels.tolist())
        if len(classes) < 2:
            raise ValueError(f"classification needs at least two classes; the label {self.label!r} has {classes}")
        return classification_head(classes, counts, self.options["class_weighting"])

    def _take_graph(self, graph: TransformGraph, assets_dir: Path) -> dict[str, Any]:
        """The Transform's plan and preprocessing model, copied into the assets: nothing is read from the data."""
        analyzers = self.learnt_with(graph, {name: self.options[name] for name in DATA_OPTIONS})
        if analyzers.get("label") != self.label:
            raise ValueError(
                f"the transform graph {graph.uri} is for the label {analyzers.get('label')!r}, not {self.label!r}"
            )
        if analyzers.get("module_digest") and (self.model_name != "tabular_mlp" or hasattr(self, "user_module")):
            raise ValueError(
                "transform.module builds the model's inputs, which only trainer.model tabular_mlp takes "
                "(not trainer.module or another model)"
            )
        keys = ("label", "features", "head", "left_out", "inputs", "texts")  # texts: a preprocessing_fn's free texts
        self.preprocessing = {key: analyzers[key] for key in keys if key in analyzers}
        self._keep_model_inputs()
        shutil.copyfile(graph.model_file, assets_dir / GRAPH_MODEL_FILE)
        module = graph.path / TransformGraph.MODULE_FILE
        if module.is_file():  # its layers, for any process that loads the model
            save_module(assets_dir / module.name, module.read_text(), saved_imports(module))
        (assets_dir / PREPROCESSING_FILE).write_text(json.dumps(self.preprocessing, indent=1) + "\n")
        self.graph_model_file = assets_dir / GRAPH_MODEL_FILE
        return {"transform_graph": str(graph.uri), "features": len(self.types)}

    def load_assets(self, assets_dir: Path) -> None:
        path = Path(assets_dir) / PREPROCESSING_FILE
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: run prepare() first")
        self.preprocessing = json.loads(path.read_text())
        self._keep_model_inputs()
        graph_model = Path(assets_dir) / GRAPH_MODEL_FILE
        self.graph_model_file = graph_model if graph_model.exists() else None

    def _keep_model_inputs(self) -> None:
        """Reads (and feeds the model) only the features the preprocessing kept: not the left-out ones."""
        prepared = self._prepared()
        # With a transform graph: the raw features its preprocessing model takes (a user's preprocessing_fn may
        # read features the plan does not list); without: the features the plan kept.
        kept = set(prepared.get("inputs") or (spec["name"] for spec in prepared["features"]))
        self.types = {name: kind for name, kind in self.types.items() if name in kept}

    @property
    def input_features(self) -> list[str]:
        """The features the model is fed (by name), for the model contract (model_checks.contract_problem)."""
        return list(self.types)

    @property
    def output_size(self) -> int:
        return len(self.classes) if self.kind == "classification" else 1

    @property
    def classes(self) -> list[str]:
        return list(self._prepared()["head"].get("classes", []))

    def _prepared(self) -> dict[str, Any]:
        if self.preprocessing is None:
            raise ValueError("the tabular task has no preprocessing yet: call prepare() or load_assets() first")
        return self.preprocessing

    # --- Data ---------------------------------------------------------------------------------------

    def dataset(
        self, examples: Examples, split: str, *, batch_size: int, training: bool, seed: int, shuffle_buffer: int = 0
    ) -> tf.data.Dataset:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        head = self._prepared()["head"]
        files = examples.split_files(split)
        records = tf.data.TFRecordDataset(files, compression_type="GZIP")
        if training and fits_in_memory(examples.recorded_counts.get(split), len(self.types) + 1, files):
            # The train split is read every epoch: parsed once, kept as rows (cached_rows.py).
            batches = cached_rows(
                records, self._parse, batch_size=batch_size, shuffle_buffer=shuffle_buffer, seed=seed,
                drop_remainder=True,
            )  # fmt: skip
        else:
            if training and shuffle_buffer > 0:
                records = records.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
            batches = records.batch(batch_size, drop_remainder=training).map(
                self._parse, num_parallel_calls=tf.data.AUTOTUNE
            )
        if head["kind"] == "regression":
            return batches.map(lambda x, y: (x, tf.reshape(tf.cast(y, tf.float32), [-1, 1]))).prefetch(2)
        class_index = self._class_index(head["classes"])
        weights = tf.constant([head["class_weights"][name] for name in head["classes"]], tf.float32)
        weighted = training and self.options["class_weighting"] == "balanced"

        def to_batch(x, y):
            index = class_index(y)
            if weighted:
                return x, index, tf.gather(weights, index)
            return x, index

        return batches.map(to_batch, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)

    def _class_index(self, classes: list[str]):
        """A function from a batch of label values to their class indices (-1: not a class). Numeric labels are
        matched as numbers, so that `1`, `1.0` and `1.000000` are one class, however the data wrote them."""
        if self.label_type == "string":
            table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(classes, tf.range(len(classes), dtype=tf.int64)), -1
            )
            return table.lookup
        # The classes' values as the parsed labels hold them (float32, or int64 compared as int64: past 2**53 a
        # float64 would merge neighbours), sorted as prepare() sorted them.
        if self.label_type == "float":
            values, dtype = tf.constant([float(np.float32(name)) for name in classes], tf.float64), tf.float64
        else:
            values, dtype = tf.constant([int(name) for name in classes], tf.int64), tf.int64

        def lookup(labels: tf.Tensor) -> tf.Tensor:
            labels = tf.cast(labels, dtype)
            index = tf.minimum(tf.searchsorted(values, labels), len(classes) - 1)
            return tf.where(tf.gather(values, index) == labels, tf.cast(index, tf.int64), tf.constant(-1, tf.int64))

        return lookup

    def _read(self, examples: Examples, split: str, batch_size: int) -> tf.data.Dataset:
        records = tf.data.TFRecordDataset(examples.split_files(split), compression_type="GZIP")
        return records.batch(batch_size).map(self._parse)

    def _parse(self, serialized: tf.Tensor) -> tuple[dict[str, tf.Tensor], tf.Tensor]:
        spec = {name: _spec(kind) for name, kind in self.types.items()}
        spec[self.label] = tf.io.FixedLenFeature([1], _dtype(self.label_type))
        parsed = tf.io.parse_example(serialized, spec)
        return self._features(parsed), tf.reshape(parsed[self.label], [-1])

    def inputs(self, serialized: tf.Tensor) -> dict[str, tf.Tensor]:
        """The model's inputs, as `dataset` gives them, of Examples without a label (data to score)."""
        return self._features(tf.io.parse_example(serialized, {name: _spec(kind) for name, kind in self.types.items()}))

    def _features(self, parsed: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        """The parsed features as the model takes them: numbers float32, NaN where missing. The number columns of
        a kind are converted side by side, in one block: ops a column made a wide table's (MNIST's 784 pixels as a
        CSV) every dataset and serving signature thousands of ops, 2 s to trace each."""
        features = dict(parsed)
        floats = [name for name, kind in self.types.items() if kind == "float"]
        ints = [name for name, kind in self.types.items() if kind in ("int", "bool")]
        if floats:  # a number past float32's range is stored as inf: missing, as in prepare()
            block = _side_by_side(parsed, floats)
            _set_columns(features, floats, tf.where(tf.math.is_inf(block), tf.constant(np.nan, tf.float32), block))
        if ints:
            block = _side_by_side(parsed, ints)
            missing = block == _INT_MISSING
            _set_columns(features, ints, tf.where(missing, tf.constant(np.nan, tf.float32), tf.cast(block, tf.float32)))
        return {name: features[name] for name in self.types}

    # --- Model --------------------------------------------------------------------------------------

    def build_model(self) -> keras.Model:
        prepared = self._prepared()
        if self.graph_model_file is not None and self.model_name == "tabular_mlp":
            return build_tabular_mlp_on(
                load_preprocessing(self.graph_model_file), self.types, head=prepared["head"], **self.model_kwargs
            )
        return build_model(self.model_name, features=prepared["features"], head=prepared["head"], **self.model_kwargs)

    def loss(self) -> keras.losses.Loss:
        if self.kind == "regression":  # on the label's standardised scale: float32 holds its gradients (scaled_loss)
            return ScaledSquaredError(scale=self._prepared()["head"]["std"], reduction=None)
        return keras.losses.SparseCategoricalCrossentropy(reduction=None)

    def metrics(self) -> list[keras.metrics.Metric]:
        kinds = {"accuracy": keras.metrics.SparseCategoricalAccuracy, "mae": keras.metrics.MeanAbsoluteError,
                 "rmse": keras.metrics.RootMeanSquaredError}  # fmt: skip
        return [kinds[name](name=name) for name in TRAINING_METRICS[self.kind]]  # kflow validate checks by these

    def model_context(self) -> dict[str, Any]:
        """What a user's build_model gets in `options`: each feature with its `input_name`, a name Keras takes for
        its `keras.Input` (wine's 'od280/od315_of_diluted_wines' is refused as a layer name); the model's inputs
        dict is keyed by the feature's `name`, the column it is fed."""
        prepared, taken = self._prepared(), set()
        features = [{**spec, "input_name": layer_name(spec["name"], taken)} for spec in prepared["features"]]
        return {"label": self.label, "task": self.kind, "features": features, "head": prepared["head"]}

    def serving_classes(self) -> list[str] | None:
        return self.classes if self.kind == "classification" else None

    def metric_options(self) -> dict[str, Any]:
        if self.kind == "classification":
            return {"kind": self.kind, "classes": self.classes}
        head = self._prepared()["head"]
        # Slices by a regression label: below, around and above the training labels' mean, one deviation wide.
        boundaries = [head["mean"] - head["std"], head["mean"], head["mean"] + head["std"]]
        return {"kind": self.kind, "classes": [], "label_boundaries": boundaries}


def _side_by_side(parsed: dict[str, tf.Tensor], names: list[str]) -> tf.Tensor:
    """The [batch, 1] columns `names` as one [batch, len(names)] block."""
    return parsed[names[0]] if len(names) == 1 else tf.concat([parsed[name] for name in names], axis=1)


def _set_columns(features: dict[str, tf.Tensor], names: list[str], block: tf.Tensor) -> None:
    """Each [batch, 1] column of `block` back under its name."""
    columns = [block] if len(names) == 1 else tf.split(block, len(names), axis=1)
    features.update(zip(names, columns, strict=True))


def _dtype(kind: str) -> tf.DType:
    return {"int": tf.int64, "bool": tf.int64, "float": tf.float32}.get(kind, tf.string)


def _spec(kind: str) -> tf.io.FixedLenFeature:
    default = {"int": _INT_MISSING, "bool": _INT_MISSING, "float": np.nan}.get(kind, "")
    return tf.io.FixedLenFeature([1], _dtype(kind), default_value=[default])


def _numeric(name: str, count: int, total: float, squares: float, codes: dict | None, rows: int, spans=None) -> dict:
    mean = total / count if count else 0.0
    codes = None if codes is None else sorted(codes.items())
    return numeric_spec(name, count, mean, squares / count - mean**2 if count else 1.0, codes, rows, spans)
