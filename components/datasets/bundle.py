"""A dataset bundle: everything kflow needs to know about one dataset, named in one place.

Classes are named by import path ("package.module:Class") and imported on demand, so the
registry loads without TensorFlow and one dataset's dependencies never load for another.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

# `data.split` when a config gives none, declared here once (Dataset.default_split, the ingests' `split` defaults):
# the source's training records divided, its own test split kept as "test" (SOURCE_TEST_SPLIT); or, where the
# source has no test split of its own, a test share cut from the data too (SPLIT_WITH_TEST).
SOURCE_TEST_SPLIT = {"train": 9, "eval": 1}
SPLIT_WITH_TEST = {"train": 8, "eval": 1, "test": 1}


@dataclass(frozen=True)
class Dataset:
    """One dataset: its ingest component, TFMD schema, training task and evaluation metrics.

    `filters`: the `data.filters` fields its ingest takes (every ingest takes max_invalid_fraction).
    `source_test_split`: True when the source brings its own test split, so `data.split` may only
    divide the rest into train and eval; False when the test split is cut from the data by `data.split`.
    `backend_limits`: {Keras backend: why its model cannot train there}; empty when it trains on every backend.
    `column_limits`: "package.module:function" of (Keras backend, {input column: its type}) -> why a model of those
    columns cannot train there, or None: a limit of some of its tables (strings under JAX), not of the dataset.
    `data_fields`: the extra `data` fields its ingest takes, {config field: ingest parameter} (csv: label, task, …).
    `schema`: its TFMD schema under schemas/, None when the ingest writes one from the data.
    `settings`: "package.module:Class" of a pydantic model of its own settings (`data.settings` in a config), so that
    a dataset of another package brings its settings with it; None when it has none.
    `training`: its own training recipe, {trainer field: value} (`trainer.epochs`), what a config that leaves such a
    field out trains with instead of the field's general default (pipeline/app/dataset_training.py).
    """

    name: str
    ingest: str
    schema: str | None
    task: str
    metrics: str
    filters: tuple[str, ...] = ()
    source_test_split: bool = True
    backend_limits: dict[str, str] = field(default_factory=dict)
    column_limits: str | None = None
    data_fields: dict[str, str] = field(default_factory=dict)
    required_data_fields: tuple[str, ...] = ()
    # True: the standard pipeline checks its Examples (statistics → inferred schema → validation) before training.
    validates_data: bool = False
    settings: str | None = None
    training: dict[str, Any] = field(default_factory=dict)
    # The registered models that train on its task (trainer.model; () where any may) and the trainer.model_options
    # its task and models take (None where they are not listed): `kflow validate` refuses others before training.
    models: tuple[str, ...] = ()
    model_options: tuple[str, ...] | None = None

    @property
    def default_split(self) -> dict[str, int]:
        """`data.split` when a config gives none: a test share too where the source has no test split of its own."""
        return dict(SOURCE_TEST_SPLIT if self.source_test_split else SPLIT_WITH_TEST)

    def ingest_component(self) -> Any:
        return _load(self.ingest)

    def task_class(self) -> Any:
        return _load(self.task)

    def metrics_class(self) -> Any:
        return _load(self.metrics)

    def backend_problem(self, backend: str, input_types: dict[str, str] | None = None) -> str | None:
        """Why its model cannot train on `backend` (the dataset's limit, else its columns' where `input_types` gives
        them), or None."""
        if backend in self.backend_limits:
            return self.backend_limits[backend]
        if self.column_limits and input_types is not None:
            return _load(self.column_limits)(backend, input_types)
        return None

    def settings_model(self) -> Any:
        """The pydantic model of `data.settings`, or None."""
        return _load(self.settings) if self.settings else None

    def read_settings(self, value: dict[str, Any] | None) -> Any:
        """`data.settings` (or the ingest's `settings` parameter) as the dataset's typed settings object; a
        pydantic ValidationError when it does not fit."""
        return self.settings_model().model_validate(value or {})


def _load(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)
