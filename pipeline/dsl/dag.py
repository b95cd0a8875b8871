"""The pipeline DAG: nodes wired by artifacts, ordered by their dependencies."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kflow.pipeline.dsl.component import Component


@dataclass
class Pipeline:
    """A named DAG of component nodes.

    Edges come from the nodes' inputs (which upstream output each consumes), not from
    the order the nodes are listed in; the order only breaks ties in `topological_order`.
    """

    name: str
    components: list[Component]
    # Runner settings that belong to the pipeline, not to a component (e.g. Beam options).
    beam_args: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", self.name):  # runs/<name>/
            raise ValueError(f"pipeline name {self.name!r}: lowercase letters, digits and -, as a config's name")
        ids = [node.id for node in self.components]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"pipeline {self.name!r}: duplicate component ids {duplicates}")
        for node in self.components:
            for name, channel in node.inputs.items():
                if channel.producer not in ids:
                    raise ValueError(
                        f"pipeline {self.name!r}: {node.id}.{name} consumes {channel.producer}.{channel.output}, "
                        f"but {channel.producer!r} is not in the pipeline"
                    )
        self.topological_order()  # Fails early on cycles.

    def node(self, node_id: str) -> Component:
        for node in self.components:
            if node.id == node_id:
                return node
        raise KeyError(f"no component {node_id!r} in pipeline {self.name!r}; it has {[n.id for n in self.components]}")

    def topological_order(self) -> list[Component]:
        remaining = list(self.components)
        done: set[str] = set()
        ordered: list[Component] = []
        while remaining:
            ready = [node for node in remaining if node.upstream <= done]
            if not ready:
                raise ValueError(f"pipeline {self.name!r} has a cycle among {[n.id for n in remaining]}")
            for node in ready:
                ordered.append(node)
                done.add(node.id)
                remaining.remove(node)
        return ordered

    def ancestors(self, node_id: str) -> set[str]:
        found: set[str] = set()
        frontier = [node_id]
        while frontier:
            for upstream in self.node(frontier.pop()).upstream:
                if upstream not in found:
                    found.add(upstream)
                    frontier.append(upstream)
        return found

    def until(self, node_id: str) -> Pipeline:
        """The sub-pipeline that runs up to and including `node_id`."""
        keep = self.ancestors(node_id) | {node_id}
        return Pipeline(
            name=self.name,
            components=[node for node in self.components if node.id in keep],
            beam_args=list(self.beam_args),
            metadata=dict(self.metadata),
        )
