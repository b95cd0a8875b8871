"""Regenerates the docs' screenshots of the report and the statistics page: `make screenshots`, or
`.venv/bin/python -m tests.browser.screenshots [--out docs/images]`.

Runs the same two pipelines the browser tests read (iris sliced by label and by petal_length; the regression
table of tests/browser/conftest.py: write_homes) into a temporary folder and photographs their pages in
headless Chromium: the iris report whole, the regression report's 15-slice chart, the top of the regression
table's statistics page.
"""

from __future__ import annotations

import argparse
import base64
import json
import tempfile
from pathlib import Path

import yaml

from tests.browser.conftest import IRIS, PETAL_BOUNDARIES, SIZE_BOUNDARIES, kflow_run, write_homes
from tests.browser.devtools import Page, chromium_page
from tests.conftest import REPO

WIDTH = 1280


def element_shot(page: Page, selector: str, path: Path, margin: int = 8) -> None:
    """The element `selector` names, alone."""
    box = page.evaluate(
        f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
        " return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}; })()"
    )
    clip = {
        "x": max(box["x"] - margin, 0),
        "y": max(box["y"] - margin, 0),
        "width": box["width"] + 2 * margin,
        "height": box["height"] + 2 * margin,
        "scale": 1,
    }
    shot = page.call("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def top_shot(page: Page, path: Path, height: int) -> None:
    shot = page.call(
        "Page.captureScreenshot",
        format="png",
        clip={"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1},
        captureBeyondViewport=True,
    )
    path.write_bytes(base64.b64decode(shot["data"]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    out = parser.parse_args(argv).out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kflow-screenshots-") as scratch:
        root = Path(scratch)
        slices = json.dumps([{"by": "label"}, {"by": "petal_length", "boundaries": PETAL_BOUNDARIES}])
        iris = kflow_run(IRIS, root / "iris", "--set", f"evaluator.slices={slices}", "--set", "trainer.epochs=20")
        write_homes(root / "homes.csv")
        config = {
            "name": "homes",
            "data": {"dataset": "csv", "source": {"path": "homes.csv"}, "label": "price",
                     "problem_type": "regression", "split": {"train": 6, "eval": 2, "test": 2}, "on_anomaly": "warn"},
            "trainer": {"model": "tabular_mlp", "epochs": 20, "batch_size": 32},
            "evaluator": {"slices": [{"by": "region"}, {"by": "size", "boundaries": SIZE_BOUNDARIES}]},
        }  # fmt: skip
        (root / "homes.yaml").write_text(yaml.safe_dump(config))
        homes = kflow_run(root / "homes.yaml", root / "runs")
        with chromium_page() as page:
            page.open(iris / "evaluate" / "evaluation" / "report.html", width=WIDTH)
            page.screenshot(out / "report.png", width=WIDTH)
            page.open(homes / "evaluate" / "evaluation" / "report.html", width=WIDTH)
            element_shot(page, "figure:has(svg[aria-label='rmse by region'])", out / "report-slices.png")
            page.open(homes / "evaluate" / "evaluation" / "statistics.html", width=WIDTH)
            top_shot(page, out / "statistics.png", height=1500)
    for name in ("report.png", "report-slices.png", "statistics.png"):
        print(out / name)


if __name__ == "__main__":
    main()
