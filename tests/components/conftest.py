"""Fixtures shared by the components' tests."""

from __future__ import annotations

import pytest

from kflow.pipeline.dsl.artifacts import Model
from tests.components.fixtures import save_model, write_examples, write_schema


@pytest.fixture(scope="session")
def bar_detector_inputs(tmp_path_factory):
    """MNIST-like Examples (300 test records in 3 shards), their schema, and the bar detector as a kflow Model."""
    from tests.components.evaluator.test_evaluator_executor import bar_detector

    root = tmp_path_factory.mktemp("evaluator-inputs")
    examples = write_examples(root / "examples", counts={"train": 20, "test": 300}, shards=3)
    model = Model(root / "model")
    save_model(bar_detector(), model)
    model.write_task_spec("mnist", "mnist_convnet", {})
    return examples, write_schema(root / "schema"), model
