"""The Beam pipeline arguments of a config's `beam` and `orchestration` sections, and the runner that runs them."""

from __future__ import annotations

from typing import Any

LOCAL_RUNNER = "FnApiRunner"
"""The runner of kflow's local Beam pipelines when the config names the DirectRunner or no runner (`named_runner`)."""
SDK_WORKER_MODULE = "apache_beam.runners.worker.sdk_worker_main"
"""What a `multi_processing` pipeline's worker processes run (beam_pipeline.py starts them, cancellation.py stops)."""


def section_beam_args(section: Any) -> list[str]:
    """A `beam` or `orchestration` section (its runner and options) as Beam pipeline arguments."""
    args = [] if section.runner == "DirectRunner" else [f"--runner={section.runner}"]
    for key, value in sorted(section.options.items()):
        if isinstance(value, bool):
            value = str(value).lower()
        args.append(f"--{key}={value}")
    return args


def named_runner(beam_args: list[str] | tuple[str, ...]) -> list[str]:
    """`beam_args` naming the runner that runs them: the DirectRunner (named, or by default: `PipelineConfig.beam_args`
    leaves it implicit) becomes Beam's FnApiRunner, which is what Beam 2.77's DirectRunner runs a batch pipeline on
    after it has tried the Prism runner: that try downloads a Prism binary from GitHub at run time (a network call
    from every local pipeline) and, offline, fails and leaves an empty /tmp/beam-temp* folder behind each time.
    `--direct_num_workers` and `--direct_running_mode` mean the same to both. Name `PrismRunner` to use Prism."""
    runner, rest, skip = None, [], False
    for index, arg in enumerate(beam_args):
        if skip:
            skip = False
        elif arg.startswith("--runner="):
            runner = arg.partition("=")[2]
        elif arg == "--runner" and index + 1 < len(beam_args):
            runner, skip = beam_args[index + 1], True
        else:
            rest.append(arg)
    if runner is not None and runner not in ("DirectRunner", "direct"):
        return list(beam_args)
    return [f"--runner={LOCAL_RUNNER}", *rest]
