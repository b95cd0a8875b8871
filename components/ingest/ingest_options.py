"""An ingest's Beam options: one worker process per core for a large input on the DirectRunner, and what the
options say about where the chunks are processed."""

from __future__ import annotations

import os
from collections.abc import Sequence

from apache_beam.options.pipeline_options import PipelineOptions

PARALLEL_RECORDS = 200_000  # Two workers start in ~3 s: they pay for themselves from about here (bench/README.md).


def data_beam_args(beam_args: Sequence[str], records: int) -> list[str]:
    """The ingest's Beam options: the given ones, plus one worker process per core for a large input on the
    DirectRunner when they choose no running mode or worker count."""
    runner = PipelineOptions(list(beam_args)).get_all_options().get("runner")
    chosen = any(arg.startswith(("--direct_running_mode", "--direct_num_workers")) for arg in beam_args)
    if records < PARALLEL_RECORDS or runner not in (None, "DirectRunner") or chosen:
        return list(beam_args)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cores < 2:
        return list(beam_args)
    return [*beam_args, "--direct_running_mode=multi_processing", f"--direct_num_workers={cores}"]


def direct_workers(beam_args: Sequence[str]) -> int:
    """The DirectRunner's worker count (1 in memory; other runners scale on their own: 1)."""
    options = PipelineOptions(list(beam_args)).get_all_options()
    parallel = options.get("direct_running_mode") in ("multi_processing", "multi_threading")
    if not parallel or options.get("runner") not in (None, "DirectRunner"):
        return 1
    return int(options.get("direct_num_workers") or 1)


def in_process(beam_args: Sequence[str]) -> bool:
    """Whether the chunks are processed in this process (so one progress bar can show them all)."""
    options = PipelineOptions(list(beam_args)).get_all_options()
    return options.get("runner") in (None, "DirectRunner") and options.get("direct_running_mode") != "multi_processing"
