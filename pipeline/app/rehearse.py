"""`kflow rehearse CONFIG`: the last check before `kflow submit` — the config compiled, and the compiled pipeline.yaml
played on this machine with every task and every training replica in a container of the kflow image, as a cluster
would run them.

The player (pipeline/rehearsal/kfp_player.py) stands in for KFP's driver and launcher; each task is `podman run` of
the image named by `--image` (default: what `make image` builds) as uid 10001, read-only, without capabilities
(pipeline/rehearsal/podman.py). A cluster train task's launcher submits its TrainJob to a stand-in Kubernetes API
server whose stand-in controllers run each pod as a container on the rehearsal's network, each its own host
(pipeline/rehearsal/container_pods.py). Where no engine or no image is found, every task and pod runs as a process
here, said in one line. Host paths the compiled tasks read (a data source, a schema) are mounted read-only at their
own paths, said in one line: on a cluster they must be on the shared volume or in a bucket (kflow compile warns).
`containers.json` in the rehearsal's folder lists what each container ran as.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from kflow.pipeline.app.commands import compile_config
from kflow.pipeline.app.config_loading import default_split
from kflow.pipeline.dsl.config import load_config
from kflow.pipeline.rehearsal import podman
from kflow.pipeline.rehearsal.container_pods import RehearsalCluster
from kflow.pipeline.rehearsal.kfp_player import ContainerTasks, ProcessTasks, play


def rehearsal_folders(config_path: str, overrides: list[str], root: str | None) -> tuple[Path, Path]:
    """(the rehearsal's folder, the PVCs' folders): `--root` holds both; by default
    `<pipeline_root>/rehearsals/<name>/<time>`, the PVCs beside it for the next rehearsal (the baselines' store)."""
    if root:
        return Path(root).resolve(), Path(root).resolve() / "volumes"
    config = load_config(config_path, overrides, default_split)
    pipeline = (Path(config.pipeline_root) / "rehearsals" / config.name).resolve()
    return pipeline / time.strftime("%Y%m%d-%H%M%S"), pipeline / "volumes"


def host_inputs(package: Path, root: Path) -> list[Path]:
    """The existing paths of this machine that the compiled tasks are given as constants (data sources, schemas):
    what the pods would read from the shared volume or a bucket."""
    ir = next(yaml.safe_load_all(package.read_text()))
    values: list[Any] = [
        spec.get("defaultValue") for spec in ir["root"].get("inputDefinitions", {}).get("parameters", {}).values()
    ]

    def walk(dag: dict[str, Any]) -> None:
        for task in dag.get("tasks", {}).values():
            for ref in task.get("inputs", {}).get("parameters", {}).values():
                values.append(ref.get("runtimeValue", {}).get("constant"))

    walk(ir["root"]["dag"])
    for component in ir["components"].values():
        walk(component.get("dag", {}))
    found = set()
    for value in values:
        if isinstance(value, str) and value.startswith("/") and "\n" not in value and len(value) < 4096:
            path = Path(value)
            if path.exists() and not path.resolve().is_relative_to(root) and path != Path("/"):
                found.add(path)
    return sorted(found)


def claims(package: Path, volumes: Path) -> dict[str, Path]:
    """{claim: its folder under `volumes`} of every PVC the compiled pipeline mounts."""
    documents = list(yaml.safe_load_all(package.read_text()))
    platform = (documents[1] or {}) if len(documents) > 1 else {}
    executors = platform.get("platforms", {}).get("kubernetes", {}).get("deploymentSpec", {}).get("executors", {})
    return {
        mount["constant"]: volumes / mount["constant"]
        for config in executors.values()
        for mount in config.get("pvcMount", [])
    }


def cluster_tasks(package: Path) -> list[str]:
    """The tasks of the compiled pipeline that launch a cluster job (a TrainJob or TFJob)."""
    ir = next(yaml.safe_load_all(package.read_text()))
    launchers = {
        label
        for label, executor in ir["deploymentSpec"]["executors"].items()
        if "kflow.pipeline.kubeflow.job_launcher" in executor.get("container", {}).get("command", [])
    }
    return sorted(
        name
        for name, task in ir["root"]["dag"]["tasks"].items()
        if ir["components"][task["componentRef"]["name"]].get("executorLabel") in launchers
    )


@contextlib.contextmanager
def task_runner(image: str, package: Path, root: Path, volumes: Path, no_engine: str | None):
    """(the runner of the tasks, the line saying how they run); in containers, with the rehearsal's cluster."""
    if no_engine:
        yield ProcessTasks(), f"every task runs as a process here ({no_engine})"
        return
    inputs = host_inputs(package, root)
    line = (
        f"every task and every training replica runs in a container of {image} "
        "(podman: uid 10001, read-only root, no capabilities)"
    )
    if inputs:
        line += (
            f"; mounted read-only at their own paths: {', '.join(map(str, inputs))} "
            "(on a cluster: the shared volume or a bucket)"
        )
    engine = podman.Podman()
    with RehearsalCluster(engine, claims(package, volumes), image) as cluster:
        yield ContainerTasks(engine, inputs, cluster), line


def blessing(outputs: dict[str, dict[str, Any]]) -> str | None:
    """'BLESSED' or 'NOT BLESSED' from the pipeline's evaluators; None when none ran."""
    verdicts = [
        (Path(found.path) / "BLESSED").exists()
        for task in outputs.values()
        for name, found in task.items()
        if name == "blessing" and hasattr(found, "path")
    ]
    if not verdicts:
        return None
    return "BLESSED" if all(verdicts) else "NOT BLESSED"


def rehearse_command(args) -> int:
    image = args.image or podman.LOCAL_IMAGE
    root, volumes = rehearsal_folders(args.config, args.overrides, args.root)
    root.mkdir(parents=True, exist_ok=True)
    package = compile_config(args.config, root / "pipeline.yaml", args.overrides, image)
    no_engine = "--processes" if args.processes else podman.unavailable(image)
    clusters = cluster_tasks(package)
    if no_engine and clusters:
        # A replica's TF_CONFIG names its peers by their JobSet host names, which only hosts of their own resolve.
        print(
            f"kflow rehearse: {', '.join(clusters)} runs as a cluster job, whose replicas need containers "
            f"({no_engine}): make image, or rehearse with trainer.workers=1",
            file=sys.stderr,
        )
        return 2
    if not no_engine:
        checkout = Path(__file__).resolve().parents[2]  # the folder holding pipeline/, components/, schemas/
        built, current = podman.image_code_digest(image), podman.code_digest(checkout)
        if built != current:
            print(
                f"kflow rehearse: warning: {image} holds other kflow code than {checkout} (image {built}, checkout "
                f"{current}): the tasks run the image's; make image builds it from this checkout",
                file=sys.stderr,
            )
    started = time.monotonic()
    with task_runner(image, package, root, volumes, no_engine) as (runner, line):
        print(f"kflow rehearse: {line}", file=sys.stderr)
        try:
            outputs = play(package, root / "play", cwd=Path.cwd(), volumes=volumes, tasks=runner)
        except RuntimeError as error:  # a task that failed: its exit and the end of its log
            print(f"kflow rehearse: {error}", file=sys.stderr)
            return 1
        finally:
            if isinstance(runner, ContainerTasks):  # What each container ran as, as the engine reports it.
                records = [dataclasses.asdict(record) for record in runner.podman.records]
                (root / "containers.json").write_text(json.dumps(records, indent=2) + "\n")
    ran = [name for name, found in outputs.items() if not found.get("skipped")]
    verdict = blessing(outputs)
    print(
        f"rehearsed {args.config} in {time.monotonic() - started:.0f} s: {len(ran)} tasks ({', '.join(ran)}) in {root}"
    )
    if verdict:
        print(verdict)
    return 1 if verdict == "NOT BLESSED" else 0
