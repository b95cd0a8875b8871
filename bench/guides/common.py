"""What the guide scripts share: the clock, the result line, the local MNIST, the devices of this machine.

Imported first thing by each script (standard library only at import time), so `STARTED` is close to the
process start and a script can still set KERAS_BACKEND / XLA_FLAGS before Keras, JAX or TensorFlow load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

STARTED = time.perf_counter()
REPO = Path(__file__).resolve().parents[2]
DATASETS = REPO.parent / "shared" / "datasets"
RESULT_PREFIX = '{"guide"'  # run.py takes the last stdout line starting with this


def parser(doc: str, *, data: Path, epochs: int, devices: int = 2) -> argparse.ArgumentParser:
    """The options every guide script takes; the defaults are the guide's."""
    parse = argparse.ArgumentParser(description=doc.splitlines()[0], epilog=doc, formatter_class=_Raw)
    parse.add_argument("--data", type=Path, default=data, help="the local copy of the guide's dataset")
    parse.add_argument("--epochs", type=int, default=epochs, help="the guide's: %(default)s")
    parse.add_argument(
        "--max-records",
        type=int,
        default=None,
        help="read at most this many records of each source split (kflow's data.source.max_records); default all",
    )
    parse.add_argument(
        "--devices", type=int, default=devices, help="replicas (logical CPU devices / XLA host devices): %(default)s"
    )
    parse.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed Keras (weights, dropout) to measure the metric's spread; default unseeded, as the guide",
    )
    return parse


def seed(value: int | None) -> None:
    """Seeds Keras, NumPy and the backend when `value` is set (after the backend is chosen)."""
    if value is not None:
        import keras

        keras.utils.set_random_seed(value)


class _Raw(argparse.RawDescriptionHelpFormatter):
    pass


def force_host_devices(count: int) -> None:
    """JAX: `count` XLA host (CPU) devices in this process, in place of the guide's GPUs. Before JAX loads."""
    if "jax" in sys.modules:
        raise RuntimeError("force_host_devices must run before jax is imported")
    flags = [flag for flag in os.environ.get("XLA_FLAGS", "").split() if "xla_force_host_platform" not in flag]
    os.environ["XLA_FLAGS"] = " ".join([*flags, f"--xla_force_host_platform_device_count={count}"])
    os.environ["KERAS_BACKEND"] = "jax"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")


def logical_cpus(count: int) -> list[str]:
    """TensorFlow: the CPU split into `count` logical devices (the guides split a GPU the same way); their names."""
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * count)
    return [device.name for device in tf.config.list_logical_devices("CPU")[:count]]


def load_mnist(folder: Path, max_records: int | None):
    """(x_train, y_train, x_test, y_test) from mnist.npz, as keras.datasets.mnist.load_data() returns them,
    cut to the first `max_records` of each split (as kflow's data.source.max_records)."""
    import numpy as np

    path = Path(folder) / "mnist.npz" if Path(folder).is_dir() else Path(folder)
    with np.load(path) as arrays:
        x_train, y_train, x_test, y_test = (arrays[name] for name in ("x_train", "y_train", "x_test", "y_test"))
    if max_records:
        x_train, y_train = x_train[:max_records], y_train[:max_records]
        x_test, y_test = x_test[:max_records], y_test[:max_records]
    return x_train, y_train, x_test, y_test


def report(guide: str, *, train_s: float, examples: int, metric: str, value: float, **extra) -> dict:
    """Prints the result line run.py reads: wall time since the script started (data loading included), the
    training phase alone, examples trained per second of it, and the test metric."""
    result = {
        "guide": guide,
        "wall_s": round(time.perf_counter() - STARTED, 3),
        "train_s": round(train_s, 3),
        "examples": int(examples),
        "examples_per_s": round(examples / max(train_s, 1e-9), 1),
        "metric": metric,
        "value": float(value),
        **extra,
    }
    print(json.dumps(result), flush=True)
    return result
