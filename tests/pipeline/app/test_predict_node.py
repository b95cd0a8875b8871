"""A declared pipeline's `predict` node: a model trained in the run scores an ingest of unlabelled rows."""

from __future__ import annotations

import csv

import pytest
import yaml

from kflow.pipeline.cli.main import main
from kflow.pipeline.dsl.artifacts import InferenceResult
from kflow.pipeline.runners.run_record import Run
from tests.conftest import REPO

IRIS = REPO / "pipeline" / "configs" / "data" / "iris.csv"
FEATURES = ["sepal_length", "sepal_width", "petal_length", "petal_width"]


def _config(tmp_path, new_columns=None):
    with IRIS.open() as source:
        rows = list(csv.DictReader(source))
    with (tmp_path / "new.csv").open("w", newline="") as table:
        writer = csv.writer(table)
        writer.writerow(["id", *FEATURES])
        writer.writerows([f"new-{index}", *(row[name] for name in FEATURES)] for index, row in enumerate(rows[::10]))
    new_rows = {"source_path": str(tmp_path / "new.csv"), "label": None, "key": "id", "split": {"score": 1}}
    if new_columns is not None:
        new_rows["columns"] = new_columns
    config = {
        "name": "iris-scoring",
        "pipeline_root": str(tmp_path / "runs"),
        "data": {"dataset": "csv", "source": {"path": str(IRIS)}, "label": "species"},
        "trainer": {"model": "tabular_mlp", "epochs": 3, "batch_size": 16},
        "components": [
            {"id": "ingest", "type": "ingest"},
            {"id": "train", "type": "trainer", "inputs": {"examples": "ingest.examples", "schema": "ingest.schema"}},
            {"id": "new_rows", "type": "csv_ingest", "parameters": new_rows},
            {"id": "predict", "type": "predict",
             "inputs": {"model": "train.model", "examples": "new_rows.examples", "schema": "new_rows.schema"}},
        ],
    }  # fmt: skip
    (tmp_path / "scoring.yaml").write_text(yaml.safe_dump(config))
    return tmp_path / "scoring.yaml", len(rows[::10])


def test_a_declared_predict_node_scores_an_unlabelled_ingest(tmp_path, capsys):
    config, count = _config(tmp_path)
    assert main(["validate", str(config)]) == 0
    assert main(["run", str(config), "-q"]) == 0, capsys.readouterr().err
    run = Run.load(next((tmp_path / "runs" / "iris-scoring").glob("*/run.json")).parent)
    result = InferenceResult(run.executions["predict"].outputs["predictions"].uri)
    assert result.record["count"] == count and result.record["key"] == "id"
    with (result.split_uri("score") / "predictions.csv").open() as table:
        rows = list(csv.DictReader(table))
    assert sorted(row["key"] for row in rows) == sorted(f"new-{index}" for index in range(count))
    assert {row["predicted_class"] for row in rows} <= {"setosa", "versicolor", "virginica"}
    assert all(
        abs(sum(float(row[f"score_{c}"]) for c in ("setosa", "versicolor", "virginica")) - 1) < 1e-4 for row in rows
    )


@pytest.mark.slow  # ~7 s; make test refuses data the model cannot read in one line (tests/e2e/test_predict.py)
def test_a_column_read_as_another_type_is_refused_by_name(tmp_path, capsys):
    config, _ = _config(tmp_path, new_columns={"petal_width": "string"})
    assert main(["run", str(config), "-q"]) == 1
    err = capsys.readouterr().err
    assert "predict" in err and "the data's column 'petal_width' holds string values" in err
