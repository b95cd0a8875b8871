"""CSVs as spreadsheets outside the English-speaking world save them: a real table (scikit-learn's wine, 178 rows)
written in cp1252 with accented class names and column names, and with ';' between fields and decimal commas.
Each reads whole once the config names its encoding or decimal mark; without, `kflow validate`'s check (the
source's inspection) refuses or says what to set, naming the field, and the ingest keeps every record it
refuses, with the reason and the setting that would read it."""

import json

import numpy as np
import pytest

from kflow.components.datasets.csv.ingest import source as csv_source
from kflow.components.datasets.csv.ingest.header import PREAMBLE_LINES
from tests.components.datasets.csv.ingest.test_executor import ingest, read_records

CLASSES = ("Barolo", "Grignolino", "Barberà")  # the wine regions of Piedmont; the last one accented


@pytest.fixture(scope="module")
def wine():
    from sklearn.datasets import load_wine

    bunch = load_wine(as_frame=True)
    frame = bunch.frame.rename(columns={"color_intensity": "intensité", "target": "cépage"})
    frame["cépage"] = np.asarray(CLASSES)[bunch.target]
    return frame


def inspect(path, **csv_format):
    return csv_source.inspect_source(source_path=str(path), csv_format=csv_format, label="cépage")


def test_a_cp1252_file_is_read_as_it_comes_and_refused_as_utf8_when_the_config_says_utf8(tmp_path, wine):
    path = tmp_path / "wine.csv"
    wine.to_csv(path, index=False, encoding="cp1252")
    facts = inspect(path)  # the encoding left out: not UTF-8, all cp1252, read so and said
    assert sorted(facts.labels) == sorted(CLASSES) and "intensité" in facts.header
    assert facts.readings[0].startswith("data: the file is not UTF-8 but cp1252")
    with pytest.raises(ValueError, match=r"^csv: .*wine.csv line 1: the header is not utf-8: set data.csv.encoding"):
        inspect(path, encoding="utf-8")

    for csv_format in ({}, {"encoding": "cp1252"}):
        folder = tmp_path / str(len(csv_format))
        folder.mkdir()
        summary, examples, _, _ = ingest(
            folder, source_path=str(path), label="cépage", columns={}, csv_format=csv_format
        )
        assert (summary["read"], summary["rejected"]) == (178, 0)
        records = [record for split in read_records(examples).values() for record in split]
        assert sorted({record["cépage"] for record in records}) == sorted(CLASSES)
        assert np.isclose(sum(record["intensité"] for record in records), wine["intensité"].sum(), rtol=1e-5)


def test_an_ascii_header_over_cp1252_rows_is_read_as_cp1252(tmp_path, wine):
    path = tmp_path / "plain_names.csv"
    wine.rename(columns={"intensité": "intensity", "cépage": "grape"}).to_csv(path, index=False, encoding="cp1252")
    facts = csv_source.inspect_source(source_path=str(path), label="grape")
    assert sorted(facts.labels) == sorted(CLASSES)  # Barberà whole, not a rejected record


def test_records_not_in_the_encoding_are_rejected_with_the_setting_that_reads_them(tmp_path, wine):
    """A UTF-8 header over Latin-1 rows: validate refuses when the sample holds more than max_invalid_fraction
    allows; the ingest keeps each such record as `undecodable`, its bytes escaped, with the hint."""
    path = tmp_path / "mixed.csv"
    text = wine.to_csv(index=False)
    header, rows = text.split("\n", 1)
    path.write_bytes(header.encode("utf-8") + b"\n" + rows.encode("latin-1"))
    barbera = int((wine["cépage"] == "Barberà").sum())
    with pytest.raises(ValueError, match=rf"data.csv.encoding: {barbera} of the first 178 records are not utf-8 \("):
        inspect(path)

    summary, _, _, rejects = ingest(tmp_path, source_path=str(path), label="cépage", columns={})
    assert (summary["read"], summary["rejected"]) == (178, barbera)
    entries = [json.loads(line) for line in rejects.file.read_text().splitlines()]
    assert {entry["reason"] for entry in entries} == {"undecodable"}
    assert all("Barber\\xe0" in entry["record"] and "set data.csv.encoding" in entry["error"] for entry in entries)


def test_semicolons_under_a_header_whose_name_holds_a_comma_are_read_as_they_come(tmp_path, wine):
    """`radius, mean;texture "avg";…` (a helper's trial): by ',' the header read as 2 columns and every record as
    14, so every record was refused; ';' cuts the header as it cuts the records, so the file is read by ';'."""
    frame = wine.rename(columns={"alcohol": "alcohol, % vol", "malic_acid": 'malic "acid"'})
    path = tmp_path / "wine_eu.csv"
    frame.to_csv(path, index=False, sep=";", decimal=",")
    found = inspect(path)
    assert found.header == list(frame) and found.types["alcohol, % vol"] == "float"
    assert (
        found.readings[0]
        == "data: the header's names are separated by ';': read so (set data.csv.delimiter to read it otherwise)"
    )
    summary, _, _, _ = ingest(tmp_path, source_path=str(path), label="cépage", columns={})
    assert (summary["read"], summary["rejected"]) == (178, 0)


def test_semicolons_and_decimal_commas_read_as_numbers_as_they_come(tmp_path, wine):
    path = tmp_path / "wine_eu.csv"
    wine.to_csv(path, index=False, sep=";", decimal=",", encoding="utf-8-sig")  # with a byte-order mark
    # Given ',', the header reads as one column that ';' cuts into columns naming the label: read with ';', said;
    # the decimal mark left out, the columns of numbers written with a comma read it: the numbers, said.
    found = inspect(path)
    assert found.header == list(wine) and found.notes == ()
    said = "data: the header's names are separated by ';': read so (set data.csv.delimiter to read it otherwise)"
    assert found.readings[0] == said
    assert found.readings[1].startswith("data: 'alcohol', 'malic_acid', 'ash', 'alcalinity_of_ash' and 9 more hold ")
    assert "decimal comma" in found.readings[1]
    assert {found.types[name] for name in wine if name != "cépage"} <= {"float", "int"}
    # A label the header does not name: ';' cuts the header as it cuts the records, so the columns named are the
    # file's own.
    with pytest.raises(ValueError, match=r"data.label: 'grape' is not a column of the data \(columns: alcohol, "):
        csv_source.inspect_source(source_path=str(path), label="grape")

    # A decimal point the config sets is kept: the numbers are text, and what to set is said.
    as_text = inspect(path, delimiter=";", decimal=".")
    assert as_text.types["alcohol"] == "string"
    assert len(as_text.notes) == 1 and as_text.notes[0].startswith("data.csv.decimal: 'alcohol', 'malic_acid'")

    for csv_format in ({}, {"delimiter": ";", "decimal": ","}):
        summary, examples, _, _ = ingest(
            tmp_path, source_path=str(path), label="cépage", columns={}, csv_format=csv_format
        )
        assert (summary["read"], summary["rejected"]) == (178, 0)
        records = [record for split in read_records(examples).values() for record in split]
        assert np.isclose(sum(record["alcohol"] for record in records), wine["alcohol"].sum(), rtol=1e-5)


def test_a_comma_decimal_is_read_only_where_every_value_of_a_column_is_such_a_number(tmp_path):
    """Whole numbers and thousands grouped by points beside the decimal commas are numbers of the column; a column
    with a comma in text (a list, a name) is no evidence, and a file cut at commas has none."""
    path = tmp_path / "mixed.csv"
    path.write_text("price;count;tags;label\n12;3;a,b;x\n1.234,5;4;c;y\n7,25;5;d,e;x\n0;6;f;y\n")
    facts = csv_source.inspect_source(source_path=str(path), label="label")
    assert facts.types["price"] == "float" and facts.types["tags"] == "string"
    summary, examples, _, _ = ingest(tmp_path, source_path=str(path), label="label", columns={})
    prices = [record["price"] for split in read_records(examples).values() for record in split]
    assert sorted(prices) == [0.0, 7.25, 12.0, 1234.5]
    text = tmp_path / "text.csv"
    text.write_text('name;label\n"Smith, J";x\nDoe;y\n')
    assert csv_source.inspect_source(source_path=str(text), label="label").types["name"] == "string"
    # Between tabs, a US export's thousands (1,234) stay thousands; a number no thousands' comma writes is a decimal.
    us = tmp_path / "us.tsv"
    us.write_text("amount\tlabel\n1,234\tx\n12,500\ty\n7\tx\n")
    facts = csv_source.inspect_source(source_path=str(us), label="label", csv_format={"delimiter": "\t"})
    assert facts.types["amount"] == "float" and not any("decimal comma" in line for line in facts.readings)
    eu = tmp_path / "eu.tsv"
    eu.write_text("amount\tlabel\n1,234\tx\n12,5\ty\n7\tx\n")
    facts = csv_source.inspect_source(source_path=str(eu), label="label", csv_format={"delimiter": "\t"})
    assert any("decimal comma" in line for line in facts.readings)


@pytest.mark.parametrize(
    ("csv_format", "message"),
    [
        ({"encoding": "utf-16"}, "data.csv.encoding: utf-16 is not read here .* convert the file to UTF-8"),
        ({"encoding": "rot13"}, "data.csv.encoding: rot13 is not read here"),
        ({"encoding": "klingon"}, "data.csv.encoding: Python knows no encoding 'klingon'"),
        ({"encoding": 8}, "data.csv.encoding: must be an encoding's name"),
        ({"decimal": ";"}, "data.csv.decimal: '.' or ','"),
        ({"decimal": ","}, r"data.csv.decimal: '.' or ',' \(then not the delimiter\), got ','"),
    ],
)
def test_an_encoding_or_decimal_mark_that_cannot_be_read_is_refused_naming_the_field(
    tmp_path, wine, csv_format, message
):
    path = tmp_path / "wine.csv"
    wine.to_csv(path, index=False)
    with pytest.raises(ValueError, match=message):
        inspect(path, **csv_format)


def test_a_punctuation_mark_among_numbers_is_read_as_a_missing_number_there(tmp_path, wine):
    """UCI-style exports write a missing value as '?': in 1 of 178 values of a column (under the 1 % of stray
    values the type inference allows) its record was a bad value; in 9 of 178 the column was text. Now the mark is
    a missing number in those columns, said in one line each; a text column keeps its own '?'."""
    frame = wine.astype({"magnesium": "Int64"}).astype(object)
    frame.loc[[5], "magnesium"] = "?"
    frame.loc[list(range(0, 178, 20)), "hue"] = "?"
    frame["note"] = ["?" if row % 7 == 0 else f"lot {row % 5}" for row in range(len(frame))]  # text, with its '?'
    path = tmp_path / "uci.csv"
    frame.to_csv(path, index=False)

    facts = inspect(path)
    assert (facts.types["magnesium"], facts.types["hue"], facts.types["note"]) == ("int", "float", "string")
    assert facts.notes == () and facts.missing_marks == {"magnesium": ("?",), "hue": ("?",)}
    assert facts.readings[-1] == (
        "data: 'hue' holds numbers and '?': read as a missing number "
        "(set data.columns.hue: string to keep them as text)"
    )
    summary, examples, _, rejects = ingest(tmp_path, source_path=str(path), label="cépage", columns={})
    assert (summary["read"], summary["rejected"]) == (178, 0)
    records = [record for split in read_records(examples).values() for record in split]
    assert len(records) == 178
    assert sum("magnesium" in record for record in records) == 177 and sum("hue" in record for record in records) == 169
    assert sum(record["note"] == "?" for record in records) == sum(row % 7 == 0 for row in range(178))
    # declared as text, the column keeps its marks; declared a number, they are missing there too
    declared = {"hue": "string", "magnesium": "int"}
    facts = csv_source.inspect_source(source_path=str(path), csv_format={}, label="cépage", columns=declared)
    assert facts.missing_marks == {"magnesium": ("?",)} and facts.types["hue"] == "string"


def test_a_column_of_numbers_and_more_marks_reads_its_marks_as_missing_too(tmp_path, wine):
    """survival's `bladder1`: two follow-up measures written `.` where there was no recurrence, in 162 of 294 rows.
    Types are inferred with every column's marks as missing, so the column with more marks than numbers is numbers
    too: it reads its `.` as a missing number, as the other does (its records were bad values, the ingest failed)."""
    frame = wine.astype({"magnesium": "Int64", "proline": "Int64"}).astype(object)
    frame.loc[list(range(0, 178, 3)), "magnesium"] = "."  # 60 marks, fewer than its numbers
    frame.loc[list(range(0, 120)), "proline"] = "."  # 120 marks, more than its 58 numbers
    path = tmp_path / "followup.csv"
    frame.to_csv(path, index=False)
    facts = inspect(path)
    assert (facts.types["magnesium"], facts.types["proline"]) == ("int", "int")
    assert facts.missing_marks == {"magnesium": (".",), "proline": (".",)}
    summary, examples, _, _ = ingest(tmp_path, source_path=str(path), label="cépage", columns={})
    assert (summary["read"], summary["rejected"]) == (178, 0)
    records = [record for split in read_records(examples).values() for record in split]
    assert sum("proline" in record for record in records) == 58


def test_excels_cell_errors_and_pandas_missing_values_are_missing_numbers(tmp_path, wine):
    """A sheet saved as CSV writes its formulas' errors (`#DIV/0!`, `#VALUE!`) and `#N/A`; other tools write
    `n/a` or `<NA>` (pandas' nullable types): pandas reads the latter as missing by default, and so does kflow now;
    an error among a column's numbers is a missing number there, like `?`."""
    frame = wine.astype(object)
    errors, not_available, lower = range(0, 178, 30), range(1, 178, 25), range(2, 178, 25)
    frame.loc[list(errors), "hue"] = "#DIV/0!"
    frame.loc[list(not_available), "ash"] = "#N/A"
    frame.loc[list(lower), "ash"] = "n/a"
    frame.loc[list(range(3, 178, 40)), "proline"] = "<NA>"
    frame.to_csv(tmp_path / "sheet.csv", index=False)
    facts = inspect(tmp_path / "sheet.csv")
    assert {name: facts.types[name] for name in ("hue", "ash", "proline")} == {
        "hue": "float", "ash": "float", "proline": "int"
    }  # fmt: skip
    assert facts.missing_marks == {"hue": ("#DIV/0!",)}
    summary, examples, _, _ = ingest(tmp_path, source_path=str(tmp_path / "sheet.csv"), label="cépage", columns={})
    assert (summary["read"], summary["rejected"]) == (178, 0)
    records = [record for split in read_records(examples).values() for record in split]
    assert sum("hue" in record for record in records) == 178 - len(errors)
    assert sum("ash" in record for record in records) == 178 - len(not_available) - len(lower)


@pytest.mark.parametrize(("encoding", "mark"), [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")])
def test_excels_unicode_text_in_utf16_is_read_whole(tmp_path, wine, encoding, mark):
    """Excel's "Unicode Text" export: UTF-16 with its byte-order mark, tab-separated. It was refused as "not
    utf-8"; now it is read as UTF-8 (staged, then cut like any file), accents and all."""
    path = tmp_path / "wine.txt"
    text = wine.to_csv(index=False, sep="\t")
    path.write_bytes(mark + text.encode(encoding))  # Excel writes little-endian, its mark first
    facts = inspect(path, delimiter="\t")
    assert facts.header == list(wine) and sorted(facts.labels) == sorted(CLASSES)
    summary, examples, _, _ = ingest(
        tmp_path, source_path=str(path), label="cépage", columns={}, csv_format={"delimiter": "\t"}
    )
    assert (summary["read"], summary["rejected"]) == (178, 0)
    records = [record for split in read_records(examples).values() for record in split]
    assert np.isclose(sum(record["intensité"] for record in records), wine["intensité"].sum())


@pytest.mark.parametrize("padded", [True, False])
def test_lines_above_the_header_are_passed_over_when_the_config_names_its_columns(tmp_path, wine, padded):
    """Statistics offices' and instruments' exports put a title and a date above the header (as a sheet saves
    them: `Title,,,,` — or alone on their lines). The header is the first line naming the label, said in one line;
    every record below it is read. Without the label in the first PREAMBLE_LINES, the first line stays the header
    and the label's absence is refused as before."""
    commas = "," * (wine.shape[1] - 1) if padded else ""
    preamble = f"Wine recognition data{commas}\nExported 2024-01-05{commas}\n\n"
    (tmp_path / "export.csv").write_text(preamble + wine.to_csv(index=False))
    facts = inspect(tmp_path / "export.csv")
    assert facts.header == list(wine) and facts.preambles == (("export.csv", 3),)
    assert "data: export.csv holds 3 lines above its header (a title, a date): passed over" in facts.readings
    summary, examples, _, _ = ingest(tmp_path, source_path=str(tmp_path / "export.csv"), label="cépage", columns={})
    assert (summary["read"], summary["rejected"]) == (178, 0)
    records = [record for split in read_records(examples).values() for record in split]
    assert np.isclose(sum(record["alcohol"] for record in records), wine["alcohol"].sum())

    far = "\n".join(f"note {line}{commas}" for line in range(PREAMBLE_LINES + 1))
    (tmp_path / "far.csv").write_text(far + "\n" + wine.to_csv(index=False))
    with pytest.raises(ValueError, match=r"data.label: 'cépage' is not a column of the data \(columns: note 0"):
        inspect(tmp_path / "far.csv")


def test_a_tab_separated_file_is_read_with_tabs_and_said(tmp_path, wine):
    """A `.tsv` under the default ',': its header reads as one column that tabs cut as they cut its records, so it
    is read with tabs, every record, said in one line; a label the header does not name is refused as a label
    (before: as a delimiter to set, then the label). A header with no record to tell the tab by gets the line
    that says what to set, the tab written as YAML reads it."""
    path = tmp_path / "wine.tsv"
    wine.to_csv(path, index=False, sep="\t")
    facts = inspect(path)
    assert facts.header == list(wine) and "separated by '\\t'" in facts.readings[0]
    summary, examples, _, _ = ingest(tmp_path, source_path=str(path), label="cépage", columns={})
    assert (summary["read"], summary["rejected"]) == (178, 0)
    records = [record for split in read_records(examples).values() for record in split]
    assert np.isclose(sum(record["alcohol"] for record in records), wine["alcohol"].sum(), rtol=1e-5)
    with pytest.raises(ValueError, match=r"^data.label: 'grape' is not a column of the data \(columns: alcohol, "):
        csv_source.inspect_source(source_path=str(path), label="grape")
    assert inspect(path, delimiter="\t").header == list(wine)
    bare = tmp_path / "header.tsv"
    wine.head(0).to_csv(bare, index=False, sep="\t")
    with pytest.raises(ValueError, match=r'its names look separated by .\\t.: set data.csv.delimiter: "\\t"$'):
        csv_source.inspect_source(source_path=str(bare), label="grape")
