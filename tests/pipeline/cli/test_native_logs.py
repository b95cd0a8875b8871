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
        # a multi-process Beam ingest's SDK workers, as a user trial's 300,000-row ingest printed them
        b"INFO:apache_beam.runners.worker.sdk_worker:Creating insecure control channel for localhost:46417.\n",
        b"INFO:__main__:Python sdk harness starting.\n",
        b"WARNING:root:apitools not found, and bigquery client libraries are not available despite the import\n",
        b"WARNING:__main__:No semi_persistent_directory found:  User registered objects (e.g. schema, logical type)\n",
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


# A parameter-server chief's notice as a user trial's run printed it (trainer.module with layers kflow adapts: a
# tf.data dataset made in the chief, freed), between a worker's line and the chief's next one.
REMOVAL = [
    b"[chief-0] E0000 00:00:1796225365.566161   22254 context.cc:911] Failed to remove function remotely due to "
    b"Tried to remove non-existent function '__inference_Dataset_from_generator_finalize_fn_322'.\n",
    b"[chief-0] Additional GRPC error information from remote target /job:ps/replica:0/task:0 while calling "
    b"/tensorflow.eager.EagerService/Enqueue:\n",
    b'[chief-0] :UNKNOWN:Error received from peer  {grpc_status:3, grpc_message:"Tried to remove non-existent '
    b"function '__inference_Dataset_from_generator_finalize_fn_322'.\"}\n",
    b"[chief-0] This could happen if the remote target has been disconnected from the client.\n",
]


def test_a_chiefs_notice_of_a_function_its_tasks_never_held_is_dropped_whole_and_nothing_else():
    from kflow.pipeline.cli.native_logs import RemoteFunctionRemovals

    removals = RemoteFunctionRemovals()
    before = b"[worker-1] INFO kflow.trainer: train: epoch 1/3 loss=1.0\n"
    after = b"[chief-0] INFO kflow.trainer: train: epoch 2/3 loss=0.5\n"
    other = b"[worker-0] E1124 03:07:06.362876   27510 coordination_service.cc:1520] Shutdown barrier has failed:\n"
    kept = [line for piece in [before, *REMOVAL, *REMOVAL, other, after] for line in removals.feed(piece)]
    assert kept == [before, other, after]
    # Another process's line inside the notice passes, and the chief's rest is still dropped.
    kept = [line for piece in [REMOVAL[0], before, *REMOVAL[1:], after] for line in removals.feed(piece)]
    assert kept == [before, after]
