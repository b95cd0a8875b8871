"""`kflow manifests`: what a Kubernetes cluster needs for a config's compiled pipeline, as files to review and apply.

    kflow manifests CONFIG -o DIR [--image IMAGE] [--set FIELD=VALUE ...]
    kubectl apply -f DIR

writes, for the namespace `kubeflow.namespace`:

- `service-account.yaml`: `kflow-training` (`kubeflow.cluster.service_account`), the training
  replicas' identity: no RBAC binds it and its token is not mounted;
- `launcher-rbac.yaml`: a Role with exactly the calls the job launcher makes (`job_launcher.launcher_rules`),
  bound to the service account KFP runs tasks as (`kubeflow.cluster.launcher_service_account`);
- `shared-volume.yaml`: the ReadWriteMany claim the launcher and the replicas share;
- `training-runtimes.yaml` (Trainer v2): the TrainingRuntime of each node that runs as a cluster, exactly
  as the launcher renders it (the launcher also creates it when it is missing, by the same name);
- `per-run/`: what the launcher creates on each run, for review only (`kubectl apply -f DIR` does not
  descend into it): the TrainJob (or TFJob) and its NetworkPolicy, with example paths.

Beside them, `.kflow-manifests` lists the files written (kubectl skips it: not .yaml nor .json). Writing into a
folder used before removes the files that listing names first, and only those, so an earlier config's runtime or
`per-run/` is not left for `kubectl apply -f DIR` to apply; a non-empty folder without the listing (not written by
kflow) is refused in one line, untouched.

The objects are rendered by the code the launcher runs (the same `ClusterJob` from the same arguments), so
what is reviewed is what runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from kflow.pipeline.compiler.container_args import ENTRYPOINT, job_launcher_args
from kflow.pipeline.compiler.settings import KubeflowSettings
from kflow.pipeline.dsl.component import Component
from kflow.pipeline.dsl.config import ConfigError
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.kubeflow.cluster_job import PART_OF, job_name
from kflow.pipeline.kubeflow.job_launcher import (
    BACKENDS,
    launcher_rules,
    parse_arguments,
    requested_job,
    shared_command,
)

PER_RUN = "per-run"
LAUNCHER_ROLE = "kflow-launcher"


def _metadata(name: str, namespace: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(PART_OF)}


def example_entrypoint(node: Component) -> list[str]:
    """The entrypoint the node's task would run, its parameters as KFP gives them and example artifact paths."""
    args = ["--component", f"{type(node).__module__}:{type(node).__qualname__}"]
    for name in node.inputs:
        args += ["--input", f"{name}=/gcs/kflow/{node.id}/inputs/{name}"]
    for name in node.spec.outputs:
        args += ["--output", f"{name}=/gcs/kflow/{node.id}/outputs/{name}"]
    for name, value in node.parameters.items():
        if value is not None:
            args += ["--parameter", f"{name}={value if isinstance(value, str) else json.dumps(value)}"]
    return [*ENTRYPOINT, *args, "--code-version", type(node).code_version()]


def render_manifests(pipeline: Pipeline, settings: KubeflowSettings) -> dict[str, list[dict[str, Any]]]:
    """{file name: its objects} of what the cluster needs for `pipeline` under `settings`."""
    namespace, cluster = settings.namespace, settings.cluster
    files: dict[str, list[dict[str, Any]]] = {
        "service-account.yaml": [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": _metadata(cluster.service_account, namespace),
                "automountServiceAccountToken": False,
            }
        ],
        "launcher-rbac.yaml": [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": _metadata(LAUNCHER_ROLE, namespace),
                "rules": launcher_rules(settings.training),
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": _metadata(LAUNCHER_ROLE, namespace),
                "subjects": [
                    {"kind": "ServiceAccount", "name": cluster.launcher_service_account, "namespace": namespace}
                ],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": LAUNCHER_ROLE},
            },
        ],
        "shared-volume.yaml": [
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": _metadata(cluster.shared_volume_claim, namespace),
                # ReadWriteMany (NFS, CephFS, Filestore, EFS, ...): the launcher and every replica mount it at once,
                # on several nodes. Set spec.storageClassName to such a class of your cluster.
                "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "20Gi"}}},
            }
        ],
    }
    backend = BACKENDS[settings.training]
    for node in pipeline.topological_order():
        if not node.cluster_replicas():
            continue
        options, entrypoint = parse_arguments(job_launcher_args(node, settings, example_entrypoint(node)))
        name = job_name(node.id, "example")
        command, _, _ = shared_command(entrypoint, Path(cluster.shared_mount_path) / name)
        job = requested_job(options, name, namespace, command)
        for _, _, _, manifest in backend.prerequisites(job):
            files.setdefault("training-runtimes.yaml", []).append(manifest)
        files[f"{PER_RUN}/{node.id}-{backend.name}.yaml"] = [
            backend.render(job, None),
            backend.network_policy(job, None),
        ]
    return files


class _PlainDumper(yaml.SafeDumper):
    """Writes a structure met twice twice, instead of as a YAML anchor and alias."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


LISTING = ".kflow-manifests"  # what kflow wrote in the folder; kubectl apply -f skips it (neither YAML nor JSON)


def write_manifests(files: dict[str, list[dict[str, Any]]], folder: str | Path) -> list[Path]:
    """Writes each file as a YAML stream under `folder`, after removing what an earlier `kflow manifests` wrote
    there (its LISTING); returns the paths. ConfigError for a non-empty folder kflow did not write."""
    folder = Path(folder)
    remove_earlier_manifests(folder)
    written = []
    for name, objects in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.dump_all(objects, Dumper=_PlainDumper, sort_keys=False, width=120))
        written.append(path)
    (folder / LISTING).write_text(json.dumps(sorted(files), indent=1) + "\n")
    return written


def remove_earlier_manifests(folder: Path) -> None:
    """Removes the files an earlier `kflow manifests` listed in `folder` (and the sub-folders that leaves empty), and
    nothing else; refuses a folder that holds files but no listing: kubectl would apply them with kflow's."""
    if not folder.exists():
        return
    if not folder.is_dir():
        raise ConfigError([f"-o {folder}: not a folder"])
    listing = folder / LISTING
    if not listing.is_file():
        if any(folder.iterdir()):
            raise ConfigError([
                f"-o {folder}: the folder is not empty and was not written by kflow manifests (no {LISTING}): "
                "kubectl apply -f would apply its other files too; give a new or empty folder"
            ])  # fmt: skip
        return
    try:
        names = json.loads(listing.read_text())
    except ValueError as error:
        problem = f"-o {folder}: {LISTING} is not kflow's listing ({error}); give a new or empty folder"
        raise ConfigError([problem]) from None
    if not isinstance(names, list):
        raise ConfigError([f"-o {folder}: {LISTING} is not kflow's listing; give a new or empty folder"])
    for name in names:
        relative = Path(str(name))
        if relative.is_absolute() or ".." in relative.parts:  # A listing that names what is not kflow's own.
            continue
        path = folder / relative
        if path.is_file() and not path.is_symlink():
            path.unlink()
        for parent in path.relative_to(folder).parents:
            if parent != Path(".") and (folder / parent).is_dir() and not any((folder / parent).iterdir()):
                (folder / parent).rmdir()
    listing.unlink()
