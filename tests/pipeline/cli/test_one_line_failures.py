"""What `kflow` prints when something fails, as the real program: one line, once, escaped; and a reader of its
output that goes away (`kflow … | head -1`) is no error."""

import shutil
import subprocess
import sys

from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner
from tests.conftest import REPO
from tests.pipeline.cli.hostile_configs import IRIS_CSV
from tests.pipeline.toy.components import Produce

KFLOW = [sys.executable, "-m", "kflow.pipeline.cli.main"]


def piped_to_head(*args):
    """`kflow ARGS | head -1`: (kflow's exit code, what head printed, kflow's stderr)."""
    kflow = subprocess.Popen([*KFLOW, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    head = subprocess.run(["head", "-1"], stdin=kflow.stdout, capture_output=True, text=True)
    kflow.stdout.close()  # head has gone: kflow's next write meets a closed pipe
    return kflow.wait(timeout=120), head.stdout, kflow.stderr.read().decode()


def test_output_piped_into_head_exits_0_without_a_traceback(tmp_path):
    run = BeamDagRunner().run(Pipeline("toy", [Produce("produce")]), tmp_path).run_dir
    for copy in range(300):  # more than a pipe holds (64 KiB), so the write meets the closed pipe whatever the timing
        shutil.copytree(run, tmp_path / "toy" / f"{run.name}-{copy:03d}")
    for command in (["runs", tmp_path / "toy", "--json"], ["schema"]):
        code, first, err = piped_to_head(*command)
        assert (code, err) == (0, ""), command
        assert first in ("[\n", "{\n")


def test_a_csv_value_with_escape_codes_is_printed_escaped_in_the_one_error_line(tmp_path, run_kflow):
    rows = IRIS_CSV.read_text().splitlines()
    rows[6] = "\x1b[31mevil\x1b[2J," + rows[6].split(",", 1)[1]  # a float column's cell
    (tmp_path / "bad.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "bad.yaml").write_text(
        "name: bad\ndata: {dataset: csv, source: {path: bad.csv}, label: species, columns: {sepal_length: float},\n"
        "       filters: {max_invalid_fraction: 0}}\n"
    )
    done = run_kflow("run", tmp_path / "bad.yaml", "--until", "ingest", "--pipeline-root", tmp_path / "runs")
    assert done.returncode == 1 and "\x1b" not in done.stdout + done.stderr and "Traceback" not in done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("kflow:")]
    assert line.startswith("kflow: error: component 'ingest' failed: ValueError: ingest: 1 of 150 records")
    assert "value=\\x1b[31mevil\\x1b[2J" in line
    details = line.rsplit(" [", 1)[1].removesuffix("]")
    assert details.endswith("ingest.failed/error.log") and "Traceback" in open(details).read()


def test_a_beam_worker_failure_is_printed_once_in_one_line(tmp_path, run_kflow):
    """A component's Beam pipeline on worker threads: Beam printed the worker's traceback, logged it, and raised it
    as its error's text (123 lines on stderr, the cause three times); now the component's one line names it."""
    shutil.copy(IRIS_CSV, tmp_path / "iris.csv")
    config = tmp_path / "iris.yaml"
    config.write_text("name: iris\ndata: {dataset: csv, source: {path: iris.csv}, label: species}\n")
    root = ["--pipeline-root", tmp_path / "runs"]
    assert run_kflow("run", config, "--until", "statistics", *root).returncode == 0
    (shard,) = (tmp_path / "runs").glob("iris/*/ingest/examples/Split-train/*.gz")
    data = bytearray(shard.read_bytes())
    data[40:-20] = bytes(byte ^ 0x55 for byte in data[40:-20])  # corrupt, same size: the cache still serves it
    shard.write_bytes(bytes(data))
    threads = ["--set", "beam.options.direct_num_workers=2"]
    threads += ["--set", "beam.options.direct_running_mode=multi_threading"]
    done = run_kflow("run", config, "--only", "statistics", "--no-cache", *threads, *root)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "Error -3 while decompressing" in line]
    examples = next((tmp_path / "runs").glob("iris/*/ingest/examples"))
    assert line.startswith(f"kflow: error: component 'statistics' failed: ValueError: the Examples under {examples} ")
    assert "are corrupt: damaged gzip data (Error -3 while decompressing" in line
    assert len(done.stderr.splitlines()) <= 6, done.stderr  # the run's few log lines and this one
    assert "Traceback" in open(line.rsplit(" [", 1)[1].removesuffix("]")).read()
