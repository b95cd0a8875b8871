"""Numbers as reports and spreadsheets write them: a currency sign before or after, thousands grouped, a percent
sign after (`$1,234.50`, `-€5`, `£0.99`, `12.5%`, `1,000,000`; in Europe `1.234,50 €`, `12,5 %`; thousands by a
space in French and SI typography, `1 234,50`, `1 234.5`), a typeset minus (`−5`), a negative amount in
parentheses as accountants write it (`(1,234.50)`, `($5.00)`), thousands, millions and billions by their letter
(`19M`, `201k`, `$1.2B`, `3bn`, as app stores and finance pages write sizes and amounts), a lower bound's plus
(`10,000+` installs: 10,000) and a currency's code for its sign (`USD 1,200`, `1.234,50 EUR`, `US$5`: CODES).

A text column of them (a price, an income, a rate) read as text is a category per value, and as the label a class
per price. A CSV column whose sampled values are all numbers, some so written (`decorated`), is a float column
whose every value is read as the number written: `12.5%` is 12.5 (the model scales its inputs; a label keeps its
unit) and `$1,234.50` is 1234.5. Thousands are grouped in threes, by the mark that is not the decimal one
(`STYLES`): commas where the decimal mark is a point, points where it is a comma (`data.csv.decimal: ','`), and
none between `;`-separated fields with a decimal point (European spreadsheets save so: there `1,250` may be 1.25).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

CURRENCY = "$€£¥₹"
# The ISO 4217 codes of the most traded currencies, as exports and invoices write amounts (`USD 1,200`, `12,50 EUR`),
# and the dollars named by country (`US$5`, `A$`, `C$`, `NZ$`, `HK$`, `S$`, Brazil's `R$`). A code is a sign only
# beside a number and apart from it (`USD 5`, not `EUR101`, a product's code): a column of `USD`, `EUR` stays a
# category.
CODES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "NZD", "CNY", "HKD", "SGD", "INR", "KRW", "SEK", "NOK", "DKK",
         "PLN", "CZK", "HUF", "BRL", "MXN", "ZAR", "TRY", "RUB")  # fmt: skip
_CODES = "|".join(CODES)
_MARK = rf"(?:[{CURRENCY}]|(?:US|A|C|NZ|HK|S|R)\$)"  # a sign written against the number: `$5`, `HK$5`
_SIGN = rf"(?:{_MARK}|{_CODES})"
MINUS = "\u2212"  # −, the minus sign typeset pages and Wikipedia's tables write (not the hyphen-minus, -)
GROUPED_BY_COMMAS, UNGROUPED, GROUPED_BY_POINTS = "1,234.5", "1234.5", "1.234,5"
_BEFORE = rf"[+-]?(?:{_MARK}\s?|(?:{_CODES})\s)[+-]?"  # `$5`, `-$5`, `$-5`, `€ 5`, `USD 5`
_AFTER = rf"(?:\s?{_MARK}|\s(?:{_CODES})|\s?%)?"  # `12.50 €`, as much of Europe writes a price; `12,5 %`; `5 EUR`
SCALES = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "bn": 1e9}  # `m` is left out: metres, minutes
_SCALE = r"(?:[kKMB]|bn)?"


def _written(number: str) -> re.Pattern:
    scaled = rf"{number}{_SCALE}"
    signed = rf"{_BEFORE}{scaled}%?|[+-]?{scaled}\+?{_AFTER}"  # `10,000+`: at least that many
    # `(1,234.50)`, `$(5)`, `(12,50 €)`: negative
    owed = rf"{_SIGN}?\(\s?{_SIGN}?\s?{scaled}(?:\s?{_SIGN})?\s?\){_AFTER}"
    return re.compile(rf"{signed}|{owed}")


SPACES = " \u00a0\u202f"  # thousands grouped by a space, as French and SI typography write them (`1 234,5`)
_SPACED = rf"[1-9]\d{{0,2}}(?:[{SPACES}]\d{{3}})+"
# {style: (how a number so written reads, its grouping mark, its decimal mark)}
STYLES = {
    GROUPED_BY_COMMAS: (
        _written(rf"(?:[1-9]\d{{0,2}}(?:,\d{{3}})+(?:\.\d*)?|{_SPACED}(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)"),
        ",",
        ".",
    ),
    UNGROUPED: (_written(rf"(?:{_SPACED}(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)"), "", "."),
    GROUPED_BY_POINTS: (
        _written(rf"(?:[1-9]\d{{0,2}}(?:\.\d{{3}})+(?:,\d*)?|{_SPACED}(?:,\d*)?|\d+(?:,\d*)?|,\d+)"),
        ".",
        ",",
    ),
}
_DIGITS = "0123456789+-"
_SIGNS = re.compile(_SIGN)
_SCALE_LETTERS = re.compile(r"[^kKMBbn]")  # what is left of a number so written: its scale's letter(s), if any
STRAY = 100  # As in type inference: one sampled value in this many may be something else (a typo, a note).


def plain(text: str, style: str = GROUPED_BY_COMMAS) -> float | None:
    """The number `text` writes in `style` with its currency sign, grouping marks or percent sign left out; None when
    it is no number so written."""
    pattern, group, decimal = STYLES[style]
    text = text.replace(MINUS, "-")
    if not pattern.fullmatch(text):
        return None
    scale = SCALES.get(_SCALE_LETTERS.sub("", _SIGNS.sub("", text)), 1.0)  # GBP's B, HK$'s K: no scale
    kept = "".join(char for char in text if char in _DIGITS or char == decimal).replace(decimal, ".")
    try:
        number = float(kept.removesuffix("+")) * scale
    except ValueError:  # two signs: `-$-5`
        return None
    return -number if "(" in text else number


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def decorated(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    types: Mapping[str, str],
    missing: frozenset[str],
    style: str,
) -> dict[str, tuple[str, ...]]:
    """{column: the marks seen} for each column read as text or float whose sampled `rows` are numbers as written
    above in `style` or plain (all but one in STRAY), at least one with a mark; `style`: one of STYLES."""
    found = {}
    _, group, _ = STYLES[style]
    marks = re.compile(
        rf"[{re.escape(CURRENCY + '%(' + MINUS + group)}]|(?<=\d)(?:[kKMB]|bn|[{SPACES}](?=\d))|\+$|{_CODES}"
    )
    # A mark that only a written number holds (with decimal ',', plain numbers come with points: Dialect.split):
    # a column without one is passed over at C speed (a wide table's 784 columns of 10,000 sampled rows).
    comma = "," if style == GROUPED_BY_COMMAS else ""
    # One character class: a fast scan (`b`: of `bn`; A-Z: of a currency's code, CODES).
    signal = re.compile(rf"[{re.escape(CURRENCY + '%(+kKMBb' + MINUS + SPACES + comma)}A-Z]")
    if not signal.search("\n".join("\x1f".join(row) for row in rows)):
        return found
    columns = zip(*(row for row in rows if len(row) == len(header)), strict=False) if rows else ()
    for name, column in zip(header, columns, strict=False):
        if types.get(name) not in ("string", "float", "int") or not signal.search("\n".join(column)):
            continue
        values = [value for value in map(str.strip, column) if value not in missing]
        others = [value for value in values if not _number(value)]
        written = [value for value in others if plain(value, style) is not None]
        if written and len(others) - len(written) <= len(values) // STRAY:
            found[name] = tuple(sorted({mark for value in written for mark in marks.findall(value)}))
    return found
