"""Checks a manifest against a CustomResourceDefinition's structural schema, as the API server would.

The Kubeflow Trainer v2.3.0 CRDs are in ../shared/k8s/trainer-v2.3.0/ (copied unchanged from the
kubeflow/trainer repository). The API server checks a custom resource against the CRD's
`openAPIV3Schema`: types (with `x-kubernetes-int-or-string`), required fields, enums, bounds, patterns,
and (with strict field validation, as `kubectl apply` asks for) unknown fields, except under
`x-kubernetes-preserve-unknown-fields`. Those are checked here. The CEL rules
(`x-kubernetes-validations`) are not evaluated, except the two on a TrainJob's name, which are
spelled out below; `expression_rules` lists the rest for whoever wants to read them.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO

CRDS = REPO.parent / "shared" / "k8s" / "trainer-v2.3.0"
FILES = {
    "TrainJob": "trainer.kubeflow.org_trainjobs.yaml",
    "TrainingRuntime": "trainer.kubeflow.org_trainingruntimes.yaml",
    "ClusterTrainingRuntime": "trainer.kubeflow.org_clustertrainingruntimes.yaml",
}
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


@cache
def crd_schema(kind: str) -> dict[str, Any]:
    path = CRDS / FILES[kind]
    if not path.is_file():
        pytest.skip(f"the Trainer v2.3.0 CRDs are not at {CRDS} (see ../shared/k8s/README.md)")
    crd = yaml.safe_load(Path(path).read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    return version["schema"]["openAPIV3Schema"]


def schema_problems(manifest: dict[str, Any]) -> list[str]:
    """Every way `manifest` breaks its CRD's structural schema, one line each ([] when none)."""
    kind = manifest.get("kind")
    if kind not in FILES:
        raise ValueError(f"no Trainer v2 CRD for kind {kind!r}")
    if manifest.get("apiVersion") != "trainer.kubeflow.org/v1alpha1":
        return [f"/apiVersion: {manifest.get('apiVersion')!r} is not trainer.kubeflow.org/v1alpha1"]
    problems = _check(manifest, crd_schema(kind), "")
    name = manifest.get("metadata", {}).get("name", "")
    if kind == "TrainJob" and not re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name):
        problems.append("/metadata/name: metadata.name must match RFC 1035 DNS label format")
    if len(name) > 63:
        problems.append("/metadata/name: metadata.name must be no more than 63 characters")
    return problems


def _check(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    if value is None and schema.get("nullable"):
        return []
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            return [f"{path or '/'}: {value!r} is neither an integer nor a string"]
        return []
    kind = schema.get("type")
    if kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            return [f"{path}: {value!r} is not an integer"]
        bits = {"int32": 31, "int64": 63}.get(schema.get("format", ""), 63)
        if not -(2**bits) <= value < 2**bits:
            return [f"{path}: {value} is out of {schema['format']} range"]
    elif kind == "number":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return [f"{path}: {value!r} is not a number"]
    elif kind in TYPES and not isinstance(value, TYPES[kind]):
        return [f"{path or '/'}: {type(value).__name__} where the schema wants {kind}"]
    problems = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{path}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{path}: {value} > maximum {schema['maximum']}")
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{path}: longer than {schema['maxLength']}")
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(f"{path}: shorter than {schema['minLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            problems.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{path}: more than {schema['maxItems']} items")
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{path}: fewer than {schema['minItems']} items")
        items = schema.get("items", {})
        for index, item in enumerate(value):
            problems += _check(item, items, f"{path}[{index}]")
        keys = schema.get("x-kubernetes-list-map-keys")
        if keys:
            seen = [tuple(item.get(key) for key in keys) for item in value if isinstance(item, dict)]
            if len(seen) != len(set(seen)):
                problems.append(f"{path}: duplicate items by {keys}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for required in schema.get("required", []):
            if required not in value:
                problems.append(f"{path}/{required}: required")
        extra = schema.get("additionalProperties")
        if not properties and extra is None:
            return problems  # A bare `type: object` (the root's ObjectMeta): the API server checks it elsewhere.
        for key, item in value.items():
            if key in properties:
                problems += _check(item, properties[key], f"{path}/{key}")
            elif isinstance(extra, dict):
                problems += _check(item, extra, f"{path}/{key}")
            elif not schema.get("x-kubernetes-preserve-unknown-fields") and extra is not True:
                problems.append(f"{path}/{key}: unknown field")
    return problems


def expression_rules(kind: str) -> int:
    """How many CEL rules the CRD has (not evaluated here, but for the name's)."""

    def count(schema: Any) -> int:
        if isinstance(schema, dict):
            return len(schema.get("x-kubernetes-validations", [])) + sum(count(v) for v in schema.values())
        if isinstance(schema, list):
            return sum(count(v) for v in schema)
        return 0

    return count(crd_schema(kind))
