"""A date or time written as text, read as numbers a model can learn from, in its own graph: `DateParts`.

A column of many distinct dates (a sale's day, an admission's time) is a category per value that new rows never
share; as numbers it holds what dates hold: a trend (the time itself), the season (the day of the year as an
angle), the day of the week (an angle), the time of day (an angle), and whether it was missing. The time is in
decades from 2000-01-01 (1969 is -3.1, 2024 is 2.4): fixed, because the Transform's summary of a text column is its
most frequent values, and of dates each seen once those are the earliest, no fair sample of the span.

Written in any of the forms components/datasets/tabular/dates.py declares once (`FORMS`): ISO dates with or
without a time (`2024-01-31`, `2024-01-31T12:00:00Z`), slashed ones in the order the training split's values show
(`1/31/2024`, `31/1/24`: a first field past 12 is a day; else the month first, as US exports write it), dotted
ones (`31.01.2024`), the month's name (`Jan 5, 2024`, `Mon, 05 Jan 2024 14:30:00 +0000`, `05-JAN-24`, `5 févr.
2024`, `5. Januar 2024`, `5 de enero de 2024`), a
month alone (`2024-01`, `Jan 2024`), a 12-hour clock (`2:30 PM`), or a time alone (`08:30:15`); a two-digit year is
1969-2068. Anything else reads as missing. `dates.day_number` reads a value in Python as the layer does (the plan
checks that a column's values read so).
"""

from __future__ import annotations

import math
from typing import Any

import keras

from kflow.components.datasets.tabular.dates import (
    AM,
    CENTER,
    FORMS,
    FRACTION,
    MONTH_FIRST,
    MONTH_WORDS,
    OFFSET,
    PM,
    SCALE,
    positions,
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
        taken = tf.zeros_like(text, tf.bool)
        forms = []  # (form, mask): each value in the first form it is written in, as `form_of`
        for form in FORMS:
            mask = tf.strings.regex_full_match(text, "(?i)" + form.pattern) & ~taken
            forms.append((form, mask))
            taken |= mask
        # Only a date's or a time's numbers, a month's name as its number, a second's fraction and a zone left out:
        # each fits an int64 (no 30-digit number).
        fielded = tf.where(taken, text, "")
        for pattern in (FRACTION, OFFSET):
            fielded = tf.strings.regex_replace(fielded, pattern, r"\1")
        for number, word in enumerate(MONTH_WORDS, start=1):
            fielded = tf.strings.regex_replace(fielded, word, f" {number} ")
        numbers = tf.strings.split(tf.strings.strip(tf.strings.regex_replace(fielded, r"[^0-9]+", " ")))
        fields = tf.strings.to_number(numbers.to_tensor(default_value="0", shape=[None, 6]), tf.int64)

        zero = tf.zeros_like(fields[:, 0])
        year, month, day, hours, minutes, seconds = (zero,) * 6
        short_year, clock = tf.zeros_like(taken), tf.zeros_like(taken)
        for form, mask in forms:
            at_year, at_month, at_day = positions(form, self.order)
            if at_year is None:
                clock |= mask
            else:
                year = tf.where(mask, fields[:, at_year], year)
                month = tf.where(mask, fields[:, at_month], month)
                day = tf.where(mask, zero + 1 if at_day is None else fields[:, at_day], day)
                short_year |= mask & tf.constant(not form.full_year)
            hours, minutes, seconds = (
                tf.where(mask, fields[:, form.clock + i], part) for i, part in enumerate((hours, minutes, seconds))
            )
        century = tf.where(year < 69, tf.constant(2000, tf.int64), tf.constant(1900, tf.int64))
        year = tf.where(short_year & (year < 100), year + century, year)  # 1/31/24: 1969-2068
        pm, am = (tf.strings.regex_full_match(text, f"(?i).*{mark}") for mark in (PM, AM))
        hours = tf.where(pm | am, tf.math.floormod(hours, 12) + tf.where(pm, zero + 12, zero), hours)
        dated = taken & ~clock & (month >= 1) & (month <= 12) & (day >= 1) & (day <= 31)
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
