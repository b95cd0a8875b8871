"""The Pusher's executor: publish a SavedModel as the next integer version of a serving folder.

The folder is a path (on this machine, or on a pod's shared volume) or a URI that TensorFlow's file system writes:
`gs://` (built in), `s3://` and others where their file system plugin is installed (tensorflow-io). Credentials are
the file system's own (on a cluster: environment variables from a Kubernetes Secret), never in the config."""

from __future__ import annotations

import filecmp
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
    if "://" in push_destination:
        serving_dir, version = publish_uri(model.serving_uri, f"{push_destination.rstrip('/')}/{model_name}")
    else:
        base = Path(push_destination) / model_name
        same = [number for number in versions(base) if same_files(model.serving_uri, base / str(number))]
        newest = (versions(base) or [0])[-1]
        if same and same[-1] == newest:  # a re-run (its Evaluator's code or thresholds edited): served already
            record = {"pushed": True, "version": newest, "serving_dir": str(base / str(newest)), "model": model.uri,
                      "reason": f"already version {newest} of {base}"}  # fmt: skip
            pushed_model.write_json(PushedModel.RECORD, record)
            log.info("push: %s is already version %d of %s: nothing copied", model.serving_uri, newest, base)
            return {"pushed": True, "version": newest, "serving_dir": record["serving_dir"], "already": True}
        serving_dir, version = publish(model.serving_uri, base)
        if same:  # served again over a newer one: TF Serving serves the highest version
            log.warning("push: version %d is the model of version %d again, now served over version %d (%s)",
                        version, same[-1], newest, model.uri)  # fmt: skip
    record = {"pushed": True, "version": version, "serving_dir": str(serving_dir), "model": model.uri}
    pushed_model.write_json(PushedModel.RECORD, record)
    log.info("push: %s → %s (version %d)", model.serving_uri, serving_dir, version)
    return {"pushed": True, "version": version, "serving_dir": str(serving_dir)}


def same_files(one: Path, other: Path) -> bool:
    """Whether two SavedModel folders hold the same files, byte for byte (sizes first: a hash only where they tie)."""

    def listing(folder: Path) -> dict[str, Path]:
        return {str(path.relative_to(folder)): path for path in folder.rglob("*") if path.is_file()}

    mine, theirs = listing(one), listing(other)
    if mine.keys() != theirs.keys() or any(mine[name].stat().st_size != theirs[name].stat().st_size for name in mine):
        return False
    return all(filecmp.cmp(mine[name], theirs[name], shallow=False) for name in mine)


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


def publish_uri(saved_model: Path, base: str) -> tuple[str, int]:
    """`publish` for a URI, through TensorFlow's file system (tf.io.gfile). An object store has no atomic rename of a
    folder: the files go straight into the next free version, `saved_model.pb` last, so that a server polling `base`
    finds the SavedModel complete once it finds it at all (TF Serving retries a version that fails to load)."""
    from tensorflow.errors import UnimplementedError
    from tensorflow.io import gfile

    try:
        gfile.makedirs(base)
    except UnimplementedError as error:
        scheme = base.split("://", 1)[0]
        raise ValueError(
            f"push_destination {base.rsplit('/', 1)[0]}: TensorFlow has no file system for {scheme}:// here "
            f"(s3:// and others need their plugin, e.g. tensorflow-io)"
        ) from error
    taken = [int(name.rstrip("/")) for name in gfile.listdir(base) if name.rstrip("/").isdigit()]
    version = max(taken, default=0) + 1
    target = f"{base}/{version}"
    files = [path for path in saved_model.rglob("*") if path.is_file()]
    files.sort(key=lambda path: path.name == "saved_model.pb")
    for path in files:
        destination = f"{target}/{path.relative_to(saved_model).as_posix()}"
        gfile.makedirs(destination.rsplit("/", 1)[0])
        gfile.copy(str(path), destination, overwrite=False)
    return target, version
