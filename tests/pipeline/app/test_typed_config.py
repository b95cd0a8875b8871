"""The config is parsed once into typed objects and passed down: the loader builds the sections of the config model,
the Trainer's executor receives its typed settings, and a cluster process receives the same settings as JSON."""

from __future__ import annotations

import ast
import dataclasses
import json
import typing
from pathlib import Path

from kflow.pipeline.dsl.config import PipelineConfig, load_config
from kflow.pipeline.dsl.config_model import KflowConfig, Section

REPO = Path(__file__).resolve().parents[3]
IRIS = REPO / "pipeline" / "configs" / "iris.yaml"
SECTIONS = {name for name in KflowConfig.model_fields if name not in ("name", "pipeline_root")}


def test_a_loaded_config_holds_the_config_models_objects():
    config = load_config(IRIS, ["trainer.epochs=2", "trainer.optimizer.learning_rate=0.02"])
    for name in SECTIONS & {field.name for field in dataclasses.fields(PipelineConfig)}:
        value = getattr(config, name)
        assert value is None or isinstance(value, Section) or all(isinstance(item, Section) for item in value), name
    assert config.trainer.epochs == 2 and config.trainer.optimizer.learning_rate == 0.02
    # What a run records is the typed config written out, every default filled: read back, it is the same object.
    recorded = json.loads(json.dumps(config.to_dict()))
    assert KflowConfig.model_validate(recorded).trainer == config.trainer


def _config_subscripts(tree: ast.AST) -> list[int]:
    """Lines where a config section is read as a mapping: `config.trainer["epochs"]`, `config.data.get("split")`."""
    found = []
    for node in ast.walk(tree):
        target = node.value if isinstance(node, ast.Subscript) else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "items"):
            target = node.func.value
        if isinstance(target, ast.Attribute) and target.attr in SECTIONS and isinstance(target.value, ast.Name):
            if target.value.id == "config":
                found.append(node.lineno)
    return found


def test_no_module_below_the_loader_reads_the_config_as_a_dict():
    """Only the loader (pipeline/dsl/config*.py) handles the config as data; every module below it reads the typed
    sections' fields (a section is a pydantic object: `config.trainer["epochs"]` would fail when run)."""
    offenders = []
    for path in sorted([*(REPO / "pipeline").rglob("*.py"), *(REPO / "components").rglob("*.py")]):
        if path.parent.name == "dsl" and path.name.startswith("config"):
            continue
        lines = _config_subscripts(ast.parse(path.read_text(encoding="utf-8")))
        offenders += [f"{path.relative_to(REPO)}:{line}" for line in lines]
    assert offenders == []
    hints = typing.get_type_hints(PipelineConfig)
    assert all("dict" not in str(hints[name]) for name in SECTIONS if name in hints), hints


def test_the_trainer_receives_its_typed_settings_in_process_and_in_a_cluster_process(tmp_path, monkeypatch):
    """A config's trainer section reaches the Trainer's executor as `TrainerSettings` (the same values, typed) and a
    launched worker of a 2-process MultiWorkerMirrored cluster as the JSON of the same `TrainConfig`."""
    from kflow.components.trainer import config as trainer_config
    from kflow.components.trainer import executor, launcher
    from kflow.components.trainer.config import TrainConfig, TrainerSettings
    from kflow.pipeline.app.local_run import run_locally
    from kflow.pipeline.app.sections import trainer_field
    from kflow.pipeline.app.standard_pipeline import build_pipeline
    from kflow.pipeline.dsl.artifacts import Examples, Model, ModelRun, Schema, TransformGraph

    overrides = ["trainer.strategy=multi_worker_mirrored", "trainer.workers=2", "trainer.epochs=1",
                 "trainer.batch_size=16", "trainer.optimizer.learning_rate=0.02"]  # fmt: skip
    overrides.append(f"pipeline_root={tmp_path / 'runs'}")
    config = load_config(IRIS, overrides)
    data = run_locally(config, until="transform").run.executions

    received: dict[str, object] = {}
    built = TrainerSettings.from_parameters.__func__

    def from_parameters(cls, parameters):  # the executor's own call, recorded
        received["settings"] = built(cls, parameters)
        return received["settings"]

    real_launch = launcher.launch

    def launch(spec, *, spec_dir, **options):  # the real cluster; what its processes read is kept before cleanup
        restarts = real_launch(spec, spec_dir=spec_dir, **options)
        received["worker_spec"] = json.loads((Path(spec_dir) / "train_spec.json").read_text())
        return restarts

    monkeypatch.setattr(trainer_config.TrainerSettings, "from_parameters", classmethod(from_parameters))
    monkeypatch.setattr(executor, "launch", launch)
    train = next(node for node in build_pipeline(config).components if node.id == "train")
    (model := Model(tmp_path / "model")).path.mkdir()
    (model_run := ModelRun(tmp_path / "model_run")).path.mkdir()
    executor.run(
        examples=data["ingest"].outputs_of_type(Examples)[0],
        schema=data["schema"].outputs_of_type(Schema)[0],
        transform_graph=data["transform"].outputs_of_type(TransformGraph)[0],
        model=model,
        model_run=model_run,
        working_dir=tmp_path / "work",
        **train.parameters,
    )

    settings = received["settings"]
    assert isinstance(settings, TrainerSettings)
    written, compared = config.to_dict(), []
    for group in (settings.training, settings.cluster):
        for item in dataclasses.fields(group):
            section, *path = trainer_field(item.name).split(".")
            if path[0] in config.trainer.model_fields or path[0] == "optimizer":
                value = written[section]
                for part in path:
                    value = value[part]
                assert getattr(group, item.name) == value, item.name
                compared.append(item.name)
    assert len(compared) >= 25, compared  # every setting the trainer section declares, optimizer's included
    assert settings.training.learning_rate == 0.02 and settings.cluster.workers == 2
    assert settings.model.dataset == "csv" and settings.model.transform_graph_uri is not None
    # The cluster's processes read the same TrainConfig, as JSON (components/trainer/worker.py rebuilds it).
    assert TrainConfig(**received["worker_spec"]["config"]) == settings.training
    assert json.loads(model_run.path.joinpath("history.json").read_text())["epochs"] == 1
