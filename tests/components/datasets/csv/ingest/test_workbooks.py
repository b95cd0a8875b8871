"""Excel workbooks read as tables by the csv dataset: real tables as pandas writes them (`to_excel`, openpyxl's
writer: scikit-learn's bundled iris and wine), then what spreadsheets people make hold beside them (a title above the
header, blank rows, Excel's errors, formulas, dates, booleans, more than one sheet, a cell past the table), each
kept, rejected with its reason and row, or refused in one line."""

from __future__ import annotations

import datetime
import json
import re
import zipfile

import openpyxl
import pandas as pd
import pytest
from openpyxl.chart import BarChart, Reference
from sklearn.datasets import load_iris, load_wine

from kflow.components.datasets.csv.ingest import source as csv_source
from kflow.components.datasets.csv.ingest.readable import open_records
from kflow.components.datasets.csv.ingest.workbook import cell_text
from kflow.components.datasets.parquet.ingest import source as parquet_source
from tests.components.datasets.csv.ingest.test_executor import ingest, read_records
from tests.components.datasets.csv.ingest.test_json_lines import records_by_split


@pytest.fixture(scope="module")
def iris():
    frame = load_iris(as_frame=True).frame
    frame["target"] = frame["target"].map(dict(enumerate(load_iris().target_names)))
    return frame


def test_a_workbook_of_a_table_is_read_as_its_csv_copy_is(tmp_path, iris):
    """Every record and the same types as the CSV copy's: a table saved from a spreadsheet trains on the rows of its
    CSV export; validate says which sheet it read. (Not each in the same split: a whole number in a float column is
    `5` in a sheet and `5.0` in pandas' CSV, and the split hashes a record's text.)"""
    book = tmp_path / "iris.xlsx"
    iris.to_excel(book, sheet_name="measurements", index=False)
    csv_copy = tmp_path / "csv" / "iris.csv"
    csv_copy.parent.mkdir()
    iris.to_csv(csv_copy, index=False)

    facts = csv_source.inspect_source(source_path=str(book), label="target")
    assert facts.header == list(iris) and facts.sampled == len(iris) and facts.problem_type == "classification"
    assert facts.dialect[0] == "an Excel workbook: its sheet 'measurements', a row a record"
    assert facts.types == dict.fromkeys(iris.columns[:4], "float") | {"target": "string"}
    summary, examples, _, rejects = ingest(tmp_path / "book", source_path=str(book), label="target", columns={})
    assert (summary["read"], summary["rejected"]) == (150, 0) and not rejects.file.read_text()
    _, from_csv, _, _ = ingest(tmp_path / "from-csv", source_path=str(csv_copy), label="target", columns={})
    assert every_record(examples) == every_record(from_csv)


def test_a_cover_sheet_before_the_table_is_passed_over_for_the_sheet_naming_the_label(tmp_path, iris):
    """pandas' ExcelWriter with an "Info" sheet first (a helper's trial): the label was "not a column of the data
    (columns: README)". The first sheet naming the config's columns is read, by validate and by the ingest; a sheet
    set is read as set."""
    book = tmp_path / "iris.xlsx"
    with pd.ExcelWriter(book) as writer:
        pd.DataFrame({"README": ["Fisher's iris", "the table: sheet Data"]}).to_excel(
            writer, sheet_name="Info", index=False
        )
        iris.to_excel(writer, sheet_name="Data", index=False)
    facts = csv_source.inspect_source(source_path=str(book), label="target")
    assert facts.header == list(iris) and facts.sampled == len(iris)
    assert facts.dialect[0] == "an Excel workbook: its sheet 'Data' of 2 (Info, Data), a row a record"
    summary, _, _, _ = ingest(tmp_path / "book", source_path=str(book), label="target", columns={})
    assert (summary["read"], summary["rejected"]) == (150, 0)
    with pytest.raises(ValueError, match=r"data.label: 'target' is not a column of the data \(columns: README\)"):
        csv_source.inspect_source(source_path=str(book), label="target", csv_format={"sheet": "Info"})


def every_record(examples) -> list[tuple]:
    return sorted(record for rows in records_by_split(examples).values() for record in rows)


def test_a_spreadsheet_as_people_keep_one_is_read_with_each_row_accounted_for(tmp_path):
    """The wine measurements (178 real samples) on the second row of sheets below a title and a blank row, with a
    date, a boolean, a formula, Excel's #DIV/0!, a blank row in the middle, an unlabelled row and a value past the
    table's columns; a second sheet of notes. Every row a record or a counted reject at its row number."""
    frame = load_wine(as_frame=True).frame
    columns = ["alcohol", "malic_acid", "proline", "target"]
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "wine"
    sheet.append(["Wine recognition data (UCI), three cultivars"])  # row 1: a title
    sheet.append([])  # row 2: blank
    sheet.append([*columns, "tasted", "organic", "alcohol x 10", "check"])  # row 3: the header
    for index, row in enumerate(frame[columns].itertuples(index=False)):
        line = sheet.max_row + 1
        tenfold = "#DIV/0!" if index == 7 else row[0] * 10  # a computed column as Excel saves it: values, an error
        when, organic = datetime.date(2024, 1, 1 + index % 28), index % 2 == 0
        sheet.append([*row[:3], f"class_{int(row[3])}", when, organic, tenfold, f"=A{line}*10"])  # never computed
        if index == 99:
            sheet.append([])  # a blank row in the data
    sheet.append([13.0, 2.0, 900, None, datetime.date(2024, 2, 1), True])  # unlabelled
    sheet.append([13.1, 2.1, 910, "class_1", datetime.date(2024, 2, 2), False, 131, None, "a note past the table"])
    book.create_sheet("notes").append(["collected by Forina et al."])
    path = tmp_path / "wine.xlsx"
    book.save(path)

    facts = csv_source.inspect_source(source_path=str(path), label="target")
    assert facts.dialect[0] == "an Excel workbook: its sheet 'wine' of 2 (wine, notes), a row a record"
    assert facts.header == [*columns, "tasted", "organic", "alcohol x 10", "check"]
    assert facts.types["tasted"] == "string" and facts.types["organic"] == "bool"
    assert facts.types["alcohol x 10"] == "float" and facts.missing_marks == {"alcohol x 10": ("#DIV/0!",)}
    assert "check" in facts.empty  # formulas no spreadsheet computed: no value
    summary, examples, _, rejects = ingest(tmp_path, source_path=str(path), label="target", columns={})
    assert (summary["read"], summary["invalid"], summary["filtered"]) == (180, 1, 1)
    records = [record for split in read_records(examples).values() for record in split]
    assert len(records) == 178 and sorted(record["proline"] for record in records) == sorted(frame["proline"])
    assert {record["tasted"] for record in records} >= {"2024-01-01", "2024-01-28"}
    assert sum("alcohol x 10" in record for record in records) == 177  # #DIV/0!: a missing number
    assert not any("check" in record for record in records)
    entries = [json.loads(line) for line in rejects.file.read_text().splitlines()]
    blank_at = 3 + 100 + 1  # the header's row, 100 rows of wine, then the blank row: rows keep their numbers
    assert sorted((entry["reason"], entry["position"]) for entry in entries) == [
        ("missing_label", f"wine.xlsx:{blank_at + 79}"),
        ("wrong_field_count", f"wine.xlsx:{blank_at + 80}"),
    ]


def test_what_a_workbook_cannot_be_read_as_is_one_line_naming_the_field(tmp_path, iris):
    book = tmp_path / "iris.xlsx"
    iris.to_excel(book, index=False)
    with pytest.raises(ValueError, match=r"^data.csv.delimiter: the files are Excel workbooks, whose cells are typed"):
        csv_source.inspect_source(source_path=str(book), label="target", csv_format={"delimiter": ";"})
    with pytest.raises(ValueError, match=r"^data.csv.sheet: iris.xlsx has no sheet 'Sheet2' \(its sheets, from 0: "):
        csv_source.inspect_source(source_path=str(book), label="target", csv_format={"sheet": "Sheet2"})
    with pytest.raises(ValueError, match=r"^data.csv.sheet: iris.xlsx has no sheet 1 "):
        csv_source.inspect_source(source_path=str(book), label="target", csv_format={"sheet": 1})
    with pytest.raises(ValueError, match=r"^data.csv.sheet: a sheet's name, or its place from 0, got -1"):
        csv_source.inspect_source(source_path=str(book), label="target", csv_format={"sheet": -1})
    named = csv_source.inspect_source(source_path=str(book), label="target", csv_format={"missing_values": ["?"]})
    assert named.sampled == len(iris)
    iris.to_csv(tmp_path / "iris.csv", index=False)
    with pytest.raises(ValueError, match=r"^data.csv.sheet: iris.csv is no Excel workbook: a sheet is a workbook's"):
        csv_source.inspect_source(source_path=str(tmp_path / "iris.csv"), label="target", csv_format={"sheet": 0})
    with pytest.raises(ValueError, match=r"^data.source.path: iris.xlsx is an Excel workbook and iris.csv is not"):
        csv_source.inspect_source(source_path=str(tmp_path / "iris.*"), label="target")
    with pytest.raises(ValueError, match=r"is a ZIP archive \(an Excel .xlsx workbook.*set data.dataset: csv"):
        parquet_source.inspect_source(source_path=str(book), label="target")
    broken = tmp_path / "broken" / "cut.xlsx"
    broken.parent.mkdir()
    broken.write_bytes(book.read_bytes()[:-200])
    with pytest.raises(
        ValueError, match=r"^data.source.path: \S*cut.xlsx is a ZIP archive that cannot be read \(cut short"
    ):
        csv_source.inspect_source(source_path=str(broken), label="target")
    folder = tmp_path / "books"
    folder.mkdir()
    for part, start in enumerate((0, 75)):
        iris[start : start + 75].to_excel(folder / f"part-{part}.xlsx", index=False)
    summary, _, _, _ = ingest(tmp_path / "parts", source_path=str(folder), label="target", columns={})
    assert (summary["read"], summary["rejected"]) == (150, 0)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""),
        (True, "true"),
        (7, "7"),
        (0.1, "0.1"),
        (1e16, "1e+16"),
        (datetime.datetime(2024, 3, 1), "2024-03-01"),
        (datetime.datetime(2024, 3, 1, 13, 5), "2024-03-01 13:05:00"),
        (datetime.time(8, 30), "08:30:00"),
        ("#N/A", "#N/A"),
    ],
)
def test_a_cell_is_written_as_a_csv_holds_its_value(value, text):
    assert cell_text(value) == text


def test_the_sheet_streams_as_csv_lines_a_row_each(tmp_path):
    book = openpyxl.Workbook()
    for row in (["a", "b"], [1, "x,y"], [], [2, 'say "hi"\nthere']):
        book.active.append(row)
    book.save(tmp_path / "t.xlsx")
    with open_records(str(tmp_path / "t.xlsx")) as stream:
        assert stream.read().decode() == 'a,b\n1,"x,y"\n\n2,"say ""hi"" there"\n'  # a line break in a cell: a space


def test_the_sheet_named_is_the_one_read_by_name_or_place(tmp_path, iris):
    """A workbook of a notes sheet first and the table second, as reports are saved: data.csv.sheet reads the table
    by its name or its place, in validate and in the ingest."""
    path = tmp_path / "report.xlsx"
    with pd.ExcelWriter(path) as writer:
        pd.DataFrame({"about": ["iris, from scikit-learn", "measured in cm"]}).to_excel(writer, sheet_name="notes")
        iris.to_excel(writer, sheet_name="iris", index=False)
    for sheet in ("iris", 1):
        facts = csv_source.inspect_source(source_path=str(path), label="target", csv_format={"sheet": sheet})
        assert facts.dialect[0] == "an Excel workbook: its sheet 'iris' of 2 (notes, iris), a row a record"
        out = tmp_path / f"out-{sheet}"
        summary, _, _, _ = ingest(out, source_path=str(path), label="target", columns={}, csv_format={"sheet": sheet})
        assert (summary["read"], summary["rejected"]) == (150, 0)
    # No sheet set: the first naming the label (the notes do not), not the first.
    facts = csv_source.inspect_source(source_path=str(path), label="target")
    assert facts.dialect[0] == "an Excel workbook: its sheet 'iris' of 2 (notes, iris), a row a record"


def test_what_spreadsheet_programs_write_beside_a_table_is_read_as_its_rows(tmp_path, iris):
    """A chart sheet before the data (not a worksheet: not counted), a sheet named by its year (YAML reads `2020` as
    a number), a line break typed in a cell (its row keeps its number), and a size declared wrong in the sheet's XML
    (some writers do: every row is read all the same)."""
    book = openpyxl.Workbook()
    data = book.active
    data.title = "2020"
    data.append(list(iris.columns))
    for at, row in enumerate(iris.itertuples(index=False)):
        data.append([*row[:4], f"{row[4]}\nchecked" if at == 10 else row[4]])
    chart = BarChart()
    chart.add_data(Reference(data, min_col=1, min_row=1, max_row=20), titles_from_data=True)
    book.create_chartsheet("chart", 0).add_chart(chart)
    path = tmp_path / "chart.xlsx"
    book.save(path)
    for sheet in (None, 2020, "2020", 0):
        facts = csv_source.inspect_source(source_path=str(path), label="target", csv_format={"sheet": sheet})
        assert facts.dialect[0] == "an Excel workbook: its sheet '2020', a row a record", sheet
    with open_records(str(path)) as stream:
        lines = stream.read().decode().splitlines()
    assert len(lines) == 151 and lines[11].endswith(",setosa checked")  # row 12 of the sheet, on line 12

    declared_wrong = tmp_path / "wrong.xlsx"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(declared_wrong, "w") as target:
        for item in source.infolist():
            content = source.read(item.filename)
            if item.filename.startswith("xl/worksheets/sheet"):
                content = re.sub(rb'<dimension ref="[^"]*"', b'<dimension ref="A1"', content)
            target.writestr(item, content)
    summary, _, _, _ = ingest(tmp_path / "wrong", source_path=str(declared_wrong), label="target", columns={})
    assert (summary["read"], summary["rejected"]) == (150, 0)


def test_a_workbook_whose_parts_do_not_parse_is_refused_in_one_line(tmp_path):
    path = tmp_path / "garbage.xlsx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/workbook.xml", "garbage")
    with pytest.raises(ValueError, match=r"^data.source.path: garbage.xlsx is a workbook openpyxl cannot read: "):
        csv_source.inspect_source(source_path=str(path), label="target")


def test_a_config_sets_the_sheet_and_a_json_lines_files_missing_values(tmp_path, iris, capsys):
    """Through a config, which passes every data.csv field with its defaults (delimiter ',', quotechar '"'): the
    sheet of a workbook and the missing values of JSON Lines are taken, a delimiter that is no default refused."""
    import yaml

    from kflow.pipeline.cli.main import main

    with pd.ExcelWriter(tmp_path / "book.xlsx") as book:
        pd.DataFrame({"about": ["iris"]}).to_excel(book, sheet_name="About", index=False)
        iris.to_excel(book, sheet_name="Data", index=False)
    iris.replace({"setosa": "-"}).to_json(tmp_path / "iris.jsonl", orient="records", lines=True)

    def validate(path, csv, **data):
        config = {"name": "c", "data": {"dataset": "csv", "source": {"path": str(path)}, "label": "target",
                                        "csv": csv, **data}}  # fmt: skip
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
        return main(["validate", str(tmp_path / "c.yaml")])

    assert validate(tmp_path / "book.xlsx", {"sheet": "Data"}) == 0
    assert validate(tmp_path / "book.xlsx", {"sheet": "Data", "missing_values": ["?"]}) == 0
    assert validate(tmp_path / "iris.jsonl", {"missing_values": ["-"], "encoding": "utf-8"}) == 0
    assert validate(tmp_path / "book.xlsx", {"sheet": "Data", "delimiter": ";"}) == 2
    assert "data.csv.delimiter: the files are Excel workbooks" in capsys.readouterr().err
