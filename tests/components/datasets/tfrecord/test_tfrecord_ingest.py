"""The TFRecord ingest: existing Examples copied byte for byte, every broken record rejected with its reason."""

from __future__ import annotations

import gzip

import pytest
import tensorflow as tf

from kflow.components.datasets.tfrecord.ingest import executor
from kflow.components.datasets.tfrecord.ingest.executor import run
from kflow.components.util.schema import annotation_tags, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from tests.components.datasets.chunk_spy import spy_on_chunks
from tests.components.datasets.tabular_fixtures import IRIS_COLUMNS, iris_rows


def iris_example(row, **override) -> bytes:
    example = tf.train.Example()
    values = dict(zip(IRIS_COLUMNS, row, strict=True))
    values.update(override)
    for name, value in values.items():
        if value is None:
            continue
        feature = example.features.feature[name]
        if name == "species" or isinstance(value, bytes):
            feature.bytes_list.value.append(value if isinstance(value, bytes) else value.encode())
        elif isinstance(value, list):
            feature.float_list.value.extend(value)
        else:
            feature.float_list.value.append(float(value))
    return example.SerializeToString()


def write(path, records, compress=False):
    with tf.io.TFRecordWriter(str(path), options="GZIP" if compress else None) as writer:
        for record in records:
            writer.write(record)
    return path


def ingest(tmp_path, source, **parameters):
    examples, schema, rejects = Examples(tmp_path / "ex"), Schema(tmp_path / "schema"), Rejects(tmp_path / "rej")
    parameters = {"label": "species", "max_invalid_fraction": 1.0, **parameters}
    summary = run(examples=examples, schema=schema, rejects=rejects, source_path=str(source), **parameters)
    return summary, examples, schema, rejects


def written(examples):
    return {
        split: [record.numpy() for record in tf.data.TFRecordDataset(examples.split_files(split), "GZIP")]
        for split in examples.splits
    }


@pytest.mark.parametrize("chunk_records", [5000, 7])
def test_examples_are_copied_as_they_are_and_bad_records_rejected(tmp_path, monkeypatch, chunk_records):
    # Chunks of 7 records: files are read from byte offsets, the gzipped one from its staged plain copy.
    monkeypatch.setattr(executor, "CHUNK_RECORDS", chunk_records)
    rows = iris_rows()
    folder = tmp_path / "data"
    folder.mkdir()
    good = [iris_example(row) for row in rows]
    write(folder / "part-0.tfrecord", good[:75])
    write(folder / "part-1.tfrecord.gz", good[75:], compress=True)
    bad = [
        b"not a protobuf \xff\xff",  # not_an_example
        iris_example(rows[0], sepal_length=b"5.1"),  # type_mismatch: bytes where floats were
        iris_example(rows[0], petal_width=[0.1, 0.2]),  # multi_valued
        iris_example(rows[0], species=None),  # missing_label
    ]
    write(folder / "part-2.tfrecord", bad)
    truncated = write(folder / "part-3.tfrecord", good[:3])
    truncated.write_bytes(truncated.read_bytes()[:-10])  # The third record's CRC and tail are cut off.

    seen = spy_on_chunks(monkeypatch)
    summary, examples, schema, rejects = ingest(tmp_path, folder)
    assert summary["read"] == 150 + 4 + 3
    per_file = [-(-75 // chunk_records), -(-75 // chunk_records), 1, 1]
    assert len(seen["chunks"]) == sum(per_file) and sum(chunk.count for chunk in seen["chunks"]) == 157
    copied = [record for records in written(examples).values() for record in records]
    assert sorted(copied) == sorted(good + good[:2])  # byte for byte
    assert [(r["reason"], r["position"]) for r in rejects.read()] == [
        ("not_an_example", "part-2.tfrecord#0"),
        ("type_mismatch", "part-2.tfrecord#1"),
        ("multi_valued", "part-2.tfrecord#2"),
        ("missing_label", "part-2.tfrecord#3"),
        ("corrupt_record", "part-3.tfrecord#2"),
    ]
    assert rejects.read()[1]["feature"] == "sepal_length"
    proto = load_schema(schema.file)
    assert annotation_tags(proto, "species") == {"kflow_type": "string", "role": "label", "task": "classification"}
    assert annotation_tags(proto, "petal_width") == {"kflow_type": "float"}


def test_split_files_keep_the_sources_own_split(tmp_path):
    rows = iris_rows()
    folder = tmp_path / "data"
    folder.mkdir()
    write(folder / "train-0.tfrecord", [iris_example(row) for row in rows[:100]])
    write(folder / "eval-0.tfrecord", [iris_example(row) for row in rows[100:130]])
    write(folder / "test-0.tfrecord", [iris_example(row) for row in rows[130:]])
    patterns = {"train": "train-*", "eval": "eval-*", "test": "test-*"}
    summary, examples, _, _ = ingest(tmp_path, folder, split_files=patterns)
    assert (summary["train"], summary["eval"], summary["test"]) == (100, 30, 20)
    assert sorted(written(examples)["eval"]) == sorted(iris_example(row) for row in rows[100:130])


def test_a_declared_key_rejects_repeats_across_files(tmp_path):
    rows = iris_rows()[:20]
    folder = tmp_path / "data"
    folder.mkdir()
    write(folder / "a.tfrecord", [iris_example(row, id=f"r{i}".encode()) for i, row in enumerate(rows)])
    write(folder / "b.tfrecord", [iris_example(rows[0], id=b"r3")])
    summary, _, _, rejects = ingest(tmp_path, folder, key="id", split={"train": 1, "eval": 1, "test": 1})
    assert [(r["reason"], r["position"]) for r in rejects.read()] == [("duplicate_key", "b.tfrecord#0")]
    assert summary["read"] == 21 and summary["rejected"] == 1


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"label": "colour"}, "data.label: 'colour' is not a column"),
        ({"problem_type": "regression"}, "regression needs a numeric label"),
        ({"split_files": {"train": "train-*", "eval": "nothing-*"}}, r"no file matches the splits \['eval'\]"),
        ({"split_files": {"train": "t*", "eval": "*.tfrecord"}}, r"matches the splits \['train', 'eval'\]"),
        ({"split": {"train": 1, "eval": 1}}, r"missing \['test'\]"),
    ],
)
def test_bad_settings_are_refused(tmp_path, parameters, message):
    source = write(tmp_path / "train-0.tfrecord", [iris_example(row) for row in iris_rows()[:10]])
    with pytest.raises(ValueError, match=message):
        ingest(tmp_path, source, **parameters)


def test_gzip_is_told_by_its_bytes(tmp_path):
    source = tmp_path / "data.bin"
    plain = write(tmp_path / "plain.tfrecord", [iris_example(row) for row in iris_rows()[:30]])
    source.write_bytes(gzip.compress(plain.read_bytes()))
    summary, _, _, _ = ingest(tmp_path, source, split={"train": 1, "eval": 1, "test": 1})
    assert summary["read"] == 30 and summary["rejected"] == 0


def test_the_task_is_inferred_from_the_sampled_labels_as_a_tables(tmp_path):
    """scikit-learn's diabetes (a float target: 214 distinct values in 442 rows) as TFRecords: regression, as its CSV
    is (the task was classification unless set: 214 classes); iris with its classes coded 0.0, 1.0, 2.0:
    classification; a label naming each record: refused in one line; a task set is kept."""
    from sklearn.datasets import load_diabetes

    diabetes = load_diabetes(as_frame=True).frame
    records = []
    for _, row in diabetes.iterrows():
        example = tf.train.Example()
        for name, value in row.items():
            example.features.feature[name].float_list.value.append(float(value))
        records.append(example.SerializeToString())
    source = write(tmp_path / "diabetes.tfrecord", records)
    _, _, schema, _ = ingest(tmp_path / "diabetes", source, label="target")
    assert annotation_tags(load_schema(schema.file), "target")["task"] == "regression"
    _, _, schema, _ = ingest(tmp_path / "set", source, label="target", problem_type="classification")
    assert annotation_tags(load_schema(schema.file), "target")["task"] == "classification"

    rows = iris_rows()
    codes = {name: float(index) for index, name in enumerate(sorted({row[-1] for row in rows}))}
    coded_records = []
    for row in rows:
        example = tf.train.Example.FromString(iris_example(row, species=None))
        example.features.feature["species"].float_list.value.append(codes[row[-1]])
        coded_records.append(example.SerializeToString())
    coded = write(tmp_path / "coded.tfrecord", coded_records)
    _, _, schema, _ = ingest(tmp_path / "coded", coded)
    assert annotation_tags(load_schema(schema.file), "species")["task"] == "classification"

    named = write(tmp_path / "named.tfrecord", [iris_example(row, species=f"flower {i}") for i, row in enumerate(rows)])
    with pytest.raises(ValueError, match=r"^data.label: 'species' holds 150 distinct values in 150 sampled rows"):
        ingest(tmp_path / "named", named)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"data": {"label": "specis"}}, "data.label: 'specis' is not a column of the data; did you mean species?"),
        ({"data": {"source": {"path": "nowhere-*.tfrecord"}}}, "matches no file"),
        ({"data": {"source": {"path": "iris.csv"}}}, "holds no tf.train.Example that reads"),
        ({"evaluator": {"thresholds": {"r2": {"lower_bound": 0.1}}}}, "evaluator.thresholds.r2: a classification"),
        ({"data": {"split_files": {"train": "train-*"}}}, "data.split_files: give at least train and eval patterns"),
    ],
)
def test_validate_refuses_what_the_ingest_would_refuse(tmp_path, capsys, change, said):
    """validate read no TFRecord source: a label that is no feature, a CSV given as TFRecord, thresholds the task has
    not each passed it, and the run failed after starting (exit 1; a user trial). Now one line, exit 2, as a CSV's."""
    import yaml

    from kflow.pipeline.cli.main import main
    from tests.conftest import REPO

    write(tmp_path / "iris.tfrecord.gz", [iris_example(row) for row in iris_rows()], compress=True)
    (tmp_path / "iris.csv").write_bytes((REPO / "pipeline" / "configs" / "data" / "iris.csv").read_bytes())
    config = {"name": "t", "data": {"dataset": "tfrecord", "source": {"path": "iris.tfrecord.gz"}, "label": "species"}}
    for section, fields in change.items():
        config[section] = {**config.get(section, {}), **fields}
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(config))
    code = main(["validate", str(tmp_path / "t.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and said in err and err.count("\n") == 1, err


def test_validate_reads_the_task_of_a_tfrecord_source(tmp_path, capsys):
    import yaml

    from kflow.pipeline.cli.main import main

    write(tmp_path / "iris.tfrecord", [iris_example(row) for row in iris_rows()])
    config = {"name": "t", "data": {"dataset": "tfrecord", "source": {"path": "iris.tfrecord"}, "label": "species"}}
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(config))
    assert main(["validate", str(tmp_path / "t.yaml")]) == 0
    assert (
        "data.problem_type not set: classification, as the label 'species' holds 3 distinct" in capsys.readouterr().out
    )
