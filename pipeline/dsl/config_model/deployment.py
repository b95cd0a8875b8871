"""Where a pipeline runs: the Beam runners (`beam`, `orchestration`), Kubeflow (`kubeflow`), tracking (`tracking`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import MISSING, ConfigDict, Field
from typing_extensions import TypedDict

from kflow.pipeline.dsl.config_model.base import (
    CPU,
    MEMORY,
    BeamOption,
    BeamRunner,
    Identifier,
    ImageReference,
    KubernetesName,
    LabelKey,
    LabelValue,
    ResourceName,
    Scalar,
    Section,
    empty,
    section,
)


class BeamSection(Section):
    """The Beam runner and options of the data components' pipelines (ingest, statistics): DirectRunner here, or
    PortableRunner, DataflowRunner, FlinkRunner, SparkRunner for data that outgrows one machine. Training never runs
    on it."""

    runner: BeamRunner = "DirectRunner"
    options: dict[BeamOption, Scalar] = empty(dict)
    """Beam pipeline options, e.g. {direct_num_workers: 2, direct_running_mode: multi_processing} or {project: p,
    region: r, temp_location: gs://b/tmp}."""


class OrchestrationSection(Section):
    """The Beam runner and options of `kflow run`'s own DAG runner, which runs the components' executors in this
    machine's processes; apart from `beam` so that a distributed data runner never ships training to it."""

    runner: BeamRunner = "DirectRunner"
    options: dict[BeamOption, Scalar] = empty(dict)
    """Beam pipeline options of the DAG runner; by default the nodes of a wave run in parallel threads."""


class Toleration(TypedDict, total=False):
    """A pod's toleration, in Kubernetes' own fields (kept a mapping: the compiler passes it on as it is)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    key: LabelKey | Literal[""]
    operator: Literal["Exists", "Equal"]
    value: LabelValue
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    tolerationSeconds: int  # noqa: N815 (Kubernetes' name)


class RoleResources(Section):
    cpu: CPU | None = None
    cpu_limit: CPU | None = None
    memory: MEMORY | None = None
    memory_limit: MEMORY | None = None
    gpu: int | None = Field(None, ge=0, le=16)
    gpu_type: ResourceName | None = None
    """the GPU's extended resource name; null: nvidia.com/gpu"""
    node_selector: dict[LabelKey, LabelValue] | None = None
    tolerations: list[Toleration] | None = None


QUANTITIES = ("cpu", "cpu_limit", "memory", "memory_limit", "gpu", "gpu_type")


class Resources(RoleResources):
    """A task's Kubernetes requests and limits and where its pods may run; a node that runs a cluster job gives
    them to each training replica, `roles` overriding them per role."""

    roles: dict[Literal["chief", "worker", "ps", "evaluator"], RoleResources] | None = None

    def for_role(self, role: str) -> Resources:
        """These resources with the role's overrides (a role's node selector and tolerations add to the node's)."""
        override = (self.roles or {}).get(role)
        if override is None:
            return self
        merged = {name: getattr(self, name) if getattr(override, name) is None else getattr(override, name)
                  for name in QUANTITIES}  # fmt: skip
        return Resources(
            **merged,
            node_selector={**(self.node_selector or {}), **(override.node_selector or {})},
            tolerations=[*(self.tolerations or []), *(override.tolerations or [])],
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


class ClusterSection(Section):
    """How the train task runs a multi-process Trainer as a cluster job (kubeflow.training)."""

    shared_volume_claim: KubernetesName = "kflow-shared"
    """A ReadWriteMany PVC mounted by the launcher task and every replica (inputs, outputs, checkpoints), and the
    store of blessed models."""
    shared_mount_path: str = Field("/mnt/kflow-shared", pattern="^/")
    timeout_seconds: int = Field(86400, ge=60)
    """The job's active deadline: past it the cluster stops the job and the task fails."""
    service_account: KubernetesName = "kflow-training"
    """The training replicas' service account, with no RBAC (kflow manifests writes it); its token is not mounted."""
    launcher_service_account: KubernetesName = "pipeline-runner"
    """The service account KFP runs the tasks as (pipeline-runner in standalone KFP, default-editor in a Kubeflow
    profile namespace): kflow manifests grants it what the launcher calls."""


class KubeflowSection(Section):
    """Settings for `kflow compile` / `kflow submit` (Kubeflow Pipelines); ignored by `kflow run`."""

    image: ImageReference | MISSING = MISSING
    """The container image every task and training replica runs (built from deploy/Dockerfile and pushed to a
    registry the cluster pulls from); required to compile, or pass --image."""
    caching: bool = True
    """KFP execution caching for every task."""
    retries: int = Field(0, ge=0, le=10)
    """KFP retries of every task that does not launch a cluster job, with exponential backoff (30 s, doubling, at
    most 10 min); a training cluster restarts under trainer.max_restarts instead."""
    parameters: list[Annotated[str, Field(min_length=1)]] = empty(list)
    """Config fields that become run-time inputs of the compiled pipeline, with the config's values as defaults
    (trainer.epochs, data.source.path, or components.<id>.parameters.<name>); the input is the field with _ for dots
    (trainer_epochs)."""
    namespace: str = Field("kubeflow", pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    """Kubernetes namespace of the run (kflow submit) and of what kflow manifests writes; a cluster job goes in its
    launcher task's own namespace."""
    training: Literal["trainjob", "tfjob"] = "trainjob"
    """What runs a multi-process Trainer (trainer.workers > 1, or parameter_server): trainjob, a Kubeflow Trainer v2
    TrainJob (trainer.kubeflow.org/v1alpha1, Trainer >= 2.3), or tfjob, a Training Operator v1 TFJob/JAXJob
    (kubeflow.org/v1) for clusters that still run it."""
    resources: dict[Identifier, Resources] = empty(dict)
    """Per component id: {cpu: '2', memory: 4Gi, cpu_limit, memory_limit, gpu: 1, gpu_type, node_selector: {...},
    tolerations: [...], roles: {worker: {...}, ps: {...}}}. A node that runs a cluster job (a multi-process Trainer)
    gives them to every training replica, `roles` overriding them per replica role (chief, worker, ps, evaluator); its
    launcher task gets small fixed requests."""
    cluster: ClusterSection = section(ClusterSection)


class MlflowSection(Section):
    """Log each kflow run as an MLflow run (params, per-epoch and evaluation metrics, tags, report and plots) and
    register a blessed model; needs pip install 'kflow[mlflow]'."""

    uri: str = Field(min_length=1)
    """The tracking URI: http://host:5000 (an mlflow server), sqlite:///mlflow.db or a folder."""
    experiment: str | None = Field(None, min_length=1)
    """The MLflow experiment; null: the pipeline's name."""
    register_: bool = Field(True, alias="register")
    """Register a blessed model in the MLflow Model Registry under the pipeline's name."""
    timeout: float = Field(30, ge=1)
    """Seconds to wait for the tracking server per request (2 retries)."""


class TrackingSection(Section):
    """Experiment tracking of `kflow run` (off unless set)."""

    mlflow: MlflowSection | None = None
