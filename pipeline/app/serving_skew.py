"""Skew in `kflow predict`: the data a model scored against the data it was trained on, with TFDV's comparators.

TFDV's skew comparator compares serving data with training data feature by feature; kflow uses the drift
comparators (components/util/drift.py: L-infinity for categorical features, approximate Jensen-Shannon for numeric
ones) and `data.drift`'s thresholds, between the scored rows' statistics (StatisticsGen's executor over OUT/examples,
Split-score) and the Split-train statistics of the Examples the model was trained on (found through the run records:
the Trainer that wrote the model, then the StatisticsGen that read the same Examples). Only the features both hold
are compared (the scored data has no label). The verdict is `OUT/skew.json` and `predict.json`'s `skew`; skew is
reported, never a reason to refuse scoring.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from kflow.components.util.drift import compare
from kflow.components.util.schema import load_schema
from kflow.components.util.statistics_proto import common_stats, feature_stats, read_split, value_counts
from kflow.pipeline.dsl.artifacts import Examples, ExampleStatistics, PushedModel, Schema
from kflow.pipeline.dsl.component import load_executor
from kflow.pipeline.dsl.config import PipelineConfig
from kflow.pipeline.runners.run_record import earlier_runs

log = logging.getLogger("kflow.predict")


def training_statistics(pipeline_dir: Path, model_uri: str) -> ExampleStatistics | None:
    """The statistics of the Examples the model at `model_uri` (or the model a run pushed there) was trained on, where
    a run of the pipeline computed them; None otherwise (a model folder from elsewhere, a dataset without data
    checks)."""
    runs = list(earlier_runs(pipeline_dir))
    model_uri = _pushed_from(runs, model_uri) or model_uri
    examples = next(
        (
            execution.inputs["examples"].uri
            for run in runs
            for execution in run.executions.values()
            if "examples" in execution.inputs and any(ref.uri == model_uri for ref in execution.outputs.values())
        ),
        None,
    )
    if examples is None:
        return None
    for run in runs:
        for execution in run.executions.values():
            given = execution.inputs.get("examples")
            if given is None or given.uri != examples or not execution.finished:
                continue
            for ref in execution.outputs.values():
                if ref.type == ExampleStatistics.type_name and "train" in ExampleStatistics(ref.uri).splits:
                    return ExampleStatistics(ref.uri)
    return None


def _pushed_from(runs: list, model_uri: str) -> str | None:
    """The trained model a run's Pusher copied to `model_uri` (a push destination's version folder), if one did."""
    wanted = Path(model_uri).resolve()
    for run in runs:
        for execution in run.executions.values():
            for ref in execution.outputs.values():
                if ref.type != PushedModel.type_name or not (Path(ref.uri) / PushedModel.RECORD).is_file():
                    continue
                record = PushedModel(ref.uri).record
                if record.get("pushed") and Path(str(record.get("serving_dir"))).resolve() == wanted:
                    return str(record["model"])
    return None


def serving_skew(
    config: PipelineConfig,
    model_uri: str,
    examples: Examples,
    split: str,
    folder: Path,
    ignore: set[str] = frozenset(),
    scored_schema: Schema | None = None,
    words: set[str] = frozenset(),
    absent: set[str] = frozenset(),
) -> dict[str, Any]:
    """The skew of the scored `examples` (their `split`) from the model's training data, but for the features in
        `ignore` (the key); statistics into `folder`. A column of the scored data (`scored_schema`) with values in
        training and none in any scored row is skewed too, as is a column the model reads that the scored data lacks
    (`absent`): nothing to compare, every row gets the training's fill."""
    training = training_statistics(Path(config.pipeline_root).expanduser().resolve() / config.name, model_uri)
    if training is None:
        reason = "no statistics of the data the model was trained on in this pipeline's runs"
        log.info("predict: skew not computed: %s", reason)
        return {"compared": False, "reason": reason}
    statistics = ExampleStatistics(folder)
    load_executor("kflow.components.statistics_gen.executor:run")(
        examples=examples, statistics=statistics, beam_args=list(config.beam_args)
    )
    thresholds = config.data.drift
    scored, trained = read_split(statistics, split), read_split(training, "train")
    found = compare(
        scored, trained, l_infinity_threshold=thresholds.l_infinity, jensen_shannon_threshold=thresholds.jensen_shannon
    )
    found = [feature for feature in found if feature.feature not in ignore]
    skewed = [feature for feature in found if feature.drifted]
    scored_features, trained_features = feature_stats(scored), feature_stats(trained)
    columns = {feature.name for feature in load_schema(scored_schema.file).feature} if scored_schema else set()
    columns |= set(absent)
    empty = sorted((columns & set(trained_features)) - set(scored_features) - set(ignore))
    message = "; ".join(
        [f"{feature.feature}: {feature.describe()}" for feature in skewed]
        + [f"{name}: no value in any scored row (in training: in {_present(trained_features[name])})" for name in empty]
    )
    unseen = unseen_values(scored_features, trained_features, {*ignore, *words})  # a free text: its words are read
    if unseen:
        log.warning("predict: values the training data never held, read by the model as an unknown one: %s",
                    describe_unseen(unseen))  # fmt: skip
    if skewed or empty:
        log.warning("predict: the scored data is skewed from the training data in %d feature(s): %s",
                    len(skewed) + len(empty), message)  # fmt: skip
    else:
        log.info("predict: no skew: %d feature(s) compared with the training data", len(found))
    return {
        "compared": True,
        "training_statistics": training.uri,
        "features": [feature.to_json() for feature in found],
        "skewed": [feature.feature for feature in skewed] + empty,
        "empty": empty,
        "message": message,
        "unseen": unseen,
    }


def unseen_values(scored: dict[str, Any], trained: dict[str, Any], ignore: set[str]) -> dict[str, dict[str, int]]:
    """{feature: {value: scored rows}} of the text values the scored rows hold and the training split never did,
    where the training statistics list all its values (not a truncated list of the most frequent), but for the
    features in `ignore` (the key, a free text's column: its words are read, not its values)."""
    unseen = {}
    for name, feature in scored.items():
        known = trained.get(name)
        if name in ignore or known is None or not feature.HasField("string_stats"):
            continue
        histogram = known.string_stats.rank_histogram if known.HasField("string_stats") else None
        # Every training value listed: not a truncated count, nor the first RANK_BUCKETS values of a longer list.
        if histogram is None or histogram.name != "all values" or len(histogram.buckets) < known.string_stats.unique:
            continue
        seen = set(value_counts(known))
        if new := {value: count for value, count in value_counts(feature).items() if value not in seen}:
            unseen[name] = new
    return unseen


def describe_unseen(unseen: dict[str, dict[str, int]]) -> str:
    """`region: 'ZZ' (5 rows); type: 'Mansion' (3 rows), …` (at most three values a feature)."""
    return "; ".join(
        f"{name}: "
        + ", ".join(
            f"{_short(value)!r} ({count} row{'s' if count != 1 else ''})" for value, count in list(values.items())[:3]
        )  # fmt: skip
        + (f" and {len(values) - 3} more" if len(values) > 3 else "")
        for name, values in unseen.items()
    )


def _short(value: str, most: int = 40) -> str:
    """A value as a line shows it: its first `most` characters (a free text's whole value is a paragraph)."""
    return value if len(value) <= most else value[: most - 1] + "…"


def _present(statistics: Any) -> str:
    """`N of M rows` of a feature's statistics (its common stats: values present, missing)."""
    common = common_stats(statistics)
    return f"{common.num_non_missing} of {common.num_non_missing + common.num_missing} rows"
