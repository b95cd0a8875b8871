"""The Parquet ingest on real Parquet files written by pyarrow: types from the file, row groups as chunks,
every reject with its reason, the same records and splits as the CSV it was copied from, errors."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from kflow.components.datasets.parquet.ingest import source as parquet_source
from kflow.components.datasets.parquet.ingest.executor import run
from kflow.components.util.schema import annotation_tags, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from tests.components.datasets.csv.ingest.test_executor import read_records

IRIS = Path(__file__).parents[5] / "pipeline" / "configs" / "data" / "iris.csv"


def ingest(folder, run_ingest=run, **parameters):
    examples, schema, rejects = Examples(folder / "ex"), Schema(folder / "schema"), Rejects(folder / "rej")
    summary = run_ingest(examples=examples, schema=schema, rejects=rejects, **parameters)
    return summary, examples, schema, rejects


def by_split(examples):
    return {
        split: sorted(json.dumps(row, sort_keys=True) for row in rows) for split, rows in read_records(examples).items()
    }


def test_a_parquet_copy_of_iris_gives_the_csv_records_in_the_same_splits(tmp_path):
    from kflow.components.datasets.csv.ingest.executor import run as run_csv

    table = pa_csv.read_csv(IRIS)
    pq.write_table(table, tmp_path / "iris.parquet", row_group_size=40)  # 4 row groups: 4 Beam elements.

    csv_summary, csv_examples, csv_schema, _ = ingest(tmp_path / "csv", run_csv, source_path=str(IRIS), label="species")
    summary, examples, schema, _ = ingest(tmp_path / "pq", source_path=str(tmp_path / "iris.parquet"), label="species")

    assert summary == csv_summary and summary["read"] == 150 and summary["rejected"] == 0
    assert by_split(examples) == by_split(csv_examples)
    assert load_schema(schema.file) == load_schema(csv_schema.file)
    assert annotation_tags(load_schema(schema.file), "species")["task"] == "classification"


def test_types_come_from_the_file_and_bad_rows_are_rejected_with_their_reason(tmp_path):
    table = pa.table(
        {
            "id": pa.array(["a", "b", "c", "d", "b", None, "g"]),
            "count": pa.array([1, 2, None, 4, 5, 6, 7], pa.int32()),
            "ratio": pa.array([0.5, float("nan"), 1.5, float("inf"), 2.5, 3.0, 3.5]),
            "flag": pa.array([True, False, True, None, False, True, True]),
            "size (mg/dl)": pa.array(["1", "2", "3", "4", "five", "6", "7"]),
            "label": pa.array(["x", "y", "x", "y", "x", "y", None]),
        }
    )
    pq.write_table(table, tmp_path / "data.parquet", row_group_size=3)

    summary, examples, schema, rejects = ingest(
        tmp_path,
        source_path=str(tmp_path),
        label="label",
        key="id",
        columns={"size (mg/dl)": "int"},
        split={"train": 1, "eval": 1, "test": 1},
        max_invalid_fraction=1.0,
    )

    entries = {entry["position"]: entry for entry in rejects.read()}
    assert {position: entry["reason"] for position, entry in entries.items()} == {
        "data.parquet#3": "bad_value",  # ratio is inf
        "data.parquet#4": "bad_value",  # "five" is no int (checked before the repeated key)
        "data.parquet#5": "empty_key",
        "data.parquet#6": "missing_label",
    }
    assert entries["data.parquet#4"]["column"] == "size (mg/dl)" and entries["data.parquet#4"]["record"]["id"] == "b"
    assert summary["read"] == 7 and summary["rejected"] == 4
    assert sum(summary[split] for split in ("train", "eval", "test")) == 3
    types = {feature.name: annotation_tags(load_schema(schema.file), feature.name)["kflow_type"]
             for feature in load_schema(schema.file).feature}  # fmt: skip
    assert types == {"id": "string", "count": "int", "ratio": "float", "flag": "bool", "size (mg/dl)": "int",
                     "label": "string"}  # fmt: skip
    rows = {row["id"]: row for split in read_records(examples).values() for row in split}
    assert "ratio" not in rows["b"] and rows["c"]["size (mg/dl)"] == 3 and "count" not in rows["c"]
    assert rows["a"]["flag"] == 1 and rows["b"]["flag"] == 0


def test_a_repeated_key_is_rejected_across_row_groups(tmp_path):
    pq.write_table(
        pa.table({"id": [1, 2, 3, 2, 5, 1], "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "label": [0, 1, 0, 1, 0, 1]}),
        tmp_path / "data.parquet",
        row_group_size=2,
    )
    summary, _, _, rejects = ingest(
        tmp_path, source_path=str(tmp_path / "data.parquet"), label="label", key="id", max_invalid_fraction=1.0
    )
    assert [(entry["position"], entry["reason"]) for entry in rejects.read()] == [
        ("data.parquet#3", "duplicate_key"),
        ("data.parquet#5", "duplicate_key"),
    ]
    assert summary["read"] == 6 and summary["rejected"] == 2


def test_max_records_stops_inside_a_row_group(tmp_path):
    table = pa.table({"x": [i * 3 for i in range(100)], "label": [i % 2 for i in range(100)]})
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=30)
    summary, examples, _, _ = ingest(tmp_path, source_path=str(tmp_path / "d.parquet"), label="label", max_records=45)
    assert summary["read"] == 45 and sum(len(rows) for rows in read_records(examples).values()) == 45


def test_a_float_label_is_inferred_as_regression_and_a_list_column_is_left_out(tmp_path):
    pq.write_table(pa.table({"x": [1, 2, 3], "y": [0.5, 1.5, 2.5]}), tmp_path / "reg.parquet")
    facts = parquet_source.inspect_source(source_path=str(tmp_path / "reg.parquet"), label="y")
    assert facts.problem_type == "regression" and "decimal" in facts.problem_type_reason

    # A list (or struct) column is left out, said; the table's other columns are read. As the label, refused.
    table = pa.table({"tags": [[1], [2], [3, 4]], "x": [1.0, 2.0, 3.0], "y": [0, 1, 0]})
    pq.write_table(table, tmp_path / "list.parquet")
    facts = parquet_source.inspect_source(source_path=str(tmp_path / "list.parquet"), label="y")
    assert facts.header == ["x", "y"] and facts.unread == {"tags": "list<element: int64>"}
    assert "data: 'tags' holds list<element: int64>, no scalar: left out" in facts.readings[0]
    # A column every value of which is null: no value, not a type to declare (a user trial was told to declare it).
    pq.write_table(table.append_column("nothing", pa.nulls(3)), tmp_path / "nulls.parquet")
    facts = parquet_source.inspect_source(source_path=str(tmp_path / "nulls.parquet"), label="y")
    assert "data: 'nothing' holds no value (every one null): left out" in facts.readings
    summary, examples, _, _ = ingest(tmp_path / "out", source_path=str(tmp_path / "list.parquet"), label="y")
    assert summary["read"] == 3 and summary["rejected"] == 0
    assert all(set(row) == {"x", "y"} for rows in read_records(examples).values() for row in rows)
    with pytest.raises(ValueError, match=r"data\.columns\.tags: the Parquet type list<element: int64>"):
        parquet_source.inspect_source(source_path=str(tmp_path / "list.parquet"), label="tags")
    with pytest.raises(ValueError, match=r"data\.label: 'why' is not a column"):
        parquet_source.inspect_source(source_path=str(tmp_path / "reg.parquet"), label="why")
    (tmp_path / "fake.parquet").write_text("id,label\n1,2\n")
    with pytest.raises(ValueError, match=r"parquet: .*fake\.parquet is not a readable Parquet file"):
        parquet_source.inspect_source(source_path=str(tmp_path / "fake.parquet"), label="y")
    with pytest.raises(ValueError, match=r"data\.source\.path: .*nothing does not exist"):
        parquet_source.resolve(str(tmp_path / "nothing"))


def test_a_uint64_past_int64_is_a_bad_value_with_its_row(tmp_path):
    """Parquet's uint64 holds what an Example's int64_list cannot: such a stray value's row (within a CSV's 1 % of
    stray values: a sentinel) is refused by name, the others kept; a column of more is read as float (test_uint64)."""
    numbers = [1, 2**64 - 1, 2**63 - 1, *range(197)]
    table = pa.table({"n": pa.array(numbers, pa.uint64()), "label": pa.array(["x", "y"] * 100)})
    pq.write_table(table, tmp_path / "big.parquet")
    summary, _, _, rejects = ingest(
        tmp_path, source_path=str(tmp_path / "big.parquet"), label="label", max_invalid_fraction=1.0
    )
    entries = [json.loads(line) for line in rejects.file.read_text().splitlines()]
    assert [(e["reason"], e["position"], e["column"]) for e in entries] == [("bad_value", "big.parquet#1", "n")]
    assert summary["read"] == 200 and summary["train"] + summary["eval"] + summary["test"] == 199


def test_a_bool_label_s_classes_are_its_names_as_in_the_csv_pandas_writes(tmp_path):
    """Real breast-cancer cells with `malignant` as a bool column: the classes were 0 and 1 in Parquet, False and
    True in the CSV pandas writes of the same frame (a carried gap). Both now give False and True, the same records."""
    from sklearn.datasets import load_breast_cancer

    from kflow.components.datasets.csv.ingest.executor import run as run_csv

    frame = load_breast_cancer(as_frame=True).frame.iloc[:, [0, 1, 2, -1]]
    frame["malignant"] = frame.pop("target") == 0
    frame.to_parquet(tmp_path / "cells.parquet", index=False)
    frame.to_csv(tmp_path / "cells.csv", index=False)
    _, examples, schema, _ = ingest(tmp_path / "pq", source_path=str(tmp_path / "cells.parquet"), label="malignant")
    _, csv_examples, csv_schema, _ = ingest(tmp_path / "csv", run_csv, source_path=str(tmp_path / "cells.csv"),
                                            label="malignant")  # fmt: skip
    proto = load_schema(schema.file)
    assert annotation_tags(proto, "malignant")["task"] == "classification"
    assert {row["malignant"] for rows in read_records(examples).values() for row in rows} == {"False", "True"}
    assert by_split(examples) == by_split(csv_examples)
