"""Files joined together (`cat page-*.csv > all.csv`, a report exported a page at a time) hold one header a file: a
record repeating the header's names is left out and counted (`repeated_header`, filtered), not data. Before, on
scikit-learn's real breast cancer measurements exported in 20 pages, the 19 headers inside made every number column
text (3 % of the sampled values were names), and each header a record of a class `target`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from kflow.components.datasets.csv.ingest import source as csv_source
from tests.components.datasets.csv.ingest.test_executor import ingest, read_records

PAGES = 20


@pytest.fixture(scope="module")
def cancer():
    frame = load_breast_cancer(as_frame=True).frame.iloc[:, [0, 1, 2, 3, -1]]
    frame["target"] = frame["target"].map({0: "malignant", 1: "benign"})
    return frame


def joined(tmp_path, frame, bom: bool = False) -> tuple:
    pages = np.array_split(np.arange(len(frame)), PAGES)
    path = tmp_path / "all.csv"
    mark = "\ufeff" if bom else ""  # Excel's "CSV UTF-8" starts each page with a byte-order mark
    path.write_text("".join(mark + frame.iloc[rows].to_csv(index=False) for rows in pages), encoding="utf-8")
    return path, pages


@pytest.mark.parametrize("bom", [False, True])
def test_pages_joined_together_read_as_one_table(tmp_path, cancer, bom):
    path, pages = joined(tmp_path, cancer, bom)
    facts = csv_source.inspect_source(source_path=str(path), label="target")
    assert set(facts.types.values()) == {"float", "string"} and facts.types["mean radius"] == "float"
    assert any("repeat the header (files joined together)" in line for line in facts.dialect)

    summary, examples, _, rejects = ingest(
        tmp_path, source_path=str(path), label="target", columns={}, max_invalid_fraction=0.0
    )
    assert (summary["read"], summary["invalid"], summary["filtered"]) == (len(cancer) + PAGES - 1, 0, PAGES - 1)
    assert sum(len(rows) for rows in read_records(examples).values()) == len(cancer)
    entries = [json.loads(line) for line in rejects.file.read_text().splitlines()]
    first_lines = np.cumsum([1 + len(rows) for rows in pages])[:-1] + 1  # each page's header, after the first
    assert [entry["position"] for entry in entries] == [f"all.csv:{line}" for line in first_lines]
    assert {entry["reason"] for entry in entries} == {"repeated_header"}


def test_a_table_of_text_alone_does_not_learn_its_header_as_a_class(tmp_path, cancer):
    """Every column text: a repeated header parses as a record like any other; it is no class `target`."""
    text = cancer.assign(
        **{name: cancer[name].round(0).map(lambda value: f"size {value:.0f}") for name in cancer.columns[:4]}
    )
    path, _ = joined(tmp_path, text)
    summary, examples, _, _ = ingest(tmp_path, source_path=str(path), label="target", columns={})
    assert summary["filtered"] == PAGES - 1
    labels = {record["target"] for rows in read_records(examples).values() for record in rows}
    assert labels == {"malignant", "benign"}


def test_a_value_equal_to_its_columns_name_is_data(tmp_path, cancer):
    """Only a record holding every name is a header: a label `target` beside numbers is a record of the class."""
    path = tmp_path / "one.csv"
    cancer.to_csv(path, index=False)
    with open(path, "a") as file:
        file.write("14.1,20.3,91.9,654.8,target\n")
    summary, examples, _, _ = ingest(tmp_path, source_path=str(path), label="target", columns={})
    assert (summary["filtered"], summary["invalid"]) == (0, 0)
    labels = {record["target"] for rows in read_records(examples).values() for record in rows}
    assert "target" in labels
