"""`kflow runs` and `kflow diff`: the history of a pipeline's runs, and what changed between two of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kflow.components.ingest.spans import has_spans
from kflow.pipeline.cli.test_data import format_test_data, run_spans, test_data_difference
from kflow.pipeline.cli.trained_with import format_settings, tuned_settings
from kflow.pipeline.dsl.artifacts import Model
from kflow.pipeline.runners.plan import changes, execution_facts, source_files
from kflow.pipeline.runners.run_record import RUN_FILE, Execution, Run, earlier_runs


def list_runs(path: str | Path) -> list[dict[str, Any]]:
    """One row per run, newest first, of a pipeline folder (`runs/demo`), of every pipeline under a root (`runs`), or
    of a config's pipeline (`iris.yaml`: where `kflow run` of it writes)."""
    path = config_pipeline(Path(path))
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is not a folder of runs")
    folders = [path] if any(path.glob(f"*/{RUN_FILE}")) else sorted(p for p in path.iterdir() if p.is_dir())
    rows = [_row(run) for folder in folders for run in earlier_runs(folder)]
    if not rows:
        raise FileNotFoundError(f"{path} holds no runs")
    return sorted(rows, key=lambda row: row["run_id"], reverse=True)


def config_pipeline(path: Path) -> Path:
    """A config's pipeline folder (pipeline_root/name, where `kflow run` of it writes); any other path as it is."""
    if not path.is_file():
        return path
    from kflow.pipeline.app.config_loading import load_for_command

    config = load_for_command(str(path), [])
    return Path(config.pipeline_root).expanduser().resolve() / config.name


def _row(run: Run) -> dict[str, Any]:
    """`evaluations` has one entry per node that blessed or refused a model (a compare pipeline has several);
    `headline` and `blessed` are the single one's, or None when there are several or none."""
    evaluations = []
    for node_id, execution in sorted(run.executions.items()):
        if "blessed" in execution.summary:
            name = execution.summary.get("headline")
            value = execution.summary.get(name) if name else None
            headline = {"metric": name, "value": value} if value is not None else None
            evaluations.append({"node": node_id, "headline": headline, "blessed": execution.summary["blessed"]})
    (single,) = evaluations if len(evaluations) == 1 else [{"headline": None, "blessed": None}]
    return {
        "pipeline": run.pipeline,
        "run_id": run.run_id,
        "started": run.started_at,
        "status": run.status,
        "seconds": run.seconds,
        "headline": single["headline"],
        "blessed": single["blessed"],
        "evaluations": evaluations,
        "run_dir": str(run.run_dir),
        "spans": run_spans(run),
        "hyperparameters": tuned_settings(run),
        "data": _data_read(run),
    }


def _data_read(run: Run) -> str:
    """What the run learnt from: its source's file or folder name and the label, as `iris.csv (species)`: the ingest
    upstream of a trainer, else one with a label, else the first; not a declared pipeline's ingest of rows to score
    (label: null), wherever it ran."""
    ingests = [e for e in run.executions.values() if e.parameters.get("source_path")]
    trainers = [e for e in run.executions.values() if any(r.type == Model.type_name for r in e.outputs.values())]
    upstream = _upstream(run, trainers)
    trained_on = [e for e in ingests if e.node_id in upstream]
    labelled = [e for e in ingests if e.parameters.get("label")]
    if not ingests:
        return ""
    chosen = (trained_on or labelled or ingests)[0]
    label = chosen.parameters.get("label")
    source = str(chosen.parameters["source_path"])
    pattern = ((run.metadata.get("config") or {}).get("data") or {}).get("source", {}).get("path")
    if isinstance(pattern, str) and has_spans(pattern):  # the spans' pattern, not one span's file (a user trial)
        source = pattern
    return Path(source.rstrip("/")).name + (f" ({label})" if label else "")


def _upstream(run: Run, executions: list[Execution]) -> set[str]:
    """The nodes whose outputs those executions read, directly or through others."""
    # A published artifact's folder is <run>/<node>/<output>: the node that produced each input, also where the
    # output is an earlier run's (cached).
    producers = {ref.uri: e.node_id for e in run.executions.values() for ref in e.outputs.values()}
    seen, todo = set(), list(executions)
    while todo:
        for ref in todo.pop().inputs.values():
            node = producers.get(ref.uri, Path(ref.uri).parent.name)
            if node not in seen and node in run.executions:
                seen.add(node)
                todo.append(run.executions[node])
    return seen


def _tuned(settings: dict[str, dict[str, Any]]) -> str:
    if len(settings) == 1:
        return format_settings(next(iter(settings.values())))
    return ", ".join(f"{node}: {format_settings(values)}" for node, values in sorted(settings.items()))


def _headline(headline: dict[str, Any] | None) -> str:
    return "" if headline is None else f"{headline['metric']}={headline['value']:.4g}"


_VERDICT = {True: "yes", False: "NO", None: ""}


def format_runs(rows: list[dict[str, Any]]) -> str:
    spans = any(row.get("spans") for row in rows)  # a column only where some run read spans
    tuned = any(row.get("hyperparameters") for row in rows)  # a column only where some model was tuned
    # A column only where the runs of a pipeline learnt from different data (table.yaml's one pipeline, any table).
    data = any(len({r.get("data") for r in rows if r["pipeline"] == row["pipeline"]}) > 1 for row in rows)
    table = [("pipeline", "run", "started", "status", "seconds", *(["data (label)"] * data), "headline metric")]
    table[0] += ("blessed", *(["spans"] * spans))
    table[0] += ("tuned settings",) * tuned
    for row in rows:
        evaluations = row.get("evaluations", [])
        if len(evaluations) > 1:  # e.g. two trainers compared: each evaluator's metric and verdict
            headline = ", ".join(
                f"{e['node']}: " + " ".join(filter(None, [_headline(e["headline"]), _VERDICT[e["blessed"]]]))
                for e in evaluations
            )
            verdict = f"{sum(bool(e['blessed']) for e in evaluations)} of {len(evaluations)}"
        else:
            headline, verdict = _headline(row["headline"]), _VERDICT[row["blessed"]]
        table.append(
            (
                row["pipeline"],
                row["run_id"],
                (row["started"] or "")[:19].replace("T", " "),
                row["status"],
                "" if row["seconds"] is None else f"{row['seconds']:.1f}",
                *([row.get("data") or ""] * data),
                headline,
                verdict,
                *([",".join(row.get("spans") or [])] * spans),
            )
            + (_tuned(row.get("hyperparameters") or {}),) * tuned
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in table
    )


def diff_runs(a: Run, b: Run) -> dict[str, Any]:
    """What differs from run `a` to run `b`: config fields, each component's status and why it re-ran, metrics."""
    config_a, config_b = _flatten(a.metadata.get("config", {})), _flatten(b.metadata.get("config", {}))
    parameters = {
        key: {"a": config_a.get(key), "b": config_b.get(key)}
        for key in sorted(set(config_a) | set(config_b))
        if config_a.get(key) != config_b.get(key) and not _filled(key, config_a, config_b)
    }
    parameters = _folded(parameters, config_a, config_b)
    parameters.update(_changed_files(a, b, config_b))
    components = {}
    for node in [*a.executions, *(n for n in b.executions if n not in a.executions)]:
        first, second = a.executions.get(node), b.executions.get(node)
        components[node] = {
            "a": first.status if first else None,
            "b": second.status if second else None,
            "same_fingerprint": bool(first and second and first.fingerprint == second.fingerprint),
            "changed": _why(first, second) if first and second else ["only in one run"],
        }
    return {
        "a": a.run_id,
        "b": b.run_id,
        "parameters": parameters,
        "components": components,
        "test_data": test_data_difference(a, b),
        **_comparable_metrics(a, b),
    }


def _changed_files(a: Run, b: Run, config_b: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The files the config names whose content the runs read (a module's source: a component's `<name>_source`
    beside its path, `<name>`) that changed under the same path, which the config's own fields do not show; named by
    the config field holding the path, else `node.name`."""
    changed = {}
    for node, second in b.executions.items():
        first = a.executions.get(node)
        for name in second.parameters if first else ():
            path = second.parameters.get(name.removesuffix("_source"))
            if not name.endswith("_source") or not path or first.parameters.get(name.removesuffix("_source")) != path:
                continue
            if first.parameters.get(name) != second.parameters[name]:
                fields = [key for key, value in config_b.items() if value == path] or [f"{node}.{name[:-7]}"]
                changed.update({field: {"a": path, "b": path, "content_changed": True} for field in fields})
    return changed


def _why(first: Execution, second: Execution) -> list[str]:
    """Which parts of the two executions' fingerprints differ."""
    return changes(execution_facts(first), execution_facts(second), source_files(second.parameters))


def _comparable_metrics(a: Run, b: Run) -> dict[str, Any]:
    """{"metrics": deltas}, or none and why when the runs' models answer different questions (another label, or a
    task whose headline metric differs: classification against regression), where a `loss` of each is no change."""
    first, second = _question(a), _question(b)
    differing = [f"{name} {first[name]} → {second[name]}" for name in first if first[name] != second[name]]
    if all(first.values()) and all(second.values()) and differing:
        return {"metrics": {}, "metrics_not_compared": f"the models predict different things ({'; '.join(differing)})"}
    return {"metrics": _metric_deltas(a, b)}


def _question(run: Run) -> dict[str, Any]:
    """The label the run's data was read for and its evaluation's headline metric (the task's), where recorded."""
    labels = {e.parameters.get("label") for e in run.executions.values() if e.parameters.get("label")}
    headlines = {e.summary.get("headline") for e in run.executions.values() if e.summary.get("headline")}
    return {
        "label": next(iter(labels)) if len(labels) == 1 else None,
        "headline metric": next(iter(headlines)) if len(headlines) == 1 else None,
    }


def _metric_deltas(a: Run, b: Run) -> dict[str, dict[str, float]]:
    deltas = {}
    for node, second in b.executions.items():
        first = a.executions.get(node)
        if first is None or "blessed" not in second.summary:
            continue
        for name, value in second.summary.items():
            before = first.summary.get(name)
            if _is_number(value) and _is_number(before):
                deltas[f"{node}.{name}"] = {"a": before, "b": value, "change": value - before}
    return deltas


def format_diff(diff: dict[str, Any]) -> str:
    lines = [f"run {diff['a']} → run {diff['b']}", "", "config:"]
    lines += [
        f"  {key}: {change['a']!r}, the same path; its content changed"
        if change.get("content_changed")
        else f"  {key}: {change['a']!r} → {change['b']!r}"
        for key, change in diff["parameters"].items()
    ] or ["  same"]
    lines += ["", "components:"]
    for node, entry in diff["components"].items():
        why = "; ".join(entry["changed"]) if not entry["same_fingerprint"] else "same fingerprint"
        before, after = (entry[side] or "not in the run" for side in ("a", "b"))  # a node only one run has
        lines.append(f"  {node}: {before} → {after} ({why})")
    lines += ["", *format_test_data(diff.get("test_data"))]
    lines += ["", "metrics:"]
    lines += [
        f"  {name}: {entry['a']:.4g} → {entry['b']:.4g} ({entry['change']:+.4g})"
        for name, entry in diff["metrics"].items()
    ] or [
        f"  not compared: {diff['metrics_not_compared']}" if diff.get("metrics_not_compared") else "  none to compare"
    ]
    return "\n".join(lines)


def _filled(key: str, config_a: dict[str, Any], config_b: dict[str, Any]) -> bool:
    """Whether `key` is an empty mapping on one side and holds fields on the other: those fields say the change
    (`trainer.model_options.dropout: None → 0.2`), not `trainer.model_options: {} → None`."""
    return any(
        config.get(key) == {} and any(name.startswith(f"{key}.") for name in other)
        for config, other in ((config_a, config_b), (config_b, config_a))
    )


def _folded(changed: dict[str, Any], config_a: dict[str, Any], config_b: dict[str, Any]) -> dict[str, Any]:
    """`changed` with a field that is a value on one side and a mapping on the other said once, as the two wholes
    (`data.spans: {'last': 1} → 'all'`), not as the value's line and each of the mapping's fields'."""
    folded = dict(changed)
    for key in changed:
        fields = [name for name in changed if name.startswith(f"{key}.")]
        if not fields:
            continue
        start = len(key) + 1
        whole = [{name[start:]: v for name, v in config.items() if name.startswith(f"{key}.")} or config.get(key)
                 for config in (config_a, config_b)]  # fmt: skip
        folded[key] = {"a": whole[0], "b": whole[1]}
        for name in fields:
            folded.pop(name, None)
    return folded


def _flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Each field by its dotted name; a list of mappings by each one's `id` (a declared pipeline's components:
    `components.train.parameters.epochs`), else its place (`evaluator.slices[1].by`): one change is one line, not
    the whole list twice (a user trial's diff of a declared pipeline)."""
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, f"{prefix}{key}."))
        elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            ids = [item.get("id") for item in value]
            if all(isinstance(name, str) for name in ids) and len(set(ids)) == len(ids):
                flat.update(_flatten({item["id"]: _without_id(item) for item in value}, f"{prefix}{key}."))
            else:
                flat.update(_flatten({f"{key}[{index}]": item for index, item in enumerate(value)}, prefix))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _without_id(item: dict[str, Any]) -> Any:
    """A listed mapping's fields but its `id` (its name in the flat key); one of an id alone is kept as a value."""
    rest = {name: value for name, value in item.items() if name != "id"}
    return rest or item["id"]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
