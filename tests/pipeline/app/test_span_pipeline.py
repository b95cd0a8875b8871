"""The standard pipeline of a config with {SPAN} in data.source.path: its nodes, and one-line refusals (no run)."""

from __future__ import annotations

import pytest

from kflow.pipeline.app.standard_pipeline import build_pipeline
from kflow.pipeline.cli.main import main
from kflow.pipeline.dsl.config import load_config

CONFIG = """\
name: survey
pipeline_root: {root}/runs
data:
  dataset: csv
  source: {{path: "{pattern}"}}
  label: label
  spans: {spans}
"""


def write(tmp_path, spans="all", pattern="data/survey-{SPAN}.csv", numbers=(1, 2, 3)):
    for number in numbers:
        path = tmp_path / "data" / f"survey-{number}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("age,color,label\n" + "".join(f"{i},red,{'yes' if i % 2 else 'no'}\n" for i in range(40)))
    config = tmp_path / "survey.yaml"
    config.write_text(CONFIG.format(root=tmp_path, pattern=pattern, spans=spans))
    return config


def test_each_selected_span_is_an_ingest_of_its_own_files(tmp_path):
    pipeline = build_pipeline(load_config(write(tmp_path, spans="{last: 2}")))
    nodes = {node.id: node for node in pipeline.topological_order()}
    # Spans 2 and 3 are read; span 1 is not even ingested (nothing compares with it).
    assert [name for name in nodes if name.startswith("ingest")] == ["ingest_span_2", "ingest_span_3", "ingest"]
    assert nodes["ingest_span_3"].parameters["source_path"] == str(tmp_path / "data" / "survey-3.csv")
    assert nodes["ingest"].parameters["spans"] == ["2", "3"]
    assert nodes["validate"].parameters["drift_spans"] == ["3", "2"]
    assert {"span_statistics", "previous_span_statistics"} <= set(nodes["validate"].inputs)
    assert pipeline.metadata["spans"] == ["2", "3"]
    assert pipeline.metadata["plan_header"] == ["spans: 2, 3 (data.spans: {last: 2}); drift: span 3 against span 2"]


def test_latest_reads_one_span_and_ingests_the_previous_one_for_drift(tmp_path):
    nodes = [node.id for node in build_pipeline(load_config(write(tmp_path, spans="latest"))).topological_order()]
    assert nodes[:5] == ["ingest_span_2", "ingest_span_3", "statistics_span_2", "statistics_span_3", "ingest"]


@pytest.mark.parametrize(
    ("pattern", "spans", "message"),
    [
        ("data/survey-{SPAN}-{SPAN}.csv", "all", "data.source.path: a span pattern has {SPAN} exactly once"),
        ("data/other-{SPAN}.csv", "all", "data.source.path: no file matches the span pattern"),
        ("data/survey-{SPAN}.csv", "{from: 7}", "data.spans: {from: 7} selects none of the spans found (1, 2, 3)"),
        ("data/survey-1.csv", "all", "data.spans: needs {SPAN} (or a date: {YYYY}, {MM}, {DD}) in data.source.path"),
    ],
)
def test_validate_refuses_bad_spans_in_one_line(tmp_path, capsys, pattern, spans, message):
    assert main(["validate", str(write(tmp_path, spans=spans, pattern=pattern))]) == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1


def test_compile_says_the_pipeline_reads_the_spans_found_now(tmp_path, capsys):
    """A user trial: a compiled pipeline of spans (scheduled with kflow submit --schedule) kept retraining on the
    spans found when it was compiled, without a word."""
    config = write(tmp_path, spans="{last: 2}")
    assert main(["compile", str(config), "-o", str(tmp_path / "p.yaml"), "--image", "registry.example/kflow:1"]) == 0
    notes = capsys.readouterr().err.splitlines()
    assert "ingest: reads the spans found now (span 2, 3) in every run, a scheduled one too: a newer span is read " \
           "once the pipeline is compiled again (kflow run finds them at each run)" in notes, notes  # fmt: skip
