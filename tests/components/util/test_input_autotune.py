"""Deleting a `tf.distribute` iterator does not wait out tf.data's autotuning rounds (input_autotune.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

# A real 2-replica MirroredStrategy on two logical CPUs (its own process: devices split only before TensorFlow
# initialises them) over a host pipeline with a parallel map, untuned as the Trainer's are; an iterator read for
# LIFE_S, then deleted. Without untune_device_datasets the deletion waits for the per-device autotuning round at
# 20.5 s of the iterator's life: 8.5 s here (in most runs: a race in TensorFlow; so the per-device datasets' options
# are checked too).
CHILD = """
import json, sys, time
import tensorflow as tf
from kflow.components.util.input_autotune import untune_device_datasets, untuned
untune_device_datasets()
untune_device_datasets()  # idempotent: one wrapper, not two
from tensorflow.python.data.ops import multi_device_iterator_ops
wrapped_once = not getattr(multi_device_iterator_ops._create_device_dataset.__wrapped__, "untuned", False)
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
data = tf.data.Dataset.range(10**9).batch(32).map(lambda x: x * 2, num_parallel_calls=tf.data.AUTOTUNE)
iterator = iter(strategy.experimental_distribute_dataset(untuned(data.prefetch(tf.data.AUTOTUNE))))
first = strategy.experimental_local_results(next(iterator))
# TensorFlow's own structure: the process's input worker, its MultiDeviceIterator, one iterator per device.
tuned = [device._dataset.options().autotune.enabled for device in iterator._iterators[0]._iterator._device_iterators]
started = time.perf_counter()
while time.perf_counter() - started < float(sys.argv[1]):
    next(iterator)
first = [t.numpy().tolist() for t in first]
deleting = time.perf_counter()
del iterator
deleted = time.perf_counter() - deleting
print(json.dumps({"delete_s": deleted, "first": first, "tuned": tuned, "wrapped_once": wrapped_once}))
"""
LIFE_S = 11


@pytest.mark.slow  # 15 s of waiting for tf.data's first autotuning round
def test_a_distributed_iterator_older_than_the_first_autotuning_round_is_deleted_at_once():
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(LIFE_S)], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.splitlines()[-1])
    # The replicas still get their halves of each batch, in order.
    assert report["first"] == [[x * 2 for x in range(16)], [x * 2 for x in range(16, 32)]]
    assert report["tuned"] == [False, False]
    assert report["wrapped_once"]
    assert report["delete_s"] < 2.0, report
