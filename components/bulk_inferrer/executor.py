"""BulkInferrer executor: streams one split through the model, a batch at a time, into three files.

A record's key is its place in the split, `<shard file>#<index>` (the Examples' own order, which the task's
input pipeline keeps), unless the data has a key column (`data.key`), whose value is the key. The label, when
the split has one, is written beside the prediction, so the file is enough to compute any metric again.
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from kflow.components.datasets.task import task_for_model
from kflow.components.models import load_trained
from kflow.components.util.corrupt_examples import reads_examples
from kflow.components.util.predictions import (
    CSV,
    JSONL,
    TFRECORD,
    class_names,
    csv_header,
    csv_row,
    prediction_entry,
    prediction_example,
)
from kflow.components.util.schema import annotation_tags, load_schema
from kflow.pipeline.dsl.artifacts import Examples, InferenceResult, Model, ModelBlessing, Schema

log = logging.getLogger("kflow.bulk_inferrer")


@reads_examples
def run(
    *,
    examples: Examples,
    schema: Schema,
    model: Model,
    inference_result: InferenceResult,
    blessing: ModelBlessing | None = None,
    split: str = "test",
    batch_size: int = 256,
) -> dict[str, Any]:
    if blessing is not None and not blessing.blessed:
        reason = f"the model was not blessed ({blessing.uri})"
        inference_result.write_json(InferenceResult.RECORD, {"inferred": False, "reason": reason, "split": split})
        log.info("bulk_inferrer: %s; nothing scored", reason)
        return {"inferred": False}
    if split not in examples.splits:
        raise ValueError(f"the Examples have no split {split!r} (splits: {', '.join(examples.splits) or 'none'})")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")

    task = task_for_model(model, schema.file)
    keras_model = load_trained(model.keras_file, task.model_name)
    classes = class_names(task)
    folder = inference_result.split_uri(split)
    folder.mkdir(parents=True)
    count = 0
    batches = task.dataset(examples, split, batch_size=batch_size, training=False, seed=0)
    keys = _keys(examples, split, _key_feature(schema))
    with (
        tf.io.TFRecordWriter(str(folder / TFRECORD), options="GZIP") as records,
        (folder / JSONL).open("w") as lines,
        (folder / CSV).open("w", newline="") as table,
    ):
        writer = csv.writer(table)
        writer.writerow(csv_header(classes, labelled=True))
        for batch in batches.as_numpy_iterator():
            outputs = np.asarray(keras_model.predict_on_batch(batch[0]), np.float64)
            labels = np.asarray(batch[1]).reshape(len(outputs), -1)[:, 0] if len(batch) > 1 else [None] * len(outputs)
            for output, label in zip(outputs, labels, strict=True):
                key = next(keys, None)
                if key is None:
                    raise RuntimeError(f"the {split} split yields more predictions than it has records")
                entry = prediction_entry(key, output, classes, label)
                records.write(prediction_example(entry).SerializeToString())
                lines.write(json.dumps(entry, ensure_ascii=False) + "\n")
                writer.writerow(csv_row(entry, classes))
                count += 1
    if next(keys, None) is not None:
        raise RuntimeError(f"the model scored {count} records of the {split} split, which holds more")
    inference_result.write_json(
        InferenceResult.RECORD,
        {"inferred": True, "split": split, "count": count, "model": model.uri, "outputs": [TFRECORD, JSONL, CSV]},
    )
    log.info("bulk_inferrer: %d record(s) of split %s scored", count, split)  # the run's summary names the folder
    return {"inferred": True, "count": count}


def _key_feature(schema: Schema) -> str | None:
    """The data's key column (`data.key`: the schema tags it role=key), if any."""
    proto = load_schema(schema.file)
    return next((f.name for f in proto.feature if annotation_tags(proto, f.name).get("role") == "key"), None)


def _keys(examples: Examples, split: str, key_feature: str | None) -> Iterator[str]:
    """Each record's key, in the order the task reads the split's files."""
    for path in examples.split_files(split):
        name = Path(path).name
        for index, serialized in enumerate(tf.data.TFRecordDataset(str(path), compression_type="GZIP")):
            if key_feature is None:
                yield f"{name}#{index}"
                continue
            feature = tf.train.Example.FromString(serialized.numpy()).features.feature[key_feature]
            values = getattr(feature, feature.WhichOneof("kind") or "bytes_list").value
            yield values[0].decode() if isinstance(values[0], bytes) else str(values[0])
