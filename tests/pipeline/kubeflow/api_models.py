"""Checks a rendered manifest with the API's own Python models: what they would not keep of it is wrong.

Models are generated from each API's OpenAPI spec: Kubeflow Trainer v2's (`kubeflow-trainer-api` 2.3.0,
pydantic), the Training Operator v1's (`kubeflow-training` 1.9.0) and Kubernetes' own (`kubernetes`).
Reading a manifest into them and writing it back loses every field the API does not know (a misspelled
`restartPolcy`) and fails on a wrong type or a missing required field (a container without a name); so a
manifest that comes back unchanged is one the API's types accept, field for field.
"""

from __future__ import annotations

from typing import Any

TRAINER_MODELS = {
    "TrainJob": "TrainerV1alpha1TrainJob",
    "TrainingRuntime": "TrainerV1alpha1TrainingRuntime",
    "ClusterTrainingRuntime": "TrainerV1alpha1ClusterTrainingRuntime",
}
OPERATOR_MODELS = {"TFJob": "KubeflowOrgV1TFJob", "JAXJob": "KubeflowOrgV1JAXJob"}
KUBERNETES_MODELS = {
    "NetworkPolicy": "V1NetworkPolicy",
    "ServiceAccount": "V1ServiceAccount",
    "Role": "V1Role",
    "RoleBinding": "V1RoleBinding",
    "PersistentVolumeClaim": "V1PersistentVolumeClaim",
}


def model_differences(manifest: dict[str, Any]) -> list[str]:
    """What the API's models would not keep of `manifest`: one line per path ([] when none)."""
    kind = manifest["kind"]
    if kind in TRAINER_MODELS:
        import kubeflow_trainer_api.models as models

        kept = getattr(models, TRAINER_MODELS[kind]).from_dict(manifest).to_dict()
    elif kind in OPERATOR_MODELS:
        from kubeflow.training.api_client import ApiClient

        client = ApiClient()
        kept = client.sanitize_for_serialization(client._ApiClient__deserialize(manifest, OPERATOR_MODELS[kind]))
    else:
        from kubernetes.client import ApiClient

        client = ApiClient()
        kept = client.sanitize_for_serialization(client._ApiClient__deserialize(manifest, KUBERNETES_MODELS[kind]))
    return _differences(manifest, kept, "")


def _differences(given: Any, kept: Any, path: str) -> list[str]:
    if isinstance(given, dict) and isinstance(kept, dict):
        found = [f"{path}/{key}: not a field of the API" for key in given if key not in kept]
        nested = [_differences(given[key], kept[key], f"{path}/{key}") for key in given if key in kept]
        return found + [line for lines in nested for line in lines]
    if isinstance(given, list) and isinstance(kept, list) and len(given) == len(kept):
        nested = [_differences(a, b, f"{path}[{index}]") for index, (a, b) in enumerate(zip(given, kept, strict=True))]
        return [line for lines in nested for line in lines]
    # Kubernetes quantities are int-or-string: a GPU limit of 1 comes back as "1" (or 1.0 from pydantic's models).
    return [] if str(given) == str(kept) or _same_number(given, kept) else [f"{path}: {given!r} read as {kept!r}"]


def _same_number(given: Any, kept: Any) -> bool:
    try:
        return float(given) == float(kept)
    except (TypeError, ValueError):
        return False
