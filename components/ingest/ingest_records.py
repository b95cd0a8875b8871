"""What every ingest's executor shares around the Beam pipeline: reject entries, the invalid-fraction check and
summary, split shares, the shipped schemas."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kflow.pipeline.dsl.artifacts import Rejects

log = logging.getLogger(__name__)

INVALID = "invalid"
FILTERED = "filtered"
# A record without a label cannot be trained or scored on: left out and counted (filtered), not an error of the
# data, so a table with unlabelled rows ingests whatever their share (max_invalid_fraction counts only invalid ones).
UNLABELLED = "missing_label"
# A CSV record that repeats the header's names: files joined together (`cat a.csv b.csv`, an export of pages) hold
# one header a file. No data: left out and counted, whatever their share.
REPEATED_HEADER = "repeated_header"
# Lines below a CSV's last record holding fewer fields than the header (a source, a note, a copyright line), as
# statistics offices' exports end: no data, left out and counted.
FOOTNOTE = "footnote"
# A record whose bytes are not in the source's encoding (UTF-8, or a CSV's data.csv.encoding): invalid.
UNDECODABLE = "undecodable"


def kind_of(reason: str) -> str:
    """The reject kind of a tabular ingest's reason: FILTERED for an unlabelled record, a repeated header or a
    footnote, else INVALID."""
    return FILTERED if reason in (UNLABELLED, REPEATED_HEADER, FOOTNOTE) else INVALID


# (key, group, tf.train.Example serialised with deterministic=True: the order of its feature map otherwise
# differs between processes, and the same data must give the same bytes on any runner)
Accepted = tuple[str, str, bytes]
ProcessChunk = Callable[[Any], tuple[list[Accepted], list[dict[str, Any]]]]


def make_reject(reason: str, kind: str, position: str, record: Any, **details: Any) -> dict[str, Any]:
    """One line of rejects.jsonl: the raw record, why it was refused, invalid or filtered, and where it was."""
    if kind not in (INVALID, FILTERED):
        raise ValueError(f"reject kind must be {INVALID!r} or {FILTERED!r}, got {kind!r}")
    return {"reason": reason, "kind": kind, "position": position, "record": record, **details}


def raw_text(data: bytes, encoding: str = "utf-8") -> str:
    """Raw bytes as JSON-safe text: undecodable bytes become backslash escapes."""
    return data.decode(encoding, errors="backslashreplace")


def check_fraction(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number from 0 to 1, got {value!r}")


def check_invalid_fraction(stats: dict[str, Any], max_invalid_fraction: float, rejects: Rejects) -> None:
    """Fails when the share of INVALID records exceeds the limit: a share of the records that were data, not of
    the policy-filtered ones (a README beside images, unlabelled rows: left out, counted, never data to check)."""
    invalid = sum(stats["invalid"].values())
    read = stats["read"] - sum(stats["filtered"].values())
    if read and invalid > max_invalid_fraction * read:
        reasons = ", ".join(f"{reason}: {count}" for reason, count in stats["invalid"].items())
        # Where every record is invalid, no setting leaves any to use: the way out is the data's.
        way_out = "raise data.filters.max_invalid_fraction to train without them" if invalid < read else NONE_LEFT
        counted = (  # one record (a folder of one image): no share, no setting to raise
            f"the only record is invalid ({reasons})" if read == 1 else
            f"{invalid} of {read} records are invalid ({invalid / read:.2%}), more than "
            f"data.filters.max_invalid_fraction={max_invalid_fraction:g} allows ({reasons})"
        )  # fmt: skip
        raise ValueError(f"ingest: {counted}{_first_invalid(rejects)}; see {rejects.file} ({way_out})")


NONE_LEFT = "none is left to train on"


def _first_invalid(rejects: Rejects) -> str:
    """`; the first: <position> <reason> (<details>)`, so the error line says what is wrong, not only how often."""
    import json

    try:
        with rejects.file.open() as lines:
            for line in lines:
                entry = json.loads(line)
                if entry.get("kind") == INVALID:
                    details = {k: v for k, v in entry.items() if k not in ("reason", "kind", "position", "record")}
                    if isinstance(entry.get("record"), dict):  # Short fields of a structured record (MNIST's shape).
                        details |= {k: v for k, v in entry["record"].items() if len(repr(v)) <= 40}
                    said = ", ".join(f"{name}={value}" for name, value in details.items())
                    return f"; the first: {entry['position']} {entry['reason']}" + (f" ({said})" if said else "")
    except (OSError, ValueError):
        pass
    return ""


def ingest_summary(stats: dict[str, Any], max_invalid_fraction: float, rejects: Rejects) -> dict[str, Any]:
    """An ingest executor's result, {"read", <split>: accepted, "rejected", "invalid", "filtered"}, after
    `check_invalid_fraction`."""
    check_invalid_fraction(stats, max_invalid_fraction, rejects)
    unlabelled = stats["filtered"].get(UNLABELLED, 0)
    if stats["read"] and not sum(stats["accepted"].values()):  # the next component would fail on empty splits
        reasons = ", ".join(
            f"{reason}: {count}" for kind in ("filtered", "invalid") for reason, count in stats[kind].items()
        )
        hint = ": is data.label the column to predict?" if unlabelled else ""
        raise ValueError(
            f"ingest: none of the {stats['read']} records is left to write ({reasons}){hint}; see {rejects.file}"
        )
    if unlabelled * 2 > stats["read"]:  # left out whatever their share, but most of a table: say so
        log.warning(
            "ingest: %d of %d records have no label and are left out: is data.label the column to predict?",
            unlabelled,
            stats["read"],
        )
    elif unlabelled:  # counted as filtered in the summary: say what that count is
        read, kept = stats["read"], rejects.file
        log.info("ingest: %d of %d records have no label: left out (kept in %s)", unlabelled, read, kept)
    if invalid := sum(stats["invalid"].values()):  # within max_invalid_fraction: left out, and said with why
        reasons = ", ".join(f"{reason}: {count}" for reason, count in sorted(stats["invalid"].items()))
        log.warning("ingest: %d of %d records are invalid and left out (%s): kept with their reason in %s",
                    invalid, stats["read"], reasons, rejects.file)  # fmt: skip
    return {
        "read": stats["read"],
        **stats["accepted"],
        **{kind: sum(stats[kind].values()) for kind in ("rejected", "invalid", "filtered")},
    }


def copy_schema(dataset: str, schema_artifact: Any, features: dict[str, int]) -> Any:
    """Copies schemas/<dataset>/schema.pbtxt into the Schema artifact; checks it declares `features` with their types.

    Returns the parsed schema; `features` maps a name to its `schema_pb2` type (BYTES, INT).
    """
    import importlib.resources
    import shutil

    from tensorflow_metadata.proto.v0 import schema_pb2

    from kflow.components.util.schema import load_schema

    schema_artifact.path.mkdir(parents=True, exist_ok=True)
    with importlib.resources.as_file(importlib.resources.files("kflow.schemas") / dataset / "schema.pbtxt") as path:
        shutil.copyfile(path, schema_artifact.file)
    proto = load_schema(schema_artifact.file)
    declared = {feature.name: feature.type for feature in proto.feature}
    if set(declared) != set(features):
        raise ValueError(
            f"{schema_artifact.file} declares the features {sorted(declared)}; the ingest writes {sorted(features)}"
        )
    for name, kind in features.items():
        if declared[name] != kind:
            raise ValueError(
                f"{schema_artifact.file}: feature {name!r} is {schema_pb2.FeatureType.Name(declared[name])}; "
                f"the ingest writes it as {schema_pb2.FeatureType.Name(kind)}"
            )
    return proto


def copy_scoring_schema(dataset: str, schema_artifact: Any, features: dict[str, int], key: str) -> Any:
    """`copy_schema` for data to score (`kflow predict`): the dataset's schema without its label, the `key` feature
    tagged role=key (what the Predictor keys each prediction by). Returns the parsed schema."""
    from google.protobuf import text_format

    proto = copy_schema(dataset, schema_artifact, features)
    kept = [feature for feature in proto.feature if feature.name != "label"]
    del proto.feature[:]
    proto.feature.extend(kept)
    for feature in proto.feature:
        if feature.name == key:
            feature.annotation.tag.append("role=key")
    schema_artifact.file.write_text(text_format.MessageToString(proto))
    return proto


def text_min_chars(proto: Any, name: str) -> int:
    """The `min_chars=n` annotation tag of a text feature (0 when absent)."""
    from kflow.components.util.schema import annotation_tags

    return int(annotation_tags(proto, name).get("min_chars", 0))


def check_split_shares(split: dict[str, int], required: tuple[str, ...], why: str = "") -> None:
    """Refuses a `data.split` without the `required` splits or with shares that are not positive integers."""
    missing = [name for name in required if name not in split]
    if missing:
        because = f"{why}, so data.split" if why else "it"
        names = " and ".join([", ".join(required[:-1]), required[-1]] if len(required) > 1 else required)
        raise ValueError(
            f"data.split: {because} must give shares to {names} "
            f"(e.g. {{train: 8, eval: 1, test: 1}}); missing {missing}"
        )
    bad = {name: weight for name, weight in split.items() if isinstance(weight, bool) or not isinstance(weight, int)}
    if bad or any(weight < 1 for weight in split.values()):
        raise ValueError(f"data.split: every share must be a positive integer, got {split}")
