"""`kflow compile`: KFP v2 IR that kfp's own loaders and the pipeline_spec proto accept, matching the golden file."""

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from google.protobuf import json_format
from kfp import compiler, components
from kfp.pipeline_spec import pipeline_spec_pb2

from kflow.pipeline.cli.main import main
from kflow.pipeline.compiler import KubeflowSettings, compile_pipeline, load_compile_config
from kflow.pipeline.compiler.component_builder import kfp_artifact_class
from kflow.pipeline.compiler.settings import kubeflow_settings
from kflow.pipeline.dsl.artifacts import ARTIFACT_TYPES, Artifact
from kflow.pipeline.dsl.dag import Pipeline
from tests.conftest import REPO
from tests.pipeline.kubeflow.api_models import model_differences
from tests.pipeline.toy.components import ClusterAdd, Produce

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"
MNIST = REPO / "pipeline" / "configs" / "mnist.yaml"
GOLDEN = Path(__file__).parent / "golden" / "demo_pipeline.yaml"


def compile_cli(config, output, *args):
    image = [] if "--image" in args else ["--image", "kflow:0.1.0"]
    return main(["compile", str(config), "-o", str(output), *image, *map(str, args)])


def load_ir(path):
    (document, *platform) = list(yaml.safe_load_all(Path(path).read_text()))
    return document, platform


def without_code_versions(text: str) -> str:
    """The compiled YAML with each task's `--code-version` (a hash of kflow's code: any edit changes it) masked."""
    return re.sub(r"(- --code-version\n\s+- )[0-9a-f]+", r"\1CODE_VERSION", text)


def test_demo_matches_the_golden_file(tmp_path):
    """Regenerate with `KFLOW_UPDATE_GOLDEN=1 .venv/bin/pytest tests/pipeline/compiler/test_compiler.py`."""
    assert compile_cli(DEMO, tmp_path / "p.yaml") == 0
    compiled = without_code_versions((tmp_path / "p.yaml").read_text())
    if os.environ.get("KFLOW_UPDATE_GOLDEN"):
        GOLDEN.write_text(compiled)
    assert compiled == GOLDEN.read_text(), (
        "compiled YAML changed; review it, then regenerate with KFLOW_UPDATE_GOLDEN=1"
    )


@pytest.mark.parametrize("config", [DEMO, MNIST], ids=["demo", "mnist"])
def test_compiled_ir_parses_as_a_pipeline_spec_and_loads_in_kfp(config, tmp_path):
    assert compile_cli(config, tmp_path / "p.yaml") == 0
    ir, platform = load_ir(tmp_path / "p.yaml")
    spec = json_format.ParseDict(ir, pipeline_spec_pb2.PipelineSpec(), ignore_unknown_fields=False)
    # Both configs compare with the latest blessed model; the ingest's source files are fingerprinted first.
    tasks = {"ingest-fingerprint", "ingest", "transform", "train", "evaluate-baseline", "evaluate"}
    assert set(spec.root.dag.tasks) == tasks
    assert spec.deployment_spec["executors"]["exec-train"]["container"]["image"] == "kflow:0.1.0"
    (platform,) = platform
    assert set(platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]) == {
        "exec-evaluate-baseline",
        "exec-evaluate",
    }
    loaded = components.load_component_from_file(str(tmp_path / "p.yaml"))
    assert loaded.name == config.stem
    assert set(loaded.pipeline_spec.root.dag.tasks) == tasks
    # kfp's own compiler writes the loaded pipeline back unchanged.
    compiler.Compiler().compile(loaded, str(tmp_path / "again.yaml"))
    assert load_ir(tmp_path / "again.yaml")[0] == ir


def test_a_latest_blessed_baseline_compiles_to_an_uncached_resolver_task_feeding_the_evaluator(tmp_path):
    assert compile_cli(DEMO, tmp_path / "p.yaml", "--set", "kubeflow.cluster.shared_mount_path=/mnt/shared") == 0
    ir, (platform,) = load_ir(tmp_path / "p.yaml")
    tasks = ir["root"]["dag"]["tasks"]
    resolver, evaluate = tasks["evaluate-baseline"], tasks["evaluate"]
    assert resolver["cachingOptions"] == {} and evaluate["cachingOptions"] == {"enableCache": True}
    assert resolver["inputs"]["artifacts"]["model"]["taskOutputArtifact"] == {
        "outputArtifactKey": "model",
        "producerTask": "train",
    }
    assert evaluate["inputs"]["parameters"]["baseline_model_uri"]["taskOutputParameter"] == {
        "outputParameterKey": "baseline_model_uri",
        "producerTask": "evaluate-baseline",
    }
    store = "/mnt/shared/kflow-baselines/demo"
    executors = ir["deploymentSpec"]["executors"]
    identity = '{"dataset": "mnist", "label": null, "name": "demo", "problem_type": null}'  # matched and recorded
    assert executors["exec-evaluate-baseline"]["container"]["args"] == [
        "--store", store, "--model-uri", "{{$.inputs.artifacts['model'].uri}}", "--identity", identity,
        "--output", "{{$.outputs.parameters['baseline_model_uri'].output_file}}",
    ]  # fmt: skip
    args = executors["exec-evaluate"]["container"]["args"]
    assert args[args.index("--record-blessed-model") + 1] == f"blessing={store}" and "--executor-input" in args
    assert args[args.index("--baseline-identity") + 1] == identity
    mounts = platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]
    for executor in ("exec-evaluate-baseline", "exec-evaluate"):
        assert mounts[executor]["pvcMount"][0]["mountPath"] == "/mnt/shared"
        assert mounts[executor]["pvcMount"][0]["constant"] == "kflow-shared"

    assert compile_cli(DEMO, tmp_path / "none.yaml", "--set", "evaluator.baseline=none") == 0
    ir, platform = load_ir(tmp_path / "none.yaml")
    assert (
        set(ir["root"]["dag"]["tasks"]) == {"ingest-fingerprint", "ingest", "transform", "train", "evaluate"}
        and platform == []
    )
    assert "--record-blessed-model" not in ir["deploymentSpec"]["executors"]["exec-evaluate"]["container"]["args"]


def test_a_declared_pipelines_evaluator_compiles_with_its_latest_blessed_resolver_and_data_of_the_pods(tmp_path):
    """A declared pipeline's evaluator takes evaluator.baseline as the standard one (kflow run resolved it locally;
    the compiled pipeline compared with nothing), one given its baseline keeps it; and its ingest's source, a path
    the pods see (the shared volume) and this machine does not, compiled as the standard pipeline's does (it was
    refused: `components.read.parameters: data.source.path: … does not exist`)."""
    source = "/mnt/kflow-shared/data/iris.csv"
    node = {"examples": "read.examples", "schema": "read.schema", "model": "train.model"}
    node["model_run"] = "train.model_run"
    config = {
        "name": "iris-dag",
        "data": {"dataset": "csv", "label": "species", "source": {"path": source}},
        "trainer": {"epochs": 1},
        "components": [
            {"id": "read", "type": "csv_ingest", "parameters": {"source_path": source, "label": "species"}},
            {"id": "train", "type": "trainer", "inputs": {"examples": "read.examples", "schema": "read.schema"}},
            {"id": "judge", "type": "evaluator", "inputs": node},
            {"id": "judge_fixed", "type": "evaluator", "inputs": {**node, "baseline_model": "train.model"}},
        ],
    }
    (tmp_path / "dag.yaml").write_text(yaml.safe_dump(config))
    assert compile_cli(tmp_path / "dag.yaml", tmp_path / "p.yaml") == 0
    ir, _ = load_ir(tmp_path / "p.yaml")
    tasks = ir["root"]["dag"]["tasks"]
    assert "judge-baseline" in tasks and "judge-fixed-baseline" not in tasks
    assert tasks["judge"]["inputs"]["parameters"]["baseline_model_uri"]["taskOutputParameter"] == {
        "outputParameterKey": "baseline_model_uri",
        "producerTask": "judge-baseline",
    }
    # kflow validate still reads the data where it runs: here the file is absent, and that is said.
    assert main(["validate", str(tmp_path / "dag.yaml")]) == 2


def test_compile_says_a_latest_blessed_warm_start_trains_from_scratch_as_it_says_the_baseline(tmp_path, capsys):
    """A user trial: a config of trainer.warm_start: latest_blessed compiled with a note for the evaluator's baseline
    only, while its Trainer, which no task resolves an earlier model for, trains from scratch on every run."""
    baseline = "evaluate: compares with the latest blessed model, kept on the volume claim 'kflow-shared' at "
    assert compile_cli(DEMO, tmp_path / "p.yaml", "--set", "trainer.warm_start=latest_blessed") == 0
    notes = capsys.readouterr().err.splitlines()
    assert [note for note in notes if note.startswith(baseline)] and notes[-1] == (
        "train: trains from scratch on every run: a compiled pipeline resolves no earlier model for "
        "trainer.warm_start: latest_blessed (kflow run resolves it among its local runs; trainer.warm_start: none "
        "compiles without this note)"
    )
    ir, _ = load_ir(tmp_path / "p.yaml")  # what the note says: the train task gets the setting, never a model
    train = ir["root"]["dag"]["tasks"]["train"]["inputs"]["parameters"]
    assert train["warm_start"]["runtimeValue"]["constant"] == "latest_blessed" and "warm_start_model_uri" not in train
    assert not any(
        name.startswith("warm_start_") for name in ir["components"]["comp-train"]["inputDefinitions"]["parameters"]
    )
    assert compile_cli(DEMO, tmp_path / "none.yaml") == 0
    assert not [note for note in capsys.readouterr().err.splitlines() if note.startswith("train:")]


def test_tasks_are_wired_typed_and_run_the_entrypoint(tmp_path):
    assert compile_cli(DEMO, tmp_path / "p.yaml", "--image", "registry.example/kflow:1.2.3") == 0
    ir, _ = load_ir(tmp_path / "p.yaml")
    tasks = ir["root"]["dag"]["tasks"]
    assert tasks["transform"]["dependentTasks"] == ["ingest"]
    assert sorted(tasks["train"]["dependentTasks"]) == ["ingest", "transform"]
    assert sorted(tasks["evaluate"]["dependentTasks"]) == ["evaluate-baseline", "ingest", "train"]
    model_ref = tasks["evaluate"]["inputs"]["artifacts"]["model"]["taskOutputArtifact"]
    assert model_ref == {"outputArtifactKey": "model", "producerTask": "train"}
    train = ir["components"]["comp-train"]
    assert train["inputDefinitions"]["artifacts"]["examples"]["artifactType"]["schemaTitle"] == "system.Dataset"
    assert train["outputDefinitions"]["artifacts"]["model"]["artifactType"]["schemaTitle"] == "system.Model"
    assert train["inputDefinitions"]["parameters"]["epochs"]["parameterType"] == "NUMBER_INTEGER"
    assert train["inputDefinitions"]["parameters"]["learning_rate"]["parameterType"] == "NUMBER_DOUBLE"
    assert ir["components"]["comp-ingest"]["inputDefinitions"]["parameters"]["split"]["parameterType"] == "STRUCT"
    assert tasks["train"]["inputs"]["parameters"]["epochs"]["runtimeValue"]["constant"] == 20
    container = ir["deploymentSpec"]["executors"]["exec-train"]["container"]
    assert container["image"] == "registry.example/kflow:1.2.3"
    assert container["command"] == ["python", "-m", "kflow.pipeline.runners.kfp_entrypoint"]
    assert container["args"][:2] == ["--component", "kflow.components.trainer.component:Trainer"]
    assert "model={{$.outputs.artifacts['model'].path}}" in container["args"]
    assert "epochs={{$.inputs.parameters['epochs']}}" in container["args"]
    # Unset optional parameters are left out: the entrypoint binds the spec's default, as `kflow run` does.
    assert "steps_per_epoch" not in train["inputDefinitions"]["parameters"]


def test_resources_caching_and_overrides_come_from_the_kubeflow_section(tmp_path):
    code = compile_cli(
        DEMO,
        tmp_path / "p.yaml",
        "--set",
        "kubeflow={caching: false, resources: {train: {cpu: '2', memory: 4Gi, memory_limit: 8Gi, gpu: 1}}}",
    )
    assert code == 0
    ir, _ = load_ir(tmp_path / "p.yaml")
    assert {task["cachingOptions"].get("enableCache", False) for task in ir["root"]["dag"]["tasks"].values()} == {False}
    resources = ir["deploymentSpec"]["executors"]["exec-train"]["container"]["resources"]
    assert resources["cpuRequest"] == 2
    assert resources["memoryRequest"] == pytest.approx(4 * 2**30 / 1e9)
    assert resources["memoryLimit"] == pytest.approx(8 * 2**30 / 1e9)
    assert resources["accelerator"]["resourceCount"] == "1"
    assert resources["accelerator"]["resourceType"] == "nvidia.com/gpu"
    assert "resources" not in ir["deploymentSpec"]["executors"]["exec-ingest"]["container"]


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("kubeflow.resources.train.cpu=lots", "kubeflow.resources.train.cpu"),
        ("kubeflow.resources.trian={cpu: '1'}", "kubeflow.resources.trian"),
        ("kubeflow.caching=maybe", "kubeflow.caching"),
        ("kubeflow.imagee=x", "kubeflow.imagee"),  # unknown field, did you mean kubeflow.image
        ("kubeflow.tfjob={timeout_seconds: 60}", "kubeflow.tfjob"),  # renamed kubeflow.cluster
    ],
)
def test_a_bad_kubeflow_field_exits_2_naming_it(override, field, tmp_path, capsys):
    assert compile_cli(DEMO, tmp_path / "p.yaml", "--set", override) == 2
    assert f"{field}:" in capsys.readouterr().err
    assert not (tmp_path / "p.yaml").exists()


def test_the_compiler_imports_neither_tensorflow_nor_executors(tmp_path):
    code = (
        "import sys; from kflow.pipeline.cli.main import main;"
        f"assert main(['compile', {str(DEMO)!r}, '-o', {str(tmp_path / 'p.yaml')!r}, '--image', 'k:1']) == 0;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras', 'apache_beam')"
        " or m.endswith('.executor'));"
        "assert not bad, bad"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


def test_every_artifact_type_maps_to_a_kfp_schema():
    titles = {name: kfp_artifact_class(kind).schema_title for name, kind in ARTIFACT_TYPES.items()}
    assert titles["Examples"] == "system.Dataset" and titles["Model"] == "system.Model"
    assert titles["ModelEvaluation"] == "system.Metrics" and titles["Schema"] == "system.Artifact"

    class Odd(Artifact):
        type_name = "Odd"
        kfp_schema_title = "system.Unknown"

    with pytest.raises(ValueError, match="system.Unknown"):
        kfp_artifact_class(Odd)


def test_a_distributed_trainer_launches_a_trainjob_with_the_same_entrypoint(tmp_path):
    produce = Produce("produce", parameters={"value": 3})
    add = ClusterAdd("add", left=produce.outputs["numbers"], right=produce.outputs["numbers"])
    pipeline = Pipeline("toy", [produce, add])
    settings = KubeflowSettings(image="img:1", namespace="team-a", retries=2)
    compile_pipeline(pipeline, settings, tmp_path / "p.yaml")
    ir, platform = load_ir(tmp_path / "p.yaml")
    container = ir["deploymentSpec"]["executors"]["exec-add"]["container"]
    assert container["command"] == ["python", "-m", "kflow.pipeline.kubeflow.job_launcher"]
    args = container["args"]
    assert {
        "--replica=chief=1",
        "--replica=worker=3",
        "--replica=ps=1",
        "--namespace=team-a",
        "--image=img:1",
        "--backend=trainjob",
        "--framework=tensorflow",
        "--max-restarts=0",
        "--service-account=kflow-training",
    } <= set(args)
    # The launcher owns its job through its own pod, which it learns from the Downward API.
    executor = platform[0]["platforms"]["kubernetes"]["deploymentSpec"]["executors"]["exec-add"]
    assert executor["fieldPathAsEnv"] == [
        {"name": "KFLOW_POD_NAME", "fieldPath": "metadata.name"},
        {"name": "KFLOW_POD_UID", "fieldPath": "metadata.uid"},
        {"name": "KFLOW_POD_NAMESPACE", "fieldPath": "metadata.namespace"},
    ]
    # KFP retries every other task with backoff; the cluster restarts under its own failure policy.
    tasks = ir["root"]["dag"]["tasks"]
    assert tasks["produce"]["retryPolicy"] == {
        "maxRetryCount": 2,
        "backoffDuration": "30s",
        "backoffFactor": 2.0,
        "backoffMaxDuration": "600s",
    }
    assert "retryPolicy" not in tasks["add"]
    entrypoint = args[args.index("--") + 1 :]
    assert entrypoint[:5] == [
        "python",
        "-m",
        "kflow.pipeline.runners.kfp_entrypoint",
        "--component",
        f"{ClusterAdd.__module__}:ClusterAdd",
    ]
    mounts = executor["pvcMount"]
    assert [(m["constant"], m["mountPath"]) for m in mounts] == [("kflow-shared", "/mnt/kflow-shared")]
    assert (
        ir["deploymentSpec"]["executors"]["exec-produce"]["container"]["command"][-1]
        == "kflow.pipeline.runners.kfp_entrypoint"
    )


def test_compile_writes_the_default_output_and_reports_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["compile", str(DEMO), "--image", "kflow:0.1.0"]) == 0
    assert json.loads(json.dumps(load_ir(tmp_path / "pipeline.yaml")[0]))["pipelineInfo"]["name"] == "demo"
    assert "pipeline.yaml" in capsys.readouterr().out


def test_trainer_workers_in_the_config_make_the_train_task_a_job_launcher(tmp_path, monkeypatch):
    from kflow.pipeline.app import commands

    def with_workers(*args, **kwargs):
        config, settings = load_compile_config(*args, **kwargs)
        trainer = config.trainer.model_copy(update={"strategy": "multi_worker_mirrored", "workers": 4})
        return dataclasses.replace(config, trainer=trainer), settings

    monkeypatch.setattr(commands, "load_compile_config", with_workers)
    commands.compile_config(str(DEMO), tmp_path / "p.yaml", [], image="kflow:0.1.0")
    ir, platform = load_ir(tmp_path / "p.yaml")
    train = ir["deploymentSpec"]["executors"]["exec-train"]["container"]
    assert train["command"][-1] == "kflow.pipeline.kubeflow.job_launcher"
    assert {"--replica=worker=4", "--max-restarts=2"} <= set(train["args"])  # trainer.max_restarts: 2 by default
    ingest = ir["deploymentSpec"]["executors"]["exec-ingest"]["container"]
    assert ingest["command"][-1] == "kflow.pipeline.runners.kfp_entrypoint"
    assert "exec-train" in platform[0]["platforms"]["kubernetes"]["deploymentSpec"]["executors"]


def test_a_jax_strategy_compiles_to_a_jaxjob_launcher(tmp_path, run_kflow):
    result = run_kflow(
        "compile", DEMO, "-o", tmp_path / "p.yaml", "--image", "kflow:0.1.0",
        "--set", "trainer.strategy=keras_data_parallel", "--set", "trainer.workers=2", "--set", "trainer.devices=2",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    ir, _ = load_ir(tmp_path / "p.yaml")
    args = ir["deploymentSpec"]["executors"]["exec-train"]["container"]["args"]
    launcher = args[: args.index("--")]
    assert {"--framework=jax", "--backend=trainjob", "--replica=worker=2"} <= set(launcher)


def test_kubeflow_training_tfjob_keeps_the_training_operator(tmp_path):
    code = compile_cli(
        DEMO, tmp_path / "p.yaml", "--set", "trainer.strategy=multi_worker_mirrored", "--set", "trainer.workers=2",
        "--set", "kubeflow.training=tfjob",
    )  # fmt: skip
    assert code == 0
    args = load_ir(tmp_path / "p.yaml")[0]["deploymentSpec"]["executors"]["exec-train"]["container"]["args"]
    assert "--backend=tfjob" in args[: args.index("--")]


def test_train_resources_go_to_every_replica_and_the_launcher_task_gets_small_requests(tmp_path):
    """chief + 3 workers + 1 PS: the compiled launcher arguments, rendered as the launcher renders its job."""
    from kflow.pipeline.kubeflow.job_launcher import parse_arguments, requested_job
    from kflow.pipeline.kubeflow.tfjob import render_tfjob
    from kflow.pipeline.kubeflow.trainjob import render_runtime

    settings = kubeflow_settings(
        {
            "image": "img:1",
            "resources": {
                "add": {
                    "cpu": "4",
                    "memory": "8Gi",
                    "gpu": 1,
                    "node_selector": {"pool": "gpu"},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "roles": {"ps": {"cpu": "2", "gpu": 0, "node_selector": {"pool": "cpu"}}},
                }
            },
        }
    )
    produce = Produce("produce")
    add = ClusterAdd("add", left=produce.outputs["numbers"], right=produce.outputs["numbers"])
    compile_pipeline(Pipeline("toy", [produce, add]), settings, tmp_path / "p.yaml")
    ir, _ = load_ir(tmp_path / "p.yaml")
    container = ir["deploymentSpec"]["executors"]["exec-add"]["container"]
    resources = container["resources"]
    assert (resources["resourceCpuRequest"], resources["resourceMemoryRequest"]) == ("100m", "256Mi")
    assert resources["resourceMemoryLimit"] == "1Gi" and "accelerator" not in resources
    options, entrypoint = parse_arguments(container["args"])
    job = requested_job(options, "add-1a2b", "kubeflow", entrypoint)
    runtime = render_runtime(job)
    pods = {
        rjob["name"]: rjob["template"]["spec"]["template"]["spec"]
        for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]
    }
    tfjob = render_tfjob(job)
    assert model_differences(runtime) == [] and model_differences(tfjob) == []
    tfjob_pods = {kind.lower(): spec["template"]["spec"] for kind, spec in tfjob["spec"]["tfReplicaSpecs"].items()}
    for found in (pods, tfjob_pods):
        for role in ("chief", "worker"):
            assert found[role]["containers"][0]["resources"] == {
                "requests": {"cpu": "4", "memory": "8Gi"},
                "limits": {"nvidia.com/gpu": 1},
            }
            assert found[role]["nodeSelector"] == {"pool": "gpu"}
            assert found[role]["tolerations"][0]["key"] == "nvidia.com/gpu"
        assert found["ps"]["containers"][0]["resources"] == {"requests": {"cpu": "2", "memory": "8Gi"}}
        assert found["ps"]["nodeSelector"] == {"pool": "cpu"}


def test_compile_without_an_image_exits_2_naming_kubeflow_image(tmp_path, capsys):
    assert main(["compile", str(DEMO), "-o", str(tmp_path / "p.yaml")]) == 2
    assert "kubeflow.image: is required to compile" in capsys.readouterr().err
    assert not (tmp_path / "p.yaml").exists()
    with pytest.raises(ValueError, match="kubeflow.image: is required"):
        compile_pipeline(Pipeline("toy", [Produce("produce")]), KubeflowSettings(), tmp_path / "p.yaml")


def test_a_whole_number_for_a_float_setting_compiles(tmp_path):
    """YAML reads `1` as an int; KFP's type check wants a float for a float input (it raised a traceback)."""
    code = compile_cli(
        DEMO, tmp_path / "p.yaml", "--set", "trainer.optimizer.learning_rate=1", "--set", "trainer.stall_timeout=60"
    )
    assert code == 0
    parameters = load_ir(tmp_path / "p.yaml")[0]["root"]["dag"]["tasks"]["train"]["inputs"]["parameters"]
    assert parameters["learning_rate"]["runtimeValue"]["constant"] == 1.0
    assert parameters["stall_timeout"]["runtimeValue"]["constant"] == 60.0


def test_compile_refuses_what_validate_refuses_where_it_reads_the_data_and_says_all_at_once(tmp_path, capsys):
    """A label the table lacks and a tuner metric the task has not (a user trial compiled both, exit 0, a pipeline
    that would fail on the cluster): with the data readable here, compile refuses them in validate's lines, beside a
    missing image; a source only the pods read (an object store) compiles unread."""
    iris = REPO / "pipeline" / "configs" / "data" / "iris.csv"
    config = {
        "name": "t", "data": {"dataset": "csv", "source": {"path": str(iris)}, "label": "specie"},
        "tuner": {"search_space": {"trainer.batch_size": {"choice": [16, 32]}}, "objective": {"metric": "val_acc"}},
    }  # fmt: skip
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(config))
    assert main(["validate", str(tmp_path / "t.yaml")]) == 2
    refused = _problems(capsys.readouterr().err)
    assert any("data.label: 'specie' is not a column" in line for line in refused), refused
    assert main(["compile", str(tmp_path / "t.yaml"), "-o", str(tmp_path / "p.yaml")]) == 2
    said = _problems(capsys.readouterr().err)
    assert said[0].startswith("kubeflow.image: is required to compile") and said[1:] == refused, said
    assert not (tmp_path / "p.yaml").exists()

    config["data"]["label"] = "species"  # the metric alone, found from the data's task
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(config))
    assert compile_cli(tmp_path / "t.yaml", tmp_path / "p.yaml") == 2
    assert "tuner.objective.metric: a classification trains with val_loss, val_accuracy, not val_acc" in (
        capsys.readouterr().err
    )
    config["data"]["source"]["path"] = "s3://bucket/iris.csv"
    config["tuner"]["objective"]["metric"] = "val_loss"
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(config))
    assert compile_cli(tmp_path / "t.yaml", tmp_path / "p.yaml") == 0 and (tmp_path / "p.yaml").is_file()


def _problems(err: str) -> list[str]:
    """A ConfigError's problem lines as the CLI prints them: one after `kflow: FILE: `, or several indented."""
    first, *rest = err.strip().splitlines()
    return [line.strip() for line in rest] if first.endswith("invalid config:") else [first.split(": ", 2)[2]]


def test_compile_refuses_a_warm_start_from_a_run_id_which_the_pods_cannot_resolve(tmp_path, capsys):
    """A run id names a model among this machine's runs: compiled, the Trainer's pod failed ('was not resolved to a
    model'). Refused at compile, with what compiles."""
    assert compile_cli(DEMO, tmp_path / "p.yaml", "--set", "trainer.warm_start=20261128-042430-309093-27a5") == 2
    said = capsys.readouterr().err
    assert (
        "trainer.warm_start: run '20261128-042430-309093-27a5', one of this machine's, is resolved by kflow run "
        in said
    )
    assert not (tmp_path / "p.yaml").exists()
