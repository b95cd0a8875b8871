"""A date or time written as text, read as numbers a model can learn from, in its own graph: `DateParts`.

A column of many distinct dates (a sale's day, an admission's time) is a category per value that new rows never
share; as numbers it holds what dates hold: a trend (the time itself), the season (the day of the year as an
angle), the day of the week (an angle), the time of day (an angle), and whether it was missing. The time is in
decades from 2000-01-01 (1969 is -3.1, 2024 is 2.4): fixed, because the Transform's summary of a text column is its
most frequent values, and of dates each seen once those are the earliest, no fair sample of the span.

Written as `2024-01-31`, `2024/01/31`, `2024-01-31 12:00[:00[.5]]` (`T` or a space; a zone after is ignored),
`1/31/2024` or `31/1/2024` (the order the training split's values show: a first field past 12 is a day; else the
month first, as US exports write it), a two-digit year (`1/31/24`: 1969-2068), or a time alone (`12:00`,
`08:30:15`). Anything else reads as missing. `day_number` reads a value in Python as the layer does in TensorFlow
(the plan checks that a column's values read so: components/datasets/tabular/plan.py).
"""

from __future__ import annotations

import math
import re
from typing import Any

import keras

PARTS = 8  # time, season (sin, cos), weekday (sin, cos), time of day (sin, cos), missing
CENTER, SCALE = 10957.0, 3652.425  # days from 1970-01-01 to 2000-01-01; days in ten years
DAY_FIRST, MONTH_FIRST = "dmy", "mdy"
_ISO = r"\d{4}[-/]\d{1,2}[-/]\d{1,2}"
_SLASHED = r"\d{1,2}/\d{1,2}/(?:\d{2}|\d{4})"
_CLOCK = r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
_ZONE = r"(?:Z|[+-]\d{2}:?\d{2})?"
ISO_PATTERN = rf"{_ISO}(?:[ T]{_CLOCK})?{_ZONE}"
SLASHED_PATTERN = rf"{_SLASHED}(?:[ T]{_CLOCK})?"
CLOCK_PATTERN = _CLOCK
_YEAR_DAYS = 365.2425


def day_first(value: str) -> bool:
    """Whether `value` is a slashed date whose first field, past 12, can only be its day (`31/1/2024`)."""
    value = value.strip()
    return value[:1].isdigit() and bool(re.fullmatch(SLASHED_PATTERN, value)) and int(value.split("/")[0]) > 12


def slash_order(values: list[str]) -> str:
    """DAY_FIRST when a slashed date among `values` has its day first (`day_first`), else MONTH_FIRST."""
    return DAY_FIRST if any(day_first(value) for value in values) else MONTH_FIRST


def day_number(text: str, order: str = MONTH_FIRST) -> float | None:
    """Days since 1970-01-01 (fractional: the time of day) of a date or time written as above; a time alone is its
    fraction of a day; None for anything else or an impossible date."""
    text = text.strip()
    fields = [int(field) for field in re.findall(r"\d+", re.sub(r"\.\d+", "", text))]  # as the layer: no fraction
    if re.fullmatch(ISO_PATTERN, text):
        year, month, day, clock = fields[0], fields[1], fields[2], fields[3:6]
    elif re.fullmatch(SLASHED_PATTERN, text):
        first, second, year, clock = fields[0], fields[1], fields[2], fields[3:6]
        month, day = (second, first) if order == DAY_FIRST else (first, second)
        year = _full_year(year)
    elif re.fullmatch(CLOCK_PATTERN, text):
        return _seconds(fields[:3]) / 86400
    else:
        return None
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return _days_from_civil(year, month, day) + _seconds(clock) / 86400


def _full_year(year: int) -> int:
    return year if year >= 100 else year + (2000 if year < 69 else 1900)


def _seconds(clock: list[int]) -> float:
    hours, minutes, seconds = (clock + [0, 0, 0])[:3]
    return hours * 3600 + minutes * 60 + seconds


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


@keras.saving.register_keras_serializable(package="kflow")
class DateParts(keras.layers.Layer):
    """[batch, 1] dates or times as text → [batch, PARTS] float32: (days since 1970 - `center`) / `scale`, the season's
    sin and cos, the weekday's, the time of day's, and 1.0 where the value is missing or no date (the others 0).
    TensorFlow's string ops: the tabular preprocessing's string inputs run on TensorFlow already."""

    def __init__(self, order: str = MONTH_FIRST, center: float = CENTER, scale: float = SCALE, **kwargs: Any):
        super().__init__(**kwargs)
        self.order, self.center, self.scale = order, float(center), float(scale) or 1.0

    def call(self, inputs):
        import tensorflow as tf

        text = tf.strings.strip(tf.reshape(inputs, [-1]))
        iso = tf.strings.regex_full_match(text, ISO_PATTERN)
        slashed = tf.strings.regex_full_match(text, SLASHED_PATTERN)
        clock = tf.strings.regex_full_match(text, CLOCK_PATTERN)
        # Only a date's or a time's fields, a second's fraction left out: each fits an int64 (no 30-digit number).
        fielded = tf.where(iso | slashed | clock, tf.strings.regex_replace(text, r"\.\d+", ""), "")
        numbers = tf.strings.split(tf.strings.strip(tf.strings.regex_replace(fielded, r"[^0-9]+", " ")))
        fields = tf.strings.to_number(numbers.to_tensor(default_value="0", shape=[None, 7]), tf.int64)
        first, second, third = fields[:, 0], fields[:, 1], fields[:, 2]
        day_first = self.order == DAY_FIRST
        century = tf.where(third < 69, tf.constant(2000, tf.int64), tf.constant(1900, tf.int64))
        year = tf.where(iso, first, tf.where(third >= 100, third, third + century))
        month = tf.where(iso, second, second if day_first else first)
        day = tf.where(iso, third, first if day_first else second)
        hours, minutes, seconds = (tf.where(clock, fields[:, i], fields[:, 3 + i]) for i in range(3))
        dated = (iso | slashed) & (month >= 1) & (month <= 12) & (day >= 1) & (day <= 31)
        present = dated | clock
        days = tf.cast(tf.where(dated, _tf_days_from_civil(tf, year, month, day), 0), tf.float64)
        time_of_day = tf.cast(hours * 3600 + minutes * 60 + seconds, tf.float64) / 86400.0
        value = days + time_of_day
        turn = 2 * math.pi
        season = turn * tf.math.floormod(days, _YEAR_DAYS) / _YEAR_DAYS
        weekday = turn * tf.cast(tf.math.floormod(tf.cast(days, tf.int64) + 3, 7), tf.float64) / 7.0  # 0: Monday
        dated_f = tf.cast(dated, tf.float64)
        parts = [
            tf.where(dated, (value - self.center) / self.scale, time_of_day),  # a time alone: its fraction of a day
            tf.sin(season) * dated_f, tf.cos(season) * dated_f,
            tf.sin(weekday) * dated_f, tf.cos(weekday) * dated_f,
            tf.sin(turn * time_of_day), tf.cos(turn * time_of_day),
        ]  # fmt: skip
        present_f = tf.cast(present, tf.float64)
        stacked = tf.stack([part * present_f for part in parts] + [1.0 - present_f], axis=1)
        return tf.cast(stacked, tf.float32)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], PARTS)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "order": self.order, "center": self.center, "scale": self.scale}


def _tf_days_from_civil(tf: Any, year: Any, month: Any, day: Any) -> Any:
    year = year - tf.cast(month <= 2, tf.int64)
    era = tf.math.floordiv(year, 400)
    year_of_era = year - era * 400
    shift = tf.where(month > 2, tf.constant(-3, tf.int64), tf.constant(9, tf.int64))
    day_of_year = tf.math.floordiv(153 * (month + shift) + 2, 5) + day - 1
    day_of_era = year_of_era * 365 + tf.math.floordiv(year_of_era, 4) - tf.math.floordiv(year_of_era, 100) + day_of_year
    return era * 146097 + day_of_era - 719468
