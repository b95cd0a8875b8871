"""What `kflow run` says once a run has ended: its MLflow run, and the blessing gate that decides its exit code."""

from __future__ import annotations

import sys

from kflow.pipeline.cli.terminal import EXIT_FAILED, EXIT_OK, say
from kflow.pipeline.dsl.artifacts import ModelBlessing
from kflow.pipeline.dsl.config import PipelineConfig, as_data
from kflow.pipeline.runners.run_record import Run


def track(config: PipelineConfig, run: Run) -> None:
    """Logs the finished run to the tracking server the config names; a failure is a warning, not the run's."""
    if config.tracking.mlflow is None:
        return
    settings = as_data(config.tracking)["mlflow"]  # as JSON, the form a Kubeflow evaluate task receives it in
    from kflow.pipeline.dsl.secrets import redact_urls
    from kflow.pipeline.runners.mlflow_tracking import TrackingError, track_run

    try:
        mlflow_run = track_run(settings, run)
    except TrackingError as error:
        print(f"kflow: warning: tracking: {error}", file=sys.stderr)
        return
    say(f"mlflow run: {mlflow_run} at {redact_urls(settings['uri'])}")  # A password in the URL is not printed.


def gate(run: Run, on_not_blessed: str) -> int:
    """Exit 1 (fail) or 0 with a warning (warn) when a blessing of the run refused its model."""
    from kflow.components.evaluator.gate import describe

    status = EXIT_OK
    for execution in run.executions.values():
        for blessing in execution.outputs_of_type(ModelBlessing):
            if blessing.blessed:
                continue
            failed = ", ".join(describe(check).removesuffix(": FAILED") for check in blessing.failed_checks)
            level = "error" if on_not_blessed == "fail" else "warning"
            print(
                f"kflow: {level}: {execution.node_id}: the model is NOT BLESSED; "
                f"failed checks: {failed or 'see blessing.json'} [{blessing.path / 'blessing.json'}]",
                file=sys.stderr,
            )
            status = EXIT_FAILED if on_not_blessed == "fail" else status
    return status
