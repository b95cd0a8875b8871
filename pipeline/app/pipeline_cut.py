"""`--until` and `--only`: a pipeline cut after a component, checked against the pipeline's own components."""

from __future__ import annotations

from typing import Any

from kflow.pipeline.dsl.config import ConfigError


def cut_pipeline(pipeline: Any, *options: tuple[str, str | None]) -> Any:
    """The pipeline cut after each named component (--until, --only), in one line naming the option for a name that
    is not one of its components."""
    for option, node_id in options:
        names = [node.id for node in pipeline.components]  # of the pipeline as the options before cut it
        if node_id and node_id not in names:
            raise ConfigError([f"{option}: no component {node_id!r} (choose from {', '.join(names)})"])
        if node_id:
            pipeline = pipeline.until(node_id)
    return pipeline
