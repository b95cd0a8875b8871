"""Class labels as real files write them, ingested (CSV and Parquet) and looked up by the tabular task: yes/no with
stray spaces, integer classes with gaps, whole numbers written as decimals. Each class keeps its name and every
labelled record its class index (none is -1, which the Trainer's loss would refuse)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_wine

from kflow.components.datasets.csv.ingest.executor import run as ingest_csv
from kflow.components.datasets.parquet.ingest.executor import run as ingest_parquet
from kflow.components.datasets.tabular.task import TabularTask
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema


def wine(labels: list) -> pd.DataFrame:
    """scikit-learn's wine measurements (178 real wines) with `labels` cycled as the class."""
    frame = load_wine(as_frame=True).frame.iloc[:, :4].copy()
    frame["label"] = [labels[index % len(labels)] for index in range(len(frame))]
    return frame


def classes_and_indices(tmp_path, frame: pd.DataFrame, fmt: str) -> tuple[list[str], np.ndarray]:
    path = tmp_path / f"data.{fmt}"
    frame.to_csv(path, index=False) if fmt == "csv" else frame.to_parquet(path, index=False)
    examples, schema = Examples(tmp_path / "examples"), Schema(tmp_path / "schema")
    ingest = ingest_csv if fmt == "csv" else ingest_parquet
    ingest(examples=examples, schema=schema, rejects=Rejects(tmp_path / "rejects"), source_path=str(path),
           label="label")  # fmt: skip
    task = TabularTask(load_schema(schema.file))
    task.prepare(examples, tmp_path / "assets")
    indices = [
        y
        for split in examples.splits
        for _, y in task.dataset(examples, split, batch_size=64, training=False, seed=0).as_numpy_iterator()
    ]
    return task.classes, np.concatenate(indices)  # fmt: skip


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize(
    ("labels", "classes"),
    [
        # Stray spaces, any case. A CSV's yes/no is a boolean (no = 0, yes = 1); a Parquet string column is text.
        ([" yes", "no ", "Yes", "no"], {"csv": ["0", "1"], "parquet": ["Yes", "no", "yes"]}),
        ([1, 3, 7], {"csv": ["1", "3", "7"], "parquet": ["1", "3", "7"]}),  # integer classes with gaps
        ([0.0, 1.0, 2.0], {"csv": ["0", "1", "2"], "parquet": ["0", "1", "2"]}),  # whole numbers written as decimals
        ([True, False], {"csv": ["0", "1"], "parquet": ["0", "1"]}),
    ],
)
def test_each_class_keeps_its_name_and_every_record_its_index(tmp_path, labels, classes, fmt):
    frame = wine(labels)
    found, indices = classes_and_indices(tmp_path, frame, fmt)
    assert found == classes[fmt]
    assert len(indices) == len(frame) and indices.min() >= 0 and indices.max() == len(found) - 1
    spelled = (lambda value: str(value).strip().lower()) if fmt == "csv" else (lambda value: str(value).strip())
    written = frame["label"].map(lambda value: spelled(value).removesuffix(".0")).value_counts()
    assert sorted(np.bincount(indices).tolist()) == sorted(written.tolist())  # each class holds its records
