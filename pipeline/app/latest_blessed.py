"""`evaluator.baseline: latest_blessed` in `kflow run`: TFX's LatestBlessedModelResolver over the local run records.

The baseline is the model of the newest earlier run (by run sequence) that blessed it and trained a
comparable model: the same pipeline name, dataset, task, label and `data.source.path` (`model_identity`), so two
configs with one name in one root, or one config run on several tables, never take each other's baselines.
Models are told apart by their fingerprint (code,
parameters, data bytes, user module), not by config equality: when the newest blessed model is the very
model being evaluated (the Trainer was cached, or trained again under `--no-cache`), comparing it with itself
says nothing, so it keeps what it was blessed against, and a re-run stays fully cached: a reason for no
baseline is kept with it, so it says only what stays true then ("no earlier run blessed a model other than
this one"). Anything else (new bytes under the same path, an
edited `trainer.module`, another kflow) is a new model, compared with the newest blessed one.

Resolved when the node is about to run, from its inputs' fingerprints (`Component.run_time_parameters`),
into parameters of the Evaluator, so its cache key holds the baseline: `baseline_model_uri`,
`baseline_module_digest` (the sha256 of the baseline's user module when it was blessed: the Evaluator runs
that code only if it is unchanged) and `no_baseline_reason` (said in the verdict when there is none).
"""

from __future__ import annotations

import copy
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.artifacts import Model, ModelBlessing
from kflow.pipeline.dsl.config import rename_fields
from kflow.pipeline.runners.run_record import ArtifactRef, Execution, Run, earlier_runs

RESOLVED = ("baseline_model_uri", "baseline_module_digest", "no_baseline_reason")
COMPARABLE = ("dataset", "problem_type", "label")  # What makes two models of a pipeline comparable.


def model_identity(config: dict[str, Any], table: bool = False) -> dict[str, Any]:
    """What makes two runs' models comparable: the pipeline's name and COMPARABLE; with `table`, also the data they
    were trained on, `data.source.path` (a baseline, a warm start: one config run on several tables, table.yaml with
    --set data.source.path, must not take one table's model for another's)."""
    config = copy.deepcopy(config)
    rename_fields(config, warn=False)  # A run recorded before a field was renamed (data.task) is the same config.
    data = config.get("data") or {}
    identity = {"name": config.get("name"), **{key: data.get(key) for key in COMPARABLE}}
    path = (data.get("source") or {}).get("path")
    if table and path:  # a dataset of no source file (MNIST's own) is the same data wherever it runs
        # one file however spelled (a user trial's p5/../data/wage.csv was another table than data/wage.csv)
        identity["data.source.path"] = path if "://" in path else os.path.normpath(path)
    return identity


def latest_blessed(pipeline_dir: Path, config: dict[str, Any], model_input: str) -> Callable[[dict[str, str]], dict]:
    """The Evaluator's run-time parameters: the baseline for the model on its `model_input`."""
    identity = model_identity(config, table=True)
    return lambda input_fingerprints: find_baseline(pipeline_dir, identity, input_fingerprints[model_input])


def find_baseline(pipeline_dir: Path, identity: dict[str, Any], model_fingerprint: str) -> dict[str, Any]:
    others = []
    for run in earlier_runs(pipeline_dir):
        found = blessed_model(run)
        if found is None:
            continue
        execution, model, blessing = found
        other = model_identity(run.metadata.get("config") or {}, table="data.source.path" in identity)
        if other != identity:
            others.append(other)
            continue
        if model.fingerprint and model.fingerprint == model_fingerprint:
            kept = {name: execution.parameters.get(name) for name in RESOLVED}
            if kept["baseline_model_uri"] and not Path(kept["baseline_model_uri"]).is_dir():
                continue  # what it was blessed against is gone (its run removed): an older blessed model, if any
            return kept
        return {
            "baseline_model_uri": model.uri,
            "baseline_module_digest": blessing.record.get("model_module_digest"),
            "no_baseline_reason": None,
        }
    # Worded to stay true where it is kept: when this very model is blessed and trained again (`--no-cache`),
    # it keeps these parameters (above), and "no earlier run blessed a model" would then be false.
    reason = f"no earlier run of {identity['name']!r} blessed a model"
    if others:
        reason += f" of {described(identity)}"
    reason += " other than this one"
    if others:
        reason += f" ({passed_over(identity, others)})"
    return {"baseline_model_uri": None, "baseline_module_digest": None, "no_baseline_reason": reason}


def described(identity: dict[str, Any]) -> str:
    """`dataset 'csv', label 'grade'`: what of `identity` is set, beside the pipeline's name."""
    return ", ".join(f"{key} {value!r}" for key, value in identity.items() if key != "name" and value)


def passed_over(identity: dict[str, Any], others: list[dict[str, Any]]) -> str:
    """`3 blessed model(s) of label 'grade' passed over`: the blessed models whose identity (`others`) is not
    `identity`, by what sets them apart (another label, task, dataset or data file)."""
    apart = Counter(_apart(identity, other) for other in others).most_common()
    if len(apart) == 1:
        return f"{len(others)} blessed model(s) of {apart[0][0]} passed over"
    return f"{len(others)} blessed model(s) passed over: {'; '.join(f'{n} of {what}' for what, n in apart)}"


def _apart(identity: dict[str, Any], other: dict[str, Any]) -> str:
    """`label 'grade'`, `problem_type not set`: what of `other` differs from `identity`."""
    keys = [key for key in dict.fromkeys([*identity, *other]) if other.get(key) != identity.get(key)]
    said = [f"{key} {other[key]!r}" if other.get(key) is not None else f"{key} not set" for key in keys]
    return ", ".join(said) or "another config"


def blessed_model(run: Run) -> tuple[Execution, ArtifactRef, ModelBlessing] | None:
    """The finished execution of `run` that blessed one model, that model's ref and the blessing."""
    for execution in run.executions.values():
        blessings = execution.outputs_of_type(ModelBlessing)
        models = [ref for ref in execution.inputs.values() if ref.type == Model.type_name]
        if not execution.finished or len(blessings) != 1 or len(models) != 1:
            continue
        if (blessings[0].path / "BLESSED").exists() and Path(models[0].uri).is_dir():
            return execution, models[0], blessings[0]
    return None
