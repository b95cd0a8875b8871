"""Several steps per call of Keras' `fit` on JAX, as one compiled `lax.scan` where that runs faster
(steps_per_execution).

Keras' JAX trainer runs `steps_per_execution` > 1 as a Python loop of one jitted step each, every batch taken
from tf.data, converted and laid over the devices alone (keras/src/backend/jax/trainer.py, `_make_function`). For a
small model that per-batch work is most of a step. Here `fit` reads blocks of `steps` batches (`blocks`: one
conversion and one transfer a call) and a call runs its block either as one jitted scan of the model's own
`train_step` or step by step, as Keras does. Neither wins everywhere (2026-11-30, this project's 2-core VM, 2 XLA
host devices, DataParallel, 32 steps a call): the guide's MNIST MLP at batch 16 trained at 9,600-10,700 examples/s
step by step and 19,500 scanned, an MNIST convnet at batch 64 at 2,750 step by step and 500 scanned (XLA's CPU
convolutions inside a loop; unrolled, 1,600-1,800 and seconds more compiling). So each training times its own: a few
calls step by step, then, if a step is short enough for the scan to matter (`TRIAL_MAX_STEP_SECONDS`), a few
scanned, and keeps the faster. Either way the same steps run in the same order on the same batches, the state
carried through; the callbacks see the last step's logs, as with Keras' loop. Validation, evaluation and prediction
stay Keras' own.

One process only: several processes each feed their own rows of a batch (`jax.make_array_from_process_local_data`
in Keras' iterator), which would concatenate along a block's first axis, the steps'.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import keras
import tensorflow as tf

if TYPE_CHECKING:
    import jax

log = logging.getLogger("kflow.trainer")

# A step of Keras' loop cost ~0.7 ms more than a scanned one here (the MLP above: 1.5 ms against 0.8 ms): from 15 ms a
# step, the scan could gain at most ~5 %, and a scan that loses (the convnet: 5x) would cost its trial calls.
TRIAL_MAX_STEP_SECONDS = 0.015
UNTIMED_CALLS = 1  # each way's first call compiles
TIMED_CALLS = 2


def scans(per_call: int, process_count: int, replicas: int) -> bool:
    """Whether `fit` runs calls of `per_call` steps over blocks: on JAX, several steps a call, one process, and a
    multiple of the data-parallel `replicas` (Keras lays a block over them by its first axis: 3 steps cannot split
    over 2 devices)."""
    return keras.backend.backend() == "jax" and per_call > 1 and process_count == 1 and per_call % replicas == 0


def blocks(batches: tf.data.Dataset, steps: int) -> tf.data.Dataset:
    """The endless train `batches` in blocks of `steps` consecutive batches (a new first axis), one per call."""
    return batches.batch(steps, drop_remainder=True).prefetch(2)


def run_block_calls(keras_model: keras.Model, batch_spec: Any, steps: int, way: str | None = None) -> None:
    """Gives a compiled `keras_model` a train function over blocks of `steps` batches (`blocks`).

    `batch_spec`: the specs of one batch (not a block), from which the model, its compiled loss and metrics and its
    optimizer are built before `fit`, which would otherwise build them from a block's shapes. `way`: "scan" or
    "steps" to run every call so; None (the Trainer) times both and keeps the faster.
    """
    keras_model._symbolic_build(data_batch=batch_spec)  # Shapes and dtypes are all it reads: no batch is read.
    keras_model.train_function = BlockCalls(keras_model, steps, way)


class BlockCalls:
    """`fit`'s train function: `(state, iterator) -> (logs, state)`, a block of batches a call."""

    def __init__(self, keras_model: keras.Model, steps: int, way: str | None):
        self.model, self.steps = keras_model, steps
        self.choice = _Choice(way)
        self._scan = self._step = self._unstack = None

    def __call__(self, state, iterator):
        import jax  # Here, not above: a TensorFlow training imports this module and needs no JAX (0.3 s).

        block = next(iterator)
        if self._step is None:
            self._compile(state)
        way = self.choice.way()
        started = time.perf_counter()
        logs, state = self._scan(state, block) if way == "scan" else self._by_steps(state, block)
        if self.choice.timing:
            jax.block_until_ready(state)
            self.choice.timed(way, (time.perf_counter() - started) / self.steps)
        return logs, state

    def _by_steps(self, state, block):
        logs = None
        for batch in self._unstack(block):
            logs, state = self._step(state, batch)
        return logs, state

    def _compile(self, state) -> None:
        import jax

        # The state keeps its layout (Keras gives its jitted step the same out_shardings) and is updated in place.
        layouts = jax.tree.map(lambda array: array.sharding, state)
        batch_layout = _batch_layout()
        train_step = self.model.train_step

        def scan_block(state, block):
            if batch_layout is not None:
                # Keras lays a block over the devices by its first axis, the steps'; each step's batch is split instead.
                block = jax.tree.map(lambda array: jax.lax.with_sharding_constraint(array, batch_layout[1]), block)

            def one_step(carried, batch):
                logs, carried = train_step(carried, batch)
                return carried, logs

            state, logs = jax.lax.scan(one_step, state, block)
            return jax.tree.map(lambda values: values[-1], logs), state

        def unstack(block):
            return [jax.tree.map(lambda array, index=index: array[index], block) for index in range(self.steps)]

        self._scan = jax.jit(scan_block, donate_argnums=0, out_shardings=(None, layouts))
        self._step = jax.jit(train_step, donate_argnums=0, out_shardings=(None, layouts))
        self._unstack = jax.jit(unstack, out_shardings=None if batch_layout is None else batch_layout[0])


class _Choice:
    """Which way the next call runs: a set `way`, else step by step for `UNTIMED_CALLS + TIMED_CALLS` calls, then,
    unless a step took `TRIAL_MAX_STEP_SECONDS` or more, scanned as many; then the faster for good."""

    def __init__(self, way: str | None):
        self.chosen = way
        self.calls = {"steps": 0, "scan": 0}
        self.seconds = {"steps": 0.0, "scan": 0.0}

    @property
    def timing(self) -> bool:
        return self.chosen is None

    def way(self) -> str:
        if self.chosen is not None:
            return self.chosen
        trial = UNTIMED_CALLS + TIMED_CALLS
        if self.calls["steps"] < trial:
            way = "steps"
        else:
            way = "scan"
        self.calls[way] += 1
        return way

    def timed(self, way: str, seconds_a_step: float) -> None:
        if self.calls[way] > UNTIMED_CALLS:
            self.seconds[way] += seconds_a_step / TIMED_CALLS
        if way == "steps" and self.calls[way] == UNTIMED_CALLS + TIMED_CALLS:
            if self.seconds["steps"] >= TRIAL_MAX_STEP_SECONDS:
                self._choose("steps", f"a step took {self.seconds['steps'] * 1000:.1f} ms")
        elif way == "scan" and self.calls[way] == UNTIMED_CALLS + TIMED_CALLS:
            steps, scan = self.seconds["steps"], self.seconds["scan"]
            why = f"a step took {scan * 1000:.2f} ms scanned, {steps * 1000:.2f} ms alone"
            self._choose("scan" if scan < steps else "steps", why)

    def _choose(self, way: str, why: str) -> None:
        self.chosen = way
        shown = "as one compiled scan" if way == "scan" else "step by step"
        log.info("train: each call's steps run %s (%s)", shown, why)


def _batch_layout() -> tuple[jax.sharding.NamedSharding, jax.sharding.NamedSharding] | None:
    """A batch split over the distribution's batch axis, and a block so (its first axis, the steps', not); None
    without a distribution."""
    import jax

    distribution = keras.distribution.distribution()
    if distribution is None:
        return None
    mesh, axis = distribution.device_mesh.backend_mesh, distribution.batch_dim_name
    spec = jax.sharding.PartitionSpec
    return jax.sharding.NamedSharding(mesh, spec(axis)), jax.sharding.NamedSharding(mesh, spec(None, axis))
