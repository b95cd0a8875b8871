"""StatisticsGen, SchemaGen and ExampleValidator on hand-made Examples: the figures, the inferred schema,
and each anomaly the validator must find (a category not in train, a number out of range, drift, ...)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import text_format

from kflow.components.example_validator.executor import l_infinity
from kflow.components.example_validator.executor import run as validate
from kflow.components.schema_gen.executor import run as infer
from kflow.components.statistics_gen.executor import run as compute
from kflow.components.statistics_gen.statistics import SplitAccumulator
from kflow.components.util.schema import INFERRED_TAG, load_schema
from kflow.components.util.statistics_proto import feature_stats, read_split, value_counts
from kflow.pipeline.dsl.artifacts import ExampleAnomalies, Examples, ExampleStatistics, Schema


def example(**features) -> bytes:
    proto = tf.train.Example()
    for name, value in features.items():
        if value is None:
            continue
        if isinstance(value, str):
            proto.features.feature[name].bytes_list.value.append(value.encode())
        elif isinstance(value, float):
            proto.features.feature[name].float_list.value.append(value)
        else:
            proto.features.feature[name].int64_list.value.append(value)
    return proto.SerializeToString()


def rows(count, colours=("red", "green", "blue"), offset=0.0, seed=0):
    rng = np.random.default_rng(seed)
    return [
        {"colour": colours[i % len(colours)], "size": int(i % 7), "weight": float(rng.normal(10, 2) + offset),
         "note": None if i % 5 == 0 else f"n{i}"}
        for i in range(count)
    ]  # fmt: skip


def write_examples(root, splits):
    examples = Examples(root / "examples")
    for split, records in splits.items():
        folder = examples.split_uri(split)
        folder.mkdir(parents=True)
        with tf.io.TFRecordWriter(str(folder / "data_tfrecord-00000-of-00001.gz"), options="GZIP") as writer:
            for record in records:
                writer.write(example(**record))
    return examples


def checked(root, splits, **schema_options):
    examples = write_examples(root, splits)
    statistics, schema = ExampleStatistics(root / "statistics"), Schema(root / "schema")
    compute(examples=examples, statistics=statistics)
    infer(statistics=statistics, schema=schema, **schema_options)
    anomalies = ExampleAnomalies(root / "anomalies")
    summary = validate(statistics=statistics, schema=schema, anomalies=anomalies, on_anomaly="warn")
    return statistics, schema, anomalies, summary


def test_statistics_match_numpy_and_merge_like_one_pass(tmp_path):
    train = rows(200)
    statistics, _, _, _ = checked(tmp_path, {"train": train, "eval": rows(30, seed=1)})
    stats = feature_stats(read_split(statistics, "train"))
    weights = np.array([row["weight"] for row in train])
    num = stats["weight"].num_stats
    assert (num.mean, num.std_dev) == (pytest.approx(weights.mean()), pytest.approx(weights.std()))
    assert (num.min, num.max, num.median) == (pytest.approx(weights.min()), pytest.approx(weights.max()),
                                              pytest.approx(np.median(weights)))  # fmt: skip
    assert stats["size"].num_stats.num_zeros == sum(row["size"] == 0 for row in train)
    note = stats["note"].string_stats
    assert note.common_stats.num_missing == 40 and note.common_stats.num_non_missing == 160
    assert note.unique == 160
    assert value_counts(stats["colour"]) == {"red": 67, "green": 67, "blue": 66}
    assert [value.value for value in stats["colour"].string_stats.top_values] == ["green", "red", "blue"]
    assert (statistics.path / "statistics.html").read_text().count("<tr>") >= 2 * 5

    whole, first, second = SplitAccumulator(), SplitAccumulator(), SplitAccumulator()
    for index, record in enumerate(train):
        whole.add(example(**record))
        (first if index % 2 else second).add(example(**record))
    # The same proto, up to the last bits of the float sums (added in another order).
    assert rounded(first.merge(second).to_proto("train")) == rounded(whole.to_proto("train"))


def test_an_empty_split_has_statistics_of_no_example(tmp_path):
    statistics, _, _, summary = checked(tmp_path, {"train": rows(50), "eval": []})
    assert read_split(statistics, "eval").num_examples == 0 and not feature_stats(read_split(statistics, "eval"))
    assert read_split(statistics, "train").num_examples == 50
    # A second pass into the same folder, the eval split no longer empty: no statistics kept from the first.
    examples = write_examples(tmp_path / "again", {"train": rows(50), "eval": rows(5)})
    compute(examples=examples, statistics=statistics)
    assert read_split(statistics, "eval").num_examples == 5


def rounded(proto) -> str:
    return re.sub(r"-?\d+\.\d+(e-?\d+)?", lambda m: f"{float(m[0]):.9g}", text_format.MessageToString(proto))


def test_the_inferred_schema_keeps_the_ingest_tags_and_learns_domains_and_ranges(tmp_path):
    train = rows(100)
    examples = write_examples(tmp_path, {"train": train})
    statistics = ExampleStatistics(tmp_path / "statistics")
    compute(examples=examples, statistics=statistics)
    ingest_schema = Schema(tmp_path / "ingest_schema")
    ingest_schema.path.mkdir()
    ingest_schema.file.write_text('feature { name: "colour" type: BYTES annotation { tag: "role=label" } }')
    schema = Schema(tmp_path / "schema")
    summary = infer(statistics=statistics, schema=schema, ingest_schema=ingest_schema, max_string_domain=5)
    proto = load_schema(schema.file)
    features = {feature.name: feature for feature in proto.feature}
    assert [feature.name for feature in proto.feature] == ["colour", "note", "size", "weight"]
    assert list(features["colour"].annotation.tag) == ["role=label"]
    assert list(features["colour"].string_domain.value) == ["blue", "green", "red"]
    assert not features["note"].HasField("string_domain")  # 80 distinct values > 5
    assert features["colour"].presence.min_fraction == 1.0 and features["note"].presence.min_fraction == 0.0
    weights = [row["weight"] for row in train]
    span = max(weights) - min(weights)
    assert features["weight"].float_domain.max == pytest.approx(max(weights) + 0.5 * span)
    assert (features["size"].int_domain.min, features["size"].int_domain.max) == (-3, 9)  # 0..6 ± 3
    assert summary == {"features": 4, "inferred": True, "string_domains": 1, "ranges": 2}


def test_the_columns_that_name_records_get_no_range_or_domain(tmp_path):
    """New records bring new keys: a frozen copy of the inferred schema held the row names' range, so rows appended
    with the next row names were refused as out of range (a user trial, R's `rownames`)."""
    train = [{**row, "rownames": index + 1, "id": f"r{index % 40}"} for index, row in enumerate(rows(100))]
    examples = write_examples(tmp_path, {"train": train})
    statistics = ExampleStatistics(tmp_path / "statistics")
    compute(examples=examples, statistics=statistics)
    ingest_schema = Schema(tmp_path / "ingest_schema")
    ingest_schema.path.mkdir()
    ingest_schema.file.write_text(
        'feature { name: "id" type: BYTES annotation { tag: "role=key" } } '
        'feature { name: "rownames" type: INT annotation { tag: "role=row_names" } }'
    )
    schema = Schema(tmp_path / "schema")
    infer(statistics=statistics, schema=schema, ingest_schema=ingest_schema)
    features = {feature.name: feature for feature in load_schema(schema.file).feature}
    for name in ("id", "rownames"):
        assert not any(features[name].HasField(domain) for domain in ("int_domain", "string_domain")), features[name]
        assert features[name].presence.min_fraction == 1.0
    assert features["size"].HasField("int_domain") and features["colour"].HasField("string_domain")


def test_an_eval_split_with_a_new_category_and_numbers_out_of_range_is_flagged(tmp_path):
    evaluation = rows(60, colours=("red", "green", "purple"), offset=40.0, seed=2)
    _, _, anomalies, summary = checked(tmp_path, {"train": rows(200), "eval": evaluation, "test": rows(40, seed=3)})
    assert summary["train"] == 0 and summary["test"] == 0
    found = {(entry["feature"], entry["kind"]) for entry in anomalies.summary["splits"]["eval"]}
    assert found == {("colour", "unknown_category"), ("colour", "drift"), ("weight", "out_of_range")}
    unknown = next(e for e in anomalies.summary["splits"]["eval"] if e["kind"] == "unknown_category")
    assert unknown["values"] == ["purple"] and unknown["fraction"] == pytest.approx(20 / 60)
    from tensorflow_metadata.proto.v0 import anomalies_pb2

    proto = anomalies_pb2.Anomalies.FromString(anomalies.split_file("eval").read_bytes())
    reasons = {reason.type for info in proto.anomaly_info.values() for reason in info.reason}
    assert anomalies_pb2.AnomalyInfo.ENUM_TYPE_UNEXPECTED_STRING_VALUES in reasons
    assert anomalies_pb2.AnomalyInfo.FLOAT_TYPE_BIG_FLOAT in reasons


def test_against_an_inferred_schema_unseen_categories_ranges_and_drift_are_counted_not_blocking(tmp_path):
    """A free-text-like column with repeated values, a label past the training range, a small split's chance drift:
    data, reported with severity warning; the structural anomalies stay errors."""
    evaluation = rows(60, colours=("red", "green", "purple"), offset=40.0, seed=2)
    _, _, anomalies, summary = checked(tmp_path, {"train": rows(200), "eval": evaluation, "test": rows(40, seed=3)})
    assert summary["anomalies"] == 3 and summary["blocking"] == 0
    assert {entry["severity"] for entry in anomalies.summary["splits"]["eval"]} == {"warning"}
    assert anomalies.summary["message"] == ""  # nothing for the Trainer to refuse
    from tensorflow_metadata.proto.v0 import anomalies_pb2

    proto = anomalies_pb2.Anomalies.FromString(anomalies.split_file("eval").read_bytes())
    assert {info.severity for info in proto.anomaly_info.values()} == {anomalies_pb2.AnomalyInfo.WARNING}


def test_a_sparse_feature_absent_from_a_small_split_is_a_warning_a_common_one_an_error(tmp_path):
    """A column train holds in 3 of 200 rows is missing from a split of 20 by chance (0.74 of the time); `note`, in
    4 rows of 5, being absent from all 20 is a broken source."""
    train = rows(200)
    for index, row in enumerate(train):
        row["rare"] = 1.5 if index in (3, 70, 150) else None
    evaluation = [{key: value for key, value in row.items() if key != "note"} for row in rows(20, seed=2)]
    _, _, anomalies, summary = checked(tmp_path, {"train": train, "eval": evaluation})
    found = {entry["feature"]: entry["severity"] for entry in anomalies.summary["splits"]["eval"]
             if entry["kind"] == "missing_feature"}  # fmt: skip
    assert found == {"rare": "warning", "note": "error"} and summary["blocking"] >= 1


def test_a_frozen_copy_of_an_inferred_schema_makes_its_domains_the_users_rules(tmp_path):
    """The schema a run inferred, copied and given back as schema_file (data.schema, or a declared pipeline's
    schema_gen): the same unseen category and range now block, whichever pipeline wires the validator."""
    evaluation = rows(60, colours=("red", "green", "purple"), offset=40.0, seed=2)
    statistics, inferred, _, summary = checked(tmp_path / "first", {"train": rows(200), "eval": evaluation})
    assert summary["blocking"] == 0 and INFERRED_TAG in load_schema(inferred.file).annotation.tag
    frozen = Schema(tmp_path / "frozen")
    infer(statistics=statistics, schema=frozen, schema_file=str(inferred.file))
    assert INFERRED_TAG not in load_schema(frozen.file).annotation.tag
    anomalies = ExampleAnomalies(tmp_path / "anomalies")
    summary = validate(statistics=statistics, schema=frozen, anomalies=anomalies, on_anomaly="fail")
    assert summary["blocking"] == summary["anomalies"] == 3


def test_min_domain_mass_makes_unseen_categories_blocking_past_it(tmp_path):
    """TFDV's knob: at least this share of a split's values must be inside the domain."""
    evaluation = rows(60, colours=("red", "green", "purple"), seed=2)  # a third purple
    examples = write_examples(tmp_path, {"train": rows(200), "eval": evaluation})
    statistics, schema = ExampleStatistics(tmp_path / "statistics"), Schema(tmp_path / "schema")
    compute(examples=examples, statistics=statistics)
    infer(statistics=statistics, schema=schema)
    proto = load_schema(schema.file)
    colour = next(feature for feature in proto.feature if feature.name == "colour")
    for mass, blocking in ((0.9, 1), (0.5, 0)):
        colour.distribution_constraints.min_domain_mass = mass
        schema.file.write_text(text_format.MessageToString(proto))
        anomalies = ExampleAnomalies(tmp_path / f"anomalies-{mass}")
        summary = validate(statistics=statistics, schema=schema, anomalies=anomalies, on_anomaly="fail")
        unknown = [e for e in anomalies.summary["splits"]["eval"] if e["kind"] == "unknown_category"]
        assert len(unknown) == 1 and summary["blocking"] == blocking, (mass, anomalies.summary)


def test_missing_unexpected_and_mistyped_features_are_flagged(tmp_path):
    evaluation = [{"colour": "red", "size": 1.5, "extra": 1} for _ in range(20)]  # size: a float; no weight
    evaluation += [{"size": 1.5, "extra": 1} for _ in range(5)]  # colour missing: data, not an anomaly
    _, _, anomalies, _ = checked(tmp_path, {"train": rows(100), "eval": evaluation})
    found = {(entry["feature"], entry["kind"]) for entry in anomalies.summary["splits"]["eval"]}
    assert found == {
        ("weight", "missing_feature"),  # a whole split without it: a broken source
        ("note", "missing_feature"),  # optional (train lacks some), but absent from the whole split
        ("colour", "drift"),  # every present colour is red
        ("size", "type_mismatch"),
        ("extra", "unexpected_feature"),
    }


def test_values_missing_here_and_there_are_data_not_an_anomaly(tmp_path):
    """A real dataset with a few missing values: train happens to have none, the test split two."""
    test = rows(44, seed=3)
    test[5]["weight"] = test[17]["weight"] = None
    _, schema, anomalies, summary = checked(tmp_path, {"train": rows(200), "eval": rows(20, seed=2), "test": test})
    assert summary["anomalies"] == 0, anomalies.summary["splits"]
    weight = next(feature for feature in load_schema(schema.file).feature if feature.name == "weight")
    assert weight.presence.min_count == 1 and weight.presence.min_fraction < 1.0
    colour = next(feature for feature in load_schema(schema.file).feature if feature.name == "colour")
    assert colour.presence.min_fraction == 1.0  # Never missing anywhere: required.


def test_anomalies_are_published_with_the_verdict_and_a_frozen_schema_is_used_as_is(tmp_path):
    examples = write_examples(tmp_path, {"train": rows(50), "eval": rows(20, seed=4)})
    statistics = ExampleStatistics(tmp_path / "statistics")
    compute(examples=examples, statistics=statistics)
    frozen = tmp_path / "frozen.pbtxt"
    frozen.write_text('feature { name: "weight" type: FLOAT float_domain { min: 0 max: 5 } }')
    schema = Schema(tmp_path / "schema")
    assert infer(statistics=statistics, schema=schema, schema_file=str(frozen))["inferred"] is False
    anomalies = ExampleAnomalies(tmp_path / "anomalies")
    summary = validate(statistics=statistics, schema=schema, anomalies=anomalies, on_anomaly="fail")
    # weight out of range; colour, note, size unexpected: all blocking, the frozen schema's ranges being the user's
    assert summary == {"anomalies": 8, "blocking": 8, "eval": 4, "train": 4}
    written = json.loads((anomalies.path / "anomalies.json").read_text())
    assert written["on_anomaly"] == "fail" and written["count"] == 8 and written["blocking"] == 8
    assert written["message"].startswith("the Examples have 8 anomalies against the schema (first: eval: weight: max")
    assert text_format.MessageToString(load_schema(schema.file)) == text_format.MessageToString(load_schema(frozen))


def test_l_infinity_distance():
    assert l_infinity({"a": 50, "b": 50}, {"a": 50, "b": 50}) == (0.0, "a")
    assert l_infinity({"a": 3, "b": 1}, {"a": 1, "b": 3}) == (0.5, "a")
    assert l_infinity({"c": 1}, {"a": 1}) == (1.0, "a")
