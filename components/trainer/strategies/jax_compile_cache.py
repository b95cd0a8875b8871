"""JAX's persistent compilation cache for a JAX strategy's processes: a program XLA compiled once on this machine
is read back by the next process instead of compiled again.

Why: under JAX every distinct weight shape's initializer is its own XLA program, and the train and eval steps are
more; on 2 cores `kflow run bench/guides/jax_mnist.yaml` spent 3.0 s compiling the convnet's five initializers,
1.2 s its train step and 0.3 s its eval step before the first step ended (the first wait 5.5-5.9 s); with the
cache warm that wait was 0.8-0.9 s (2026-11-30, AMD EPYC). A compiled program is keyed by JAX on the program,
its compile options, the devices and the jax/jaxlib versions, so an entry is the program the process would have
compiled, never a stale one; the folder is further named by the jaxlib version and this CPU (a cache folder
shared between machines, or kept over a jaxlib reinstall, could otherwise hand XLA:CPU code built for other
instructions: JAX's loader refuses those, at the cost of a recompile and an error line each).

Bounded: entries over `CACHE_BYTES` in all are evicted least recently used first (which also makes JAX take a
file lock around each read and write, so two processes never read a half-written entry). Not used when the user
chose for JAX: `JAX_COMPILATION_CACHE_DIR` (their folder) or `JAX_ENABLE_COMPILATION_CACHE=false` (none); nor
where the folder cannot be made (a read-only home in a pod): the process then compiles as before.
"""

from __future__ import annotations

import hashlib
import logging
import platform
from pathlib import Path

from kflow.pipeline.dsl.user_cache import user_cache

log = logging.getLogger("kflow.trainer")

CACHE_BYTES = 512 * 2**20
# Programs that compile faster than this are not written: reading an entry back costs a few milliseconds.
MIN_COMPILE_SECONDS = 0.05


def machine_tag() -> str:
    """jaxlib's version and a digest of this CPU's model and instruction-set flags."""
    import jaxlib.version

    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        cpu = "\n".join(sorted({line for line in lines if line.startswith(("model name", "flags", "Features"))}))
    except OSError:
        cpu = platform.processor() or platform.machine()
    return f"jaxlib-{jaxlib.version.__version__}-{hashlib.sha256(cpu.encode()).hexdigest()[:12]}"


def enable() -> Path | None:
    """Points JAX at kflow's cache folder for this machine (before this process compiles anything); the folder, or
    None where the user's JAX settings decide or no folder can be made."""
    import jax

    if not jax.config.jax_enable_compilation_cache or jax.config.jax_compilation_cache_dir:
        return None
    folder = user_cache("jax", machine_tag())
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        log.debug("train: no JAX compilation cache (%s)", error)
        return None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_compilation_cache_max_size", CACHE_BYTES)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    return folder
