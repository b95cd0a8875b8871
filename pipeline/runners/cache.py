"""Execution fingerprints and the cache lookup over earlier runs' records.

An execution's fingerprint covers the component's code version, the parameters
that affect its outputs and its inputs' fingerprints. An output artifact's
fingerprint is derived from its producer's, so a change anywhere upstream
changes the fingerprint of everything downstream, and nothing else.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.component import Component
from kflow.pipeline.runners.run_record import Execution, earlier_runs


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


def find_cached(pipeline_dir: Path, node_id: str, fingerprint: str) -> tuple[Execution, str] | None:
    """The newest earlier execution of `node_id` with this fingerprint whose outputs still exist,
    and the run that produced those outputs."""
    for run in earlier_runs(pipeline_dir):
        execution = run.executions.get(node_id)
        if not execution or not execution.finished or execution.fingerprint != fingerprint:
            continue
        if all(Path(ref.uri).is_dir() for ref in execution.outputs.values()):
            return execution, execution.cached_from or run.run_id
    return None
