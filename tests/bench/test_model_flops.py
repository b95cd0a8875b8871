"""bench/model_flops.py on a real trained model: the demo's MNIST convnet (one epoch of `kflow run`), whose FLOPs
are counted by hand from its layers here, and the count read through a cached run's folder (its Trainer's artifacts
are in the first run's folder)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.slow  # ~25 s: a demo run and a trace of its model
def test_the_demo_convnets_flops_are_the_hand_count(tmp_path, run_kflow):
    for _ in range(2):  # the second run is all cached: its folder holds no train/ of its own
        done = run_kflow("run", REPO / "pipeline" / "configs" / "demo.yaml", "--set", f"pipeline_root={tmp_path}",
                         "--set", "trainer.epochs=1", "--set", "evaluator.baseline=none")  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
    cached = sorted((tmp_path / "demo").glob("2*"))[-1]
    assert not (cached / "train").exists()
    counted = subprocess.run([sys.executable, str(REPO / "bench" / "model_flops.py"), str(cached)],
                             capture_output=True, text=True, check=True)  # fmt: skip
    figures = json.loads(counted.stdout.strip().splitlines()[-1])
    # mnist_convnet on 28×28: 3×3 convolutions to 26×26×32 and (after 2×2 pooling) 11×11×64, a 1600 → 10 classifier.
    convolutions = 2 * (26 * 26 * 32 * 3 * 3 * 1 + 11 * 11 * 64 * 3 * 3 * 32)
    assert figures["Conv2D"] == convolutions and figures["MatMul"] == 2 * 1600 * 10
    assert figures["forward"] == convolutions + 2 * 1600 * 10 and figures["training"] == 3 * figures["forward"]
