"""Tables saved with their row names, as pandas and R save them by default: `DataFrame.to_csv(path)` and R's
`write.csv` write an unnamed first column (kflow refused the header: "has an empty column name"), and
`DataFrame.to_parquet(path)` stores an index other than 0..n-1 as `__index_level_0__` (kflow trained on it as a
number). The row names become the records' key, never a feature; scikit-learn's real wine measurements."""

import logging

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris, load_wine

from kflow.components.datasets.csv.ingest import source as csv_source
from kflow.components.datasets.csv.ingest.executor import run as ingest_csv
from kflow.components.datasets.parquet.ingest.executor import run as ingest_parquet
from kflow.components.datasets.tabular.examples import ROW_NUMBERS_MIN_ROWS, numbers_rows
from kflow.components.datasets.tabular.task import TabularTask
from kflow.components.util.schema import annotation_tags, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema


def wine(index=None) -> pd.DataFrame:
    frame = load_wine(as_frame=True).frame
    return frame if index is None else frame.set_axis(index(frame))


def ingested(tmp_path, path, fmt: str):
    """(the ingest's summary, the schema it wrote) of the table at `path`, labelled by `target`."""
    examples, schema = Examples(tmp_path / "examples"), Schema(tmp_path / "schema")
    ingest = ingest_csv if fmt == "csv" else ingest_parquet
    summary = ingest(examples=examples, schema=schema, rejects=Rejects(tmp_path / "rejects"), source_path=str(path),
                     label="target")  # fmt: skip
    return summary, load_schema(schema.file)


CASES = {
    "to_csv": ("csv", lambda frame, path: frame.to_csv(path), None, "row_names"),
    "to_csv, names": ("csv", lambda frame, path: frame.to_csv(path), lambda f: [f"wine-{i}" for i in range(len(f))],
                      "row_names"),
    "to_parquet, a sample": ("parquet", lambda frame, path: frame.sample(frac=1.0, random_state=0).to_parquet(path),
                             None, "__index_level_0__"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_row_names_are_the_key_and_no_feature(tmp_path, case, caplog):
    caplog.set_level(logging.INFO)
    fmt, write, index, column = CASES[case]
    path = tmp_path / f"wine.{fmt}"
    write(wine(index), path)
    if fmt == "csv":  # kflow validate's reading of the header
        assert csv_source.inspect_source(source_path=str(path), label="target").header[0] == "row_names"
    summary, proto = ingested(tmp_path, path, fmt)
    assert summary["read"] == 178 and summary["invalid"] == 0
    assert annotation_tags(proto, column)["role"] == "key"
    task = TabularTask(proto)
    assert column not in task.types and len(task.types) == 13  # the 13 measurements
    assert f"{column!r} holds the rows' names" in caplog.text


def test_row_names_beside_a_declared_key_are_no_feature_either(tmp_path):
    frame = wine()
    frame.insert(0, "wine_id", [f"w{i:03d}" for i in range(len(frame))])
    frame.to_csv(tmp_path / "wine.csv")
    examples, schema = Examples(tmp_path / "examples"), Schema(tmp_path / "schema")
    ingest_csv(examples=examples, schema=schema, rejects=Rejects(tmp_path / "rejects"),
               source_path=str(tmp_path / "wine.csv"), label="target", key="wine_id")  # fmt: skip
    proto = load_schema(schema.file)
    assert annotation_tags(proto, "wine_id")["role"] == "key"
    assert annotation_tags(proto, "row_names")["role"] == "row_names"
    assert {"wine_id", "row_names"}.isdisjoint(TabularTask(proto).types)


def test_columns_without_a_name_or_named_again_get_a_name_of_their_own(tmp_path):
    """A spreadsheet saves the empty columns its cells were formatted in, unnamed (`…,target,,`), and a sheet may
    name two columns alike: kflow refused the header. Now such a column is named by its position, one named again
    by its occurrence (`alcohol_2`), said in one line each; one empty in the sample is said to be no feature if
    the training split has no value either (the plan leaves it out: test_empty_columns.py)."""
    frame = wine()
    frame.insert(3, "helper", frame["alcohol"] * 2)  # a helper column someone forgot to name
    frame.insert(5, "again", frame["ash"])  # a second column under the first's name
    frame["end1"], frame["end2"] = "", ""  # two formatted, empty columns at the end
    written = {"helper": "", "again": "alcohol", "end1": "", "end2": " "}
    frame.to_csv(tmp_path / "sheet.csv", index=False, header=[written.get(name, name) for name in frame])
    facts = csv_source.inspect_source(source_path=str(tmp_path / "sheet.csv"), label="target")
    assert facts.header[3] == "unnamed_4" and facts.header[5] == "alcohol_2"
    assert facts.header[-2:] == ["unnamed_17", "unnamed_18"] and len(set(facts.header)) == len(facts.header)
    assert facts.types["unnamed_4"] == facts.types["alcohol_2"] == "float"
    assert facts.renamed == {"unnamed_4": "", "alcohol_2": "alcohol", "unnamed_17": "", "unnamed_18": ""}
    assert facts.empty == ("unnamed_17", "unnamed_18")
    said = "\n".join(facts.readings)
    assert "data: the header names a column 'alcohol' again: read as 'alcohol_2'" in said
    assert "data: a column has no name in the header: read as 'unnamed_17'" in said
    assert "data: 'unnamed_18' has no value in the 178 sampled rows: no feature if the training split holds" in said
    summary, schema = ingested(tmp_path, tmp_path / "sheet.csv", "csv")
    assert (summary["read"], summary["rejected"]) == (178, 0)


def read_back_by_pandas(frame, path):
    frame.to_csv(path)  # the row names under an empty name ...
    pd.read_csv(path).to_csv(path, index=False)  # ... read by pandas as `Unnamed: 0` and written again


def rdatasets_export(frame, path):
    frame.insert(0, "rownames", range(1, len(frame) + 1))  # Rdatasets' CSVs: R's row names, first, named
    frame.to_csv(path, index=False)


def readr_export(frame, path):
    frame.insert(0, "...1", range(1, len(frame) + 1))  # readr's name for the unnamed first column
    frame.to_csv(path, index=False)


@pytest.mark.parametrize(
    ("write", "column"),
    [(read_back_by_pandas, "Unnamed: 0"), (rdatasets_export, "rownames"), (readr_export, "...1")],
)
def test_row_names_the_first_column_named_as_writers_name_it_are_the_key(tmp_path, write, column):
    path = tmp_path / "wine.csv"
    write(wine(), path)
    examples, schema = Examples(tmp_path / "examples"), Schema(tmp_path / "schema")
    ingest_csv(examples=examples, schema=schema, rejects=Rejects(tmp_path / "rejects"), source_path=str(path),
               label="target")  # fmt: skip
    proto = load_schema(schema.file)
    assert annotation_tags(proto, column)["role"] == "key"
    assert column not in TabularTask(proto).types and len(TabularTask(proto).types) == 13


def test_a_column_named_rownames_past_the_first_is_a_feature(tmp_path):
    frame = wine()
    frame["rownames"] = range(len(frame))  # a user's own column, not a writer's row names
    frame.to_csv(tmp_path / "wine.csv", index=False)
    examples, schema = Examples(tmp_path / "examples"), Schema(tmp_path / "schema")
    ingest_csv(examples=examples, schema=schema, rejects=Rejects(tmp_path / "rejects"),
               source_path=str(tmp_path / "wine.csv"), label="target")  # fmt: skip
    assert "rownames" in TabularTask(load_schema(schema.file)).types


@pytest.mark.parametrize(
    ("columns", "key", "said"),
    [
        (["rownames", "target"], None, "(beside it only the rows' names 'rownames')"),
        (["id", "target"], "id", "(beside it only the key 'id')"),
        (["target"], None, "from"),
    ],
)
def test_a_table_with_nothing_to_learn_from_beside_the_label_is_refused_before_it_is_read(tmp_path, columns, key, said):
    frame = wine()
    frame["id"] = [f"w{i}" for i in range(len(frame))]
    frame.insert(0, "rownames", range(1, len(frame) + 1))
    frame[columns].to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ValueError, match="data.source.path: the table has no column to learn 'target' from") as error:
        csv_source.inspect_source(source_path=str(tmp_path / "t.csv"), label="target", key=key)
    assert str(error.value).endswith(said)


# Row numbers under a name of their own: the first column counting the rows from 0 or 1 in the file's order. Kaggle's
# Iris.csv is scikit-learn's iris with `Id` 1..150 first, sorted by species: a feature of it learns the file's order.
def kaggle_iris(path):
    frame = load_iris(as_frame=True).frame
    frame.insert(0, "Id", range(1, len(frame) + 1))
    frame.to_csv(path, index=False)


def r_read_csv_export(path):
    frame = load_iris(as_frame=True).frame
    frame.index = frame.index + 1
    frame.to_csv(path)  # R's write.csv ...
    frame = pd.read_csv(path).rename(columns={"Unnamed: 0": "X"})  # ... read back by R's read.csv: `X`
    frame.to_csv(path, index=False)


def pandas_reset_index_to_parquet(path):
    load_iris(as_frame=True).frame.sample(frac=1.0, random_state=0).reset_index(drop=True).reset_index().to_parquet(
        path, index=False
    )  # `index` 0..149 after a shuffle: the rows' new numbers


@pytest.mark.parametrize(
    ("write", "fmt", "column"),
    [(kaggle_iris, "csv", "Id"), (r_read_csv_export, "csv", "X"), (pandas_reset_index_to_parquet, "parquet", "index")],
)
def test_a_first_column_that_numbers_the_rows_is_the_key(tmp_path, write, fmt, column, caplog):
    caplog.set_level(logging.INFO)
    path = tmp_path / f"iris.{fmt}"
    write(path)
    summary, proto = ingested(tmp_path, path, fmt)
    assert summary["read"] == 150 and summary["invalid"] == 0
    assert annotation_tags(proto, column)["role"] == "key"
    assert column not in TabularTask(proto).types and len(TabularTask(proto).types) == 4
    assert f"{column!r} numbers the rows" in caplog.text


@pytest.mark.parametrize(
    "first",
    [
        lambda n: range(1973, 1973 + n),  # years: counted, from no row number
        lambda n: np.random.default_rng(0).permutation(n) + 1,  # ids, shuffled
        lambda n: [i + 1 if i != 7 else 99 for i in range(n)],  # all but one
    ],
    ids=["years", "shuffled", "a gap"],
)
def test_a_first_column_of_other_whole_numbers_is_a_feature(tmp_path, first):
    frame = load_iris(as_frame=True).frame
    frame.insert(0, "n", list(first(len(frame))))
    frame.to_csv(tmp_path / "iris.csv", index=False)
    facts = csv_source.inspect_source(source_path=str(tmp_path / "iris.csv"), label="target")
    assert facts.numbered is None


def test_a_table_of_its_row_numbers_and_the_label_is_refused(tmp_path):
    frame = load_iris(as_frame=True).frame
    frame.insert(0, "Id", range(1, len(frame) + 1))
    frame[["Id", "target"]].to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ValueError, match="no column to learn 'target' from \\(beside it only the rows' names 'Id'\\)"):
        csv_source.inspect_source(source_path=str(tmp_path / "t.csv"), label="target")


def test_a_short_count_or_the_label_first_says_nothing():
    assert not numbers_rows([str(i) for i in range(1, ROW_NUMBERS_MIN_ROWS)])
    assert numbers_rows([str(i) for i in range(ROW_NUMBERS_MIN_ROWS)])
    assert numbers_rows([f" {i}" for i in range(1, ROW_NUMBERS_MIN_ROWS + 1)])
