"""The Kubernetes calls a launcher makes, each retried with backoff while the API server has a passing problem.

A long training job is followed for hours; one refused connection, a 503 from an API server being
upgraded or a 429 from its rate limiter must not fail (let alone delete) the job. `KubeApi.call`
retries such errors with exponential backoff (1 s, 2 s, … up to 30 s between tries) for up to
`retry_seconds` in a row, logging each; any other error (403 Forbidden, 404, 422 Invalid) is
raised at once, as is a transient one that outlasts the budget.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

log = logging.getLogger("kflow")
T = TypeVar("T")

TRANSIENT_STATUS = {0, 408, 429, 500, 502, 503, 504}  # 0: the client's own "no response"


class KubeApiError(RuntimeError):
    """A Kubernetes call failed for good: `status` is the HTTP status (None when there was no answer)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def is_transient(error: BaseException) -> bool:
    status = getattr(error, "status", None)
    if status is not None:
        return int(status) in TRANSIENT_STATUS
    # urllib3's MaxRetryError/ProtocolError/NewConnectionError and the standard library's socket errors.
    return isinstance(error, (ConnectionError, TimeoutError, OSError)) or type(error).__module__.startswith("urllib3")


class KubeApi:
    """The CustomObjectsApi, CoreV1Api and NetworkingV1Api of one cluster (or stand-ins with the same methods)."""

    def __init__(
        self,
        custom: Any,
        core: Any,
        networking: Any,
        retry_seconds: float = 300.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.custom, self.core, self.networking = custom, core, networking
        self.retry_seconds, self.sleep, self.clock = retry_seconds, sleep, clock

    @classmethod
    def connect(cls, **options: Any) -> KubeApi:
        """In a pod: its service account; elsewhere: the kubeconfig (KUBECONFIG or ~/.kube/config)."""
        from kubernetes import client, config  # Only the launcher needs the Kubernetes client.

        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config()
        else:  # The client reads KUBECONFIG once, when imported: pass the current one.
            config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
        return cls(client.CustomObjectsApi(), client.CoreV1Api(), client.NetworkingV1Api(), **options)

    def call(self, what: str, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`function(*args, **kwargs)`, retried on transient errors; KubeApiError naming `what` otherwise."""
        started, wait = self.clock(), 1.0
        while True:
            try:
                return function(*args, **kwargs)
            except Exception as error:  # The client raises ApiException, urllib3 and socket errors alike.
                status = getattr(error, "status", None)
                reason = f"{status} {getattr(error, 'reason', '')}".strip() if status is not None else str(error)
                if not is_transient(error):
                    raise KubeApiError(f"{what}: {reason}", status) from error
                if self.clock() - started + wait > self.retry_seconds:
                    raise KubeApiError(
                        f"{what}: {reason} (still failing after {self.clock() - started:.0f} s of retries)", status
                    ) from error
                log.warning("%s: %s; retrying in %.0f s", what, reason.splitlines()[0][:200], wait)
                self.sleep(wait)
                wait = min(wait * 2, 30.0)

    # The calls, by what they do.

    def create(self, group: str, version: str, namespace: str, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        return self.call(
            f"creating {body['kind']} {namespace}/{name}",
            self.custom.create_namespaced_custom_object,
            group,
            version,
            namespace,
            plural,
            body,
        )

    def get(self, group: str, version: str, namespace: str, plural: str, name: str) -> dict[str, Any] | None:
        """The object, or None when there is none."""
        try:
            return self.call(
                f"reading {plural} {namespace}/{name}",
                self.custom.get_namespaced_custom_object,
                group,
                version,
                namespace,
                plural,
                name,
            )
        except KubeApiError as error:
            if error.status == 404:
                return None
            raise

    def delete(self, group: str, version: str, namespace: str, plural: str, name: str) -> None:
        """Deletes the object and, in the background, what it owns; gone already is fine."""
        try:
            self.call(
                f"deleting {plural} {namespace}/{name}",
                self.custom.delete_namespaced_custom_object,
                group,
                version,
                namespace,
                plural,
                name,
                propagation_policy="Background",
            )
        except KubeApiError as error:
            if error.status != 404:
                raise

    def create_network_policy(self, body: dict[str, Any]) -> None:
        namespace = body["metadata"]["namespace"]
        self.call(
            f"creating NetworkPolicy {namespace}/{body['metadata']['name']}",
            self.networking.create_namespaced_network_policy,
            namespace,
            body,
        )

    def pods(self, namespace: str, selector: str) -> list[Any]:
        return self.call(
            f"listing the pods {selector}", self.core.list_namespaced_pod, namespace, label_selector=selector
        ).items

    def pod_log(self, name: str, namespace: str, since_seconds: int | None = None) -> str:
        options: dict[str, Any] = {"timestamps": True}
        if since_seconds is not None:
            options["since_seconds"] = since_seconds
        return self.call(f"reading the log of {name}", self.core.read_namespaced_pod_log, name, namespace, **options)
