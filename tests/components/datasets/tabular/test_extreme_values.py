"""Numbers real tables hold that float32 does not: R's gt `constants` (CODATA's physical constants, from 1e-36 to
past 1e38). Such a column cannot be normalised on a float32 scale: it is left out, said in the log, and a value past
float32's range (stored as inf in the Examples) reads as missing, never as inf."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.datasets import load_wine

from kflow.components.datasets.csv.ingest.executor import run as ingest
from kflow.components.datasets.tabular.task import TabularTask
from kflow.components.util.schema import load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

CONSTANTS = [6.6446573357e-27, 7294.29954142, 1.380649e-23, 6.02214076e23, 2.99792458e8, 1.6e-35, 5.2e38, 9.1e-31]


def test_a_column_spanning_past_float32_is_left_out_and_inf_reads_as_missing(tmp_path, caplog):
    frame = load_wine(as_frame=True).frame.iloc[:, :3].copy()
    frame["constant"] = [CONSTANTS[index % len(CONSTANTS)] for index in range(len(frame))]
    frame["label"] = np.asarray(["a", "b"])[np.arange(len(frame)) % 2]
    frame.to_csv(tmp_path / "wine.csv", index=False)
    examples, schema = Examples(tmp_path / "examples"), Schema(tmp_path / "schema")
    ingest(examples=examples, schema=schema, rejects=Rejects(tmp_path / "rejects"),
           source_path=str(tmp_path / "wine.csv"), label="label")  # fmt: skip
    task = TabularTask(load_schema(schema.file))
    with caplog.at_level("INFO"):
        task.prepare(examples, tmp_path / "assets")
    assert "the feature 'constant' is left out: its values' variance" in caplog.text
    assert [spec["name"] for spec in task.preprocessing["features"]] == list(frame.columns[:3])
    model = task.build_model()  # a float32 model of the kept features builds
    for x, _ in task.dataset(examples, "train", batch_size=64, training=False, seed=0).as_numpy_iterator():
        assert np.isfinite(model.predict_on_batch(x)).all()
    pd.testing.assert_index_equal(pd.Index(sorted(x)), pd.Index(sorted(frame.columns[:3])))
