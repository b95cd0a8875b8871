"""A dataset's own training recipe, in the trainer fields a config leaves out.

The trainer section's general defaults (3 epochs of batches of 128 at Adam's 0.001) suit no table: on iris's 120
training rows they are 3 steps. A dataset may declare what its model trains well with (`Dataset.training`: the tabular
datasets' is `components/datasets/tabular/dataset.py`'s TRAINING); a config that leaves such a field out gets it, one
that sets it keeps its own, and one that sets its epochs trains that many, stopped early only if it says so (a
recipe's early stopping goes with its epochs). Applied once, where the config is loaded for a run, a plan or a
compile, so the run's record, MLflow's parameters, the DAG (and so the cache key) and a compiled pipeline.yaml hold
the values trained with.
"""

from __future__ import annotations

from kflow.components.datasets import DATASETS, get_dataset
from kflow.pipeline.dsl.config import PipelineConfig


def with_dataset_training(config: PipelineConfig) -> PipelineConfig:
    """`config` with its dataset's training recipe in the trainer fields it leaves out."""
    if config.data is None or config.data.dataset not in DATASETS:  # an unknown dataset is named by config_checks
        return config
    recipe = dict(get_dataset(config.data.dataset).training)
    if EPOCHS in config.given_fields:  # how long to train is one choice: the epochs set, stopped early only if said
        recipe.pop(PATIENCE, None)
    return config.with_defaults(recipe)


EPOCHS, PATIENCE = "trainer.epochs", "trainer.early_stopping_patience"
