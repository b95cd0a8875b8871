"""The config's `kubeflow` section, read once at the entry point and passed down as the config model's object.

`kflow run` ignores the section; `kflow compile` and `kflow submit` read it with
`load_compile_config`, which validates it against `schemas/config.schema.json`
(with defaults) and names the offending field on error, like the rest of the config.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.config import (
    ConfigError,
    PipelineConfig,
    SplitDefault,
    as_data,
    config_schema,
    read_config_file,
    typed,
    validate_config,
)
from kflow.pipeline.dsl.config_model import KubeflowSection, Resources
from kflow.pipeline.dsl.config_model.base import ImageReference
from kflow.pipeline.dsl.config_validation import DefaultFillingValidator, describe_error

# What a task that only launches a cluster job and waits for it needs (it copies the artifacts to and from the volume).
LAUNCHER_RESOURCES = Resources(cpu="100m", memory="256Mi", memory_limit="1Gi")


IMAGE_REQUIRED = (
    "kubeflow.image: is required to compile: the image every task and training replica runs, pushed where the "
    "cluster pulls from (e.g. registry.example.com/kflow:0.1.0, built with deploy/Dockerfile); or pass --image"
)


class KubeflowSettings(KubeflowSection):
    """The `kubeflow` section as the compiler takes it: the config model's own object (its resources, cluster and
    defaults declared there once), the image optional until a compile checks it, and the MLflow settings a compile
    adds from the config's `tracking.mlflow` (with the pipeline's name and config: the evaluate tasks log there)."""

    image: ImageReference | None = None  # required to compile: there is no image a cluster could pull
    mlflow: dict[str, Any] | None = None

    def resources_for(self, component_id: str) -> Resources:
        return self.resources.get(component_id, Resources())


def load_compile_config(
    path: str | Path,
    overrides: list[str] = (),
    image: str | None = None,
    *,
    require_image: bool = True,
    split_default: SplitDefault | None = None,
) -> tuple[PipelineConfig, KubeflowSettings]:
    """Reads a config for compilation: the pipeline config and its validated `kubeflow` section. `require_image=False`
    leaves a missing image to the caller, to say with the config's other problems (IMAGE_REQUIRED); `split_default`:
    read_config_file's."""
    source = str(path)
    raw = read_config_file(path, overrides, split_default)
    section = raw.pop("kubeflow", None)
    if image is not None:
        section = {**(section or {}), "image": image}
    config = validate_config(raw, source)
    try:
        settings = kubeflow_settings(section or {}, source)
    except ConfigError as error:  # an --image is named as the user gave it
        named = [
            line.replace("kubeflow.image:", "--image:", 1) if image is not None else line for line in error.problems
        ]
        raise ConfigError(named, source) from None
    if not settings.image and require_image:
        raise ConfigError([IMAGE_REQUIRED], source)
    if config.tracking.mlflow is not None:  # as JSON: the evaluate tasks read it from their command line
        tracking = as_data(config.tracking)["mlflow"]
        settings = settings.model_copy(
            update={"mlflow": {**tracking, "pipeline": config.name, "config": config.to_dict()}}
        )
    return config, settings


def kubeflow_settings(section: Any, source: str | None = None) -> KubeflowSettings:
    """Validates the `kubeflow` section against its part of the config schema, filling defaults."""
    instance = copy.deepcopy(section)
    validator = DefaultFillingValidator(config_schema()["properties"]["kubeflow"])
    problems = sorted({line for error in validator.iter_errors(instance) for line in describe_error(error, "kubeflow")})
    if problems:
        raise ConfigError(problems, source)
    return typed(KubeflowSettings, instance, source, where="kubeflow")
