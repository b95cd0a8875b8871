"""Which native log lines `kflow` keeps off the terminal (without -v), and which it must let through."""

import pytest

from kflow.pipeline.cli.native_logs import is_chatter


@pytest.mark.parametrize(
    "line",
    [
        b"I0000 00:00:1795479493.379393    2758 port.cc:153] oneDNN custom operations are on.\n",
        b"[worker-1] W0000 00:00:1795479493.379393    2758 cpu_feature_guard.cc:12] This TensorFlow binary\n",
        b"[worker-0] E0000 00:00:1795489655.582929   27774 cuda_platform.cc:52] failed call to cuInit: UNKNOWN\n",
        b"E0000 00:00:1795491833.336610    4937 util.cc:131] oneDNN supports DT_INT64 only on AVX-512.\n",
        b"[worker-1] [Gloo] Rank 1 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1\n",
    ],
)
def test_start_up_chatter_is_dropped(line):
    assert is_chatter(line)


@pytest.mark.parametrize(
    "line",
    [
        b"[worker-0] INFO kflow.trainer: train: epoch 1/2 loss=1.8720\n",
        b"[worker-0] E1124 03:07:06.362876   27510 coordination_service.cc:1520] Shutdown barrier has failed:\n",
        b"[worker-0] RuntimeError: jax.distributed.initialize() must be called before any JAX calls\n",
    ],
)
def test_errors_and_kflow_lines_pass(line):
    assert not is_chatter(line)
