"""The tabular datasets' bundle: csv, parquet, tfrecord and tfds are one tabular dataset read from another format.

Each format's `DATASET` is `tabular_dataset(...)`: the same task, metrics, data checks and backend limits, the
label and problem type taken from `data`, and only its ingest and its own `data` fields told apart.
"""

from __future__ import annotations

from kflow.components.datasets.bundle import Dataset

TASK = "kflow.components.datasets.tabular.task:TabularTask"
METRICS = "kflow.components.datasets.tabular.metrics:TabularMetrics"
# Records (csv) or label values (parquet) sampled to infer what a config leaves out, unless data.infer_rows says.
INFER_ROWS = 10_000
# What a table's config trains with where it leaves these fields out (a config's own values win): up to 200 epochs,
# stopped 15 after the best validation loss and kept at the best epoch, batches of 32 at Adam's 0.003. Small tables
# overfit within a few epochs, larger ones keep learning: on the gauntlet's 338 real tables (bench/README.md) this
# recipe against 40 fixed epochs at 0.01 took the median R² gap to gradient boosting from 0.01 to below 0; the general
# defaults (3 epochs of batches of 128) trained iris 3 steps, to an accuracy of 0.33.
TRAINING = {
    "trainer.epochs": 200,
    "trainer.early_stopping_patience": 15,
    "trainer.batch_size": 32,
    "trainer.optimizer.learning_rate": 0.003,
}
# The metrics the tabular task's training reports (TabularTask.metrics), each also as val_<name>, beside the loss.
TRAINING_METRICS = {"classification": ("accuracy",), "regression": ("mae", "rmse")}
# trainer.model_options of the tabular task: its data options (plan.DATA_OPTIONS) and the MLP's (task.MODEL_OPTIONS).
MODEL_OPTIONS = ("class_weighting", "max_categories", "text_min_chars", "max_tokens", "hidden_units", "dropout")


def string_columns_limit(backend: str, input_types: dict[str, str]) -> str | None:
    """Why a table's model cannot train on `backend`, or None: under JAX, its columns of strings. Its model takes raw
    values and looks them up inside (StringLookup, TextVectorization, DateParts: the served model reads raw values),
    and JAX arrays hold no strings; a table of numbers (bool included) trains there."""
    strings = [name for name, kind in input_types.items() if kind == "string"]
    if backend != "jax" or not strings:
        return None
    shown = ", ".join(repr(name) for name in strings[:5]) + (
        f" and {len(strings) - 5} more" if len(strings) > 5 else ""
    )
    return (
        f"its model takes the text column(s) {shown} as strings and looks them up inside itself (so the served model "
        "reads raw values), and JAX arrays hold no strings; train it under a TensorFlow strategy"
    )


def tabular_dataset(
    name: str, ingest: str, data_fields: dict[str, str], *, source_test_split: bool = False, label_required=True
) -> Dataset:
    """The bundle of the tabular dataset read by `ingest`; `data_fields`: its `data` fields besides the label and
    the problem type, {config field: ingest parameter}; `label_required`: False where the source names the label
    (tfds: the builder's supervised label)."""
    return Dataset(
        name=name,
        ingest=ingest,
        schema=None,  # The ingest writes it from the data, tagging the label (role=label, task=...).
        task=TASK,
        metrics=METRICS,
        source_test_split=source_test_split,
        validates_data=True,
        required_data_fields=("label",) if label_required else (),
        data_fields={"label": "label", "problem_type": "problem_type", **data_fields},
        column_limits="kflow.components.datasets.tabular.dataset:string_columns_limit",
        training=TRAINING,
        models=("tabular_mlp",),
        model_options=MODEL_OPTIONS,
    )
