"""`mirrored`: `tf.distribute.MirroredStrategy` over the local devices, in the Trainer's own process.

With `trainer.devices: N` the first physical device (the first GPU, else the CPU) is split into N
logical devices first, as the distributed-training guides do to run a real N-replica
MirroredStrategy, all-reduce included, on one GPU or on a CPU-only machine.
"""

from __future__ import annotations

import tensorflow as tf

from kflow.components.trainer.strategies.synchronous import SynchronousRuntime

# Memory of each logical GPU when one GPU is split; a CPU's logical devices share its memory.
GPU_MEMORY_MB = 2048


class Runtime(SynchronousRuntime):
    devices: list[str] | None = None

    @classmethod
    def configure(cls, devices: int | None) -> None:
        if devices is None or devices < 2:
            Runtime.devices = None
            return
        gpus = tf.config.list_physical_devices("GPU")
        physical = (gpus or tf.config.list_physical_devices("CPU"))[0]
        logical = [tf.config.LogicalDeviceConfiguration(memory_limit=GPU_MEMORY_MB if gpus else None)] * devices
        try:
            tf.config.set_logical_device_configuration(physical, logical)
        except RuntimeError as error:  # TensorFlow initialised its devices earlier in this process.
            existing = tf.config.get_logical_device_configuration(physical) or []
            if len(existing) != devices:
                raise RuntimeError(
                    f"trainer.devices={devices}: {physical.name} cannot be split after TensorFlow has initialised "
                    f"its devices in this process ({error})"
                ) from error
        Runtime.devices = [device.name for device in tf.config.list_logical_devices(physical.device_type)[:devices]]

    def make(self) -> tf.distribute.Strategy:
        return tf.distribute.MirroredStrategy(self.devices)
