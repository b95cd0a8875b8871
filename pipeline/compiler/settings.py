"""The config's `kubeflow` section, read once at the entry point and passed down as a small dataclass.

`kflow run` ignores the section; `kflow compile` and `kflow submit` read it with
`load_compile_config`, which validates it against `schemas/config.schema.json`
(with defaults) and names the offending field on error, like the rest of the config.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.config import (
    ConfigError,
    DefaultFillingValidator,
    PipelineConfig,
    config_schema,
    read_config_file,
    validate_config,
)


@dataclass(frozen=True)
class Resources:
    """Kubernetes resource requests and limits of one task, as Kubernetes quantities."""

    cpu: str | None = None
    cpu_limit: str | None = None
    memory: str | None = None
    memory_limit: str | None = None
    gpu: int = 0
    gpu_type: str = "nvidia.com/gpu"


@dataclass(frozen=True)
class TFJobSettings:
    shared_volume_claim: str = "kflow-shared"
    shared_mount_path: str = "/mnt/kflow-shared"
    timeout_seconds: int = 86400
    service_account: str = "pipeline-runner"


@dataclass(frozen=True)
class KubeflowSettings:
    image: str = "kflow:0.1.0"
    caching: bool = True
    namespace: str = "kubeflow"
    resources: dict[str, Resources] = field(default_factory=dict)
    tfjob: TFJobSettings = field(default_factory=TFJobSettings)

    @classmethod
    def from_dict(cls, section: dict[str, Any]) -> KubeflowSettings:
        section = dict(section)
        resources = {name: Resources(**value) for name, value in section.pop("resources", {}).items()}
        tfjob = TFJobSettings(**section.pop("tfjob", {}))
        return cls(resources=resources, tfjob=tfjob, **section)

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
    return validate_config(raw, source), kubeflow_settings(section or {}, source)


def kubeflow_settings(section: Any, source: str | None = None) -> KubeflowSettings:
    """Validates the `kubeflow` section against its part of the config schema, filling defaults."""
    instance = copy.deepcopy(section)
    validator = DefaultFillingValidator(config_schema()["properties"]["kubeflow"])
    problems = sorted(
        f"{'.'.join(['kubeflow', *map(str, error.absolute_path)])}: {error.message}"
        for error in validator.iter_errors(instance)
    )
    if problems:
        raise ConfigError(problems, source)
    return KubeflowSettings.from_dict(instance)
