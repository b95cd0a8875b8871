"""The BulkInferrer executor on MNIST-like Examples and a hand-built model: every record scored once, with its key,
the same predictions as the model's in the three files, nothing scored for a refused model."""

from __future__ import annotations

import csv
import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from kflow.components.bulk_inferrer.executor import run
from kflow.pipeline.dsl.artifacts import InferenceResult, ModelBlessing
from tests.components.fixtures import read_split


def test_every_record_is_scored_once_with_its_key_and_the_models_prediction(bar_detector_inputs, tmp_path):
    examples, schema, model = bar_detector_inputs
    result = InferenceResult(tmp_path / "inference")
    summary = run(examples=examples, schema=schema, model=model, inference_result=result, split="test", batch_size=32)
    assert summary == {"inferred": True, "count": 300}
    images, labels = read_split(examples, "test")
    expected = keras.models.load_model(model.keras_file).predict_on_batch(images)
    lines = [json.loads(line) for line in (result.split_uri("test") / "predictions.jsonl").read_text().splitlines()]
    assert len(lines) == 300 and len({line["key"] for line in lines}) == 300
    files = [path.rsplit("/", 1)[1] for path in examples.split_files("test")]
    assert lines[0]["key"] == f"{files[0]}#0" and lines[-1]["key"].startswith(files[-1])
    assert [line["label"] for line in lines] == [str(label) for label in labels]
    scores = np.array([[line["scores"][str(k)] for k in range(10)] for line in lines])
    np.testing.assert_allclose(scores, expected, atol=1e-6)
    assert [line["predicted_class"] for line in lines] == [str(k) for k in expected.argmax(axis=1)]
    rows = list(csv.DictReader((result.split_uri("test") / "predictions.csv").open()))
    assert [row["key"] for row in rows] == [line["key"] for line in lines]
    assert [row["predicted_class"] for row in rows] == [line["predicted_class"] for line in lines]
    records = tf.data.TFRecordDataset(
        str(result.split_uri("test") / "predictions.tfrecord.gz"), compression_type="GZIP"
    )
    parsed = [tf.train.Example.FromString(record.numpy()).features.feature for record in records]
    assert [f["key"].bytes_list.value[0].decode() for f in parsed] == [line["key"] for line in lines]
    np.testing.assert_allclose([list(f["scores"].float_list.value) for f in parsed], expected, atol=1e-6)
    assert result.record["count"] == 300 and result.record["model"] == model.uri


def test_a_model_that_was_not_blessed_is_not_used(bar_detector_inputs, tmp_path):
    examples, schema, model = bar_detector_inputs
    blessing = ModelBlessing(tmp_path / "blessing")
    blessing.set_blessed(False, [])
    result = InferenceResult(tmp_path / "inference")
    summary = run(examples=examples, schema=schema, model=model, inference_result=result, blessing=blessing)
    assert summary == {"inferred": False}
    assert result.record["inferred"] is False and "not blessed" in result.record["reason"]
    assert not result.split_uri("test").exists()
    with pytest.raises(ValueError, match="no split 'holdout'"):
        run(examples=examples, schema=schema, model=model, inference_result=InferenceResult(tmp_path / "x"),
            split="holdout")  # fmt: skip


@pytest.mark.slow  # ~12 s; make test scores new rows as the Evaluator did in tests/e2e/test_predict.py.
def test_a_trained_tabular_model_scores_in_a_fresh_process_as_after_a_cached_trainer(tmp_path):
    """A later run reuses the Trainer's model from the cache: the BulkInferrer's process never built it, so the
    model's custom layers (tabular_mlp's FillMissing) must be registered from what the model says it is."""
    import subprocess
    import sys
    import textwrap

    from kflow.components.trainer.executor import run as train
    from kflow.pipeline.dsl.artifacts import Model, ModelRun
    from tests.components.datasets.tabular_fixtures import ingest_diabetes

    examples, schema = ingest_diabetes(tmp_path)
    model = Model(tmp_path / "model")
    train(dataset="csv", examples=examples, schema=schema, model=model, model_run=ModelRun(tmp_path / "run"),
          epochs=1, batch_size=32)  # fmt: skip
    code = textwrap.dedent(f"""
        import sys
        from kflow.components.bulk_inferrer.executor import run
        from kflow.pipeline.dsl.artifacts import Examples, InferenceResult, Model, Schema
        assert "kflow.components.models.tabular_mlp" not in sys.modules
        summary = run(examples=Examples({str(examples.uri)!r}), schema=Schema({str(schema.uri)!r}),
                      model=Model({str(model.uri)!r}), inference_result=InferenceResult({str(tmp_path / "out")!r}))
        print(summary["count"])
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split()[-1]) == examples.stats["accepted"]["test"]
