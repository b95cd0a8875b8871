"""`multi_worker_mirrored`: `tf.distribute.MultiWorkerMirroredStrategy` over the workers of TF_CONFIG.

Every worker runs the loop; variables are mirrored and gradients all-reduced with collective
ops. Checkpointing is collective too, so every worker calls the checkpoint manager (the
non-chief ones into a folder they delete).
"""

import logging
import socket
import time

import tensorflow as tf
from tensorflow.python.eager import context

from kflow.components.trainer.strategies.cluster_env import in_cluster, tf_config
from kflow.components.trainer.strategies.synchronous import SynchronousRuntime
from kflow.pipeline.dsl.process_exit import exit_now

log = logging.getLogger(__name__)
# How long the workers wait at the end for the chief, which exports the model after its training returned.
LEAVE_TIMEOUT_S = 1800
# How long the chief waits for the other workers' processes to end (an interpreter with TensorFlow: seconds).
PEERS_GONE_TIMEOUT_S = 60


class Runtime(SynchronousRuntime):
    made: tf.distribute.Strategy | None = None  # by `configure`, in a worker of a cluster

    @classmethod
    def configure(cls, devices: int | None) -> None:
        """A cluster's worker joins it here, before its task is loaded: TensorFlow configures the collective ops
        once, before the process's first op, and a task whose preparation runs ops (WikiText-2 learns its
        vocabulary with tf.text) would leave a later MultiWorkerMirroredStrategy failing with "Collective ops
        must be configured at program startup"."""
        super().configure(devices)
        if (tf_config().get("task") or {}).get("type") in ("chief", "worker"):
            Runtime.made = tf.distribute.MultiWorkerMirroredStrategy()

    def make(self) -> tf.distribute.Strategy:
        return Runtime.made or tf.distribute.MultiWorkerMirroredStrategy()

    @classmethod
    def leave(cls, chief: bool, end_process: bool = False) -> None:
        """TensorFlow's coordination service runs in the chief's process and every other worker beats to it
        until its process ends: a chief that ends first makes a worker's next beat log a gRPC error ("failed to
        connect to all addresses") on a run that succeeded. So the workers meet at a barrier, and the chief
        ends only when the others' servers are gone (their addresses refuse connections), or after a bound.
        With `end_process` (a launched worker process, which has nothing left to do) a worker ends at once, the
        chief once the others are gone: an interpreter's teardown with TensorFlow takes 4-6 s here, which the
        chief would wait for, and in which its coordination service, still running, reports the ended workers as
        crashed ("tasks are unhealthy (stopped sending heartbeats)")."""
        if not in_cluster() or context.context().coordination_service is None:
            return
        try:
            context.context().wait_at_barrier("kflow-leave", LEAVE_TIMEOUT_S * 1000)
        except tf.errors.OpError as error:  # A peer that failed is the launcher's (or the job's) to report.
            log.warning("the cluster's workers did not all reach the end: %s", error.message.splitlines()[0])
            return
        if chief:
            wait_until_gone(peer_addresses(tf_config()), PEERS_GONE_TIMEOUT_S)
        if end_process:
            exit_now(0)


def peer_addresses(config: dict) -> list[tuple[str, int]]:
    """The (host, port) of every chief and worker task of TF_CONFIG but this process's own."""
    me = config.get("task") or {}
    peers = []
    for role in ("chief", "worker"):
        for index, address in enumerate((config.get("cluster") or {}).get(role, [])):
            if (role, index) != (me.get("type"), int(me.get("index", 0))):
                host, _, port = address.rpartition(":")
                peers.append((host.strip("[]"), int(port)))
    return peers


def wait_until_gone(addresses: list[tuple[str, int]], timeout: float) -> bool:
    """Polls until no address accepts a connection; False when some still did after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while addresses := [address for address in addresses if _listening(address)]:
        if time.monotonic() > deadline:
            log.debug("workers still listening after %.0f s: %s", timeout, addresses)
            return False
        time.sleep(0.1)
    return True


def _listening(address: tuple[str, int]) -> bool:
    try:
        with socket.create_connection(address, timeout=0.5):
            return True
    except OSError:
        return False
