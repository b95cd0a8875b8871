"""Checks a rendered TFJob/JAXJob with the Training Operator's own Python SDK models (`kubeflow-training`).

The SDK's models are generated from the operator's OpenAPI spec (with Kubernetes' own `V1PodTemplateSpec`
models inside). Reading a manifest into them and writing it back loses every field the API does not know
(a misspelled `restartPolcy`), and fails on a wrong type or a missing required field (a container without
a name); so a manifest that comes back unchanged is one the operator's types accept, field for field.
"""

from __future__ import annotations

from typing import Any

from kubeflow.training.api_client import ApiClient

MODELS = {"TFJob": "KubeflowOrgV1TFJob", "JAXJob": "KubeflowOrgV1JAXJob"}


def operator_model_differences(manifest: dict[str, Any]) -> list[str]:
    """What the operator's models would not keep of `manifest`: one line per path ([] when none)."""
    client = ApiClient()
    model = client._ApiClient__deserialize(manifest, MODELS[manifest["kind"]])  # The SDK's own reader.
    return _differences(manifest, client.sanitize_for_serialization(model), "")


def _differences(given: Any, kept: Any, path: str) -> list[str]:
    if isinstance(given, dict) and isinstance(kept, dict):
        found = [f"{path}/{key}: not a field of the operator's API" for key in given if key not in kept]
        nested = [_differences(given[key], kept[key], f"{path}/{key}") for key in given if key in kept]
        return found + [line for lines in nested for line in lines]
    if isinstance(given, list) and isinstance(kept, list) and len(given) == len(kept):
        nested = [_differences(a, b, f"{path}[{index}]") for index, (a, b) in enumerate(zip(given, kept, strict=True))]
        return [line for lines in nested for line in lines]
    # Kubernetes quantities are int-or-string (a GPU limit of 1 comes back as "1").
    return [] if str(given) == str(kept) else [f"{path}: {given!r} read as {kept!r}"]
