"""The Transform's analyzers: streaming Beam combiners over the records of a split.

Each analyzer (`Analyzer`: an id, a kind, the column it reads, its options) becomes one branch of a single Beam
pipeline (a split's `moments` analyzers share one, `ColumnsMomentsFn`): the records are read once
(`ReadFromTFRecord`), parsed in batches into columns without TensorFlow (`example_proto.Example`; a wide batch by
TensorFlow's parse_example: wide_parse.py), and each branch
folds its column with a combiner whose accumulator does not grow with the data, so partial results merge across
Beam workers:

- `moments`: count, mean, variance (Chan's parallel update), min and max (`MomentsFn`); `pixels`: the same of
  an image column's pixels, each channel (`channels` in its options);
- `vocabulary`, `words` and `tokens` (TextVectorization's: ASCII lowercase, punctuation stripped, whitespace
  split, 1- to n-grams): exact counts per distinct value, then the `top_k` most frequent with their counts at or
  above `frequency_threshold` (counts.py: `TopCounts`);
- `wordpiece_words`: the words keras-hub's WordPiece pretokenizer makes of a text (its own TensorFlow op, so the
  words are those `compute_word_piece_vocabulary` counts), all of them with their counts: the WordPiece learner's
  input (wordpiece_analysis.py);
- `quantiles`: boundaries from Beam's `ApproximateQuantiles` combiner, rank error at most QUANTILE_EPSILON × N;
- `classes`: the label's distinct values over every split, `counts` its training counts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms.stats import ApproximateQuantilesCombineFn

from kflow.components.datasets.tabular.plan import merge_whole_values, whole_values
from kflow.components.transform.counts import TopCounts
from kflow.components.transform.wide_parse import INT_MISSING, is_wide, parse_wide
from kflow.components.util.example_proto import Example
from kflow.components.util.folding import FoldFn
from kflow.pipeline.dsl.beam_options import LOCAL_RUNNER, named_runner
from kflow.pipeline.dsl.beam_pipeline import beam_pipeline

SPREAD_BYTES = 32 * 2**20  # the most compressed bytes of a split whose batches the local runner redistributes
QUANTILE_EPSILON = 0.001  # a boundary's rank is within 0.1 % of the row count of the exact quantile's
KINDS = ("moments", "pixels", "vocabulary", "words", "tokens", "wordpiece_words", "quantiles", "classes", "counts")


@dataclass(frozen=True)
class Analyzer:
    """One full-pass analysis: `kind` (KINDS) of the values of `column` (a raw feature of the Examples)."""

    id: str
    kind: str
    column: str
    options: dict[str, Any] = field(default_factory=dict, hash=False)
    splits: str = "train"  # "train", or "all" (the label's classes: which exist is no learning from eval data)


def parse_columns(records: Sequence[bytes], columns: dict[str, str]) -> dict[str, list]:
    """{column: its present values in `records`} for columns {name: "number" | "string" | "image" | "label"}: numbers
    as floats (non-finite and int64's minimum are missing), strings and images (raw uint8 bytes) as bytes (empty is
    missing), labels as they are. A wide batch's numbers and strings are parsed by TensorFlow (wide_parse.py)."""
    typed = {name: kind for name, kind in columns.items() if kind in ("number", "string")}
    if is_wide(records, typed) and (parsed := parse_wide(records, typed)) is not None:
        rest = {name: kind for name, kind in columns.items() if name not in typed}
        parsed |= _parse_in_python(records, rest) if rest else {}
        return {name: parsed[name] for name in columns}
    return _parse_in_python(records, columns)


def _parse_in_python(records: Sequence[bytes], columns: dict[str, str]) -> dict[str, list]:
    values: dict[str, list] = {name: [] for name in columns}
    for record in records:
        features = Example.FromString(record).features.feature
        for name, kind in columns.items():
            if name not in features:
                continue
            feature = features[name]
            which = feature.WhichOneof("kind")
            if which is None:
                continue
            found = list(getattr(feature, which).value)
            if kind == "number":
                found = [float(v) for v in found if v != INT_MISSING and math.isfinite(float(v))]
            elif kind in ("string", "image"):
                found = [v for v in found if v]
            values[name].extend(found)
    return values


class MomentsFn(FoldFn):
    """(count, mean, M2, min, max, whole values) of batches of numbers, merged with Chan et al.'s parallel update,
    with the counts of their distinct whole values while there are few (plan.whole_values: an integer column's
    codes); `per_channel`: of [n, channels] arrays (an image's pixels), a mean, variance, min and max each channel."""

    def __init__(self, per_channel: bool = False) -> None:
        self.per_channel = per_channel

    def create_accumulator(self):
        return (0, 0.0, 0.0, math.inf, -math.inf, None if self.per_channel else {})

    def add_input(self, accumulator, values):
        values = np.asarray(values, np.float64)
        if not values.size:
            return accumulator
        codes = None if self.per_channel or accumulator[5] is None else whole_values({}, values)
        values = values if self.per_channel else values.reshape(-1, 1)
        mean = values.mean(axis=0)
        batch = (len(values), mean, ((values - mean) ** 2).sum(axis=0), values.min(axis=0), values.max(axis=0), codes)
        return self.merge(accumulator, batch)

    @staticmethod
    def merge(a, b):
        if not a[0]:
            return b
        if not b[0]:
            return a
        count = a[0] + b[0]
        delta = b[1] - a[1]
        mean = a[1] + delta * b[0] / count
        m2 = a[2] + b[2] + delta * delta * a[0] * b[0] / count
        return (count, mean, m2, np.minimum(a[3], b[3]), np.maximum(a[4], b[4]), merge_whole_values(a[5], b[5]))

    def extract_output(self, accumulator):
        count, mean, m2, low, high, codes = accumulator
        if not count:
            return {"count": 0, "mean": 0.0, "variance": 0.0, "min": None, "max": None, "codes": None}
        figures = {"mean": mean, "variance": m2 / count, "min": low, "max": high}
        each = (lambda array: [float(v) for v in array]) if self.per_channel else (lambda array: float(array[0]))
        codes = None if codes is None else sorted([float(value), int(n)] for value, n in codes.items())
        return {"count": count, **{name: each(value) for name, value in figures.items()}, "codes": codes}


class ColumnsMomentsFn(FoldFn):
    """`MomentsFn` of many number columns at once, from batches {column: values}: one Beam branch for all of a
    table's numbers, where a branch each made a wide table's pipeline (6,830 columns, ISLR's NCI60) thousands of
    stages that took minutes to build and run before reading 64 rows."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self._each = MomentsFn()

    def create_accumulator(self):
        return {column: self._each.create_accumulator() for column in self.columns}

    def add_input(self, accumulator, batch):
        for column in self.columns:
            accumulator[column] = self._each.add_input(accumulator[column], batch[column])
        return accumulator

    def merge(self, a, b):
        return {column: MomentsFn.merge(a[column], b[column]) for column in self.columns}

    def extract_output(self, accumulator):
        return {column: self._each.extract_output(accumulator[column]) for column in self.columns}


def run_analyzers(
    split_files: dict[str, str],
    analyzers: Sequence[Analyzer],
    columns: dict[str, str],
    beam_args: Sequence[str],
    results_file: Path,
    parse_train: beam.DoFn | None = None,
) -> dict[str, Any]:
    """{analyzer id: result}, every analyzer computed in one Beam pipeline over the splits' files (glob patterns,
    gzipped TFRecords); `columns` {raw feature: "number" | "string" | "label"} is what each record is parsed into.
    The pipeline's one result goes through `results_file` (removed after), which its workers must reach.
    `parse_train`: a DoFn from a batch of records to {column: values} for Split-train instead (a user's
    preprocessing_fn computes its analyzers' inputs), the other splits parsed as `columns` says."""
    unknown = [analyzer.kind for analyzer in analyzers if analyzer.kind not in KINDS]
    if unknown:
        raise ValueError(f"unknown analyzer kind(s) {unknown} (known: {', '.join(KINDS)})")
    options = PipelineOptions(named_runner(list(beam_args)))
    with beam_pipeline(options) as pipeline:
        outputs = []
        for split, pattern in split_files.items():
            wanted = [a for a in analyzers if a.splits == "all" or split == "train"]
            if not wanted:
                continue
            needed = {a.column: columns[a.column] for a in wanted if a.column in columns}
            parse = beam.ParDo(parse_train) if parse_train and split == "train" else beam.Map(parse_columns, needed)
            batches = (
                pipeline
                | f"Read[{split}]" >> beam.io.ReadFromTFRecord(pattern, compression_type=CompressionTypes.GZIP)
                | f"Batch[{split}]" >> beam.BatchElements(min_batch_size=256, max_batch_size=4096)
            )
            if _spread(options, pattern):  # a gzipped file is read by one worker: its batches go to all of them
                batches = batches | f"Spread[{split}]" >> beam.Reshuffle()
            batches = batches | f"Parse[{split}]" >> parse
            moments = [analyzer for analyzer in wanted if analyzer.kind == "moments"]
            if moments:  # every number of a split folds in one branch (ColumnsMomentsFn)
                outputs.append(_moments_branch(batches, moments, split))
            for analyzer in wanted:
                if analyzer.kind != "moments":
                    outputs.append(_branch(batches, analyzer, split))
        _ = (
            outputs
            | "All" >> beam.Flatten()
            | "Collect" >> beam.combiners.ToList()
            | "Write" >> beam.Map(_write_results, str(results_file))
        )
    results: dict[str, Any] = {}
    for analyzer_id, _split, value in json.loads(results_file.read_text()):
        if analyzer_id in results and isinstance(value, list):  # the classes of several splits
            results[analyzer_id] = sorted(set(results[analyzer_id]) | set(value), key=_class_order)
        else:
            results[analyzer_id] = value
    results_file.unlink()
    return results


def _spread(options: PipelineOptions, pattern: str) -> bool:
    """Whether a split's batches are spread over the workers before the work: on the local runner's worker
    processes, when the split has fewer (gzipped, so unsplittable) files than workers, and is small enough for the
    runner to hold while it redistributes them (at most SPREAD_BYTES compressed). In the run's own process or
    threads it would only cost the copies (0.4 s of a 3 s pass over Quora's 1×); at 1× with 2 processes it takes
    the pass from 1.04× to 0.94× adapt's time."""
    all_options = options.get_all_options()
    workers = all_options.get("direct_num_workers") or 1
    if all_options.get("runner") != LOCAL_RUNNER or all_options.get("direct_running_mode") != "multi_processing":
        return False
    files = FileSystems.match([pattern])[0].metadata_list
    return len(files) < workers and sum(file.size_in_bytes for file in files) <= SPREAD_BYTES


def _branch(batches: beam.PCollection, analyzer: Analyzer, split: str) -> beam.PCollection:
    name, column, options = f"{analyzer.id}[{split}]", analyzer.column, analyzer.options
    if analyzer.kind in ("vocabulary", "words", "tokens", "wordpiece_words", "counts"):
        folded = batches | name >> TopCounts(analyzer.kind, column, options)
    elif analyzer.kind == "quantiles":
        buckets = int(options["num_buckets"])
        fn = ApproximateQuantilesCombineFn.create(buckets + 1, epsilon=QUANTILE_EPSILON, input_batched=True)
        folded = (
            batches
            | f"Values {name}" >> beam.Map(lambda b, c: list(b[c]), column)
            | f"Nonempty {name}" >> beam.Filter(len)
            | name >> beam.CombineGlobally(fn)
            | f"Inner {name}" >> beam.Map(lambda q: _boundaries(q))
        )
    elif analyzer.kind == "pixels":
        folded = (
            batches
            | f"Pixels {name}" >> beam.Map(_pixels, column, int(options["channels"]))
            | name >> beam.CombineGlobally(MomentsFn(per_channel=True))
        )
    else:  # classes
        folded = (
            batches
            | f"Values {name}" >> beam.FlatMap(lambda b, c: b[c], column)
            | f"Distinct {name}" >> beam.Distinct()
            | name >> beam.combiners.ToList()
        )
    return folded | f"Tag {name}" >> beam.Map(lambda value, i, s: (i, s, _plain(value)), analyzer.id, split)


def _moments_branch(batches: beam.PCollection, analyzers: Sequence[Analyzer], split: str) -> beam.PCollection:
    """One branch for a split's `moments` analyzers: their columns folded together, each result tagged as `_branch`
    tags its analyzer's."""
    ids = {analyzer.id: analyzer.column for analyzer in analyzers}
    columns = sorted(set(ids.values()))
    return (
        batches
        | f"Moments[{split}]" >> beam.CombineGlobally(ColumnsMomentsFn(columns))
        | f"Tag moments[{split}]"
        >> beam.FlatMap(lambda found, s: [(i, s, _plain(found[c])) for i, c in ids.items()], split)
    )


def _pixels(batch: dict[str, list], column: str, channels: int) -> np.ndarray:
    """The batch's images' pixels, [pixels, channels] uint8 (raw row-major bytes, channels last)."""
    return np.frombuffer(b"".join(batch[column]), np.uint8).reshape(-1, channels)


def _boundaries(quantiles: list[float]) -> list[float]:
    """The inner quantiles (min and max dropped), each once: what `Discretization(bin_boundaries=)` takes."""
    inner = [float(q) for q in quantiles[1:-1]]
    return sorted(set(inner))


def _plain(value: Any) -> Any:
    """`value` as JSON holds it (bytes as text)."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.generic):
        return value.item()
    return value


def _class_order(value: Any) -> tuple:
    return (isinstance(value, str), value)


def _write_results(results: Iterable[tuple], path: str) -> None:
    Path(path).write_text(json.dumps(list(results)))
