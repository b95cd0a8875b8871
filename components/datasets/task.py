"""What the training loop needs to know about a task (MNIST digits, WikiText-2 MLM, Quora classification).

A task turns Examples into batches and builds its model; the Trainer's loop knows
nothing else about the data. Tasks are also used by the Evaluator, so that both read
the data in the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import keras
import numpy as np
import tensorflow as tf
from tensorflow_metadata.proto.v0 import schema_pb2

from kflow.components.datasets import get_dataset
from kflow.components.datasets.module_imports import saved_imports
from kflow.components.datasets.user_module import load_module, with_user_module
from kflow.components.util.predictions import ClassTable, prediction_entry
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import Examples, Model, TransformGraph


class Task:
    """Base class: subclasses set `name`, `default_model` and implement the methods below.

    Datasets yield batches `(x, y)` or `(x, y, sample_weight)`; `x` may be a dict of
    tensors. The loop computes `loss(y, model(x), sample_weight)` per example and
    averages over the global batch (`tf.nn.compute_average_loss`), so `loss` must be a
    `keras.losses.Loss` built with `reduction=None`.
    """

    name: ClassVar[str]
    default_model: ClassVar[str]
    # The validation metric to watch for early stopping and best-model choice, and its direction.
    monitor: ClassVar[str] = "val_loss"
    monitor_mode: ClassVar[str] = "min"
    # Modules registering custom TF ops the task's input pipeline runs. Under parameter_server the
    # coordinator ships its dataset graph to the worker servers, which must import them first.
    op_libraries: ClassVar[tuple[str, ...]] = ()

    def __init__(self, schema: schema_pb2.Schema, model_name: str | None = None, model_options: dict | None = None):
        self.schema = schema
        self.model_name = model_name or self.default_model
        self.model_options = dict(model_options or {})

    def check_options(self, data_options: Any, model_options: Any) -> None:
        """Refuses `trainer.model_options` that are neither data options nor model options of the task."""
        allowed = {*data_options, *model_options}
        unknown = sorted(set(self.model_options) - allowed)
        if unknown:
            raise ValueError(
                f"unknown trainer.model_options for {self.name}: {', '.join(unknown)} "
                f"(allowed: {', '.join(sorted(allowed))})"
            )

    def prepare(self, examples: Examples, assets_dir: Path) -> dict[str, Any]:
        """One-off work before training, from the training split (e.g. a WordPiece vocabulary).

        Writes what the model needs at serving time into `assets_dir` (copied into the Model
        artifact) and returns figures worth logging. Called once, by the chief only.
        """
        return {}

    def load_assets(self, assets_dir: Path) -> None:
        """Reads what `prepare` wrote (every worker calls this before building datasets/models)."""

    def dataset(
        self, examples: Examples, split: str, *, batch_size: int, training: bool, seed: int, shuffle_buffer: int = 0
    ) -> tf.data.Dataset:
        """The split's batches, one example per record of the split (the Trainer takes a split's size from the
        ingest's count of its records)."""
        raise NotImplementedError

    def inputs(self, serialized: tf.Tensor) -> Any:
        """The model's inputs for a batch of serialized Examples that may have no label (data to score): what
        `dataset` gives as `x` for the same records."""
        raise ValueError(f"the {self.name} task cannot score data without a label yet (tabular data can)")

    def prediction_entries(
        self, keys: list[str], serialized: tf.Tensor, predict: Callable[[Any], Any], classes: list[str]
    ) -> list[dict[str, Any]]:
        """A prediction entry for each record of a batch of serialized Examples to score, `predict` taking the
        model's inputs (`inputs`) to its outputs: the class and a probability per class, or the value
        (components/util/predictions.py); a task whose model gives something else writes its own."""
        outputs = np.asarray(predict(self.inputs(serialized)), np.float64).reshape(len(keys), -1)
        return [prediction_entry(key, output, classes) for key, output in zip(keys, outputs, strict=True)]

    def prediction_table(self, classes: list[str]) -> Any:
        """How `prediction_entries`' entries are written as CSV rows and TFRecord Examples."""
        return ClassTable(classes)

    def build_model(self) -> keras.Model:
        """The uncompiled Keras model (built inside the strategy scope by the caller)."""
        raise NotImplementedError

    def loss(self) -> keras.losses.Loss:
        raise NotImplementedError

    def model_context(self) -> dict[str, Any]:
        """What the task learnt that a user's build_model may need (trainer.module's `options`)."""
        return {}

    def metric_options(self) -> dict[str, Any]:
        """Keyword arguments for the dataset's TaskMetrics that the task knows (e.g. the class names)."""
        return {}

    def serving_classes(self) -> list[str] | None:
        """The class names the serving signature returns beside the scores (column k of `scores` is class k), as
        TF Serving's classification signature does; None: the model's outputs as they are (a regression, an MLM)."""
        return None

    def metrics(self) -> list[keras.metrics.Metric]:
        return []


def task_for_model(model: Model, schema_file: str | Path) -> Task:
    """The task that reads data for `model` as it was trained: its dataset, model options, user module and
    assets (the Evaluator's and the BulkInferrer's)."""
    spec = model.task_spec
    module = model.assets_uri / Model.MODULE_FILE  # A model built by the user's trainer.module, with its code.
    source = module.read_text() if module.exists() else None
    task_object = load_task(spec["dataset"], schema_file, spec["model_name"], spec["model_options"], source,
                            imports=saved_imports(module))  # fmt: skip
    if model.assets_uri.exists():
        task_object.load_assets(model.assets_uri)
    return task_object


def load_task(
    dataset: str,
    schema_file: str | Path,
    model_name: str | None = None,
    model_options: dict | None = None,
    module_source: str | None = None,
    module_origin: str | None = None,
    imports: dict[str, str] | None = None,
) -> Task:
    """The `Task` of a registered dataset, on the schema in `schema_file`; its model from `module_source` if given
    (`module_origin`: the file name its errors name, `user_module.py` when none is given; `imports`: the helpers it
    imports, module_imports.py)."""
    task_class = get_dataset(dataset).task_class()
    if module_source is not None:
        module = load_module(module_source, module_origin or Model.MODULE_FILE, imports)
        task_class = with_user_module(task_class, module)
    return task_class(load_schema(schema_file), model_name, model_options)


class LearntByTransform:
    """A task whose preprocessing the Transform learns (components/transform): given the Transform's graph
    (`use_transform_graph`, before `prepare`), its `prepare` takes the vocabularies and statistics from the graph
    and reads nothing from the data; without one, it learns them from Split-train itself. A task without this
    mixin (MNIST) takes no transform graph."""

    transform_graph: TransformGraph | None = None

    def use_transform_graph(self, graph: TransformGraph) -> None:
        self.transform_graph = graph

    @staticmethod
    def learnt_with(graph: TransformGraph, wanted: dict[str, Any]) -> dict[str, Any]:
        """The graph's analyzers.json, after checking it was learnt with the data options `wanted` (those that shape
        what the task takes from it): a ValueError naming the ones that differ otherwise."""
        learnt = graph.analyzers
        options = learnt["options"]
        differ = {name: options.get(name) for name, value in wanted.items() if options.get(name) != value}
        if differ:
            raise ValueError(
                f"the transform graph {graph.uri} was learnt with other data options: {differ}, not {wanted}"
            )
        return learnt
