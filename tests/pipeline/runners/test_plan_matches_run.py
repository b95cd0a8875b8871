"""`kflow plan` says what the following `kflow run` does, line for line, and its lines never contradict each other.

A declared pipeline with a branch that runs only on a blessed model (the toy components stand in for an ingest,
an Evaluator and a predictor: the runner and the plan see only specs and artifacts), through runs where nodes
are new, cached, edited and skipped; and the standard iris pipeline, cached and with an edited trainer setting.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner
from kflow.pipeline.runners.plan import format_plan, plan_pipeline
from tests.conftest import REPO
from tests.pipeline.toy.components import Double, Judge, Produce

# What each planned action may turn into when the run comes.
OUTCOMES = {
    "cached": {"cached"},
    "run": {"succeeded"},
    "skipped": {"skipped"},
    "run if blessed": {"succeeded", "skipped"},
}


def declared(value: int = 5, at_least: int = 3, new_value: int = 7) -> Pipeline:
    """ingest → evaluate (blesses when ingest's value reaches at_least); ingest_new → predict_new (only on a
    blessed model) → publish."""
    ingest = Produce("ingest", parameters={"value": value})
    evaluate = Judge("evaluate", numbers=ingest.outputs["numbers"], parameters={"at_least": at_least})
    ingest_new = Produce("ingest_new", parameters={"value": new_value})
    predict_new = Double("predict_new", numbers=ingest_new.outputs["numbers"], run_if=evaluate.outputs["blessing"])
    publish = Double("publish", numbers=predict_new.outputs["doubled"])
    return Pipeline("declared", [ingest, evaluate, ingest_new, predict_new, publish])


def planned_lines(pipeline: Pipeline, root) -> dict[str, tuple[str, str]]:
    """{node: (action, why)} read back from the lines `kflow plan` prints."""
    plans = plan_pipeline(pipeline, root)
    text = format_plan(pipeline, plans, root / pipeline.name)
    rows = text.splitlines()[2:]
    assert len(rows) == len(plans)
    lines = {}
    for plan, row in zip(plans, rows, strict=True):
        assert row.startswith(plan.node) and plan.action in row
        lines[plan.node] = (plan.action, row.split(plan.action, 1)[1].strip())
    return lines


def assert_consistent(lines: dict[str, tuple[str, str]]) -> None:
    """A line that blames another node's skip names a node that the plan skips too."""
    for node, (action, why) in lines.items():
        if action == "skipped" and why.endswith(" was skipped"):
            blamed = why.removesuffix(" was skipped")
            assert lines[blamed][0] == "skipped", f"{node}: {why!r}, but {blamed} is {lines[blamed][0]!r}"


def assert_run_as_planned(lines: dict[str, tuple[str, str]], record: dict) -> None:
    statuses = {node: entry["status"] for node, entry in record["components"].items()}
    assert set(statuses) == set(lines)
    for node, (action, why) in lines.items():
        assert statuses[node] in OUTCOMES[action], f"{node}: planned {action} ({why}), ran {statuses[node]}"
        if action == "skipped":  # the run gives the same reason
            assert record["components"][node]["summary"]["skipped"] == why


def step(pipeline: Pipeline, root) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    lines = planned_lines(pipeline, root)
    assert_consistent(lines)
    result = BeamDagRunner().run(pipeline, root)
    assert_run_as_planned(lines, result.record)
    return lines, {node: entry["status"] for node, entry in result.record["components"].items()}


def test_a_declared_pipeline_runs_as_planned_through_new_cached_edited_and_skipped_nodes(tmp_path):
    # New: everything runs; the branch on the verdict runs if the model is blessed, and it is.
    lines, ran = step(declared(), tmp_path)
    assert lines["ingest_new"] == ("run", "new") and lines["predict_new"][0] == lines["publish"][0] == "run if blessed"
    assert ran["predict_new"] == ran["publish"] == "succeeded"

    # The new data edited, the verdict cached and positive: the branch runs (never "skipped: ingest_new ...").
    lines, _ = step(declared(new_value=8), tmp_path)
    assert lines["ingest"][0] == lines["evaluate"][0] == "cached"
    assert lines["ingest_new"] == ("run", "parameters: value")
    assert lines["predict_new"] == ("run", "inputs: numbers") and lines["publish"] == ("run", "inputs: numbers")

    # A stricter gate: the verdict is unknown until evaluate runs, and it refuses the model.
    lines, ran = step(declared(new_value=8, at_least=9), tmp_path)
    assert lines["evaluate"] == ("run", "parameters: at_least") and lines["ingest_new"][0] == "cached"
    assert lines["predict_new"][0] == lines["publish"][0] == "run if blessed"  # not "cached": they may not run
    assert lines["predict_new"][1].startswith("reused from run ")
    assert ran["predict_new"] == ran["publish"] == "skipped"

    # The refusal cached, the new data edited again: the new data is ingested, the branch skipped, said once each.
    lines, _ = step(declared(new_value=9, at_least=9), tmp_path)
    assert lines["evaluate"][0] == "cached" and lines["ingest_new"] == ("run", "parameters: value")
    assert lines["predict_new"] == ("skipped", "evaluate.blessing: the model is not blessed")
    assert lines["publish"] == ("skipped", "predict_new was skipped")


def kflow(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "kflow.pipeline.cli.main", *args]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # ~40 s: two iris runs and their plans (tests/pipeline/cli/test_plan.py: a data edit too)
def test_the_standard_pipeline_runs_as_planned_cached_and_edited(tmp_path):
    config = REPO / "pipeline" / "configs" / "iris.yaml"
    common = [str(config), "--pipeline-root", str(tmp_path), "--set", "trainer.epochs=2"]
    for edit in ([], ["--set", "trainer.batch_size=8"]):
        planned = kflow("plan", *common, *edit, "--json")
        assert planned.returncode == 0, planned.stderr[-2000:]
        components = json.loads(planned.stdout)["components"]
        lines = {node: (entry["action"], "; ".join(entry["why"])) for node, entry in components.items()}
        assert_consistent(lines)
        ran = kflow("run", *common, *edit)
        assert ran.returncode in (0, 1), ran.stderr[-2000:]  # 1: a 2-epoch model may not be blessed
        record = json.loads(sorted(tmp_path.glob("iris/*/run.json"))[-1].read_text())
        assert_run_as_planned(lines, record)
    assert lines["ingest"][0] == "cached" and lines["train"] == ("run", "parameters: batch_size")


def test_why_a_node_reruns_counts_a_grown_folders_files_and_names_a_few():
    """An image folder grown by a class differs by hundreds of files: `kflow plan` and `kflow diff` count them and name
    five, where they listed every one on one line; a few changed files are still named each."""
    from kflow.pipeline.runners.plan import changes, facts

    def folder(names, edited=()):
        files = [{"path": f"/data/{name}", "sha256": "edited" if name in edited else name} for name in names]
        return facts("v1", {}, {}, {"files": files})

    before = folder([f"{index}.png" for index in range(10)])
    grown = folder([f"{index}.png" for index in range(2, 40)], edited={"5.png"})
    assert changes(before, grown) == [
        "data: 33 files (30 new, 1 changed, 2 gone: 0.png, 1.png, 10.png, 11.png, 12.png, …)"
    ]
    assert changes(before, folder([f"{index}.png" for index in range(10)], edited={"3.png", "4.png"})) == [
        "data: 3.png, 4.png"
    ]


def test_files_of_one_name_in_several_folders_are_told_apart_by_their_folder():
    """An image folder's classes often name their files alike (0001.jpg in each): a changed one is said with its
    class folder, not hidden behind the other class's file of that name."""
    from kflow.pipeline.runners.plan import changes, facts

    def folder(edited=""):
        files = [{"path": f"/d/{c}/0001.jpg", "sha256": "x" if c == edited else c} for c in ("cat", "dog")]
        return facts("v1", {}, {}, {"files": files})

    assert changes(folder(), folder(edited="dog")) == ["data: dog/0001.jpg"]
