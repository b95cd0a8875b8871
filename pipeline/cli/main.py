"""The `kflow` command line: validate, run, show, compile and submit pipelines.

Exit codes: 0 success, 1 a run failed, 2 a bad config or bad arguments.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

from kflow.pipeline.dsl.artifacts import ModelBlessing
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig, load_config
from kflow.pipeline.runners.run_record import Run

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose)
    try:
        return args.command(args)
    except ConfigError as error:
        print(f"kflow: {error}", file=sys.stderr)
        return EXIT_USAGE


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kflow", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="also show Beam's and TensorFlow's logs")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    def with_config(command: argparse.ArgumentParser) -> None:
        command.add_argument("config", help="pipeline config (YAML)")
        command.add_argument(
            "--set",
            dest="overrides",
            action="append",
            default=[],
            metavar="FIELD=VALUE",
            help="override a config field, e.g. --set trainer.epochs=5 (repeatable)",
        )

    validate = commands.add_parser("validate", help="check a config against the schema")
    with_config(validate)
    validate.set_defaults(command=_validate)

    run = commands.add_parser("run", help="run a pipeline locally on Apache Beam")
    with_config(run)
    run.add_argument("--pipeline-root", help="where runs go (overrides pipeline_root)")
    run.add_argument("--until", metavar="COMPONENT", help="run up to and including this component")
    run.add_argument("--no-cache", action="store_true", help="run every component even if a cached result exists")
    run.add_argument(
        "--verify",
        action="store_true",
        help="before reusing cached outputs, check their content hashes (sizes are always checked)",
    )
    run.set_defaults(command=_run)

    compile_ = commands.add_parser("compile", help="compile a pipeline to Kubeflow Pipelines YAML (KFP v2 IR)")
    with_config(compile_)
    compile_.add_argument("-o", "--output", default="pipeline.yaml", help="where to write it (default pipeline.yaml)")
    compile_.add_argument("--image", help="the container image every task runs (overrides kubeflow.image)")
    compile_.set_defaults(command=_compile)

    submit = commands.add_parser("submit", help="compile a pipeline and start a run on a Kubeflow Pipelines endpoint")
    with_config(submit)
    submit.add_argument("--endpoint", required=True, help="the KFP API server, e.g. http://localhost:8080")
    submit.add_argument("--experiment", default="Default", help="experiment name (created when missing)")
    submit.add_argument("--run-name", help="run name (default: the pipeline name and a timestamp)")
    submit.add_argument("--namespace", help="the user namespace, for multi-user Kubeflow")
    submit.add_argument("--image", help="the container image every task runs (overrides kubeflow.image)")
    submit.add_argument("-o", "--output", help="also keep the compiled pipeline.yaml here")
    submit.set_defaults(command=_submit)

    show = commands.add_parser("show", help="print a run as a table")
    show.add_argument("run_dir", help="a run folder, or a pipeline folder for its newest run")
    show.set_defaults(command=_show)
    return parser


def _load(args: argparse.Namespace) -> PipelineConfig:
    overrides = list(args.overrides)
    if getattr(args, "pipeline_root", None):
        overrides.append(f"pipeline_root={args.pipeline_root}")
    return load_config(args.config, overrides)


def _validate(args: argparse.Namespace) -> int:
    config = _load(args)
    from kflow.pipeline.app.standard_pipeline import build_pipeline

    build_pipeline(config)  # The checks that span fields (splits, filters, the dataset) are made while building.
    print(f"{args.config}: valid (pipeline {config.name!r}, dataset {config.data['dataset']!r})")
    return 0


def _run(args: argparse.Namespace) -> int:
    config = _load(args)
    # Imported here so that `kflow validate` and `kflow show` start fast.
    from kflow.pipeline.app.standard_pipeline import build_pipeline
    from kflow.pipeline.cli.show import format_run
    from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner, PipelineFailed
    from kflow.pipeline.runners.cancellation import Cancelled, signals_cancel

    pipeline = build_pipeline(config, local_runs=True)
    if args.until:
        if args.until not in {node.id for node in pipeline.components}:
            choices = ", ".join(node.id for node in pipeline.components)
            raise ConfigError([f"--until: no component {args.until!r} (choose from {choices})"])
        pipeline = pipeline.until(args.until)
    try:
        with signals_cancel():
            result = BeamDagRunner(enable_cache=not args.no_cache, verify_hashes=args.verify).run(
                pipeline, config.pipeline_root
            )
    except PipelineFailed as failure:
        # One line: the component and the cause. The traceback is in run.json, and in the log with -v.
        where = ""
        if failure.result is not None:
            print(format_run(failure.result.run))
            where = f" [{failure.result.run_dir / 'run.json'}]"
        print(f"kflow: error: {failure}{where}", file=sys.stderr)
        return EXIT_FAILED
    except Cancelled as cancelled:
        name = signal.Signals(cancelled.signum).name
        print(f"kflow: cancelled by {name}; finished components are kept for the next run", file=sys.stderr)
        return cancelled.exit_code
    print(format_run(result.run))
    print(f"run folder: {result.run_dir}")
    return _gate(result.run, config.evaluator.get("on_not_blessed", "fail"))


def _gate(run: Run, on_not_blessed: str) -> int:
    """Exit 1 (fail) or 0 with a warning (warn) when a blessing of the run refused its model."""
    status = EXIT_OK
    for execution in run.executions.values():
        for blessing in execution.outputs_of_type(ModelBlessing):
            if blessing.blessed:
                continue
            failed = ", ".join(
                f"{check['metric']} {check['bound']} {check['threshold']:g} (value {check['value']:.4g})"
                for check in blessing.failed_checks
            )
            level = "error" if on_not_blessed == "fail" else "warning"
            print(
                f"kflow: {level}: {execution.node_id}: the model is NOT BLESSED; "
                f"failed checks: {failed or 'see blessing.json'} [{blessing.path / 'blessing.json'}]",
                file=sys.stderr,
            )
            status = EXIT_FAILED if on_not_blessed == "fail" else status
    return status


def _compile(args: argparse.Namespace) -> int:
    from kflow.pipeline.app.commands import compile_command

    return compile_command(args)


def _submit(args: argparse.Namespace) -> int:
    from kflow.pipeline.app.commands import submit_command

    return submit_command(args)


def _show(args: argparse.Namespace) -> int:
    from kflow.pipeline.cli.show import show

    try:
        print(show(args.run_dir))
    except FileNotFoundError as error:
        print(f"kflow: {error}", file=sys.stderr)
        return EXIT_USAGE
    return 0


# Start-up notices that say nothing about the run: Beam's, logged on the root logger at import.
_STARTUP_NOISE = ("apitools not found",)


def _not_startup_noise(record: logging.LogRecord) -> bool:
    return not (record.name == "root" and str(record.msg).startswith(_STARTUP_NOISE))


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S", stream=sys.stderr)
    if verbose:
        logging.getLogger("kflow").setLevel(logging.DEBUG)
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_not_startup_noise)
    for noisy in ("apache_beam", "absl", "tensorflow", "h5py"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # Beam logs a failing element's traceback; kflow reports the failed component in one line itself.
    logging.getLogger("apache_beam.runners.common").setLevel(logging.CRITICAL)


if __name__ == "__main__":
    sys.exit(main())
