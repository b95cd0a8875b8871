"""What a user sees: results on stdout, quiet logs on stderr, progress bars in a terminal only, flags anywhere."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
import time
from collections import Counter

import PIL.Image
import pytest

from tests.conftest import REPO

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"
KFLOW = [sys.executable, "-m", "kflow.pipeline.cli.main"]
# What must never reach a user's terminal at default verbosity.
NOISE = re.compile(r"absl|InitializeLog|cuInit|cuda|oneDNN|cpu_feature_guard|apitools|grpc|^[IWE]\d{4} ", re.I)


@pytest.fixture(scope="module")
def piped_run(tmp_path_factory):
    """The demo on a 2-worker MultiWorkerMirroredStrategy cluster, stdout and stderr captured apart."""
    root = tmp_path_factory.mktemp("piped")
    command = [*KFLOW, "run", str(DEMO), "--pipeline-root", str(root)]
    settings = ["--set", "trainer.strategy=multi_worker_mirrored", "--set", "trainer.epochs=1"]
    result = subprocess.run([*command, *settings], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return root, result


def test_stdout_holds_only_the_summary_table(piped_run):
    _, result = piped_run
    lines = result.stdout.splitlines()
    assert lines[0].startswith("pipeline demo  run ") and lines[1].split() == [
        "component",
        "status",
        "seconds",
        "key",
        "metrics",
    ]
    assert [line.split()[0] for line in lines[2:6]] == ["ingest", "transform", "train", "evaluate"]
    assert lines[6].startswith("run folder: ") and len(lines) == 7
    assert "\033[" not in result.stdout, "no colour when stdout is not a terminal"


def test_stderr_has_no_native_chatter_and_no_repeated_line(piped_run):
    _, result = piped_run
    lines = result.stderr.splitlines()
    assert [line for line in lines if NOISE.search(line)] == []
    repeated = [line for line, count in Counter(lines).items() if count > 1]
    assert repeated == []
    epochs = [line for line in lines if re.search(r"epoch \d/1 loss=", line)]
    assert len(epochs) == 1 and epochs[0].startswith("[worker-0] "), "the chief speaks once"
    assert "\r" not in result.stderr, "no progress bar when stderr is not a terminal"


def test_json_output_of_show_and_runs(piped_run, run_kflow):
    root, _ = piped_run
    shown = run_kflow("show", root / "demo", "--json")
    listed = run_kflow("runs", root, "--json")
    assert shown.returncode == listed.returncode == 0
    record, rows = json.loads(shown.stdout), json.loads(listed.stdout)
    assert record["status"] == "succeeded" and set(record["components"]) == {"ingest", "transform", "train", "evaluate"}
    (row,) = rows
    evaluated = record["components"]["evaluate"]["summary"]
    assert (row["run_id"], row["blessed"]) == (record["run_id"], evaluated["blessed"])
    assert row["headline"] == {"metric": "accuracy", "value": evaluated["accuracy"]}


def run_in_terminal(*args: str, timeout: float = 600) -> tuple[int, str]:
    """Runs kflow with its stdout and stderr on a pseudo-terminal; returns the exit code and all it wrote."""
    controller, terminal = pty.openpty()
    env = {key: value for key, value in os.environ.items() if key != "KFLOW_PROGRESS"}
    process = subprocess.Popen([*KFLOW, *args], cwd=REPO, stdin=terminal, stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    output = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # The terminal is closed: every writer has exited.
            break
        if not chunk:
            break
        output += chunk
    os.close(controller)
    return process.wait(timeout=30), output.decode(errors="replace")


@pytest.mark.slow  # ~25 s each; make test keeps the MWMS demo run's output (above)
@pytest.mark.parametrize("strategy", ["default", "multi_worker_mirrored"])
def test_a_terminal_gets_a_progress_bar_per_epoch(tmp_path, strategy):
    code, output = run_in_terminal(
        "run", str(DEMO), "--pipeline-root", str(tmp_path), "--until", "train",
        "--set", f"trainer.strategy={strategy}", "--set", "trainer.epochs=2", "--set", "trainer.batch_size=16",
    )  # fmt: skip
    assert code == 0, output[-3000:]
    # tqdm's bar: "epoch 1/2:  40%|████      | 34/85 [00:01<00:01, 28.1step/s, ex/s=452, loss=0.8125]"
    bars = re.findall(r"epoch ([12])/2: +\d+%\|.*?\| *(\d+)/85 \[.*?step/s.*?ex/s=\d+", output)
    assert {epoch for epoch, _ in bars} == {"1", "2"}, output[-3000:]
    assert re.search(r"ingest: +\d+%\|.*?\| *\d+/1797 \[", output), "the ingest's records bar"
    assert "\r" in output
    assert not [line for line in output.splitlines() if NOISE.search(line)]


def test_verbosity_flags_go_before_or_after_the_command_and_version(run_kflow):
    for args in (["-q", "validate", DEMO], ["validate", "-q", DEMO], ["validate", DEMO, "--verbose"]):
        result = run_kflow(*args)
        assert result.returncode == 0, (args, result.stderr)
    version = run_kflow("--version")
    assert version.returncode == 0 and re.fullmatch(r"kflow \d+\.\d+\.\d+\n", version.stdout)
    clash = run_kflow("validate", "-q", "-v", DEMO)
    assert clash.returncode == 2 and "not allowed with argument" in clash.stderr


def test_the_report_renders_in_headless_chromium_with_its_plots(piped_run, tmp_path):
    browser = next((shutil.which(name) for name in ("chromium", "chromium-browser") if shutil.which(name)), None)
    if browser is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    root, _ = piped_run
    (report,) = root.glob("demo/*/evaluate/evaluation/report.html")
    screenshot = tmp_path / "report.png"
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,4000",
         f"--screenshot={screenshot}", report.as_uri()],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    with PIL.Image.open(screenshot) as image:
        assert image.size == (1280, 4000)
        pixels = image.convert("RGB")
        colours = pixels.getcolors(maxcolors=1 << 20)
    # Text alone is a few greys; the embedded plots bring the palette of matplotlib's lines and colour maps.
    assert len(colours) > 500
    assert any(r < 60 and g > 90 and b > 150 for _, (r, g, b) in colours), "the blue of the plots is on the page"
