"""The dates of scored rows that the model cannot read: its `DateParts` layer reads any other text as a missing date,
so a file whose dates are written another way (epoch milliseconds, a typo) was scored without a word (a user trial:
the same rows scored 11,424 with ISO dates and 10,165 with epoch milliseconds). `kflow predict` says so, per column,
from the first SAMPLE scored rows, read as the layer reads them (`dates.day_number`)."""

from __future__ import annotations

from typing import Any

from kflow.components.datasets.tabular.dates import day_number
from kflow.pipeline.dsl.artifacts import Examples, Model

SAMPLE = 10_000


def unread_dates(model: Model, examples: Examples, split: str) -> list[str]:
    """`<column>: N of M values do not read as dates ('…'): read as a missing date` for each date the model reads
    of which some scored values are no date it knows; none for a model without dates."""
    specs = _date_columns(model)
    if not specs:
        return []
    import tensorflow as tf

    seen = {name: [0, 0, None] for name in specs}  # values, unread, the first unread
    data = tf.data.TFRecordDataset(examples.split_files(split), compression_type="GZIP").take(SAMPLE)
    for record in data.as_numpy_iterator():
        features = tf.train.Example.FromString(record).features.feature
        for name, order in specs.items():
            if name not in features:
                continue  # missing: the layer's missing flag, as in training
            for value in features[name].bytes_list.value:
                text = value.decode("utf-8", errors="replace")
                counts = seen[name]
                counts[0] += 1
                if text.strip() and day_number(text, order) is None:
                    counts[1] += 1
                    counts[2] = counts[2] if counts[2] is not None else text
    return [
        f"{name}: {unread} of {values} values do not read as dates ({first!r}…): read as a missing date"
        for name, (values, unread, first) in seen.items()
        if unread
    ]


def _date_columns(model: Model) -> dict[str, Any]:
    """{column: its day/month order} of the dates the model's preprocessing reads as their parts."""
    from kflow.components.datasets.task import task_for_model

    if not model.training_schema_file.is_file():
        return {}
    plan = getattr(task_for_model(model, model.training_schema_file), "preprocessing", None) or {}
    return {spec["name"]: spec["order"] for spec in plan.get("features", []) if spec.get("kind") == "date"}
