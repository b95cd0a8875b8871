"""`kflow plan`: what a `kflow run` would do, without doing it.

For each node, in the order the run would take them, the plan computes the execution fingerprint exactly as
the runner does (the component's code version, its parameters, its inputs' fingerprints, the source files'
content: an ingest's data is read and hashed, as a run would), looks it up in the cache the same way, and
says whether the node would be reused (and from which run) or run, and why: what differs from the node's
last execution (`changes`, which `kflow diff` uses too). A node that runs only if an upstream model is
blessed is `skipped` when that verdict is cached and negative, and `run if blessed` while it is unknown (also
when its outputs are cached: reused then, skipped otherwise), as is every node downstream of it. Each node's
line is one decision, made from its upstream nodes' decisions, so no two lines contradict each other;
tests/pipeline/runners/test_plan_matches_run.py runs what was planned.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kflow.pipeline.dsl.component import Component
from kflow.pipeline.dsl.config import ConfigError
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.cache import artifact_fingerprint, execution_fingerprint, find_cached
from kflow.pipeline.runners.node_runner import skip_reason
from kflow.pipeline.runners.run_record import ArtifactRef, Execution, earlier_runs


@dataclass
class NodePlan:
    node: str
    action: str  # cached | run | skipped | run if blessed
    why: list[str] = field(default_factory=list)
    cached_from: str | None = None
    fingerprint: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "why": self.why,
            "cached_from": self.cached_from,
            "fingerprint": self.fingerprint,
        }


def facts(
    code_version: str,
    parameters: dict,
    inputs: dict[str, str],
    data: dict | None,
    producers: Mapping[str, str] = MappingProxyType({}),
) -> dict[str, Any]:
    """What an execution's fingerprint is made of, in the form `changes` compares; `producers` ({input: the node
    that produced it}) names each numbered input by its producer (_inputs_named)."""
    entries = [(Path(entry["path"]), entry["sha256"]) for entry in (data or {}).get("files", [])]
    # Files by name, as a user names them; an image folder's classes often share names (0001.jpg in each): those
    # by their folder too, so that one class's changed file is not hidden behind another's.
    shared = {name for name, count in Counter(path.name for path, _ in entries).items() if count > 1}
    files = {(f"{path.parent.name}/{path.name}" if path.name in shared else path.name): sha for path, sha in entries}
    inputs = _inputs_named(inputs, producers)
    return {"code": code_version, "parameters": dict(parameters), "inputs": inputs, "data": files}


def execution_facts(execution: Execution) -> dict[str, Any]:
    inputs = {name: ref.fingerprint for name, ref in execution.inputs.items()}
    # A published artifact's folder is <run>/<node>/<output>: the node that produced each input.
    producers = {name: Path(ref.uri).parent.name for name, ref in execution.inputs.items()}
    return facts(execution.code_version, execution.parameters, inputs, execution.data, producers)


def changes(
    before: dict[str, Any], after: dict[str, Any], files: Mapping[str, str] = MappingProxyType({})
) -> list[str]:
    """Which parts of two executions' fingerprints (`facts`) differ: code, parameters (named), inputs (a numbered one
    by its producer), data files. `files` ({parameter: path}, source_files) names the file a parameter holds the
    text of: an edited module is code."""
    reasons = []
    if before["code"] != after["code"]:
        reasons.append("code")
    for part in ("parameters", "inputs", "data"):
        old, new = before[part], after[part]
        differing = sorted(key for key in set(old) | set(new) if old.get(key) != new.get(key))
        if part == "parameters":  # a module edited (under the same path): its code changed, not a parameter
            edited = [name for name in differing if name in files and old.get(name) and new.get(name)]
            differing = [name for name in differing if name not in edited]
            if edited:
                reasons.append(f"code: {', '.join(Path(files[name]).name for name in edited)}")
        if part == "data" and len(differing) > SAID_FILES:
            reasons.append(f"data: {_files_counted(differing, old, new)}")
        elif differing:
            if part == "inputs":  # a span's artifacts (ingest_span_3, ingest_span_3/schema) said by its ingest once,
                # new or gone where the span came into the window or left it (data.spans: {last: 2})
                differing = [name for name in differing if "/" not in name or name.split("/")[0] not in differing]
                differing = [f"{name} (gone)" if name not in new else f"{name} (new)" if name not in old else name
                             for name in differing]  # fmt: skip
            reasons.append(f"{part}: {', '.join(differing)}")
    return reasons


def source_files(parameters: dict[str, Any]) -> dict[str, str]:
    """{`<name>_source`: the path in `<name>`}: the parameters that hold a file's text (a module's), by its path."""
    return {
        name: str(parameters[name.removesuffix("_source")])
        for name in parameters
        if name.endswith("_source") and isinstance(parameters.get(name.removesuffix("_source")), str)
    }


SAID_FILES = 5  # an image folder grown by a class differs by hundreds of files: counted, a few named


def _files_counted(differing: list[str], old: dict[str, str], new: dict[str, str]) -> str:
    counts = {
        "new": sum(name not in old for name in differing),
        "changed": sum(name in old and name in new for name in differing),
        "gone": sum(name not in new for name in differing),
    }
    said = ", ".join(f"{count} {kind}" for kind, count in counts.items() if count)
    return f"{len(differing)} files ({said}: {', '.join(differing[:SAID_FILES])}, …)"


def _inputs_named(inputs: dict[str, str], producers: Mapping[str, str]) -> dict[str, str]:
    """{input: fingerprint} by the names `changes` says: a numbered input (a SpanUnion's span_2: a place, not what it
    holds) by its producer's id (ingest_span_3), as a span ingest's plan line is named. A span added or gone is then
    its ingest alone, and a span moved to another place (data.spans: all, a span before it added) no change. Where
    that id would name two inputs, each keeps its name. A numbered input's other artifact (span_2_schema) is named
    as its folder is, <producer>/<output> (ingest_span_3/schema)."""
    numbered = {name: producers[name] for name in inputs if re.search(r"_\d+$", name) and producers.get(name)}
    numbered |= {
        name: f"{producers[name]}/{found.group(1)}"
        for name in inputs
        if (found := re.search(r"_\d+_([a-z]+)$", name)) and producers.get(name)
    }
    counts = Counter([*numbered.values(), *inputs])
    return {
        numbered[name] if name in numbered and counts[numbered[name]] == 1 else name: fingerprint
        for name, fingerprint in inputs.items()
    }


def _last_execution(pipeline_dir: Path, node_id: str) -> Execution | None:
    for run in earlier_runs(pipeline_dir):
        execution = run.executions.get(node_id)
        if execution and execution.finished:
            return execution
    return None


def plan_pipeline(pipeline: Pipeline, pipeline_root: str | Path, enable_cache: bool = True) -> list[NodePlan]:
    pipeline_dir = Path(pipeline_root) / pipeline.name
    fingerprints: dict[str, str] = {}
    outputs: dict[str, dict[str, ArtifactRef]] = {}  # the outputs of cached nodes, which later nodes may read
    plans: dict[str, NodePlan] = {}
    for node in pipeline.topological_order():
        plans[node.id] = plan = _plan_node(node, pipeline_dir, fingerprints, outputs, plans, enable_cache)
        if plan.action not in ("cached", "skipped"):  # what the pipeline's builder says of the node (a span)
            plan.why += pipeline.metadata.get("plan_notes", {}).get(node.id, [])
        fingerprints[node.id] = plan.fingerprint
    return list(plans.values())


def _plan_node(
    node: Component,
    pipeline_dir: Path,
    fingerprints: dict[str, str],
    outputs: dict[str, dict[str, ArtifactRef]],
    plans: dict[str, NodePlan],
    enable_cache: bool,
) -> NodePlan:
    # One decision a node, from its upstream nodes' decisions (never from what the plan has not produced: a node
    # whose inputs run is not skipped for want of their outputs), in the runner's words (node_runner.skip_reason).
    producers = [channel.producer for channel in [*node.inputs.values(), *([node.run_if] if node.run_if else [])]]
    skipped = [producer for producer in producers if plans[producer].action == "skipped"]
    if skipped:
        return NodePlan(node.id, "skipped", [f"{skipped[0]} was skipped"])
    if node.run_if is not None and plans[node.run_if.producer].action == "cached":
        reason = skip_reason(node, {node.run_if.producer: outputs[node.run_if.producer]}, inputs_known=False)
        if reason:
            return NodePlan(node.id, "skipped", [reason])
    inputs = {name: artifact_fingerprint(fingerprints[ch.producer], ch.output) for name, ch in node.inputs.items()}
    node.resolve_run_time_parameters(inputs)
    try:
        data = node.data_fingerprint()
    except (ValueError, OSError) as error:  # no source to read (no MNIST file, no path): the run would fail here
        raise ConfigError([f"{node.id}: {error}"]) from error
    fingerprint = execution_fingerprint(node, inputs, data)
    producer_of = {name: channel.producer for name, channel in node.inputs.items()}
    planned = facts(type(node).code_version(), node.cache_parameters, inputs, data, producer_of)
    # Whether the node runs at all waits on a verdict the run has yet to give: its own, or an upstream node's.
    condition = None
    if node.run_if is not None and plans[node.run_if.producer].action != "cached":
        condition = f"if {node.run_if.producer}.{node.run_if.output} blesses its model"
    elif conditional := [producer for producer in producers if plans[producer].action == "run if blessed"]:
        condition = f"if {conditional[0]} runs"  # skipped with its upstream node, if that one is
    cached = find_cached(pipeline_dir, node.id, fingerprint) if enable_cache else None
    if cached:
        execution, source_run = cached
        if condition:  # reused then, skipped otherwise: never "cached" before the verdict
            return NodePlan(node.id, "run if blessed", [f"reused from run {source_run}", condition], None, fingerprint)
        outputs[node.id] = dict(execution.outputs)
        return NodePlan(node.id, "cached", [], source_run, fingerprint)
    last = _last_execution(pipeline_dir, node.id)
    if last is None:
        why = ["new"]
    else:
        before = execution_facts(last)
        before["parameters"] = {name: value for name, value in last.parameters.items() if name in node.cache_parameters}
        why = changes(before, planned, source_files(node.parameters))
        why = why or ["its last outputs are gone or damaged"]
    if not enable_cache:
        why = ["--no-cache"]
    why = [*why, *node.plan_notes()]
    action = "run"
    if condition:
        action, why = "run if blessed", [*why, condition]
    return NodePlan(node.id, action, why, None, fingerprint)


def format_plan(pipeline: Pipeline, plans: list[NodePlan], pipeline_dir: Path) -> str:
    running = sum(plan.action != "cached" and plan.action != "skipped" for plan in plans)
    width = max(len("component"), *(len(plan.node) for plan in plans))
    lines = [
        f"plan for {pipeline.name} ({pipeline_dir}): {running} of {len(plans)} component(s) would run",
        f"{'component':<{width}}  {'action':<14}  why",
    ]
    lines[1:1] = pipeline.metadata.get("plan_header", [])  # what the whole run reads (its spans)
    for plan in plans:
        why = f"from run {plan.cached_from}" if plan.action == "cached" else "; ".join(plan.why)
        lines.append(f"{plan.node:<{width}}  {plan.action:<14}  {why}")
    return "\n".join(lines)
