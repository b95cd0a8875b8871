"""Real runs whose pages the browser tests read: iris (classification) and a made-up regression table."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.browser.devtools import chromium_or_skip, chromium_page
from tests.conftest import REPO

KFLOW = [sys.executable, "-m", "kflow.pipeline.cli.main"]
IRIS = REPO / "pipeline" / "configs" / "iris.yaml"
PETAL_BOUNDARIES = [2, 5]
# 15 regions: the regression report's slices, their names long enough to collide if drawn side by side.
REGIONS = [
    "north-east coast", "north-west hills", "inner city north", "inner city south", "eastern suburbs",
    "western suburbs", "river valley", "lake district", "harbour front", "old town", "university quarter",
    "industrial park", "airport belt", "southern farmland", "mountain villages",
]  # fmt: skip
SIZE_BOUNDARIES = [40, 80, 120, 160]
WORDS = "quiet bright spacious renovated garden view close to station shops school park balcony garage".split()


def kflow_run(config: Path, root: Path, *settings: str) -> Path:
    """`kflow run`, as a user types it; returns the run's folder."""
    command = [*KFLOW, "run", str(config), "--pipeline-root", str(root), *settings]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    folder = next(line for line in result.stdout.splitlines() if line.startswith("run folder: "))
    return Path(folder.removeprefix("run folder: "))


@pytest.fixture(scope="module")
def page():
    chromium_or_skip()
    with chromium_page() as opened:
        yield opened


@pytest.fixture(scope="session")
def iris_run(tmp_path_factory) -> Path:
    """One run for every browser test module: iris sliced by its label and by petal_length in buckets."""
    chromium_or_skip()
    slices = json.dumps([{"by": "label"}, {"by": "petal_length", "boundaries": PETAL_BOUNDARIES}])
    return kflow_run(
        IRIS, tmp_path_factory.mktemp("iris"), "--set", f"evaluator.slices={slices}", "--set", "trainer.epochs=5"
    )


def write_homes(path: Path, rows: int = 600, seed: int = 7) -> None:
    """A regression table: numbers (size; rooms, some missing), categories (region; channel, with rare values
    that a split may hold and train not), free text (note), and the label (price)."""
    rng = np.random.default_rng(seed)
    effect = dict(zip(REGIONS, rng.normal(0, 40, len(REGIONS)), strict=True))
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["size", "rooms", "region", "channel", "note", "price"])
        for index in range(rows):
            size = float(rng.uniform(20, 200))
            rooms = int(rng.integers(1, 7))
            region = REGIONS[index % len(REGIONS)]
            channel = f"kiosk {index}" if index % 20 == 0 else ("web" if rng.random() < 0.6 else "agent")
            note = " ".join(rng.choice(WORDS, size=int(rng.integers(5, 10))))
            price = 3 * size + 12 * rooms + effect[region] + rng.normal(0, 15)
            writer.writerow(
                [f"{size:.1f}", "" if rng.random() < 0.05 else rooms, region, channel, note, f"{price:.1f}"]
            )


@pytest.fixture(scope="session")
def homes_run(tmp_path_factory) -> Path:
    """The regression table, sliced by its 15 regions and by size in buckets."""
    chromium_or_skip()
    folder = tmp_path_factory.mktemp("homes")
    write_homes(folder / "homes.csv")
    config = {
        "name": "homes",
        "data": {"dataset": "csv", "source": {"path": "homes.csv"}, "label": "price", "problem_type": "regression",
                 "split": {"train": 6, "eval": 2, "test": 2}, "on_anomaly": "warn"},
        "trainer": {"model": "tabular_mlp", "epochs": 5, "batch_size": 32},
        "evaluator": {"slices": [{"by": "region"}, {"by": "size", "boundaries": SIZE_BOUNDARIES}]},
    }  # fmt: skip
    (folder / "homes.yaml").write_text(yaml.safe_dump(config))
    return kflow_run(folder / "homes.yaml", folder / "runs")


def run_artifacts(run_dir: Path) -> list[Path]:
    """Every artifact folder the run read or wrote (cached ones sit in earlier runs' folders)."""
    record = json.loads((run_dir / "run.json").read_text())
    return [
        Path(artifact["uri"])
        for entry in record["components"].values()
        for kind in ("inputs", "outputs")
        for artifact in (entry.get(kind) or {}).values()
    ]
