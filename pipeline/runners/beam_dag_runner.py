"""Runs a pipeline DAG as one Apache Beam pipeline, in the spirit of TFX's BeamDagRunner.

Nodes are grouped in waves by depth (a node's wave is one more than its deepest
upstream node's). Each wave is a stage: a PCollection of its node ids whose DoFn
runs each node, taking the earlier waves' outputs as side inputs, so Beam starts
it only once its upstream nodes finished. TFX gives each component a stage of its
own; Beam's local runner executes stages one after another, so that layout would
serialise independent branches, whereas the elements of one stage are spread over
the workers: with `--direct_num_workers=2 --direct_running_mode=multi_threading`,
independent nodes really run in parallel, which the runner sets by default when a wave
has several nodes and the machine several cores (`parallel_by_default`).
The runner knows nothing of datasets or TensorFlow: executors are imported by path.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kflow.pipeline.dsl.code_version import one_code_version_per_run
from kflow.pipeline.dsl.component import Component
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.cancellation import Cancelled, interruption, raise_if_cancelled, stop_child_processes
from kflow.pipeline.runners.failure import cause_line, exception_chain
from kflow.pipeline.runners.node_runner import (
    STAGING,
    NodeFailed,
    node_tagged_logs,
    published_paths_in_logs,
    run_node,
)
from kflow.pipeline.runners.run_record import ArtifactRef, RecordNotWritten, Run, RunRecord, new_run_id

log = logging.getLogger("kflow")

E = TypeVar("E", bound=BaseException)


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    status: str
    record: dict[str, Any]  # run.json as written

    @property
    def run(self) -> Run:
        return Run.from_json(self.record, self.run_dir)

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"


class PipelineFailed(RuntimeError):
    """The run failed, said in one line; `result` is None when it could not even start (e.g. an unwritable pipeline
    root); `details` is the file that says more (the failed component's error log, else run.json)."""

    def __init__(self, message: str, result: RunResult | None, details: Path | None = None):
        super().__init__(message)
        self.result = result
        self.details = details


def waves(pipeline: Pipeline, done: frozenset[str] = frozenset()) -> list[list[Component]]:
    """The nodes not in `done` grouped by depth: every node's upstream nodes are in earlier waves (or done)."""
    depth: dict[str, int] = {}
    remaining = [node for node in pipeline.topological_order() if node.id not in done]
    for node in remaining:
        depth[node.id] = 1 + max((depth[up] for up in node.upstream if up not in done), default=-1)
    grouped: list[list[Component]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for node in remaining:
        grouped[depth[node.id]].append(node)
    return grouped


class BeamDagRunner:
    """Runs a `Pipeline` under `<pipeline_root>/<pipeline name>/<run_id>/`."""

    def __init__(
        self,
        beam_args: list[str] | None = None,
        enable_cache: bool = True,
        verify_hashes: bool = False,
        cached_only: set[str] | frozenset[str] = frozenset(),
    ):
        self.beam_args = beam_args
        self.enable_cache = enable_cache
        self.verify_hashes = verify_hashes  # Check cached outputs' content hashes too, not only their sizes.
        self.cached_only = set(cached_only)  # Nodes that must come from the cache (`kflow run --only`'s upstream).

    def _reuse_cached(self, pipeline: Pipeline, record: RunRecord) -> dict[str, dict[str, ArtifactRef]]:
        """Takes from the cache, in this process, every node it can serve whose upstream nodes it served too, before
        Beam starts: a run that only reuses never starts a Beam pipeline. A node it cannot serve is left, unrecorded,
        to the Beam pipeline with everything downstream of it."""
        reused: dict[str, dict[str, ArtifactRef]] = {}
        if not self.enable_cache:
            return reused
        for node in pipeline.topological_order():
            if node.upstream <= reused.keys():
                outputs = run_node(
                    node, record, reused, verify_hashes=self.verify_hashes, cached_only=node.id in self.cached_only,
                    only_if_cached=True,
                )  # fmt: skip
                if outputs is not None:
                    reused[node.id] = outputs
        return reused

    def run(self, pipeline: Pipeline, pipeline_root: str | Path, run_id: str | None = None) -> RunResult:
        run_id = run_id or new_run_id()
        run_dir = Path(pipeline_root).resolve() / pipeline.name / run_id
        try:
            record = RunRecord.create(run_dir, pipeline.name, run_id, pipeline.metadata)
        except OSError as error:
            raise PipelineFailed(f"cannot create the run folder {run_dir}: {error.strerror or error}", None) from error
        log.info("run %s of pipeline %s: %s", run_id, pipeline.name, run_dir)
        beam_args = self.beam_args if self.beam_args is not None else pipeline.beam_args
        started = time.perf_counter()
        status = "failed"
        error: BaseException | None = None
        parallel = max(map(len, waves(pipeline)), default=1) > 1
        try:
            with (
                node_tagged_logs() if parallel else contextlib.nullcontext(),
                published_paths_in_logs(),
                one_code_version_per_run(),
            ):
                reused = self._reuse_cached(pipeline, record)
                stages = waves(pipeline, done=frozenset(reused))
                if stages:
                    # Warmed up first: the Trainer's processes load their libraries while Beam loads here.
                    with warmed_up([node for stage in stages[1:] for node in stage]):
                        from kflow.pipeline.runners.beam_waves import run_waves

                        run_waves(stages, reused, run_dir, beam_args, self.enable_cache, self.verify_hashes,
                                  self.cached_only)  # fmt: skip
            raise_if_cancelled()  # a signal whose exception something on the way swallowed: the run still stops
            status = "succeeded"
        except BaseException as caught:
            interrupt = interruption(caught)
            if interrupt is None:
                error = caught
            else:  # Ctrl-C, or SIGTERM as cancellation.Cancelled (which Beam may have wrapped in its own error).
                status = "cancelled"
                stop_child_processes()
                shutil.rmtree(run_dir / STAGING, ignore_errors=True)
                raise Cancelled.from_interrupt(interrupt) from None
        finally:
            try:
                record.finish(status, time.perf_counter() - started)
            except RecordNotWritten as unwritten:  # A full disk: one line, and the record as it last was.
                if status == "cancelled":
                    log.error("%s", unwritten)
                else:
                    node = _cause(error, NodeFailed) if error is not None else None
                    message = f"{node}; {unwritten}" if node else f"the run {status}, but {unwritten}"
                    raise PipelineFailed(message, None) from unwritten
        result = RunResult(run_dir, status, record.load())
        if error is not None:
            raise PipelineFailed(_failure_message(error, result), result, _details(error, result)) from error
        return result


@contextlib.contextmanager
def warmed_up(nodes: list[Component]) -> Iterator[None]:
    """The warm-ups (`ComponentSpec.warm_up`) of nodes that will run after the first wave, entered in this thread
    and left when the run ends. A warm-up that fails costs only its time: the node starts cold."""
    with contextlib.ExitStack() as stack:
        for node in nodes:
            try:
                stack.enter_context(node.warm_up())
            except Exception as error:  # noqa: BLE001 - warming up is an optimisation; the node reports real errors.
                log.debug("%s: no warm-up (%s)", node.id, error)
        yield


def _cause(error: BaseException, kind: type[E]) -> E | None:
    """The exception of type `kind` in the chain behind `error` (Beam wraps what a DoFn raised), if any."""
    return next((cause for cause in exception_chain(error) if isinstance(cause, kind)), None)


def _failure_message(error: BaseException, result: RunResult) -> str:
    """Beam wraps executor errors in its own; name the failed component instead."""
    failed = [execution for execution in result.run.executions.values() if execution.status == "failed"]
    if failed:
        return f"component {failed[0].node_id!r} failed: {failed[0].error}"
    failure = _cause(error, NodeFailed)
    if failure is not None:
        return str(failure)
    return f"pipeline failed: {cause_line(error)}"


def _details(error: BaseException, result: RunResult) -> Path:
    """The failed component's error log where it was written, else run.json (which holds the traceback too)."""
    logs = [execution.error_log for execution in result.run.executions.values() if execution.status == "failed"]
    failure = _cause(error, NodeFailed)
    logs.append(str(failure.error_log) if failure is not None and failure.error_log else None)
    return next((Path(log) for log in logs if log and Path(log).is_file()), result.run_dir / "run.json")
