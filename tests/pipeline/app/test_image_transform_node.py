"""The standard pipeline learns an image dataset's pixel scaling only for a model that takes it."""

from __future__ import annotations

import pytest

from kflow.components.datasets import get_dataset
from kflow.components.models import SCALED_BY_TRANSFORM
from kflow.pipeline.app.standard_pipeline import build_pipeline
from kflow.pipeline.app.transform_section import IMAGE_OPTIONS
from kflow.pipeline.dsl.config import validate_config
from tests.components.datasets.images.image_fixtures import write_digits
from tests.conftest import REPO


def _nodes(tmp_path, dataset: str, **trainer) -> list[str]:
    source = tmp_path / "digits"
    if not source.exists():  # validate reads an image folder's listing, as the ingest does: a real one
        write_digits(source, limit=20)
    config = validate_config(
        {
            "name": "images",
            "pipeline_root": str(tmp_path / "runs"),
            "data": {"dataset": dataset, "source": {"path": str(source)}},
            "trainer": {"epochs": 1, **trainer},
        },
        "test",
    )
    return [node.id for node in build_pipeline(config).components]


@pytest.mark.parametrize("dataset", sorted(IMAGE_OPTIONS))
def test_the_default_and_the_convnets_get_a_transform_node(tmp_path, dataset):
    assert get_dataset(dataset).task_class().default_model in SCALED_BY_TRANSFORM
    assert "transform" in _nodes(tmp_path, dataset)
    assert "transform" in _nodes(tmp_path, dataset, model="mnist_convnet")


@pytest.mark.parametrize("dataset", sorted(IMAGE_OPTIONS))
def test_a_users_module_gets_none_its_model_would_not_read_the_scaling(tmp_path, dataset):
    module = REPO / "bench" / "guides" / "models" / "dense_mnist.py"
    nodes = _nodes(tmp_path, dataset, module=str(module))
    assert nodes[0] == "ingest" and "train" in nodes and "transform" not in nodes
