"""A user's own `@component` (tests/pipeline/user/clip_pixels.py) after ingest: YAML, Python, cache, compile."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import tensorflow as tf
import yaml

from kflow.pipeline import api
from kflow.pipeline.cli.main import main
from kflow.pipeline.dsl.artifacts import Examples
from tests.pipeline.user.clip_pixels import clip_pixels

CLIP = "tests.pipeline.user.clip_pixels:clip_pixels"


def config(tmp_path, train: bool = False):
    path = tmp_path / "clip.yaml"
    trainer = textwrap.dedent("""
      - id: train
        type: trainer
        inputs: {examples: clip.clipped, schema: ingest.schema}
    """)
    path.write_text(
        textwrap.dedent(f"""
        name: clip
        pipeline_root: {tmp_path / "runs"}
        data: {{dataset: mnist, source: {{format: sklearn_digits}}, shards_per_split: 1}}
        components:
          - {{id: ingest, type: ingest}}
          - {{id: clip, type: "{CLIP}", inputs: {{examples: ingest.examples}}, parameters: {{max_value: 100}}}}
        """)
        + (textwrap.indent(trainer, "  ") if train else "")
    )
    return path


def max_pixel_and_count(examples: Examples, split: str) -> tuple[int, int]:
    top, count = 0, 0
    for serialized in tf.data.TFRecordDataset(examples.split_files(split), compression_type="GZIP"):
        image = tf.train.Example.FromString(serialized.numpy()).features.feature["image"].bytes_list.value[0]
        top, count = max(top, int(np.frombuffer(image, np.uint8).max())), count + 1
    return top, count


def test_the_decorator_reads_the_spec_from_the_signature():
    spec = clip_pixels.spec
    assert dict(spec.inputs) == {"examples": Examples} and dict(spec.outputs) == {"clipped": Examples}
    assert spec.parameters["max_value"].default == 255 and spec.parameters["max_value"].type is int
    assert spec.executor == f"{CLIP}.executor"
    assert clip_pixels.code_version() != api.Pusher.code_version()


def test_a_user_component_runs_from_yaml_then_its_python_twin_is_fully_cached(tmp_path):
    assert main(["run", str(config(tmp_path))]) == 0
    (run_json,) = (tmp_path / "runs" / "clip").glob("*/run.json")
    record = json.loads(run_json.read_text())
    assert {node: entry["status"] for node, entry in record["components"].items()} == {
        "ingest": "succeeded",
        "clip": "succeeded",
    }
    ingested = Examples(record["components"]["ingest"]["outputs"]["examples"]["uri"])
    clipped = Examples(record["components"]["clip"]["outputs"]["clipped"]["uri"])
    for split in ingested.splits:
        (top_in, count_in), (top_out, count_out) = (max_pixel_and_count(e, split) for e in (ingested, clipped))
        assert count_out == count_in > 0 and top_in > 100 and top_out == 100
    assert record["components"]["clip"]["summary"]["records"] == sum(
        max_pixel_and_count(ingested, split)[1] for split in ingested.splits
    )

    ingest = api.MnistIngest("ingest", parameters={"source_format": "sklearn_digits", "shards_per_split": 1})
    clip = clip_pixels("clip", examples=ingest.outputs["examples"], parameters={"max_value": 100})
    result = api.run(api.Pipeline("clip", [ingest, clip]), tmp_path / "runs")
    assert {execution.status for execution in result.run.executions.values()} == {"cached"}


def test_a_user_component_compiles_like_the_built_in_ones(tmp_path):
    package = tmp_path / "pipeline.yaml"
    assert main(["compile", str(config(tmp_path, train=True)), "-o", str(package), "--image", "kflow:test"]) == 0
    ir = next(yaml.safe_load_all(package.read_text()))
    assert ir["root"]["dag"]["tasks"]["train"]["inputs"]["artifacts"]["examples"]["taskOutputArtifact"] == {
        "outputArtifactKey": "clipped",
        "producerTask": "clip",
    }
    args = ir["deploymentSpec"]["executors"]["exec-clip"]["container"]["args"]
    assert args[:2] == ["--component", CLIP]
