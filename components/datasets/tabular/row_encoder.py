"""A table's record parsed by its columns' types and serialised as a tf.train.Example in one pass (`RowEncoder`): the
CSV ingest's parse and serialise, each column's parser and encoder chosen once."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from kflow.components.datasets.tabular import written_numbers
from kflow.components.datasets.tabular.columns import PARSERS, BadValue, parse_float
from kflow.components.datasets.tabular.yes_no import class_name
from kflow.components.util.example_proto import example_of, feature_encoder, name_order

_FEATURE_KINDS = {"string": "bytes", "int": "int64", "float": "float", "bool": "int64"}


def _written_float(style: str) -> Callable[[str], float]:
    """The parser of a float column of numbers as reports write them (written_numbers.py)."""

    def parse(text: str) -> float:
        try:
            return parse_float(text)
        except BadValue:
            value = written_numbers.plain(text, style)
            if value is None or not math.isfinite(value):
                raise
            return value

    return parse


def _written_int(style: str) -> Callable[[str], int]:
    """The parser of an int column (declared) of whole numbers as reports write them (`1,375`)."""
    as_float = _written_float(style)

    def parse(text: str) -> int:
        try:
            return PARSERS["int"](text)
        except BadValue:
            value = as_float(text)
            if not float(value).is_integer():
                raise
            return int(value)

    return parse


class RowEncoder:
    """A record's fields parsed by their columns' types and serialised as an Example in one pass: what
    `parse_value` on each present field and `serialized_example` give, with each column's parser and encoder
    chosen once and its entries made in the Example's order (the CSV ingest's parse and serialise: 26 → 19 µs a
    record of bench/ingest_scale.py's table).

    Calling it with a record's fields (as many as the header) returns the Example and the parsed values of the
    `wanted` columns that are present; a field that does not parse raises BadValue, and `first_bad` tells which
    column refused first in the header's order.
    """

    def __init__(
        self,
        header: Sequence[str],
        types: Mapping[str, str],
        missing: frozenset[str],
        wanted: Iterable[str],
        written: Mapping[str, str] | None = None,
        marks: Mapping[str, Iterable[str]] | None = None,
        classes: Iterable[str] = (),
    ):
        """`written`: {float column: its written_numbers style} of the columns of numbers as reports write them
        (`$1,234.50`, `12%`: written_numbers.py); `marks`: {column: the marks (`?`) also missing there}; `classes`:
        the string label, whose yes/no words are written one way (`No` as `no`: yes_no.py)."""
        written, marks = dict(written or {}), {name: frozenset(tokens) for name, tokens in (marks or {}).items()}
        classes = tuple(classes)
        self._arguments = (tuple(header), dict(types), missing, tuple(wanted), written, marks, classes)
        wanted = set(wanted)
        parsers = {name: PARSERS[kind] for name, kind in types.items()}
        parsers |= {
            name: (_written_int if types[name] == "int" else _written_float)(style) for name, style in written.items()
        }
        parsers |= {name: class_name for name in classes if types[name] == "string"}
        self._columns = [
            # A string keeps its spaces, but for the label and key: ` yes` is the class `yes`, as ` 7` is the key `7`.
            (index, name in wanted, name, types[name] == "string" and name not in wanted, parsers[name],
             feature_encoder(name, _FEATURE_KINDS[types[name]]), missing | marks[name] if name in marks else missing)
            for name, index in ((name, header.index(name)) for name in name_order(header))
        ]  # fmt: skip

    def __reduce__(self):  # its encoders are closures: sent to a worker as what builds them
        return RowEncoder, self._arguments

    def __call__(self, fields: Sequence[str]) -> tuple[bytes, dict[str, int | float | str]]:
        entries, values = [], {}
        for index, is_wanted, name, whole, parse, encode, missing in self._columns:
            text = fields[index]
            stripped = text.strip()
            if stripped in missing:
                continue
            value = parse(text if whole else stripped)  # a string keeps its spaces
            entries.append(encode(value))
            if is_wanted:
                values[name] = value
        return example_of(entries), values

    def first_bad(self, fields: Sequence[str]) -> str | None:
        """The first column, in the header's order, whose present field does not parse as its type; None if none."""
        for index, _, name, whole, parse, _, missing in sorted(self._columns, key=lambda column: column[0]):
            text = fields[index]
            stripped = text.strip()
            if stripped in missing:
                continue
            try:
                parse(text if whole else stripped)
            except BadValue:
                return name
        return None
