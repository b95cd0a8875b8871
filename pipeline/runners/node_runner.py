"""Runs one pipeline node: cache lookup, staging, the executor call, atomic publish, record.

Outputs are written under `<run_dir>/.staging/<node>-<random>/<output>/` and the
whole folder is renamed to `<run_dir>/<node>/` only when the executor returned,
so a crash or a kill never leaves a partial artifact at a published path.
"""

from __future__ import annotations

import inspect
import logging
import os
import secrets
import time
import traceback
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.artifacts import Artifact
from kflow.pipeline.dsl.component import Component, load_executor
from kflow.pipeline.runners.cache import artifact_fingerprint, execution_fingerprint, find_cached
from kflow.pipeline.runners.run_record import ArtifactRef, RunRecord

log = logging.getLogger("kflow")

STAGING = ".staging"
WORK = ".work"


class NodeFailed(RuntimeError):
    def __init__(self, node_id: str, error: BaseException):
        self.node_id = node_id
        super().__init__(f"component {node_id!r} failed: {type(error).__name__}: {error}")


def run_node(
    node: Component,
    record: RunRecord,
    upstream: dict[str, dict[str, ArtifactRef]],
    enable_cache: bool = True,
) -> dict[str, ArtifactRef]:
    """Runs `node` given its upstream nodes' outputs and returns its own outputs."""
    inputs = {name: upstream[channel.producer][channel.output] for name, channel in node.inputs.items()}
    try:
        data = node.data_fingerprint()
    except BaseException as error:  # Its data cannot be found: the node fails as its executor would.
        record.set_component(node.id, status="failed", seconds=0.0, error=f"{type(error).__name__}: {error}")
        log.error("%s: failed: %s: %s", node.id, type(error).__name__, error)
        raise NodeFailed(node.id, error) from error
    fingerprint = execution_fingerprint(node, {name: ref.fingerprint for name, ref in inputs.items()}, data)
    common = {
        "component": f"{type(node).__module__}.{type(node).__qualname__}",
        "code_version": type(node).code_version(),
        "fingerprint": fingerprint,
        "parameters": node.parameters,
        "inputs": {name: ref.to_json() for name, ref in inputs.items()},
    }
    if data is not None:
        common["data"] = {"files": data["files"], "seconds": data["seconds"]}
        log.info("%s: %d source file(s) fingerprinted in %.2f s", node.id, len(data["files"]), data["seconds"])

    cached = find_cached(record.run_dir.parent, node.id, fingerprint) if enable_cache else None
    if cached:
        execution, source_run = cached
        record.set_component(
            node.id,
            **common,
            status="cached",
            seconds=0.0,
            cached_from=source_run,
            outputs={name: ref.to_json() for name, ref in execution.outputs.items()},
            summary=execution.summary,
        )
        log.info("%s: cached, reusing the outputs of run %s", node.id, source_run)
        return dict(execution.outputs)

    staging = record.run_dir / STAGING / f"{node.id}-{secrets.token_hex(4)}"
    final = record.run_dir / node.id
    staged = {name: kind(staging / name) for name, kind in node.spec.outputs.items()}
    for artifact in staged.values():
        artifact.path.mkdir(parents=True)
    record.set_component(node.id, **common, status="running")
    log.info("%s: running", node.id)
    started = time.perf_counter()
    try:
        summary = invoke_executor(
            node.spec.executor,
            inputs={name: ref.open() for name, ref in inputs.items()},
            outputs=staged,
            parameters=node.parameters,
            working_dir=record.run_dir.parent / WORK / f"{node.id}-{fingerprint}",
        )
    except BaseException as error:
        seconds = time.perf_counter() - started
        record.set_component(
            node.id,
            status="failed",
            seconds=round(seconds, 3),
            error=f"{type(error).__name__}: {error}",
            traceback=traceback.format_exc(limit=20),
        )
        log.error("%s: failed after %.1f s: %s: %s", node.id, seconds, type(error).__name__, error)
        raise NodeFailed(node.id, error) from error
    os.rename(staging, final)
    seconds = time.perf_counter() - started
    outputs = {
        name: ArtifactRef(kind.type_name, str(final / name), artifact_fingerprint(fingerprint, name))
        for name, kind in node.spec.outputs.items()
    }
    record.set_component(
        node.id,
        status="succeeded",
        seconds=round(seconds, 3),
        outputs={name: ref.to_json() for name, ref in outputs.items()},
        summary=_jsonable(summary),
    )
    log.info("%s: succeeded in %.1f s", node.id, seconds)
    return outputs


def invoke_executor(
    executor_path: str,
    inputs: dict[str, Artifact],
    outputs: dict[str, Artifact],
    parameters: dict[str, Any],
    working_dir: Path | None = None,
) -> dict[str, Any]:
    """Calls a component's executor with its artifacts and parameters; the one way every runner does it.

    An executor that takes a `working_dir` keyword gets a folder that survives a crash and is
    the same for every execution with the same fingerprint (e.g. for training checkpoints).
    """
    executor = load_executor(executor_path)
    extra: dict[str, Any] = {}
    if working_dir is not None and "working_dir" in inspect.signature(executor).parameters:
        working_dir.mkdir(parents=True, exist_ok=True)
        extra["working_dir"] = working_dir
    return executor(**inputs, **outputs, **parameters, **extra) or {}


def _jsonable(summary: Any) -> dict[str, Any]:
    if not isinstance(summary, dict):
        return {"result": str(summary)}
    return {str(k): v if isinstance(v, (int, float, str, bool, type(None))) else str(v) for k, v in summary.items()}
