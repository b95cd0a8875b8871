"""The dataset registry, the shared layer under the components: what each dataset is.

A dataset is a folder here (`<name>/__init__.py` declaring its `Dataset` bundle, `task.py`
with its Keras input pipeline and model choice, `metrics.py` with its evaluation metrics)
plus its TFMD schema in `schemas/<name>/` and one line below. Ingest, Trainer and Evaluator
look datasets up here by name (`data.dataset`); none of them knows a dataset otherwise.
"""

from __future__ import annotations

import importlib

from kflow.components.datasets.bundle import Dataset

DATASETS: dict[str, str] = {
    "mnist": "kflow.components.datasets.mnist",
    "wikitext2": "kflow.components.datasets.wikitext2",
    "quora": "kflow.components.datasets.quora",
    "csv": "kflow.components.datasets.csv",
    "parquet": "kflow.components.datasets.parquet",
    "images": "kflow.components.datasets.images",
    "tfrecord": "kflow.components.datasets.tfrecord",
    "tfds": "kflow.components.datasets.tfds",
}


def get_dataset(name: str) -> Dataset:
    """The bundle of the dataset `name`; a ValueError names the registered ones otherwise."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; registered datasets: {', '.join(DATASETS)}")
    return importlib.import_module(DATASETS[name]).DATASET


__all__ = ["DATASETS", "Dataset", "get_dataset"]
