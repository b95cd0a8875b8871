"""A local training cluster's processes started early: they load TensorFlow, Keras and JAX while the components
before the Trainer run, then wait to be told who they are.

A local cluster's processes start after the ingest, and each loads its libraries (7 s on a 2-core machine) before
it trains. When `kflow run` knows the Trainer will run after components that run first, it warms the cluster up
(`ComponentSpec.warm_up`: `warm_up` here): each process is started as the launcher would start it, with the
variables read while the libraries load (the backend, XLA's flags, the log level) and its own network, and waits
on its standard input for the rest, read only later: `TF_CONFIG` or the JAX variables, which hold the cluster's
ports, chosen when it starts, and what it shows of its progress. The launcher takes a warm process in place of a
new one when the early variables are those it would set (`take`), and starts a new one otherwise; warm processes
that nothing takes are stopped when the run ends (and with it, as any cluster process is).
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kflow.components.trainer import process_group

log = logging.getLogger("kflow.trainer.launcher")

WARM_FLAG = "--warm"
# Read after the libraries have loaded: who the process is, where its peers listen, what it shows.
LATE_VARIABLES = frozenset(
    {"TF_CONFIG", "COORDINATOR_ADDRESS", "COORDINATOR_PORT", "NUM_PROCESSES", "PROCESS_ID", "KFLOW_PROGRESS"}
)
# Set by importing libraries (TensorFlow: TF2_BEHAVIOR and, with setdefault, ENABLE_RUNTIME_UPTIME_TELEMETRY; its
# legacy Keras engine, which tensorflow_text loads: HDF5_PLUGIN_PATH; JAX: TF_CPP_MIN_LOG_LEVEL with setdefault, after
# the CLI's own, and the TPU_ ones; scikit-learn, which Keras' wrappers import: KMP_ with setdefault). Once the run's
# own process has imported them (any Transform, say), the launcher's environment holds them and the warm process's
# did not. A warm process sets the TensorFlow and JAX ones alike as it loads; the KMP_ ones matter only to Intel's
# OpenMP, which these wheels do not load. No reason to start anew (TF2_BEHAVIOR alone had every warm cluster after a
# Transform started anew). test_warm_workers.py imports them in a bare process and checks this names all they set
# here (a TPU VM's JAX sets more: a warm cluster there would start anew, slower but right).
SET_BY_IMPORTS = frozenset(
    {
        "ENABLE_RUNTIME_UPTIME_TELEMETRY",
        "HDF5_PLUGIN_PATH",
        "TF2_BEHAVIOR",
        "TF_CPP_MIN_LOG_LEVEL",
        "TPU_ML_PLATFORM",
        "TPU_ML_PLATFORM_VERSION",
        "TPU_SKIP_MDS_QUERY",
        "KMP_DUPLICATE_LIB_OK",
        "KMP_INIT_AT_FORK",
    }
)


@dataclass(frozen=True)
class ClusterShape:
    """What a cluster's processes are: its strategy, its roles ((role, count), ...), devices, a sidecar evaluator."""

    strategy: str
    roles: tuple[tuple[str, int], ...]
    devices: int | None
    evaluator: bool


class WarmCluster:
    """Processes started with `environments[name]` (their late variables to be replaced) by `spawn(command, env)`
    in the network `prefix` enters, which `network` removes once they have stopped."""

    def __init__(
        self,
        shape: ClusterShape,
        environments: dict[str, dict[str, str]],
        spawn: Callable[[list[str], dict[str, str]], subprocess.Popen],
        prefix: list[str],
        network: contextlib.ExitStack,
    ):
        self.shape, self.prefix = shape, prefix
        self._environments = environments
        self._network = network
        self._waiting: dict[str, subprocess.Popen] = {}
        self._lock = threading.Lock()
        try:
            for name, environment in environments.items():
                self._waiting[name] = spawn([*prefix, *worker_command(warm=True)], environment)
        except BaseException:
            self.close()
            raise

    def take(self, name: str, environment: dict[str, str], argv: list[str]) -> subprocess.Popen | None:
        """The warm process `name`, told its late variables and arguments; None when there is none or it was
        started with other early variables (it is stopped then)."""
        with self._lock:
            process = self._waiting.pop(name, None)
        if process is None:
            return None
        started_with = self._environments[name]
        differs = sorted(
            key
            for key in (set(environment) | set(started_with)) - LATE_VARIABLES - SET_BY_IMPORTS
            if environment.get(key) != started_with.get(key)
        )
        if differs or process.poll() is not None:
            why = f"{differs[0]} differs" if differs else f"it exited ({process.returncode})"
            log.info("train: the warm %s is not used (%s): starting a new one", name, why)
            _stop([process])
            return None
        late = {key: environment[key] for key in LATE_VARIABLES if key in environment}
        try:
            process.stdin.write(json.dumps({"environment": late, "argv": argv}) + "\n")
            process.stdin.close()
        except OSError:  # It died while waiting.
            _stop([process])
            return None
        return process

    def close(self) -> None:
        """Stops the processes nothing took; removes the network once the ones taken have stopped too (the
        launcher closes it after its processes, the run after everything)."""
        with self._lock:
            waiting, self._waiting = list(self._waiting.values()), {}
        try:
            _stop(waiting)
        finally:
            self._network.close()


def _stop(processes: list[subprocess.Popen]) -> None:
    """Warm processes hold nothing yet: their input closed and their groups stopped at once."""
    for process in processes:
        with contextlib.suppress(OSError):
            process.stdin.close()
    process_group.stop(processes)


def worker_command(warm: bool = False) -> list[str]:
    return [sys.executable, "-m", "kflow.components.trainer.worker", *([WARM_FLAG] if warm else [])]


_WARM: dict[ClusterShape, WarmCluster] = {}
_REGISTRY_LOCK = threading.Lock()


def offer(cluster: WarmCluster) -> None:
    with _REGISTRY_LOCK:
        previous = _WARM.pop(cluster.shape, None)
        _WARM[cluster.shape] = cluster
    if previous is not None:
        previous.close()


def claim(shape: ClusterShape) -> WarmCluster | None:
    """The warm cluster of this shape, for one launcher to take its processes from."""
    with _REGISTRY_LOCK:
        return _WARM.pop(shape, None)


def withdraw(cluster: WarmCluster) -> None:
    with _REGISTRY_LOCK:
        if _WARM.get(cluster.shape) is cluster:
            del _WARM[cluster.shape]


def wait_for_job() -> tuple[dict[str, str], list[str]] | None:
    """In a warm process: the late variables and the arguments, or None when the run ended without it."""
    line = sys.stdin.readline()
    if not line:
        return None
    job: dict[str, Any] = json.loads(line)
    return job["environment"], job["argv"]


@contextlib.contextmanager
def warm_cluster(start: Callable[[], WarmCluster]) -> Iterator[None]:
    """Offers the cluster `start()` makes to the launcher until the block ends, then stops what it did not take."""
    cluster = start()
    offer(cluster)
    try:
        yield
    finally:
        withdraw(cluster)
        cluster.close()
