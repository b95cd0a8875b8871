"""The driver's block scan finds the rows, chunks, unterminated quotes and repeated qids that the line-by-line
`cut` finds, on random files full of what breaks a CSV, with blocks small enough that rows cross them."""

import random

import pytest

from kflow.components.datasets.quora.ingest import executor, row_blocks
from kflow.components.datasets.quora.ingest.executor import cut, scan
from kflow.components.ingest.ingest_records import INVALID, make_reject, raw_text
from kflow.components.ingest.repeats import RepeatFinder

PIECES = [b"plain words", b"a, comma", b'"quoted, with ""escapes"""', b'"open quote', b'close"', b"", b"   ", b"\r"]


def random_line(rng: random.Random, qids: list[bytes]) -> bytes:
    kind = rng.random()
    if kind < 0.05:
        return rng.choice([b"", b"  \t", b"\r", b"\x0b"])  # Blank lines.
    if kind < 0.1:
        return rng.choice(PIECES) + b" " + rng.choice(PIECES)  # A continuation, or a line that is no row.
    qid = rng.choice(qids) if qids and rng.random() < 0.1 else f"{rng.getrandbits(80):020x}".encode()
    qids.append(qid)
    text = b" ".join(rng.choice(PIECES) for _ in range(rng.randint(0, 3)))
    if rng.random() < 0.05:
        return qid  # No comma at all.
    return qid + b"," + text + b"," + rng.choice([b"0", b"1", b"x"])


def reference_scan(path, max_records=None):
    """The scan as the line-by-line `cut` does it (the workers' way)."""
    chunks, found, read, qids = [], [], 0, RepeatFinder()
    with path.open("rb") as file:
        header = file.readline()
        first, count = None, 0
        for line, offset, raw, unterminated in cut(file, 2, len(header)):
            if max_records is not None and read >= max_records:
                break
            read += 1
            if count == 0:
                first = (offset, line)
            count += 1
            if unterminated:
                found.append(make_reject("unterminated_quote", INVALID, f"{path.name}:{line}", raw_text(raw)))
            else:
                qids.add(raw.split(b",", 1)[0], line)
            if count == executor.CHUNK_ROWS:
                chunks.append((first[0], offset + len(raw), first[1], count))
                count = 0
        if count:
            chunks.append((first[0], None, first[1], count))
    return chunks, found, read, sorted(qids.repeats())


@pytest.mark.parametrize("seed", range(40))
def test_the_block_scan_is_the_line_by_line_scan(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    monkeypatch.setattr(row_blocks, "BLOCK_BYTES", rng.choice([7, 64, 300, 4096]))
    monkeypatch.setattr(executor, "CHUNK_ROWS", rng.choice([1, 3, 17, 1000]))
    qids: list[bytes] = []
    lines = [random_line(rng, qids) for _ in range(rng.randint(0, 300))]
    ending = rng.choice([b"\n", b"", b"\r\n"])
    path = tmp_path / "train.csv"
    path.write_bytes(b"qid,question_text,target\n" + b"\n".join(lines) + (ending if lines else b""))
    max_records = rng.choice([None, None, rng.randint(1, 200)])
    chunks, found, read = scan(path, max_records)
    expected_chunks, expected_found, expected_read, repeats = reference_scan(path, max_records)
    assert read == expected_read
    assert found == expected_found
    assert [(chunk.start, chunk.end, chunk.first_line, chunk.count) for chunk in chunks] == expected_chunks
    assert sorted(line for chunk in chunks for line in chunk.duplicate_lines) == repeats


def test_a_row_open_across_many_blocks_stays_one_row(tmp_path, monkeypatch):
    monkeypatch.setattr(row_blocks, "BLOCK_BYTES", 16)
    long_question = b"\n".join(b"line %d of an open question" % number for number in range(50))
    path = tmp_path / "train.csv"
    path.write_bytes(b"qid,question_text,target\n" + b"%020x," % 1 + b'"' + long_question + b'",1\n%020x,next,0\n' % 2)
    chunks, found, read = scan(path)
    assert read == 2 and not found
    assert [(chunk.first_line, chunk.count) for chunk in chunks] == [(2, 2)]
