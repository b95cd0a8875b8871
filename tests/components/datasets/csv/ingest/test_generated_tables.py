"""Generated tables (hypothesis) through what `kflow validate` and the ingest's parser make of a CSV: headers with
empty and repeated names, lines above them, cells of numbers as reports write them, dates, marks for a missing
value, sheet errors, text with the delimiter, quotes and line breaks. Whatever the table, reading its sample either
refuses it in one line (a ValueError: `kflow validate` exits 2 with it) or gives facts whose parser reads every
record or says which column refused it (BadValue): no other exception, no traceback at a user."""

from __future__ import annotations

import csv
import io
import os

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kflow.components.datasets.csv.ingest import source as csv_source
from kflow.components.datasets.csv.ingest.header import column_names, split_row
from kflow.components.datasets.tabular import columns as cols
from kflow.components.datasets.tabular.row_encoder import RowEncoder

EXAMPLES = int(os.environ.get("KFLOW_FUZZ_EXAMPLES", "60"))
CELLS = [
    "", "0", "1", "-3", "2.5", "1e3", "1,234", "1 234,5", "$5", "(1,234.50)", "12%", "19M", "10,000+", "\u22125",
    "?", "-", "—", "#N/A", "#DIV/0!", "n/a", "NA", "2024-01-31", "31.01.2024", "Jan 5, 2024", "1/31/24", "2:30 PM",
    "yes", "no", "TRUE", "a", "b", "some words, with a comma", 'a "quoted" word', "two\nlines", "é", "  padded  ",
]  # fmt: skip
NAMES = ["x", "y", "label", "", " ", "Total", "Total", "unnamed_3", "a,b", "é"]


@st.composite
def tables(draw) -> tuple[str, str]:
    """(a CSV's text, its label's name)."""
    width = draw(st.integers(1, 5))
    header = draw(st.lists(st.sampled_from(NAMES), min_size=width, max_size=width))
    label = draw(st.sampled_from([name for name in header if name.strip()] or ["label"]))
    rows = draw(st.lists(st.lists(st.sampled_from(CELLS), min_size=width, max_size=width), max_size=40))
    out = io.StringIO()
    if draw(st.booleans()):
        out.write(draw(st.sampled_from(["Exported 2024-01-05\n", "A title,,\n\n", "# notes\n"])))
    writer = csv.writer(out, lineterminator=draw(st.sampled_from(["\n", "\r\n"])))
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue(), label


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=tables())
def test_a_table_is_refused_in_one_line_or_every_record_is_read_or_refused_by_column(tmp_path, table):
    text, label = table
    path = tmp_path / "t.csv"
    path.write_text(text, encoding="utf-8")
    try:
        facts = csv_source.inspect_source(source_path=str(path), label=label)
    except ValueError as error:
        assert str(error) and "\n" not in str(error).strip(), error
        assert "repeats the columns" not in str(error)  # repeated and empty names are named apart (header.py)
        event("refused")
        return
    event("read")
    dialect = csv_source.Dialect()  # UTF-8, a decimal point: as inspect_source reads these tables
    encode = RowEncoder(
        facts.header, facts.types, dialect.missing, [label],
        dict.fromkeys(facts.written, dialect.number_style), facts.missing_marks,
    )  # fmt: skip
    for line in text.splitlines()[1:]:
        fields = split_row(line.encode(), dialect)
        if fields is None or len(fields) != len(facts.header):
            continue  # a record cut elsewhere (a quoted line break) or of another width: the ingest's to count
        try:
            encode(fields)
        except cols.BadValue:
            assert encode.first_bad(fields) in facts.header


def test_names_given_never_take_a_name_the_header_holds():
    header, renamed = column_names(["x", "", "unnamed_2", "Total", "Total", "Total_2"])
    assert header == ["x", "unnamed_2_", "unnamed_2", "Total", "Total_2_", "Total_2"]
    assert renamed == {"unnamed_2_": "", "Total_2_": "Total"}


def test_a_name_written_with_spaces_around_it_is_read_without_them_and_said():
    """`income ` was read as `income` without a word (a user trial; the docs say names stay as written): said."""
    header, renamed = column_names(["age", "income ", " city"])
    assert header == ["age", "income", "city"] and renamed == {"income": "income ", "city": " city"}
    facts = cols.SourceFacts(header, {}, "classification", None, [], 0, renamed=renamed)
    assert "the header's 'income ' is read as 'income', without the spaces around it" in facts.written_readings
    assert column_names(["", "a", "label"])[1] == {}  # pandas' row names: their own note, not a renaming
