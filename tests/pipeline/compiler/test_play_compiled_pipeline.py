"""The compiled pipeline.yaml really runs: play its tasks' container commands and compare with `kflow run`."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kfp import components, dsl

from kflow.pipeline.compiler import KubeflowSettings, compile_pipeline
from kflow.pipeline.dsl.dag import Pipeline
from tests.conftest import REPO, shared_dataset
from tests.pipeline.compiler.kfp_player import play
from tests.pipeline.toy.components import Add, Double, Produce

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"
MNIST = REPO / "pipeline" / "configs" / "mnist.yaml"


def toy_pipeline(fail=False):
    produce = Produce("produce", parameters={"value": 3, "label": "x=y"})
    double = Double("double", numbers=produce.outputs["numbers"], parameters={"fail": fail})
    add = Add("add", left=produce.outputs["numbers"], right=double.outputs["doubled"], parameters={"add": 10})
    return Pipeline("toy", [add, double, produce])


def test_a_played_toy_pipeline_passes_artifacts_and_parameters_along(tmp_path):
    package = compile_pipeline(toy_pipeline(), KubeflowSettings(image="kflow:test"), tmp_path / "p.yaml")
    outputs = play(package, tmp_path / "root", cwd=REPO, timeout=120)
    assert (Path(outputs["produce"]["numbers"].path) / "value.txt").read_text() == "3"
    assert (Path(outputs["double"]["doubled"].path) / "value.txt").read_text() == "6"
    assert (Path(outputs["add"]["total"].path) / "value.txt").read_text() == "19"


def test_a_failing_task_fails_the_played_pipeline_with_its_error(tmp_path):
    package = compile_pipeline(toy_pipeline(fail=True), KubeflowSettings(image="kflow:test"), tmp_path / "p.yaml")
    with pytest.raises(RuntimeError, match="task double exited 1") as failure:
        play(package, tmp_path / "root", cwd=REPO, timeout=120)
    assert "asked to fail" in str(failure.value)
    assert not (tmp_path / "root" / "add").exists()


@pytest.fixture(scope="module")
def demo_both_ways(tmp_path_factory):
    """The demo run by `kflow run` and by playing its compiled pipeline.yaml (about 40 s each)."""
    tmp = tmp_path_factory.mktemp("demo")
    local = subprocess.run(
        [sys.executable, "-m", "kflow.pipeline.cli.main", "run", str(DEMO), "--pipeline-root", str(tmp / "local")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert local.returncode == 0, local.stderr[-3000:]
    (run_dir,) = [path.parent for path in (tmp / "local" / "demo").glob("*/run.json")]
    compiled = subprocess.run(
        [
            sys.executable,
            "-m",
            "kflow.pipeline.cli.main",
            "compile",
            str(DEMO),
            "-o",
            str(tmp / "pipeline.yaml"),
            "--image",
            "kflow:test",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    played = play(tmp / "pipeline.yaml", tmp / "played", cwd=REPO)
    return run_dir, played


@pytest.mark.slow  # With the demo plays (about 80 s); make test plays the toy and declared pipelines.
def test_the_played_demo_ingests_the_same_splits_as_kflow_run(demo_both_ways):
    run_dir, played = demo_both_ways
    local_stats = json.loads((run_dir / "ingest" / "examples" / "stats.json").read_text())
    played_stats = json.loads((Path(played["ingest"]["examples"].path) / "stats.json").read_text())
    assert played_stats == local_stats
    assert played_stats["read"] == 1797
    played_examples = Path(played["ingest"]["examples"].path)
    for split in ("train", "eval", "test"):
        local_files = sorted(p.name for p in (run_dir / "ingest" / "examples" / f"Split-{split}").iterdir())
        assert sorted(p.name for p in (played_examples / f"Split-{split}").iterdir()) == local_files
    assert (Path(played["ingest"]["schema"].path) / "schema.pbtxt").read_text() == (
        run_dir / "ingest" / "schema" / "schema.pbtxt"
    ).read_text()


@pytest.mark.slow  # With the demo plays (about 80 s); make test plays the toy and declared pipelines.
def test_the_played_demo_trains_and_blesses_a_model_like_kflow_run(demo_both_ways):
    run_dir, played = demo_both_ways
    assert (run_dir / "evaluate" / "blessing" / "BLESSED").exists()
    assert (Path(played["evaluate"]["blessing"].path) / "BLESSED").exists()
    assert (Path(played["train"]["model"].path) / "model.keras").is_file()
    assert (Path(played["train"]["model"].path) / "Format-Serving" / "saved_model.pb").is_file()
    local = json.loads((run_dir / "evaluate" / "evaluation" / "metrics.json").read_text())
    remote = json.loads((Path(played["evaluate"]["evaluation"].path) / "metrics.json").read_text())
    assert remote["example_count"] == local["example_count"]
    assert remote["accuracy"] >= 0.95
    assert remote["accuracy"] == pytest.approx(local["accuracy"], abs=0.03)
    local_history = json.loads((run_dir / "train" / "model_run" / "history.json").read_text())
    played_history = json.loads((Path(played["train"]["model_run"].path) / "history.json").read_text())
    assert played_history["epochs"] == local_history["epochs"] == 20


@pytest.mark.slow  # With the demo plays (about 80 s); make test plays the toy and declared pipelines.
def test_the_played_evaluate_task_shows_its_metrics_to_kfp(demo_both_ways):
    """KFP reads the run page's metrics from the executor output's artifact metadata."""
    run_dir, played = demo_both_ways
    evaluation, classification = played["evaluate"]["evaluation"], played["evaluate"]["classification_metrics"]
    metrics = json.loads((Path(evaluation.path) / "metrics.json").read_text())
    assert isinstance(evaluation, dsl.Metrics) and isinstance(classification, dsl.ClassificationMetrics)
    assert evaluation.metadata["accuracy"] == pytest.approx(metrics["accuracy"])
    assert evaluation.metadata["example_count"] == metrics["example_count"]
    matrix = classification.metadata["confusionMatrix"]
    assert [spec["displayName"] for spec in matrix["annotationSpecs"]] == [str(label) for label in range(10)]
    cells = [row["row"] for row in matrix["rows"]]
    assert sum(map(sum, cells)) == metrics["example_count"]
    assert sum(cells[i][i] for i in range(10)) == round(metrics["accuracy"] * metrics["example_count"])


@pytest.mark.slow
@pytest.mark.real_data
def test_the_compiled_mnist_config_plays_to_the_same_blessed_model_as_kflow_run(tmp_path, run_kflow):
    """mnist.yaml on the real data, both ways (12 epochs each: about 7 minutes on 2 cores)."""
    data = shared_dataset("mnist")
    source = ("--set", f"data.source.path={data}")
    local = run_kflow("run", MNIST, "--pipeline-root", tmp_path / "local", *source, timeout=1800)
    assert local.returncode == 0, local.stderr[-3000:]
    (run_dir,) = [path.parent for path in (tmp_path / "local" / "mnist").glob("*/run.json")]
    compiled = run_kflow("compile", MNIST, "-o", tmp_path / "p.yaml", "--image", "kflow:test", *source)
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    assert components.load_component_from_file(str(tmp_path / "p.yaml")).name == "mnist"
    played = play(tmp_path / "p.yaml", tmp_path / "played", cwd=REPO, timeout=1800)

    assert json.loads((Path(played["ingest"]["examples"].path) / "stats.json").read_text()) == json.loads(
        (run_dir / "ingest" / "examples" / "stats.json").read_text()
    )
    local_metrics = json.loads((run_dir / "evaluate" / "evaluation" / "metrics.json").read_text())
    played_metrics = json.loads((Path(played["evaluate"]["evaluation"].path) / "metrics.json").read_text())
    assert (run_dir / "evaluate" / "blessing" / "BLESSED").exists()
    assert (Path(played["evaluate"]["blessing"].path) / "BLESSED").exists()
    assert played_metrics["example_count"] == local_metrics["example_count"] == 10000
    assert played_metrics["accuracy"] >= 0.99 and local_metrics["accuracy"] >= 0.99
    assert played_metrics["accuracy"] == pytest.approx(local_metrics["accuracy"], abs=0.003)
    assert played["evaluate"]["evaluation"].metadata["accuracy"] == pytest.approx(played_metrics["accuracy"])


@pytest.mark.slow  # With the demo plays (about 80 s); make test plays the toy and declared pipelines.
def test_the_played_evaluate_task_gives_the_kfp_ui_its_report_and_summary(demo_both_ways, tmp_path):
    """The system.HTML report is self-contained (plots embedded) and renders in headless Chromium; the statistics
    page is an HTML output too."""
    import shutil

    run_dir, played = demo_both_ways
    html = Path(played["evaluate"]["report_html"].path)
    assert isinstance(played["evaluate"]["report_html"], dsl.HTML)
    text = html.read_text()
    assert text == (Path(played["evaluate"]["evaluation"].path) / "report.html").read_text()
    assert text.count("<svg role='img'") >= 3 and not re.search(r"src=['\"]https?:", text)  # plots inline
    # The data's statistics page, the report's link, is an HTML output of its own in the KFP UI.
    assert isinstance(played["evaluate"]["statistics_html"], dsl.HTML)
    page = Path(played["evaluate"]["statistics_html"].path).read_text()
    local = Path(played["evaluate"]["evaluation"].path) / "statistics.html"
    assert page == local.read_text() if local.exists() else "computes no statistics" in page
    summary = Path(played["evaluate"]["summary_markdown"].path).read_text()
    metrics = json.loads((Path(played["evaluate"]["evaluation"].path) / "metrics.json").read_text())
    assert summary.startswith("## BLESSED") and f"| accuracy | {metrics['accuracy']:.4g} |" in summary

    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        pytest.skip("no Chromium on this machine to render the report")
    # The KFP UI reads an HTML artifact's content into an iframe; a file:// URL needs the extension instead.
    page = tmp_path / "report.html"
    shutil.copyfile(html, page)
    screenshot = tmp_path / "report.png"
    subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,4000",
         f"--screenshot={screenshot}", page.as_uri()],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    from matplotlib import image

    pixels = image.imread(screenshot)[..., :3]
    assert pixels.shape[:2] == (4000, 1280)
    # Plots are in colour: a page of text alone would be grey. Count clearly coloured pixels.
    saturation = pixels.max(axis=-1) - pixels.min(axis=-1)
    assert (saturation > 0.3).mean() > 0.01, f"the rendered report shows no plots ({screenshot})"


@pytest.mark.slow  # ~85 s (three plays); make test keeps the toy and declared plays and the resolver's compile test.
def test_a_compiled_csv_pipeline_with_a_user_module_plays_its_data_checks_model_and_baselines(tmp_path, run_kflow):
    """csv ingest → statistics → schema → validate → train (the user's module, carried inside pipeline.yaml) →
    evaluate, played task by task from the compiled pipeline; then played again as KFP would run it again
    (its cache kept, the epochs changed at run time): the second Evaluator gets the first run's blessed model
    as its baseline from the resolver task, through the store on the shared volume."""
    import yaml

    from tests.components.datasets.tabular_fixtures import write_iris

    volumes = tmp_path / "volumes"  # The player's stand-in for the cluster's volumes, kept across runs.
    config = {
        "name": "iris",
        "data": {"dataset": "csv", "source": {"path": str(write_iris(tmp_path / "iris.csv"))}, "label": "species",
                 "split": {"train": 8, "eval": 1, "test": 1}, "shards_per_split": 1},
        "trainer": {"module": str(REPO / "tests" / "pipeline" / "user" / "iris_model.py"), "epochs": 25,
                    "batch_size": 16, "optimizer": {"name": "adam", "learning_rate": 0.01}},
        "evaluator": {"thresholds": {"accuracy": {"lower_bound": 0.8, "max_drop": 0.5}}, "baseline": "latest_blessed"},
        "kubeflow": {"parameters": ["trainer.epochs"]},
    }  # fmt: skip
    (tmp_path / "iris.yaml").write_text(yaml.safe_dump(config))
    done = run_kflow("compile", tmp_path / "iris.yaml", "-o", tmp_path / "pipeline.yaml", "--image", "kflow:test")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "def build_model(schema, options)" in (tmp_path / "pipeline.yaml").read_text()  # The module travels inside.
    runs = {"cache": {}, "volumes": volumes}  # What KFP keeps from one run to the next.
    played = play(tmp_path / "pipeline.yaml", tmp_path / "played", cwd=REPO, **runs)
    tasks = [task for task in played if not task.endswith("-fingerprint")]
    data_steps = ["ingest", "statistics", "schema", "validate", "transform"]  # transform and validate: either first
    assert sorted(tasks[:5]) == sorted(data_steps) and tasks[5:] == ["train", "evaluate-baseline", "evaluate"]
    # The nodes that read outside files get a never-cached task that digests them (SchemaGen: data.schema).
    assert {task for task in played if task.endswith("-fingerprint")} == {"ingest-fingerprint", "schema-fingerprint"}
    anomalies = json.loads((Path(played["validate"]["anomalies"].path) / "anomalies.json").read_text())
    assert anomalies["count"] == 0
    model = Path(played["train"]["model"].path)
    assert (model / "assets" / "user_module.py").read_text() == (REPO / "tests/pipeline/user/iris_model.py").read_text()
    assert (Path(played["evaluate"]["blessing"].path) / "BLESSED").exists()
    metrics = json.loads((Path(played["evaluate"]["evaluation"].path) / "metrics.json").read_text())
    assert metrics["accuracy"] >= 0.8 and metrics["confusion_matrix"]["categories"] == [
        "setosa",
        "versicolor",
        "virginica",
    ]
    # First run: nothing blessed before, so no baseline; the blessed model is copied into the store.
    store = volumes / "kflow-shared" / "kflow-baselines" / "iris"
    assert played["evaluate-baseline"]["baseline_model_uri"] == ""
    (first_record,) = [json.loads(path.read_text()) for path in (store / "records").glob("*.json")]
    assert first_record["model_uri"] == str(model) and first_record["baseline_model"] is None
    first_copy = Path(first_record["model_path"])
    assert (first_copy / "model.keras").read_bytes() == (model / "model.keras").read_bytes()

    # Second run, other epochs: the data steps come from the cache, train and evaluate run, against the first model.
    again = play(tmp_path / "pipeline.yaml", tmp_path / "again", cwd=REPO, arguments={"trainer_epochs": 20}, **runs)
    assert sorted(task for task, outputs in again.items() if outputs.get("cached")) == sorted(data_steps)
    runs_of_train = [Path(run["train"]["model_run"].path) / "history.json" for run in (played, again)]
    # The run-time parameter reached the Trainer.
    assert [json.loads(path.read_text())["epochs"] for path in runs_of_train] == [25, 20]
    assert again["evaluate-baseline"]["baseline_model_uri"] == str(first_copy)
    blessing = json.loads((Path(again["evaluate"]["blessing"].path) / "blessing.json").read_text())
    assert blessing["baseline_model"] == str(first_copy)
    assert [(check["metric"], check["bound"]) for check in blessing["checks"]] == [
        ("accuracy", "lower_bound"), ("accuracy", "max_drop"), ("serving_predictions", "upper_bound"),
    ]  # fmt: skip
    assert all(check["baseline"] == metrics["accuracy"] for check in blessing["checks"] if check["bound"] == "max_drop")
    summary = Path(again["evaluate"]["summary_markdown"].path).read_text()  # What the KFP UI shows.
    assert f"Baseline model: `{first_copy}`" in summary
    assert f"TensorBoard logs of the training: `{again['train']['model_run'].uri}/logs`" in summary
    assert any((Path(again["train"]["model_run"].path) / "logs").rglob("events.out.tfevents.*"))

    # Third run, same arguments: train and evaluate are reused; the resolver does not offer the model as its own
    # baseline but the one it was blessed against, so the cached verdict stands.
    third = play(tmp_path / "pipeline.yaml", tmp_path / "third", cwd=REPO, arguments={"trainer_epochs": 20}, **runs)
    assert third["evaluate-baseline"]["baseline_model_uri"] == str(first_copy)
    assert [task for task, outputs in third.items() if not outputs.get("cached")] == [
        "ingest-fingerprint",
        "schema-fingerprint",
        "evaluate-baseline",
    ]  # fmt: skip (the never-cached resolvers)


@pytest.mark.slow  # ~20 s; make test keeps the compiled fingerprint tasks (test_compiler.py).
def test_on_kubeflow_an_ingest_is_reused_only_for_the_same_bytes(tmp_path):
    """KFP's cache keys a task by its arguments; the ingest's include its source files' digest, which a never-cached
    task computes first: an edit in place under the same path re-runs the ingest, the same bytes hit the cache."""
    from kflow.components.datasets.csv.ingest.component import CsvIngest

    source = tmp_path / "iris.csv"
    source.write_bytes((REPO / "pipeline" / "configs" / "data" / "iris.csv").read_bytes())
    ingest = CsvIngest("ingest", parameters={"source_path": str(source), "label": "species", "shards_per_split": 1})
    package = compile_pipeline(Pipeline("iris", [ingest]), KubeflowSettings(image="kflow:test"), tmp_path / "p.yaml")
    cache: dict = {}

    def run(name):
        outputs = play(package, tmp_path / name, cwd=REPO, timeout=300, cache=cache)
        return outputs["ingest"].get("cached", False), outputs["ingest-fingerprint"]["digest"]

    reused, digest = run("first")
    assert not reused and len(digest) == 64
    assert run("same-bytes") == (True, digest)  # the fingerprint task always runs; the ingest is reused
    lines = source.read_text().splitlines()
    lines[1] = "9.9" + lines[1][lines[1].index(",") :]  # one value changed in place: same path, same row count
    source.write_text("\n".join(lines) + "\n")
    reused, edited = run("edited")
    assert not reused and edited != digest
    (stats,) = (tmp_path / "edited").glob("ingest/**/stats.json")
    assert json.loads(stats.read_text())["read"] == 150
    assert run("edited-again") == (True, edited)
