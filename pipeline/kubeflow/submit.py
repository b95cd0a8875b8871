"""Submits a compiled pipeline.yaml to a Kubeflow Pipelines API server with the kfp client."""

from __future__ import annotations

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
    import kfp

    try:
        with warnings.catch_warnings():
            # kfp warns on every client that it needs a KFP backend ≥ 2.0.0-beta.2; the docs say so once.
            warnings.filterwarnings("ignore", message="This client only works", category=FutureWarning)
            client = kfp.Client(host=endpoint, namespace=namespace)
        result = client.create_run_from_pipeline_package(
            str(package_path),
            arguments=dict(arguments or {}),
            run_name=run_name,
            experiment_name=experiment,
            namespace=namespace,
        )
    except Exception as error:  # The client raises urllib3, ApiException and ValueError alike.
        raise SubmissionFailed(f"submitting to {endpoint} failed: {type(error).__name__}: {error}") from error
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
    import kfp

    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="This client only works", category=FutureWarning)
            client = kfp.Client(host=endpoint, namespace=namespace)
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
        raise SubmissionFailed(f"scheduling at {endpoint} failed: {type(error).__name__}: {error}") from error
    return result.recurring_run_id
