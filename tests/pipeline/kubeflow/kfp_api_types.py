"""Checks a request body for the KFP v2beta1 API with KFP's own generated models (`kfp_server_api`), as the
stand-in API server's acceptance test: what the models would not keep of a body is not part of the API.

Reading the body into the model class named by the API (`V2beta1RecurringRun`, `V2beta1Run`) and writing it back
loses every field the API does not know and fails on a value outside an enum (a `mode` of `ON`); on top of the
types, the rules the KFP API server applies to a recurring run before it stores one (backend/src/apiserver:
a display name, one of a pipeline spec or a pipeline version, one trigger, a cron of six fields or a descriptor,
a max concurrency from 1 to 10) and that run-time parameters are inputs of the pipeline.
"""

from __future__ import annotations

from typing import Any

from tests.pipeline.kubeflow.api_models import _differences


def type_problems(body: Any, model: str) -> list[str]:
    """What `model` (a kfp_server_api class name) would not keep of `body`: one line per path."""
    import kfp_server_api

    client = kfp_server_api.ApiClient()
    try:
        kept = client.sanitize_for_serialization(client._ApiClient__deserialize(body, model))
    except (ValueError, TypeError) as error:  # an enum's value the API does not list, a wrong type
        return [f"{model}: {error}"]
    return [f"{model}{line}" for line in _differences(body, kept, "")] + _enum_problems(body, model, model)


def _enum_problems(body: Any, model: str, path: str) -> list[str]:
    """Values outside an enum's allowable values: the generated client passes an enum's value through unread."""
    import kfp_server_api

    kind = getattr(kfp_server_api, model, None)
    if kind is None or not isinstance(body, dict):
        return []
    problems = []
    for name, type_name in kind.openapi_types.items():
        value, field_kind = body.get(name), getattr(kfp_server_api, type_name, None)
        if value is None or field_kind is None:
            continue
        allowed = getattr(field_kind, "allowable_values", None)
        if allowed is not None and value not in allowed:
            problems.append(f"{path}/{name}: {value!r} is not one of {', '.join(allowed)}")
        elif allowed is None:
            problems += _enum_problems(value, type_name, f"{path}/{name}")
    return problems


def recurring_run_problems(body: Any, experiments: dict[str, Any]) -> list[str]:
    """Why the KFP API server would refuse `body` as a new recurring run ([] when it accepts it)."""
    if not isinstance(body, dict):
        return ["the body is not a RecurringRun object"]
    problems = type_problems(body, "V2beta1RecurringRun")
    if not body.get("display_name"):
        problems.append("display_name: required")
    if bool(body.get("pipeline_spec")) == bool(body.get("pipeline_version_reference")):
        problems.append("one of pipeline_spec and pipeline_version_reference is required")
    trigger = body.get("trigger") or {}
    if len([kind for kind in ("cron_schedule", "periodic_schedule") if trigger.get(kind)]) != 1:
        problems.append("trigger: one of cron_schedule and periodic_schedule is required")
    cron = (trigger.get("cron_schedule") or {}).get("cron")
    if cron is not None and not (cron.startswith("@") or len(cron.split()) == 6):
        problems.append(f"trigger.cron_schedule.cron: {cron!r} has not 6 fields (seconds first)")
    concurrency = body.get("max_concurrency")
    if concurrency is not None and not 1 <= int(concurrency) <= 10:
        problems.append(f"max_concurrency: {concurrency} is not from 1 to 10")
    if body.get("experiment_id") not in experiments:
        problems.append(f"experiment_id: no experiment {body.get('experiment_id')!r}")
    return problems + _parameter_problems(body)


def _parameter_problems(body: dict[str, Any]) -> list[str]:
    """Run-time parameters the pipeline spec has no input for."""
    spec = (body.get("pipeline_spec") or {}).get("pipeline_spec") or body.get("pipeline_spec") or {}
    inputs = ((spec.get("root") or {}).get("inputDefinitions") or {}).get("parameters") or {}
    given = ((body.get("runtime_config") or {}).get("parameters")) or {}
    return [f"runtime_config.parameters.{name}: not an input of the pipeline" for name in given if name not in inputs]
