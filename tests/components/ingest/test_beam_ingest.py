"""The shared ingest pipeline's pieces that keep memory flat: the split found from a histogram of key hashes
(equal to sorting every key in memory), the staging folder under --temp_location, shards merged from parts."""

from __future__ import annotations

import json
import random
from collections import Counter

import numpy as np
import tensorflow as tf

from kflow.components.ingest import beam_ingest, ingest_options, split_plan
from kflow.components.ingest.ingest_staging import Staging
from kflow.components.ingest.split_plan import STABLE_AT, StratifiedPlan
from kflow.pipeline.dsl.artifacts import Examples, Rejects


def histogram_cuts(plan: StratifiedPlan, items: list[tuple[str, str]], chunk: int) -> split_plan.SplitCuts:
    """The pipeline's way, chunk by chunk: sparse histograms merged, cut ranks, keys in the cut buckets."""
    merge = beam_ingest._MergeHistograms()
    accumulators = []
    staged_chunks = []
    for start in range(0, len(items), chunk):
        staged = sorted((split_plan.sort_key_of(key), group) for key, group in items[start : start + chunk])
        staged_chunks.append(staged)
        by_group: dict[str, list[int]] = {}
        for (hashed, _), group in staged:
            by_group.setdefault(group, []).append(hashed >> (64 - split_plan.BUCKET_BITS))
        sparse = {group: np.unique(buckets, return_counts=True) for group, buckets in by_group.items()}
        accumulators.append(merge.add_input(merge.create_accumulator(), sparse))
    wanted = plan.cut_ranks(merge.extract_output(merge.merge_accumulators(accumulators)))
    buckets = {(group, bucket) for group, cuts in wanted.items() for _, _, bucket, _ in cuts}
    at_cuts = [
        (group, sort_key[0] >> (64 - split_plan.BUCKET_BITS), sort_key)
        for staged in staged_chunks
        for sort_key, group in staged
        if (group, sort_key[0] >> (64 - split_plan.BUCKET_BITS)) in buckets
    ]
    return split_plan.split_cuts(wanted, at_cuts)


def test_the_histogram_split_equals_sorting_every_key():
    rng = random.Random(3)
    # Groups of unequal sizes; a fifth of the records repeat a content hash (ties broken by position).
    items = [(f"{rng.getrandbits(40):x}|row{i}", rng.choice("aab")) for i in range(5000)]
    items += [(f"same|row{i}", "c") for i in range(700)]
    rng.shuffle(items)
    for stable in (False, True):  # by quota (an image folder's, Quora's), by hash ranges (a table's)
        plan = StratifiedPlan({"train": 8, "eval": 1, "test": 1}, stable=stable)
        whole = plan(items)
        chunked = histogram_cuts(plan, items, chunk=333)
        assert chunked == whole
        counts = {group: {"train": 0, "eval": 0, "test": 0} for group in "abc"}
        for key, group in items:
            counts[group][chunked(key, group)] += 1
        for group in "ab":
            by_split, total = counts[group], sum(counts[group].values())
            if not stable:  # Quotas in name order: eval, test, train.
                assert by_split["eval"] == round(total / 10)
                assert by_split["test"] == round(total * 2 / 10) - round(total / 10)
            else:  # a share give or take the hash's chance: within 4 binomial deviations
                for split, share in (("eval", 0.1), ("test", 0.1), ("train", 0.8)):
                    assert abs(by_split[split] - total * share) < 4 * (total * share * (1 - share)) ** 0.5, counts
        if stable:
            assert sorted(counts["c"].values()) == [0, 0, 700]  # equal records stay together


def test_a_small_tables_splits_are_its_shares_to_a_record():
    """Below STABLE_AT records a table is cut by quota: 5 classes of 3 rows still give eval and test rows."""
    items = [(f"row{i}", "abcde"[i % 5]) for i in range(15)]
    assert len(items) < STABLE_AT
    split = StratifiedPlan({"train": 8, "eval": 1, "test": 1}, stable=True)(items)
    got = Counter(split(key, group) for key, group in items)
    assert got == {"train": 12, "eval": 2, "test": 1}


def test_a_record_of_a_large_group_keeps_its_split_as_the_table_grows():
    """TFX ExampleGen's hash buckets: a record's split is its hash's, so a retrain on the grown table tests on none
    of the rows the earlier model trained on (a user trial: a table of 1,200 rows grown to 2,400, cut by quota, moved
    9 of the earlier training rows into the new test split, where the earlier model was the baseline)."""
    rng = random.Random(7)
    first = [(f"{rng.getrandbits(40):x}|row{i}", rng.choice("ab")) for i in range(1200)]
    grown = first + [(f"{rng.getrandbits(40):x}|new{i}", rng.choice("ab")) for i in range(1200)]
    plan = StratifiedPlan({"train": 8, "eval": 1, "test": 1}, stable=True)  # a table's
    before, after = histogram_cuts(plan, first, chunk=250), histogram_cuts(plan, grown, chunk=250)
    moved = [key for key, group in first if before(key, group) != after(key, group)]
    assert moved == []


def test_a_temp_location_holds_the_staged_records_until_the_run_ends(tmp_path):
    temp = tmp_path / "beam-temp"
    records = [(f"k{i:03d}", "train" if i % 3 else "eval", b"record" + bytes([i])) for i in range(50)]

    def process(chunk):
        return records[chunk * 10 : chunk * 10 + 10], []

    examples, rejects = Examples(tmp_path / "examples"), Rejects(tmp_path / "rejects")
    with Staging([f"--temp_location={temp}"]) as staging:
        assert staging.root.startswith(str(temp)) and not staging.local
        stats = beam_ingest.run_ingest_pipeline(
            chunks=range(5), process_chunk=process, splits=("train", "eval"), shards=3, read=50,
            examples=examples, rejects=rejects, staging=staging,
        )  # fmt: skip
        assert any(name.startswith("part-train-") for name in (path.name for path in temp.rglob("*")))
    assert list(temp.iterdir()) == []
    assert stats["accepted"] == {"train": 33, "eval": 17}
    for split, expected in (("train", 33), ("eval", 17)):
        written = []
        for shard in range(3):
            path = examples.split_uri(split) / f"data_tfrecord-{shard:05d}-of-00003.gz"
            shard_records = [record.numpy() for record in tf.data.TFRecordDataset(str(path), "GZIP")]
            keys = [f"k{record[-1]:03d}" for record in shard_records]
            assert keys == sorted(keys)  # Merged from the chunks' parts in key order.
            assert all(split_plan.shard_of(split_plan.stable_hash(key), 3) == shard for key in keys)
            written += shard_records
        assert len(written) == expected
    assert json.loads((examples.path / "stats.json").read_text())["read"] == 50


def test_automatic_shard_counts_follow_each_splits_bytes():
    plan = StratifiedPlan({"train": 8, "eval": 1, "test": 1})
    mb = 2**20
    assert split_plan.shard_counts({"a": 300 * mb, "b": 300 * mb}, 0, ("train", "eval", "test"), plan) == {
        "train": 2,  # 480 MB of 600 by quota
        "eval": 1,
        "test": 1,
    }
    assert split_plan.shard_counts({"a": 3000 * mb}, 0, ("train", "eval", "test"), plan)["train"] == 10
    # Without a plan a group is its split; an empty split still gets its one file; a fixed count is kept.
    assert split_plan.shard_counts({"train": 700 * mb}, 0, ("train", "valid"), None) == {"train": 3, "valid": 1}
    assert split_plan.shard_counts({"train": 700 * mb}, 4, ("train", "valid"), None) == {"train": 4, "valid": 4}
    # With 2 ingest workers a split of more than 16 MB gets a shard each, so that both write; a fixed count stays.
    sizes = {"a": 100 * mb, "b": 50 * mb}  # train 120 MB, eval and test 15 MB each
    assert split_plan.shard_counts(sizes, 0, ("train", "eval", "test"), plan, workers=2) == {
        "train": 2,
        "eval": 1,
        "test": 1,
    }
    assert split_plan.shard_counts(sizes, 3, ("train", "eval"), plan, workers=2) == {"train": 3, "eval": 3}
    assert ingest_options.direct_workers(["--direct_running_mode=multi_processing", "--direct_num_workers=2"]) == 2
    assert ingest_options.direct_workers(["--direct_num_workers=2"]) == 1  # In memory: one worker whatever the count.


def test_an_automatic_ingest_writes_more_shards_for_a_bigger_split(tmp_path, monkeypatch):
    monkeypatch.setattr(split_plan, "SHARD_BYTES", 1000)  # The pipeline runs in this process (DirectRunner).
    records = [(f"k{i:03d}", "x" if i % 2 else "y", b"r" * 40 + bytes([i])) for i in range(200)]
    examples, rejects = Examples(tmp_path / "examples"), Rejects(tmp_path / "rejects")
    stats = beam_ingest.run_ingest_pipeline(
        chunks=range(4), process_chunk=lambda chunk: (records[chunk * 50 : chunk * 50 + 50], []),
        splits=("train", "eval", "test"), shards=0, read=200, examples=examples, rejects=rejects,
        plan=StratifiedPlan({"train": 8, "eval": 1, "test": 1}),
    )  # fmt: skip
    assert stats["accepted"] == {"train": 160, "eval": 20, "test": 20}
    # 200 records of 41 bytes: 8,200 bytes, 6,560 of them train's by quota → 7 shards; eval and test 820 → 1.
    shards = {split: sorted(path.name for path in examples.split_uri(split).iterdir()) for split in stats["accepted"]}
    assert {split: len(names) for split, names in shards.items()} == {"train": 7, "eval": 1, "test": 1}
    assert shards["train"][-1] == "data_tfrecord-00006-of-00007.gz"
    written = sum(
        1 for path in examples.split_uri("train").iterdir() for _ in tf.data.TFRecordDataset(str(path), "GZIP")
    )
    assert written == 160


def test_a_large_input_runs_on_every_core_unless_the_options_choose(monkeypatch):
    monkeypatch.setattr(ingest_options.os, "sched_getaffinity", lambda _: {0, 1, 2})
    big = ingest_options.PARALLEL_RECORDS
    assert ingest_options.data_beam_args([], big - 1) == []
    assert ingest_options.data_beam_args(["--temp_location=/t"], big) == [
        "--temp_location=/t",
        "--direct_running_mode=multi_processing",
        "--direct_num_workers=3",
    ]
    for chosen in (["--direct_num_workers=1"], ["--direct_running_mode", "in_memory"], ["--runner=PortableRunner"]):
        assert ingest_options.data_beam_args(chosen, big) == chosen
    monkeypatch.setattr(ingest_options.os, "sched_getaffinity", lambda _: {0})
    assert ingest_options.data_beam_args([], big) == []
