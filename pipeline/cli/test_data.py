"""`kflow diff`: whether two runs' metrics were measured on the same test data, said before the metrics.

Two runs' test data are the same when the Examples their Evaluator read have one fingerprint, or their test splits
hold the same bytes (another fingerprint, from another kflow version, over the same data).
Otherwise what differs is listed: the spans the Examples hold (the union's `spans`), the test split's row count,
and the test split's statistics, compared feature by feature with the drift comparators (components/util/drift.py:
L-infinity for categorical features, Jensen-Shannon for numeric ones), each feature past data.drift's default
thresholds named with its distance.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kflow.components.datasets.tabular.examples import ROW_NAME_COLUMNS
from kflow.components.util.drift import compare
from kflow.components.util.statistics_proto import feature_stats, read_split
from kflow.pipeline.dsl.artifacts import Examples, ExampleStatistics
from kflow.pipeline.dsl.config_model import default_of
from kflow.pipeline.dsl.config_model.data import DriftSection
from kflow.pipeline.runners.run_record import ArtifactRef, Run

SPLIT = "test"


def evaluated_examples(run: Run) -> ArtifactRef | None:
    """The Examples the run's (first) Evaluator read."""
    for _node, execution in sorted(run.executions.items()):
        if "blessed" in execution.summary and "examples" in execution.inputs:
            return execution.inputs["examples"]
    return None


def run_spans(run: Run) -> list[str] | None:
    """The spans a run's model saw: its evaluated Examples' `spans` property, else its ingest's summary."""
    ref = evaluated_examples(run)
    if ref is not None:
        metadata = Path(ref.uri) / "metadata.json"
        try:
            return list(json.loads(metadata.read_text())["spans"])
        except (OSError, ValueError, KeyError):
            pass
    ingest = run.executions.get("ingest")
    spans = ingest.summary.get("spans") if ingest else None
    return spans.split(",") if isinstance(spans, str) and spans else None


def _statistics(run: Run, examples: ArtifactRef) -> ExampleStatistics | None:
    """The statistics computed from those Examples in that run, where a node did."""
    for execution in run.executions.values():
        given = execution.inputs.get("examples")
        if given is not None and given.uri == examples.uri:
            for ref in execution.outputs.values():
                if ref.type == ExampleStatistics.type_name and Path(ref.uri).is_dir():
                    return ExampleStatistics(ref.uri)
    return None


def _test_rows(ref: ArtifactRef) -> int | None:
    try:
        return Examples(ref.uri).stats["accepted"].get(SPLIT)
    except (OSError, ValueError, KeyError):
        return None


def _same_bytes(first: ArtifactRef, second: ArtifactRef) -> bool:
    """Whether the two Examples' test splits hold the same bytes: a fingerprint is a cache key, which the code's
    version is part of, so an upgrade's re-ingest of the same data has another one (the writer is deterministic)."""
    import hashlib

    files = [sorted(Examples(ref.uri).split_uri(SPLIT).glob("*")) for ref in (first, second)]
    if not files[0] or [p.name for p in files[0]] != [p.name for p in files[1]]:
        return False
    if [p.stat().st_size for p in files[0]] != [p.stat().st_size for p in files[1]]:
        return False
    digests = []
    for paths in files:
        digest = hashlib.sha256()
        for path in paths:
            with path.open("rb") as data:
                while block := data.read(1 << 20):
                    digest.update(block)
        digests.append(digest.digest())
    return digests[0] == digests[1]


def test_data_difference(a: Run, b: Run) -> dict[str, Any] | None:
    """{"same": bool, "differences": [lines]} of the two runs' test data; None when either evaluated nothing."""
    first, second = evaluated_examples(a), evaluated_examples(b)
    if first is None or second is None:
        return None
    if first.fingerprint and first.fingerprint == second.fingerprint or _same_bytes(first, second):
        return {"same": True, "differences": []}
    differences = []
    spans = run_spans(a), run_spans(b)
    if spans[0] != spans[1]:
        differences.append(f"spans: {_spans(spans[0])} → {_spans(spans[1])}")
    rows = _test_rows(first), _test_rows(second)
    if rows[0] != rows[1]:
        differences.append(f"test rows: {rows[0]} → {rows[1]}")
    statistics = _statistics(a, first), _statistics(b, second)
    if all(statistics) and all(SPLIT in found.splits for found in statistics):
        splits = [read_split(found, SPLIT) for found in statistics]
        columns = [set(feature_stats(split)) for split in splits]
        for side, only in (("first", columns[0] - columns[1]), ("second", columns[1] - columns[0])):
            if only:  # a column dropped or added (or with no value left on one side)
                differences.append(f"test columns: only in the {side} run's: {', '.join(sorted(only))}")
        drifted = compare(
            splits[1],
            splits[0],
            l_infinity_threshold=default_of(DriftSection, "l_infinity"),
            jensen_shannon_threshold=default_of(DriftSection, "jensen_shannon"),
        )
        differences += [  # not the rows' names: other rows have other names
            f"test statistics: {found.feature}: {found.describe()}"
            for found in drifted
            if found.drifted and found.feature not in ROW_NAME_COLUMNS
        ]
    if not differences:
        differences.append(
            "the Examples differ (another fingerprint), with the same spans, rows, columns and statistics"
        )
    return {"same": False, "differences": differences}


def _spans(spans: list[str] | None) -> str:
    return ", ".join(spans) if spans else "none"


def format_test_data(found: dict[str, Any] | None) -> list[str]:
    """The `test data:` lines of `kflow diff`."""
    if found is None:
        return ["test data:", "  no evaluation in one of the runs"]
    if found["same"]:
        return ["test data:", "  the same (the metrics below compare the models on one test set)"]
    return [
        "test data: DIFFER (the metrics below were measured on different test sets)",
        *(f"  {line}" for line in found["differences"]),
    ]
