"""Small real components for the reliability tests: they write real files and start real processes."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from kflow.pipeline.dsl.artifacts import Examples
from kflow.pipeline.dsl.component import Component, ComponentSpec, Parameter
from kflow.pipeline.dsl.dag import Pipeline

HERE = "tests.reliability.toy"


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def descendants(process: subprocess.Popen) -> list[psutil.Process]:
    return psutil.Process(process.pid).children(recursive=True)


def mwms_demo_command(root: Path, epochs: int, *settings: str) -> list[str]:
    """`kflow run` of the demo on a 2-worker MultiWorkerMirroredStrategy cluster into `root`."""
    demo = Path(__file__).resolve().parents[2] / "pipeline" / "configs" / "demo.yaml"
    strategy = ["--set", "trainer.strategy=multi_worker_mirrored", "--set", f"trainer.epochs={epochs}"]
    return [
        sys.executable,
        "-m",
        "kflow.pipeline.cli.main",
        "run",
        str(demo),
        "--pipeline-root",
        str(root),
        *strategy,
        *settings,
    ]


def wait_for_a_checkpoint(root: Path) -> None:
    wait_for(lambda: list(root.glob("demo/.work/train-*/checkpoints/ckpt-*.index")), 300, "a checkpoint")


def write_blob(*, blob, size: int, sleep: float = 0.0):
    """Writes `size` bytes into {blob}/data.bin in 64 KiB blocks, after sleeping `sleep` seconds."""
    time.sleep(sleep)
    with open(blob.path / "data.bin", "wb") as file:
        for start in range(0, size, 1 << 16):
            file.write(b"k" * min(1 << 16, size - start))
    return {"size": size}


def copy_source(*, copied, source: str, append: str = ""):
    """Copies the file `source`; with `append`, appends it to the source while reading (a writer racing the ingest)."""
    data = Path(source).read_bytes()
    if append:
        with open(source, "a") as file:
            file.write(append)
    (copied.path / "copy.bin").write_bytes(data)
    return {"bytes": len(data)}


def source_files(*, source: str, **_):
    return [source]


def start_a_child_and_wait(*, blob, seconds: float):
    """Starts a child process (as a training launcher does) and waits for it; records its pid."""
    child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
    (blob.path.parent.parent.parent / "child.pid").write_text(str(child.pid))
    child.wait()
    (blob.path / "data.bin").write_text("done")
    return {}


def fill_the_disk(*, blob):
    """Fills the file system of its run folder (outside its outputs, so the space stays taken), then returns."""
    with open(blob.path.parents[2] / "filler.bin", "wb", buffering=0) as file:
        for size in (1 << 16, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    file.write(b"f" * size)
    return {}


class FillDisk(Component):
    spec = ComponentSpec(outputs={"blob": Examples}, executor=f"{HERE}:fill_the_disk")


class Blob(Component):
    spec = ComponentSpec(
        outputs={"blob": Examples},
        parameters={"size": Parameter(int, default=1000), "sleep": Parameter(float, default=0.0)},
        executor=f"{HERE}:write_blob",
    )


class CopySource(Component):
    spec = ComponentSpec(
        outputs={"copied": Examples},
        parameters={"source": Parameter(str), "append": Parameter(str, default="")},
        executor=f"{HERE}:copy_source",
        source_files=f"{HERE}:source_files",
    )


class ChildProcess(Component):
    spec = ComponentSpec(
        outputs={"blob": Examples},
        parameters={"seconds": Parameter(float, default=120.0)},
        executor=f"{HERE}:start_a_child_and_wait",
    )


def blob_pipeline(size: int = 1000, sleep: float = 0.0) -> Pipeline:
    return Pipeline("toy", [Blob("blob", parameters={"size": size, "sleep": sleep})])


# Runs a toy pipeline in its own process: `python -c RUN_TOY <pipeline_root> <factory> [json kwargs]`.
RUN_TOY = """
import json, sys
from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner, PipelineFailed
from kflow.pipeline.runners.cancellation import Cancelled, signals_cancel
import tests.reliability.toy as toy
pipeline = getattr(toy, sys.argv[2])(**json.loads(sys.argv[3] if len(sys.argv) > 3 else "{}"))
try:
    with signals_cancel():
        BeamDagRunner().run(pipeline, sys.argv[1])
except PipelineFailed as failure:
    print(failure, file=sys.stderr)
    sys.exit(1)
except Cancelled as cancelled:
    sys.exit(cancelled.exit_code)
"""


def child_process_pipeline(seconds: float = 120.0) -> Pipeline:
    return Pipeline("toy", [ChildProcess("child", parameters={"seconds": seconds})])
