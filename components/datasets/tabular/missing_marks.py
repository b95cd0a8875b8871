"""Marks for a missing number: how the UCI repository and statistics packages write a missing value among a
column's numbers (`?`, `-`, `.`, `—`), and the errors a spreadsheet writes into a cell (`#DIV/0!`, `#VALUE!`).
Read as text, such a column would be a category a value; read as numbers, each record with a mark a bad value: the
ingest reads the mark as a missing number in that column only (RowEncoder's `marks`), and says so."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from kflow.components.datasets.tabular import columns as cols
from kflow.components.datasets.tabular import written_numbers

# `?`, `-`, `.`, `--`, `***`, `—`: a mark, not a word, a number or a date; and the errors Excel writes into a cell.
MARK = re.compile(r"[^\w\s]{1,3}|#(?:DIV/0!|VALUE!|REF!|NUM!|NAME\?|NULL!|SPILL!|CALC!)")


def marked_columns(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    declared: Mapping[str, str],
    missing: frozenset[str],
    style: str,
) -> dict[str, tuple[str, ...]]:
    """{column: its marks} of the numeric columns (undeclared, or declared int or float) whose sampled `rows` hold
    numbers (plain, or as reports write them in `style`: written_numbers.py) and marks, at least as many numbers."""
    found: dict[str, tuple[str, ...]] = {}
    for name, cells in zip(header, cols.sampled_columns(header, rows), strict=True):
        if declared.get(name, "float") not in ("int", "float") or cols.plain_number_type(cells, missing):
            continue  # not numbers, or plain numbers only (read at once: a wide table's columns mostly are)
        numbers, marks = 0, Counter()
        for value in (cell.strip() for cell in cells):
            if value in missing:
                continue
            if cols.parses(value, "float") or written_numbers.plain(value, style) is not None:
                numbers += 1
            elif MARK.fullmatch(value):
                marks[value] += 1
            else:  # a word, a date: a text column (one failed parse, not one a row)
                marks.clear()
                break
        if marks and numbers >= marks.total():  # mostly numbers
            found[name] = tuple(sorted(marks))
    return found


def numbers_marked(
    header: Sequence[str], rows: Sequence[Sequence[str]], types: Mapping[str, str], marks: frozenset[str]
) -> dict[str, tuple[str, ...]]:
    """{column: the `marks` its sampled rows hold} of the number columns (`types`) holding any: the types were
    inferred with every column's marks as missing, so a column of numbers and more marks than numbers (a follow-up
    measure, blank in most rows) is numbers too, and must read its marks as missing numbers."""
    found: dict[str, tuple[str, ...]] = {}
    for index, name in enumerate(header):
        if marks and types.get(name) in ("int", "float"):
            seen = {row[index].strip() for row in rows if len(row) == len(header)} & marks
            if seen:
                found[name] = tuple(sorted(seen))
    return found
