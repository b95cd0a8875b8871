"""The Beam pipeline of a run: the nodes that are not reused from the cache, wave by wave (beam_dag_runner.py).

Apart from the runner so that a run whose every node is cached never imports Apache Beam (about 2 s here).
"""

from __future__ import annotations

import os
from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from kflow.pipeline.dsl.beam_options import named_runner
from kflow.pipeline.dsl.beam_pipeline import beam_pipeline
from kflow.pipeline.dsl.component import Component
from kflow.pipeline.runners.node_runner import run_node
from kflow.pipeline.runners.run_record import ArtifactRef, RunRecord


class _RunNode(beam.DoFn):
    def __init__(
        self, nodes: list[Component], run_dir: str, enable_cache: bool, verify_hashes: bool, cached_only: set[str]
    ):
        self._nodes = {node.id: node for node in nodes}
        self._run_dir = run_dir
        self._enable_cache = enable_cache
        self._verify_hashes = verify_hashes
        self._cached_only = cached_only

    def process(self, node_id, *earlier_waves):
        upstream: dict[str, dict[str, ArtifactRef]] = {}
        for wave in earlier_waves:
            for outputs in wave:
                upstream.update(outputs)
        record = RunRecord(self._run_dir)
        outputs = run_node(
            self._nodes[node_id],
            record,
            upstream,
            self._enable_cache,
            self._verify_hashes,
            cached_only=node_id in self._cached_only,
        )
        yield {node_id: outputs}


def run_waves(
    stages: list[list[Component]],
    reused: dict[str, dict[str, ArtifactRef]],
    run_dir: Path,
    beam_args: list[str],
    enable_cache: bool,
    verify_hashes: bool,
    cached_only: set[str],
) -> None:
    """Runs the waves as one Beam pipeline; `reused` (the outputs of nodes already taken from the cache) is every
    wave's first side input."""
    options = PipelineOptions(named_runner(parallel_by_default(beam_args, max(map(len, stages), default=1))))
    with beam_pipeline(options) as pipeline_of_waves:
        done: list[beam.PCollection] = [pipeline_of_waves | "Reused" >> beam.Create([reused])]
        for number, wave in enumerate(stages):
            name = f"Wave{number}[{','.join(node.id for node in wave)}]"
            done.append(
                pipeline_of_waves
                | f"{name}/Nodes" >> beam.Create([node.id for node in wave])
                # Spreads the wave's nodes over the workers instead of one bundle.
                | f"{name}/Spread" >> beam.Reshuffle()
                | f"{name}/Run"
                >> beam.ParDo(
                    _RunNode(wave, str(run_dir), enable_cache, verify_hashes, cached_only),
                    *[beam.pvalue.AsList(earlier) for earlier in done],
                )
            )


def parallel_by_default(beam_args: list[str], widest_wave: int) -> list[str]:
    """`beam_args`, plus what lets the DirectRunner run a wave's nodes at once when neither is set:
    as many worker threads as the widest wave has nodes, up to the machine's cores."""
    options = PipelineOptions(beam_args).get_all_options(drop_default=True)
    runner = options.get("runner") or "DirectRunner"
    parallel = min(widest_wave, os.cpu_count() or 1)
    if runner not in ("DirectRunner", "direct") or parallel < 2:
        return list(beam_args)
    if "direct_num_workers" in options or "direct_running_mode" in options:
        return list(beam_args)
    return [*beam_args, f"--direct_num_workers={parallel}", "--direct_running_mode=multi_threading"]
