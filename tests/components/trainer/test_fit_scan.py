"""Keras' `fit` on JAX over blocks of batches, each call scanned or step by step (components/trainer/fit_scan.py):
the same training as Keras' own loop of one jitted step at a time, in a REAL JAX process over 2 XLA host devices
(DataParallel) and over one."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import REPO


def _fits(devices: int) -> dict:
    env = {
        **os.environ,
        "KERAS_BACKEND": "jax",
        "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    result = subprocess.run(
        [sys.executable, "-m", "tests.components.trainer.fit_scan_check", str(devices)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # ~40 s: four fits in a JAX process; make test fits on JAX in test_jax_strategies.py
@pytest.mark.parametrize("devices", [2, 1])
def test_calls_over_blocks_train_as_keras_own_loop_does(devices):
    fits = _fits(devices)
    # Several steps a call, one process, whole steps for each replica's share of a block.
    assert fits.pop("scans") == [True, False, False, False, True]
    keras_own = fits.pop("keras")
    assert keras_own["train_function"] != "BlockCalls"
    assert fits["timed"]["chosen"] in ("scan", "steps")  # it timed both ways and kept one
    for way, ours in fits.items():
        assert ours["train_function"] == "BlockCalls", way
        # Every step ran (3 epochs of 3 calls of 4 steps), on the same batches in the same order with the same
        # dropout draws: the weights agree up to float32 rounding, and the logs the callbacks saw are the same.
        assert ours["steps"] == keras_own["steps"] == 36, way
        for weight, keras_weight in zip(ours["weights"], keras_own["weights"], strict=True):
            np.testing.assert_allclose(weight, keras_weight, rtol=1e-4, atol=1e-5, err_msg=way)
        np.testing.assert_allclose(ours["losses"], keras_own["losses"], rtol=1e-4, err_msg=way)
        np.testing.assert_allclose(ours["accuracy"], keras_own["accuracy"], rtol=1e-4, err_msg=way)
        assert ours["losses"][-1] < ours["losses"][0], way
