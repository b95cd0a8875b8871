"""The WikiText-2 ingest on small corpora: filters, bad input, rejects, counts, layouts and errors."""

import json

import pytest

from kflow.components.datasets.wikitext2.ingest.component import WikiText2Ingest
from kflow.components.datasets.wikitext2.ingest.executor import Filters, source_files
from tests.components.datasets.wikitext2.ingest.conftest import LONG, ingest, read_split, write_corpus

TRAIN = [
    b"",
    b" = Valkyria Chronicles III = ",
    b"",
    b" " + LONG.encode(),
    b" = = Gameplay = = ",
    b" short line .",
    b" " + LONG.encode() + b"caf\xe9 in latin-1 .",  # Not UTF-8: invalid.
    b" " + LONG.encode(),  # An exact repeat of line 4.
    b" " + (LONG + "second paragraph , with \xe9 accents .").encode(),
]
VALID = [b" " + LONG.encode() + b"valid .", b""]
TEST = [b" = Heading = ", b" " + LONG.encode() + b"test ."]


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "wikitext-2", TRAIN, VALID, TEST)


def test_filters_split_and_account_for_every_line(corpus, tmp_path):
    summary, examples, rejects, schema = ingest(
        tmp_path / "out", source_path=str(corpus), max_invalid_fraction=0.2, shards_per_split=2
    )
    stats = examples.stats
    assert stats["read"] == len(TRAIN) + len(VALID) + len(TEST) == 13
    assert stats["accepted"] == {"train": 3, "eval": 1, "test": 1}
    assert stats["invalid"] == {"undecodable": 1}
    assert stats["filtered"] == {"blank": 3, "heading": 3, "too_short": 1}
    assert stats["rejected"] == {"blank": 3, "heading": 3, "undecodable": 1, "too_short": 1}
    assert stats["read"] == sum(stats["accepted"].values()) + sum(stats["rejected"].values())
    assert summary["train"] == 3 and summary["invalid"] == 1 and summary["filtered"] == 7

    entries = rejects.read()
    bad = [entry for entry in entries if entry["reason"] == "undecodable"]
    assert len(bad) == 1 and bad[0]["kind"] == "invalid" and bad[0]["position"] == "train.txt:7"
    assert "caf\\xe9" in bad[0]["record"]
    heading = next(entry for entry in entries if entry["position"] == "train.txt:2")
    assert heading["reason"] == "heading" and heading["kind"] == "filtered"
    assert heading["record"] == " = Valkyria Chronicles III = "

    train = read_split(examples, schema, "train")
    texts = sorted(record["text"].decode() for record in train)
    assert texts[0] == LONG.strip()
    assert any("\xe9 accents" in text for text in texts)
    assert len(list(examples.split_uri("train").glob("data_tfrecord-*-of-00002.gz"))) == 2
    assert [record["text"] for record in read_split(examples, schema, "test")] == [(LONG + "test .").encode()]
    assert "text" in schema.file.read_text()


def test_deduplicate_and_configurable_filters(corpus, tmp_path):
    _, examples, _, _ = ingest(tmp_path / "dedup", source_path=str(corpus), deduplicate=True, max_invalid_fraction=0.2)
    assert examples.stats["accepted"]["train"] == 2
    assert examples.stats["filtered"]["duplicate"] == 1

    _, examples, rejects, _ = ingest(
        tmp_path / "loose",
        source_path=str(corpus),
        min_chars=1,
        drop_headings=False,
        drop_blank=False,
        max_chars=140,
        max_invalid_fraction=0.2,
    )
    stats = examples.stats
    assert stats["filtered"] == {"empty": 3, "too_long": 1}  # Blank lines are never written.
    assert stats["accepted"] == {"train": 5, "eval": 1, "test": 2}  # Headings, the short line, 2 long lines.
    assert stats["read"] == sum(stats["accepted"].values()) + sum(stats["rejected"].values())


def test_too_many_invalid_lines_fail_pointing_at_the_rejects(corpus, tmp_path):
    with pytest.raises(ValueError, match=r"1 of 6 records are invalid .*undecodable: 1.*rejects\.jsonl"):
        ingest(tmp_path / "strict", source_path=str(corpus))
    # Policy-filtered lines count neither way: 7 of 13 are filtered, 1 of the other 6 is invalid (16.7 %).
    summary, _, rejects, _ = ingest(tmp_path / "ok", source_path=str(corpus), max_invalid_fraction=0.2)
    assert summary["filtered"] == 7
    assert sum(1 for line in rejects.file.read_text().splitlines() if json.loads(line)["kind"] == "filtered") == 7


def test_official_tokens_layout_in_a_subfolder_and_max_records(tmp_path):
    names = {split: f"wiki.{split}.tokens" for split in ("train", "valid", "test")}
    write_corpus(tmp_path / "zip" / "wikitext-2", TRAIN, VALID, TEST, names)
    _, examples, _, _ = ingest(tmp_path / "out", source_path=str(tmp_path / "zip"), max_records=4, min_chars=1)
    assert examples.stats["read"] == 4 + 2 + 2
    assert examples.stats["accepted"] == {"train": 1, "eval": 1, "test": 1}


def test_bad_parameters_and_sources_are_explained(corpus, tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="cannot use the split"):
        ingest(tmp_path / "a", source_path=str(corpus), split={"train": 8, "eval": 1, "test": 1})
    with pytest.raises(ValueError, match="source_format must be one of auto, download"):
        ingest(tmp_path / "b", source_path=str(corpus), source_format="csv")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="does not hold the WikiText-2 files"):
        ingest(tmp_path / "c", source_path=str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="max_chars .* is smaller than min_chars"):
        ingest(tmp_path / "d", source_path=str(corpus), max_chars=50)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KFLOW_DATA_DIR", str(tmp_path / "data"))
    with pytest.raises(FileNotFoundError, match=f"in {tmp_path / 'data'}/wikitext-2"):
        ingest(tmp_path / "e")
    (tmp_path / "data").mkdir()
    write_corpus(tmp_path / "data" / "wikitext-2", TRAIN, VALID, TEST)
    summary, _, _, _ = ingest(tmp_path / "f", max_invalid_fraction=0.2)
    assert summary["read"] == 13


def test_filters_reason_order():
    filters = Filters()
    assert filters.reason("   ") == "blank"
    assert filters.reason(" = = Sub = = ") == "heading"
    assert filters.reason(" x" * 50) == "too_short"  # 100 characters: the guide keeps len > 100.
    assert filters.reason(" x" * 51) is None


def test_component_spec():
    parameters = WikiText2Ingest.spec.parameters
    assert parameters["min_chars"].default == 101
    assert parameters["deduplicate"].default is False
    assert set(WikiText2Ingest.spec.outputs) == {"examples", "schema", "rejects"}


def test_text_to_score_is_every_non_blank_line_keyed_by_its_place(tmp_path):
    """kflow predict's reading (the one split `score`): a folder's text files whatever their layout, no training
    filter but blank lines (kept as rejects), each line keyed FILE:LINE, the schema without a label."""
    from kflow.components.util.schema import annotation_tags, load_schema

    folder = tmp_path / "new"
    folder.mkdir()
    (folder / "a.txt").write_text("The [MASK] river .\n\n = Heading = \nshort\n")
    (folder / "b.tokens").write_bytes(b"caf\xc3\xa9 [MASK]\n\xff bad\n")
    (folder / "notes.md").write_text("not read: no text file suffix\n")
    summary, examples, rejects, schema = ingest(
        tmp_path / "out", source_path=str(folder), split={"score": 1}, max_invalid_fraction=0.5
    )
    records = {r["key"].decode(): r["text"].decode() for r in read_split(examples, schema, "score")}
    assert records == {"a.txt:1": "The [MASK] river .", "a.txt:3": "= Heading =", "a.txt:4": "short",
                       "b.tokens:1": "café [MASK]"}  # fmt: skip
    assert summary["read"] == 6 == summary["score"] + summary["rejected"]
    reasons = sorted((r["position"], r["reason"]) for r in rejects.read())
    assert reasons == [("a.txt:2", "blank"), ("b.tokens:2", "undecodable")]
    proto = load_schema(schema.file)
    assert [f.name for f in proto.feature] == ["text", "key"] and annotation_tags(proto, "key")["role"] == "key"

    # A glob's files of one name in two folders are told apart by their paths.
    for name in ("x", "y"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "new.txt").write_text("a [MASK] .\n")
    _, examples, _, schema = ingest(tmp_path / "glob", source_path=str(tmp_path / "*" / "new.txt"), split={"s": 1})
    keys = sorted(r["key"].decode() for r in read_split(examples, schema, "s"))
    assert keys == [f"{tmp_path / name / 'new.txt'}:1" for name in ("x", "y")]
    with pytest.raises(ValueError, match="matches no text file"):
        ingest(tmp_path / "none", source_path=str(tmp_path / "x" / "*.csv"), split={"score": 1})
    # The files a declared scoring node's cache key fingerprints: those it reads.
    found = source_files(source_path=str(folder), split={"score": 1})
    assert found == [folder / "a.txt", folder / "b.tokens"]
