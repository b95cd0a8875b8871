"""What every process of a JAX strategy does first, and how it reads its share of each batch.

A JAX strategy's processes find each other the way a Training Operator `JAXJob` tells its pods
to: `COORDINATOR_ADDRESS` and `COORDINATOR_PORT` (process 0 serves the coordinator),
`NUM_PROCESSES` and `PROCESS_ID`. The local launcher sets the same variables on loopback, plus
`KERAS_BACKEND=jax` and, for `trainer.devices: N` on CPU, `XLA_FLAGS` giving N host devices.
On CPU the processes' collectives run over gloo.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import keras
import tensorflow as tf

from kflow.components.trainer.strategies.runtime import MakeDataset, Runtime


@dataclass(frozen=True)
class JaxProcess:
    """This process's place in the JAX cluster (one process without the variables)."""

    count: int = 1
    index: int = 0
    coordinator: str | None = None

    @classmethod
    def from_environment(cls) -> JaxProcess:
        count = int(os.environ.get("NUM_PROCESSES", "1"))
        if count < 2:
            return cls()
        address, port = os.environ.get("COORDINATOR_ADDRESS"), os.environ.get("COORDINATOR_PORT")
        if not address or not port or "PROCESS_ID" not in os.environ:
            raise RuntimeError("NUM_PROCESSES > 1 needs COORDINATOR_ADDRESS, COORDINATOR_PORT and PROCESS_ID")
        return cls(count, int(os.environ["PROCESS_ID"]), f"{address}:{port}")

    @property
    def is_chief(self) -> bool:
        return self.index == 0


def start(devices: int | None) -> JaxProcess:
    """Joins the cluster (if several processes) and checks the devices; before any JAX computation."""
    if keras.backend.backend() != "jax":
        raise RuntimeError(
            f"a JAX strategy needs KERAS_BACKEND=jax in its process (this one runs {keras.backend.backend()}); "
            "the Trainer's launcher starts such processes"
        )
    import jax

    from kflow.components.trainer.strategies import jax_compile_cache

    jax_compile_cache.enable()
    process = JaxProcess.from_environment()
    if process.count > 1:
        # Collectives between CPU devices of different processes (GPUs use NCCL regardless). Nothing may
        # ask JAX for its devices or backend before initialize().
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        keras.distribution.initialize(
            job_addresses=process.coordinator, num_processes=process.count, process_id=process.index
        )
    if devices and jax.default_backend() == "cpu" and jax.local_device_count() != devices:
        raise RuntimeError(
            f"trainer.devices={devices} but this process has {jax.local_device_count()} CPU device(s): "
            "XLA_FLAGS must carry --xla_force_host_platform_device_count before JAX starts"
        )
    return process


def process_batches(data: tf.data.Dataset, global_batch: int, process: JaxProcess) -> tf.data.Dataset:
    """Endless full global batches of `data` (one pass of the split, batched), this process's rows of each.

    Every process reads the same batches in the same order (the task's shuffle is seeded) and keeps
    rows `[index * n, (index + 1) * n)` of each, `n = global_batch / processes`: together the
    processes train on exactly the batches one process would. Batches are full so that they split
    evenly over the devices; a split's last batch is completed from its start.
    """
    if global_batch % process.count:
        raise ValueError(f"batch_size {global_batch} does not divide among {process.count} processes")
    data = data.repeat().rebatch(global_batch, drop_remainder=True)
    if process.count > 1:
        rows = global_batch // process.count
        start_row = process.index * rows

        def share(*batch):
            return tf.nest.map_structure(lambda tensor: tensor[start_row : start_row + rows], batch)

        data = data.map(share, num_parallel_calls=tf.data.AUTOTUNE)
    return data.prefetch(tf.data.AUTOTUNE)


class JaxRuntime(Runtime):
    """The base of the JAX strategies' runtimes: a JAX process of a cluster (`configure` joins it)."""

    _process = JaxProcess()

    @classmethod
    def configure(cls, devices: int | None) -> None:
        JaxRuntime._process = start(devices)

    @property
    def process_index(self) -> int:  # type: ignore[override]
        return self._process.index

    @property
    def process_count(self) -> int:  # type: ignore[override]
        return self._process.count

    def check_batch(self, global_batch: int) -> None:
        if global_batch % self.replicas:
            raise ValueError(
                f"batch_size {global_batch} must be a multiple of the {self.replicas} data-parallel replicas"
            )

    def fit_batches(self, make_dataset: MakeDataset, split: str, training: bool, global_batch: int) -> tf.data.Dataset:
        self.check_batch(global_batch)
        return process_batches(make_dataset(split, training, global_batch), global_batch, self._process)
