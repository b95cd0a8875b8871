"""Cutting CSV bytes into records: quoted newlines, unterminated quotes, byte ranges that agree with one pass."""

import csv
import gzip
import io

import pytest

from kflow.components.datasets.csv.ingest import records
from kflow.components.datasets.csv.ingest.records import cut
from kflow.components.ingest.compressed import open_source

DATA = b'a,b\n1,"two\nlines"\n\n3,"x""y"\n4,"never closed\n5,five\n6,six\n'


def test_quoted_newlines_blank_lines_and_an_unterminated_quote():
    got = list(cut(io.BytesIO(DATA), b'"'))
    assert [(r.line, r.next_line, r.unterminated) for r in got] == [
        (1, 2, False),
        (2, 4, False),  # Two lines; the blank line 4 is no record.
        (5, 6, False),
        (6, 7, True),  # Its quote never closes: only line 6 is lost ...
        (7, 8, False),  # ... and the lines after it are records again.
        (8, 9, False),
    ]
    assert got[1].raw == b'1,"two\nlines"\n'
    assert got[3].raw == b'4,"never closed\n'
    assert [DATA[r.start : r.end] for r in got if not r.unterminated] == [r.raw for r in got if not r.unterminated]


def test_without_a_quote_character_every_line_is_a_record():
    assert [r.raw for r in cut(io.BytesIO(b'1,"a\n2,b"\n'), None)] == [b'1,"a\n', b'2,b"\n']


@pytest.mark.parametrize("boundary", range(1, 7))
def test_a_byte_range_from_a_record_boundary_gives_the_same_records(boundary):
    whole = list(cut(io.BytesIO(DATA), b'"'))
    first, rest = whole[:boundary], whole[boundary:]
    end = first[-1].end
    head = list(cut(io.BytesIO(DATA), b'"', end=end))
    tail = list(cut(io.BytesIO(DATA), b'"', start=end, first_line=first[-1].next_line))
    assert head == first
    assert tail == rest


def test_a_quote_left_open_stops_after_max_record_lines(monkeypatch):
    monkeypatch.setattr(records, "MAX_RECORD_LINES", 3)
    data = b'1,"open\n2\n3\n4,"x"\n'
    got = list(cut(io.BytesIO(data), b'"'))
    assert [(r.line, r.unterminated) for r in got] == [(1, True), (2, False), (3, False), (4, False)]


def test_gzip_is_told_by_its_bytes_and_read_from_an_offset(tmp_path):
    path = tmp_path / "data.csv"  # No .gz suffix: the magic bytes decide.
    path.write_bytes(gzip.compress(DATA))
    with open_source(str(path)) as stream:
        whole = list(cut(stream, b'"'))
    with open_source(str(path)) as stream:
        tail = list(cut(stream, b'"', start=whole[2].start, first_line=whole[2].line))
    assert tail == whole[2:]


def test_a_stray_quote_in_an_unquoted_field_is_a_character_and_every_line_a_record():
    """`5'11"` opens nothing: the lines after it are records of their own, as csv readers read them."""
    data = b'name,height\nann,5\'11"\nbob,6\'0\ncid,"5\'9"\ndan,"two\nlines"\neve,5\'2"\n'
    got = list(cut(io.BytesIO(data), b'"'))
    assert [r.raw for r in got] == [
        b"name,height\n", b"ann,5'11\"\n", b"bob,6'0\n", b"cid,\"5'9\"\n", b'dan,"two\nlines"\n', b"eve,5'2\"\n",
    ]  # fmt: skip
    assert not any(r.unterminated for r in got)
    assert [row for row in csv.reader(io.StringIO(data.decode()))][1:] == [
        ["ann", "5'11\""],
        ["bob", "6'0"],
        ["cid", "5'9"],
        ["dan", "two\nlines"],
        ["eve", "5'2\""],
    ]  # fmt: skip  (what csv readers make of the same bytes: the cut agrees)
