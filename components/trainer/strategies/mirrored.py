"""`mirrored`: `tf.distribute.MirroredStrategy` over the local devices, in the Trainer's own process."""

import tensorflow as tf

from kflow.components.trainer.strategies.synchronous import SynchronousRuntime


class Runtime(SynchronousRuntime):
    def make(self) -> tf.distribute.Strategy:
        return tf.distribute.MirroredStrategy()
