"""JSON Lines read as a table by the csv dataset: real tables as pandas writes them (`to_json(orient="records",
lines=True)`: scikit-learn's bundled iris and diabetes), then the lines people's exports hold beside them (keys that
show up late, nested values, nulls, booleans, lines that are no object), each kept or rejected with its reason."""

from __future__ import annotations

import gzip
import json

import pytest
from sklearn.datasets import load_diabetes, load_iris

from kflow.components.datasets.csv.ingest import source as csv_source
from kflow.components.datasets.csv.ingest.json_lines import as_text
from tests.components.datasets.csv.ingest.test_executor import ingest, read_records


@pytest.fixture(scope="module")
def iris():
    frame = load_iris(as_frame=True).frame
    frame["target"] = frame["target"].map(dict(enumerate(load_iris().target_names)))
    return frame


def records_by_split(examples) -> dict[str, list[tuple]]:
    return {split: sorted(tuple(sorted(row.items())) for row in rows) for split, rows in read_records(examples).items()}


@pytest.mark.parametrize("suffix", ["jsonl", "ndjson.gz", "json"])
def test_a_json_lines_copy_of_a_table_is_read_as_its_csv_is(tmp_path, iris, suffix):
    """Every record, the same types, and each record in the same split as in the CSV copy (the split hashes the
    record's values as a CSV holds them): a table moved from CSV to JSON Lines trains on the same rows."""
    lines = tmp_path / f"iris.{suffix}"
    iris.to_json(lines, orient="records", lines=True, compression="gzip" if suffix.endswith(".gz") else None)
    csv_copy = tmp_path / "csv" / "iris.csv"
    csv_copy.parent.mkdir()
    iris.to_csv(csv_copy, index=False)

    facts = csv_source.inspect_source(source_path=str(lines), label="target")
    assert facts.header == list(iris) and facts.sampled == len(iris) and facts.problem_type == "classification"
    assert facts.dialect[0] == "JSON Lines, an object a line: its 5 keys are the columns"  # kflow validate says it
    assert facts.types == dict.fromkeys(iris.columns[:4], "float") | {"target": "string"}
    summary, examples, _, rejects = ingest(tmp_path / "json", source_path=str(lines), label="target", columns={})
    assert (summary["read"], summary["rejected"]) == (150, 0) and not rejects.file.read_text()
    _, from_csv, _, _ = ingest(tmp_path / "from-csv", source_path=str(csv_copy), label="target", columns={})
    assert records_by_split(examples) == records_by_split(from_csv)


def test_keys_that_show_up_late_nested_values_nulls_and_booleans_are_columns(tmp_path):
    """The diabetes measurements (442 real patients) as JSON Lines, with what exports add further down: a key no
    earlier line has (a column, not dropped), an object (its fields columns, `clinic.site`, as pandas' json_normalize
    names them: a number in it stays a number), a list (its JSON text), nulls and absent keys (missing), booleans (a
    bool column)."""
    frame = load_diabetes(as_frame=True, scaled=False).frame
    rows = frame.to_dict(orient="records")
    for index, row in enumerate(rows):
        row["smoker"] = index % 3 == 0
        if index % 7 == 0:
            row["bmi"] = None
        if index % 11 == 5:
            del row["bp"]
        if index >= 300:
            row["clinic"] = {"site": "north" if index % 2 else "south", "staff": {"nurses": index % 5}}
            row["drugs"] = ["metformin"] if index % 4 else []
    path = tmp_path / "diabetes.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))

    facts = csv_source.inspect_source(source_path=str(path), label="target", infer_rows=100)
    assert facts.problem_type == "regression" and facts.types["smoker"] == "bool"
    assert "clinic.site" not in facts.header  # validate reads the sampled keys; all for a named column
    declared = csv_source.inspect_source(
        source_path=str(path), label="target", infer_rows=100, columns={"drugs": "string"}
    )
    assert declared.header[-4:] == ["smoker", "clinic.site", "clinic.staff.nurses", "drugs"]
    summary, examples, _, _ = ingest(tmp_path, source_path=str(path), label="target", columns={})
    assert (summary["read"], summary["rejected"]) == (442, 0)
    records = [record for split in read_records(examples).values() for record in split]
    assert len(records) == 442
    assert sum("bmi" not in record for record in records) == len(rows[::7])  # null: missing
    assert sum("bp" not in record for record in records) == len(rows[5::11])  # an absent key: missing
    assert {record["clinic.site"] for record in records if "clinic.site" in record} == {"north", "south"}
    assert sum(record.get("clinic.staff.nurses", 0) for record in records) == sum(i % 5 for i in range(300, 442))
    assert {record.get("drugs") for record in records} == {None, "[]", '["metformin"]'}
    assert sum(record["smoker"] for record in records) == len(rows[::3])
    assert sorted(record["target"] for record in records) == sorted(frame["target"])


def test_a_line_that_is_no_json_object_is_rejected_with_its_reason_and_position(tmp_path, iris):
    path = tmp_path / "iris.jsonl"
    iris.to_json(path, orient="records", lines=True)
    with open(path, "a") as file:
        file.write('{"target": "setosa", "sepal length (cm)": 5.0,\n')  # cut short
        file.write("\n")  # a blank line: no record
        file.write("[5.1, 3.5, 1.4, 0.2]\n")
        file.write('{"petal width (cm)": 0.3, "target": null}\n')  # unlabelled: left out and counted
    summary, examples, _, rejects = ingest(tmp_path, source_path=str(path), label="target", columns={})
    assert (summary["read"], summary["invalid"], summary["filtered"]) == (153, 2, 1)
    assert sum(len(rows) for rows in read_records(examples).values()) == 150
    entries = [json.loads(line) for line in rejects.file.read_text().splitlines()]
    assert [(entry["reason"], entry["position"]) for entry in entries] == [
        ("bad_json", "iris.jsonl:151"),
        ("bad_json", "iris.jsonl:153"),
        ("missing_label", "iris.jsonl:154"),
    ]
    assert entries[0]["error"].startswith("not JSON: ") and entries[1]["error"] == "a JSON array, not an object"
    assert entries[1]["record"] == "[5.1, 3.5, 1.4, 0.2]"


def test_what_cannot_be_read_as_json_lines_is_one_line_naming_the_field(tmp_path, iris):
    folder = tmp_path / "mixed"
    folder.mkdir()
    iris.to_json(folder / "a.jsonl", orient="records", lines=True)
    iris.to_csv(folder / "b.csv", index=False)
    # A folder's CSVs are its data, a .jsonl beside them (a dataset's metadata) is not; a pattern naming both is mixed.
    assert csv_source.inspect_source(source_path=str(folder), label="target").header == list(iris)
    with pytest.raises(ValueError, match=r"^data.source.path: a.jsonl is JSON Lines and b.csv is not: point it at"):
        csv_source.inspect_source(source_path=str(folder / "*"), label="target")
    lines_only = tmp_path / "lines"
    lines_only.mkdir()
    (lines_only / "a.jsonl").write_bytes((folder / "a.jsonl").read_bytes())
    assert csv_source.inspect_source(source_path=str(lines_only), label="target").sampled == len(iris)
    with pytest.raises(ValueError, match=r"^data.csv.delimiter: the files are JSON Lines, whose keys name the columns"):
        csv_source.inspect_source(source_path=str(folder / "a.jsonl"), label="target", csv_format={"delimiter": ";"})
    numbers = tmp_path / "numbers.jsonl"
    numbers.write_text('{"a": 1,\n[1, 2]\n')  # a line cut short, an array
    with pytest.raises(ValueError, match=r"^data.source.path: numbers.jsonl: no line holds a JSON object"):
        csv_source.inspect_source(source_path=str(numbers), label="target")
    with pytest.raises(ValueError, match=r"^data.label: 'targt' is not a column of the data; did you mean target\?"):
        csv_source.inspect_source(source_path=str(folder / "a.jsonl"), label="targt")


def test_one_record_is_a_record_whatever_it_holds(tmp_path, iris):
    """A file of one line (new data to score) with a list or an object in it is read, not taken for a document."""
    path = tmp_path / "one.jsonl"
    path.write_text('{"sepal length (cm)": 5.1, "tags": ["a"], "site": {"name": "kew"}, "target": "setosa"}\n')
    facts = csv_source.inspect_source(source_path=str(path), label="target")
    assert facts.header == ["sepal length (cm)", "tags", "site.name", "target"]


def test_half_a_character_is_a_bad_line_not_a_crash(tmp_path, iris):
    """An emoji cut in half by a scraper (`\\ud83d` alone) is no text UTF-8 can write: the line is rejected."""
    path = tmp_path / "iris.jsonl"
    iris.to_json(path, orient="records", lines=True)
    with open(path, "a") as file:
        file.write('{"sepal length (cm)": 5.0, "target": "setosa \\ud83d"}\n')
    summary, _, _, rejects = ingest(tmp_path, source_path=str(path), label="target", columns={})
    assert (summary["read"], summary["invalid"]) == (151, 1)
    entry = json.loads(rejects.file.read_text())
    assert entry["reason"] == "bad_json" and "half of a character" in entry["error"]


def test_a_csv_given_as_csv_and_json_lines_given_as_csv_say_which_they_are(tmp_path, iris):
    path = tmp_path / "iris.jsonl"
    iris.to_json(path, orient="records", lines=True)
    with pytest.raises(ValueError, match=r"is JSON Lines \(a JSON object a line\), not CSV: set data.source.format"):
        csv_source.inspect_source(source_path=str(path), label="target", source_format="csv")
    gzipped = tmp_path / "iris.jsonl.gz"
    gzipped.write_bytes(gzip.compress(path.read_bytes()))
    facts = csv_source.inspect_source(source_path=str(gzipped), label="target", source_format="jsonl")
    assert facts.header == list(iris)


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, ""), (True, "true"), (3, "3"), (0.1, "0.1"), (1e-07, "1e-07"), ("a b", "a b"), ([1, "x"], '[1, "x"]')],
)
def test_a_json_value_is_the_text_a_csv_holds_for_it(value, text):
    assert as_text(value) == text


def test_json_lines_saved_on_windows_are_read_as_a_csv_saved_so(tmp_path, iris):
    """Not UTF-8 but cp1252 (a Windows tool's export, `force_ascii=False`): read so, as a CSV is, every accent kept;
    data.csv.encoding says it outright."""
    frame = iris.assign(origin=["Gaspé", "Québec"] * 75)
    text = frame.to_json(orient="records", lines=True, force_ascii=False)
    path = tmp_path / "iris.jsonl"
    path.write_bytes(text.encode("cp1252"))
    summary, examples, _, _ = ingest(tmp_path / "auto", source_path=str(path), label="target", columns={})
    assert (summary["read"], summary["rejected"]) == (150, 0)
    origins = {record["origin"] for split in read_records(examples).values() for record in split}
    assert origins == {"Gaspé", "Québec"}
    facts = csv_source.inspect_source(source_path=str(path), label="target", csv_format={"encoding": "cp1252"})
    assert facts.header == list(frame)


@pytest.mark.parametrize("orient", ["columns", "index", "split", "table", "indented"])
def test_a_table_written_as_one_json_document_says_how_to_write_json_lines(tmp_path, iris, orient):
    """pandas' to_json without lines=True writes the whole table as one object (its default, orient="columns": a
    column a key) or, indented, over many lines: one line naming what it is and the call that writes JSON Lines,
    not a table of one record of 750 columns."""
    path = tmp_path / "iris.jsonl"
    if orient == "indented":
        iris.to_json(path, orient="index", indent=1)
    else:
        iris.to_json(path, orient=orient)
    with pytest.raises(ValueError, match=r"not JSON Lines \(an object a line\): write the table with pandas' to_json"):
        csv_source.inspect_source(source_path=str(path), label="target")
