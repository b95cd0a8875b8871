"""The report's parts that need no model: slices' natural order, and "Trained with" read from recorded files."""

from __future__ import annotations

import json

from kflow.components.evaluator.provenance import trained_with
from kflow.components.evaluator.report import published_folder, write_report
from kflow.components.evaluator.slice_order import in_natural_order
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun


def test_buckets_by_value_classes_in_class_order_missing_last():
    keys = ["age >=60", "age=missing", "age <30", "age [45,60)", "age [30,45)"]
    assert list(in_natural_order(dict.fromkeys(keys))) == [
        "age <30",
        "age [30,45)",
        "age [45,60)",
        "age >=60",
        "age=missing",
    ]
    classes = ["setosa", "versicolor", "virginica"]
    shuffled = dict.fromkeys(["label=virginica", "label=setosa", "label=versicolor"])
    assert list(in_natural_order(shuffled, classes)) == [f"label={name}" for name in classes]
    assert list(in_natural_order(dict.fromkeys(["n=10", "n=9", "n=-1"]))) == ["n=-1", "n=9", "n=10"]
    assert list(in_natural_order(dict.fromkeys(["label >=1.5", "label <-0.5", "label [-0.5,1.5)"]))) == [
        "label <-0.5", "label [-0.5,1.5)", "label >=1.5"
    ]  # fmt: skip


def test_a_staged_output_links_from_where_it_is_published(tmp_path):
    staged = tmp_path / "run" / ".staging" / "evaluate-1a2b3c4d" / "evaluation"
    assert published_folder(staged) == tmp_path / "run" / "evaluate" / "evaluation"
    assert published_folder(tmp_path / "kfp" / "evaluation") == tmp_path / "kfp" / "evaluation"


def test_trained_with_reads_the_run_record_the_tuned_settings_and_the_spans(tmp_path):
    run = tmp_path / "runs" / "p" / "run-1"
    model, model_run, examples = (
        Model(run / "train" / "model"),
        ModelRun(run / "train" / "model_run"),
        Examples(run / "union" / "examples"),
    )
    model.write_task_spec("csv", "tabular_mlp", {})
    model.write_json("metadata.json", {"hyperparameters": {"learning_rate": 0.003, "batch_size": 64}})
    model_run.write_json("history.json", {"epochs": 7, "processes": 1, "per_epoch": []})
    examples.write_json("stats.json", {"read": 12, "accepted": {"train": 10, "test": 2}, "invalid": {"bad_label": 1}})
    examples.write_json("metadata.json", {"spans": ["2", "3"]})
    graph = run / "transform" / "transform_graph"
    graph.mkdir(parents=True)
    (graph / "analyzers.json").write_text(json.dumps({"analyzers": {"a": {}, "b": {}}, "features": {"x": {}},
                                                      "left_out": {"when": "a date"}}))  # fmt: skip
    record = {"run_id": "run-1", "components": {
        "train": {"parameters": {"model_name": "tabular_mlp", "epochs": 7, "learning_rate": 0.003, "workers": 2},
                  "inputs": {"transform_graph": {"uri": str(graph)}},
                  "outputs": {"model": {"uri": model.uri}}},
        "transform": {"outputs": {"transform_graph": {"uri": str(graph)}}},
        "union": {"data": {"files": [{"path": "/data/survey-2.csv"}, {"path": "/data/survey-3.csv"}]},
                  "outputs": {"examples": {"uri": examples.uri}}},
    }}  # fmt: skip
    (run / "run.json").write_text(json.dumps(record))
    provenance = trained_with(model, model_run, examples)
    assert provenance["model"] == {
        "model_name": "tabular_mlp",
        "epochs": 7,
        "learning_rate": 0.003,
        "trained in run": "run-1",
    }
    assert provenance["tuned"] == {"learning_rate": 0.003, "batch_size": 64}
    assert provenance["data"]["spans"] == ["2", "3"] and provenance["data"]["rows"] == {"train": 10, "test": 2}
    assert provenance["data"]["sources"] == ["/data/survey-2.csv", "/data/survey-3.csv"]
    assert provenance["transform"] == {"graph": str(graph), "analyzers": 2, "features": 1,
                                       "left out": {"when": "a date"}, "learnt in run": "run-1"}  # fmt: skip
    page = tmp_path / "report.html"
    write_report(
        page, task="csv", metrics={"split": "test"}, checks=[], blessed=True, figures=[], provenance=provenance
    )
    text = page.read_text()
    assert "Tuned: the settings a Tuner chose" in text and "<td>batch_size</td><td>64</td>" in text
    assert "Transform: preprocessing learnt once" in text and "<td>when=a date</td>" in text
    assert "Spans: 2, 3" in text and "<td>rows in train</td><td>10</td>" in text and "bad_label" in text


def test_without_a_run_record_the_model_s_own_files_speak(tmp_path):
    model, model_run, examples = Model(tmp_path / "model"), ModelRun(tmp_path / "model_run"), Examples(tmp_path / "ex")
    model.write_task_spec("csv", "my_model", {"units": 8})
    model_run.write_json("history.json", {"epochs": 3, "batch_size": 16, "strategy": "default"})
    provenance = trained_with(model, model_run, examples)
    assert provenance["model"] == {"model_name": "my_model", "model_options": {"units": 8}, "strategy": "default",
                                   "epochs": 3, "batch_size": 16}  # fmt: skip
    assert provenance["tuned"] is None and provenance["transform"] is None and "sources" not in provenance["data"]
