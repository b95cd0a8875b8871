"""A JAX strategy's process keeps its compiled programs in kflow's cache folder for this machine, and the next
process reads them back instead of compiling (components/trainer/strategies/jax_compile_cache.py): REAL JAX
processes, one after the other, on a cache folder of the test's own; the user's own JAX settings win."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

# One JAX process that first does as a JAX strategy's process (`START`: jax_process.start, which imports Keras and
# TensorFlow too; `ENABLE`: only its cache step), then compiles a program XLA takes a while on (a random
# initializer, as every weight shape under Keras' JAX backend); prints JAX's cache folder and its hits.
PROCESS = """
import json, jax
hits = []
jax.monitoring.register_event_listener(lambda event, **_: hits.append(event) if event.endswith("cache_hits") else None)
{first}
values = jax.random.uniform(jax.random.key(7), (13, 11, 5))
print(json.dumps({{"folder": jax.config.jax_compilation_cache_dir, "hits": len(hits), "sum": float(values.sum())}}))
"""
START = "from kflow.components.trainer.strategies import jax_process; jax_process.start(None)"
ENABLE = "from kflow.components.trainer.strategies import jax_compile_cache; jax_compile_cache.enable()"


def _process(cache_home, first=START, **environment) -> dict:
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(cache_home),
        "KERAS_BACKEND": "jax",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        **environment,
    }
    for name in ("JAX_COMPILATION_CACHE_DIR", "JAX_ENABLE_COMPILATION_CACHE"):
        if name not in environment:
            env.pop(name, None)
    result = subprocess.run(
        [sys.executable, "-c", PROCESS.format(first=first)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_next_process_reads_the_programs_the_first_compiled(tmp_path):
    first = _process(tmp_path, ENABLE)  # start() calls it: the slow tests below go through start()
    folder = tmp_path / "kflow" / "jax"
    assert first["folder"] and first["folder"].startswith(str(folder)) and first["hits"] == 0
    entries = [path for path in folder.rglob("*-cache")]
    assert any("uniform" in path.name for path in entries), entries
    second = _process(tmp_path, ENABLE)
    assert second["folder"] == first["folder"] and second["hits"] >= 1
    assert second["sum"] == first["sum"]  # the same program's result


@pytest.mark.slow
def test_the_users_own_jax_cache_settings_win(tmp_path):
    assert _process(tmp_path / "kflows")["folder"].startswith(str(tmp_path / "kflows" / "kflow" / "jax"))  # start()
    users = tmp_path / "users-cache"
    chosen = _process(tmp_path, JAX_COMPILATION_CACHE_DIR=str(users))
    assert chosen["folder"] == str(users)
    assert not (tmp_path / "kflow").exists()
    off = _process(tmp_path, JAX_ENABLE_COMPILATION_CACHE="false")
    assert off["folder"] is None and not (tmp_path / "kflow").exists()


@pytest.mark.slow
def test_a_cache_home_that_cannot_be_written_only_costs_the_compiling(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    result = _process(blocked)
    assert result["folder"] is None and result["hits"] == 0
