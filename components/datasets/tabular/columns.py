"""Tabular column types (csv, parquet): declared in the config or inferred from a sample, values parsed by type,
what a sample says (SourceFacts), a record's identity for the split.

Types: `int`, `float`, `string`, `bool` (true/false, yes/no, 1/0, any case; stored as 0/1). A value equal to one of
the missing-value tokens (after stripping spaces) is missing: the feature is left out of its Example, as TFX does.
Inference looks at the non-missing values of the first `infer_rows` records: booleans → bool, integers → int, numbers
→ float, otherwise string, where "all" allows 1 % of the sampled values to be stray (a typo such as "abc" in a numeric
column is then rejected as a bad value instead of turning the column into strings); a column that is always missing
there is a string; a CSV's whole numbers written with leading zeros (02134) are codes, strings (key_column.py).
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from kflow.components.datasets.tabular.dataset import INFER_ROWS
from kflow.components.datasets.tabular.examples import ROW_NAME_COLUMNS, check_problem_type, numbers_rows, row_names
from kflow.components.util.example_proto import serialize_example

TYPES = ("int", "float", "string", "bool")
# What reads as a missing value unless data.csv.missing_values says otherwise: pandas' read_csv defaults (R's `NA`,
# Excel's `#N/A`, SQL's `NULL`, Python's `None`), but its C runtime's `1.#IND` and `1.#QNAN`.
DEFAULT_MISSING = (
    "", "NA", "N/A", "n/a", "#N/A", "#N/A N/A", "#NA", "<NA>", "NaN", "nan", "-NaN", "-nan", "null", "NULL", "None",
)  # fmt: skip
_TRUE, _FALSE = {"true", "yes", "1"}, {"false", "no", "0"}
_WHOLE_TAIL = re.compile(r"\.0+(?=\x1f|$)")  # a field's `.0` (`.00`) at its end: content_hash


class BadValue(ValueError):
    """A value that does not parse as its column's type."""


def int64(value: int) -> int:
    """`value`, or BadValue past the int64 range: an Example's int64_list holds no more."""
    if not -(2**63) <= value <= 2**63 - 1:
        raise BadValue(value)
    return value


def parse_value(text: str, kind: str) -> int | float | str:
    return PARSERS[kind](text)


def _parse_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = _whole(text)  # `1.0`: a whole number as pandas writes an integer column that held a missing value
    return int64(value)


def _whole(text: str) -> int:
    """`7.0`, `-3.00`: an integer written with a zero fraction (not `1e3`, not `7.5`), exactly, however large."""
    whole, dot, fraction = text.partition(".")
    if not dot or fraction.strip("0") or not whole.lstrip("+-").isdigit():
        raise BadValue(text)
    try:
        return int(whole)
    except ValueError:  # `+-1.`, `².0`: signs or digits int() does not read
        raise BadValue(text) from None


def parse_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadValue(text) from None
    if not math.isfinite(value):
        raise BadValue(text)
    return value


def _parse_bool(text: str) -> int:
    value = _BOOLS.get(text.lower())
    if value is None:
        raise BadValue(text)
    return value


_BOOLS = dict.fromkeys(_TRUE, 1) | dict.fromkeys(_FALSE, 0)
PARSERS = {"string": str, "int": _parse_int, "float": parse_float, "bool": _parse_bool}


def infer_types(
    header: Sequence[str], rows: Iterable[Sequence[str]], declared: Mapping[str, str], missing: frozenset[str]
) -> dict[str, str]:
    """Each column's type: the declared one, else the narrowest type all sampled values parse as."""
    types = {}
    for name, cells in zip(header, sampled_columns(header, rows), strict=True):
        if name in declared:
            types[name] = declared[name]
        else:
            kind = plain_number_type(cells, missing)
            types[name] = kind or _narrowest([cell.strip() for cell in cells if cell.strip() not in missing])
    return types


def sampled_columns(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[Sequence[str]]:
    """The cells of each column of the `rows` as wide as the header, a tuple a column (rows cut short or too long
    are left out, as the ingest rejects them)."""
    full = [row for row in rows if len(row) == len(header)]
    return list(zip(*full, strict=True)) if full else [() for _ in header]


MAX_INFERRED_CLASSES = 20  # Whole-number labels with more distinct values than this are a quantity.


def infer_problem_type(label: str, kind: str, values: Sequence[str]) -> tuple[str, str]:
    """data.problem_type when the config leaves it out, and the rule that chose it: strings and booleans are classes;
    whole numbers (`3`, or `3.0` as pandas writes an integer column with a missing value) are class ids up to
    MAX_INFERRED_CLASSES distinct values and a quantity beyond, or when more than two values average under 2 rows
    each (a small table's years or counts: HSAUR's BCG, 13 rows of 12 years); numbers with decimals are a
    quantity."""
    distinct, among = _distinct(values, kind), f" in {len(values):,} sampled rows"  # the sample's, not the table's
    rule = f"the label {label!r} holds {distinct} distinct"
    if kind in ("int", "float"):
        whole = kind == "int" or all(parses(value, "int") for value in values)
        if not whole:
            return "regression", f"{rule} numbers with decimals{among}"
        if distinct > MAX_INFERRED_CLASSES:
            return "regression", (
                f"{rule} whole numbers{among}, more than {MAX_INFERRED_CLASSES} (set data.problem_type: "
                "classification if they are class ids)"
            )
        if _thin(distinct, len(values)):
            return "regression", (
                f"{rule} whole numbers in {len(values)} rows, fewer than 2 a value: a quantity, as classes so thin "
                "could not be learnt (set data.problem_type: classification if they are class ids)"
            )
        return "classification", (
            f"{rule} whole numbers{among}, at most {MAX_INFERRED_CLASSES} (set data.problem_type: regression if "
            "they are a quantity)"
        )
    return "classification", f"{rule} {kind} values{among}"


def _distinct(values: Sequence[str], kind: str) -> int:
    """How many distinct label values: of numbers, as numbers (`1` and `1.0` are one; a stray text, which the ingest
    rejects as a bad value, none)."""
    if kind in ("int", "float", "bool"):  # bool: Yes, yes and YES are one value
        return len({parse_value(value, kind) for value in values if parses(value, kind)})
    return len(set(values))


def _thin(distinct: int, rows: int) -> bool:
    """Whether more than two label values average under 2 rows each: classes too thin to learn."""
    return distinct > 2 and rows < 2 * distinct


# Plain numbers, one a line, matched over a column's joined cells at once (`plain_number_type`): what int() and
# float() surely read, within int64 and float64's range (at most 18 digits a whole number; an exponent of 2 digits
# after at most 200), ASCII digits only, no space. Anything else (` 5`, `1_000`, `١٢`, `1e400`, 19 digits, a mark)
# goes value by value. A wide table's sample is millions of cells: MNIST written as a CSV, 785 columns of 10,000
# sampled rows, took 7.5 s of `kflow validate` (and as long again in the ingest) read value by value.
_NUMBER = r"[+-]?(?:[0-9]{1,200}(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,2})?"
_NUMBERS = re.compile(rf"(?:{_NUMBER})?(?:\n(?:{_NUMBER})?)*")  # empty lines: missing cells, where "" is missing
_INTS = re.compile(r"(?:[+-]?[0-9]{1,18})?(?:\n(?:[+-]?[0-9]{1,18})?)*")
_WHOLE = re.compile(r"^[+-]?[0-9]{1,18}(?:\.0*)?$", re.MULTILINE)  # `7`, `7.0`, `7.`: _parse_int reads them
_LONG = re.compile(r"[0-9]{19}")


def plain_number_type(cells: Sequence[str], missing: frozenset[str]) -> str | None:
    """`_narrowest` of a column's raw `cells` when every one is a plain number or empty (where "" is missing), read
    over their joined text at once: whole numbers are int (bool needs a word, or more than 0 and 1); numbers whose
    share that is no whole number is within the stray allowance are int; others float; every cell empty, string.
    None when a cell may be anything else (a space, a mark, a word, past 18 digits): read them value by value."""
    joined, empty = "\n".join(cells), cells.count("")
    if joined.count("\n") != len(cells) - 1 or (empty and "" not in missing):  # a cell of several lines
        return None
    if _numbers_missing(missing):  # `-999` missing: which cells are numbers is a question value by value
        return None
    count = len(cells) - empty
    if not count:
        return "string"
    if not joined.translate(_DIGITS_AND_LINES) and max(map(len, cells)) <= 18:  # unsigned whole numbers: at C speed
        return "int"
    if not _NUMBERS.fullmatch(joined) or _LONG.search(joined):
        return None
    if _INTS.fullmatch(joined):
        return "int"
    wholes = len(_WHOLE.findall(joined))
    return "int" if wholes and count - wholes <= count // 100 else "float"


_DIGITS_AND_LINES = dict.fromkeys(map(ord, "0123456789\n"))


@functools.lru_cache(maxsize=64)
def _numbers_missing(missing: frozenset[str]) -> bool:
    """Whether a missing-value mark is itself a plain number (data.csv.missing_values: ['-999'])."""
    return any(token and _NUMBERS.fullmatch(token) for token in missing)


def _narrowest(values: list[str]) -> str:
    """The narrowest type all (stripped, non-missing) `values` parse as, value by value, 1 % of them allowed not to."""
    if not values:
        return "string"
    stray = len(values) // 100  # Values allowed not to parse (1 %).
    for kind in ("bool", "int", "float"):
        parsed = [value for value in values if parses(value, kind)]
        if len(values) - len(parsed) > stray or not parsed:
            continue
        if kind == "bool" and not {value.lower() for value in parsed} - {"0", "1"}:
            continue  # Only 0 and 1: an integer column (a count, a class id) rather than yes/no.
        return kind
    return "string"


def parses(value: str, kind: str) -> bool:
    try:
        parse_value(value, kind)
    except BadValue:
        return False
    return True


def check_columns(
    header: Sequence[str], label: Any, problem_type: Any, key: Any, declared: Any, types_ok: Iterable[str] = TYPES
) -> None:
    """Refuses a label, key or declared type that the header or the type list does not have."""
    duplicates = sorted({name for name in header if list(header).count(name) > 1})
    if duplicates:
        raise ValueError(f"data.source.path: the table names the columns {duplicates} more than once: rename them")
    check_problem_type(label, problem_type, key, list(header))
    if not isinstance(declared, Mapping):
        raise ValueError(f"data.columns: must map column names to types, got {declared!r}")
    for name, kind in declared.items():
        if name not in header:
            raise ValueError(f"data.columns.{name}: no such column in the data (columns: {', '.join(header)})")
        if kind not in types_ok:
            raise ValueError(f"data.columns.{name}: type must be one of {', '.join(TYPES)}, got {kind!r}")


@dataclass(frozen=True)
class SourceFacts:
    """What a sample of the source says: the columns, their types, the task, the label's values."""

    header: list[str]
    types: dict[str, str]
    problem_type: str
    problem_type_reason: str | None  # Why, when the task was inferred.
    labels: list[str]  # The distinct label values of the sample.
    sampled: int
    notes: tuple[str, ...] = ()  # What the sample suggests setting: said by `kflow validate`, logged by the ingest.
    numbered: str | None = None  # The first column, when its sampled values count the rows (examples.numbers_rows).
    # {float column: the marks seen} of the columns of numbers as reports write them ($1,234.50, 12%): csv only.
    written: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # {number column: its marks} of the columns whose numbers stand beside a mark (`?`) read as missing there: csv.
    missing_marks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # {name given: name written} of the columns the header names not, or names again (csv: header.column_names).
    renamed: dict[str, str] = field(default_factory=dict)
    empty: tuple[str, ...] = ()  # The columns (but label and key) with no value in the sampled rows (csv).
    preambles: tuple[tuple[str, int], ...] = ()  # (file, lines above its header) where a preamble was passed over
    unread: dict[str, str] = field(default_factory=dict)  # {column: its type} of no scalar type, left out (parquet)
    dialect: tuple[str, ...] = ()  # What of the dialect the config leaves out was read from the file, and how (csv)
    repeated_keys: int = 0  # The sampled records whose data.key an earlier sampled record holds (csv)
    codes: dict[str, str] = field(default_factory=dict)  # {column: a value}: whole numbers with leading zeros (csv)

    @property
    def written_readings(self) -> list[str]:
        """How the ingest reads the columns whose values or names are not what they look."""
        written = [
            f"{name!r} holds numbers written with {', '.join(map(repr, marks))}: read as the numbers"
            for name, marks in self.written.items()
        ]
        gaps = [
            f"{name!r} holds numbers and {' and '.join(map(repr, marks))}: read as a missing number "
            f"(set data.columns.{name}: string to keep them as text)"
            for name, marks in self.missing_marks.items()
        ]
        renamed = [
            f"the header's {given!r} is read as {name!r}, without the spaces around it" if given.strip() == name
            else f"the header names a column {given!r} again: read as {name!r}" if given
            else f"a column has no name in the header: read as {name!r}"
            for name, given in self.renamed.items()
        ]  # fmt: skip
        empty = [
            f"{name!r} has no value in the {self.sampled:,} sampled rows: no feature if the training split holds none"
            for name in self.empty
        ]
        preambles = list(self.dialect) + [
            f"{file} holds {lines} line{'s' if lines > 1 else ''} above its header (a title, a date): passed over"
            for file, lines in self.preambles
        ]
        declare = "declare data.columns.{}: string to read each as its text"
        unread = [
            f"{name!r} holds no value (every one null): left out"
            if kind == "null"
            else f"{name!r} holds {kind}, no scalar: left out ({declare.format(name)})"
            for name, kind in self.unread.items()
        ]
        codes = [
            f"{name!r} holds whole numbers written with leading zeros ({example}): read as text codes, the zeros "
            f"kept (declare data.columns.{name}: int to read numbers)"
            for name, example in self.codes.items()
        ]
        return preambles + written + gaps + codes + renamed + empty + unread

    @property
    def readings(self) -> tuple[str, ...]:
        """How the ingest will read columns the sample showed to be other than they look, said by `kflow validate`."""
        numbered = [f"{self.numbered!r} numbers the rows (0 or 1, 2, 3, …): the records' key, not a feature"]
        return tuple(f"data: {line}" for line in (numbered if self.numbered else []) + self.written_readings)


@dataclass(frozen=True)
class ColumnChoice:
    """What an ingest's parameters say of a table's columns (data.label, problem_type, key, columns) and how many
    records to sample: the part of them that `kflow validate` checks against the source (csv, parquet)."""

    label: Any = None
    problem_type: str | None = None
    key: str | None = None
    columns: dict[str, str] | None = None
    infer_rows: int = INFER_ROWS

    @property
    def named(self) -> frozenset[str]:
        """The columns the choice names: the label (a column's name), the key, the declared columns."""
        label = {self.label} if isinstance(self.label, str) else set()
        return frozenset(label | ({self.key} if self.key else set()) | set(self.columns or {}))

    @classmethod
    def of(cls, parameters: Mapping[str, Any]) -> ColumnChoice:
        """The choice among an ingest's `parameters` (the others are left out)."""
        return cls(**{field.name: parameters[field.name] for field in fields(cls) if field.name in parameters})


def table_facts(
    header: Sequence[str],
    types: dict[str, str],
    label: Any,
    problem_type: Any,
    key: Any,
    declared: Any,
    values: list[str],
    first_values: Sequence[str] = (),
) -> SourceFacts:
    """What csv and parquet make of a source's columns, their sampled label `values` and the first column's
    (`first_values`, in the file's order, when it is of whole numbers): the problem type inferred from them when not
    given (and why), the label, key and declared columns checked against the header, a regression's label numeric,
    and whether the first column numbers the rows; a ValueError naming the field otherwise."""
    reason = None
    if problem_type is None and isinstance(label, str) and label in header:
        problem_type, reason = infer_problem_type(label, types[label], values)
    numbered = None
    if header and header[0] not in (label, *ROW_NAME_COLUMNS) and numbers_rows(first_values):  # else named so
        numbered = header[0]
    check_columns(header, label, problem_type, key, declared)
    check_features(header, label, key, numbered)
    if problem_type == "classification" and isinstance(label, str):
        check_classes(label, types[label], values)
    if problem_type == "regression" and types[label] not in ("int", "float"):
        raise ValueError(f"data.label: regression needs a numeric label; column {label!r} is {types[label]}")
    return SourceFacts(list(header), types, problem_type, reason, sorted(set(values)), len(values), numbered=numbered)


def check_classes(label: str, kind: str, values: Sequence[str]) -> None:
    """Refuses a classification whose sampled label values average under 2 rows a class (more than two of them): a
    name or an identifier (MASS's Cars93 by its `Model`: 93 values in 93 rows), whose test rows hold classes the
    training rows never show, so that every prediction is wrong (the run was BLESSED at accuracy 0)."""
    distinct = _distinct(values, kind)
    if _thin(distinct, len(values)):
        raise ValueError(
            f"data.label: {label!r} holds {distinct} distinct values in {len(values)} sampled rows, fewer than 2 a "
            "class: a name or an identifier, whose test rows would be classes no training row shows (choose "
            "another label, or data.problem_type: regression for a quantity)"
        )


def check_features(header: Sequence[str], label: Any, key: Any, numbered: str | None = None) -> None:
    """Refuses a labelled table with no column to learn from: the label alone, or beside the rows' key or names."""
    if not isinstance(label, str) or label not in header:
        return
    names = row_names(dict.fromkeys(header), numbered)
    if any(name not in (label, key, names) for name in header):
        return
    others = [name for name in dict.fromkeys((key, names)) if name]
    beside = [f"the key {name!r}" if name == key else f"the rows' names {name!r}" for name in others]
    said = f" (beside it only {' and '.join(beside)})" if beside else ""
    raise ValueError(f"data.source.path: the table has no column to learn {label!r} from{said}")


def content_hash(fields: list[str]) -> str:
    """A record's identity for the split when it has no key: its fields as the CSV reader gives them (line endings,
    a BOM, quoting do not change it), a whole number's `.0` left out (a workbook holds pandas' 18.0 as 18). 0.9 µs."""
    return hashlib.sha1(_WHOLE_TAIL.sub("", "\x1f".join(fields)).replace("\r\n", "\n").encode()).hexdigest()[:16]


def serialized_example(values: Mapping[str, int | float | str]) -> bytes:
    """A record's present values as a tf.train.Example, serialised deterministically: str → bytes_list,
    float → float_list, int (and bool as 0/1) → int64_list."""
    return serialize_example(values)
