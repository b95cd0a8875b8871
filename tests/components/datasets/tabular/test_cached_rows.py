"""The train split parsed once and kept as rows (cached_rows.py): every pass holds the split's rows, each once (a
last partial batch dropped, as before), with their missing numbers and their strings, shuffled anew each pass;
the same rows as the split read from its files. scikit-learn's real wine measurements, with holes and a category."""

from __future__ import annotations

import os

import numpy as np
import pytest
from sklearn.datasets import load_wine

from kflow.components.datasets.csv.ingest.executor import run as ingest
from kflow.components.datasets.tabular import cached_rows
from kflow.components.datasets.tabular.task import TabularTask
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

BATCH = 16


@pytest.fixture(scope="module")
def wine(tmp_path_factory):
    root = tmp_path_factory.mktemp("wine")
    frame = load_wine(as_frame=True).frame
    frame.loc[::7, "magnesium"] = np.nan  # holes: missing numbers
    frame["strength"] = np.where(frame["alcohol"] > frame["alcohol"].median(), "strong", "light")
    frame.loc[::11, "strength"] = None
    frame.to_csv(root / "wine.csv", index=False)
    examples, schema = Examples(root / "examples"), Schema(root / "schema")
    ingest(examples=examples, schema=schema, rejects=Rejects(root / "rejects"), source_path=str(root / "wine.csv"),
           label="target")  # fmt: skip
    task = TabularTask(load_schema(schema.file))
    task.prepare(examples, root / "assets")
    return examples, task


def rows(task, examples, *, passes: int, training: bool) -> list[list[tuple]]:
    data = task.dataset(examples, "train", batch_size=BATCH, training=training, seed=3, shuffle_buffer=1000)
    names = sorted(task.types)
    out = []
    for _ in range(passes):
        seen = []
        for x, y in data.as_numpy_iterator():
            columns = [x[name].ravel() for name in names]
            for index in range(len(y)):
                seen.append((*(repr(column[index]) for column in columns), int(y[index])))
        out.append(seen)
    return out


def test_each_pass_holds_the_splits_rows_once_shuffled_anew(wine, monkeypatch):
    examples, task = wine
    train = examples.recorded_counts["train"]
    files = examples.split_files("train")
    assert cached_rows.fits_in_memory(train, len(task.types) + 1, files)
    assert not cached_rows.fits_in_memory(train, (cached_rows.MAX_CACHED_BYTES // 8) // train + 1, files)
    assert not cached_rows.fits_in_memory(None, 3, files)  # an uncounted split: streamed
    stored = sum(os.path.getsize(path) for path in files)  # long strings: bounded by the files' size
    assert train * (len(task.types) + 1) * cached_rows.BYTES_A_VALUE < stored * cached_rows.GZIP_BOUND - 1
    monkeypatch.setattr(cached_rows, "MAX_CACHED_BYTES", stored * cached_rows.GZIP_BOUND - 1)
    assert not cached_rows.fits_in_memory(train, len(task.types) + 1, files)
    monkeypatch.undo()
    first, second = rows(task, examples, passes=2, training=True)
    (every,) = rows(task, examples, passes=1, training=False)
    assert len(every) == train and len(first) == len(second) == train - train % BATCH
    assert set(first) <= set(every) and set(second) <= set(every)
    assert len(set(first)) == len(first)  # each row once a pass
    assert first != second  # reshuffled
    values = {value for row in first for value in row[:-1]}
    assert any("nan" in value for value in values) and any("strong" in value for value in values)
    # Streamed from the files instead (a split too big to keep): the same rows.
    monkeypatch.setattr(cached_rows, "MAX_CACHED_BYTES", 0)
    (streamed,) = rows(task, examples, passes=1, training=True)
    assert len(streamed) == len(first) and set(streamed) <= set(every)
