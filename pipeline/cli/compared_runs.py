"""Which two runs `kflow diff` compares, from what a user types.

kflow diff RUN_A RUN_B              two run folders (a pipeline folder: its newest run)
kflow diff WHERE                    the last two runs of a pipeline folder, or of a config's pipeline
kflow diff WHERE RUN                that run against the newest
kflow diff WHERE RUN_A RUN_B        two runs of that pipeline by their ids
"""

from __future__ import annotations

from pathlib import Path

from kflow.pipeline.runners.run_record import RUN_FILE, Run, earlier_runs


def compared_runs(given: list[str]) -> tuple[Run, Run]:
    """(a, b) of `given`, 1 to 3 arguments as the module's docstring says; FileNotFoundError (one line) otherwise."""
    from kflow.pipeline.cli.show import find_run_dir

    if len(given) == 2 and all(Path(path).exists() for path in given):
        first, second = (Run.load(find_run_dir(path)) for path in given)
        return first, second
    if not 1 <= len(given) <= 3:
        raise FileNotFoundError("kflow diff takes two runs, or a pipeline (a folder or a config) and 0 to 2 run ids")
    folder = _pipeline_folder(given[0])
    runs = list(earlier_runs(folder))
    if len(given) == 1:
        if len(runs) < 2:
            raise FileNotFoundError(f"{folder} holds {len(runs)} run(s): two are needed to compare")
        return runs[1], runs[0]
    by_id = {run.run_dir.name: run for run in runs}
    missing = [run_id for run_id in given[1:] if run_id not in by_id]
    if missing:
        newest = ", ".join(run.run_dir.name for run in runs[:3])
        raise FileNotFoundError(f"{folder} holds no run {missing[0]} (the newest: {newest})")
    chosen = [by_id[run_id] for run_id in given[1:]]
    return (chosen[0], runs[0]) if len(chosen) == 1 else (chosen[0], chosen[1])


def _pipeline_folder(where: str) -> Path:
    """A pipeline folder (`runs/iris`), a run folder's pipeline, or a config's (pipeline_root/name)."""
    from kflow.pipeline.cli.history import config_pipeline

    path = config_pipeline(Path(where))
    if (path / RUN_FILE).is_file():
        path = path.parent
    if not path.is_dir():
        raise FileNotFoundError(f"{where} is no run, pipeline folder or config")
    return path
