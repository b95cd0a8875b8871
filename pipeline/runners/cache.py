"""Execution fingerprints and the cache lookup over earlier runs' records.

An execution's fingerprint covers the component's code version, the parameters
that affect its outputs, its inputs' fingerprints and (an ingest) its source data. An output artifact's
fingerprint is derived from its producer's, so a change anywhere upstream
changes the fingerprint of everything downstream, and nothing else.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.artifacts import ARTIFACT_TYPES, Artifact
from kflow.pipeline.dsl.component import Component
from kflow.pipeline.dsl.durable import open_lock
from kflow.pipeline.runners.manifest import manifest_problem
from kflow.pipeline.runners.run_record import Execution, earlier_runs

log = logging.getLogger("kflow")

LOCKS = ".locks"


def _digest(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:20]


def execution_fingerprint(node: Component, input_fingerprints: dict[str, str], data: dict | None = None) -> str:
    """`data`: the node's data fingerprint (Component.data_fingerprint), whose `key` holds what the data is."""
    return _digest(
        {
            "component": f"{type(node).__module__}.{type(node).__qualname__}",
            "code": type(node).code_version(),
            "parameters": node.cache_parameters,
            "inputs": input_fingerprints,
            "data": None if data is None else data["key"],
        }
    )


def artifact_fingerprint(execution: str, output: str) -> str:
    return _digest([execution, output])


def find_cached(
    pipeline_dir: Path, node_id: str, fingerprint: str, verify_hashes: bool = False
) -> tuple[Execution, str] | None:
    """The newest earlier execution of `node_id` with this fingerprint whose outputs are intact
    (as their manifest lists them: sizes, and hashes when `verify_hashes`), and the run that
    produced those outputs. Outputs that are not intact are passed over with a warning."""
    checked: set[Path] = set()
    for run in earlier_runs(pipeline_dir):
        execution = run.executions.get(node_id)
        if not execution or not execution.finished or execution.fingerprint != fingerprint:
            continue
        source_run = execution.cached_from or run.run_id
        folders = {Path(ref.uri).parent for ref in execution.outputs.values()}
        if folders & checked:  # The same outputs, reused by a later run: already found wanting.
            continue
        checked |= folders
        problem = next(filter(None, (manifest_problem(folder, hashes=verify_hashes) for folder in folders)), None)
        problem = problem or next(
            filter(None, (_artifact(ref).gone_elsewhere() for ref in execution.outputs.values())), None
        )
        if problem is None:
            return execution, source_run
        log.warning("%s: not reusing the outputs of run %s: %s", node_id, source_run, problem)
    return None


def _artifact(ref: Any) -> Artifact:
    return ARTIFACT_TYPES.get(ref.type, Artifact)(ref.uri)


@contextmanager
def execution_lock(pipeline_dir: Path, node_id: str, fingerprint: str) -> Iterator[None]:
    """Held while an execution is looked up in the cache, run and published, so that concurrent runs
    under one pipeline folder never run the same execution twice: the second waits, then reuses it.
    The kernel releases the lock when its holder dies, however it dies."""
    locks = pipeline_dir / LOCKS
    locks.mkdir(parents=True, exist_ok=True)

    def waiting() -> None:
        log.info("%s: another run is executing it; waiting to reuse its outputs", node_id)

    with held_lock(locks / f"{node_id}-{fingerprint}.lock", waiting):
        yield


@contextmanager
def held_lock(path: Path, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """An exclusive flock on the file at `path`, created if need be, that `kflow gc` may remove when idle.

    The protocol with gc (`gc.remove_lock`): taking it sets the file's mtime, so a lock in use never looks idle;
    gc removes a lock only while holding it itself, and after taking it a taker checks that `path` still names
    the file it locked: one gc unlinked while this process waited holds no one out, so it starts again on the
    file now at `path` (without the check, two runs each held "the" lock, one the unlinked file, one a new one).
    """
    while True:
        with open_lock(path) as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if waiting is not None:
                    waiting()
                    waiting = None
                fcntl.flock(lock, fcntl.LOCK_EX)
            if names_file(path, lock.fileno()):
                os.utime(lock.fileno())  # now: in use, not idle (gc removes only locks a day untouched)
                yield
                return


def names_file(path: Path, descriptor: int) -> bool:
    """Whether `path` is (still) the file open as `descriptor`."""
    held = os.fstat(descriptor)
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)
