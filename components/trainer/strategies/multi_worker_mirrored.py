"""`multi_worker_mirrored`: `tf.distribute.MultiWorkerMirroredStrategy` over the workers of TF_CONFIG.

Every worker runs the loop; variables are mirrored and gradients all-reduced with collective
ops. Checkpointing is collective too, so every worker calls the checkpoint manager (the
non-chief ones into a folder they delete).
"""

import tensorflow as tf

from kflow.components.trainer.strategies.synchronous import SynchronousRuntime


class Runtime(SynchronousRuntime):
    def make(self) -> tf.distribute.Strategy:
        return tf.distribute.MultiWorkerMirroredStrategy()
