"""The checks of a delimited source's header and sample that the csv ingest and `kflow validate` share: a header read
as one column that another delimiter cuts (for the columns named: the label, the key, the model's columns), sampled
records none of which has the header's fields, a column declared a number whose values are not, numbers written
with a decimal comma read as text."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from kflow.components.datasets.csv.ingest.decimal_mark import comma_columns
from kflow.components.datasets.csv.ingest.dialect import Dialect
from kflow.components.datasets.tabular import columns as cols
from kflow.components.datasets.tabular.examples import ROW_NAMES


def check_fields(scan: Any, dialect: Dialect) -> None:
    """Refuses a sample none of whose records has the header's fields (the ingest would reject every record as
    wrong_field_count): a header given without the files' delimiter, most often."""
    rows = scan.sample
    if len(rows) < 2 or any(len(row) == len(scan.header) for row in rows):
        return
    fields = Counter(len(row) for row in rows).most_common(1)[0][0]
    cuts = [mark for mark in ";\t|," if mark != dialect.delimiter]
    other = next((mark for mark in cuts if fields == 1 and len(rows[0][0].split(mark)) == len(scan.header)), None)
    hint = f": set data.csv.delimiter: {json.dumps(other)}" if other else ""
    raise ValueError(
        f"data.csv{'.delimiter' if other else ''}: none of the {len(rows)} sampled records has the header's "
        f"{len(scan.header)} fields (most have {fields}){hint}"
    )


def fields_delimiter(scan: Any, dialect: Dialect) -> str | None:
    """Another mark that cuts the header and most sampled lines as written alike (as csv.Sniffer finds a file's
    delimiter), whatever columns the config names: where the header reads as one column (a tab-separated file read
    with ',', its label misspelled: then the label is refused, not the delimiter), or where none of the sampled
    records has the header's fields (a `;` file whose header names a column "radius, mean" reads as 2 columns by
    ',', its records as 7)."""
    rows = scan.sample
    one_column = len(scan.header) == 1 and len(rows) >= 1
    if not dialect.delimited or not (one_column or len(rows) >= 2):
        return None
    if not one_column and any(len(row) == len(scan.header) for row in rows):
        return None
    lines = [dialect.delimiter.join(row) for row in rows]
    header = dialect.delimiter.join(scan.header)
    marks = [mark for mark in ";\t|," if mark not in (dialect.delimiter, dialect.decimal)]
    return next((mark for mark in marks if _cuts_alike(header, lines, mark)), None)


def _cuts_alike(header: str, lines: list[str], mark: str) -> bool:
    """Whether `mark` cuts the header into as many fields (two or more) as it cuts most of the sampled lines."""
    fields = len(header.split(mark))
    return fields > 1 and 2 * sum(len(line.split(mark)) == fields for line in lines) > len(lines)


def check_headers(files: list[str], dialect: Dialect, header: list[str], named: frozenset[str]) -> None:
    """Refuses, as the ingest does, a file of `files[1:]` whose columns are not the first file's `header`'s, in
    this or another order (kflow validate samples the first file only)."""
    from kflow.components.datasets.csv.ingest.header import read_header
    from kflow.components.datasets.csv.ingest.readable import open_records
    from kflow.components.datasets.csv.ingest.records import cut
    from kflow.components.datasets.csv.ingest.workbook import is_workbook

    for path in files[1:]:
        if is_workbook(path):  # a workbook's header is read with its rows: the ingest checks it
            continue
        with open_records(path, dialect.sheet) as stream:
            names = read_header(path, cut(stream, dialect.quote, delimiter=dialect.delimiter.encode()), dialect, named)
            file_columns(path, names.names, files[0], header)


def file_columns(path: str, names: list[str], first: str, header: list[str]) -> tuple[int, ...] | None:
    """None when the file `path`'s column `names` are the `first` file's `header`; where each of `header`'s columns is
    among `names` when these are the same columns in another order (read by name: pandas' concat, a union of TFX's CSV
    splits); a ValueError saying how otherwise (`_other_columns`)."""
    if names == header:
        return None
    if len(names) != len(header) or set(names) != set(header) or len(set(names)) != len(names):
        raise ValueError(_other_columns(path, names, first, header))
    at = {name: index for index, name in enumerate(names)}
    return tuple(at[name] for name in header)


def _other_columns(path: str, names: list[str], first: str, header: list[str]) -> str:
    """A file of a folder whose header is not the first file's, in one line saying how: the columns it adds and
    lacks (or, for the same names, that one is named twice)."""
    added, lacking = [name for name in names if name not in header], [name for name in header if name not in names]
    if added or lacking:
        said = "; ".join(f"{what} {', '.join(map(repr, found[:5]))}{' …' if len(found) > 5 else ''}"
                         for what, found in (("adds", added), ("lacks", lacking)) if found)  # fmt: skip
    else:
        twice = next((name for name in names if names.count(name) > 1), names[0])
        said = f"names a column twice ({twice!r}) beside the same others"
    return f"data.source.path: {path} {said} (beside {first}'s header): every file of a source holds the same columns"


def check_declared(scan: Any, declared: dict[str, str], missing: frozenset[str], marks: dict) -> None:
    """Refuses a column declared as a number (data.columns) most of whose sampled values are none: the ingest would
    reject their records as bad_value."""
    width = len(scan.header)
    for name, kind in declared.items():
        if kind not in ("int", "float", "bool") or name not in scan.header or name in marks:
            continue
        at = scan.header.index(name)
        values = [row[at].strip() for row in scan.sample if len(row) == width and row[at].strip() not in missing]
        bad = [value for value in values if not cols.parses(value, kind)]
        if values and 2 * len(bad) > len(values):
            shown = _first_values([value for value in dict.fromkeys(bad[:50]) if value])
            raise ValueError(
                f"data.columns.{name}: declared {kind}, but {len(bad)} of its {len(values)} sampled values do not "
                f"read as {kind} ({shown})"
            )


def _first_values(values: list[str], width: int = 80) -> str:
    """The first values, quoted, as many as `width` characters hold whole, then `…`."""
    shown: list[str] = []
    for value in values:
        if shown and len(", ".join([*shown, repr(value)])) > width:
            return ", ".join(shown) + ", …"
        shown.append(repr(value))
    return ", ".join(shown)


def cutting_delimiter(header: list[str], dialect: Dialect, named: frozenset[str]) -> str | None:
    if len(header) != 1 or not named or named <= set(header) or not dialect.delimited:
        return None
    # The mark that cuts it into the most of the columns named, if into most of them: new data to score may lack one
    # the model reads, which is then named as missing rather than every column.
    found = {mark: len(named & _names_cut(header[0], mark)) for mark in ";\t|," if mark not in (dialect.delimiter,
             dialect.decimal)}  # fmt: skip
    mark = max(found, key=found.get, default=None)
    return mark if mark is not None and found[mark] and 2 * found[mark] >= len(named) else None


def _names_cut(header: str, mark: str) -> set[str]:
    """The names a one-column header cut at `mark` gives, an unnamed first one (pandas' and R's row names) by the
    name the ingest gives it (ROW_NAMES: what `kflow predict` keys such rows by)."""
    names = [name.strip() for name in header.split(mark)]
    return {*names, ROW_NAMES} if names[0] == "" else set(names)


def check_delimiter(header: list[str], dialect: Dialect, label: Any) -> None:
    """Refuses a header read as one column that another delimiter would cut, when the label is not that column: a
    file whose records that delimiter does not cut alike (`fields_delimiter` reads the others so)."""
    if len(header) != 1 or label is None or label in header or not dialect.delimited:
        return
    other = next((mark for mark in ";\t|," if mark != dialect.delimiter and mark in header[0]), None)
    if other is not None:
        raise ValueError(
            f"data.csv.delimiter: the header reads as one column, {header[0][:60]!r}: its names look separated by "
            f"{other!r}: set data.csv.delimiter: {json.dumps(other)}"  # as YAML reads it: "\t" is a tab
        )


def named_columns(names: list[str]) -> str:
    """'a' holds, or 'a', 'b' hold (at most 4 named)."""
    shown = ", ".join(repr(name) for name in names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return f"{shown} {'holds' if len(names) == 1 else 'hold'}"


def decimal_commas(scan: Any, dialect: Dialect, types: dict[str, str]) -> tuple[str, ...]:
    """A note naming the text columns whose sampled values are all numbers with a decimal comma, when the config
    says the decimal mark is a point."""
    if dialect.decimal == "," or dialect.delimiter == ",":
        return ()
    commas = [
        name for name in comma_columns(scan.header, scan.sample, dialect.missing, ";") if types.get(name) == "string"
    ]
    if not commas:
        return ()
    return (f"data.csv.decimal: {named_columns(commas)} numbers with a decimal comma, read as text: set it to ','",)


# Values that mark a missing value in files of other tools (UCI's `?`, a dash), not among the default missing tokens.
_MARKS = ("?", "-", "--", ".")


def label_marks(label: Any, values: list[str], problem_type: str | None) -> tuple[str, ...]:
    """A note when a classification's sampled labels hold a value that marks a missing one elsewhere (`?`): it would
    be a class of its own, learnt and predicted."""
    marks = sorted({value for value in values if value in _MARKS and not (value == "-" and "+" in values)})
    if problem_type != "classification" or not marks:
        return ()
    count = sum(value in marks for value in values)
    shown = ", ".join(map(repr, marks))
    return (f"data.label: {label!r} holds {shown} in {count} of {len(values)} sampled rows: a class of its own "
            f"unless data.csv.missing_values lists it (then those rows are unlabelled, left out)",)  # fmt: skip


_WORD = re.compile(r"[A-Za-z][A-Za-z .'/_-]{0,29}")
NUMBERS_SHARE = 0.8  # of a column's sampled values: past it, a word or two among them may mark a missing number


def word_marks(scan: Any, types: dict[str, str], missing: frozenset[str], named: set) -> tuple[str, ...]:
    """A note for each text column (but those `named`: declared, the label, the key) whose sampled values are
    numbers but for one or two words (`unknown`, `not recorded`): read as text, each number became a category of its
    own, and the user is not told why; the word may mark a missing number, which data.csv.missing_values says."""
    notes = []
    for name, cells in zip(scan.header, cols.sampled_columns(scan.header, scan.sample), strict=True):
        if types.get(name) != "string" or name in named:
            continue
        values = [value for value in (cell.strip() for cell in cells) if value not in missing]
        words = Counter(value for value in values if not cols.parses(value, "float"))
        if not values or len(words) > 2 or len(values) - words.total() < NUMBERS_SHARE * len(values):
            continue
        if all(_WORD.fullmatch(word) for word in words):
            of = f"of {len(values):,} sampled values"
            shown = " and ".join(f"{word!r} ({count:,} {of})" for word, count in words.items())
            notes.append(
                f"data.csv.missing_values: {name!r} holds numbers but for {shown}: read as text, a category a value; "
                f"if {'it marks' if len(words) == 1 else 'they mark'} a missing number, list "
                f"{'it' if len(words) == 1 else 'them'} in data.csv.missing_values"
            )
    return tuple(notes)
