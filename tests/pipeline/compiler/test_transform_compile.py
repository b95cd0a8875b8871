"""A tabular config compiles its Transform to a KFP task of its own, cached on its own inputs: the trainer's
settings leave its spec alone, the data options it learns with change it, and the train task reads its graph."""

from __future__ import annotations

from pathlib import Path

import yaml

from kflow.pipeline.app.commands import compile_config

REPO = Path(__file__).resolve().parents[3]
IRIS_CSV = REPO / "pipeline" / "configs" / "data" / "iris.csv"


def compiled(folder: Path, **trainer) -> tuple[dict, dict]:
    config = {
        "name": "iris-transform",
        "data": {"dataset": "csv", "source": {"path": str(IRIS_CSV)}, "label": "species",
                 "split": {"train": 8, "eval": 1, "test": 1}, "shards_per_split": 1},
        "trainer": {"model": "tabular_mlp", "epochs": 4, "batch_size": 16, **trainer},
        "evaluator": {"baseline": "none"},
        "kubeflow": {"image": "kflow:test"},
    }  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "iris.yaml").write_text(yaml.safe_dump(config))
    ir = next(yaml.safe_load_all(compile_config(str(folder / "iris.yaml"), folder / "pipeline.yaml", []).read_text()))
    tasks = ir["root"]["dag"]["tasks"]
    return tasks, ir["deploymentSpec"]["executors"]


def test_the_transform_is_a_task_of_its_own_with_its_own_cache_key(tmp_path):
    tasks, executors = compiled(tmp_path / "a")
    transform = tasks["transform"]
    assert transform["cachingOptions"] == {"enableCache": True}
    assert set(transform["dependentTasks"]) == {"ingest", "schema"}
    assert transform["inputs"]["artifacts"]["examples"]["taskOutputArtifact"]["producerTask"] == "ingest"
    args = executors["exec-transform"]["container"]["args"]
    assert args[args.index("--component") + 1] == "kflow.components.transform.component:Transform"
    assert "transform_graph={{$.outputs.artifacts['transform_graph'].path}}" in args
    assert tasks["train"]["inputs"]["artifacts"]["transform_graph"]["taskOutputArtifact"] == {
        "outputArtifactKey": "transform_graph",
        "producerTask": "transform",
    }
    # Its cache key is its own: other epochs leave the task as it was; a data option it learns with changes it.
    other_epochs, _ = compiled(tmp_path / "b", epochs=9)
    assert other_epochs["transform"] == transform and other_epochs["train"] != tasks["train"]
    other_vocabulary, _ = compiled(tmp_path / "c", model_options={"max_categories": 3})
    assert other_vocabulary["transform"]["inputs"]["parameters"]["options"] == {
        "runtimeValue": {"constant": {"max_categories": 3}}
    }


def test_an_edit_of_the_preprocessing_module_changes_the_transforms_cache_key_and_nothing_upstream(tmp_path):
    from kflow.pipeline.app.standard_pipeline import build_pipeline
    from kflow.pipeline.dsl.config import load_config

    module = tmp_path / "my_preprocessing.py"
    module.write_text("def preprocessing_fn(inputs, analyzers):\n    return {'x': inputs['petal_length']}\n")
    compiled(tmp_path)  # writes iris.yaml

    def keys():
        pipeline = build_pipeline(load_config(tmp_path / "iris.yaml", overrides=[f"transform.module={module}"]))
        return {node.id: node.cache_parameters for node in pipeline.components}

    before = keys()
    assert before["transform"]["module_source"] == module.read_text()
    module.write_text(module.read_text().replace("petal_length", "petal_width"))
    after = keys()
    assert [name for name in before if before[name] != after[name]] == ["transform"]  # train follows by its input
