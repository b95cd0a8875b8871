"""TFRecord files written and read without TensorFlow: what TensorFlow reads and writes, crcs checked."""

from __future__ import annotations

import gzip
import io
import threading

import pytest
import tensorflow as tf
from apache_beam.io.tfrecordio import _TFRecordUtil

from kflow.components.ingest.tfrecord_file import _FLUSH_BYTES, TFRecordWriter, frame, read_records

RECORDS = [b"", b"a", bytes(range(256)) * 40, *(f"record {i}".encode() * (i % 7) for i in range(3000))]
LARGE = [bytes([i]) * 400_000 for i in range(4)]  # Past _FLUSH_BYTES: several compressed blocks in one stream.


@pytest.mark.parametrize("compressed", [True, False])
def test_tensorflow_reads_every_record_written(tmp_path, compressed):
    path = tmp_path / "data.tfrecord"
    with TFRecordWriter(path, gzip=compressed) as writer:
        for record in RECORDS + LARGE:
            writer.write(record)
    assert sum(map(len, RECORDS + LARGE)) > _FLUSH_BYTES
    read = tf.data.TFRecordDataset(str(path), compression_type="GZIP" if compressed else "")
    assert list(read.as_numpy_iterator()) == RECORDS + LARGE
    again = tmp_path / "again.tfrecord"
    with TFRecordWriter(again, gzip=compressed) as writer:
        for record in RECORDS + LARGE:
            writer.write(record)
    assert again.read_bytes() == path.read_bytes()  # No time or name in the gzip header: the same bytes.


def test_records_tensorflow_wrote_read_back_with_offsets(tmp_path):
    path = tmp_path / "tf.tfrecord.gz"
    with tf.io.TFRecordWriter(str(path), options="GZIP") as writer:
        for record in RECORDS:
            writer.write(record)
    with gzip.open(path) as stream:
        read = list(read_records(stream))
    assert [record for _, record in read] == RECORDS
    offsets = [offset for offset, _ in read]
    assert offsets[:3] == [0, 16, 33]  # 16 bytes of framing a record.


def test_a_broken_record_ends_the_stream_with_none(tmp_path):
    path = tmp_path / "plain.tfrecord"
    with TFRecordWriter(path, gzip=False) as writer:
        for record in (b"first", b"second", b"third"):
            writer.write(record)
    data = bytearray(path.read_bytes())
    data[16 + 5 + 12 + 2] ^= 0xFF  # A byte of the second record's data: its crc no longer matches.
    assert list(read_records(io.BytesIO(bytes(data)))) == [(0, b"first"), (21, None)]
    assert list(read_records(io.BytesIO(bytes(data[:30])))) == [(0, b"first"), (21, None)]  # Truncated.


def test_a_failed_write_is_raised_and_the_compressing_threads_end():
    """A full disk (/dev/full) fails the writes: the caller gets the error, no compressing thread is left."""
    with pytest.raises(OSError, match="No space left"), TFRecordWriter("/dev/full") as writer:
        for record in LARGE * 8:  # Blocks past the writer's queue: a write waits on a thread that has failed.
            writer.write(record)
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("tfrecord-gzip")]


def test_framed_batches_are_beams_records(tmp_path):
    """`frame` (a batch at a time, crcs masked in NumPy) gives Beam's per-record framing byte for byte."""
    expected = io.BytesIO()
    for record in RECORDS:
        _TFRecordUtil.write_record(expected, record)
    assert frame(RECORDS) == expected.getvalue()


@pytest.mark.parametrize("threads", [1, 3])
def test_the_bytes_do_not_depend_on_the_compressing_threads(tmp_path, threads):
    """Blocks deflated apart and joined: one gzip stream, the same bytes however many threads deflate them."""
    paths = [tmp_path / "two.gz", tmp_path / f"{threads}.gz"]
    for path, count in zip(paths, (2, threads), strict=True):
        with TFRecordWriter(path, gzip_threads=count) as writer:
            for record in (RECORDS + LARGE) * 2:
                writer.write(record)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    with gzip.open(paths[1]) as stream:
        assert [record for _, record in read_records(stream)] == (RECORDS + LARGE) * 2
