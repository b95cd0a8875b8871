"""`evaluator.baseline: latest_blessed` on Kubeflow: blessed models kept in a store on the shared volume.

`kflow run` finds the latest blessed model in its local run records when it builds the pipeline;
a compiled pipeline cannot look at earlier runs when it is compiled, so on Kubeflow:

- the Evaluator's task, when it blesses its model, copies the model into the store and then writes a
  record: `<store>/models/<id>/` and `<store>/records/<id>.json` {"model_uri" (the KFP URI of the
  Model artifact), "model_path" (the copy), "baseline_model" (what it was compared against),
  "model_module_digest" (its user module's sha256: a copy whose module changed is refused), "identity"
  (the pipeline name, dataset, task and label it was trained for), "created"};
- a resolver task before the Evaluator (TFX's LatestBlessedModelResolver; never cached) reads the
  newest record of the same identity and outputs the copy's path as the Evaluator's `baseline_model_uri`
  parameter ("" for none), so the baseline is part of the Evaluator's cache key, as it is locally.

The identity is `kflow run`'s (pipeline/app/latest_blessed.py, `model_identity`): two configs of one name (an iris
classifier, and a regression on `petal_width`) share the store but never each other's baselines. A record
without one (written before records carried it) is passed over.

The store is `<shared mount>/kflow-baselines/<pipeline name>` on the ReadWriteMany volume that cluster jobs
already use (`kubeflow.cluster.shared_volume_claim`). The copy is needed because an earlier run's Model
artifact lives in the object store, where the next run's Evaluator pod has no path to it.

When the newest blessed model is the very model being evaluated (KFP reused the cached Trainer task:
same artifact URI), comparing it with itself says nothing: the resolver gives the baseline that model
was blessed against, as `kflow run` does.

    python -m kflow.pipeline.kubeflow.baselines --store DIR --model-uri URI --identity JSON --output PATH
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import secrets
import shutil
import sys
import time
from pathlib import Path

from kflow.pipeline.dsl.artifacts import Model
from kflow.pipeline.dsl.component import ComponentSpec
from kflow.pipeline.dsl.config import rename_fields
from kflow.pipeline.dsl.durable import fsync_tree, write_atomically

log = logging.getLogger(__name__)

STORE_FOLDER = "kflow-baselines"


COMPARABLE = ("dataset", "problem_type", "label")  # as pipeline/app/latest_blessed.py: what makes models comparable


def model_identity(config: dict, table: bool = False) -> dict:
    """What a blessed model was trained for: the pipeline name, dataset, task and label, with `table` its
    data.source.path, read from the config as `kflow run` reads it (pipeline/app/latest_blessed.py; a test holds the
    two equal)."""
    config = copy.deepcopy(config)
    rename_fields(config, warn=False)  # A config written before a field was renamed (data.task) is the same config.
    data = config.get("data") or {}
    identity = {"name": config.get("name"), **{key: data.get(key) for key in COMPARABLE}}
    path = (data.get("source") or {}).get("path")
    if table and path:  # a dataset of no source file (MNIST's own) is the same data wherever it runs
        # one file however spelled (a user trial's p5/../data/wage.csv was another table than data/wage.csv)
        identity["data.source.path"] = path if "://" in path else os.path.normpath(path)
    return identity


def store_path(shared_mount_path: str, pipeline_name: str) -> str:
    return f"{shared_mount_path.rstrip('/')}/{STORE_FOLDER}/{pipeline_name}"


def gated_model_input(spec: ComponentSpec) -> str:
    """The input holding the model a component judges: its one required Model input (the Evaluator's `model`)."""
    found = [name for name, kind in spec.inputs.items() if issubclass(kind, Model) and name not in spec.optional_inputs]
    if len(found) != 1:
        raise ValueError(f"a latest-blessed baseline needs one required Model input, found {found or 'none'}")
    return found[0]


def record_blessed_model(
    store: Path, model_dir: Path, model_uri: str, baseline_model: str | None, identity: dict | None = None
) -> Path:
    """Copies the blessed model into the store, then writes its record (a reader never sees half a copy);
    `identity`: what it was trained for (model_identity), which the resolver matches."""
    record_id = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{secrets.token_hex(4)}"
    copied = store / "models" / record_id
    partial = store / "models" / f".partial-{record_id}"
    shutil.copytree(model_dir, partial)
    fsync_tree(partial)
    partial.rename(copied)
    record = {
        "model_uri": model_uri,
        "model_path": str(copied),
        "baseline_model": baseline_model or None,
        "model_module_digest": Model(str(copied)).module_digest,
        "identity": identity,
        "created": time.time(),
    }
    path = store / "records" / f"{record_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return path


def blessed_records(store: Path) -> list[dict]:
    """The store's records, newest first (unreadable ones are skipped with a warning)."""
    records = []
    for path in sorted((store / "records").glob("*.json")):
        try:
            records.append({**json.loads(path.read_text()), "id": path.stem})
        except (OSError, ValueError) as error:
            log.warning("skipping the baseline record %s: %s", path, error)
    return sorted(records, key=lambda record: (record.get("created", 0), record["id"]), reverse=True)


def latest_blessed(store: Path, model_uri: str, identity: dict | None = None) -> str:
    """The path of the newest blessed model's copy of the same `identity` ("" when there is none); for the model
    being evaluated itself, the baseline it was blessed against. `identity` None: any record (the store of a
    pipeline compiled before records carried one)."""
    others = 0
    for record in blessed_records(store):
        if identity is not None and record.get("identity") != identity:
            others += 1
            continue
        if not (Path(record["model_path"]) / "model.keras").is_file():
            log.warning("skipping the baseline record %s: %s holds no model.keras", record["id"], record["model_path"])
            continue
        if record["model_uri"] == model_uri:
            return record.get("baseline_model") or ""
        digest = Model(record["model_path"]).module_digest
        if digest is not None and digest != record.get("model_module_digest"):
            raise ValueError(
                f"the blessed model {record['model_path']}: assets/{Model.MODULE_FILE} changed since it was "
                f"blessed (record {record['id']}); refusing to run it as the baseline"
            )
        return record["model_path"]
    if others:
        log.info("%d blessed model(s) in %s of another config of that name (or of none) passed over", others, store)
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="baselines", description="Resolve the latest blessed model (a KFP task).")
    parser.add_argument("--store", type=Path, required=True, help="the pipeline's folder of blessed models")
    parser.add_argument("--model-uri", required=True, help="the URI of the model the Evaluator will judge")
    parser.add_argument("--output", type=Path, required=True, help="where to write the baseline's path (KFP output)")
    parser.add_argument(
        "--identity", type=json.loads, default=None, metavar="JSON", help="the name, dataset, task and label to match"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    baseline = latest_blessed(args.store, args.model_uri, args.identity)
    log.info("baseline for %s: %s", args.model_uri, baseline or f"none (no earlier blessed model in {args.store})")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(baseline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
