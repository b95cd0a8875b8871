"""StatisticsGen's executor: one Beam pipeline computes every split's feature statistics.

Each split's TFRecord shards are read by Beam (`ReadFromTFRecord`), folded into a
`SplitAccumulator` (components/statistics_gen/statistics.py) by a CombineFn whose partial
results merge across workers, and written as `Split-<split>/FeatureStats.pb`, a binary
`DatasetFeatureStatisticsList` as TFX writes it. `statistics.html` summarises every split.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Sequence
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.options.pipeline_options import PipelineOptions
from tensorflow_metadata.proto.v0 import statistics_pb2

from kflow.components.statistics_gen.statistics import SplitAccumulator
from kflow.components.util.statistics_proto import feature_stats, read_split
from kflow.pipeline.dsl.artifacts import Examples, ExampleStatistics
from kflow.pipeline.dsl.beam_options import named_runner
from kflow.pipeline.dsl.beam_pipeline import beam_pipeline

log = logging.getLogger(__name__)


def run(*, examples: Examples, statistics: ExampleStatistics, beam_args: Sequence[str] = ()) -> dict[str, Any]:
    """Writes each split's statistics; returns {"<split>_examples": n, "features": k}."""
    splits = examples.splits
    if not splits:
        raise ValueError(f"the Examples under {examples.uri} have no splits")
    statistics.path.mkdir(parents=True, exist_ok=True)
    with beam_pipeline(PipelineOptions(named_runner(beam_args))) as pipeline:
        for split in splits:
            pattern = str(examples.split_uri(split) / "*.gz")
            _ = (
                pipeline
                | f"Read[{split}]" >> beam.io.ReadFromTFRecord(pattern, compression_type=CompressionTypes.GZIP)
                | f"Statistics[{split}]" >> beam.CombineGlobally(_StatisticsFn())
                | f"Write[{split}]" >> beam.Map(_write, statistics, split)
            )
    protos = {split: read_split(statistics, split) for split in splits}
    (statistics.path / "statistics.html").write_text(summary_html(protos))
    summary: dict[str, Any] = {f"{split}_examples": proto.num_examples for split, proto in protos.items()}
    summary["features"] = len({name for proto in protos.values() for name in feature_stats(proto)})
    log.info("statistics: %s", ", ".join(f"{key}={value}" for key, value in summary.items()))
    return summary


class _StatisticsFn(beam.CombineFn):
    def create_accumulator(self) -> SplitAccumulator:
        return SplitAccumulator()

    def add_input(self, accumulator: SplitAccumulator, record: bytes) -> SplitAccumulator:
        accumulator.add(record)
        return accumulator

    def merge_accumulators(self, accumulators) -> SplitAccumulator:
        accumulators = iter(accumulators)
        merged = next(accumulators)
        for other in accumulators:
            merged.merge(other)
        return merged

    def extract_output(self, accumulator: SplitAccumulator) -> SplitAccumulator:
        return accumulator


def _write(accumulator: SplitAccumulator, statistics: ExampleStatistics, split: str) -> None:
    proto = statistics_pb2.DatasetFeatureStatisticsList(datasets=[accumulator.to_proto(split)])
    path = statistics.split_file(split)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(proto.SerializeToString(deterministic=True))


def summary_html(protos: dict[str, statistics_pb2.DatasetFeatureStatistics]) -> str:
    """A self-contained page: per split, one row per feature."""
    parts = ["<!doctype html><meta charset='utf-8'><title>Feature statistics</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}"
             "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,th:first-child"
             "{text-align:left}</style>", "<h1>Feature statistics</h1>"]  # fmt: skip
    header = ["feature", "type", "present", "missing", "mean", "std", "min", "median", "max", "unique", "top values"]
    for split, proto in protos.items():
        parts.append(f"<h2>{html.escape(split)}: {proto.num_examples} examples</h2><table><tr>")
        parts += [f"<th>{name}</th>" for name in header] + ["</tr>"]
        for name, feature in feature_stats(proto).items():
            parts.append(
                "<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in _row(name, feature)) + "</tr>"
            )
        parts.append("</table>")
    return "".join(parts) + "\n"


def _row(name: str, feature: Any) -> list[Any]:
    kind = statistics_pb2.FeatureNameStatistics.Type.Name(feature.type).lower()
    if feature.HasField("string_stats"):
        stats = feature.string_stats
        common = stats.common_stats
        top = ", ".join(f"{value.value[:30]} ({int(value.frequency)})" for value in stats.top_values[:5])
        return [name, kind, common.num_non_missing, common.num_missing, "", "", "", "", "", stats.unique, top]
    stats = feature.num_stats
    common = stats.common_stats
    numbers = [f"{value:.4g}" for value in (stats.mean, stats.std_dev, stats.min, stats.median, stats.max)]
    return [name, kind, common.num_non_missing, common.num_missing, *numbers, "", ""]
