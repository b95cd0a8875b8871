"""SchemaGen's executor: a TFMD Schema inferred from the training split's statistics, or a frozen one copied.

Inference, per feature of Split-train (TFDV's rules where it has them):
    type            the ingest's schema's, else the statistics' (INT, FLOAT, BYTES)
    presence        min_count 1 (a split where no example has it is an anomaly); min_fraction 1 (every example
                    must have it) only when no example of any split lacks it: values missing here and there,
                    which the ingest reads as missing (`missing_values`) and the models fill, are data, not
                    an anomaly (TFDV requires what train always has, which blocked clean data)
    value_count     the fewest and most values an example has
    string_domain   the training values, when there are at most `max_string_domain` of them
    int/float range the training min and max, widened by `range_margin` (0.5) × their span on both
                    sides (an int range within int64's): a value just past the training maximum is normal (a test
                    split of 40 draws of a normal variable passed the maximum of 200 training draws by 10 % of
                    the span), one a whole half-span past it is a unit change or a broken source
    drift           `drift_comparator.infinity_norm.threshold = max_category_drift` on string-domain
                    features: ExampleValidator compares each split's value distribution with train's
The ingest's annotation tags (the label's `role=label`, `task=...`) are kept, so the Trainer
reads the inferred schema as it read the ingest's. An inferred schema carries the schema-level tag
INFERRED_TAG: ExampleValidator then counts values outside its domains and ranges as warnings (they
describe one sample). Freeze it by copying `schema.pbtxt` and passing it back as `schema_file`
(`data.schema` in the config): then nothing is inferred, and the copy published loses the tag, its
domains and ranges being the user's rules.
"""

from __future__ import annotations

import logging
import math
import shutil
from pathlib import Path
from typing import Any

from google.protobuf import text_format
from tensorflow_metadata.proto.v0 import schema_pb2, statistics_pb2

from kflow.components.util.schema import INFERRED_TAG, load_schema
from kflow.components.util.statistics_proto import common_stats, feature_stats, read_split, value_counts
from kflow.pipeline.dsl.artifacts import ExampleStatistics, Schema

log = logging.getLogger(__name__)

_TYPES = {
    statistics_pb2.FeatureNameStatistics.INT: schema_pb2.INT,
    statistics_pb2.FeatureNameStatistics.FLOAT: schema_pb2.FLOAT,
    statistics_pb2.FeatureNameStatistics.STRING: schema_pb2.BYTES,
    statistics_pb2.FeatureNameStatistics.BYTES: schema_pb2.BYTES,
}


def run(
    *,
    statistics: ExampleStatistics,
    schema: Schema,
    ingest_schema: Schema | None = None,
    schema_file: str | None = None,
    max_string_domain: int = 100,
    range_margin: float = 0.5,
    max_category_drift: float = 0.25,
) -> dict[str, Any]:
    """Writes `schema.pbtxt`; returns {"features": n, "inferred": bool, "string_domains": k, "ranges": r}."""
    schema.path.mkdir(parents=True, exist_ok=True)
    if schema_file:
        source = Path(schema_file)
        if not source.is_file():
            raise ValueError(f"data.schema: {schema_file} is not a file")
        frozen = load_schema(source)  # Refuses a file that is not a TFMD schema.
        if INFERRED_TAG in frozen.annotation.tag:  # a copy of an inferred one: now the user's rules
            frozen.annotation.tag.remove(INFERRED_TAG)
            schema.file.write_text(text_format.MessageToString(frozen))
        else:
            shutil.copyfile(source, schema.file)
        log.info("schema: copied the frozen schema %s", source)
        return {"features": len(load_schema(schema.file).feature), "inferred": False}
    if max_string_domain < 1 or range_margin < 0 or not 0 < max_category_drift <= 1:
        raise ValueError("max_string_domain must be ≥ 1, range_margin ≥ 0 and max_category_drift in (0, 1]")
    base = load_schema(ingest_schema.file) if ingest_schema is not None and ingest_schema.file.exists() else None
    splits = {split: read_split(statistics, split) for split in statistics.splits}
    sometimes_missing = {
        name
        for stats in splits.values()
        for name, observed in feature_stats(stats).items()
        if common_stats(observed).num_missing
    }
    proto = infer_schema(splits["train"], base, max_string_domain, range_margin, max_category_drift, sometimes_missing)
    proto.annotation.tag.append(INFERRED_TAG)
    schema.file.write_text(text_format.MessageToString(proto))
    summary = {
        "features": len(proto.feature),
        "inferred": True,
        "string_domains": sum(feature.HasField("string_domain") for feature in proto.feature),
        "ranges": sum(feature.HasField("int_domain") or feature.HasField("float_domain") for feature in proto.feature),
    }
    log.info("schema: inferred from Split-train: %s", summary)
    return summary


def source_files(*, schema_file: str | None = None, **_: Any) -> list[Path]:
    """The frozen schema, for the cache key: editing it re-runs SchemaGen and what follows."""
    return [Path(schema_file)] if schema_file else []


# The tags of the columns that name records (the key, the row names beside it): components/datasets/tabular/examples.py
NAMES_RECORDS = frozenset({"role=key", "role=row_names"})


def infer_schema(
    train: statistics_pb2.DatasetFeatureStatistics,
    base: schema_pb2.Schema | None,
    max_string_domain: int,
    range_margin: float,
    max_category_drift: float,
    sometimes_missing: set[str] = frozenset(),
) -> schema_pb2.Schema:
    stats = feature_stats(train)
    declared = {feature.name: feature for feature in base.feature} if base is not None else {}
    schema = schema_pb2.Schema()
    for name in [*declared, *sorted(set(stats) - set(declared))]:
        feature = schema.feature.add(name=name)
        if name in declared:
            feature.type = declared[name].type
            feature.annotation.CopyFrom(declared[name].annotation)
        if name not in stats:  # Declared but never present in training: keep what the ingest said.
            feature.CopyFrom(declared[name])
            continue
        observed = stats[name]
        if name not in declared:
            feature.type = _TYPES[observed.type]
        common = common_stats(observed)
        feature.value_count.min, feature.value_count.max = common.min_num_values, common.max_num_values
        if common.num_missing == 0 and name not in sometimes_missing:
            feature.presence.min_fraction = 1.0
        feature.presence.min_count = 1
        if NAMES_RECORDS & set(feature.annotation.tag):  # new records bring new keys: no domain to stay within
            continue
        if feature.type == schema_pb2.BYTES:
            counts = value_counts(observed)
            complete = observed.string_stats.rank_histogram.name != "truncated"
            if complete and 0 < len(counts) <= max_string_domain:
                feature.string_domain.name = name
                feature.string_domain.value.extend(sorted(counts))
                feature.drift_comparator.infinity_norm.threshold = max_category_drift
        elif common.num_non_missing:
            low, high = observed.num_stats.min, observed.num_stats.max
            margin = (high - low) * range_margin
            if feature.type == schema_pb2.INT:
                # Within int64, what the domain's fields hold: a column of 64-bit hashes spans nearly all of it, and
                # its margin had failed the schema with `Value out of range: -18417279523127468032`.
                lowest, highest = math.floor(low - margin), math.ceil(high + margin)
                feature.int_domain.min, feature.int_domain.max = max(lowest, -(2**63)), min(highest, 2**63 - 1)
            else:
                feature.float_domain.min, feature.float_domain.max = low - margin, high + margin
    return schema
