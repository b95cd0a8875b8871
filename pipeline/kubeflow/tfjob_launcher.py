"""The Trainer task's command when `trainer.workers > 1`: run the entrypoint as a TFJob and wait for it.

    python -m kflow.pipeline.kubeflow.tfjob_launcher --job-prefix=train --replica=worker=2 ... \\
        -- python -m kflow.pipeline.runners.kfp_entrypoint --component ... --input examples=PATH --output model=PATH

The TFJob's pods cannot see the KFP task's artifact paths, so the launcher copies the
inputs to the shared volume (a ReadWriteMany PVC mounted in the task's pod and in every
replica), points the replicas' `--input`/`--output` arguments there (each pod writes its
outputs to a folder of its own, `outputs/<pod name>/`), creates the TFJob, waits for it
(logging pod phases and logs) and copies the writer pod's outputs (the Chief's, else
worker 0's) back to the task's output paths. A failed or timed-out job fails the task (exit 1),
and the launcher deletes the job then, as it does when it is terminated (SIGTERM, exit 143: a
KFP cancel); a finished job stays, with its pods' logs (cleanPodPolicy Running).
"""

from __future__ import annotations

import argparse
import json
import logging
import secrets
import shutil
import signal
import sys
from pathlib import Path

from kflow.pipeline.kubeflow.tfjob import (
    REPLICA_TYPES,
    TFJobFailed,
    TFJobRequest,
    create_tfjob,
    delete_tfjob,
    render_tfjob,
    tfjob_replicas,
    wait_for_tfjob,
    writer_pod,
)

log = logging.getLogger("kflow")


class Terminated(Exception):
    def __str__(self) -> str:
        return "terminated by SIGTERM (the KFP run was cancelled)"


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def replica_command(entrypoint: list[str], job_dir: Path) -> tuple[list[str], dict[str, Path], dict[str, str]]:
    """Rewrites the entrypoint's artifact arguments onto the shared volume.

    Returns the replicas' command, {input: shared path} and {output: its folder name under a pod's outputs}.
    Every replica also gets `job_dir/work` as its working dir: the chief's checkpoints, which a sidecar
    Evaluator replica reads and a restarted replica resumes from.
    """
    command: list[str] = []
    inputs: dict[str, Path] = {}
    outputs: dict[str, str] = {}
    arguments = iter(entrypoint)
    for argument in arguments:
        if argument not in ("--input", "--output"):
            command.append(argument)
            continue
        name, sep, _ = next(arguments, "").partition("=")
        if not sep:
            raise ValueError(f"{argument} needs NAME=PATH")
        if argument == "--input":
            inputs[name] = job_dir / "inputs" / name
            command += [argument, f"{name}={inputs[name]}"]
        else:
            outputs[name] = name
            # Kubernetes expands $(POD_NAME) (set by the template from the pod's name) in commands.
            command += [argument, f"{name}={job_dir / 'outputs' / '$(POD_NAME)' / name}"]
    return [*command, f"--working-dir={job_dir / 'work'}"], inputs, outputs


def task_paths(entrypoint: list[str], option: str) -> dict[str, Path]:
    """The task's own `--input` or `--output` paths in the entrypoint's arguments."""
    return {
        value.partition("=")[0]: Path(value.partition("=")[2])
        for flag, value in zip(entrypoint, entrypoint[1:], strict=False)
        if flag == option
    }


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        print("tfjob_launcher: expected `-- ENTRYPOINT ...` after the options", file=sys.stderr)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="tfjob_launcher", description=__doc__.splitlines()[0])
    parser.add_argument("--job-prefix", required=True)
    parser.add_argument(
        "--replica", action="append", required=True, metavar="ROLE=COUNT", help="a role of the cluster (repeat)"
    )
    parser.add_argument("--image", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--shared-volume-claim", required=True)
    parser.add_argument("--shared-mount-path", required=True)
    parser.add_argument("--timeout-seconds", type=int, default=86400)
    parser.add_argument("--service-account")
    parser.add_argument("--kind", choices=("TFJob", "JAXJob"), default="TFJob", help="the Training Operator job")
    parser.add_argument(
        "--pod-settings",
        type=json.loads,
        default={},
        metavar="JSON",
        help='per role, the replicas\' {"resources", "nodeSelector", "tolerations"}, e.g. {"worker": {...}}',
    )
    args = parser.parse_args(argv[:split])
    entrypoint = argv[split + 1 :]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)

    name = f"{args.job_prefix}-{secrets.token_hex(4)}"
    job_dir = Path(args.shared_mount_path) / name
    command, shared_inputs, shared_outputs = replica_command(entrypoint, job_dir)
    try:
        replicas = tfjob_replicas({role: int(count) for role, _, count in (r.partition("=") for r in args.replica)})
    except ValueError as error:
        parser.error(f"--replica: {error}")
    for input_name, source in task_paths(entrypoint, "--input").items():
        shutil.copytree(source, shared_inputs[input_name])
    manifest = render_tfjob(
        TFJobRequest(
            name=name,
            namespace=args.namespace,
            image=args.image,
            command=command,
            replicas=replicas,
            shared_volume_claim=args.shared_volume_claim,
            shared_mount_path=args.shared_mount_path,
            service_account=args.service_account,
            kind=args.kind,
            pod_settings={REPLICA_TYPES[role]: values for role, values in args.pod_settings.items()},
        )
    )
    from kubernetes import client, config  # Only the launcher needs the Kubernetes client.

    config.load_incluster_config()
    custom_api, core_api = client.CustomObjectsApi(), client.CoreV1Api()
    # A cancelled KFP run SIGTERMs this pod: the job must not outlive it (nor hold its nodes and GPUs).
    previous = signal.signal(signal.SIGTERM, _terminate)
    finished = False
    try:
        create_tfjob(custom_api, manifest)
        log.info("created %s %s/%s", args.kind, args.namespace, name)
        wait_for_tfjob(custom_api, core_api, name, args.namespace, timeout=args.timeout_seconds, kind=args.kind)
        finished = True
    except TFJobFailed as error:
        print(f"tfjob_launcher: {error}; deleting the job", file=sys.stderr)
        return 1
    except (Terminated, KeyboardInterrupt) as stop:
        print(f"tfjob_launcher: {stop}; deleting the job", file=sys.stderr)
        return 143 if isinstance(stop, Terminated) else 130
    finally:
        if not finished:
            delete_tfjob(custom_api, name, args.namespace, kind=args.kind)
        signal.signal(signal.SIGTERM, previous)
    for output_name, target in task_paths(entrypoint, "--output").items():
        source = job_dir / "outputs" / writer_pod(name, replicas) / shared_outputs[output_name]
        shutil.copytree(source, target, dirs_exist_ok=True)
    shutil.rmtree(job_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
