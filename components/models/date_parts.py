"""A date or time written as text, read as numbers a model can learn from, in its own graph: `DateParts`.

A column of many distinct dates (a sale's day, an admission's time) is a category per value that new rows never
share; as numbers it holds what dates hold: a trend (the time itself), the season (the day of the year as an
angle), the day of the week (an angle), the time of day (an angle), and whether it was missing. The time is in
decades from 2000-01-01 (1969 is -3.1, 2024 is 2.4): fixed, because the Transform's summary of a text column is its
most frequent values, and of dates each seen once those are the earliest, no fair sample of the span.

Written as `2024-01-31`, `2024/01/31`, `2024-01-31 12:00[:00[.5]]` (`T` or a space; a zone after is ignored),
`1/31/2024` or `31/1/2024` (the order the training split's values show: a first field past 12 is a day; else the
month first, as US exports write it), a two-digit year (`1/31/24`: 1969-2068), or a time alone (`12:00`,
`08:30:15`). Anything else reads as missing. components/datasets/tabular/dates.py holds the patterns, and reads a
value in Python as the layer does (`day_number`: the plan checks that a column's values read so).
"""

from __future__ import annotations

import math
from typing import Any

import keras

from kflow.components.datasets.tabular.dates import (
    CENTER,
    CLOCK_PATTERN,
    DAY_FIRST,
    ISO_PATTERN,
    MONTH_FIRST,
    SCALE,
    SLASHED_PATTERN,
)

PARTS = 8  # time, season (sin, cos), weekday (sin, cos), time of day (sin, cos), missing
_YEAR_DAYS = 365.2425


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
