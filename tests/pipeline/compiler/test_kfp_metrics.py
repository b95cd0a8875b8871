"""Evaluation results → KFP artifact metadata in the executor output, as KFP's own executor writes it."""

import json

import pytest
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

from kflow.pipeline.runners.kfp_entrypoint import main
from kflow.pipeline.runners.kfp_metrics import evaluation_summary, metrics_metadata, write_executor_output

QUORA_LIKE = {
    "scalars": {"roc_auc": 0.75, "example_count": 4},
    "confusion_matrix": {"categories": ["0", "1"], "matrix": [[2, 0], [1, 1]]},
    "roc": {"fpr": [0.0, 0.0, 0.5, 1.0], "tpr": [0.0, 0.5, 1.0, 1.0], "thresholds": [1.0, 0.8, 0.4, 0.1]},
}


def executor_input(tmp_path, names=("evaluation", "classification_metrics")):
    titles = {"evaluation": "system.Metrics", "classification_metrics": "system.ClassificationMetrics"}
    return {
        "outputs": {
            "artifacts": {
                name: {
                    "artifacts": [{"name": name, "type": {"schemaTitle": titles[name]}, "uri": str(tmp_path / name)}]
                }
                for name in names
            },
            "outputFile": str(tmp_path / "kfp" / "executor_output.json"),
        }
    }


def test_scalars_confusion_matrix_and_roc_curve_take_kfps_shapes():
    scalars, classification = metrics_metadata(QUORA_LIKE)
    assert scalars == {"example_count": 4.0, "roc_auc": 0.75}
    assert [spec["displayName"] for spec in classification["confusionMatrix"]["annotationSpecs"]] == ["0", "1"]
    assert [row["row"] for row in classification["confusionMatrix"]["rows"]] == [[2, 0], [1, 1]]
    point = {"confidenceThreshold": 0.4, "recall": 1.0, "falsePositiveRate": 0.5}
    assert classification["confidenceMetrics"][2] == point
    assert metrics_metadata({"scalars": {"perplexity": 3.5}}) == ({"perplexity": 3.5}, {})


def test_the_executor_output_parses_as_kfps_message_and_names_each_artifact(tmp_path):
    scalars, classification = metrics_metadata(QUORA_LIKE)
    path = write_executor_output(
        executor_input(tmp_path), {"evaluation": scalars, "classification_metrics": classification}
    )
    message = json_format.Parse(path.read_text(), pipeline_spec_pb2.ExecutorOutput())
    (evaluation,) = message.artifacts["evaluation"].artifacts
    assert evaluation.uri == str(tmp_path / "evaluation")
    assert json_format.MessageToDict(evaluation.metadata) == {"example_count": 4.0, "roc_auc": 0.75}
    # The metadata-only artifact gets a file for the launcher to upload.
    assert json.loads((tmp_path / "classification_metrics").read_text()) == classification
    with pytest.raises(ValueError, match="no output artifact 'nope'"):
        write_executor_output(executor_input(tmp_path), {"nope": {}})


def test_the_entrypoint_refuses_publish_metrics_without_the_executor_input(tmp_path, capsys):
    args = ["--component", "kflow.components.evaluator.component:Evaluator", "--publish-metrics", "evaluation=cm"]
    assert main(args) == 2
    assert "--publish-metrics needs --executor-input" in capsys.readouterr().err


@pytest.mark.parametrize("key", ["dataset", "task"])  # `task`: an evaluation cached before the key was renamed
def test_the_summary_names_the_dataset_the_model_was_evaluated_on(tmp_path, key):
    (tmp_path / "metrics.json").write_text(json.dumps({"split": "test", key: "csv", "accuracy": 0.9}))
    (tmp_path / "kfp_metrics.json").write_text(json.dumps({"scalars": {"accuracy": 0.9}}))
    summary = evaluation_summary(tmp_path, None)
    assert "csv model on the test split" in summary and "| accuracy | 0.9 |" in summary
