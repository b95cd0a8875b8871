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
