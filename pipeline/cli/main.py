"""The `kflow` command line: validate, plan, run, show, compile and submit pipelines, write their cluster manifests.

Exit codes: 0 success, 1 a run failed, 2 a bad config or bad arguments, 130 / 143 a run
cancelled by SIGINT / SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from kflow.pipeline.cli.run_outcome import gate, track
from kflow.pipeline.cli.terminal import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    colour,
    configure_logging,
    say,
    set_up_terminal,
    stdout_to_devnull,
)
from kflow.pipeline.dsl import lean_imports
from kflow.pipeline.dsl.config import ConfigError, PipelineConfig
from kflow.pipeline.dsl.printable import printable
from kflow.pipeline.dsl.process_exit import exit_now
from kflow.pipeline.runners.run_record import Run, RunRecord


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    verbosity = getattr(args, "verbosity", 0)
    # As the `kflow` program, not called in a host process (tests, notebooks) whose signals and stderr it must not take.
    args.program = argv is None
    if args.program:
        set_up_terminal(verbosity)
        lean_imports.install()
    configure_logging(verbosity)
    try:
        code = args.command(args)
    except (ConfigError, FileNotFoundError) as error:
        print(f"kflow: {printable(str(error)) if isinstance(error, FileNotFoundError) else error}", file=sys.stderr)
        code = EXIT_USAGE
    except BrokenPipeError:  # stdout's reader went away in a write `say` does not make (`kflow … | head`)
        stdout_to_devnull()
        code = EXIT_OK
    if args.program:
        exit_now(code)  # TensorFlow's teardown would add 1.2-1.6 s to every command that loaded it
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kflow",
        description=__doc__.splitlines()[0],
        # What users look for as a command and find as a section of the config.
        epilog="Tuning and a Transform are sections of the config that `kflow run` runs (tuner:, transform:; "
        "docs/tuning.md, docs/transform.md). Exit codes: 0 success, 1 a run failed, 2 a bad config or arguments.",
    )
    parser.add_argument("--version", action="version", version=f"kflow {_version()}")
    _add_verbosity(parser)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    verbosity = argparse.ArgumentParser(add_help=False)  # -v/-q after the subcommand too
    _add_verbosity(verbosity)

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

    validate = commands.add_parser("validate", parents=[verbosity], help="check a config against the schema")
    with_config(validate)
    validate.set_defaults(command=_validate)

    run = commands.add_parser("run", parents=[verbosity], help="run a pipeline locally on Apache Beam")
    with_config(run)
    run.add_argument("--pipeline-root", help="where runs go (overrides pipeline_root)")
    only_or_until = run.add_mutually_exclusive_group()
    only_or_until.add_argument("--until", metavar="COMPONENT", help="run up to and including this component")
    only_or_until.add_argument(
        "--only",
        metavar="COMPONENT",
        help="run just this component, on its upstream components' cached outputs (fails if one has none)",
    )
    run.add_argument("--no-cache", action="store_true", help="run every component even if a cached result exists")
    run.add_argument(
        "--verify",
        action="store_true",
        help="before reusing cached outputs, check their content hashes (sizes are always checked)",
    )
    run.set_defaults(command=_run)

    plan = commands.add_parser(
        "plan",
        parents=[verbosity],
        help="say what `kflow run` would do: each component cached (from which run) or run, and why",
    )
    with_config(plan)
    plan.add_argument("--pipeline-root", help="where runs go (overrides pipeline_root)")
    plan.add_argument("--until", metavar="COMPONENT", help="plan up to and including this component")
    plan.add_argument("--no-cache", action="store_true", help="as `kflow run --no-cache`: every component would run")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.set_defaults(command=_plan)

    compile_ = commands.add_parser(
        "compile", parents=[verbosity], help="compile a pipeline to Kubeflow Pipelines YAML (KFP v2 IR)"
    )
    with_config(compile_)
    compile_.add_argument("-o", "--output", default="pipeline.yaml", help="where to write it (default pipeline.yaml)")
    compile_.add_argument("--image", help="the container image every task runs (overrides kubeflow.image)")
    compile_.set_defaults(command=_compile)

    manifests = commands.add_parser(
        "manifests",
        parents=[verbosity],
        help="write what a cluster needs for the pipeline (runtimes, accounts, RBAC, volume) to review and apply",
    )
    with_config(manifests)
    manifests.add_argument("-o", "--output", required=True, help="the folder to write (kubectl apply -f FOLDER)")
    manifests.add_argument("--image", help="the container image the replicas run (overrides kubeflow.image)")
    manifests.set_defaults(command=_manifests)

    submit = commands.add_parser(
        "submit", parents=[verbosity], help="compile a pipeline and start a run on a Kubeflow Pipelines endpoint"
    )
    with_config(submit)
    submit.add_argument("--endpoint", required=True, help="the KFP API server, e.g. http://localhost:8080")
    submit.add_argument("--experiment", default="Default", help="experiment name (created when missing)")
    submit.add_argument("--run-name", help="run name (default: the pipeline name and a timestamp)")
    submit.add_argument("--namespace", help="the user namespace, for multi-user Kubeflow")
    submit.add_argument("--image", help="the container image every task runs (overrides kubeflow.image)")
    submit.add_argument("-o", "--output", help="also keep the compiled pipeline.yaml here")
    submit.add_argument(
        "--schedule",
        metavar="CRON",
        help="create a KFP recurring run instead of one run: '0 3 * * *' (crontab), 6 fields with seconds, '@daily'",
    )
    submit.add_argument(
        "--max-concurrency", type=int, default=1, metavar="N", help="with --schedule: runs at once (1-10, default 1)"
    )
    submit.add_argument(
        "--catchup", action="store_true", help="with --schedule: after a pause, start every missed run, not the last"
    )
    submit.set_defaults(command=_submit)

    rehearse = commands.add_parser(
        "rehearse",
        parents=[verbosity],
        help="compile a pipeline and play it here with every task in a container of the image: before kflow submit",
    )
    with_config(rehearse)
    rehearse.add_argument("--image", help="the image the tasks run (default localhost/kflow:local: make image)")
    rehearse.add_argument("--root", help="where the rehearsal's files go (default PIPELINE_ROOT/rehearsals/NAME/TIME)")
    rehearse.add_argument("--processes", action="store_true", help="run every task as a process here, no containers")
    rehearse.set_defaults(command=_rehearse)

    predict = commands.add_parser(
        "predict",
        parents=[verbosity],
        help="score new data (no label, no split) with a trained model: each row's prediction beside its key",
    )
    with_config(predict)
    predict.add_argument("--data", required=True, help="the data to score: a file, a folder or a glob pattern")
    predict.add_argument(
        "--model", help="latest (the default: the pipeline's latest blessed model), a run id or folder, a Model folder"
    )
    predict.add_argument("--key", help="the data's key column (default: data.key; without one: FILE:LINE)")
    predict.add_argument(
        "--format",
        dest="data_format",
        help="the data's format when it is not the config's dataset (csv, parquet, tfrecord)",
    )
    predict.add_argument("-o", "--output", required=True, help="the folder to write (new or empty)")
    predict.add_argument("--batch-size", type=int, default=256, help="rows a model call (default 256)")
    predict.add_argument("--pipeline-root", help="where the pipeline's runs are (overrides pipeline_root)")
    predict.set_defaults(command=_predict)

    show = commands.add_parser("show", parents=[verbosity], help="print a run as a table")
    show.add_argument("run_dir", help="a run folder, or a pipeline folder for its newest run")
    show.add_argument("--json", action="store_true", help="print run.json instead")
    show.set_defaults(command=_show)

    gc = commands.add_parser(
        "gc", parents=[verbosity], help="remove what no run needs (stale staging, scratch, checkpoints, locks)"
    )
    gc.add_argument("path", nargs="?", default="runs", help="a pipeline folder or a pipeline root (default: runs)")
    gc.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")
    gc.add_argument("--keep-last", type=int, metavar="N", help="also remove the runs but the newest N")
    gc.add_argument("--keep-blessed", action="store_true", help="with --keep-last: keep the runs that blessed a model")
    gc.set_defaults(command=_gc)

    runs = commands.add_parser(
        "runs", parents=[verbosity], help="list the runs of a pipeline folder, or of every pipeline of a root"
    )
    runs.add_argument(
        "path", nargs="?", default="runs", help="a pipeline folder, a pipeline root or a config (default: runs)"
    )
    runs.add_argument("--json", action="store_true", help="print the list as JSON")
    runs.set_defaults(command=_runs)

    diff = commands.add_parser(
        "diff", parents=[verbosity], help="what changed between two runs: config, re-run components and why, metrics"
    )
    diff.add_argument("runs", nargs="+", help="two run folders, or a pipeline (folder, config) and 0-2 run ids")
    diff.add_argument("--json", action="store_true", help="print the difference as JSON")
    diff.set_defaults(command=_diff)

    schema = commands.add_parser(
        "schema", parents=[verbosity], help="print the config's JSON Schema (schemas/config.schema.json)"
    )
    schema.add_argument("-o", "--output", help="write it to this file instead of standard output")
    schema.set_defaults(command=_schema)
    return parser


def _add_verbosity(parser: argparse.ArgumentParser) -> None:
    """-v / -q, left out of the namespace when not given, so one before the command is not reset after it."""
    group = parser.add_mutually_exclusive_group()
    common = {"dest": "verbosity", "action": "store_const", "default": argparse.SUPPRESS}
    group.add_argument("-v", "--verbose", const=1, help="also show tracebacks and Beam's, TF's, gRPC's logs", **common)
    group.add_argument("-q", "--quiet", const=-1, help="only warnings, errors and results", **common)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kflow")
    except PackageNotFoundError:
        return "unknown"


def _load(args: argparse.Namespace) -> PipelineConfig:
    overrides = list(args.overrides)
    if getattr(args, "pipeline_root", None):
        overrides.append(f"pipeline_root={args.pipeline_root}")
    from kflow.pipeline.app.config_loading import load_for_command

    return load_for_command(args.config, overrides)


def _validate(args: argparse.Namespace) -> int:
    from kflow.pipeline.app.local_run import validate_locally

    config = _load(args)
    validated = validate_locally(config)
    what = f"dataset {config.data.dataset!r}" if config.components is None else "declared"
    say(f"{args.config}: valid (pipeline {config.name!r}, {what}: {', '.join(validated.nodes)})")
    if validated.inferred_problem_type:  # What the run will infer from the data, said before it runs.
        say("data.problem_type not set: {}, as {}".format(*validated.inferred_problem_type))
    for note in validated.notes:
        say(note)
    return 0


def _run(args: argparse.Namespace) -> int:
    config = _load(args)
    # Imported here so that `kflow validate` and `kflow show` start fast.
    from kflow.pipeline.app.local_run import run_locally
    from kflow.pipeline.cli.show import format_run
    from kflow.pipeline.runners.beam_dag_runner import PipelineFailed
    from kflow.pipeline.runners.cancellation import Cancelled

    try:
        result = run_locally(config, until=args.until, only=args.only, enable_cache=not args.no_cache,
                             verify=args.verify, handle_signals=args.program)  # fmt: skip
    except PipelineFailed as failure:
        # One line: the component, the cause and the file with the details (its traceback; in the log with -v).
        if failure.result is not None:
            say(format_run(failure.result.run, colour=colour()))
            track(config, failure.result.run)
        where = f" [{failure.details}]" if failure.details else ""
        print(f"kflow: error: {printable(str(failure))}{where}", file=sys.stderr)
        return EXIT_FAILED
    except Cancelled as cancelled:
        name = signal.Signals(cancelled.signum).name
        print(f"kflow: cancelled by {name}; finished components are kept for the next run", file=sys.stderr)
        return cancelled.exit_code
    say(format_run(result.run, colour=colour()))
    say(f"run folder: {result.run_dir}")
    track(config, result.run)
    return gate(result.run, config.evaluator.on_not_blessed)


def _gc(args: argparse.Namespace) -> int:
    from kflow.pipeline.runners.gc import remove, stale_items

    path = Path(args.path)
    if not path.is_dir():
        raise FileNotFoundError(f"no folder {path}")
    if args.keep_last is not None and args.keep_last < 1:
        raise ConfigError([f"--keep-last: must be ≥ 1 (got {args.keep_last})"])
    items = stale_items(path, args.keep_last, args.keep_blessed)
    for item in items:
        say(f"{'would remove' if args.dry_run else 'removed'} {item.path}  ({item.why})")
    if not args.dry_run:
        remove(items)
    say(f"{len(items)} item(s) {'to remove' if args.dry_run else 'removed'}")
    return EXIT_OK


def _plan(args: argparse.Namespace) -> int:
    from kflow.pipeline.app.local_run import plan_locally
    from kflow.pipeline.runners.plan import format_plan

    config = _load(args)
    planned = plan_locally(config, until=args.until, enable_cache=not args.no_cache)
    pipeline = planned.pipeline
    if args.json:
        say(
            json.dumps(
                {"pipeline": pipeline.name, "components": {p.node: p.to_json() for p in planned.plans}}, indent=2
            )
        )
    else:
        say(format_plan(pipeline, planned.plans, Path(config.pipeline_root) / pipeline.name))
    return EXIT_OK


def _manifests(args: argparse.Namespace) -> int:
    from kflow.pipeline.app.commands import manifests_command

    return manifests_command(args)


def _compile(args: argparse.Namespace) -> int:
    from kflow.pipeline.app.commands import compile_command

    return compile_command(args)


def _submit(args: argparse.Namespace) -> int:
    from kflow.pipeline.app.commands import submit_command

    return submit_command(args)


def _rehearse(args: argparse.Namespace) -> int:
    from kflow.pipeline.app.rehearse import rehearse_command

    return rehearse_command(args)


def _predict(args: argparse.Namespace) -> int:
    from kflow.pipeline.app.predict import predict_command

    return predict_command(args)


def _show(args: argparse.Namespace) -> int:
    from kflow.pipeline.cli.show import find_run_dir, format_run

    run = Run.load(find_run_dir(args.run_dir))
    say(json.dumps(RunRecord(run.run_dir).load(), indent=2) if args.json else format_run(run, colour=colour()))
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    from kflow.pipeline.app.schema import config_schema_text

    if args.output:
        Path(args.output).write_text(config_schema_text())
    else:
        say(config_schema_text().rstrip("\n"))
    return EXIT_OK


def _runs(args: argparse.Namespace) -> int:
    from kflow.pipeline.cli.history import format_runs, list_runs

    rows = list_runs(args.path)
    say(json.dumps(rows, indent=2) if args.json else format_runs(rows))
    return EXIT_OK


def _diff(args: argparse.Namespace) -> int:
    from kflow.pipeline.cli.compared_runs import compared_runs
    from kflow.pipeline.cli.history import diff_runs, format_diff

    difference = diff_runs(*compared_runs(args.runs))
    say(json.dumps(difference, indent=2) if args.json else format_diff(difference))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
