"""What `kflow validate` reads of a TFRecord source before anything runs, as of a CSV's header and sample: the
features and their types, and the label's values, from the first `infer_records` Examples (gzipped files read as
they stream). What the ingest would refuse (no such file, a label or key that is no feature, a task it cannot
infer, another format's file, images) is a ValueError naming the field, in the ingest's own words."""

from __future__ import annotations

from typing import Any

from kflow.components.datasets.tabular import columns as cols
from kflow.components.datasets.tfrecord.ingest.executor import (
    Scan,
    assign_files,
    learn,
    refuse_what_is_no_table,
    resolve,
)
from kflow.components.ingest.compressed import open_source
from kflow.components.ingest.tfrecord_file import read_records
from kflow.components.util.example_proto import Example


def inspect_source(
    *, source_path: str | None = None, infer_records: int = 1000, split_files: Any = None, **parameters: Any
) -> cols.SourceFacts:
    choice = cols.ColumnChoice.of(parameters)
    files = resolve(source_path)
    if split_files:
        assign_files(files, split_files, source_path)
    found = Scan()
    for path in files:
        with open_source(path) as stream:
            for _, record in read_records(stream):
                found.read += 1
                if record is None:
                    break
                try:
                    example = Example.FromString(record)
                except Exception:  # noqa: BLE001 - protobuf raises DecodeError and others; the ingest rejects it.
                    continue
                learn(found, example, choice.label if isinstance(choice.label, str) else None)
                if found.sampled >= infer_records:
                    break
        if found.sampled >= infer_records:
            break
    refuse_what_is_no_table(found, choice.label, files)
    header = sorted(found.types)
    return cols.table_facts(header, found.types, choice.label, choice.problem_type, choice.key, {}, found.labels)
