"""`keras_data_parallel` and `keras_model_parallel`: Keras 3's distribution API on JAX, trained by `model.fit`.

The distribution is set for the whole process (`keras.distribution.set_distribution`): it decides
where each variable lives when the model is built and how `fit` lays every batch over the mesh.
Each process runs in its own JAX process (strategies.jax_process) and reads its rows of each
global batch; on several processes the mesh spans all their devices.

- DataParallel: a 1-D mesh `batch` over every device; weights replicated, batches split.
- ModelParallel: a 2-D mesh, by default (processes, devices per process) on axes (batch, model),
  and a `LayoutMap` (regex over weight paths → a mesh axis or None per dimension) sharding the
  chosen weights over `model`: `trainer.layout_map`, else the model's own (kflow.components.models).
"""

from __future__ import annotations

import contextlib
import logging
import re

import keras

from kflow.components.models import layout_map as model_layout_map
from kflow.components.trainer.strategies import jax_process

log = logging.getLogger("kflow.trainer")


class KerasDistributionRuntime(jax_process.JaxRuntime):
    def make(self) -> keras.distribution.Distribution:
        distribution = self.distribution(keras.distribution.list_devices())
        keras.distribution.set_distribution(distribution)
        return distribution

    def distribution(self, devices: list[str]) -> keras.distribution.Distribution:
        raise NotImplementedError

    @property
    def replicas(self) -> int:
        """Data-parallel replicas: the size of the mesh's batch axis."""
        mesh = self.strategy.device_mesh
        return int(mesh.shape[mesh.axis_names.index(self.strategy.batch_dim_name)])

    def scope(self):
        return self.strategy.scope()

    def weight_layouts(self, model: keras.Model) -> dict[str, list[str | None]]:
        layouts = {}
        for variable in model.weights:
            spec = list(getattr(variable.value.sharding, "spec", ()))
            spec += [None] * (len(variable.shape) - len(spec))
            if any(axis is not None for axis in spec):
                layouts[variable.path] = spec
        return layouts

    @contextlib.contextmanager
    def unsharded(self):
        # Variables built under the distribution are laid over every process's devices, which only all
        # processes together can do; the chief builds its export copy alone.
        keras.distribution.set_distribution(None)
        try:
            yield
        finally:
            keras.distribution.set_distribution(self.strategy)


class DataParallelRuntime(KerasDistributionRuntime):
    def distribution(self, devices: list[str]) -> keras.distribution.Distribution:
        # Each process feeds its own rows (fit_batches): Keras must not shard the data again.
        return keras.distribution.DataParallel(devices=devices, auto_shard_dataset=False)


class ModelParallelRuntime(KerasDistributionRuntime):
    def distribution(self, devices: list[str]) -> keras.distribution.Distribution:
        shape, axes = mesh_shape(self.config.mesh if self.config else None, len(devices), self._process.count)
        mesh = keras.distribution.DeviceMesh(shape=shape, axis_names=axes, devices=devices)
        layout_map = keras.distribution.LayoutMap(mesh)
        layouts = layout_rules(self.config.layout_map if self.config else None, self.model_name)
        for pattern, axes_of_weight in layouts.items():
            layout_map[pattern] = tuple(axes_of_weight)
        log.info(
            "train: mesh %s over %s, %d sharded weight pattern(s)",
            dict(zip(axes, shape, strict=True)),
            ", ".join(devices),
            len(layouts),
        )
        return keras.distribution.ModelParallel(layout_map=layout_map, batch_dim_name=axes[0], auto_shard_dataset=False)


def mesh_shape(mesh: dict | None, devices: int, processes: int) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The mesh `trainer.mesh` asks for, or (processes, devices per process) on (batch, model).

    The default keeps each model shard within a process (its devices talk fastest to each other)
    and spreads the batch over processes.
    """
    if mesh is None:
        return (processes, devices // processes), ("batch", "model")
    shape, axes = tuple(int(size) for size in mesh["shape"]), tuple(mesh["axes"])
    size = 1
    for dimension in shape:
        size *= dimension
    if size != devices:
        raise ValueError(f"trainer.mesh {list(shape)} needs {size} devices; the cluster has {devices}")
    return shape, axes


def layout_rules(layout_map: dict | None, model_name: str | None) -> dict[str, tuple[str | None, ...]]:
    """`trainer.layout_map`, else the model's default; each pattern is checked to be a regex."""
    rules = layout_map if layout_map is not None else model_layout_map(model_name)
    for pattern in rules:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"trainer.layout_map: {pattern!r} is not a regular expression ({error})") from error
    return {pattern: tuple(axes) for pattern, axes in rules.items()}
