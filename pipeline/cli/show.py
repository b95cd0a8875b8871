"""`kflow show`: a run's record as a table; under it, each failed component's one-line cause and the file that
holds its details (its error log, else run.json), never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kflow.pipeline.cli.trained_with import format_settings, tuned_settings
from kflow.pipeline.dsl.printable import printable
from kflow.pipeline.runners.failure import text_cause
from kflow.pipeline.runners.run_record import RUN_FILE, Execution, Run, earlier_runs


def find_run_dir(path: str | Path) -> Path:
    """A run folder, or the newest run of a pipeline folder."""
    path = Path(path)
    if (path / RUN_FILE).is_file():
        return path
    newest = next(earlier_runs(path), None)
    if newest is None:
        raise FileNotFoundError(f"{path} holds no {RUN_FILE} and no runs")
    return newest.run_dir


_COLOURS = {"succeeded": "32", "cached": "36", "failed": "31", "cancelled": "33", "running": "34", "skipped": "90"}


def format_run(run: Run, colour: bool = False) -> str:
    """The run as a table; `colour` paints the statuses (for a terminal)."""
    rows = [("component", "status", "seconds", "key metrics")]
    for execution in run.executions.values():
        status = execution.status
        if status == "cached":
            status = f"cached ({execution.cached_from})"
        metrics = ", ".join(f"{key}={_short(value)}" for key, value in execution.summary.items() if key != "headline")
        if execution.error:
            metrics = _cut(failure_cause(execution), 100)
        # A summary or an error may quote the data: its control characters are shown, not sent to the terminal.
        rows.append((execution.node_id, status, f"{execution.seconds:.1f}", printable(metrics)))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        f"pipeline {run.pipeline}  run {run.run_id}  status {_paint(run.status, colour)}"
        + (f"  {run.seconds:.1f} s" if run.seconds is not None else ""),
    ]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)]
        cells[1] = _paint(cells[1], colour)
        lines.append("  ".join(cells) + "  " + row[3])
    for node_id, settings in tuned_settings(run).items():  # the settings a tuner chose, which the model trained with
        lines.append(printable(f"{node_id} trained with the tuned settings: {format_settings(settings)}"))
    for execution in run.executions.values():
        if execution.status == "failed":
            lines.append(f"{execution.node_id} failed: {failure_cause(execution)}")
            lines.append(f"  details: {failure_details(run, execution)}")
    return "\n".join(line.rstrip() for line in lines)


def failure_cause(execution: Execution) -> str:
    """A failed component's cause in one line: its record's `error`, or the exception of a traceback written there
    (a record of an older kflow, or of a process that wrote the whole text)."""
    text = execution.error or "no cause recorded"
    return text_cause(text) or printable(
        " ".join(next((line for line in text.splitlines() if line.strip()), text).split())
    )


def failure_details(run: Run, execution: Execution) -> Path:
    """The file that says more: the component's error log where it is, else run.json (its traceback)."""
    log = Path(execution.error_log) if execution.error_log else None
    return log if log is not None and log.is_file() else run.run_dir / RUN_FILE


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _paint(text: str, colour: bool) -> str:
    code = _COLOURS.get(text.split()[0]) if colour and text.strip() else None
    return f"\033[{code}m{text}\033[0m" if code else text


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
