"""A local cluster's processes started early (warm_workers.py): a REAL warm cluster trains in place of a new one;
a warm process started with other early variables is not taken but stopped; what nothing takes ends with the run."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from kflow.components.trainer import launcher, warm_workers
from kflow.components.trainer.config import TrainConfig
from kflow.components.trainer.warm_workers import ClusterShape, WarmCluster
from tests.components.fixtures import cluster_spec, write_examples, write_schema

# A stand-in for a warm worker where the test is about the hand-over, not the training: it echoes its job.
ECHO = "import sys, json; job = sys.stdin.readline(); print(json.dumps({'job': job}), flush=True)"


def echo_spawn(command, env):
    return subprocess.Popen(
        [sys.executable, "-c", ECHO],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a group of its own, as a cluster process has (process_group.spawn)
    )


def test_a_process_with_the_early_variables_it_would_get_is_taken_and_told_the_late_ones():
    import contextlib

    environments = {"worker-0": {"KERAS_BACKEND": "jax", "PROCESS_ID": "0"}, "worker-1": {"KERAS_BACKEND": "jax"}}
    shape = ClusterShape("jax_data_parallel", (("worker", 2),), None, False)
    cluster = WarmCluster(shape, environments, echo_spawn, [], contextlib.ExitStack())
    waiting = dict(cluster._waiting)
    try:
        taken = cluster.take("worker-0", {"KERAS_BACKEND": "jax", "PROCESS_ID": "0", "COORDINATOR_PORT": "5"}, ["a"])
        assert taken is waiting["worker-0"]
        job = json.loads(json.loads(taken.stdout.readline())["job"])
        assert job == {"environment": {"PROCESS_ID": "0", "COORDINATOR_PORT": "5"}, "argv": ["a"]}
        # A variable `import tensorflow` sets in the run's process after the warm-up began: still taken.
        cluster._waiting["worker-0"] = waiting["worker-0"] = echo_spawn(None, None)
        late_import = {"KERAS_BACKEND": "jax", "PROCESS_ID": "0", "ENABLE_RUNTIME_UPTIME_TELEMETRY": "1",
                       "HDF5_PLUGIN_PATH": "disable"}  # fmt: skip
        assert cluster.take("worker-0", late_import, ["b"]) is waiting["worker-0"]
        # An early variable that differs (the backend is read as the libraries load): not taken, stopped.
        assert cluster.take("worker-1", {"KERAS_BACKEND": "tensorflow"}, ["a"]) is None
        assert waiting["worker-1"].poll() is not None
        assert cluster.take("worker-1", {"KERAS_BACKEND": "jax"}, ["a"]) is None  # Taken once only.
    finally:
        cluster.close()
    assert all(process.wait(timeout=10) is not None for process in waiting.values())


def test_every_variable_the_libraries_set_as_they_load_is_known_to_be_set_by_imports():
    """The run's process imports TensorFlow, Keras, JAX, scikit-learn (Transform, the Evaluator) after its warm
    cluster started, and each sets variables a warm process sets alike when it loads them: a variable left out of
    SET_BY_IMPORTS has every warm process stopped and started anew (TF2_BEHAVIOR did so after any Transform)."""
    probe = (
        "import json, os\n"
        "before = dict(os.environ)\n"
        "import tensorflow, keras, jax, sklearn\n"
        "try:\n    import tensorflow_text\nexcept ImportError:\n    pass\n"
        "print(json.dumps(sorted(k for k in os.environ if os.environ.get(k) != before.get(k))))\n"
    )
    # A bare environment: this test's process has imported them already, and its children would inherit all.
    environment = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TMPDIR") if key in os.environ}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environment, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    set_by_imports = set(json.loads(done.stdout.splitlines()[-1]))
    assert "TF2_BEHAVIOR" in set_by_imports  # the probe sees what importing TensorFlow sets
    assert set_by_imports <= warm_workers.SET_BY_IMPORTS


def test_what_nothing_takes_is_stopped_when_the_run_ends():
    import contextlib

    closed = []
    network = contextlib.ExitStack()
    network.callback(lambda: closed.append(True))
    shape = ClusterShape("multi_worker_mirrored", (("worker", 2),), None, False)
    with warm_workers.warm_cluster(lambda: WarmCluster(shape, {"worker-0": {}}, echo_spawn, [], network)):
        cluster = warm_workers.claim(shape)
        assert cluster is not None and warm_workers.claim(shape) is None  # One launcher takes it.
        warm_workers.offer(cluster)
        (process,) = cluster._waiting.values()
    assert process.wait(timeout=10) is not None and closed == [True]
    assert warm_workers.claim(shape) is None


@pytest.mark.distributed
def test_a_warm_cluster_trains_in_place_of_a_new_one(tmp_path):
    examples, schema = write_examples(tmp_path / "examples"), write_schema(tmp_path / "schema")
    config = TrainConfig(strategy="multi_worker_mirrored", epochs=1, batch_size=32, seed=3)
    spec = cluster_spec(tmp_path, examples, schema, config)
    parameters = {"dataset": "mnist", "strategy": "multi_worker_mirrored", "workers": 2}
    started, sink = {}, io.StringIO()
    with launcher.warm_up(parameters):
        warm = warm_workers._WARM[launcher.cluster_shape("multi_worker_mirrored", 2, 0, None, False)]
        warm_pids = {name: process.pid for name, process in warm._waiting.items()}
        launcher.launch(spec, spec_dir=tmp_path / "launch", workers=2, sink=sink, on_start=started.update, timeout=300)
    assert {name: process.pid for name, process in started.items()} == warm_pids
    history = json.loads((tmp_path / "run" / "history.json").read_text())
    assert history["replicas"] == 2 and history["final_step"] == 13  # ceil(400 / 32) steps
    digests = {json.loads(path.read_text())["weights_sha256"] for path in (tmp_path / "run" / "workers").glob("*.json")}
    assert len(digests) == 1
    assert all(process.poll() is not None for process in started.values())
