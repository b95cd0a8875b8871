"""Durable publishes: files synced before the rename that publishes them, torn checkpoints that fall back to
the one before, a real full disk (a small tmpfs) while writing run.json, locks that a planted link cannot
redirect."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from kflow.pipeline.dsl import durable
from kflow.pipeline.dsl.dag import Pipeline
from kflow.pipeline.runners.beam_dag_runner import BeamDagRunner, PipelineFailed
from kflow.pipeline.runners.cache import execution_lock
from tests.reliability.tmpfs import mounted_tmpfs
from tests.reliability.toy import Blob, FillDisk


@pytest.fixture
def small_disk(tmp_path):
    """A real 2 MiB file system (tmpfs), mounted for the test and unmounted after."""
    with mounted_tmpfs(tmp_path / "small-disk", "2m") as mount:
        yield mount


def test_a_full_disk_while_writing_run_json_is_one_line_and_leaves_a_readable_record(small_disk):
    with pytest.raises(PipelineFailed) as failure:
        BeamDagRunner().run(Pipeline("toy", [FillDisk("fill")]), small_disk)
    message = str(failure.value)
    assert "\n" not in message
    assert message.startswith("component 'fill' failed: OSError: [Errno 28] No space left on device")
    assert "cannot write" in message and "run.json: No space left on device; it keeps its last state" in message
    (run_file,) = small_disk.glob("toy/*/run.json")
    record = json.loads(run_file.read_text())  # Whole: the last state it could write.
    assert record["pipeline"] == "toy" and record["status"] == "running"
    assert not [path.name for path in run_file.parent.iterdir() if path.name.endswith(".tmp")]
    assert not (run_file.parent / "fill").exists()


def test_a_publish_syncs_every_file_and_folder_before_the_rename(tmp_path, monkeypatch):
    events: list[tuple[str, str]] = []
    real_fsync, real_rename = os.fsync, os.rename

    def fsync(descriptor):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{descriptor}")))
        return real_fsync(descriptor)

    def rename(source, target):
        events.append(("rename", str(source)))
        return real_rename(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "rename", rename)
    result = BeamDagRunner().run(Pipeline("toy", [Blob("blob", parameters={"size": 5000})]), tmp_path)
    (published,) = [index for index, (kind, path) in enumerate(events) if kind == "rename" and "/.staging/" in path]
    staging = events[published][1]
    synced = {path for kind, path in events[:published] if kind == "fsync"}
    for name in ("blob/data.bin", "manifest.json", "blob", ""):
        assert str(Path(staging) / name).rstrip("/") in synced, name
    assert ("fsync", str(result.run_dir)) in events[published:]  # The new name itself.


def test_a_torn_tensorflow_checkpoint_falls_back_to_the_one_before(tmp_path):
    import tensorflow as tf

    from kflow.components.trainer.checkpoints import restore_newest_readable

    variable = tf.Variable(np.zeros(1000, np.float32))
    checkpoint = tf.train.Checkpoint(v=variable)
    manager = tf.train.CheckpointManager(checkpoint, str(tmp_path), max_to_keep=2)
    for step in (40, 80):
        variable.assign(np.full(1000, step, np.float32))
        manager.save(checkpoint_number=step)
    (newest,) = tmp_path.glob("ckpt-80.data-*")
    newest.write_bytes(bytes(newest.stat().st_size))  # Zeros of the right size: what a power loss can leave.
    variable.assign(np.zeros(1000, np.float32))
    assert restore_newest_readable(checkpoint, tmp_path, "chief") == 40
    assert float(variable.numpy()[0]) == 40.0
    for data in tmp_path.glob("ckpt-*.data-*"):
        data.write_bytes(data.read_bytes()[:10])
    with pytest.raises(RuntimeError, match="no checkpoint under .* can be read; remove that folder"):
        restore_newest_readable(checkpoint, tmp_path, "chief")
    assert restore_newest_readable(checkpoint, tmp_path / "none", "chief") == 0


def test_a_torn_jax_state_falls_back_to_the_one_before(tmp_path):
    from kflow.components.trainer.jax_loop import resume, save_state

    path = tmp_path / "jax_state.npz"
    fresh = (np.zeros(3), np.zeros(2), np.zeros(1), "rng")
    save_state(path, (np.full(3, 1.0), np.full(2, 1.0), np.full(1, 1.0), "rng"), step=10)
    save_state(path, (np.full(3, 2.0), np.full(2, 2.0), np.full(1, 2.0), "rng"), step=20)
    assert resume(path, fresh)[1] == 20
    path.write_bytes(path.read_bytes()[:100])  # Torn mid-write.
    state, step = resume(path, fresh)
    assert step == 10 and state[0].tolist() == [1.0, 1.0, 1.0] and state[3] == "rng"
    path.with_suffix(".previous.npz").write_bytes(b"")
    assert resume(path, fresh) == (fresh, 0)  # Nothing readable: from the start, not a crash.


def test_a_link_planted_at_a_lock_name_is_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    locks = tmp_path / "toy" / ".locks"
    locks.mkdir(parents=True)
    (locks / "ingest-abc.lock").symlink_to(victim)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        with execution_lock(tmp_path / "toy", "ingest", "abc"):
            pass
    assert victim.read_text() == "precious"
    with execution_lock(tmp_path / "toy", "train", "def"):
        mode = stat.S_IMODE((locks / "train-def.lock").stat().st_mode)
    assert mode == 0o600


def test_write_atomically_keeps_the_old_file_when_the_new_one_cannot_be_written(tmp_path, monkeypatch):
    path = tmp_path / "record.json"
    durable.write_atomically(path, "old\n")

    def no_space(descriptor, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", no_space)
    with pytest.raises(OSError, match="No space left"):
        durable.write_atomically(path, "new\n")
    monkeypatch.undo()
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["record.json"]
