"""The dataset registry, the shared layer under the components: what each dataset is.

A dataset is a folder here (`<name>/__init__.py` declaring its `Dataset` bundle, `task.py`
with its Keras input pipeline and model choice, `metrics.py` with its evaluation metrics)
plus its TFMD schema in `schemas/<name>/` and one line below. Ingest, Trainer and Evaluator
look datasets up here by name (`data.dataset`); none of them knows a dataset otherwise.

A dataset of another package is one line of that package's entry points, in its pyproject.toml:

    [project.entry-points."kflow.datasets"]
    my_data = "my_package.my_data"        # a module whose DATASET is its Dataset bundle

and is then known to `kflow validate`, `kflow run`, `kflow schema` and `kflow.pipeline.api` like these.
"""

from __future__ import annotations

import importlib
import importlib.metadata

from kflow.components.datasets.bundle import Dataset

ENTRY_POINTS = "kflow.datasets"

BUILT_IN: dict[str, str] = {
    "mnist": "kflow.components.datasets.mnist",
    "wikitext2": "kflow.components.datasets.wikitext2",
    "quora": "kflow.components.datasets.quora",
    "csv": "kflow.components.datasets.csv",
    "parquet": "kflow.components.datasets.parquet",
    "images": "kflow.components.datasets.images",
    "tfrecord": "kflow.components.datasets.tfrecord",
    "tfds": "kflow.components.datasets.tfds",
}


def _registered() -> dict[str, str]:
    """kflow's datasets, then those other installed packages register (a built-in name cannot be taken)."""
    plugins = {point.name: point.value for point in importlib.metadata.entry_points(group=ENTRY_POINTS)}
    return {**BUILT_IN, **{name: path for name, path in sorted(plugins.items()) if name not in BUILT_IN}}


DATASETS: dict[str, str] = _registered()


def get_dataset(name: str) -> Dataset:
    """The bundle of the dataset `name`; a ValueError names the registered ones otherwise."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; registered datasets: {', '.join(DATASETS)}")
    module, _, attribute = DATASETS[name].partition(":")
    return getattr(importlib.import_module(module), attribute or "DATASET")


__all__ = ["DATASETS", "Dataset", "get_dataset"]
