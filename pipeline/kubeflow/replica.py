"""The command of every training replica on a cluster: who am I, then the entrypoint.

    KFLOW_ENTRYPOINT='["python", "-m", "kflow.pipeline.runners.kfp_entrypoint", ...]' \\
        python -m kflow.pipeline.kubeflow.replica

It reads the pod's cluster variables (`replica_env`), replaces `{replica}` in the entrypoint's
arguments with the replica's name (`worker-1`: each replica writes its outputs to a folder of its
own on the shared volume, stable across restarts), empties that folder (a restarted replica starts
its outputs afresh; its checkpoints live elsewhere), logs one line, and execs the entrypoint with
the variables the Trainer reads. Exits 2 with one line when the variables are missing or wrong.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from kflow.pipeline.kubeflow.replica_env import Replica, ReplicaEnvironmentError, replica_from_environment

ENTRYPOINT_VARIABLE = "KFLOW_ENTRYPOINT"
REPLICA_PLACEHOLDER = "{replica}"


def replica_command(environment: Mapping[str, str]) -> tuple[Replica, list[str]]:
    """This replica and the entrypoint it runs, its `{replica}` placeholders filled in."""
    text = environment.get(ENTRYPOINT_VARIABLE)
    if not text:
        raise ReplicaEnvironmentError(f"missing {ENTRYPOINT_VARIABLE} (the command every replica runs, as JSON)")
    entrypoint = json.loads(text)
    if not isinstance(entrypoint, list) or not entrypoint or not all(isinstance(part, str) for part in entrypoint):
        raise ReplicaEnvironmentError(f"{ENTRYPOINT_VARIABLE} must be a JSON list of strings")
    replica = replica_from_environment(environment)
    return replica, [part.replace(REPLICA_PLACEHOLDER, replica.name) for part in entrypoint]


def own_outputs(command: list[str]) -> list[Path]:
    """The `--output NAME=PATH` folders of the command."""
    pairs = zip(command, command[1:], strict=False)
    return [Path(value.partition("=")[2]) for flag, value in pairs if flag == "--output"]


def main() -> int:
    try:
        replica, command = replica_command(os.environ)
    except (ReplicaEnvironmentError, json.JSONDecodeError) as error:
        print(f"kflow replica: {error}", file=sys.stderr)
        return 2
    for folder in own_outputs(command):
        shutil.rmtree(folder, ignore_errors=True)
    attempt = os.environ.get("KFLOW_RESTART_ATTEMPT")
    print(
        f"kflow replica {replica.name} ({replica.backend}"
        + (f", restart attempt {attempt}" if attempt else "")
        + f"): {' '.join(f'{k}={v}' for k, v in sorted(replica.environment.items()))}",
        file=sys.stderr,
        flush=True,
    )
    if command[0] == "python":  # The interpreter (and environment) this command runs in, as in the image.
        command[0] = sys.executable
    os.execvpe(command[0], command, {**os.environ, **replica.environment})
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
