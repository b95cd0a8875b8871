"""Notes below a table, as statistics offices and data portals end their CSV exports (a source, a note, a date of
retrieval): the lines after the last record that hold fewer fields than the header are left out and counted
(`footnote`, filtered), said by `kflow validate`. Before, they were invalid records (wrong_field_count): iris with a
source and a note below it failed `kflow run` of table.yaml, 2 of 152 records invalid, more than the 1 % allowed."""

from __future__ import annotations

import gzip
import json

import pytest
from sklearn.datasets import load_diabetes

from kflow.components.datasets.csv.ingest import source as csv_source
from tests.components.datasets.csv.ingest.test_executor import ingest, read_records

NOTES = (
    "\n"
    '"Source: Efron, Hastie, Johnstone and Tibshirani (2004), Least Angle Regression, Annals of Statistics."\n'
    "Note: age in years, bmi in kg/m2, bp the average blood pressure\n"
    "Data retrieved 2024-01-05\n"
)


@pytest.fixture(scope="module")
def diabetes():
    return load_diabetes(as_frame=True, scaled=False).frame


@pytest.mark.parametrize("compressed", [False, True])
def test_notes_below_a_table_are_left_out_and_counted(tmp_path, diabetes, compressed):
    text = "Diabetes progression, one year after baseline\n\n" + diabetes.to_csv(index=False) + NOTES
    path = tmp_path / ("diabetes.csv.gz" if compressed else "diabetes.csv")
    path.write_bytes(gzip.compress(text.encode()) if compressed else text.encode())
    facts = csv_source.inspect_source(source_path=str(path), label="target")
    assert facts.problem_type == "regression" and facts.types["bmi"] == "float"
    assert f"{path.name} ends in 3 line(s) of notes below the table (a source, a note): left out" in facts.dialect

    summary, examples, _, rejects = ingest(
        tmp_path, source_path=str(path), label="target", columns={}, max_invalid_fraction=0.0
    )
    assert (summary["read"], summary["invalid"], summary["filtered"]) == (len(diabetes) + 3, 0, 3)
    assert sum(len(rows) for rows in read_records(examples).values()) == len(diabetes)
    entries = [json.loads(line) for line in rejects.file.read_text().splitlines()]
    last = 3 + len(diabetes)  # the title, a blank line, the header, then the records
    assert [(entry["reason"], entry["position"]) for entry in entries] == [
        ("footnote", f"{path.name}:{last + 2}"),
        ("footnote", f"{path.name}:{last + 3}"),
        ("footnote", f"{path.name}:{last + 4}"),
    ]
    assert entries[2]["record"] == "Data retrieved 2024-01-05"


def test_notes_below_do_not_hide_a_column_counting_the_rows(tmp_path, diabetes):
    """`Id` 1, 2, 3, … (a row number, not a feature) is still told so with a source below the table."""
    path = tmp_path / "numbered.csv"
    numbered = diabetes.copy()
    numbered.insert(0, "Id", range(1, len(diabetes) + 1))
    path.write_text(numbered.to_csv(index=False) + NOTES)
    facts = csv_source.inspect_source(source_path=str(path), label="target")
    assert facts.numbered == "Id"


def test_a_short_record_inside_the_table_is_still_invalid(tmp_path, diabetes):
    """Only the end of a file is notes: a record cut short among the others is wrong_field_count, as before."""
    lines = diabetes.to_csv(index=False).splitlines()
    lines.insert(100, "59,2,32.1")
    path = tmp_path / "cut.csv"
    path.write_text("\n".join(lines) + "\n")
    summary, _, _, rejects = ingest(tmp_path, source_path=str(path), label="target", columns={})
    assert (summary["invalid"], summary["filtered"]) == (1, 0)
    assert json.loads(rejects.file.read_text())["reason"] == "wrong_field_count"


def test_a_record_cut_short_at_the_end_is_no_note(tmp_path, diabetes):
    """A last record that starts as the others do (a number) and lacks fields is a record cut short (a download
    stopped): wrong_field_count, whatever notes follow it."""
    text = diabetes.to_csv(index=False) + "59,2,32.1\nSource: Efron et al. (2004)\n"
    path = tmp_path / "cut.csv"
    path.write_text(text)
    summary, _, _, rejects = ingest(tmp_path, source_path=str(path), label="target", columns={})
    assert (summary["invalid"], summary["filtered"]) == (1, 1)
    reasons = [json.loads(line)["reason"] for line in rejects.file.read_text().splitlines()]
    assert reasons == ["wrong_field_count", "footnote"]
