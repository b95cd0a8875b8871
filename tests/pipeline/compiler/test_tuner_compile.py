"""A config with a tuner compiles to parallel trial tasks (a dsl.ParallelFor with its parallelism) feeding one
gathering task, whose HyperParameters the train task takes; the KFP player runs it to a trained model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

from kflow.pipeline.app.commands import compile_config
from tests.pipeline.compiler.kfp_player import play

REPO = Path(__file__).resolve().parents[3]
IRIS_CSV = REPO / "pipeline" / "configs" / "data" / "iris.csv"


def compiled(folder: Path) -> Path:
    config = {
        "name": "iris-tune",
        "data": {"dataset": "csv", "source": {"path": str(IRIS_CSV)}, "label": "species",
                 "split": {"train": 8, "eval": 1, "test": 1}, "shards_per_split": 1},
        "trainer": {"model": "tabular_mlp", "epochs": 4, "batch_size": 16},
        "evaluator": {"baseline": "none"},
        "tuner": {
            "search_space": {"trainer.optimizer.learning_rate": {"log_uniform": [1e-3, 3e-2]},
                             "trainer.model_options.hidden_units": {"choice": [[8], [32, 16]]}},
            "algorithm": "successive_halving", "max_trials": 4, "parallel_trials": 2,
            "objective": {"metric": "val_loss"},
        },
        "kubeflow": {"image": "kflow:test"},
    }  # fmt: skip
    (folder / "iris.yaml").write_text(yaml.safe_dump(config))
    return compile_config(str(folder / "iris.yaml"), folder / "pipeline.yaml", [])


def test_the_trials_compile_to_a_parallel_for_with_its_parallelism_before_one_gathering_task(tmp_path):
    ir, platform = yaml.safe_load_all(compiled(tmp_path).read_text())
    json_format.ParseDict(ir, pipeline_spec_pb2.PipelineSpec(), ignore_unknown_fields=False)  # strictly a spec
    tasks = ir["root"]["dag"]["tasks"]
    (loop,) = [name for name, task in tasks.items() if "parameterIterator" in task]
    assert tasks[loop]["iteratorPolicy"] == {"parallelismLimit": 2}
    assert json.loads(tasks[loop]["parameterIterator"]["items"]["raw"]) == [0, 1, 2, 3]
    # after the data's verdict, with the Transform's graph
    assert set(tasks[loop]["dependentTasks"]) == {"ingest", "schema", "validate", "transform"}
    trial = ir["components"][tasks[loop]["componentRef"]["name"]]["dag"]["tasks"]["tune-trial"]
    assert trial["inputs"]["parameters"]["trial_index"] == {
        "componentInputParameter": trial["inputs"]["parameters"]["trial_index"]["componentInputParameter"]
    } and "loop-item" in str(trial["inputs"]["parameters"]["trial_index"])
    assert trial["inputs"]["parameters"]["run_id"]["runtimeValue"]["constant"] == "{{$.pipeline_job_uuid}}"
    assert trial["cachingOptions"] == {} and tasks["tune"]["cachingOptions"] == {}  # never cached: a study a run
    assert tasks["tune"]["dependentTasks"] == [loop]
    assert tasks["train"]["inputs"]["artifacts"]["hyperparameters"]["taskOutputArtifact"] == {
        "outputArtifactKey": "hyperparameters",
        "producerTask": "tune",
    }
    executors = platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]
    for label in ("exec-tune-trial", "exec-tune"):  # the study's journal is on the shared volume
        assert executors[label]["pvcMount"][0]["mountPath"] == "/mnt/kflow-shared"


@pytest.mark.slow  # ~35 s: 4 trials, 2 at a time, then train and evaluate
def test_the_player_runs_the_compiled_search_to_a_model_trained_with_its_best_settings(tmp_path):
    played = play(compiled(tmp_path), tmp_path / "played", cwd=REPO, timeout=600)
    (loop,) = [name for name, outputs in played.items() if "iterations" in outputs]
    assert len(played[loop]["iterations"]) == 4
    hyperparameters = Path(played["tune"]["hyperparameters"].path)
    trials = json.loads((hyperparameters / "trials.json").read_text())
    assert sorted(trial["number"] for trial in trials) == [0, 1, 2, 3]
    assert all(trial["state"] in ("completed", "pruned") for trial in trials)
    best = json.loads((hyperparameters / "best.json").read_text())
    completed = [trial["value"] for trial in trials if trial["state"] == "completed"]
    assert best["objective"]["value"] == min(completed)
    model = Path(played["train"]["model"].path)
    assert json.loads((model / "metadata.json").read_text()) == {"hyperparameters": best["settings"]}
    assert (Path(played["evaluate"]["blessing"].path)).is_dir()
