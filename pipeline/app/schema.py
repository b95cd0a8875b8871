"""The config's JSON Schema as `kflow schema` writes it: the config model's, with the names the registries know."""

from __future__ import annotations

from kflow.components.datasets import DATASETS, get_dataset
from kflow.components.trainer.strategies import STRATEGIES
from kflow.pipeline.dsl.config_schema import schema_text


def config_schema_text() -> str:
    """schemas/config.schema.json: every registered dataset (kflow's and other packages') and strategy
    listed, and the settings of each dataset that declares them."""
    settings = {name: model for name in DATASETS if (model := get_dataset(name).settings_model()) is not None}
    return schema_text({"data.dataset": list(DATASETS), "trainer.strategy": list(STRATEGIES)}, settings)
