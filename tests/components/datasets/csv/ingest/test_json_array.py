"""A JSON array of objects read as a table by the csv dataset: real tables as pandas writes them without lines=True
(`to_json(orient="records")`, on one line or indented: scikit-learn's bundled iris and wine), then what exports hold
beside them (elements that are no object, several arrays one after another, an array that breaks), each kept,
rejected with its reason and place, or refused in one line; and the reader's elements against `json` itself on
generated arrays."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_iris, load_wine

from kflow.components.datasets.csv.ingest import source as csv_source
from kflow.components.datasets.csv.ingest.json_array import BrokenArray
from kflow.components.datasets.csv.ingest.readable import open_records
from kflow.components.datasets.parquet.ingest import source as parquet_source
from tests.components.datasets.csv.ingest.test_executor import ingest, read_records
from tests.components.datasets.csv.ingest.test_json_lines import records_by_split


@pytest.fixture(scope="module")
def iris():
    frame = load_iris(as_frame=True).frame
    frame["target"] = frame["target"].map(dict(enumerate(load_iris().target_names)))
    return frame


@pytest.mark.parametrize("layout", ["one line", "indented", "gzip"])
def test_a_json_array_of_a_table_is_read_as_its_json_lines_copy_is(tmp_path, iris, layout):
    """Every record, the same types, each record in the same split as the JSON Lines copy's, and validate says how
    the file is read: a table exported as a JSON array trains on the same rows as its JSON Lines export."""
    array = tmp_path / ("iris.json.gz" if layout == "gzip" else "iris.json")
    iris.to_json(array, orient="records", indent=2 if layout == "indented" else None, compression="infer")
    lines = tmp_path / "lines" / "iris.jsonl"
    lines.parent.mkdir()
    iris.to_json(lines, orient="records", lines=True)

    facts = csv_source.inspect_source(source_path=str(array), label="target")
    assert facts.header == list(iris) and facts.sampled == len(iris) and facts.problem_type == "classification"
    assert facts.dialect[0] == "a JSON array of objects, an element a record: its 5 keys are the columns"
    summary, examples, _, rejects = ingest(tmp_path / "array", source_path=str(array), label="target", columns={})
    assert (summary["read"], summary["rejected"]) == (150, 0) and not rejects.file.read_text()
    _, from_lines, _, _ = ingest(tmp_path / "from-lines", source_path=str(lines), label="target", columns={})
    assert records_by_split(examples) == records_by_split(from_lines)


def test_elements_that_are_no_objects_are_rejected_with_their_place_in_the_array(tmp_path):
    """The wine measurements (178 real samples) as one array, with a number, a list and an unlabelled object among
    them: each element is a record, FILE:N its place in the array, and the counts balance."""
    frame = load_wine(as_frame=True).frame
    rows: list = frame.to_dict(orient="records")
    rows[10:10] = [7, [1, 2, 3]]
    rows.append({"alcohol": 13.0, "target": None})
    path = tmp_path / "wine.json"
    path.write_text(json.dumps(rows, indent=1))
    summary, examples, _, rejects = ingest(tmp_path, source_path=str(path), label="target", columns={})
    assert (summary["read"], summary["invalid"], summary["filtered"]) == (181, 2, 1)
    records = [record for split in read_records(examples).values() for record in split]
    assert sorted(record["proline"] for record in records) == sorted(frame["proline"])
    entries = [json.loads(line) for line in rejects.file.read_text().splitlines()]
    assert [(entry["reason"], entry["position"], json.loads(entry["record"])) for entry in entries[:2]] == [
        ("bad_json", "wine.json:11", 7),
        ("bad_json", "wine.json:12", [1, 2, 3]),  # its text as written, the indented lines one
    ]
    assert (entries[2]["reason"], entries[2]["position"]) == ("missing_label", "wine.json:181")


def test_a_folder_of_pages_and_arrays_one_after_another_are_one_table(tmp_path, iris):
    """An export in pages (a folder of .json files, no CSV or JSON Lines beside them), and a streaming writer's
    arrays one after another in one file: every record, once."""
    folder = tmp_path / "pages"
    folder.mkdir()
    for page, start in enumerate(range(0, 150, 50)):
        iris[start : start + 50].to_json(folder / f"page-{page:03d}.json", orient="records")
    assert csv_source.inspect_source(source_path=str(folder), label="target").header == list(iris)
    joined = tmp_path / "joined.json"
    joined.write_text("\n".join(iris[start : start + 50].to_json(orient="records") for start in (0, 50, 100)))
    for source in (folder, joined):
        out = tmp_path / f"out-{source.stem}"
        summary, examples, _, _ = ingest(out, source_path=str(source), label="target", columns={})
        assert (summary["read"], summary["rejected"]) == (150, 0)
        values = sorted(record["sepal length (cm)"] for rows in read_records(examples).values() for record in rows)
        assert values == pytest.approx(sorted(iris["sepal length (cm)"]))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[{"a": 1, "b": "x"}, {"a": 2, "b": "y"} {"a": 3}]', r"breaks at its element 3 \(line 1\): no ',' or ']'"),
        ('[{"a": 1, "b": "x"},\n{"a": 2, "b": "y"},\n{"a": ', r"breaks at its element 3 \(line 3\): Expecting value"),
        ('[{"a": 1, "b": "x"},\n {"a": 2, "b": "y"},\n]', r"breaks at its element 3 \(line 3\): a ',' before the"),
        ('[{"a": 1, "b": "x"}]\n{"a": 2}', r"breaks at its element 2 \(line 2\): text after the array's end"),
    ],
)
def test_an_array_that_breaks_is_refused_in_one_line_naming_where(tmp_path, text, said):
    path = tmp_path / "broken.json"
    path.write_text(text)
    pattern = rf"^data.source.path: broken.json is a JSON array that {said}.*; nothing after it can be read$"
    with pytest.raises(BrokenArray, match=pattern):
        csv_source.inspect_source(source_path=str(path), label="b", infer_rows=10)
    with pytest.raises(BrokenArray, match=pattern):
        ingest(tmp_path, source_path=str(path), label="b", columns={})


def test_other_configs_given_a_json_array_say_what_reads_it(tmp_path, iris):
    path = tmp_path / "iris.json"
    iris.to_json(path, orient="records")
    with pytest.raises(ValueError, match=r"is a JSON array of objects, not CSV: set data.source.format: jsonl"):
        csv_source.inspect_source(source_path=str(path), label="target", source_format="csv")
    with pytest.raises(ValueError, match=r"is a JSON array of objects, not Parquet: set data.dataset: csv"):
        parquet_source.inspect_source(source_path=str(path), label="target")
    values = tmp_path / "values.json"
    iris.to_json(values, orient="values")  # rows as lists: no column names
    with pytest.raises(ValueError, match=r"is a JSON array of rows that are no objects, not CSV: write each row as an"):
        csv_source.inspect_source(source_path=str(values), label="target")


_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
_values = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3)
)


@settings(max_examples=60, deadline=None)
@given(
    first=st.dictionaries(st.text(), _values, max_size=4),  # an array of objects opens with one
    rest=st.lists(_values, max_size=30),
    indent=st.sampled_from([None, 0, 2, "\t"]),
    ascii_only=st.booleans(),
    page=st.integers(min_value=1, max_value=4),
)
def test_each_element_is_one_line_that_json_reads_back_to_it(tmp_path_factory, first, rest, indent, ascii_only, page):
    """Whatever the elements after the first object (strings with newlines, quotes and any character; nested arrays
    and objects), however indented, in arrays one after another, read in reads of `page` bytes: each element is one
    line, the same value."""
    elements = [first, *rest]
    pages = [elements[start : start + 7] for start in range(0, len(elements), 7)]
    path = tmp_path_factory.mktemp("array") / "generated.json.gz"
    text = "\n".join(json.dumps(part, indent=indent, ensure_ascii=ascii_only) for part in pages)
    path.write_bytes(gzip.compress(text.encode("utf-8", "surrogatepass")))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("kflow.components.datasets.csv.ingest.json_array.READ", page)
        with open_records(str(path)) as stream:
            lines = stream.read().splitlines()
    assert [json.loads(line) for line in lines] == elements


def test_elements_json_reads_only_with_trouble_are_one_record_each_not_the_whole_file(tmp_path, iris):
    """A number of 5,000 digits (valid JSON past Python's int conversion limit) and a raw tab inside a string (which
    JSON does not allow) are each one record, rejected as a line of JSON Lines is; an element nested past Python's
    recursion limit stops the array in one line; an empty last page is a page."""
    rows = iris.to_dict(orient="records")
    text = json.dumps(rows[:2])[:-1] + ', {"target": "setosa", "sepal length (cm)": ' + "7" * 5000 + "}"
    text += ', {"target": "set\tosa", "sepal length (cm)": 5.0}, ' + json.dumps(rows[2:])[1:]
    path = tmp_path / "odd.json"
    path.write_text(text)
    summary, _, _, rejects = ingest(tmp_path / "odd", source_path=str(path), label="target", columns={})
    entries = [json.loads(line) for line in rejects.file.read_text().splitlines()]
    assert (summary["read"], summary["rejected"]) == (152, 2)
    assert [(entry["reason"], entry["position"]) for entry in entries] == [
        ("bad_json", "odd.json:3"),
        ("bad_json", "odd.json:4"),
    ]
    deep = tmp_path / "deep.json"
    deep.write_text('[{"a": 1}, ' + "[" * 100_000 + "]" * 100_000 + "]")
    with pytest.raises(BrokenArray, match=r"breaks at its element 2 \(line 1\): an element nested too deep"):
        csv_source.inspect_source(source_path=str(deep), label="a", infer_rows=10)
    pages = tmp_path / "pages"
    pages.mkdir()
    iris.to_json(pages / "page-1.json", orient="records")
    (pages / "page-2.json").write_text("[]\n")  # the last page of a paged export
    summary, _, _, _ = ingest(tmp_path / "paged", source_path=str(pages), label="target", columns={})
    assert (summary["read"], summary["rejected"]) == (150, 0)
