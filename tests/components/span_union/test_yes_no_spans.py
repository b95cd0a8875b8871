"""Spans whose exports write a yes/no label (or feature) in other cases: one set of classes in the union.

plm's Wages (595 workers over 7 years), a year a file as a yearly export is; the next year's export capitalises
`union` (`No`/`Yes`) and `sex` (`Male`/`Female`). Each span's ingest read its own file's words as the classes, and
the union held four classes, `No, Yes, no, yes` (a user trial's run was BLESSED so).
"""

from __future__ import annotations

import pandas as pd
import tensorflow as tf

from kflow.components.datasets.csv.ingest.executor import run as ingest
from kflow.components.datasets.parquet.ingest.executor import run as ingest_parquet
from kflow.components.datasets.tabular.task import TabularTask
from kflow.components.span_union.executor import run as union
from kflow.components.util.schema import feature_spec, load_schema
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema
from tests.components.span_union.test_merged_schema import rdataset


def years(count: int = 2) -> list[pd.DataFrame]:
    wages = rdataset("plm", "Wages")
    return [wages.iloc[year::7].reset_index(drop=True) for year in range(count)]  # a worker's 7 rows, one a year


def capitalised(frame: pd.DataFrame, *columns: str) -> pd.DataFrame:
    return frame.assign(**{name: frame[name].str.capitalize() for name in columns})


def span(folder, frame, fmt="csv"):
    folder.mkdir(parents=True)
    path = folder / f"span.{fmt}"
    frame.to_csv(path, index=False) if fmt == "csv" else frame.to_parquet(path, index=False)
    examples, schema = Examples(folder / "examples"), Schema(folder / "schema")
    run = ingest if fmt == "csv" else ingest_parquet
    run(examples=examples, schema=schema, rejects=Rejects(folder / "rejects"), source_path=str(path), label="union")
    return examples, schema


def joined(tmp_path, frames, fmt="csv"):
    spans = [span(tmp_path / str(index), frame, fmt) for index, frame in enumerate(frames)]
    examples, schema = Examples(tmp_path / "union" / "examples"), Schema(tmp_path / "union" / "schema")
    inputs = {f"span_{i}": examples for i, (examples, _) in enumerate(spans)}
    inputs |= {f"span_{i}_schema": schema for i, (_, schema) in enumerate(spans)}
    union(examples=examples, schema=schema, spans=[str(i + 1) for i in range(len(frames))], **inputs)
    return examples, load_schema(schema.file)


def written(examples, schema, name) -> dict:
    spec = {name: feature_spec(schema)[name]}
    found: dict = {}
    for split in examples.splits:
        for record in tf.data.TFRecordDataset(examples.split_files(split), compression_type="GZIP"):
            value = tf.io.parse_single_example(record, spec)[name].numpy()
            found[value] = found.get(value, 0) + 1
    return found


def test_a_label_capitalised_in_the_next_span_keeps_two_classes(tmp_path):
    first, second = years()
    examples, schema = joined(tmp_path, [first, capitalised(second, "union", "sex")])
    labels = written(examples, schema, "union")
    assert set(labels) == {b"no", b"yes"}, labels
    counts = pd.concat([first, second])["union"].value_counts()
    assert labels == {b"no": counts["no"], b"yes": counts["yes"]}  # every worker of both years, in his class
    task = TabularTask(schema)
    task.prepare(examples, tmp_path / "assets")
    assert task.classes == ["no", "yes"]
    # A yes/no feature was a bool already (0 and 1, whatever the case): it stays one column of two values.
    assert "kflow_type=bool" in next(f for f in schema.feature if f.name == "south").annotation.tag


def test_a_label_in_mixed_cases_has_the_classes_of_one_written_alike(tmp_path):
    """Mixed cases in one file (`Yes`, `yes`, `no`) were a bool, classes 0 and 1; the same span written alike had
    `no` and `yes`: joined, four classes again. Now both are `no` and `yes`."""
    first, second = years()
    mixed = second.assign(union=[value.capitalize() if i % 3 else value for i, value in enumerate(second["union"])])
    assert mixed["union"].nunique() == 4
    examples, schema = joined(tmp_path, [first, mixed])
    assert set(written(examples, schema, "union")) == {b"no", b"yes"}


def test_parquet_spans_write_the_same_classes(tmp_path):
    first, second = years()
    examples, schema = joined(tmp_path, [first, capitalised(second, "union")], fmt="parquet")
    assert set(written(examples, schema, "union")) == {b"no", b"yes"}
