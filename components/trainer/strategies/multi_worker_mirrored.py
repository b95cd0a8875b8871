"""`multi_worker_mirrored`: `tf.distribute.MultiWorkerMirroredStrategy` over the workers of TF_CONFIG.

Every worker runs the loop; variables are mirrored and gradients all-reduced with collective
ops. Checkpointing is collective too, so every worker calls the checkpoint manager (the
non-chief ones into a folder they delete).
"""

import logging
import os
import sys
import time

import tensorflow as tf
from tensorflow.python.eager import context

from kflow.components.trainer.strategies.runtime import in_cluster
from kflow.components.trainer.strategies.synchronous import SynchronousRuntime

log = logging.getLogger(__name__)
# How long the workers wait at the end for the chief, which exports the model after its training returned.
LEAVE_TIMEOUT_S = 1800
# How long the chief outlives the others: they end within milliseconds of the barrier.
LINGER_S = 1.0


class Runtime(SynchronousRuntime):
    def make(self) -> tf.distribute.Strategy:
        return tf.distribute.MultiWorkerMirroredStrategy()

    @classmethod
    def leave(cls, chief: bool) -> None:
        """TensorFlow's coordination service runs in the chief's process and every other worker beats to it
        until it exits: a chief that ends first makes a worker's next beat log a gRPC error ("failed to connect
        to all addresses") on a run that succeeded. So the workers meet at a barrier, the others end at once
        (no interpreter teardown, which can take seconds) and the chief a moment later."""
        if not in_cluster() or context.context().coordination_service is None:
            return
        try:
            context.context().wait_at_barrier("kflow-leave", LEAVE_TIMEOUT_S * 1000)
        except tf.errors.OpError as error:  # A peer that failed is the launcher's (or the job's) to report.
            log.warning("the cluster's workers did not all reach the end: %s", error.message.splitlines()[0])
            return
        if chief:
            time.sleep(LINGER_S)
            return
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
