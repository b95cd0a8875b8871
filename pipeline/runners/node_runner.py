"""Runs one pipeline node: cache lookup, staging, the executor call, atomic publish, record.

Outputs are written under `<run_dir>/.staging/<node>-<random>/<output>/`; when the
executor returned, the folder gets its manifest (manifest.py) and is renamed whole to
`<run_dir>/<node>/`, so a crash or a kill never leaves a partial artifact at a published
path. A cancelled execution's staging folder is removed, a failed one's kept in `<run>/<node>.failed/` (only its
error log when the disk is full).
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import logging
import os
import secrets
import shutil
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.artifacts import Artifact
from kflow.pipeline.dsl.component import Component, load_executor
from kflow.pipeline.dsl.durable import fsync_path, fsync_tree
from kflow.pipeline.dsl.fingerprint import changed_files
from kflow.pipeline.runners.cache import artifact_fingerprint, execution_fingerprint, execution_lock, find_cached
from kflow.pipeline.runners.cancellation import interruption, raise_if_cancelled
from kflow.pipeline.runners.failure import cause_line, disk_full, disk_full_line, write_error_log
from kflow.pipeline.runners.manifest import write_manifest
from kflow.pipeline.runners.run_record import ArtifactRef, RecordNotWritten, RunRecord, now_precise

log = logging.getLogger("kflow")

STAGING = ".staging"
WORK = ".work"


class NodeFailed(RuntimeError):
    """A component failed: its message is one line (`cause`, else failure.cause_line); `error_log` holds the
    details, if written."""

    def __init__(self, node_id: str, error: BaseException, error_log: Path | None = None, cause: str | None = None):
        self.node_id = node_id
        self.error_log = error_log
        super().__init__(f"component {node_id!r} failed: {cause or cause_line(error)}")


def run_node(
    node: Component,
    record: RunRecord,
    upstream: dict[str, dict[str, ArtifactRef]],
    enable_cache: bool = True,
    verify_hashes: bool = False,
    cached_only: bool = False,
    only_if_cached: bool = False,
) -> dict[str, ArtifactRef] | None:
    """Runs `node` given its upstream nodes' outputs and returns its own outputs.

    An execution with a given fingerprint runs in one run at a time: a concurrent run that
    reaches the same execution waits for it, then reuses its outputs from the cache.
    `cached_only` (the upstream nodes of `kflow run --only`) reuses a cached execution or fails.
    `only_if_cached` reuses a cached execution, or returns None, recording nothing, where it would execute.
    """
    token = CURRENT_NODE.set(node.id)
    try:
        return _run_node(node, record, upstream, enable_cache, verify_hashes, cached_only, only_if_cached)
    finally:
        CURRENT_NODE.reset(token)


def _run_node(
    node: Component,
    record: RunRecord,
    upstream: dict[str, dict[str, ArtifactRef]],
    enable_cache: bool,
    verify_hashes: bool,
    cached_only: bool,
    only_if_cached: bool = False,
) -> dict[str, ArtifactRef] | None:
    reason = skip_reason(node, upstream)
    if reason:
        record.set_component(node.id, status="skipped", seconds=0.0, summary={"skipped": reason})
        log.info("%s: skipped: %s", node.id, reason)
        return {}
    inputs = {name: upstream[channel.producer][channel.output] for name, channel in node.inputs.items()}
    try:  # Its data cannot be found, its code cannot be read: the node fails as its executor would.
        input_fingerprints = {name: ref.fingerprint for name, ref in inputs.items()}
        node.resolve_run_time_parameters(input_fingerprints)
        data = node.data_fingerprint()
        fingerprint = execution_fingerprint(node, input_fingerprints, data)
        code_version = type(node).code_version()
    except Exception as error:
        raise _failed(node, record, error, seconds=0.0) from error
    common = {
        "component": f"{type(node).__module__}.{type(node).__qualname__}",
        "code_version": code_version,
        "fingerprint": fingerprint,
        "parameters": node.parameters,
        "inputs": {name: ref.to_json() for name, ref in inputs.items()},
    }
    if data is not None:
        common["data"] = {"files": data["files"], "seconds": data["seconds"]}

    with execution_lock(record.run_dir.parent, node.id, fingerprint):
        use_cache = enable_cache or cached_only
        cached = find_cached(record.run_dir.parent, node.id, fingerprint, verify_hashes) if use_cache else None
        if cached_only and not cached:
            error = LookupError(
                "no cached execution with these inputs and parameters; run it first (kflow run --until " + node.id + ")"
            )
            raise _failed(node, record, error, seconds=0.0) from error
        if only_if_cached and not cached:
            return None  # a cache probe that misses says nothing: the Beam pipeline runs the node and says it
        if data is not None and data["files"]:  # no file read (the schema without data.schema): nothing to say
            log.info("%s: %d source file(s) fingerprinted in %.2f s", node.id, len(data["files"]), data["seconds"])
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
        record.set_component(node.id, **common, status="running", started_at=now_precise())
        return _execute(node, record, inputs, fingerprint, data)


# The node whose execution the current thread (or a thread started in its context) works for.
CURRENT_NODE: contextvars.ContextVar[str | None] = contextvars.ContextVar("kflow_node", default=None)


@contextlib.contextmanager
def _rewriting_log_records(rewrite: Callable[[logging.LogRecord], None]) -> Iterator[None]:
    """Every log record made meanwhile passes through `rewrite` (in place) before it is handled."""
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        rewrite(record)
        return record

    logging.setLogRecordFactory(factory)
    try:
        yield
    finally:
        logging.setLogRecordFactory(previous)


def _tag_with_node(record: logging.LogRecord) -> None:
    node = CURRENT_NODE.get()
    if node is not None and isinstance(record.msg, str) and not record.msg.startswith(("%s:", f"{node}:")):
        record.msg = f"[{node}] {record.msg}"


def node_tagged_logs() -> contextlib.AbstractContextManager[None]:
    """Prefixes every log line with `[node id] ` while several nodes run at once, so their lines can be told apart."""
    return _rewriting_log_records(_tag_with_node)


# A staging folder → the folder its outputs are published to, while its node runs: a log line that names a file
# being written (a Pusher's serving folder, a BulkInferrer's predictions) names it where it will be, since the
# staging folder is gone once the node ends.
_PUBLISHED_AS: dict[str, str] = {}


def _name_published_paths(record: logging.LogRecord) -> None:
    if not _PUBLISHED_AS:
        return
    try:
        message = record.getMessage()
    except (TypeError, ValueError):  # arguments that do not fit the format: logging reports it when emitting
        return
    staged_here = [(staged, final) for staged, final in list(_PUBLISHED_AS.items()) if staged in message]
    if staged_here:
        for staged, final in staged_here:
            message = message.replace(staged, final)
        record.msg, record.args = message, None


def published_paths_in_logs() -> contextlib.AbstractContextManager[None]:
    """Rewrites a running node's staging paths in every log line to where they are published (`_PUBLISHED_AS`)."""
    return _rewriting_log_records(_name_published_paths)


@contextlib.contextmanager
def logged_as_published(staging: Path, final: Path) -> Iterator[None]:
    """For a command that stages an output of its own (`kflow predict`): meanwhile, log lines name `final`, not
    `staging`."""
    _PUBLISHED_AS[str(staging)] = str(final)
    try:
        with published_paths_in_logs():
            yield
    finally:
        _PUBLISHED_AS.pop(str(staging), None)


def skip_reason(node: Component, upstream: dict[str, dict[str, ArtifactRef]], inputs_known: bool = True) -> str | None:
    """Why `node` does not run: an input whose producer was skipped, or a `run_if` model that is not blessed.
    `inputs_known=False` (kflow plan, before the upstream nodes ran): only the verdict, from `upstream`'s blessing."""
    channels = [*node.inputs.values(), *([node.run_if] if node.run_if else [])] if inputs_known else []
    for channel in channels:
        if channel.output not in upstream.get(channel.producer, {}):
            return f"{channel.producer} was skipped"
    if node.run_if is not None:
        blessing = upstream[node.run_if.producer][node.run_if.output].open()
        if not blessing.blessed:  # type: ignore[attr-defined]
            return f"{node.run_if.producer}.{node.run_if.output}: the model is not blessed"
    return None


def _execute(
    node: Component, record: RunRecord, inputs: dict[str, ArtifactRef], fingerprint: str, data: dict | None
) -> dict[str, ArtifactRef]:
    """Runs the executor into a staging folder, then publishes it whole (with its manifest) or not at all."""
    staging = record.run_dir / STAGING / f"{node.id}-{secrets.token_hex(4)}"
    final = record.run_dir / node.id
    log.info("%s: running", node.id)
    started = time.perf_counter()
    working_dir = record.run_dir.parent / WORK / f"{node.id}-{fingerprint}"
    _PUBLISHED_AS[str(staging)] = str(final)
    try:
        staged = {name: kind(staging / name) for name, kind in node.spec.outputs.items()}
        for artifact in staged.values():
            artifact.path.mkdir(parents=True)
        summary = invoke_executor(
            node.spec.executor,
            inputs={name: ref.open() for name, ref in inputs.items()},
            outputs=staged,
            parameters=node.parameters,
            working_dir=working_dir,
        )
        raise_if_cancelled()  # a signal whose exception something in the executor swallowed: not published
        changed = changed_files(data)
        if changed:
            raise RuntimeError(f"{changed[0]} changed or disappeared while it was read; run again")
        write_manifest(staging)
        fsync_tree(staging)  # On disk before the rename that publishes it: a power loss leaves no zeros behind.
        os.rename(staging, final)
        fsync_path(final.parent)
        # What an interrupted execution resumes from (a Trainer's checkpoints) ends with the published outputs:
        # a later execution of the same fingerprint (--no-cache, a removed run) starts afresh.
        shutil.rmtree(working_dir, ignore_errors=True)
    except BaseException as error:
        # A cancellation, however it came (Beam re-raises a Cancelled met in a DoFn as a RuntimeError): what it
        # wrote is removed, not kept as a failure's, and the component is cancelled, not failed.
        interrupt = interruption(error)
        if interrupt is not None:
            shutil.rmtree(staging, ignore_errors=True)
            record.set_component(node.id, status="cancelled", seconds=round(time.perf_counter() - started, 3))
            log.info("%s: cancelled", node.id)
            if interrupt is error:
                raise
            raise interrupt from error
        said, cause = error, None
        kept = keep_failed_outputs(staging, record.run_dir / f"{node.id}{FAILED_SUFFIX}", error)
        if kept is not None and _rewritable(error, staging):  # It names files of the staging folder: name them there.
            said = type(error)(str(error).replace(str(staging), str(kept)))
        if (full := disk_full(error)) is not None:
            cause = disk_full_line(full, final)
        raise _failed(node, record, said, seconds=time.perf_counter() - started, cause=cause) from error
    finally:
        _PUBLISHED_AS.pop(str(staging), None)
    seconds = time.perf_counter() - started
    outputs = {
        name: ArtifactRef(kind.type_name, str(final / name), artifact_fingerprint(fingerprint, name))
        for name, kind in node.spec.outputs.items()
    }
    record.set_component(
        node.id,
        status="succeeded",
        finished_at=now_precise(),
        seconds=round(seconds, 3),
        outputs={name: ref.to_json() for name, ref in outputs.items()},
        summary=_jsonable(summary),
    )
    log.info("%s: succeeded in %.1f s", node.id, seconds)
    return outputs


FAILED_SUFFIX = ".failed"


def keep_failed_outputs(staging: Path, kept: Path, error: BaseException) -> Path | None:
    """What a failed execution wrote (its rejects, stats, logs: why it failed) moves to `<run>/<node>.failed/`,
    never published nor reused; removed instead when the disk is full, however the error says so (to give the
    space back: the run's record can then say it failed, and the next run has room) or absent."""
    full = disk_full(error) is not None
    if full or not staging.is_dir() or not any(staging.rglob("*")):
        shutil.rmtree(staging, ignore_errors=True)
        return None
    try:
        os.rename(staging, kept)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        return None
    return kept


def _rewritable(error: BaseException, staging: Path) -> bool:
    if str(staging) not in str(error):
        return False
    try:
        return str(type(error)(str(error))) == str(error)
    except Exception:  # An exception class that takes other arguments: keep it as it is.
        return False


def _failed(
    node: Component, record: RunRecord, error: BaseException, seconds: float, cause: str | None = None
) -> NodeFailed:
    """Records the failure: its cause in one line (`cause`, else failure.cause_line) in run.json, its whole
    traceback (which `-v` also logs) in `<run>/<node>.failed/error.log` (a few KB, kept on a full disk too, once
    the partial outputs gave their space back), and returns the error to raise."""
    trace = traceback.format_exc()
    cause = cause or cause_line(error)
    error_log = write_error_log(record.run_dir / f"{node.id}{FAILED_SUFFIX}", node.id, cause, trace)
    try:
        record.set_component(
            node.id, status="failed", seconds=round(seconds, 3), error=cause, traceback=traceback.format_exc(limit=20),
            **({"error_log": str(error_log)} if error_log else {}),
        )  # fmt: skip
    except RecordNotWritten as unwritten:  # The failure is still reported by the error raised.
        log.error("%s: %s", node.id, unwritten)
    log.debug("%s: failed after %.1f s\n%s", node.id, seconds, trace)
    return NodeFailed(node.id, error, error_log, cause)


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
