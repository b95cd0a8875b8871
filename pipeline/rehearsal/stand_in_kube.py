"""A STAND-IN Kubernetes API server with STAND-IN Trainer v2 / JobSet and Training Operator controllers: NOT Kubernetes.

It serves, over real HTTP on a free loopback port, the few endpoints kflow's launcher calls through the
real `kubernetes` client (create/get/delete of custom objects, NetworkPolicies, pods and their logs),
and plays the controllers' part: a created TrainJob becomes the pods `stand_in_trainer` renders (as the
Trainer v2.3.0 and JobSet code would), a TFJob/JAXJob the pods the Training Operator would make. Each
job's pods are started together by `start_pods` (by default local processes running their container's
command with their resolved environment; tests/pipeline/kubeflow/hosts.py starts each on a host of its own,
pipeline/rehearsal/container_pods.py each as a container of the image on a container network).
Everything else is real: the client, HTTP, the launcher, the replica command, the entrypoint, the files.

Controller behaviour, as documented by JobSet v0.12 and Trainer v2.3.0: a job succeeds when the pods of
its success-policy jobs (all jobs by default) succeed, and then the others are stopped; a failed pod
restarts the whole group (new pods, same host names, `restart-attempt` + 1) until `maxRestarts`, then
the job fails with `ReachedMaxRestarts`; past `activeDeadlineSeconds` it fails with `DeadlineExceeded`.
`fail_next` injects API errors (a 503, a dropped connection) to test the client's side; `lose_next_reply` lets a call
be done and then drops the connection before its answer (a reply lost on the way back).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from kflow.pipeline.rehearsal.local_pod import local_pods, timestamp
from kflow.pipeline.rehearsal.stand_in_trainer import Pod, jobset_pods, jobset_spec, operator_pods

CUSTOM = re.compile(
    r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)/namespaces/(?P<ns>[^/]+)/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?$"
)
PODS = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods(?:/(?P<name>[^/]+)/log)?$")
log = logging.getLogger("kflow.rehearse")


@dataclass
class Fault:
    method: str
    path: re.Pattern
    status: int  # 0: drop the connection without an answer; LOST_REPLY: do the call, then drop it
    times: int


LOST_REPLY = -1


@dataclass
class JobRun:
    """One cluster job being played: its pods, restarts and end."""

    kind: str
    manifest: dict[str, Any]
    pods: list[Any] = field(default_factory=list)
    restarts: int = 0
    deleted: threading.Event = field(default_factory=threading.Event)
    conditions: list[dict[str, Any]] = field(default_factory=list)


class StandInKubernetes(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        start_pods: Callable[[list[Pod]], list[Any]] = local_pods,
        poll_seconds: float = 0.2,
        address: str = "127.0.0.1",
    ) -> None:
        super().__init__((address, 0), _Handler)
        self.start_pods, self.poll_seconds = start_pods, poll_seconds
        self.objects: dict[tuple[str, str, str, str, str], dict[str, Any]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self.faults: list[Fault] = []
        self.runs: dict[str, JobRun] = {}
        self.lock = threading.RLock()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    # Set-up and inspection, for tests.

    def __enter__(self) -> StandInKubernetes:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        for run in list(self.runs.values()):
            run.deleted.set()
            self._stop(run)
        self.shutdown()
        self.server_close()

    def kubeconfig(self, path: Path, host: str = "127.0.0.1") -> Path:
        """A kubeconfig for this server, reached at `host` (a container reaches it at its network's gateway)."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "stand-in", "cluster": {"server": f"http://{host}:{self.server_address[1]}"}}],
            "users": [{"name": "launcher", "user": {"token": "stand-in"}}],
            "contexts": [{"name": "stand-in", "context": {"cluster": "stand-in", "user": "launcher"}}],
            "current-context": "stand-in",
        }
        path.write_text(json.dumps(config))
        return path

    def fail_next(self, method: str, path: str, status: int, times: int = 1) -> None:
        self.faults.append(Fault(method, re.compile(path), status, times))

    def lose_next_reply(self, method: str, path: str, times: int = 1) -> None:
        """The next `times` matching calls are done (an object created, ...) but their answers never arrive."""
        self.faults.append(Fault(method, re.compile(path), LOST_REPLY, times))

    def put(self, manifest: dict[str, Any]) -> None:
        """An object that exists before the test (e.g. a runtime someone applied)."""
        group, version = manifest["apiVersion"].split("/")
        plural = manifest["kind"].lower() + "s"
        key = (group, version, plural, manifest["metadata"]["namespace"], manifest["metadata"]["name"])
        self.objects[key] = manifest

    def created(self, plural: str) -> list[dict[str, Any]]:
        return [body for method, path, body in self.requests if method == "POST" and path.endswith(f"/{plural}")]

    def deleted(self) -> list[str]:
        return [path for method, path, _ in self.requests if method == "DELETE"]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 60) -> None:
        end = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > end:
                raise TimeoutError("the stand-in cluster did not get there in time")
            time.sleep(0.1)

    # The controllers.

    def _start(self, run: JobRun) -> None:
        threading.Thread(target=self._play_to_an_end, args=(run,), daemon=True).start()

    def _play_to_an_end(self, run: JobRun) -> None:
        """`_play`, and a job the stand-in itself fails on ends Failed saying why: a controller thread that died left
        its job running, and the launcher following it waited for its deadline (a day by default)."""
        try:
            self._play(run)
        except Exception as error:
            log.exception("stand-in Kubernetes: playing %s failed", run.manifest["metadata"]["name"])
            self._end(run, "Failed", "StandInError", f"the stand-in controller failed: {error!r}")

    def _pods_for(self, run: JobRun) -> list[Pod]:
        manifest = run.manifest
        name, namespace = manifest["metadata"]["name"], manifest["metadata"]["namespace"]
        if run.kind == "TrainJob":
            runtime = self.objects[_runtime_key(manifest)]
            return jobset_pods(name, namespace, jobset_spec(manifest, runtime), run.restarts)
        return operator_pods(manifest)

    def _play(self, run: JobRun) -> None:
        manifest = run.manifest
        started = time.monotonic()
        deadline = manifest["spec"].get("activeDeadlineSeconds") or manifest["spec"].get("runPolicy", {}).get(
            "activeDeadlineSeconds"
        )
        if run.kind == "TrainJob":
            jobset = jobset_spec(manifest, self.objects[_runtime_key(manifest)])
            targets = jobset.get("successPolicy", {}).get("targetReplicatedJobs") or [
                r["name"] for r in jobset["replicatedJobs"]
            ]
            max_restarts = jobset.get("failurePolicy", {}).get("maxRestarts", 0)
        else:
            specs = manifest["spec"]["tfReplicaSpecs" if run.kind == "TFJob" else "jaxReplicaSpecs"]
            targets = ["chief"] if "Chief" in specs else ["worker"]
            max_restarts = 0
        while not run.deleted.is_set():
            run.pods = self.start_pods(self._pods_for(run))
            while not run.deleted.is_set():
                time.sleep(self.poll_seconds)
                phases = [(p.pod.replicated_job, p.phase) for p in run.pods]
                if deadline and time.monotonic() - started > deadline:
                    return self._end(run, "Failed", "DeadlineExceeded", "TrainJob exceeded its active deadline")
                if any(phase == "Failed" for _, phase in phases):
                    break
                if all(phase == "Succeeded" for job, phase in phases if job in targets):
                    return self._end(run, "Complete", "AllJobsCompleted", "jobset completed successfully")
            else:
                return self._stop(run)
            failed = next(p for p in run.pods if p.phase == "Failed")
            first = f"{run.manifest['metadata']['name']}-{failed.pod.replicated_job}-0"
            self._stop(run)
            if run.restarts >= max_restarts:
                reason = "ReachedMaxRestarts" if max_restarts else "FailedJobs"
                return self._end(run, "Failed", reason, f"jobset failed (first failed job: {first})")
            run.restarts += 1

    def _end(self, run: JobRun, state: str, reason: str, message: str) -> None:
        if run.kind != "TrainJob":
            state = "Succeeded" if state == "Complete" else state
        run.conditions.append({"type": state, "status": "True", "reason": reason, "message": message})
        self._stop(run)  # JobSet deletes the still-active jobs of a finished set; the operator its running pods.

    def _stop(self, run: JobRun) -> None:
        for pod in run.pods:
            pod.stop()

    def pods(self, namespace: str, selector: str) -> list[Any]:
        key, _, value = selector.partition("=")
        with self.lock:
            runs = list(self.runs.values())
        return [p for run in runs for p in run.pods if p.pod.namespace == namespace and p.pod.labels.get(key) == value]


def _runtime_key(trainjob: dict[str, Any]) -> tuple[str, str, str, str, str]:
    ref = trainjob["spec"]["runtimeRef"]
    return ("trainer.kubeflow.org", "v1alpha1", "trainingruntimes", trainjob["metadata"]["namespace"], ref["name"])


class _Handler(BaseHTTPRequestHandler):
    server: StandInKubernetes

    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self, status: int, body: Any, content_type: str = "application/json") -> None:
        if getattr(self, "lose_reply", False):
            self.lose_reply = False
            self.close_connection = True
            self.connection.shutdown(2)  # Done, but the client never hears so: it sees a dropped connection.
            return
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _status(self, code: int, reason: str, message: str) -> None:
        self._reply(
            code,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": reason,
                "message": message,
                "code": code,
            },
        )

    def _fault(self, method: str, path: str) -> bool:
        for fault in self.server.faults:
            if fault.times > 0 and fault.method == method and fault.path.search(path):
                fault.times -= 1
                if fault.status == LOST_REPLY:
                    self.lose_reply = True
                    return False
                if fault.status == 0:
                    self.close_connection = True
                    self.connection.shutdown(2)  # An answer that never comes: the client sees a dropped connection.
                else:
                    self._status(fault.status, "ServiceUnavailable", "the stand-in was told to fail this call")
                return True
        return False

    def _handle(self, method: str) -> None:
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.server.requests.append((method, url.path, body))
        if self._fault(method, url.path):
            return
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if match := PODS.match(url.path):
            return self._pods(match, query)
        if match := CUSTOM.match(url.path):
            return self._objects(method, match, body)
        self._status(404, "NotFound", f"the stand-in does not serve {url.path}")

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _objects(self, method: str, match: re.Match, body: Any) -> None:
        server = self.server
        group, version, namespace, plural, name = match.group("group", "version", "ns", "plural", "name")
        with server.lock:
            if method == "POST":
                name = body["metadata"]["name"]
                key = (group, version, plural, namespace, name)
                if key in server.objects:
                    return self._status(409, "AlreadyExists", f"{plural} {name!r} already exists")
                if plural == "trainjobs" and _runtime_key(body) not in server.objects:
                    return self._status(  # What Trainer v2's admission webhook answers.
                        422, "Invalid", "spec.runtimeRef: specified trainingRuntime must be created before the TrainJob"
                    )
                body = json.loads(json.dumps(body))
                body["metadata"]["uid"] = str(uuid.uuid4())
                body["metadata"]["creationTimestamp"] = timestamp()
                server.objects[key] = body
                if plural in ("trainjobs", "tfjobs", "jaxjobs"):
                    run = server.runs[name] = JobRun(body["kind"], body)
                    server._start(run)
                return self._reply(201, body)
            key = (group, version, plural, namespace, name)
            if key not in server.objects:
                return self._status(404, "NotFound", f"{plural} {name!r} not found")
            found = server.objects[key]
            if method == "DELETE":
                del server.objects[key]
                if name in server.runs:
                    server.runs[name].deleted.set()
                    threading.Thread(target=server._stop, args=(server.runs[name],), daemon=True).start()
                return self._reply(200, {"kind": "Status", "status": "Success"})
            if name in server.runs:
                found = {**found, "status": {"conditions": list(server.runs[name].conditions)}}
            return self._reply(200, found)

    def _pods(self, match: re.Match, query: dict[str, str]) -> None:
        namespace, name = match.group("ns", "name")
        if name is None:
            pods = self.server.pods(namespace, query.get("labelSelector", ""))
            return self._reply(
                200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [_pod_json(p) for p in pods]}
            )
        found = [p for run in list(self.server.runs.values()) for p in run.pods if p.pod.name == name]
        if not found:
            return self._status(404, "NotFound", f"pods {name!r} not found")
        lines = found[0].lines
        if "sinceSeconds" in query:
            since = datetime.now(UTC).timestamp() - int(query["sinceSeconds"])
            lines = [
                (s, t)
                for s, t in lines
                if datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp() >= since
            ]
        stamped = query.get("timestamps", "").lower() in ("true", "1", "t")  # as Go's ParseBool reads it
        self._reply(200, "".join(f"{s} {t}\n" if stamped else f"{t}\n" for s, t in lines), "text/plain")


def _pod_json(running: Any) -> dict[str, Any]:
    pod: Pod = running.pod
    state = (
        {"running": {}}
        if running.exit_code is None
        else {"terminated": {"exitCode": running.exit_code, "reason": "Error" if running.exit_code else "Completed"}}
    )
    return {
        "metadata": {
            "name": pod.name,
            "namespace": pod.namespace,
            "uid": pod.uid,
            "labels": pod.labels,
            "annotations": pod.annotations,
        },
        "spec": {
            "containers": [{"name": c["name"], "image": c.get("image", "")} for c in pod.spec["containers"]],
            "hostname": pod.hostname,
            "subdomain": pod.subdomain,
        },
        "status": {
            "phase": running.phase,
            "containerStatuses": [
                {
                    "name": pod.spec["containers"][0]["name"],
                    "image": "",
                    "imageID": "",
                    "ready": running.exit_code is None,
                    "restartCount": 0,
                    "state": state,
                }
            ],
        },
    }
