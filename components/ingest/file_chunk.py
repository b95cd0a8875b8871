"""A chunk of a text file's records, as a driver hands it to its Beam workers: a byte range, not the records."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileChunk:
    """`count` records of `path` from byte `start`, where line `first_line` begins, to `end` (None: the file's end);
    `duplicate_lines`: the lines whose key an earlier record has; `name`: the file's name in reject positions when
    `path` is a copy of it (a gzipped source decompressed into the staging folder), else `path`'s own;
    `footnote_lines`: the lines below a table's last record that are notes (csv: source.footnotes); `columns`: where
    each of the header's columns is in this file's records, when the file holds them in another order (csv: a folder
    of exports, one saved with its columns moved), else None."""

    path: str
    start: int
    end: int | None
    first_line: int
    count: int
    duplicate_lines: frozenset[int] = frozenset()
    name: str = ""
    footnote_lines: frozenset[int] = frozenset()
    columns: tuple[int, ...] | None = None

    @property
    def display_name(self) -> str:
        return self.name or self.path.rsplit("/", 1)[-1]
