"""Span patterns ({SPAN}, {VERSION}, the dates {YYYY}, {MM}, {DD}) and data.spans selections, on real files in a
temporary folder."""

import pytest

from kflow.components.ingest.spans import find_spans, previous_span, select_spans


def touch(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("a,b\n1,2\n")
    return path


def test_spans_are_found_in_order_with_their_own_files(tmp_path):
    for name in ("survey-1.csv", "survey-02.csv", "survey-10.csv", "other.csv", "survey-x.csv"):
        touch(tmp_path / name)
    spans = find_spans(str(tmp_path / "survey-{SPAN}.csv"))
    assert [span.number for span in spans] == [1, 2, 10]
    assert spans[1].path == str(tmp_path / "survey-02.csv")  # the files' own spelling: zeros kept
    assert spans[2].files == (str(tmp_path / "survey-10.csv"),)


def test_a_span_is_read_at_its_highest_version_and_may_hold_several_files(tmp_path):
    for name in ("span-1/v1/a.csv", "span-1/v2/a.csv", "span-1/v2/b.csv", "span-2/v1/a.csv"):
        touch(tmp_path / name)
    spans = find_spans(str(tmp_path / "span-{SPAN}/v{VERSION}/*.csv"))
    assert [(span.number, span.version) for span in spans] == [(1, "2"), (2, "1")]
    assert spans[0].path == str(tmp_path / "span-1/v2/*.csv")
    assert len(spans[0].files) == 2


def test_monthly_and_daily_files_are_spans_numbered_by_their_dates(tmp_path):
    """A user trial named monthly exports wages-2023-12.csv, wages-2024-01.csv: `{SPAN}` could not read them, and
    `wages-*-{SPAN}.csv` made December 2023 the newest span (12) and joined two Januaries. TFX's date specs can."""
    for name in ("wages-2023-12.csv", "wages-2024-01.csv", "wages-2024-02.csv", "wages-2024-x.csv", "notes.csv"):
        touch(tmp_path / name)
    spans = find_spans(str(tmp_path / "wages-{YYYY}-{MM}.csv"))
    assert [span.name for span in spans] == ["202312", "202401", "202402"]  # in time's order
    assert spans[-1].path == str(tmp_path / "wages-2024-02.csv") and spans[0].files == (spans[0].path,)
    assert [span.name for span in select_spans(spans, {"last": 2})] == ["202401", "202402"]
    assert [span.name for span in select_spans(spans, {"from": 202400})] == ["202401", "202402"]
    for day in ("2024/01/30", "2024/01/31", "2024/02/01"):
        touch(tmp_path / "daily" / day / "part-0.parquet")
        touch(tmp_path / "daily" / day / "part-1.parquet")
    days = find_spans(str(tmp_path / "daily" / "{YYYY}" / "{MM}" / "{DD}" / "*.parquet"))
    assert [span.number for span in days] == [20240130, 20240131, 20240201] and len(days[0].files) == 2
    assert days[0].path == str(tmp_path / "daily" / "2024" / "01" / "30" / "*.parquet")


def test_selections(tmp_path):
    for number in range(1, 6):
        touch(tmp_path / f"s-{number}.csv")
    spans = find_spans(str(tmp_path / "s-{SPAN}.csv"))

    def chosen(selection):
        return [span.number for span in select_spans(spans, selection)]

    assert chosen(None) == chosen("latest") == [5]
    assert chosen("all") == [1, 2, 3, 4, 5]
    assert chosen({"last": 2}) == [4, 5]
    assert chosen({"from": 2, "to": 3}) == [2, 3]
    assert chosen({"from": 4}) == [4, 5]
    assert previous_span(spans, spans[2]).number == 2
    assert previous_span(spans, spans[0]) is None
    none = r"^data.spans: \{from: 7\} selects none of the spans found \(1, 2, 3, 4, 5\)$"
    with pytest.raises(ValueError, match=none):
        select_spans(spans, {"from": 7})


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("s-{SPAN}-{SPAN}.csv", "has {SPAN} exactly once"),
        ("s-{VERSION}.csv", "has {SPAN} exactly once"),
        ("v{VERSION}/s-{SPAN}.csv", "{VERSION} comes after the span"),
        ("s-{DAY}-{SPAN}.csv", "only {SPAN} (or {YYYY}, {MM}, {DD}) and {VERSION} may stand in braces"),
        ("s-{YYYY}-{SPAN}.csv", "has {SPAN} or date specs ({YYYY}, {MM}, {DD}), not both"),
        ("s-{YYYY}-{DD}.csv", "a date has {YYYY} once, then {MM} and {DD} at most once"),
        ("nothing-{SPAN}.csv", "no file matches the span pattern"),
    ],
)
def test_bad_patterns_are_one_line_naming_the_field(tmp_path, pattern, message):
    touch(tmp_path / "s-1.csv")
    with pytest.raises(ValueError) as error:
        find_spans(str(tmp_path / pattern))
    assert str(error.value).startswith("data.source.path: ")
    assert message in str(error.value) and "\n" not in str(error.value)
