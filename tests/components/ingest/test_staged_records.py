"""The ingest's staged files: data, not code; every value back as written, in batches."""

from __future__ import annotations

import io
import pickle

import pytest

from kflow.components.ingest.staged_records import MAGIC, read_rows, write_rows

KINDS = ("u64", "str", "i64", "bytes")


def rows(count: int) -> list[tuple]:
    return [
        (
            (1 << 64) - 1 - index,
            f"clé-{index}|ü" * (index % 3) + "\0" * (index % 50 == 49),  # A NUL in some batches: lengths then.
            index - 1,
            bytes(range(index % 256)) * (index % 4),
        )
        for index in range(count)
    ]


@pytest.mark.parametrize(("count", "batch"), [(0, 32), (1, 32), (70, 32), (64, 32), (5, 1)])
def test_every_row_comes_back_as_written(count, batch):
    file = io.BytesIO()
    write_rows(file, rows(count), KINDS, batch)
    file.seek(0)
    assert list(read_rows(file, KINDS)) == rows(count)


def test_a_reader_holds_one_batch_and_a_short_file_is_an_error():
    file = io.BytesIO()
    write_rows(file, rows(70), KINDS, 32)
    data = file.getvalue()
    reader = read_rows(io.BytesIO(data), KINDS)
    assert next(reader) == rows(1)[0]
    with pytest.raises(ValueError, match="bytes short of its batch"):
        list(read_rows(io.BytesIO(data[:-5]), KINDS))


def test_a_pickle_is_refused_not_run(tmp_path):
    """A pickle planted where a staged file is expected runs nothing: it is not this format."""
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    planted = io.BytesIO(pickle.dumps([Payload()]))
    with pytest.raises(ValueError, match="not a kflow staged-records file"):
        list(read_rows(planted, KINDS))
    assert not marker.exists()
    written = io.BytesIO()
    write_rows(written, rows(2), KINDS, 32)
    assert written.getvalue().startswith(MAGIC) and b"\x80\x05" not in written.getvalue()[:8]
