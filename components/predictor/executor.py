"""Predictor executor: a split of Examples through the model in a Beam pipeline, batched, into three files.

    split files ─ records (file, index, serialized) ─ batches of `batch_size` ─ score: the model's inputs as the
    task reads them (`Task.inputs`: no label needed), one model call a batch ─ entries ─┬─ predictions.jsonl
                                                                                       ├─ predictions.csv
                                                                                       └─ predictions.tfrecord.gz

A record's key is its key feature's value (the scored data's schema tags it `role=key`: the data's key column, or
the ingest's `__source_row__`, `FILE:LINE` of the source) or else `<shard file>#<index>`. The rows come in no
particular order: join them on the key. Each worker loads the model once (`DoFn.setup`), with its custom objects
registered from the model's own assets (`models.load_trained`), so it scores after a cached Trainer as well.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import apache_beam as beam
import numpy as np
import tensorflow as tf
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.options.pipeline_options import PipelineOptions

from kflow.components.datasets.task import Task, task_for_model
from kflow.components.ingest.compressed import open_source
from kflow.components.ingest.tfrecord_file import read_records
from kflow.components.models import load_trained
from kflow.components.util.corrupt_examples import reads_examples
from kflow.components.util.predictions import (
    CSV,
    JSONL,
    TFRECORD,
    UNSCORED,
    class_names,
    serving_input_names,
)
from kflow.components.util.schema import annotation_tags, load_schema, may_be_absent
from kflow.pipeline.dsl.artifacts import Examples, InferenceResult, Model, Schema
from kflow.pipeline.dsl.beam_options import named_runner
from kflow.pipeline.dsl.beam_pipeline import beam_pipeline

log = logging.getLogger("kflow.predictor")


@reads_examples
def run(
    *,
    model: Model,
    examples: Examples,
    predictions: InferenceResult,
    schema: Schema | None = None,
    split: str | None = None,
    batch_size: int = 256,
    beam_args: Sequence[str] = (),
) -> dict[str, Any]:
    """Scores `split` (unset: the Examples' only split); returns {"count": records scored, "split": split}."""
    split = _split(examples, split)
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if not model.training_schema_file.is_file():
        raise ValueError(
            f"the model {model.uri} has no assets/{Model.SCHEMA_FILE} (the schema it was trained on): "
            "it was trained by an earlier kflow; train it again to score with it"
        )
    task = task_for_model(model, model.training_schema_file)
    classes = class_names(task)
    key_feature, key_type, widened = None, "string", []
    if schema is not None:
        scored = load_schema(schema.file)
        widened = check_columns(task, scored)
        tags = {feature.name: annotation_tags(scored, feature.name) for feature in scored.feature}
        key_feature = next((name for name, tagged in tags.items() if tagged.get("role") == "key"), None)
        key_type = tags[key_feature].get("kflow_type", "string") if key_feature else key_type
    folder = predictions.split_uri(split)
    folder.mkdir(parents=True)
    table = task.prediction_table(classes)  # how an entry is written: a CSV row, an Example
    header = _csv_text(table.header())
    score = _Score(str(model.uri), key_feature, key_type, classes, widened)
    with beam_pipeline(PipelineOptions(named_runner(list(beam_args)))) as pipeline:
        entries = (
            pipeline
            | "Files" >> beam.Create(examples.split_files(split))
            | "Records" >> beam.FlatMap(_records)
            | "Batch" >> beam.BatchElements(min_batch_size=min(batch_size, 32), max_batch_size=batch_size)
            | "Score" >> beam.ParDo(score)
        )
        single = {"num_shards": 1, "shard_name_template": ""}
        _ = (
            entries
            | "Json" >> beam.Map(lambda entry: json.dumps(entry, ensure_ascii=False))
            | "WriteJson" >> beam.io.WriteToText(str(folder / JSONL), **single)
        )
        _ = (
            entries
            | "Row" >> beam.Map(_csv_line, table)
            | "WriteCsv" >> beam.io.WriteToText(str(folder / CSV), header=header, **single)
        )
        _ = (
            entries
            | "Example" >> beam.Map(_serialized_example, table)
            | "WriteTFRecord"
            >> beam.io.WriteToTFRecord(str(folder / TFRECORD), compression_type=CompressionTypes.GZIP, **single)
        )
    count = unscored = 0
    with (folder / JSONL).open() as lines:
        for line in lines:
            count += 1
            unscored += '"unscored": ' in line  # predictions.UNSCORED: no class, no value
    predictions.write_json(
        InferenceResult.RECORD,
        {
            "inferred": True,
            "split": split,
            "count": count,
            "unscored": unscored,
            "model": model.uri,
            "examples": examples.uri,
            "key": key_feature or "<shard file>#<index>",
            "classes": classes,
            "outputs": [TFRECORD, JSONL, CSV],
        },
    )
    # No folder: `kflow predict` writes into a staging folder it renames at the end, and says the final one itself.
    log.info("predict: %d record(s) of split %s scored", count, split)
    if unscored:
        log.warning("predict: %d of them have no class or value: %s", unscored, UNSCORED)
    return {"count": count, "split": split, "unscored": unscored}


class ColumnsRefused(ValueError):
    """The scored data lacks a column the model reads, or holds it as another type: the data's fault, not the
    model's (`kflow predict` says so as it says its other refusals of --data)."""


def check_columns(task: Task, scored: Any) -> list[str]:
    """One line for the first column the model reads that the scored data lacks or holds as another type; returns
    the columns of whole numbers in training that hold decimals here (read as numbers alike: the model takes
    float32 for both, as the ingest reads such a column again as float)."""
    trained = task.schema
    names = {feature.name for feature in scored.feature}
    needed = list(getattr(task, "input_features", None) or [])
    missing = [name for name in needed if name not in names and not may_be_absent(trained, name)]
    if missing:
        raise ColumnsRefused(
            f"the data has no column {', '.join(map(repr, missing))}, which the model reads "
            f"(it reads {', '.join(needed)})"
        )
    widened = []
    for name in (name for name in needed if name in names):  # an absent one: missing in every row, of no type
        want = _parsed_as(annotation_tags(trained, name).get("kflow_type"))
        have = _parsed_as(annotation_tags(scored, name).get("kflow_type"))
        if (want, have) == ("int", "float") and annotation_tags(trained, name).get("kflow_type") == "int":
            widened.append(name)
        elif want and have and want != have:
            kind = annotation_tags(trained, name).get("kflow_type")
            raise ColumnsRefused(
                f"the data's column {name!r} holds {have} values; the model was trained on {want} ones (a table's: "
                f"declare it in the ingest's columns, {{{name}: {kind}}}; TFRecords hold each feature's type, which "
                f"their ingest takes as it is: write {name!r} as the training records held it)"
            )
    return widened


def _parsed_as(kind: str | None) -> str | None:
    """How a feature of this kflow type is stored: bool as int (0/1)."""
    return {"bool": "int"}.get(kind, kind) if kind else None


def _split(examples: Examples, split: str | None) -> str:
    splits = examples.splits
    if split is None:
        if len(splits) != 1:
            shown = ", ".join(splits) or "none"
            raise ValueError(f"the Examples have the splits {shown}: name the one to score (split)")
        return splits[0]
    if split not in splits:
        raise ValueError(f"the Examples have no split {split!r} (splits: {', '.join(splits) or 'none'})")
    return split


def _records(path: str) -> Iterator[tuple[str, bytes]]:
    """(`<file>#<index>`, serialized Example) of each record of a gzipped TFRecord shard, streamed."""
    name = Path(path).name
    with open_source(path) as stream:
        for index, (offset, record) in enumerate(read_records(stream)):
            if record is None:
                raise ValueError(f"{path}: a broken TFRecord at byte {offset} of its uncompressed stream")
            yield f"{name}#{index}", record


class _Score(beam.DoFn):
    """A batch of (key, serialized Example) → one entry a record; the model is loaded once a worker."""

    def __init__(
        self, model_uri: str, key_feature: str | None, key_type: str, classes: list[str], widened: list[str] = ()
    ):
        self.model_uri, self.key_feature, self.key_type, self.classes = model_uri, key_feature, key_type, classes
        self.widened = list(widened)

    def setup(self) -> None:
        model = Model(self.model_uri)
        self.task = task_for_model(model, model.training_schema_file)
        for name in self.widened:  # whole numbers in training, decimals here: parsed as stored, fed as float32
            self.task.types[name] = "float"
        if model.keras_file.is_file():
            keras_model = load_trained(model.keras_file, self.task.model_name)
            self.predict = keras_model.predict_on_batch
        else:  # a pushed folder: the serving SavedModel, with kflow's assets (trainer/serving_export.py)
            self.predict = _serving_function(model)

    def process(self, batch: list[tuple[str, bytes]]) -> Iterator[dict[str, Any]]:
        serialized = tf.constant([record for _, record in batch])
        keys = [key for key, _ in batch] if self.key_feature is None else self._keys(serialized)
        yield from self.task.prediction_entries(keys, serialized, self.predict, self.classes)

    def _keys(self, serialized: tf.Tensor) -> list[str]:
        dtype = {"int": tf.int64, "bool": tf.int64, "float": tf.float32}.get(self.key_type, tf.string)
        values = tf.io.parse_example(serialized, {self.key_feature: tf.io.FixedLenFeature([1], dtype)})
        return [v.decode() if isinstance(v, bytes) else str(v) for v in values[self.key_feature].numpy()[:, 0].tolist()]


def _serving_function(model: Model) -> Any:
    """A function from the task's inputs to the model's outputs (a classifier's `scores`) through the SavedModel's
    serving signature, under the names it takes for the features (`assets/inputs.json`)."""
    signature = tf.saved_model.load(str(model.path)).signatures["serving_default"]
    specs = signature.structured_input_signature[1]
    names = serving_input_names(model.assets_uri)

    def predict(inputs: Any) -> np.ndarray:
        given = inputs if isinstance(inputs, dict) else {next(iter(specs)): inputs}
        tensors = {names.get(key, key): value for key, value in given.items()}
        tensors = {name: value for name, value in tensors.items() if name in specs}  # a model of some columns only
        outputs = signature(**{name: _declared(value, specs[name]) for name, value in tensors.items()})
        return (outputs["scores"] if "scores" in outputs else next(iter(outputs.values()))).numpy()

    return predict


def _declared(value: Any, spec: tf.TensorSpec) -> tf.Tensor:
    """`value` as the signature declares it: the task's column `[n, 1]` for a model that takes one value a row
    (`keras.Input(shape=())`, as keras.io's structured-data examples write them) is `[n]`, and back, as Keras'
    own functional models adjust it; the SavedModel's signature does not (a `[n, 1]` column ran its graph
    with a rank too many)."""
    tensor = tf.cast(value, spec.dtype)
    rank = spec.shape.rank
    if rank is not None and tensor.shape.rank == rank + 1 and tensor.shape[-1] == 1:
        return tf.squeeze(tensor, -1)
    if rank is not None and tensor.shape.rank is not None and tensor.shape.rank + 1 == rank and spec.shape[-1] == 1:
        return tensor[..., tf.newaxis]
    return tensor


def _csv_text(row: list[Any]) -> str:
    text = io.StringIO()
    csv.writer(text, lineterminator="").writerow(row)
    return text.getvalue()


def _csv_line(entry: dict[str, Any], table: Any) -> str:
    return _csv_text(table.row(entry))


def _serialized_example(entry: dict[str, Any], table: Any) -> bytes:
    return table.example(entry).SerializeToString()
