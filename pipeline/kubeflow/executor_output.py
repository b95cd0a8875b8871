"""A task's executor output: how a KFP launcher (and `kfp.local`'s runners) learns what the task produced.

KFP's launcher takes a container task's output artifacts from the executor output file named in its executor
input (`outputs.outputFile`), as KFP's own Python executor writes it (kfp/dsl/executor.py,
`Executor.write_executor_output`): for each output artifact, `{"artifacts": [{"name", "uri", "metadata"}]}`, the
uri as the executor input gave it. Output parameters written to their `dsl.OutputPath` files are read from those
files by the launcher, so they need no entry here. Every kflow task writes this file (kfp_entrypoint.py, and the
job launcher for a cluster's train task); an Evaluator's task adds its metrics' metadata (kfp_metrics.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def executor_output(executor_input: dict[str, Any], metadata: dict[str, dict[str, Any]] | None = None) -> dict:
    """The ExecutorOutput message (as JSON) naming every output artifact of the task, with `metadata`'s entries."""
    metadata = metadata or {}
    declared = executor_input.get("outputs", {}).get("artifacts", {})
    unknown = sorted(set(metadata) - set(declared))
    if unknown:
        raise ValueError(f"the task has no output artifact {unknown[0]!r} (outputs: {', '.join(sorted(declared))})")
    artifacts = {}
    for name, listed in sorted(declared.items()):
        (runtime_artifact,) = listed["artifacts"]
        entry = {"name": runtime_artifact.get("name", ""), "uri": runtime_artifact["uri"]}
        artifacts[name] = {"artifacts": [{**entry, "metadata": {**metadata.get(name, {})}}]}
    return {"artifacts": artifacts} if artifacts else {}


def write_executor_output(
    executor_input: dict[str, Any] | None, metadata: dict[str, dict[str, Any]] | None = None
) -> Path | None:
    """Writes the task's executor output where its executor input says (creating the folder); returns the file's
    path, or None where the executor input names no output file (a task run outside KFP)."""
    output_file = (executor_input or {}).get("outputs", {}).get("outputFile")
    if not output_file:
        return None
    message = executor_output(executor_input, metadata)
    path = Path(output_file)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(message, indent=2, sort_keys=True) + "\n")
    return path
