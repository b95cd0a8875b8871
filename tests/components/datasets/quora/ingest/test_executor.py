"""The Quora ingest on small CSV files: real-world CSV problems, rejects, counts, stratified split, errors."""

import pytest
import tensorflow as tf

from kflow.components.datasets.quora.ingest import executor
from kflow.components.datasets.quora.ingest.component import QuoraIngest
from kflow.components.datasets.quora.ingest.executor import run, scan
from kflow.components.ingest.split_plan import StratifiedPlan
from kflow.components.util.schema import feature_spec, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema


def qid(number: int) -> bytes:
    return f"{number:020x}".encode()


ROWS = [
    qid(1) + b",How do plants grow?,0",
    qid(2) + b',"Why, when ""quoted"", does it\nspan two lines?",1',
    qid(3) + b",,0",  # Empty question.
    qid(4) + b',"   ",0',  # Whitespace-only question.
    qid(5) + b",Is this labelled?,yes",  # Label other than 0/1.
    qid(1) + b",A repeated qid?,0",  # Duplicate qid.
    qid(6) + b",Caf\xe9 in latin-1?,0",  # Not UTF-8.
    qid(7) + b"," + b"Very long question " * 5 + b"?,0",  # Over max_chars=60: filtered.
    qid(8) + b',"Is this quote ever closed?,0',  # Unterminated quote: the next line starts a row.
    qid(9) + b",What is a normal question?,1",
    qid(10) + b",Too,many,fields,0",
]
# The file's line of each row: the header is line 1, row 2 spans two lines.
LINES = [2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13]


def write_csv(path, rows, header=b"qid,question_text,target"):
    path.write_bytes(b"\n".join([header, *rows]) + b"\n")
    return path


def ingest(tmp_path, **parameters):
    examples, schema, rejects = (
        Examples(tmp_path / "examples"),
        Schema(tmp_path / "schema"),
        Rejects(tmp_path / "rejects"),
    )
    summary = run(examples=examples, schema=schema, rejects=rejects, **parameters)
    return summary, examples, rejects, schema


def read_all(examples, schema):
    spec = feature_spec(load_schema(schema.file))
    records = {}
    for split in examples.stats["accepted"]:
        files = sorted(str(path) for path in examples.split_uri(split).glob("*.gz"))
        records[split] = [
            {name: value.numpy() for name, value in tf.io.parse_single_example(serialized, spec).items()}
            for serialized in tf.data.TFRecordDataset(files, compression_type="GZIP")
        ]
    return records


def test_bad_rows_are_rejected_with_their_reason_and_counts_balance(tmp_path):
    csv_path = write_csv(tmp_path / "train.csv", ROWS)
    summary, examples, rejects, schema = ingest(
        tmp_path / "out", source_path=str(csv_path), max_chars=60, max_invalid_fraction=1.0
    )
    stats = examples.stats
    assert stats["read"] == len(ROWS)
    assert stats["invalid"] == {
        "bad_label": 1,
        "duplicate_qid": 1,
        "empty_text": 2,
        "undecodable": 1,
        "unterminated_quote": 1,
        "wrong_field_count": 1,
    }
    assert stats["filtered"] == {"too_long": 1}
    assert sum(stats["accepted"].values()) == 3
    assert stats["read"] == sum(stats["accepted"].values()) + sum(stats["rejected"].values())
    assert summary["invalid"] == 7 and summary["filtered"] == 1

    by_position = {entry["position"]: entry for entry in rejects.read()}
    assert by_position["train.csv:11"]["reason"] == "unterminated_quote"
    assert by_position["train.csv:11"]["record"].startswith(qid(8).decode())
    assert by_position["train.csv:7"]["reason"] == "bad_label" and by_position["train.csv:7"]["label"] == "yes"
    assert by_position["train.csv:8"]["reason"] == "duplicate_qid"
    assert by_position["train.csv:9"]["reason"] == "undecodable" and "\\xe9" in by_position["train.csv:9"]["record"]
    assert by_position["train.csv:10"]["kind"] == "filtered"
    assert {by_position[f"train.csv:{line}"]["reason"] for line in (5, 6)} == {"empty_text"}

    records = [record for split in read_all(examples, schema).values() for record in split]
    by_qid = {record["qid"].decode(): record for record in records}
    assert set(by_qid) == {qid(1).decode(), qid(2).decode(), qid(9).decode()}
    assert by_qid[qid(2).decode()]["text"].decode() == 'Why, when "quoted", does it\nspan two lines?'
    assert by_qid[qid(2).decode()]["label"] == 1
    assert by_qid[qid(1).decode()]["text"] == b"How do plants grow?"


def test_too_many_invalid_rows_fail_pointing_at_the_rejects(tmp_path):
    csv_path = write_csv(tmp_path / "train.csv", ROWS)
    with pytest.raises(ValueError, match=r"7 of 10 records are invalid.*rejects\.jsonl"):
        ingest(tmp_path / "out", source_path=str(csv_path), max_chars=60)


def test_unterminated_quote_at_the_end_of_the_file(tmp_path):
    csv_path = write_csv(tmp_path / "train.csv", [qid(1) + b",Fine?,0", qid(2) + b',"Never closed,1', b"more text"])
    chunks, rejects, read = scan(csv_path)
    assert read == 2 and [(chunk.first_line, chunk.count) for chunk in chunks] == [(2, 2)]
    assert [(entry["reason"], entry["position"]) for entry in rejects] == [("unterminated_quote", "train.csv:3")]


def test_chunk_boundaries_change_nothing(tmp_path, monkeypatch):
    """Rows cut into chunks of 2 (quoted newlines, a repeated qid and an unterminated quote in other chunks
    than their neighbours) give the same Examples, rejects and counts as one chunk."""
    csv_path = write_csv(tmp_path / "train.csv", ROWS + [b"", qid(2) + b",Repeat of a two-line row?,0"])
    _, whole, whole_rejects, _ = ingest(tmp_path / "whole", source_path=str(csv_path), max_chars=60,
                                        max_invalid_fraction=1.0)  # fmt: skip
    monkeypatch.setattr(executor, "CHUNK_ROWS", 2)
    chunks, _, read = scan(csv_path)
    assert read == 12 and [chunk.count for chunk in chunks] == [2] * 6
    assert [line for chunk in chunks for line in sorted(chunk.duplicate_lines)] == [8, 15]
    _, chunked, chunked_rejects, _ = ingest(tmp_path / "chunked", source_path=str(csv_path), max_chars=60,
                                            max_invalid_fraction=1.0)  # fmt: skip
    assert chunked.stats == whole.stats and chunked.stats["read"] == 12
    assert chunked_rejects.file.read_text() == whole_rejects.file.read_text()
    for path in sorted(whole.path.rglob("*.gz")):
        assert path.read_bytes() == (chunked.path / path.relative_to(whole.path)).read_bytes()


def test_split_is_stratified_deterministic_and_independent_of_file_order(tmp_path):
    rows = [qid(number) + b",Question number %d?,%d" % (number, int(number % 10 == 0)) for number in range(1, 2001)]
    first = ingest(tmp_path / "a", source_path=str(write_csv(tmp_path / "a.csv", rows)))[1]
    second = ingest(tmp_path / "b", source_path=str(write_csv(tmp_path / "b.csv", rows[::-1])))[1]
    assert first.stats == second.stats
    assert first.stats["accepted"] == {"train": 1600, "eval": 200, "test": 200}
    split_of = {}
    for name, records in read_all(first, Schema(tmp_path / "a" / "schema")).items():
        positives = sum(int(record["label"]) for record in records)
        assert positives == len(records) // 10  # 10 % positive in every split, as in the whole.
        split_of.update({record["qid"]: name for record in records})
    for name, records in read_all(second, Schema(tmp_path / "b" / "schema")).items():
        assert all(split_of[record["qid"]] == name for record in records)


def test_stratified_plan_quota():
    items = [(f"q{i}", str(int(i < 30))) for i in range(1000)]
    assignment = StratifiedPlan({"train": 8, "eval": 1, "test": 1})(items)
    positives = {
        name: sum(1 for key, label in items if label == "1" and assignment(key, label) == name)
        for name in "train eval test".split()
    }
    assert positives == {"train": 24, "eval": 3, "test": 3}


def test_bad_parameters_and_sources_are_explained(tmp_path):
    csv_path = write_csv(tmp_path / "train.csv", ROWS[:2])
    with pytest.raises(ValueError, match=r"must give shares to train, eval and test.*missing \['test'\]"):
        ingest(tmp_path / "a", source_path=str(csv_path), split={"train": 9, "eval": 1})
    with pytest.raises(ValueError, match="must start with the header qid,question_text,target"):
        ingest(tmp_path / "b", source_path=str(write_csv(tmp_path / "bad.csv", ROWS[:2], header=b"id,text,label")))
    with pytest.raises(ValueError, match="source_format must be one of auto, csv, kaggle"):
        ingest(tmp_path / "c", source_path=str(csv_path), source_format="npz")
    folder = tmp_path / "folder"
    folder.mkdir()
    write_csv(folder / "train.csv", ROWS[:2])
    summary = ingest(tmp_path / "d", source_path=str(folder))[0]
    assert summary["read"] == 2


def test_component_spec():
    parameters = QuoraIngest.spec.parameters
    assert parameters["max_chars"].default == 1000
    assert parameters["split"].default == {"train": 8, "eval": 1, "test": 1}
    assert set(QuoraIngest.spec.outputs) == {"examples", "schema", "rejects"}


@pytest.mark.parametrize(
    "line",
    [
        *ROWS,
        b"",
        b"\r\n",
        qid(11) + b",Ends with CRLF?,1\r\n",
        qid(12) + b", padded , 0 ",
        qid(13) + b",NUL\x00inside,1",
        qid(14) + b",a\rb,1",  # A bare CR in an unquoted field: the CSV reader's error.
        qid(15) + b',unquoted"quote,1',
        b",,",
    ],
)
def test_a_plain_line_parses_as_the_csv_reader_parses_it(line):
    import csv
    import io

    parse = executor.ChunkProcessor(max_chars=60).parse
    try:
        text = line.decode("utf-8")
        rows = list(csv.reader(io.StringIO(text)))
    except (UnicodeDecodeError, csv.Error):
        rows = None
    if rows is None or len(rows) != 1 or len(rows[0]) != 3:
        record, problem = parse(line, False)
        assert record is None and problem[0] in ("undecodable", "wrong_field_count", "bad_csv")
        if problem[0] == "wrong_field_count" and rows is not None:
            assert problem[2] == {"fields": [len(row) for row in rows]}
        return
    record, problem = parse(line, False)
    qid_, question, target = (field.strip() for field in rows[0])
    if record is None:  # Three fields: refused only for what they hold.
        assert problem[0] in ("empty_qid", "bad_label", "empty_text", "too_long")
    else:
        assert record == (qid_, question, int(target))
