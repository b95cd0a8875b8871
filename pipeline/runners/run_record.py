"""`run.json`: the record of one pipeline run, rewritten atomically after every change.

    {"pipeline": "mnist", "run_id": "20261123-101500-123456-3f2a" (its start in UTC, and a tag),
     "sequence": 42 (the pipeline folder's run counter: the order of runs, whatever the clocks say),
     "host": ..., "pid": ... (the process running it),
     "status": "running" | "succeeded" | "failed" | "cancelled",
     "started_at": ..., "finished_at": ..., "seconds": 12.3, "metadata": {...},
     "components": {"ingest": {"status": "succeeded" | "cached" | "skipped" | "failed" | "cancelled" | "running",
                               "seconds": ..., "parameters": {...}, "fingerprint": "...", "code_version": "...",
                               "data": {"files": [...]} (an ingest's source files),
                               "inputs": {name: {"type", "uri", "fingerprint"}}, "outputs": {...},
                               "summary": {...}, "cached_from": run_id, "error": "...",
                               "started_at": ..., "finished_at": ... (executed ones)}}}

Several components may finish at once (parallel branches), so updates hold an
exclusive file lock while they read, change and replace the file.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import logging
import os
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.artifacts import ARTIFACT_TYPES, Artifact
from kflow.pipeline.dsl.durable import open_lock, write_atomically
from kflow.pipeline.dsl.secrets import redact_record

log = logging.getLogger("kflow")

RUN_FILE = "run.json"
# Statuses of an execution whose outputs are published (by this run, or reused from an earlier one).
FINISHED = ("succeeded", "cached")
REF_FIELDS = ("type", "uri", "fingerprint")


def new_run_id() -> str:
    """The start time in UTC to the microsecond, and a random tag: for people to read; the order of runs is their
    `sequence`, not this (a clock set back, a change of time zone or of summer time would reorder names)."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S-%f-") + secrets.token_hex(2)


SEQUENCE_FILE = ".sequence"


def next_sequence(pipeline_dir: Path) -> int:
    """The next number of the pipeline folder's run counter (under a lock, so concurrent runs get distinct ones)."""
    pipeline_dir.mkdir(parents=True, exist_ok=True)
    with open_lock(pipeline_dir / f"{SEQUENCE_FILE}.lock") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        counter = pipeline_dir / SEQUENCE_FILE
        try:
            current = int(counter.read_text().strip() or 0)
        except (OSError, ValueError):  # none yet (or unreadable): continue after the highest recorded run
            current = max((run.sequence or 0 for run in earlier_runs(pipeline_dir)), default=0)
        write_atomically(counter, f"{current + 1}\n")
        return current + 1


def _now(timespec: str = "seconds") -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec=timespec)


def now_precise() -> str:
    """A component's start or end: to the millisecond, so that parallel executions show their overlap."""
    return _now("milliseconds")


class RecordNotWritten(OSError):
    """run.json could not be replaced (a full disk, an I/O error): the file keeps its last state, whole."""

    def __init__(self, path: Path, error: OSError):
        super().__init__(error.errno, f"cannot write {path}: {error.strerror or error}; it keeps its last state")


class RunRecord:
    """Reads and updates `<run_dir>/run.json`."""

    def __init__(self, run_dir: str | Path):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / RUN_FILE

    @classmethod
    def create(cls, run_dir: Path, pipeline: str, run_id: str, metadata: dict[str, Any]) -> RunRecord:
        record = cls(run_dir)
        run_dir.mkdir(parents=True, exist_ok=False)
        record._write(
            {
                "pipeline": pipeline,
                "run_id": run_id,
                "sequence": next_sequence(run_dir.parent),
                "host": socket.gethostname(),  # with the pid: whether a "running" run still runs (kflow gc)
                "pid": os.getpid(),
                "status": "running",
                "started_at": _now(),
                "metadata": metadata,
                "components": {},
            }
        )
        return record

    def load(self) -> dict[str, Any]:
        return json.loads(self.path.read_text())

    def set_component(self, node_id: str, **fields: Any) -> None:
        with self._locked() as data:
            data["components"].setdefault(node_id, {}).update(fields)

    def finish(self, status: str, seconds: float) -> None:
        with self._locked() as data:
            data.update(status=status, finished_at=_now(), seconds=round(seconds, 3))
            for entry in data["components"].values():
                if entry.get("status") == "running":  # Interrupted before it could say so itself.
                    entry["status"] = status

    @contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        with open_lock(self.path.with_suffix(".lock")) as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = self.load()
            yield data
            self._write(data)

    def _write(self, data: dict[str, Any]) -> None:
        record = redact_record(data)  # Credentials given as Beam options are used, never recorded.
        try:
            write_atomically(self.path, json.dumps(record, indent=2, sort_keys=False, default=str) + "\n")
        except OSError as error:
            raise RecordNotWritten(self.path, error) from error


def earlier_runs(pipeline_dir: Path) -> Iterator[Run]:
    """The runs under `pipeline_dir`, newest first by their sequence number (records from before sequences, by
    name, older than any numbered one); a record that cannot be read or is not a run record is skipped, with one
    warning per file (`read_run`)."""
    runs = [run for run_file in pipeline_dir.glob(f"*/{RUN_FILE}") if (run := read_run(run_file)) is not None]
    yield from sorted(
        runs, key=lambda run: (run.sequence is not None, run.sequence or 0, run.run_dir.name), reverse=True
    )


class NotARunRecord(FileNotFoundError):
    """A run.json that is not a run record (`[]`, a field of the wrong kind): to whoever reads it, as if there were
    no record there (so `kflow show` of that folder is one line, not a traceback)."""

    def __init__(self, path: Path, why: str):
        super().__init__(f"{path}: not a run record ({why})")


# Files already warned about in this process: a run reads the records dozens of times (every cache lookup).
_WARNED: set[Path] = set()


def read_run(run_file: Path) -> Run | None:
    """The run recorded in `run_file`, or None where it cannot be read (gone meanwhile: no word) or is not a run
    record (one warning naming the file, once a process): one damaged record must not stop the pipeline's
    other runs from being read, reused, listed or collected."""
    try:
        return Run.from_json(load_record(run_file), run_file.parent)
    except NotARunRecord as malformed:
        if run_file not in _WARNED:
            _WARNED.add(run_file)
            log.warning("skipping %s", malformed)
        return None
    except OSError:
        return None


def load_record(run_file: Path) -> dict[str, Any]:
    """run.json's content, checked to be a run record: of the kinds `Run.from_json` and its readers rely on."""
    try:
        data = json.loads(run_file.read_text(encoding="utf-8"))
    except ValueError as error:  # not JSON, or not UTF-8
        raise NotARunRecord(run_file, f"not JSON: {error}") from error
    problem = record_problem(data)
    if problem:
        raise NotARunRecord(run_file, problem)
    return data


def _kind(value: Any, *kinds: type) -> bool:
    return isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)


_NUMBER = (int, float)
_TEXT_OR_NONE = (str, type(None))


def record_problem(data: Any) -> str | None:
    """What makes `data` not a run record, in a few words; None when it is one. Only what readers use is checked
    (fields a newer kflow adds are fine; records from before `sequence`, `host` or `pid` are too)."""
    if not isinstance(data, dict):
        return f"{_described(data)}, not an object"
    if "components" not in data:
        return "no 'components'"
    top = {
        "run_id": (str,), "pipeline": (str,), "status": (str,), "sequence": (int, type(None)),
        "host": _TEXT_OR_NONE, "pid": (int, type(None)), "started_at": _TEXT_OR_NONE,
        "seconds": (*_NUMBER, type(None)), "metadata": (dict,), "components": (dict,),
    }  # fmt: skip
    for name, kinds in top.items():
        if name in data and not _kind(data[name], *kinds):
            return f"{name!r} is {_described(data[name])}"
    config = data.get("metadata", {}).get("config") or {}
    if not isinstance(config, dict) or not _kind(config.get("data"), dict, type(None)):
        return "'metadata.config' is not a config (an object, its 'data' an object)"
    for node_id, entry in data["components"].items():
        problem = _execution_problem(entry)
        if problem:
            return f"components.{node_id}: {problem}"
    return None


_EXECUTION = {
    "status": (str,), "seconds": _NUMBER, "fingerprint": _TEXT_OR_NONE, "code_version": _TEXT_OR_NONE,
    "data": (dict, type(None)), "parameters": (dict,), "inputs": (dict,), "outputs": (dict,), "summary": (dict,),
    "cached_from": _TEXT_OR_NONE, "error": _TEXT_OR_NONE, "error_log": _TEXT_OR_NONE,
}  # fmt: skip


def _execution_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return f"{_described(entry)}, not an object"
    for name, kinds in _EXECUTION.items():
        if name in entry and not _kind(entry[name], *kinds):
            return f"{name!r} is {_described(entry[name])}"
    for side in ("inputs", "outputs"):
        for name, ref in entry.get(side, {}).items():
            known = isinstance(ref, dict) and ref.get("type") in ARTIFACT_TYPES
            if not known or not isinstance(ref.get("uri"), str):
                return f"{side}.{name} is not an artifact (a known type and a uri)"
            if not _kind(ref.get("fingerprint", ""), str):
                return f"{side}.{name}.fingerprint is {_described(ref['fingerprint'])}"
    files = (entry.get("data") or {}).get("files", [])
    if not isinstance(files, list) or not all(
        isinstance(file, dict) and isinstance(file.get("path"), str) and isinstance(file.get("sha256"), str)
        for file in files
    ):
        return "data.files is not a list of files (path, sha256)"
    return None


def _described(value: Any) -> str:
    kind = {dict: "an object", list: "an array", str: "text", bool: "true/false", type(None): "null"}
    return kind.get(type(value), "a number" if isinstance(value, _NUMBER) else type(value).__name__)


@dataclass(frozen=True)
class ArtifactRef:
    """A published artifact as it travels between nodes and into run.json."""

    type: str
    uri: str
    fingerprint: str = ""

    def open(self) -> Artifact:
        return ARTIFACT_TYPES[self.type](self.uri)

    def to_json(self) -> dict[str, str]:
        return {"type": self.type, "uri": self.uri, "fingerprint": self.fingerprint}


@dataclass(frozen=True)
class Execution:
    """One component's entry in run.json, typed."""

    node_id: str
    status: str
    seconds: float = 0.0
    fingerprint: str | None = None
    code_version: str | None = None
    data: dict[str, Any] | None = None  # an ingest's source files: {"files": [{path, size, mtime, sha256}]}
    parameters: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, ArtifactRef] = field(default_factory=dict)
    outputs: dict[str, ArtifactRef] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    cached_from: str | None = None
    error: str | None = None  # one line: the cause
    error_log: str | None = None  # <run>/<node>.failed/error.log: the cause and its whole traceback

    @classmethod
    def from_json(cls, node_id: str, entry: dict[str, Any]) -> Execution:
        def refs(items: dict[str, Any]) -> dict[str, ArtifactRef]:
            # Fields a newer kflow may add are left out, not an error.
            return {
                name: ArtifactRef(**{k: v for k, v in ref.items() if k in REF_FIELDS}) for name, ref in items.items()
            }

        return cls(
            node_id=node_id,
            status=entry.get("status", "unknown"),
            seconds=entry.get("seconds", 0.0),
            fingerprint=entry.get("fingerprint"),
            code_version=entry.get("code_version"),
            data=entry.get("data"),
            parameters=entry.get("parameters", {}),
            inputs=refs(entry.get("inputs", {})),
            outputs=refs(entry.get("outputs", {})),
            summary=entry.get("summary", {}),
            cached_from=entry.get("cached_from"),
            error=entry.get("error"),
            error_log=entry.get("error_log"),
        )

    @property
    def finished(self) -> bool:
        """Ran to the end now or earlier (its outputs are published)."""
        return self.status in FINISHED

    def inputs_of_type(self, kind: type[Artifact]) -> list[Artifact]:
        return [ref.open() for ref in self.inputs.values() if issubclass(ARTIFACT_TYPES[ref.type], kind)]

    def outputs_of_type(self, kind: type[Artifact]) -> list[Artifact]:
        return [ref.open() for ref in self.outputs.values() if issubclass(ARTIFACT_TYPES[ref.type], kind)]


@dataclass(frozen=True)
class Run:
    """A run.json, typed: the run's status and its executions by node id."""

    run_id: str
    run_dir: Path
    pipeline: str = ""
    sequence: int | None = None
    host: str | None = None
    pid: int | None = None
    status: str = "unknown"
    started_at: str | None = None
    seconds: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    executions: dict[str, Execution] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any], run_dir: Path) -> Run:
        return cls(
            run_id=data.get("run_id", run_dir.name),
            run_dir=run_dir,
            pipeline=data.get("pipeline", ""),
            sequence=data.get("sequence"),
            host=data.get("host"),
            pid=data.get("pid"),
            status=data.get("status", "unknown"),
            started_at=data.get("started_at"),
            seconds=data.get("seconds"),
            metadata=data.get("metadata", {}),
            executions={
                node_id: Execution.from_json(node_id, entry) for node_id, entry in data.get("components", {}).items()
            },
        )

    @classmethod
    def load(cls, run_dir: str | Path) -> Run:
        """The run recorded in `run_dir`; NotARunRecord (one line) where its run.json is not a run record."""
        return cls.from_json(load_record(Path(run_dir) / RUN_FILE), Path(run_dir))
