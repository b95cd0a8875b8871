"""The config's `kubeflow` section, read once at the entry point and passed down as a small dataclass.

`kflow run` ignores the section; `kflow compile` and `kflow submit` read it with
`load_compile_config`, which validates it against `schemas/config.schema.json`
(with defaults) and names the offending field on error, like the rest of the config.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.config import (
    ConfigError,
    DefaultFillingValidator,
    PipelineConfig,
    as_data,
    config_schema,
    describe_error,
    read_config_file,
    validate_config,
)
from kflow.pipeline.dsl.config_model import ClusterSection, KubeflowSection, default_of


@dataclass(frozen=True)
class Resources:
    """Kubernetes resource requests and limits of one task or training replica, as Kubernetes quantities,
    and where its pods may run. `roles` overrides them per replica role (chief, worker, ps, evaluator)
    of a node that runs a cluster job."""

    cpu: str | None = None
    cpu_limit: str | None = None
    memory: str | None = None
    memory_limit: str | None = None
    gpu: int | None = None
    gpu_type: str | None = None  # the extended resource name; nvidia.com/gpu when unset
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    roles: dict[str, Resources] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Resources:
        values = dict(values)
        roles = {role: cls.from_dict(role_values) for role, role_values in values.pop("roles", {}).items()}
        return cls(roles=roles, **values)

    def for_role(self, role: str) -> Resources:
        """These resources with the role's overrides (a role's node selector and tolerations add to the node's)."""
        override = self.roles.get(role)
        if override is None:
            return self
        quantities = ("cpu", "cpu_limit", "memory", "memory_limit", "gpu", "gpu_type")
        merged = {
            name: getattr(self, name) if getattr(override, name) is None else getattr(override, name)
            for name in quantities
        }
        return Resources(
            **merged,
            node_selector={**self.node_selector, **override.node_selector},
            tolerations=[*self.tolerations, *override.tolerations],
        )

    @property
    def gpu_resource(self) -> str:
        return self.gpu_type or "nvidia.com/gpu"

    def kubernetes(self) -> dict[str, Any]:
        """The container's `resources` (requests and limits; a GPU as a limit, as Kubernetes wants it)."""
        requests = {key: value for key, value in (("cpu", self.cpu), ("memory", self.memory)) if value}
        limits = {key: value for key, value in (("cpu", self.cpu_limit), ("memory", self.memory_limit)) if value}
        if self.gpu:
            limits[self.gpu_resource] = self.gpu
        return {key: value for key, value in (("requests", requests), ("limits", limits)) if value}


# What a task that only launches a cluster job and waits for it needs (it copies the artifacts to and from the volume).
LAUNCHER_RESOURCES = Resources(cpu="100m", memory="256Mi", memory_limit="1Gi")


@dataclass(frozen=True)
class ClusterSettings:
    """How a multi-process Trainer runs as a cluster job (`kubeflow.cluster`)."""

    shared_volume_claim: str = default_of(ClusterSection, "shared_volume_claim")
    shared_mount_path: str = default_of(ClusterSection, "shared_mount_path")
    timeout_seconds: int = default_of(ClusterSection, "timeout_seconds")
    service_account: str = default_of(ClusterSection, "service_account")
    launcher_service_account: str = default_of(ClusterSection, "launcher_service_account")


IMAGE_REQUIRED = (
    "kubeflow.image: is required to compile: the image every task and training replica runs, pushed where the "
    "cluster pulls from (e.g. registry.example.com/kflow:0.1.0, built with deploy/Dockerfile); or pass --image"
)


@dataclass(frozen=True)
class KubeflowSettings:
    image: str | None = None  # required to compile: there is no image a cluster could pull by default
    caching: bool = default_of(KubeflowSection, "caching")
    retries: int = default_of(KubeflowSection, "retries")
    namespace: str = default_of(KubeflowSection, "namespace")
    training: str = default_of(KubeflowSection, "training")
    resources: dict[str, Resources] = field(default_factory=dict)
    cluster: ClusterSettings = field(default_factory=ClusterSettings)
    parameters: list[str] = field(default_factory=list)  # config fields that are run-time pipeline inputs
    # The config's tracking.mlflow (with the pipeline's name and config): the evaluate tasks log to that server.
    mlflow: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, section: dict[str, Any]) -> KubeflowSettings:
        section = dict(section)
        resources = {name: Resources.from_dict(value) for name, value in section.pop("resources", {}).items()}
        cluster = ClusterSettings(**section.pop("cluster", {}))
        return cls(resources=resources, cluster=cluster, **section)

    def resources_for(self, component_id: str) -> Resources:
        return self.resources.get(component_id, Resources())


def load_compile_config(
    path: str | Path, overrides: list[str] = (), image: str | None = None
) -> tuple[PipelineConfig, KubeflowSettings]:
    """Reads a config for compilation: the pipeline config and its validated `kubeflow` section."""
    source = str(path)
    raw = read_config_file(path, overrides)
    section = raw.pop("kubeflow", None)
    if image is not None:
        section = {**(section or {}), "image": image}
    config, settings = validate_config(raw, source), kubeflow_settings(section or {}, source)
    if not settings.image:
        raise ConfigError([IMAGE_REQUIRED], source)
    if config.tracking.mlflow is not None:  # as JSON: the evaluate tasks read it from their command line
        tracking = as_data(config.tracking)["mlflow"]
        settings = replace(settings, mlflow={**tracking, "pipeline": config.name, "config": config.to_dict()})
    return config, settings


def kubeflow_settings(section: Any, source: str | None = None) -> KubeflowSettings:
    """Validates the `kubeflow` section against its part of the config schema, filling defaults."""
    instance = copy.deepcopy(section)
    validator = DefaultFillingValidator(config_schema()["properties"]["kubeflow"])
    problems = sorted({line for error in validator.iter_errors(instance) for line in describe_error(error, "kubeflow")})
    if problems:
        raise ConfigError(problems, source)
    return KubeflowSettings.from_dict(instance)
