"""A STAND-IN for the Kubeflow Pipelines API server, for tests: NOT a KFP backend.

It implements only the part of the KFP v2beta1 REST API that the kfp client and the
`kfp` CLI use to submit a run (health check, experiments list/create/get, runs
create/get) and to create a recurring run (recurringruns create/get), keeps what it
receives, and runs nothing. A recurring run is accepted only if KFP's own API types
and the API server's rules accept it (kfp_api_types.py); else 400, as KFP answers.
Tests assert on the received requests, e.g. that the pipeline spec of the created run
is the compiled one.
"""

from __future__ import annotations

import json
import threading
import uuid
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.pipeline.kubeflow.kfp_api_types import recurring_run_problems

PREFIX = "/apis/v2beta1"
CREATED_AT = "2026-01-01T00:00:00Z"


class StandInKfpApiServer(ThreadingHTTPServer):
    """Listens on a free loopback port; `requests` logs (method, path, query, body) of each call."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, str, dict[str, list[str]], Any]] = []
        self.experiments: dict[str, dict[str, Any]] = {}
        self.runs: dict[str, dict[str, Any]] = {}
        self.recurring_runs: dict[str, dict[str, Any]] = {}
        self.refused: list[list[str]] = []  # the problems of each request it answered 400
        self.lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def created_runs(self) -> list[dict[str, Any]]:
        return [body for method, path, _, body in self.requests if method == "POST" and path == f"{PREFIX}/runs"]


@contextmanager
def stand_in_kfp_api_server():
    """Starts the stand-in server in a thread and always stops it."""
    server = StandInKfpApiServer()
    thread = threading.Thread(target=server.serve_forever, name="stand-in-kfp-api", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class _Handler(BaseHTTPRequestHandler):
    server: StandInKfpApiServer

    def log_message(self, format: str, *args: Any) -> None:  # Keeps test output quiet.
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        url = urlparse(self.path)
        query = parse_qs(url.query)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        server = self.server
        with server.lock:
            server.requests.append((method, url.path, query, body))
            status, payload = self._route(method, url.path, query, body)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        server = self.server
        if path == f"{PREFIX}/healthz":
            return 200, {"multi_user": False}
        if path == f"{PREFIX}/experiments" and method == "GET":
            wanted = _display_name_filter(query)
            found = [e for e in server.experiments.values() if wanted is None or e["display_name"] == wanted]
            return 200, {"experiments": found, "total_size": len(found)} if found else {}
        if path == f"{PREFIX}/experiments" and method == "POST":
            experiment = {
                **body,
                "experiment_id": str(uuid.uuid4()),
                "created_at": CREATED_AT,
                "storage_state": "AVAILABLE",
            }
            server.experiments[experiment["experiment_id"]] = experiment
            return 200, experiment
        if path.startswith(f"{PREFIX}/experiments/") and method == "GET":
            experiment = server.experiments.get(path.rsplit("/", 1)[1])
            return (200, experiment) if experiment else (404, {"error": "no such experiment", "code": 5})
        if path == f"{PREFIX}/runs" and method == "POST":
            run = {**body, "run_id": str(uuid.uuid4()), "created_at": CREATED_AT, "state": "PENDING"}
            server.runs[run["run_id"]] = run
            return 200, run
        if path == f"{PREFIX}/recurringruns" and method == "POST":
            problems = recurring_run_problems(body, server.experiments)
            if problems:
                server.refused.append(problems)
                return 400, {"error": "; ".join(problems), "code": 3}  # INVALID_ARGUMENT
            recurring = {
                **body,
                "recurring_run_id": str(uuid.uuid4()),
                "created_at": CREATED_AT,
                "updated_at": CREATED_AT,
                "status": "ENABLED" if body.get("mode") == "ENABLE" else "DISABLED",
            }
            server.recurring_runs[recurring["recurring_run_id"]] = recurring
            return 200, recurring
        if path.startswith(f"{PREFIX}/recurringruns/") and method == "GET":
            recurring = server.recurring_runs.get(path.rsplit("/", 1)[1])
            return (200, recurring) if recurring else (404, {"error": "no such recurring run", "code": 5})
        if path.startswith(f"{PREFIX}/runs/") and method == "GET":
            run = server.runs.get(path.rsplit("/", 1)[1])
            return (200, run) if run else (404, {"error": "no such run", "code": 5})
        return 404, {"error": f"the stand-in server does not implement {method} {path}", "code": 12}


def _display_name_filter(query: dict[str, list[str]]) -> str | None:
    """The display name a `filter` query parameter asks for, if any."""
    if "filter" not in query:
        return None
    for predicate in json.loads(query["filter"][0]).get("predicates", []):
        if predicate.get("key") in ("display_name", "name"):
            return predicate.get("string_value") or predicate.get("stringValue")
    return None
