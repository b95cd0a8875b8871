"""What every ingest executor is given besides its dataset's own parameters, and the head and tail they share.

An executor takes its own parameters by name and the rest as an `IngestJob` (`IngestJob(**common)`): its three
outputs and the parameters every ingest takes (components/ingest/ingest_spec.py). The job checks them, gives the
split shares (the dataset's default when unset), and runs the shared Beam ingest over the executor's chunks and
returns its summary (`write`), so writing examples, rejects and counts is said once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kflow.components.ingest import ingest_records
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema


@dataclass(frozen=True)
class IngestJob:
    examples: Examples
    schema: Schema
    rejects: Rejects
    source_path: str | None = None
    source_format: str = "auto"
    split: dict[str, int] | None = None
    shards_per_split: int = 0
    max_records: int | None = None
    max_invalid_fraction: float = 0.01
    beam_args: Sequence[str] = ()

    def __post_init__(self) -> None:
        ingest_records.check_fraction("max_invalid_fraction", self.max_invalid_fraction)

    def split_shares(self, default: dict[str, int], required: tuple[str, ...], why: str = "") -> dict[str, int]:
        """`split`, or the dataset's `default` when unset, refused without the `required` splits (see
        ingest_records.check_split_shares)."""
        split = default if self.split is None else self.split
        ingest_records.check_split_shares(split, required, why)
        return split

    def check_format(self, dataset: str, *formats: str) -> None:
        """Refuses a `source_format` other than "auto" and the dataset's `formats`."""
        if self.source_format not in ("auto", *formats):
            allowed = " or ".join(("auto", *formats))
            raise ValueError(f"{dataset}: source_format must be {allowed}, got {self.source_format!r}")

    def pipeline(self, *, chunks: Sequence[Any], process_chunk: Any, splits: Sequence[str], read: int, **options):
        """Runs the shared Beam ingest over `chunks` into the job's examples and rejects; returns its stats
        (`options`: beam_ingest.run_ingest_pipeline's plan, extra_rejects, staging)."""
        # Imported here: a cached run imports an executor's module for `source_files` (its data fingerprint), not Beam.
        from kflow.components.ingest import beam_ingest

        return beam_ingest.run_ingest_pipeline(
            chunks=chunks,
            process_chunk=process_chunk,
            splits=splits,
            shards=self.shards_per_split,
            read=read,
            examples=self.examples,
            rejects=self.rejects,
            beam_args=self.beam_args,
            **options,
        )

    def summary(self, stats: dict[str, Any]) -> dict[str, Any]:
        """The executor's result from the pipeline's stats, after the invalid-fraction check."""
        return ingest_records.ingest_summary(stats, self.max_invalid_fraction, self.rejects)

    def write(self, **pipeline: Any) -> dict[str, Any]:
        """`pipeline(**pipeline)`, then its `summary`: the tail of most executors."""
        return self.summary(self.pipeline(**pipeline))
