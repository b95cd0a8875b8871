"""The Predictor refuses a column the model reads that the scored data holds as another type, in one line whose way
out can be followed for the data's format (a user trial followed 'declare it in the ingest's columns' for a
TFRecord, whose ingest takes each feature's type as the records hold it, and got the same refusal)."""

from __future__ import annotations

import pandas as pd
import pytest

from kflow.components.datasets.tabular.task import TabularTask
from kflow.components.predictor.executor import ColumnsRefused, check_columns
from kflow.components.util.schema import load_schema
from tests.components.trainer.user_models import csv_examples
from tests.conftest import REPO

IRIS = REPO / "pipeline" / "configs" / "data" / "iris.csv"


def test_a_column_of_another_type_is_one_line_with_a_way_out_for_a_table_and_for_tfrecords(tmp_path):
    (tmp_path / "trained").mkdir()
    _, trained = csv_examples(tmp_path / "trained", IRIS, "species")
    frame = pd.read_csv(IRIS)
    frame["petal_width"] = [f"{value} cm" for value in frame["petal_width"]]  # written with its unit: text
    frame.to_csv(tmp_path / "new.csv", index=False)
    (tmp_path / "scored").mkdir()
    _, scored = csv_examples(tmp_path / "scored", tmp_path / "new.csv", "species")
    task = TabularTask(load_schema(trained.file))
    with pytest.raises(ColumnsRefused) as refused:
        check_columns(task, load_schema(scored.file))
    said = str(refused.value)
    assert "\n" not in said and said.startswith(
        "the data's column 'petal_width' holds string values; the model was trained on float ones (a table's: "
        "declare it in the ingest's columns, {petal_width: float}; TFRecords hold each feature's type"
    ), said
    assert check_columns(task, load_schema(trained.file)) == []
