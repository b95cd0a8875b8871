"""Paths the pods cannot see: `kflow compile` warns, naming the node and the field, about every parameter of any node
(a declared pipeline's too) that names a path of this machine — a Pusher's push_destination, an ingest's source_path,
a frozen schema — unless it is on the shared volume or in an object store (gs://, s3://: any URI)."""

from __future__ import annotations

from pathlib import Path

from kflow.pipeline.dsl.dag import Pipeline


def is_local(value: str, shared_mount_path: str) -> bool:
    """A path of this machine outside the shared volume (a URI is not)."""
    if "://" in value:
        return False
    return not Path(value).expanduser().resolve().is_relative_to(Path(shared_mount_path))


def node_path_warnings(pipeline: Pipeline, shared_mount_path: str, already: list[str] = ()) -> list[str]:
    """A line per path parameter of a node the pods will not see, but for a value a line of `already` names (the
    config field it came from: data.source.path is the standard ingest's source_path)."""
    lines = []
    for node in pipeline.components:
        for name, value in node.parameters.items():
            parameter = node.spec.parameters.get(name)
            if parameter is None or not parameter.is_path or not isinstance(value, str) or not value:
                continue
            if node.parameters.get(f"{name}_source") is not None:  # it travels in pipeline.yaml, with the files
                continue  # it imports (module_imports.py)
            if not is_local(value, shared_mount_path) or any(f" {value} is a path" in line for line in already):
                continue
            lines.append(
                f"node {node.id}: {name}: {value} is a path on this machine: the pods will not see it unless it is "
                f"on the shared volume (mounted at {shared_mount_path}) or in an object store (gs://, s3://, minio://)"
            )
    return lines
