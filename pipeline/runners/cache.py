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
from kflow.pipeline.runners.run_record import earlier_runs

REUSABLE = ("succeeded", "cached")


def _digest(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:20]


def execution_fingerprint(node: Component, input_fingerprints: dict[str, str]) -> str:
    return _digest(
        {
            "component": f"{type(node).__module__}.{type(node).__qualname__}",
            "code": type(node).code_version(),
            "parameters": node.cache_parameters,
            "inputs": input_fingerprints,
        }
    )


def artifact_fingerprint(execution: str, output: str) -> str:
    return _digest([execution, output])


def find_cached(pipeline_dir: Path, node_id: str, fingerprint: str) -> dict[str, Any] | None:
    """The newest earlier execution of `node_id` with this fingerprint whose outputs still exist."""
    for run in earlier_runs(pipeline_dir):
        entry = run["components"].get(node_id)
        if not entry or entry.get("status") not in REUSABLE or entry.get("fingerprint") != fingerprint:
            continue
        if all(Path(output["uri"]).is_dir() for output in entry["outputs"].values()):
            return {**entry, "run_id": entry.get("cached_from") or run["run_id"]}
    return None
