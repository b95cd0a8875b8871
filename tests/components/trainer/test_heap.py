"""The Trainer's processes keep their freed heap (components/trainer/heap.py): measured as page faults of a real
allocate-touch-free cycle, in fresh processes, against glibc's defaults."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is Linux's")

# 20 rounds of 200 blocks of 100 KB (under glibc's 128 KB mmap threshold, so from the heap), touched, then freed.
CYCLES = """
import ctypes, json, resource, sys
from kflow.components.trainer.heap import keep_freed_heap
kept = keep_freed_heap() if sys.argv[1] == "keep" else False
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    blocks = [libc.malloc(100_000) for _ in range(200)]
    for block in blocks:
        libc.memset(block, 1, 100_000)
    for block in reversed(blocks):
        libc.free(block)
print(json.dumps({"kept": kept, "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before}))
"""


def cycles(mode: str, **env: str) -> dict:
    environment = {key: value for key, value in os.environ.items() if key != "MALLOC_TOP_PAD_"}
    result = subprocess.run(
        [sys.executable, "-c", CYCLES, mode], env={**environment, **env, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return json.loads(result.stdout)


def test_a_kept_heap_faults_in_its_pages_once_not_at_every_cycle():
    default, kept = cycles("default"), cycles("keep")
    assert kept["kept"] is True
    one_round = 200 * 100_000 // 4096
    # glibc's defaults give the freed top back and fault it in again at each of the 20 rounds.
    assert default["faults"] > 10 * one_round, default
    assert kept["faults"] < 3 * one_round, kept


def test_a_users_own_setting_is_left_as_it_is():
    assert cycles("keep", MALLOC_TOP_PAD_="0")["kept"] is False
