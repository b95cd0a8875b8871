"""Submits a compiled pipeline.yaml to a Kubeflow Pipelines API server with the kfp client."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any


class SubmissionFailed(RuntimeError):
    pass


def submit_package(
    package_path: str | Path,
    endpoint: str,
    experiment: str,
    run_name: str,
    namespace: str | None = None,
    arguments: dict[str, Any] | None = None,
) -> str:
    """Starts a run of `package_path` in `experiment` (created when missing) with `arguments` for its
    pipeline-level inputs; returns the run id."""
    try:
        client = _client(endpoint, namespace)
        result = client.create_run_from_pipeline_package(
            str(package_path),
            arguments=dict(arguments or {}),
            run_name=run_name,
            experiment_name=experiment,
            namespace=namespace,
        )
    except Exception as error:  # The client raises urllib3, ApiException and ValueError alike.
        raise SubmissionFailed(f"submitting to {endpoint} failed: {_said(error)}") from None
    return result.run_id


def schedule_package(
    package_path: str | Path,
    endpoint: str,
    experiment: str,
    name: str,
    cron: str,
    namespace: str | None = None,
    arguments: dict[str, Any] | None = None,
    max_concurrency: int = 1,
    catchup: bool = False,
) -> str:
    """Creates a recurring run of `package_path` (KFP v2beta1 RecurringRun, enabled, on the six-field `cron`) in
    `experiment` (created when missing); returns its id. `catchup` False: after a pause the scheduler starts only
    the latest missed run, not one per missed time."""
    try:
        client = _client(endpoint, namespace)
        experiment_id = client.create_experiment(experiment, namespace=namespace).experiment_id
        result = client.create_recurring_run(
            experiment_id=experiment_id,
            job_name=name,
            cron_expression=cron,
            max_concurrency=max_concurrency,
            no_catchup=not catchup,
            params=dict(arguments or {}),
            pipeline_package_path=str(package_path),
            enabled=True,
        )
    except Exception as error:  # The client raises urllib3, ApiException and ValueError alike.
        raise SubmissionFailed(f"scheduling at {endpoint} failed: {_said(error)}") from None
    return result.recurring_run_id


def _client(endpoint: str, namespace: str | None) -> Any:
    """A kfp.Client, without its notices: the backend version it needs (the docs say it once) and urllib3's line per
    retry of a server that does not answer (the failure says it once)."""
    import kfp

    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="This client only works", category=FutureWarning)
        return kfp.Client(host=endpoint, namespace=namespace)


def _said(error: Exception) -> str:
    """The client's failure in one line: no server there (urllib3's retries exhausted), the server's answer (an
    ApiException's status), else the error itself."""
    import urllib3

    if isinstance(error, urllib3.exceptions.MaxRetryError):
        reason = str(error.reason).rsplit(": ", 1)[-1]  # "<…HTTPConnection object at 0x…>: … [Errno 111] …"
        if isinstance(error.reason, urllib3.exceptions.NewConnectionError | urllib3.exceptions.ConnectTimeoutError):
            return f"no KFP API server answers there ({reason})"
        return f"the KFP API server could not be reached ({type(error.reason).__name__}: {reason})"
    status = getattr(error, "status", None)
    if status is not None:
        return f"the server answered {status} {getattr(error, 'reason', '') or ''}".rstrip()
    return f"{type(error).__name__}: {' '.join(str(error).split())}"
