"""Someone else's CSV end to end with a config only: scikit-learn's iris file, converted to a plain header CSV,
through csv ingest → train → evaluate with `kflow run`; bad rows rejected with reasons; counts balance."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.components.datasets.tabular_fixtures import IRIS_COLUMNS, iris_rows, write_iris
from tests.conftest import REPO

BAD_ROWS = ["5.0,abc,1.4,0.2,setosa", "6.1,2.8,4.7,versicolor"]


def iris_config(tmp_path, **data):
    source = write_iris(tmp_path / "iris.csv", BAD_ROWS)
    config = {
        "name": "iris",
        "pipeline_root": str(tmp_path / "runs"),
        "data": {"dataset": "csv", "source": {"path": str(source)}, "label": "species",
                 "problem_type": "classification", "split": {"train": 8, "eval": 1, "test": 1}, "shards_per_split": 1,
                 "filters": {"max_invalid_fraction": 0.05}, **data},
        "trainer": {"epochs": 25, "batch_size": 16, "optimizer": {"name": "adam", "learning_rate": 0.01}},
        "evaluator": {"thresholds": {"accuracy": {"lower_bound": 0.8}}, "slices": [{"by": "label"}]},
    }  # fmt: skip
    path = tmp_path / "iris.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.slow  # ~25 s; make test keeps csv ingest → Trainer → Evaluator (test_tabular.py, diabetes).
def test_iris_csv_trains_and_is_evaluated_with_a_config_only(tmp_path, run_kflow):
    done = run_kflow("run", iris_config(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = [path for path in (tmp_path / "runs" / "iris").iterdir() if not path.name.startswith(".")]
    record = json.loads((run_dir / "run.json").read_text())
    stats = json.loads((run_dir / "ingest" / "examples" / "stats.json").read_text())
    assert stats["read"] == 152 and sum(stats["accepted"].values()) == 150
    assert stats["invalid"] == {"bad_value": 1, "wrong_field_count": 1}
    rejects = [json.loads(line) for line in (run_dir / "ingest" / "rejects" / "rejects.jsonl").read_text().splitlines()]
    assert [(r["reason"], r["position"]) for r in rejects] == [
        ("bad_value", "iris.csv:152"),
        ("wrong_field_count", "iris.csv:153"),
    ]
    assert rejects[0]["column"] == "sepal_width"

    metrics = json.loads((run_dir / "evaluate" / "evaluation" / "metrics.json").read_text())
    assert metrics["example_count"] == stats["accepted"]["test"]
    assert metrics["accuracy"] >= 0.8
    matrix = metrics["confusion_matrix"]
    assert matrix["categories"] == ["setosa", "versicolor", "virginica"]
    assert sum(map(sum, matrix["matrix"])) == metrics["example_count"]
    report = (run_dir / "evaluate" / "evaluation" / "report.html").read_text()
    assert "Confusion matrix" in report and "virginica" in report and "accuracy" in report
    assert {name: c["status"] for name, c in record["components"].items()} == dict.fromkeys(
        ["ingest", "statistics", "schema", "validate", "transform", "train", "evaluate"], "succeeded"
    )
    # The Trainer read the schema inferred from Split-train, which kept the ingest's label tag.
    schema_uri = record["components"]["train"]["inputs"]["schema"]["uri"]
    assert schema_uri == str(run_dir / "schema" / "schema")
    assert 'tag: "role=label"' in (run_dir / "schema" / "schema" / "schema.pbtxt").read_text()
    assert (run_dir / "statistics" / "statistics" / "statistics.html").exists()
    assert json.loads((run_dir / "validate" / "anomalies" / "anomalies.json").read_text())["count"] == 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"label": None}, "data.label: csv needs the column to predict"),
        ({"label": "colour"}, "data.label: 'colour' is not a column"),
    ],
)
def test_a_csv_config_without_a_usable_label_is_refused(tmp_path, run_kflow, change, message):
    done = run_kflow("run", iris_config(tmp_path, **change))
    assert done.returncode == 2, done.stderr[-2000:]  # Before anything runs: validate reads the header.
    assert message in done.stderr


def test_validate_refuses_what_the_run_would_refuse_in_the_data(tmp_path, run_kflow):
    """A binary metric on three classes, a regression metric on a classification, a slice and a label that are
    not columns, a file that is not there: each one line of `kflow validate`, exit 2, before anything runs."""
    config = iris_config(tmp_path)
    settings = [
        "--set", "evaluator.thresholds={roc_auc: {lower_bound: 0.9}, r2: {lower_bound: 0.1}}",
        "--set", "evaluator.slices=[{by: sepal_lenght}]",
    ]  # fmt: skip
    done = run_kflow("validate", config, *settings)
    assert done.returncode == 2, done.stderr
    problems = [line.strip() for line in done.stderr.splitlines()[1:]]
    assert problems == [
        "evaluator.thresholds.roc_auc: roc_auc is defined for two classes; the label has 3 "
        "(setosa, versicolor, virginica)",
        "evaluator.thresholds.r2: a classification task has no r2 (its metrics: example_count, loss, accuracy, "
        "macro_precision, macro_recall, macro_f1)",  # not those of two classes, refused on the line above
        "evaluator.slices[0].by: no column 'sepal_lenght' in the data; did you mean sepal_length? (slice by: "
        "label, sepal_length, sepal_width, petal_length, petal_width)",  # the label's column: by label
    ]
    done = run_kflow("validate", config, "--set", f"data.source.path={tmp_path / 'gone.csv'}")
    assert done.returncode == 2 and f"data.source.path: {tmp_path / 'gone.csv'} does not exist" in done.stderr
    done = run_kflow("validate", config, "--set", "data.problem_type=regression", "--set", "evaluator.thresholds={}")
    assert done.returncode == 2 and "regression needs a numeric label; column 'species' is string" in done.stderr
    assert run_kflow("validate", config).returncode == 0


@pytest.mark.slow  # ~20 s; make test keeps the Parquet ingest's unit tests (tests/components/datasets/parquet)
def test_a_parquet_copy_validates_and_ingests_like_the_csv(tmp_path, run_kflow):
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    config = iris_config(tmp_path, filters={})
    pq.write_table(pa_csv.read_csv(write_iris(tmp_path / "clean.csv")), tmp_path / "iris.parquet", row_group_size=64)
    parquet = ["--set", "data.dataset=parquet", "--set", f"data.source.path={tmp_path / 'iris.parquet'}"]
    done = run_kflow("validate", config, *parquet, "--set", "data.label=specie")
    assert done.returncode == 2 and "data.label: 'specie' is not a column of the data; did you mean species?" in (
        done.stderr
    )
    done = run_kflow("run", config, *parquet, "--until", "ingest")  # Parquet's training is the csv's (above).
    assert done.returncode == 0, done.stderr[-3000:]
    stats = json.loads((newest_run(tmp_path / "runs" / "iris") / "ingest" / "examples" / "stats.json").read_text())
    assert stats["read"] == 150 and sum(stats["accepted"].values()) == 150


def test_csv_fields_on_another_dataset_are_refused(tmp_path, run_kflow):
    done = run_kflow("validate", "pipeline/configs/demo.yaml", "--set", "data.label=digit")
    assert done.returncode == 2
    assert "data.label: not used by mnist" in done.stderr


@pytest.mark.slow  # The validator's and the Trainer's halves are unit-tested in make test.
def test_data_that_breaks_a_frozen_schema_stops_the_run_before_training(tmp_path, run_kflow):
    frozen = tmp_path / "frozen.pbtxt"
    frozen.write_text(
        'feature { name: "species" type: BYTES annotation { tag: "role=label" tag: "task=classification" } }\n'
        'feature { name: "petal_length" type: FLOAT float_domain { min: 0 max: 3 } }\n'
    )
    done = run_kflow("run", iris_config(tmp_path, schema=str(frozen)))
    assert done.returncode == 1
    assert "component 'train' failed" in done.stderr
    assert "petal_length: maximum 6.9 is above the schema's 3" in done.stderr and "on_anomaly: warn" in done.stderr
    run_dir = newest_run(tmp_path / "runs" / "iris")
    data_steps = ["ingest", "statistics", "schema", "validate", "transform"]
    assert statuses(run_dir) == {**dict.fromkeys(data_steps, "succeeded"), "train": "failed"}  # fmt: skip
    anomalies = json.loads((run_dir / "validate" / "anomalies" / "anomalies.json").read_text())
    kinds = {(entry["feature"], entry["kind"]) for entry in anomalies["splits"]["train"]}
    assert ("petal_length", "out_of_range") in kinds and ("sepal_width", "unexpected_feature") in kinds


def statuses(run_dir):
    record = json.loads((run_dir / "run.json").read_text())
    return {name: component["status"] for name, component in record["components"].items()}


def newest_run(pipeline_dir):
    return max((path for path in pipeline_dir.iterdir() if not path.name.startswith(".")), key=lambda p: p.name)


@pytest.mark.slow  # About 40 s; make test plays a compiled csv pipeline with the module and checks the keys below.
def test_a_user_module_trains_and_an_edit_reruns_train_and_evaluate_only(tmp_path, run_kflow):
    """trainer.module: the user's build_model trains; an edit re-runs train and evaluate, not the data steps."""
    module = tmp_path / "my_model.py"
    module.write_text((REPO / "tests" / "pipeline" / "user" / "iris_model.py").read_text())
    config = iris_config(tmp_path)
    settings = ["--set", f"trainer.module={module}", "--set", "trainer.epochs=20"]
    done = run_kflow("run", config, *settings)
    assert done.returncode == 0, done.stderr[-3000:]
    first = newest_run(tmp_path / "runs" / "iris")
    assert set(statuses(first).values()) == {"succeeded"}
    assert (first / "train" / "model" / "assets" / "user_module.py").read_text() == module.read_text()
    assert json.loads((first / "evaluate" / "evaluation" / "metrics.json").read_text())["accuracy"] >= 0.8

    module.write_text(module.read_text().replace("HIDDEN_UNITS = 16", "HIDDEN_UNITS = 12"))
    done = run_kflow("run", config, *settings)
    assert done.returncode == 0, done.stderr[-3000:]
    second = newest_run(tmp_path / "runs" / "iris")
    assert statuses(second) == {**dict.fromkeys(["ingest", "statistics", "schema", "validate", "transform"], "cached"),
                                "train": "succeeded", "evaluate": "succeeded"}  # fmt: skip
    assert loaded_user_model(second).layers[-2].units == 12


@pytest.mark.slow  # About 35 s: a 2-worker cluster; the default-strategy twin above runs in make test.
def test_a_user_module_trains_under_multi_worker_mirrored(tmp_path, run_kflow):
    module = REPO / "tests" / "pipeline" / "user" / "iris_model.py"
    mirrored = ["--set", "trainer.strategy=multi_worker_mirrored", "--set", "trainer.workers=2"]
    done = run_kflow("run", iris_config(tmp_path), "--set", f"trainer.module={module}", *mirrored)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = newest_run(tmp_path / "runs" / "iris")
    history = json.loads((run_dir / "train" / "model_run" / "history.json").read_text())
    assert history["strategy"] == "multi_worker_mirrored" and history["replicas"] == 2
    assert loaded_user_model(run_dir).name == "iris_user_model"
    assert json.loads((run_dir / "evaluate" / "evaluation" / "metrics.json").read_text())["accuracy"] >= 0.8


def test_an_edit_of_the_user_module_changes_the_trainers_cache_key_and_nothing_upstream(tmp_path):
    from kflow.pipeline.app.standard_pipeline import build_pipeline
    from kflow.pipeline.dsl.config import load_config

    module = tmp_path / "my_model.py"
    module.write_text((REPO / "tests" / "pipeline" / "user" / "iris_model.py").read_text())
    config_file = iris_config(tmp_path)

    def keys():
        pipeline = build_pipeline(load_config(config_file, overrides=[f"trainer.module={module}"]))
        return {node.id: node.cache_parameters for node in pipeline.components}

    before = keys()
    assert before["train"]["module_source"] == module.read_text()
    module.write_text(module.read_text().replace("HIDDEN_UNITS = 16", "HIDDEN_UNITS = 12"))
    after = keys()
    assert [name for name in before if before[name] != after[name]] == ["train"]


def loaded_user_model(run_dir):
    """The trained model.keras, loaded as the Evaluator loads it: with the module's code from its assets."""
    import keras

    from kflow.components.datasets.user_module import load_module

    load_module((run_dir / "train" / "model" / "assets" / "user_module.py").read_text())
    return keras.models.load_model(run_dir / "train" / "model" / "model.keras")


@pytest.mark.parametrize(
    ("module", "message"),
    [
        ("nowhere/my_model.py", "my_model.py is not a file"),
        ("tests/pipeline/user/clip_pixels.py", "clip_pixels.py defines no build_model(schema, options) function"),
    ],
)
def test_an_unusable_trainer_module_is_refused_naming_the_field(run_kflow, module, message):
    done = run_kflow("validate", "pipeline/configs/demo.yaml", "--set", f"trainer.module={module}")
    assert done.returncode == 2
    assert "trainer.module: " in done.stderr and message in done.stderr


@pytest.mark.parametrize(
    ("source", "line"),
    [("import keras\n\n\ndef build_model(hp):\n    return None\n",
      "my_model.py:4: build_model(hp) takes 1 positional argument(s), not 2; kflow calls build_model(schema, options)"),
     ("import keras\nimport tensorflow_decision_forests as tfdf\n\n\ndef build_model(schema, options):\n"
      "    return None\n",
      "my_model.py:2: imports tensorflow_decision_forests, which is not installed here")],
    ids=["keras_tuner_signature", "not_installed"],
)  # fmt: skip
def test_validate_refuses_a_trainer_module_that_run_would_refuse_in_the_same_line(run_kflow, tmp_path, source, line):
    """Before: validate exited 0 and run failed at train, after the data steps (a raw ModuleNotFoundError)."""
    module = tmp_path / "my_model.py"
    module.write_text(source)
    said = []
    for command in ("validate", "run"):
        done = run_kflow(command, "pipeline/configs/demo.yaml", "--set", f"trainer.module={module}",
                         "--set", f"pipeline_root={tmp_path / 'runs'}")  # fmt: skip
        assert done.returncode == 2, done.stderr
        refusals = [text for text in done.stderr.splitlines() if "trainer.module: " in text]
        assert len(refusals) == 1 and line in refusals[0], done.stderr
        said.append(refusals[0])
    assert said[0] == said[1]
    assert not (tmp_path / "runs").exists()  # no data step ran


DATAFLOW = "beam.runner=DataflowRunner"  # Unusable here (no project, no network): whatever runs on it fails.


def test_the_data_runner_is_given_to_the_data_steps_only(tmp_path):
    from kflow.pipeline.app.standard_pipeline import build_pipeline
    from kflow.pipeline.dsl.config import load_config

    settings = [DATAFLOW, "beam.options.temp_location=gs://bucket/tmp", "orchestration.options.direct_num_workers=1"]
    pipeline = build_pipeline(load_config(iris_config(tmp_path), overrides=settings))
    data_args = ["--runner=DataflowRunner", "--temp_location=gs://bucket/tmp"]
    assert pipeline.beam_args == ["--direct_num_workers=1"]  # The DAG runner's own options.
    assert pipeline.node("ingest").parameters["beam_args"] == data_args
    assert pipeline.node("statistics").parameters["beam_args"] == data_args
    assert pipeline.node("transform").parameters["beam_args"] == data_args  # the analyzers' full pass
    others = [node for node in pipeline.components if node.id not in ("ingest", "statistics", "transform")]
    assert [node.id for node in others] == ["schema", "validate", "train", "evaluate"]
    assert not any("beam_args" in node.parameters for node in others)


@pytest.mark.slow  # Two kflow runs (about 35 s); the pipeline it builds is checked in make test, above.
def test_a_distributed_data_runner_moves_neither_the_dag_runner_nor_training(tmp_path, run_kflow):
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    with pytest.raises((Exception, SystemExit)):  # The control: DataflowRunner cannot run anything here.
        with beam.Pipeline(options=PipelineOptions(["--runner=DataflowRunner"])) as pipeline:
            _ = pipeline | beam.Create([1])
    config = iris_config(tmp_path)
    for last in ("validate", "transform"):  # every data step, the transform's Beam pass one of them
        done = run_kflow("run", config, "--until", last)
        assert done.returncode == 0, done.stderr[-3000:]
    done = run_kflow("run", config, "--set", DATAFLOW, "--set", "trainer.epochs=3", "--set",
                     "evaluator.on_not_blessed=warn")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert statuses(newest_run(tmp_path / "runs" / "iris")) == {
        **dict.fromkeys(["ingest", "statistics", "schema", "validate", "transform"], "cached"),
        "train": "succeeded",
        "evaluate": "succeeded",
    }


def test_the_shipped_csv_config_validates_and_its_file_is_scikit_learns_iris(run_kflow):
    import csv

    with (REPO / "pipeline" / "configs" / "data" / "iris.csv").open(newline="") as file:
        assert list(csv.reader(file)) == [IRIS_COLUMNS, *iris_rows()]
    done = run_kflow("validate", REPO / "pipeline" / "configs" / "iris.yaml")
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow  # About 16 s; make test has the inference on the ingest (test_executor.py).
def test_scikit_learns_diabetes_without_a_task_trains_a_regression(tmp_path, run_kflow):
    """A numeric target and no data.problem_type: a regression (said in the log), not a classifier over ~200
    'classes'."""
    import csv

    from sklearn.datasets import load_diabetes

    bunch = load_diabetes(scaled=False)
    source = tmp_path / "diabetes.csv"
    with source.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow([*bunch.feature_names, "target"])
        writer.writerows([*row, target] for row, target in zip(bunch.data.tolist(), bunch.target.tolist(), strict=True))
    config = {
        "name": "diabetes",
        "pipeline_root": str(tmp_path / "runs"),
        "data": {"dataset": "csv", "source": {"path": str(source)}, "label": "target"},
        "trainer": {"epochs": 5},
    }
    path = tmp_path / "diabetes.yaml"
    path.write_text(yaml.safe_dump(config))
    done = run_kflow("run", path)
    assert done.returncode == 0, done.stderr[-3000:]
    # sklearn's targets are whole numbers (floats that are integers): past 20 distinct values, a quantity.
    assert (
        "data.problem_type not set: regression, as the label 'target' holds 214 distinct whole numbers in 442 "
        "sampled rows, more than 20" in done.stderr
    )
    (metrics_file,) = (tmp_path / "runs" / "diabetes").glob("*/evaluate/evaluation/metrics.json")
    metrics = json.loads(metrics_file.read_text())
    assert metrics["example_count"] >= 40 and "rmse" in metrics and "accuracy" not in metrics


@pytest.mark.slow  # About 15 s; make test builds, exports and serves such a model (test_column_names.py).
def test_columns_named_as_files_name_them_train_and_are_reported_as_written(tmp_path, run_kflow):
    import csv
    import random

    generator = random.Random(0)
    source = tmp_path / "names.csv"
    with source.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["glucose (mg/dl)", "body weight", "Größe", "A", "a", "outcome"])
        for _ in range(300):
            glucose = generator.gauss(100, 20)
            writer.writerow([
                round(glucose, 1), round(generator.gauss(70, 10), 1), generator.choice(["klein", "groß"]),
                generator.randint(0, 5), round(generator.random(), 3),
                "yes" if glucose + generator.gauss(0, 10) > 105 else "no",
            ])  # fmt: skip
    config = {
        "name": "names",
        "pipeline_root": str(tmp_path / "runs"),
        "data": {"dataset": "csv", "source": {"path": str(source)}, "label": "outcome"},
        "trainer": {"epochs": 3},
        "evaluator": {"slices": [{"by": "Größe"}, {"by": "glucose (mg/dl)", "boundaries": [100]}]},
    }
    path = tmp_path / "names.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True))
    done = run_kflow("run", path)
    assert done.returncode == 0, done.stderr[-3000:]
    (run_file,) = (tmp_path / "runs" / "names").glob("*/run.json")
    run_dir = run_file.parent
    report = (run_dir / "evaluate" / "evaluation" / "report.html").read_text()
    assert "Größe=groß" in report and "glucose (mg/dl)" in report
    assert json.loads((run_dir / "evaluate" / "evaluation" / "serving_check.json").read_text())["passed"]
    assert "glucose (mg/dl)" in (run_dir / "schema" / "schema" / "schema.pbtxt").read_text()


def test_a_failed_ingest_keeps_its_rejects_and_stats_where_its_error_says(tmp_path, run_kflow):
    done = run_kflow("run", iris_config(tmp_path, filters={"max_invalid_fraction": 0.0}), "--until", "ingest")
    assert done.returncode == 1
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("kflow: error:")]
    assert "2 of 152 records are invalid" in line and "/ingest.failed/rejects/rejects.jsonl" in line
    rejects = Path(line.split("; see ")[1].split(" ")[0])
    assert rejects.is_file() and len(rejects.read_text().splitlines()) == 2  # Every path in the message exists.
    stats = json.loads((rejects.parents[1] / "examples" / "stats.json").read_text())
    assert stats["read"] == 152 and sum(stats["invalid"].values()) == 2
    assert not list((rejects.parents[2] / ".staging").iterdir())  # Not published, not left half-way.
    assert not (rejects.parents[2] / "ingest").exists()


@pytest.mark.slow  # About 30 s: a declared iris pipeline; make test has the executor on MNIST-like data.
def test_the_bulk_inferrer_scores_iris_with_the_blessed_model_as_the_evaluator_did(tmp_path, run_kflow):
    config = yaml.safe_load(iris_config(tmp_path).read_text())
    config["components"] = [
        {"id": "ingest", "type": "ingest"},
        {"id": "statistics", "type": "statistics_gen", "inputs": {"examples": "ingest.examples"}},
        {"id": "train", "type": "trainer", "inputs": {"examples": "ingest.examples", "schema": "ingest.schema"}},
        {"id": "evaluate", "type": "evaluator",
         "inputs": {"examples": "ingest.examples", "schema": "ingest.schema", "model": "train.model"}},
        {"id": "push", "type": "pusher", "inputs": {"model": "train.model", "blessing": "evaluate.blessing"},
         "run_if": "evaluate.blessing", "parameters": {"push_destination": str(tmp_path / "serving")}},
        {"id": "predict", "type": "bulk_inferrer", "run_if": "evaluate.blessing",
         "inputs": {"examples": "ingest.examples", "schema": "ingest.schema", "model": "train.model",
                    "blessing": "evaluate.blessing"}},
    ]  # fmt: skip
    path = tmp_path / "declared.yaml"
    path.write_text(yaml.safe_dump(config))
    done = run_kflow("run", path)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = newest_run(tmp_path / "runs" / "iris")
    metrics = json.loads((run_dir / "evaluate" / "evaluation" / "metrics.json").read_text())
    lines = [json.loads(line) for line in (run_dir / "predict" / "inference_result" / "Split-test" /
                                           "predictions.jsonl").read_text().splitlines()]  # fmt: skip
    assert len(lines) == metrics["example_count"]
    assert sum(line["predicted_class"] == line["label"] for line in lines) / len(lines) == metrics["accuracy"]
    loss = -sum(math.log(max(line["scores"][line["label"]], 1e-7)) for line in lines) / len(lines)
    assert loss == pytest.approx(metrics["loss"], rel=1e-4)
    for name in metrics["per_class_count"]:
        assert sum(line["label"] == name for line in lines) == metrics["per_class_count"][name]
    # The pushed folder scores new rows, compared with the statistics of the data its model was trained on: the
    # run's Pusher record leads from the folder to the Trainer's model (a helper's trial: "skew not computed").
    (pushed,) = (tmp_path / "serving").iterdir()
    scored = run_kflow("predict", path, "--data", REPO / "pipeline" / "configs" / "data" / "iris.csv", "--model",
                       pushed, "-o", tmp_path / "scored")  # fmt: skip
    assert scored.returncode == 0, scored.stderr[-3000:]
    skew = json.loads((tmp_path / "scored" / "skew.json").read_text())
    assert skew["compared"] and skew["training_statistics"].startswith(str(run_dir / "statistics"))
    # The served folder removed, a re-run pushes again: a cached Pusher said pushed=True of a model gone from its
    # destination (a user trial); the rest stays cached.
    shutil.rmtree(tmp_path / "serving")
    again = run_kflow("run", path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "push: not reusing the outputs of run" in again.stderr and "is gone" in again.stderr, again.stderr[-2000:]
    assert (tmp_path / "serving").is_dir() and len(list((tmp_path / "serving").iterdir())) == 1
    assert re.search(r"\btrain +cached", again.stdout), again.stdout


@pytest.mark.slow  # About 25 s; make test has the schema and validator halves (test_data_checks.py).
def test_a_csv_with_a_few_missing_values_runs_with_the_shipped_config(tmp_path, run_kflow):
    """The shipped iris config with only the path changed, on iris with two values blanked in each of three columns
    (no real dataset with missing values ships in a package here): no anomaly stops it, the model fills them."""
    lines = (REPO / "pipeline" / "configs" / "data" / "iris.csv").read_text().splitlines()
    for column, rows in ((0, (3, 77)), (2, (40, 120)), (3, (9, 140))):
        for row in rows:
            cells = lines[row].split(",")
            cells[column] = ""
            lines[row] = ",".join(cells)
    source = tmp_path / "iris-with-gaps.csv"
    source.write_text("\n".join(lines) + "\n")
    done = run_kflow(
        "run", REPO / "pipeline" / "configs" / "iris.yaml", "--pipeline-root", tmp_path / "runs",
        "--set", f"data.source.path={source}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = newest_run(tmp_path / "runs" / "iris")
    assert json.loads((run_dir / "validate" / "anomalies" / "anomalies.json").read_text())["count"] == 0
    assert json.loads((run_dir / "evaluate" / "evaluation" / "metrics.json").read_text())["accuracy"] >= 0.85


@pytest.mark.slow  # ~60 s; make test keeps trainer.module (iris_model) and module_problems' checks
def test_a_model_that_breaks_its_contract_fails_in_one_line_naming_the_module_file_and_line(tmp_path, run_kflow):
    """Checked after build_model, before training: a KeyError in the module, outputs that are not the classes,
    an input the data does not have. Each: exit 1, one line `trainer.module: my_model.py:LINE: …`."""
    source = (REPO / "tests" / "pipeline" / "user" / "iris_model.py").read_text()
    broken = {
        "key_error": (source.replace('feature["variance"]', 'feature["varience"]'), "KeyError: 'varience'"),
        "units": (
            source.replace('len(options["head"]["classes"])', "4"),
            "the model outputs 4 value(s) a record; the task predicts 3 classes",
        ),
        "input": (
            source.replace("inputs[name] = keras.Input(shape=(1,), name=name", 'inputs[name + "_cm"] = keras.Input('
                           'shape=(1,), name=name').replace("(inputs[name])", '(inputs[name + "_cm"])'),
            "the model takes the input 'sepal_length_cm', which the data has no feature of",
        ),
    }  # fmt: skip
    config = iris_config(tmp_path)
    for name, (text, message) in broken.items():
        module = tmp_path / "my_model.py"
        module.write_text(text)
        done = run_kflow("run", config, "--set", f"trainer.module={module}", "--until", "train")
        assert done.returncode == 1, (name, done.stderr[-2000:])
        (line,) = [line for line in done.stderr.splitlines() if line.startswith("kflow: error:")]
        assert f"trainer.module: {module.name}:" in line and message in line, (name, line)
        where = int(line.split(f"{module.name}:")[1].split(":")[0])
        wanted = {"key_error": "varience", "units": "Dense(4", "input": "keras.Input("}[name]  # The layer's line.
        assert wanted in text.splitlines()[where - 1], (name, where)
        assert "Traceback" not in done.stderr


@pytest.mark.slow  # About 20 s; make test has the contract's refusals (above).
def test_a_model_that_leaves_a_string_column_out_is_fed_only_what_it_takes(tmp_path, run_kflow):
    """Keras would try to cast the column it does not take ("Cast string to float is not supported"): kflow feeds
    a user's model only its named inputs, in training, evaluation and the serving check; logs and the report
    name the user's model."""
    lines = (REPO / "pipeline" / "configs" / "data" / "iris.csv").read_text().splitlines()
    rows = [lines[0] + ",colour"] + [line + ("," + ("red" if i % 2 else "blue")) for i, line in enumerate(lines[1:])]
    source = tmp_path / "iris.csv"
    source.write_text("\n".join(rows) + "\n")
    module = tmp_path / "numeric_only.py"
    numeric_only = 'for feature in [f for f in options["features"] if f["kind"] == "numeric"]:'
    original = (REPO / "tests" / "pipeline" / "user" / "iris_model.py").read_text()
    module.write_text(original.replace('for feature in options["features"]:', numeric_only))
    config = {
        "name": "colours",
        "pipeline_root": str(tmp_path / "runs"),
        "data": {"dataset": "csv", "source": {"path": str(source)}, "label": "species"},
        "trainer": {"epochs": 20, "batch_size": 16, "module": str(module)},
        "evaluator": {"thresholds": {"accuracy": {"lower_bound": 0.8}}},
    }
    path = tmp_path / "colours.yaml"
    path.write_text(yaml.safe_dump(config))
    done = run_kflow("run", path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "train: numeric_only for 20 epochs" in done.stderr
    run_dir = newest_run(tmp_path / "runs" / "colours")
    assets = run_dir / "train" / "model" / "assets"
    assert json.loads((assets / "model_inputs.json").read_text()) == [
        "sepal_length", "sepal_width", "petal_length", "petal_width",
    ]  # fmt: skip
    assert json.loads((run_dir / "evaluate" / "evaluation" / "serving_check.json").read_text())["passed"]
    assert "numeric_only" in (run_dir / "evaluate" / "evaluation" / "report.html").read_text()
