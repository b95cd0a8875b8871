"""Dates and times written as text, read in Python: the patterns the model's `DateParts` layer reads
(components/models/date_parts.py: the layer does in TensorFlow what `day_number` does here), which of day and month
comes first, and the day number of a value; no Keras, so that the plan, the Transform's counts and `kflow validate`
import it without TensorFlow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

CENTER, SCALE = 10957.0, 3652.425  # days from 1970-01-01 to 2000-01-01; days in ten years
DAY_FIRST, MONTH_FIRST = "dmy", "mdy"
_ISO = r"\d{4}[-/]\d{1,2}[-/]\d{1,2}"
_SLASHED = r"\d{1,2}/\d{1,2}/(?:\d{2}|\d{4})"
_CLOCK = r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
_ZONE = r"(?:Z|[+-]\d{2}:?\d{2})?"
ISO_PATTERN = rf"{_ISO}(?:[ T]{_CLOCK})?{_ZONE}"
SLASHED_PATTERN = rf"{_SLASHED}(?:[ T]{_CLOCK})?"
CLOCK_PATTERN = _CLOCK


def day_first(value: str) -> bool:
    """Whether `value` is a slashed date whose first field, past 12, can only be its day (`31/1/2024`)."""
    value = value.strip()
    return value[:1].isdigit() and bool(re.fullmatch(SLASHED_PATTERN, value)) and int(value.split("/")[0]) > 12


def any_day_first(values: Iterable[bytes]) -> bool:
    """Whether any of `values` (UTF-8, as Examples hold text) is a date with its day first (`day_first`); those that
    start with no digit are passed over undecoded (a text column's every distinct value comes here)."""
    return any(value[:1].isdigit() and day_first(value.decode("utf-8", "replace")) for value in values)


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
