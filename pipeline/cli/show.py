"""`kflow show`: a run's record as a table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kflow.pipeline.runners.run_record import RUN_FILE, RunRecord, earlier_runs


def find_run_dir(path: str | Path) -> Path:
    """A run folder, or the newest run of a pipeline folder."""
    path = Path(path)
    if (path / RUN_FILE).is_file():
        return path
    newest = next(earlier_runs(path), None)
    if newest is None:
        raise FileNotFoundError(f"{path} holds no {RUN_FILE} and no runs")
    return Path(newest["run_dir"])


def format_run(record: dict[str, Any]) -> str:
    rows = [("component", "status", "seconds", "key metrics")]
    for node_id, entry in record["components"].items():
        status = entry.get("status", "?")
        if status == "cached":
            status = f"cached ({entry.get('cached_from')})"
        metrics = ", ".join(f"{key}={_short(value)}" for key, value in entry.get("summary", {}).items())
        if entry.get("error"):
            metrics = entry["error"].splitlines()[0][:100]
        rows.append((node_id, status, f"{entry.get('seconds', 0.0):.1f}", metrics))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        f"pipeline {record['pipeline']}  run {record['run_id']}  status {record['status']}"
        + (f"  {record['seconds']:.1f} s" if "seconds" in record else ""),
    ]
    for row in rows:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3])
    return "\n".join(line.rstrip() for line in lines)


def show(path: str | Path) -> str:
    return format_run(RunRecord(find_run_dir(path)).load())


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
