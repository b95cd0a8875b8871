import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner, PipelineFailed
from kflow.pipeline.runners.node_runner import STAGING
from tests.pipeline.toy.components import Add, Double, Produce

REPO = Path(__file__).resolve().parents[3]


def chain(value=3, fail=False, sleep=0.0):
    produce = Produce("produce", parameters={"value": value})
    double = Double("double", numbers=produce.outputs["numbers"], parameters={"fail": fail, "sleep": sleep})
    return Pipeline("toy", [produce, double])


def read_value(uri):
    return int((Path(uri) / "value.txt").read_text())


def test_run_publishes_outputs_and_records_the_run(tmp_path):
    result = BeamDagRunner().run(chain(value=3), tmp_path)

    assert result.succeeded
    assert result.run_dir.parent == tmp_path / "toy"
    record = json.loads((result.run_dir / "run.json").read_text())
    assert record["status"] == "succeeded"
    assert list(record["components"]) == ["produce", "double"]
    double = record["components"]["double"]
    assert double["status"] == "succeeded"
    assert double["seconds"] >= 0
    assert double["parameters"] == {"fail": False, "sleep": 0.0}
    assert double["inputs"]["numbers"]["uri"] == str(result.run_dir / "produce" / "numbers")
    assert double["outputs"]["doubled"]["uri"] == str(result.run_dir / "double" / "doubled")
    assert double["summary"] == {"value": 6}
    assert read_value(double["outputs"]["doubled"]["uri"]) == 6
    assert not any((result.run_dir / STAGING).iterdir())


def test_second_run_is_cached_and_reuses_the_first_outputs(tmp_path):
    first = BeamDagRunner().run(chain(value=3), tmp_path)
    second = BeamDagRunner().run(chain(value=3), tmp_path)

    components = second.record["components"]
    assert {entry["status"] for entry in components.values()} == {"cached"}
    assert {entry["cached_from"] for entry in components.values()} == {first.record["run_id"]}
    assert components["double"]["outputs"] == first.record["components"]["double"]["outputs"]
    assert not (second.run_dir / "double").exists()


def test_a_changed_parameter_reruns_that_component_and_its_downstream_only(tmp_path):
    BeamDagRunner().run(chain(value=3), tmp_path)
    result = BeamDagRunner().run(chain(value=3, sleep=0.01), tmp_path)
    assert result.record["components"]["produce"]["status"] == "cached"
    assert result.record["components"]["double"]["status"] == "succeeded"

    third = BeamDagRunner().run(chain(value=4), tmp_path)
    assert [e["status"] for e in third.record["components"].values()] == ["succeeded", "succeeded"]
    assert read_value(third.record["components"]["double"]["outputs"]["doubled"]["uri"]) == 8


def test_parameters_that_do_not_affect_outputs_keep_the_cache(tmp_path):
    BeamDagRunner().run(Pipeline("toy", [Produce("produce", parameters={"label": "a"})]), tmp_path)
    result = BeamDagRunner().run(Pipeline("toy", [Produce("produce", parameters={"label": "b"})]), tmp_path)
    assert result.record["components"]["produce"]["status"] == "cached"


def test_a_changed_component_code_version_invalidates_the_cache(tmp_path, monkeypatch):
    BeamDagRunner().run(chain(), tmp_path)
    monkeypatch.setattr(Double, "code_version", classmethod(lambda cls: "edited"))
    result = BeamDagRunner().run(chain(), tmp_path)
    assert result.record["components"]["produce"]["status"] == "cached"
    assert result.record["components"]["double"]["status"] == "succeeded"


def test_no_cache_runs_everything(tmp_path):
    BeamDagRunner().run(chain(), tmp_path)
    result = BeamDagRunner(enable_cache=False).run(chain(), tmp_path)
    assert {e["status"] for e in result.record["components"].values()} == {"succeeded"}


def test_a_failing_component_fails_the_run_and_publishes_nothing(tmp_path):
    with pytest.raises(PipelineFailed, match="component 'double' failed: RuntimeError: asked to fail") as caught:
        BeamDagRunner().run(chain(fail=True), tmp_path)

    result = caught.value.result
    assert result.status == "failed"
    record = json.loads((result.run_dir / "run.json").read_text())
    assert record["status"] == "failed"
    assert record["components"]["produce"]["status"] == "succeeded"
    assert record["components"]["double"]["status"] == "failed"
    assert "asked to fail" in record["components"]["double"]["error"]
    assert not (result.run_dir / "double").exists()
    # The staged partial output is removed, not only kept out of the published layout.
    assert not list((result.run_dir / STAGING).iterdir())

    # A failed execution is never reused by the cache.
    retry = BeamDagRunner().run(chain(fail=False), tmp_path)
    assert retry.record["components"]["produce"]["status"] == "cached"
    assert retry.record["components"]["double"]["status"] == "succeeded"


def test_wiring_follows_artifacts_not_listing_order(tmp_path):
    left = Produce("left", parameters={"value": 2})
    right = Produce("right", parameters={"value": 5})
    total = Add("total", left=left.outputs["numbers"], right=right.outputs["numbers"], parameters={"add": 1})
    result = BeamDagRunner().run(Pipeline("toy", [total, right, left]), tmp_path)
    assert read_value(result.record["components"]["total"]["outputs"]["total"]["uri"]) == 8


def test_independent_branches_run_in_parallel_with_several_workers(tmp_path):
    left = Produce("left", parameters={"value": 2, "sleep": 1.5})
    right = Produce("right", parameters={"value": 5, "sleep": 1.5})
    total = Add("total", left=left.outputs["numbers"], right=right.outputs["numbers"])
    args = ["--direct_num_workers=2", "--direct_running_mode=multi_threading"]
    result = BeamDagRunner(beam_args=args).run(Pipeline("toy", [left, right, total]), tmp_path)

    intervals = [
        [
            float(x)
            for x in (Path(result.record["components"][n]["outputs"]["numbers"]["uri"]) / "interval.txt")
            .read_text()
            .split()
        ]
        for n in ("left", "right")
    ]
    (start_a, end_a), (start_b, end_b) = intervals
    assert start_a < end_b and start_b < end_a, f"branches did not overlap: {intervals}"
    assert read_value(result.record["components"]["total"]["outputs"]["total"]["uri"]) == 7


def test_until_runs_only_the_component_and_its_ancestors(tmp_path):
    pipeline = chain()
    result = BeamDagRunner().run(pipeline.until("produce"), tmp_path)
    assert list(result.record["components"]) == ["produce"]


KILLABLE = textwrap.dedent(
    """
    import sys
    from kflow.pipeline.dsl.dag import Pipeline
    from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner
    from tests.pipeline.toy.components import Double, Produce

    produce = Produce("produce", parameters={"value": 3})
    double = Double("double", numbers=produce.outputs["numbers"], parameters={"sleep": float(sys.argv[2])})
    BeamDagRunner().run(Pipeline("toy", [produce, double]), sys.argv[1])
    """
)


def test_a_killed_run_leaves_no_partial_artifact_and_the_rerun_reuses_finished_work(tmp_path):
    script = tmp_path / "killable.py"
    script.write_text(KILLABLE)
    root = tmp_path / "root"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, str(script), str(root), "60"], env=env, cwd=REPO)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            runs = list((root / "toy").glob("*/run.json"))
            # Kill only once the executor has begun writing: "running" is recorded just before it starts.
            partial = list((runs[0].parent / STAGING).glob("double-*/doubled/partial.txt")) if runs else []
            if partial and json.loads(runs[0].read_text())["components"].get("double", {}).get("status") == "running":
                break
            time.sleep(0.2)
        else:
            pytest.fail("the pipeline never reached the double component")
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    killed_run = runs[0].parent
    assert (killed_run / "produce" / "numbers" / "value.txt").exists()
    assert not (killed_run / "double").exists(), "a killed component must not publish"
    assert list((killed_run / STAGING).glob("double-*/doubled/partial.txt"))

    result = BeamDagRunner().run(chain(value=3, sleep=0.0), root)
    assert result.record["components"]["produce"]["status"] == "cached"
    assert result.record["components"]["produce"]["cached_from"] == killed_run.name
    assert result.record["components"]["double"]["status"] == "succeeded"


def test_an_executor_gets_a_working_dir_that_outlives_a_failed_execution_not_a_published_one(tmp_path):
    from tests.pipeline.toy.components import CountAttempts

    pipeline = Pipeline("toy", [CountAttempts("count", parameters={"value": 2})])
    with pytest.raises(PipelineFailed, match="attempt 1 of 2"):
        BeamDagRunner().run(pipeline, tmp_path)
    assert len(list((tmp_path / "toy" / ".work").iterdir())) == 1
    result = BeamDagRunner().run(pipeline, tmp_path)
    assert read_value(result.record["components"]["count"]["outputs"]["numbers"]["uri"]) == 2
    # Published: nothing left to resume, so the same execution without the cache starts afresh (a Trainer would
    # otherwise "resume" from its finished run's last checkpoint and train no step).
    assert list((tmp_path / "toy" / ".work").iterdir()) == []
    with pytest.raises(PipelineFailed, match="attempt 1 of 2"):
        BeamDagRunner(enable_cache=False).run(pipeline, tmp_path)


def test_a_node_after_running_ones_is_warmed_up_for_the_run_only_then(tmp_path):
    """Entered before the first node runs, left after the last; not for a node that runs first (its upstream cached)
    nor in a cached run; a warm-up that fails costs the node nothing."""
    from tests.pipeline.toy import executors
    from tests.pipeline.toy.components import WarmDouble

    def pipeline(sleep=0.0):
        produce = Produce("produce", parameters={"value": 4})
        double = WarmDouble("double", numbers=produce.outputs["numbers"], parameters={"sleep": sleep})
        return Pipeline("toy", [produce, double])

    executors.WARM_EVENTS.clear()
    result = BeamDagRunner().run(pipeline(), tmp_path)
    (entered, at), (left, until) = executors.WARM_EVENTS
    produce_started = float((result.run_dir / "produce" / "numbers" / "interval.txt").read_text().split()[0])
    doubled = result.run_dir / "double" / "doubled" / "value.txt"
    assert (entered, left) == ("entered", "left") and at <= produce_started and until >= doubled.stat().st_mtime
    assert read_value(doubled.parent) == 8
    executors.WARM_EVENTS.clear()
    cached = BeamDagRunner().run(pipeline(), tmp_path)
    assert {entry["status"] for entry in cached.record["components"].values()} == {"cached"}
    rerun = BeamDagRunner().run(pipeline(sleep=0.01), tmp_path)  # produce cached: double runs first
    assert rerun.record["components"]["double"]["status"] == "succeeded"
    assert executors.WARM_EVENTS == []
    executors.FAIL_WARM_UP = True
    try:
        failed_warm_up = BeamDagRunner(enable_cache=False).run(pipeline(), tmp_path)
    finally:
        executors.FAIL_WARM_UP = False
    assert failed_warm_up.succeeded and executors.WARM_EVENTS == []
