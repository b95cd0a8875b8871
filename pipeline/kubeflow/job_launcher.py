"""The train task's command when the Trainer runs as a cluster: a TrainJob (or TFJob) from start to cleanup.

    python -m kflow.pipeline.kubeflow.job_launcher --job-prefix=train --replica=worker=2 ... \\
        -- python -m kflow.pipeline.runners.kfp_entrypoint --component ... --input examples=PATH --output model=PATH

The job's pods cannot see the KFP task's artifact paths, so the launcher copies the inputs to the
shared volume (a ReadWriteMany PVC mounted in the task's pod and in every replica), points the
replicas' `--input`/`--output` arguments there (each replica writes to `outputs/<replica>/`),
and then:

1. creates what the job needs that outlives it (Trainer v2: the runtime, when it is missing), the
   job (owned by the launcher's own pod, so Kubernetes removes it however the task dies, and with
   an active deadline) and a NetworkPolicy (owned by the job) that admits only the job's own pods;
2. follows the job: its state, its pods' phases, and their logs, each line prefixed with the
   replica (`[worker-1] ...`); API errors that pass are retried with backoff (`kube_api`);
3. copies the writer's outputs (the chief's, else worker 0's) back to the task's outputs, and writes the
   task's executor output (from the entrypoint's `--executor-input`, which the replicas do not get: the
   file it names is the launcher's, in the task's pod) so that KFP sees the task's output artifacts.

Both copies (the task's inputs onto the volume, the writer's outputs back) take folders and regular files only,
never following a link: a replica holds no Kubernetes credentials, and a `token.txt -> <a path only the launcher's
pod has>` among its outputs must not make the launcher upload that file. A symbolic link or any other kind of file
(a FIFO, a device) fails the task in one line naming it (plain_copy.py).

The job carries this launcher's identity (the annotation LAUNCH_ANNOTATION, a random id made for this launch): a
create whose reply was lost and whose retry meets 409 Already Exists adopts the job it finds when that job carries
the same id, and fails in one line otherwise (`create_or_adopt`).

A failed or timed-out job fails the task (exit 1) with one line saying why; the launcher deletes
the job then, and when it is itself stopped (SIGTERM, exit 143: a KFP cancel; Ctrl-C, 130). A
finished job is kept with its pods' logs. The job's folder on the shared volume (inputs, outputs,
checkpoints) is removed in every case.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import secrets
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.heartbeat import HEARTBEATS, REPORT, stall_line
from kflow.pipeline.kubeflow import tfjob, trainjob
from kflow.pipeline.kubeflow.cluster_job import ClusterJob, JobBackend, job_name, owner_reference
from kflow.pipeline.kubeflow.executor_output import write_executor_output
from kflow.pipeline.kubeflow.kube_api import KubeApi, KubeApiError
from kflow.pipeline.kubeflow.plain_copy import UnsafeTree, copy_plain_tree
from kflow.pipeline.kubeflow.replica import REPLICA_PLACEHOLDER

log = logging.getLogger("kflow")

BACKENDS: dict[str, JobBackend] = {backend.name: backend for backend in (trainjob.BACKEND, tfjob.BACKEND)}
# What the launcher calls besides its backend's objects: the job's NetworkPolicy, its pods and their logs.
COMMON_RULES = (
    {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
)


def launcher_rules(backend: str) -> list[dict[str, Any]]:
    """The RBAC rules the launcher needs on `backend`, and no more."""
    return [*BACKENDS[backend].rules, *COMMON_RULES]


# The annotation that makes a job this launcher's own: a create retried after a lost reply adopts only its own job.
LAUNCH_ANNOTATION = "kflow.dev/launch-id"

# The launcher's own pod, as the compiled task passes it in (Downward API): the job's owner.
OWNER_VARIABLES = ("KFLOW_POD_NAME", "KFLOW_POD_UID", "KFLOW_POD_NAMESPACE")
# How long past the job's own deadline the launcher waits for the cluster to report it, before it gives up.
DEADLINE_GRACE_SECONDS = 300


class Terminated(BaseException):
    """Raised by the SIGTERM handler; a BaseException, as KeyboardInterrupt is, so that no `except Exception` on the
    way (the Kubernetes calls' retry wrapper catches every client error) mistakes a cancel for an API error."""

    def __str__(self) -> str:
        return "terminated by SIGTERM (the KFP run was cancelled)"


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def shared_command(entrypoint: list[str], job_dir: Path) -> tuple[list[str], dict[str, Path], dict[str, str]]:
    """Rewrites the entrypoint's artifact arguments onto the shared volume.

    Returns the replicas' command, {input: shared path} and {output: its folder name under a replica's
    outputs}. Every replica also gets `job_dir/work` as its working dir: the chief's checkpoints, which a
    sidecar evaluator reads and a restarted group resumes from.
    """
    command: list[str] = []
    inputs: dict[str, Path] = {}
    outputs: dict[str, str] = {}
    arguments = iter(entrypoint)
    for argument in arguments:
        if argument == "--executor-input":  # The launcher's own: it writes the task's executor output.
            next(arguments, None)
            continue
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
            command += [argument, f"{name}={job_dir / 'outputs' / REPLICA_PLACEHOLDER / name}"]
    return [*command, f"--working-dir={job_dir / 'work'}"], inputs, outputs


def task_executor_input(entrypoint: list[str]) -> dict[str, Any] | None:
    """The KFP executor input given to the entrypoint (`--executor-input JSON`), if any."""
    given = [value for flag, value in zip(entrypoint, entrypoint[1:], strict=False) if flag == "--executor-input"]
    return json.loads(given[-1]) if given else None


def task_paths(entrypoint: list[str], option: str) -> dict[str, Path]:
    """The task's own `--input` or `--output` paths in the entrypoint's arguments."""
    return {
        value.partition("=")[0]: Path(value.partition("=")[2])
        for flag, value in zip(entrypoint, entrypoint[1:], strict=False)
        if flag == option
    }


def _timestamp(line: str) -> tuple[str, str]:
    """(a sortable RFC 3339 timestamp, the text) of a log line read with timestamps."""
    stamp, _, text = line.partition(" ")
    seconds, dot, fraction = stamp.rstrip("Z").partition(".")
    return f"{seconds}.{fraction.ljust(9, '0')}" if dot else f"{seconds}.000000000", text


class LogFollower:
    """Prints each pod's new log lines, prefixed with its replica, reading only the last minutes each time."""

    def __init__(self, api: KubeApi, namespace: str, replica_of: Callable[[Any], str], clock=time.monotonic):
        self.api, self.namespace, self.replica_of, self.clock = api, namespace, replica_of, clock
        self.seen: dict[str, tuple[str, float]] = {}  # pod → (last timestamp printed, when read)
        self.phases: dict[str, str] = {}

    def poll(self, pods: list[Any]) -> None:
        for pod in pods:
            name, replica = pod.metadata.name, self.replica_of(pod)
            if self.phases.get(name) != pod.status.phase:
                self.phases[name] = pod.status.phase
                log.info("[%s] pod %s is %s%s", replica, name, pod.status.phase, _termination(pod))
            if pod.status.phase == "Pending":
                continue
            last, read_at = self.seen.get(name, ("", 0.0))
            since = math.ceil(self.clock() - read_at) + 5 if last else None
            try:
                text = self.api.pod_log(name, self.namespace, since_seconds=since)
            except KubeApiError as error:  # A container that is starting has no log yet: next time.
                log.debug("no log of %s yet: %s", name, error)
                continue
            for line in text.splitlines():
                stamp, message = _timestamp(line)
                if stamp > last:
                    print(f"[{replica}] {message}", file=sys.stderr, flush=True)
                    last = stamp
            self.seen[name] = (last, self.clock())


def _termination(pod: Any) -> str:
    """`: exit 137 (OOMKilled)` for a pod whose container ended, else ''."""
    for status in getattr(pod.status, "container_statuses", None) or []:
        ended = getattr(getattr(status, "state", None), "terminated", None)
        if ended is not None:
            return f": exit {ended.exit_code}" + (f" ({ended.reason})" if ended.reason else "")
    return ""


def _failed(pod: Any) -> bool:
    return pod.status.phase == "Failed"


def follow(
    api: KubeApi,
    backend: JobBackend,
    job: ClusterJob,
    poll_seconds: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[str, str]:
    """Waits until the job ends: ("Succeeded" | "Failed", why), logging its pods' phases and lines."""
    deadline = clock() + job.deadline_seconds + DEADLINE_GRACE_SECONDS
    logs = LogFollower(api, job.namespace, backend.pod_replica, clock)
    while True:
        found = api.get(backend.group, backend.version, job.namespace, backend.plural(job), job.name)
        pods = api.pods(job.namespace, backend.pod_selector(job.name))
        logs.poll(pods)
        if found is None:
            return "Failed", "the job is gone (deleted by someone else)"
        state, why = backend.state(found)
        if state is not None:
            lost = [f"{backend.pod_replica(p)} ({p.metadata.name}{_termination(p)})" for p in pods if _failed(p)]
            return state, why + (f"; failed replicas: {', '.join(lost)}" if lost and state == "Failed" else "")
        if clock() >= deadline:
            return "Failed", f"did not finish within {job.deadline_seconds} s"
        sleep(poll_seconds)


def stall_report(job_dir: Path) -> str:
    """`; stalled: <the replica's watchdog report>` when a replica of the job stopped training (else '')."""
    report = job_dir / "work" / HEARTBEATS / REPORT
    try:
        found = json.loads(report.read_text())
        return f"; stalled: {stall_line(found['replica'], found['waited_seconds'], found['beats'])}"
    except (OSError, ValueError, KeyError):
        return ""


def create_or_adopt(api: KubeApi, backend: JobBackend, job: ClusterJob, manifest: dict[str, Any]) -> dict[str, Any]:
    """Creates the job; when the create meets 409 (its first try was done but the reply lost, and the retry found
    the job), adopts the job found if it carries this launch's id, else fails in one line."""
    plural = backend.plural(job)
    try:
        return api.create(backend.group, backend.version, job.namespace, plural, manifest)
    except KubeApiError as error:
        if error.status != 409:
            raise
        found = api.get(backend.group, backend.version, job.namespace, plural, job.name)
        ours = manifest["metadata"]["annotations"][LAUNCH_ANNOTATION]
        theirs = (((found or {}).get("metadata") or {}).get("annotations") or {}).get(LAUNCH_ANNOTATION)
        if found is None or theirs != ours:
            raise KubeApiError(
                f"{manifest['kind']} {job.namespace}/{job.name} already exists and was not created by this launcher "
                f"({LAUNCH_ANNOTATION} {theirs!r}, not {ours!r}); not touching it",
                409,
            ) from error
        log.info("the reply to creating %s %s/%s was lost: adopting the job it made", manifest["kind"],
                 job.namespace, job.name)  # fmt: skip
        return found


def ensure_prerequisites(api: KubeApi, backend: JobBackend, job: ClusterJob) -> None:
    """Creates what the job needs and outlives it (a TrainingRuntime, named by its content) when missing."""
    for group, version, plural, manifest in backend.prerequisites(job):
        name = manifest["metadata"]["name"]
        if api.get(group, version, job.namespace, plural, name) is not None:
            continue
        try:
            api.create(group, version, job.namespace, plural, manifest)
            log.info("created %s %s/%s", manifest["kind"], job.namespace, name)
        except KubeApiError as error:
            if error.status != 409:  # Created meanwhile by a concurrent run: the same content, by its name.
                raise KubeApiError(
                    f"{error}; apply it beforehand with `kflow manifests CONFIG -o DIR` and `kubectl apply -f DIR`",
                    error.status,
                ) from error


def isolate(api: KubeApi, backend: JobBackend, job: ClusterJob, created: dict[str, Any]) -> None:
    """A NetworkPolicy, owned by the job, that admits only the job's own pods to its replicas."""
    uid = (created.get("metadata") or {}).get("uid")
    if not uid:
        log.warning("the API returned no uid for %s: no NetworkPolicy isolates its pods", job.name)
        return
    owner = owner_reference(f"{backend.group}/{backend.version}", created["kind"], job.name, uid)
    try:
        api.create_network_policy(backend.network_policy(job, owner))
    except KubeApiError as error:
        # Its name is the job's, and the job is this launcher's: a 409 is this policy, made by a try whose reply was
        # lost.
        if error.status != 409:
            raise


def launcher_owner(environment: dict[str, str]) -> tuple[dict[str, Any] | None, str | None]:
    """(an owner reference to the launcher's pod, its namespace), from the variables the compiled task sets."""
    name, uid, namespace = (environment.get(variable) for variable in OWNER_VARIABLES)
    if not (name and uid):
        return None, namespace
    return owner_reference("v1", "Pod", name, uid), namespace


def parse_arguments(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        raise SystemExit("job_launcher: expected `-- ENTRYPOINT ...` after the options")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="job_launcher", description=__doc__.splitlines()[0])
    parser.add_argument("--job-prefix", required=True)
    parser.add_argument("--replica", action="append", required=True, metavar="ROLE=COUNT", help="a role (repeat)")
    parser.add_argument("--image", required=True)
    parser.add_argument("--namespace", required=True, help="used when the pod's own namespace is not passed in")
    parser.add_argument("--shared-volume-claim", required=True)
    parser.add_argument("--shared-mount-path", required=True)
    parser.add_argument("--timeout-seconds", type=int, default=86400)
    parser.add_argument("--service-account", default="kflow-training")
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="trainjob")
    parser.add_argument("--framework", choices=("tensorflow", "jax"), default="tensorflow")
    parser.add_argument("--max-restarts", type=int, default=0)
    parser.add_argument("--poll-seconds", type=float, default=10.0)
    parser.add_argument(
        "--pod-settings",
        type=json.loads,
        default={},
        metavar="JSON",
        help='per role, the replicas\' {"resources", "nodeSelector", "tolerations"}, e.g. {"worker": {...}}',
    )
    return parser.parse_args(argv[:split]), argv[split + 1 :]


def requested_job(args: argparse.Namespace, name: str, namespace: str, command: list[str]) -> ClusterJob:
    """The job the launcher's options describe, its replicas running `command`."""
    return ClusterJob(
        name=name,
        namespace=namespace,
        image=args.image,
        entrypoint=command,
        replicas={role: int(count) for role, _, count in (r.partition("=") for r in args.replica)},
        framework=args.framework,
        shared_volume_claim=args.shared_volume_claim,
        shared_mount_path=args.shared_mount_path,
        service_account=args.service_account,
        pod_settings=args.pod_settings,
        max_restarts=args.max_restarts,
        deadline_seconds=args.timeout_seconds,
        component=args.job_prefix,
    )


def main(argv: list[str] | None = None, connect: Callable[[], KubeApi] = KubeApi.connect) -> int:
    args, entrypoint = parse_arguments(list(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    owner, own_namespace = launcher_owner(dict(os.environ))
    name = job_name(args.job_prefix, secrets.token_hex(4))
    job_dir = Path(args.shared_mount_path) / name
    command, shared_inputs, shared_outputs = shared_command(entrypoint, job_dir)
    try:
        job = requested_job(args, name, own_namespace or args.namespace, command)
    except ValueError as error:
        print(f"job_launcher: {error}", file=sys.stderr)
        return 2
    if owner is None:
        log.warning("KFLOW_POD_UID is not set: the job will outlive this launcher if it is killed outright")
    backend = BACKENDS[args.backend]
    previous = signal.signal(signal.SIGTERM, _terminate)
    created, succeeded = False, False
    try:
        for input_name, source in task_paths(entrypoint, "--input").items():
            copy_plain_tree(source, shared_inputs[input_name], f"input {input_name}")
        api = connect()
        ensure_prerequisites(api, backend, job)
        manifest = backend.render(job, owner)
        manifest["metadata"].setdefault("annotations", {})[LAUNCH_ANNOTATION] = secrets.token_hex(16)
        created_job = create_or_adopt(api, backend, job, manifest)
        created = True
        log.info("created %s %s/%s", manifest["kind"], job.namespace, job.name)
        isolate(api, backend, job, created_job)
        state, why = follow(api, backend, job, poll_seconds=args.poll_seconds)
        if state != "Succeeded":
            print(f"job_launcher: {job.name} failed: {why}{stall_report(job_dir)}; deleting the job", file=sys.stderr)
            return 1
        for output_name, target in task_paths(entrypoint, "--output").items():
            source = job_dir / "outputs" / job.writer() / shared_outputs[output_name]
            copy_plain_tree(source, target, f"{job.writer()}'s output {output_name}", within=job_dir)
        write_executor_output(task_executor_input(entrypoint))
        succeeded = True
        log.info("%s succeeded; copied %s's outputs back", job.name, job.writer())
        return 0
    except (KubeApiError, UnsafeTree) as error:
        print(f"job_launcher: {error}", file=sys.stderr)
        return 1
    except (Terminated, KeyboardInterrupt) as stop:
        print(f"job_launcher: {stop or 'interrupted'}; deleting the job", file=sys.stderr)
        return 143 if isinstance(stop, Terminated) else 130
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # A second SIGTERM must not cut the cleanup short.
        try:
            if created and not succeeded:
                api.delete(backend.group, backend.version, job.namespace, backend.plural(job), job.name)
                log.info("deleted %s %s/%s", backend.name, job.namespace, job.name)
        except KubeApiError as error:
            print(f"job_launcher: could not delete {job.name}: {error}", file=sys.stderr)
        finally:
            shutil.rmtree(job_dir, ignore_errors=True)
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
