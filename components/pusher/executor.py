"""The Pusher's executor: publish a SavedModel as the next integer version of a serving folder."""

from __future__ import annotations

import logging
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

from kflow.pipeline.dsl.artifacts import Model, ModelBlessing, PushedModel
from kflow.pipeline.dsl.durable import fsync_path, fsync_tree

log = logging.getLogger("kflow")

STAGING_PREFIX = ".pushing-"


def run(
    *,
    model: Model,
    pushed_model: PushedModel,
    push_destination: str,
    model_name: str = "model",
    blessing: ModelBlessing | None = None,
) -> dict[str, Any]:
    """Pushes `model` unless `blessing` refused it; records the outcome in `pushed_model/push.json`."""
    if blessing is not None and not blessing.blessed:
        reason = f"the model is not blessed ({blessing.uri})"
        pushed_model.write_json(PushedModel.RECORD, {"pushed": False, "model": model.uri, "reason": reason})
        log.info("push: nothing pushed: %s", reason)
        return {"pushed": False, "reason": reason}
    if not (model.serving_uri / "saved_model.pb").is_file():
        raise FileNotFoundError(f"the model {model.uri} has no SavedModel in {model.serving_uri.name}/")
    if not model_name or "/" in model_name or model_name.startswith("."):
        raise ValueError(f"model_name must be a plain folder name, got {model_name!r}")
    serving_dir, version = publish(model.serving_uri, Path(push_destination) / model_name)
    record = {"pushed": True, "version": version, "serving_dir": str(serving_dir), "model": model.uri}
    pushed_model.write_json(PushedModel.RECORD, record)
    log.info("push: %s → %s (version %d)", model.serving_uri, serving_dir, version)
    return {"pushed": True, "version": version, "serving_dir": str(serving_dir)}


def versions(base: Path) -> list[int]:
    """The integer versions already under `base`, in order."""
    if not base.is_dir():
        return []
    return sorted(int(entry.name) for entry in base.iterdir() if entry.name.isdigit() and entry.is_dir())


def publish(saved_model: Path, base: Path) -> tuple[Path, int]:
    """Copies `saved_model` into `base` under a staging name, then renames it to the next free version.

    A server watching `base` never sees a half-copied version; two pushers racing for the same number
    both succeed, because renaming onto an existing (non-empty) version fails and the loser takes the next.
    """
    base.mkdir(parents=True, exist_ok=True)
    staging = base / f"{STAGING_PREFIX}{secrets.token_hex(4)}"
    shutil.copytree(saved_model, staging)
    fsync_tree(staging)
    try:
        for _ in range(1000):
            version = (versions(base) or [0])[-1] + 1
            target = base / str(version)
            try:
                os.rename(staging, target)
            except OSError:  # Taken meanwhile (ENOTEMPTY/EEXIST): try the next number.
                continue
            fsync_path(base)
            return target, version
        raise RuntimeError(f"could not claim a version folder under {base}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
