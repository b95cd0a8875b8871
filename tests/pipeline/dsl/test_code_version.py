"""The cache key's code version sees every first-party file a component can run, and nothing else."""

from __future__ import annotations

import importlib
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from kflow.components.datasets.mnist.ingest import MnistIngest
from kflow.components.evaluator import Evaluator
from kflow.components.models import MODELS
from kflow.components.trainer import Trainer
from kflow.components.trainer.strategies import STRATEGIES, TRAINERS
from kflow.pipeline.dsl.code_version import code_version, source_files
from kflow.pipeline.dsl.component import Component, ComponentSpec


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A user's own package of components outside site-packages: `shop` with two executors and shared code."""
    _write(
        tmp_path,
        {
            "shop/__init__.py": "",
            "shop/shared.py": "def clip(x):\n    return max(x, 0)\n",
            "shop/tasks/__init__.py": "",
            "shop/tasks/linear.py": "class Linear:\n    pass\n",
            "shop/templates/job.yaml": "kind: Job\n",
            "shop/clip_executor.py": """
                from shop.shared import clip

                def run(**kwargs):
                    return {"value": clip(-1)}
                """,
            "shop/count_executor.py": """
                import json

                def run(**kwargs):
                    return {}
                """,
            "shop/registry_executor.py": """
                import importlib.resources

                TASKS = {"linear": "shop.tasks.linear:Linear"}

                def run(**kwargs):
                    return importlib.resources.files("shop.templates").joinpath("job.yaml").read_text()
                """,
            "shop/relative_executor.py": """
                from .shared import clip

                def run(**kwargs):
                    return clip(1)
                """,
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield tmp_path
    for name in [name for name in sys.modules if name == "shop" or name.startswith("shop.")]:
        del sys.modules[name]


def _component(executor: str) -> type[Component]:
    return type(executor, (Component,), {"spec": ComponentSpec(executor=f"shop.{executor}:run"), "__module__": "shop"})


def test_editing_a_shared_helper_invalidates_exactly_the_components_that_use_it(project):
    components = {name: _component(name) for name in ("clip_executor", "count_executor", "relative_executor")}
    before = {name: component.code_version() for name, component in components.items()}
    (project / "shop" / "shared.py").write_text("def clip(x):\n    return min(max(x, 0), 1)\n")
    after = {name: component.code_version() for name, component in components.items()}
    changed = {name for name in components if before[name] != after[name]}
    assert changed == {"clip_executor", "relative_executor"}


def test_modules_named_in_strings_and_package_data_count(project):
    component = _component("registry_executor")
    files = source_files(["shop.registry_executor"])
    assert project / "shop" / "tasks" / "linear.py" in files.values()
    assert project / "shop" / "templates" / "job.yaml" in files.values()
    before = component.code_version()
    (project / "shop" / "tasks" / "linear.py").write_text("class Linear:\n    scale = 2\n")
    middle = component.code_version()
    (project / "shop" / "templates" / "job.yaml").write_text("kind: TFJob\n")
    assert len({before, middle, component.code_version()}) == 3


def test_names_in_a_parent_packages_strings_count_only_for_who_imports_the_package(project):
    _write(
        project,
        {
            "shop/catalog/__init__.py": 'ENTRIES = {"linear": "shop.tasks.linear:Linear"}\n',
            "shop/catalog/reader.py": "def read():\n    return 1\n",
            "shop/catalog_user.py": "from shop.catalog import ENTRIES\n",
        },
    )
    reader = {path.name for path in source_files(["shop.catalog.reader"]).values()}
    user = {path.name for path in source_files(["shop.catalog_user"]).values()}
    assert "__init__.py" in reader and "linear.py" not in reader  # The parent runs; its strings are not followed.
    assert "linear.py" in user


def test_third_party_and_standard_library_code_is_not_followed(project):
    files = source_files(["shop.count_executor"])
    assert {path.name for path in files.values()} == {"__init__.py", "count_executor.py"}


def test_the_code_version_does_not_depend_on_where_the_code_is(project, tmp_path_factory, monkeypatch):
    version = code_version(["shop.clip_executor"])
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    shutil.copytree(project / "shop", elsewhere / "shop")
    monkeypatch.syspath_prepend(str(elsewhere))
    assert {path.parent.parent for path in source_files(["shop.clip_executor"]).values()} == {elsewhere}
    assert code_version(["shop.clip_executor"]) == version


def test_kflow_components_cover_their_shared_code_and_schemas():
    def names(component):
        return {
            str(path) for path in source_files([component.__module__, component.spec.executor.split(":")[0]]).values()
        }

    ingest, trainer, evaluator = names(MnistIngest), names(Trainer), names(Evaluator)
    assert any(path.endswith("schemas/mnist/schema.pbtxt") for path in ingest)
    assert any(path.endswith("components/util/schema.py") for path in ingest)
    # The Trainer runs its worker processes by module name; the datasets' tasks are in a registry of strings.
    assert any(path.endswith("components/trainer/worker.py") for path in trainer)
    assert any(path.endswith("datasets/wikitext2/task.py") for path in trainer)
    # Strategies, training loops and models are registries of module names too: editing one re-runs the Trainer.
    registered = [m for spec in STRATEGIES.values() for m in (spec.runtime.split(":")[0], TRAINERS[spec.trainer])]
    for module in registered + list(MODELS.values()):
        assert any(path.endswith(module.removeprefix("kflow.").replace(".", "/") + ".py") for path in trainer)
    assert any(path.endswith("datasets/quora/task.py") for path in evaluator)
    assert any(path.endswith("datasets/quora/metrics.py") for path in evaluator)
    # Nothing of other components' own code: editing the Evaluator does not invalidate ingest or training.
    assert not any("components/evaluator/" in path for path in ingest | trainer)
    assert not any("components/trainer/" in path for path in ingest | evaluator)
    # The ingest sits in its dataset's folder, whose bundle names the task: named, not imported by the ingest.
    assert not any(path.endswith("datasets/mnist/task.py") for path in ingest)
    assert any(path.endswith("datasets/mnist/task.py") for path in trainer)
