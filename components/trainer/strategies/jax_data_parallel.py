"""`jax_data_parallel`: the explicit JAX loop of Keras' "distributed training with JAX" guide.

The runtime gives the loop (kflow.components.trainer.jax_loop) a 1-D `jax.sharding.Mesh` named
`batch` over every device of every process, the sharding that replicates the train state
(`PartitionSpec()`) and the one that splits a batch's first dimension over the devices
(`PartitionSpec("batch")`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kflow.components.trainer.strategies.jax_process import JaxRuntime


class Runtime(JaxRuntime):
    def make(self) -> Any:
        import jax

        return jax.sharding.Mesh(np.array(jax.devices()), ("batch",))

    @property
    def replicas(self) -> int:
        return int(self.strategy.size)

    def scope(self):
        import contextlib

        return contextlib.nullcontext()

    @property
    def replicated(self) -> Any:
        from jax.sharding import NamedSharding, PartitionSpec

        return NamedSharding(self.strategy, PartitionSpec())

    @property
    def batch_split(self) -> Any:
        from jax.sharding import NamedSharding, PartitionSpec

        return NamedSharding(self.strategy, PartitionSpec("batch"))

    @property
    def block_split(self) -> Any:
        """A block of batches `[steps, batch, ...]`: each batch split as `batch_split` splits it."""
        from jax.sharding import NamedSharding, PartitionSpec

        return NamedSharding(self.strategy, PartitionSpec(None, "batch"))
