"""The ingests on Beam's portable path, as Flink, Spark and Dataflow run Python: PortableRunner with the
embedded job service, the SDK workers in a worker pool process started here (environment EXTERNAL), the
staged records under the pipeline's --temp_location. The outputs equal the DirectRunner's, record for record
and shard for shard; stats and rejects are identical."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest
import tensorflow as tf

from kflow.components.trainer.launcher import free_ports
from tests.components.datasets.mnist.ingest.conftest import random_arrays, write_npz
from tests.components.datasets.tabular_fixtures import write_iris
from tests.components.datasets.wikitext2.ingest.conftest import LONG, write_corpus


@pytest.fixture(scope="module")
def worker_pool():
    """A Beam SDK worker pool (apache_beam.runners.worker.worker_pool_main) on a free loopback port."""
    (port,) = free_ports(1)
    command = [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main", f"--service_port={port}"]
    # The pool starts each SDK worker as `python -c ...`: the PATH names this interpreter's folder first.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PATH=f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}")
    pool = subprocess.Popen(command, env=env, start_new_session=True, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if pool.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the Beam worker pool did not start (exit {pool.poll()})") from None
                time.sleep(0.2)
        yield f"localhost:{port}"
    finally:
        os.killpg(pool.pid, signal.SIGTERM)  # The pool and the SDK workers it started.
        try:
            pool.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(pool.pid, signal.SIGKILL)
            pool.wait()


@pytest.fixture(autouse=True)
def beams_own_temp(tmp_path, monkeypatch):
    """The embedded job service rebuilds the submitted pipeline as a Pipeline it never runs, whose temp folder Beam
    then never removes: made under the test's folder, not left in /tmp."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def portable_args(pool: str, temp: object) -> list[str]:
    return [
        "--runner=PortableRunner",
        "--job_endpoint=embed",
        "--environment_type=EXTERNAL",
        f"--environment_config={pool}",
        f"--temp_location={temp}",
    ]


def outputs(folder) -> dict:
    """{relative shard path: [records]} of the Examples, stats.json, rejects.jsonl."""
    shards = {
        str(path.relative_to(folder)): [record.numpy() for record in tf.data.TFRecordDataset(str(path), "GZIP")]
        for path in sorted((folder / "examples").rglob("*.gz"))
    }
    return {
        "shards": shards,
        "stats": (folder / "examples" / "stats.json").read_text(),
        "rejects": (folder / "rejects" / "rejects.jsonl").read_text(),
    }


def ingest_both_ways(run, tmp_path, pool, **parameters) -> tuple[dict, dict]:
    from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema

    results = []
    for name, beam_args in (("direct", []), ("portable", portable_args(pool, tmp_path / "beam-temp"))):
        folder = tmp_path / name
        artifacts = {"examples": Examples(folder / "examples"), "schema": Schema(folder / "schema")}
        run(**artifacts, rejects=Rejects(folder / "rejects"), beam_args=beam_args, **parameters)
        results.append(outputs(folder))
    assert not any((tmp_path / "beam-temp").iterdir()), "the staged records are removed"
    return results[0], results[1]


def test_csv_ingest(worker_pool, tmp_path):
    from kflow.components.datasets.csv.ingest.executor import run

    source = write_iris(tmp_path / "iris.csv", ["5.0,abc,1.4,0.2,setosa"])
    direct, portable = ingest_both_ways(
        run, tmp_path, worker_pool, source_path=str(source), label="species", max_invalid_fraction=0.05
    )
    assert sum(map(len, direct["shards"].values())) == 150 and '"bad_value"' in direct["rejects"]
    assert portable == direct


@pytest.mark.slow  # make test runs the csv ingest this way; about 8 s each.
def test_wikitext2_ingest(worker_pool, tmp_path):
    from kflow.components.datasets.wikitext2.ingest.executor import run

    lines = [f" {LONG}paragraph {number} .".encode() for number in range(300)]
    corpus = write_corpus(tmp_path / "wikitext-2", [b" = Title = ", *lines, b"short ."], lines[:20], lines[20:40])
    direct, portable = ingest_both_ways(run, tmp_path, worker_pool, source_path=str(corpus))
    assert sum(map(len, direct["shards"].values())) == 340
    assert portable == direct


@pytest.mark.slow  # make test runs the csv ingest this way; about 8 s each.
def test_mnist_ingest(worker_pool, tmp_path):
    from kflow.components.datasets.mnist.ingest.executor import run

    source = write_npz(tmp_path / "mnist", random_arrays())
    direct, portable = ingest_both_ways(run, tmp_path, worker_pool, source_path=str(source))
    assert sum(map(len, direct["shards"].values())) == 350
    assert portable == direct


@pytest.mark.slow  # About 8 s; make test runs the csv ingest this way.
def test_statistics_of_an_ingest(worker_pool, tmp_path):
    """StatisticsGen, the other data step, on the portable path: the same per-split statistics protos."""
    from kflow.components.datasets.csv.ingest.executor import run as ingest
    from kflow.components.statistics_gen.executor import run as statistics
    from kflow.pipeline.dsl.artifacts import Examples, ExampleStatistics, Rejects, Schema

    examples = Examples(tmp_path / "examples")
    ingest(
        examples=examples, schema=Schema(tmp_path / "schema"), rejects=Rejects(tmp_path / "rejects"),
        source_path=str(write_iris(tmp_path / "iris.csv")), label="species",
    )  # fmt: skip
    found = {}
    for name, beam_args in (("direct", []), ("portable", portable_args(worker_pool, tmp_path / "beam-temp"))):
        summary = statistics(examples=examples, statistics=ExampleStatistics(tmp_path / name), beam_args=beam_args)
        found[name] = summary, {path.parent.name: path.read_bytes() for path in (tmp_path / name).rglob("*.pb")}
    assert found["direct"][0]["train_examples"] == 120 and sorted(found["direct"][1]) == [
        "Split-eval", "Split-test", "Split-train"
    ]  # fmt: skip
    assert found["portable"] == found["direct"]
