"""An image folder grows a class folder between two runs (scikit-learn's real 8×8 digits, 0-2 then 0-3).

The run after it warm-starts from the blessed three-class model with its outputs mapped by class name, and its
Evaluator says why that model is no baseline (it predicts none of the new class's images), where it scored the
old model's three columns against four classes' labels and failed with an IndexError."""

from __future__ import annotations

import logging
import shutil

import pytest

from kflow.components.datasets.images.ingest.executor import run as ingest_images
from kflow.components.evaluator.executor import run as evaluate
from kflow.components.trainer.executor import run as train
from kflow.pipeline.dsl.artifacts import Examples, Model, ModelBlessing, ModelEvaluation, ModelRun, Rejects, Schema
from tests.components.datasets.images.image_fixtures import write_digits


@pytest.mark.slow  # ~18 s: two image runs; make test warm-starts in test_warm_start.py
def test_a_new_class_folder_warm_starts_by_class_name_and_its_evaluation_says_why_no_baseline(tmp_path, caplog):
    digits = write_digits(tmp_path / "digits", limit=480)

    def trained(name: str, classes: str, **warm):
        folder = tmp_path / name
        for digit in classes:
            shutil.copytree(digits / digit, folder / "images" / digit)
        examples, schema, model = Examples(folder / "examples"), Schema(folder / "schema"), Model(folder / "model")
        ingest_images(examples=examples, schema=schema, rejects=Rejects(folder / "rejects"),
                      source_path=str(folder / "images"), image={"size": 8})  # fmt: skip
        train(dataset="images", examples=examples, schema=schema, model=model, model_run=ModelRun(folder / "run"),
              epochs=1, batch_size=32, **warm)  # fmt: skip
        return examples, schema, model

    _, _, three = trained("three", "012")
    assert three.class_names == ["0", "1", "2"]
    with caplog.at_level(logging.INFO, logger="kflow.trainer"):
        examples, schema, four = trained(
            "four", "0123", warm_start="latest_blessed", warm_start_model_uri=str(three.uri)
        )
    assert four.class_names == ["0", "1", "2", "3"]
    assert "the classes mapped by name: new ['3'], gone none" in caplog.text

    evaluation, blessing = ModelEvaluation(tmp_path / "evaluation"), ModelBlessing(tmp_path / "blessing")
    evaluate(examples=examples, schema=schema, model=four, evaluation=evaluation, blessing=blessing,
             baseline_model_uri=str(three.uri))  # fmt: skip
    assert "baseline" not in evaluation.metrics
    assert "predicts other classes (0, 1, 2) than this one" in blessing.read_json("blessing.json")["no_baseline"]
