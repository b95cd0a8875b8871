"""Dates and times written as text, read in Python: the forms the model's `DateParts` layer reads
(components/models/date_parts.py: the layer does in TensorFlow what `day_number` does here), which of day and month
comes first, and the day number of a value; no Keras, so that the plan, the Transform's counts and `kflow validate`
import it without TensorFlow.

Each form is declared once (`FORMS`): its pattern, and where its year, month, day and clock sit among the value's
numbers once a month's name is its number (`numbers`). Both readers take a value's form from that table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

CENTER, SCALE = 10957.0, 3652.425  # days from 1970-01-01 to 2000-01-01; days in ten years
DAY_FIRST, MONTH_FIRST = "dmy", "mdy"

_YEAR = r"(?:\d{2}|\d{4})"
_CLOCK = r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?: ?[ap]\.?m\.?)?"  # 12:00, 08:30:15.25, 2:30 PM, 2:30p.m.
_ZONE = r"(?: ?(?:Z|UTC|GMT|[+-]\d{2}:?\d{2}))?"
_AT = rf"(?:(?:[ T]| +){_CLOCK}{_ZONE})?"  # a time after a date
_LETTER = "a-zäöüßéèêëàâîïôûùçñáíóúã"  # written out: RE2's \w is ASCII, Python's Unicode
_WEEKDAY = rf"(?:[{_LETTER}]{{2,12}}\.?,? +)?"  # Mon, / Monday / lundi / Montag, (a word before the date)
_ORDINAL = r"(?:st|nd|rd|th|\.)?"  # 5th; 5. Januar
_OF = r"(?:de +)?"  # 5 de enero de 2024
# Month names and their usual abbreviations, English, French, German, Spanish, Italian, Portuguese and Dutch, as
# exports in those languages write them; `numbers` writes each as its number. The longer first: `déc` of `décembre`.
MONTH_NAMES = (
    r"jan(?:uary|uari|uar|vier|eiro|v)?|jän(?:ner)?|enero|ene|gen(?:naio)?",
    r"feb(?:ruary|ruari|ruar|rero|braio)?|fév(?:rier|r)?|fev(?:ereiro)?",
    r"mar(?:ch|zo|ço|s|t)?|mär(?:z)?|maart|mrt",
    r"apr(?:ile|il)?|avr(?:il)?|abr(?:il)?",
    r"may(?:o)?|maio|maggio|mai|mei|mag",
    r"jun(?:e|i|io|ho)?|juin|giu(?:gno)?",
    r"jul(?:y|i|io|ho)?|juil(?:let)?|lug(?:lio)?",
    r"aug(?:ustus|ust)?|août|aout|ago(?:sto)?",
    r"sep(?:tember|tembre|tiembre|t)?|set(?:embro|tembre|t)?",
    r"oct(?:ober|obre|ubre)?|okt(?:ober)?|out(?:ubro)?|ott(?:obre)?",
    r"nov(?:ember|embre|iembre|embro)?",
    r"dec(?:ember)?|déc(?:embre)?|dez(?:ember|embro)?|dic(?:iembre|embre)?",
)
_MONTH = rf"(?:{'|'.join(MONTH_NAMES)})\.?"
# A month's name as a whole word, for `numbers`: case-insensitive, RE2 and Python alike.
MONTH_WORDS = tuple(rf"(?i)\b(?:{name})\b\.?" for name in MONTH_NAMES)
# What `numbers` leaves out, `\1` kept: a second's fraction (the layer's numbers are int64), a zone's offset.
FRACTION, OFFSET = r"(:\d{2})\.\d+", r"(:\d{2}) ?[+-]\d{2}:?\d{2}$"
PM, AM = r"p\.?m\.?", r"a\.?m\.?"  # after a time: 12 AM is 0:00, 12 PM 12:00


@dataclass(frozen=True)
class Form:
    """A way of writing a date or a time: `pattern` (the whole value, case-insensitive) and the positions of its
    year, month and day among the value's numbers (`numbers`; a day of None is the 1st; year None: a time alone,
    its clock the first numbers), its clock's hours after them. `slashed`: day and month in the column's order."""

    name: str
    pattern: str
    year: int | None
    month: int = 1
    day: int | None = 2
    slashed: bool = False
    full_year: bool = False  # else a year of two digits is 1969-2068

    @property
    def clock(self) -> int:
        return 0 if self.year is None else 3


FORMS = (
    # 2024-01-31, 2024/01/31 12:00, 2024-01-31T12:00:00Z
    Form("iso", rf"\d{{4}}[-/.]\d{{1,2}}[-/.]\d{{1,2}}{_AT}", 0, 1, 2, full_year=True),
    Form("year-month", r"\d{4}[-/]\d{1,2}", 0, 1, None, full_year=True),  # 2024-01
    # 1/31/2024, 31/1/24, 01-31-2024: the positions for the month first, swapped for a column of days first
    Form("slashed", rf"(?:\d{{1,2}}/\d{{1,2}}/{_YEAR}|\d{{1,2}}-\d{{1,2}}-\d{{4}}){_AT}", 2, 0, 1, slashed=True),
    Form("dotted", rf"\d{{1,2}}\.\d{{1,2}}\.{_YEAR}{_AT}", 2, 1, 0),  # 31.01.2024, 31.1.24 12:00 (the day first)
    # 5 Jan 2024, 05-JAN-24, Montag, 5. Januar 2024, 5 de enero de 2024
    Form("named, day first", rf"{_WEEKDAY}\d{{1,2}}{_ORDINAL}[- ]+{_OF}{_MONTH}[- ,]+{_OF}{_YEAR}{_AT}", 2, 1, 0),
    Form("named, month first", rf"{_WEEKDAY}{_MONTH} +\d{{1,2}}{_ORDINAL},? +\d{{4}}{_AT}", 2, 0, 1),  # Jan 5, 2024
    Form("month and year", rf"{_MONTH}[- ,]+{_OF}\d{{4}}", 1, 0, None),  # January 2024, Jan-2024, enero de 2024
    Form("time", _CLOCK, None),  # 12:00, 2:30 PM
)
_COMPILED = tuple((form, re.compile(form.pattern, re.IGNORECASE)) for form in FORMS)
_SLASHED = next(pattern for form, pattern in _COMPILED if form.slashed)


def form_of(text: str) -> Form | None:
    """The form `text` (stripped) is written in, if any."""
    return next((form for form, pattern in _COMPILED if pattern.fullmatch(text)), None)


def written_as_date(value: str) -> bool:
    """Whether `value` is written in one of the forms (its fields unchecked: `day_number` checks them)."""
    return form_of(value.strip()) is not None


def positions(form: Form, order: str) -> tuple[int | None, int, int | None]:
    """Where `form`'s year, month and day sit in a column of `order`."""
    if form.slashed and order == DAY_FIRST:
        return form.year, form.day, form.month  # type: ignore[return-value]  # a slashed form has both
    return form.year, form.month, form.day


def day_first(value: str) -> bool:
    """Whether `value` is a slashed date whose first field, past 12, can only be its day (`31/1/2024`)."""
    value = value.strip()
    if not value[:1].isdigit() or not _SLASHED.fullmatch(value):  # one pattern: every text value may come here
        return False
    return int(re.match(r"\d+", value).group()) > 12  # type: ignore[union-attr]


def any_day_first(values: Iterable[bytes]) -> bool:
    """Whether any of `values` (UTF-8, as Examples hold text) is a date with its day first (`day_first`); those that
    start with no digit are passed over undecoded (a text column's every distinct value comes here)."""
    return any(value[:1].isdigit() and day_first(value.decode("utf-8", "replace")) for value in values)


def slash_order(values: list[str]) -> str:
    """DAY_FIRST when a slashed date among `values` has its day first (`day_first`), else MONTH_FIRST."""
    return DAY_FIRST if any(day_first(value) for value in values) else MONTH_FIRST


def numbers(text: str) -> list[int]:
    """The numbers of a date as the layer reads them: a month's name as its number, a second's fraction left out."""
    text = re.sub(OFFSET, r"\1", re.sub(FRACTION, r"\1", text))
    for number, word in enumerate(MONTH_WORDS, start=1):
        text = re.sub(word, f" {number} ", text)
    return [int(field) for field in re.findall(r"\d+", text)]


def day_number(text: str, order: str = MONTH_FIRST) -> float | None:
    """Days since 1970-01-01 (fractional: the time of day) of a date or time written in one of the forms; a time
    alone is its fraction of a day; None for anything else or an impossible date."""
    text = text.strip()
    form = form_of(text)
    if form is None:
        return None
    fields = numbers(text) + [0] * 6
    clock = fields[form.clock : form.clock + 3]
    pm, am = (re.search(f"(?i){mark}$", text) is not None for mark in (PM, AM))
    hours = clock[0] % 12 + 12 * pm if pm or am else clock[0]
    seconds = hours * 3600 + clock[1] * 60 + clock[2]
    if form.year is None:
        return seconds / 86400
    at_year, at_month, at_day = positions(form, order)
    year, month, day = fields[at_year], fields[at_month], 1 if at_day is None else fields[at_day]
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    if not form.full_year and year < 100:
        year += 2000 if year < 69 else 1900
    return _days_from_civil(year, month, day) + seconds / 86400


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468
