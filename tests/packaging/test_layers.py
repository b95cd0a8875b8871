"""Layers only point down, and components never import each other (imports read with `ast`, function-local ones too).

kflow.schemas                                   declarative files
kflow.pipeline.dsl                              artifacts, component base, DAG, config (no TensorFlow)
kflow.components.{datasets,ingest,models,util}  what a dataset is: tasks, metrics, models; the shared ingest; helpers
kflow.components.<component>                    ingest / train / evaluate: the DSL and the layer above only
kflow.pipeline.{runners,compiler,kubeflow}      run or compile a DAG; see components as specs and paths
kflow.pipeline.{app,cli}                        the standard pipeline, compile/submit, the command line
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("pipeline", "components", "schemas")
SHARED = ("datasets", "ingest", "models", "util")
ORCHESTRATION = ("runners", "compiler", "kubeflow")
APPLICATION = ("app", "cli")


def layer(module: str) -> str:
    """The layer of a kflow module: 'schemas', 'dsl', 'shared', 'component:<name>', 'orchestration' or 'app'."""
    parts = module.split(".")[1:]
    if parts[0] == "schemas":
        return "schemas"
    if parts[0] == "components":
        if len(parts) >= 4 and parts[1] == "datasets" and parts[3] == "ingest":
            return f"component:{parts[2]}_ingest"  # A dataset's own ingest component, in its folder.
        if len(parts) == 1 or parts[1] in SHARED:
            return "shared"
        return f"component:{parts[1]}"
    if len(parts) > 1 and parts[1] == "dsl":
        return "dsl"
    if len(parts) > 1 and parts[1] in ORCHESTRATION:
        return "orchestration"
    return "app"  # kflow.pipeline itself, its app and cli packages


def allowed(source: str, target: str) -> bool:
    if source == "app":
        return True
    below = {
        "schemas": {"schemas"},
        "dsl": {"schemas", "dsl"},
        "shared": {"schemas", "dsl", "shared"},
        "orchestration": {"schemas", "dsl", "orchestration"},
    }
    if source.startswith("component:"):
        return target in {"schemas", "dsl", "shared", source}
    return target in below[source]


def module_name(path: Path) -> str:
    relative = path.relative_to(REPO).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["kflow", *parts])


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                found.append((node.lineno, f"{base}.{node.module}" if node.module else base))
            elif node.module:
                found.append((node.lineno, node.module))
    return found


def sources() -> list[Path]:
    return sorted(path for folder in FOLDERS for path in (REPO / folder).rglob("*.py"))


def test_layer_rules_hold_for_every_import():
    broken = []
    for path in sources():
        source = layer(module_name(path))
        for line, target in imports(path):
            if target.split(".")[0] in FOLDERS:
                broken.append(f"{path.relative_to(REPO)}:{line} imports {target} (use the kflow. name)")
            elif target.startswith("kflow.") and not allowed(source, layer(target)):
                broken.append(f"{path.relative_to(REPO)}:{line} ({source}) imports {target} ({layer(target)})")
    assert not broken, "imports against the layers:\n" + "\n".join(broken)


@pytest.mark.parametrize(
    ("source", "target", "ok"),
    [
        ("kflow.components.evaluator.executor", "kflow.components.trainer.loop", False),
        ("kflow.components.evaluator.executor", "kflow.components.datasets.task", True),
        ("kflow.components.datasets.task", "kflow.components.trainer", False),
        ("kflow.components.datasets.mnist.ingest.executor", "kflow.components.ingest.beam_ingest", True),
        ("kflow.components.datasets.mnist.ingest.executor", "kflow.components.datasets.quora.ingest", False),
        ("kflow.components.trainer.executor", "kflow.components.datasets.mnist.ingest", False),
        ("kflow.pipeline.dsl.component", "kflow.pipeline.runners.cache", False),
        ("kflow.pipeline.runners.node_runner", "kflow.components.trainer", False),
        ("kflow.pipeline.compiler.pipeline_builder", "kflow.pipeline.app.standard_pipeline", False),
        ("kflow.pipeline.app.standard_pipeline", "kflow.components.trainer", True),
        ("kflow.pipeline.cli.main", "kflow.pipeline.runners.beam_dag_runner", True),
    ],
)
def test_the_rules_refuse_what_they_should(source, target, ok):
    assert allowed(layer(source), layer(target)) is ok
