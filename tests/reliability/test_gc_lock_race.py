"""`kflow gc` and runs over an execution lock: a lock in use never looks idle, gc never removes one a run holds,
and a run waiting on a lock gc removes takes the one at the path again, so that no two runs ever hold it at once
(issue 55 L4). Real processes holding real flocks; the interleavings forced between gc's check and its unlink."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from kflow.pipeline.runners import gc
from kflow.pipeline.runners.cache import execution_lock
from tests.conftest import REPO

NODE, FINGERPRINT = "ingest", "0123456789abcdef0123"
# Takes the execution lock as a run does; says `held` when it has it, and keeps it until its stdin closes.
TAKER = f"""
import logging, sys
from pathlib import Path
from kflow.pipeline.runners.cache import execution_lock
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
with execution_lock(Path(sys.argv[1]), {NODE!r}, {FINGERPRINT!r}):
    print("held", flush=True)
    sys.stdin.read()
"""


class Taker:
    """A process that takes the lock (`execution_lock`, as `kflow run` does) and holds it until released."""

    def __init__(self, pipeline_dir: Path):
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", TAKER, str(pipeline_dir)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO, env=env,
        )  # fmt: skip
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def said(self, word: str, timeout: float) -> bool:
        """Whether it printed a line containing `word` within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not any(word in line for line in list(self.lines)):
            if time.monotonic() > deadline or (not self.reader.is_alive() and not self._has(word)):
                return self._has(word)
            time.sleep(0.05)
        return True

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    def _has(self, word: str) -> bool:
        return any(word in line for line in list(self.lines))

    def release(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def a_pipeline_with_an_idle_lock(tmp_path: Path) -> tuple[Path, Path]:
    pipeline_dir = tmp_path / "toy"
    (pipeline_dir / "20260101-000000-000000-aaaa").mkdir(parents=True)
    record = {"pipeline": "toy", "run_id": "20260101-000000-000000-aaaa", "status": "succeeded", "components": {}}
    (pipeline_dir / "20260101-000000-000000-aaaa" / "run.json").write_text(json.dumps(record))
    with execution_lock(pipeline_dir, NODE, FINGERPRINT):
        pass
    lock = pipeline_dir / ".locks" / f"{NODE}-{FINGERPRINT}.lock"
    two_days_ago = time.time() - 2 * 86400
    os.utime(lock, (two_days_ago, two_days_ago))
    return pipeline_dir, lock


def test_taking_a_lock_marks_it_in_use_so_a_lock_used_daily_is_never_collected(tmp_path):
    pipeline_dir, lock = a_pipeline_with_an_idle_lock(tmp_path)
    assert lock in {item.path for item in gc.stale_items(pipeline_dir)}  # two days untouched, no holder
    with execution_lock(pipeline_dir, NODE, FINGERPRINT):  # a run uses it today
        pass
    assert time.time() - lock.stat().st_mtime < 60
    assert lock not in {item.path for item in gc.stale_items(pipeline_dir)}


def test_a_lock_a_run_takes_after_gc_listed_it_is_not_removed_and_still_excludes(tmp_path):
    pipeline_dir, lock = a_pipeline_with_an_idle_lock(tmp_path)
    listed = gc.stale_items(pipeline_dir)  # gc's check: idle and free
    assert lock in {item.path for item in listed}
    first = Taker(pipeline_dir)
    second = None
    try:
        assert first.said("held", 60), first.lines
        inode = lock.stat().st_ino
        gc.remove(listed)  # gc's unlink, later: the lock is now in use
        assert lock.stat().st_ino == inode, "the lock a run holds is still the one at its path"
        second = Taker(pipeline_dir)
        assert second.said("waiting to reuse its outputs", 60), second.lines
        assert not second.said("held", 1.5), "two runs held the execution lock at once"
        first.release()
        assert second.said("held", 30), second.lines
    finally:
        first.kill()
        if second is not None:
            second.kill()


def test_a_run_waiting_on_a_lock_gc_removes_takes_the_new_one_and_excludes_the_next(tmp_path, monkeypatch):
    pipeline_dir, lock = a_pipeline_with_an_idle_lock(tmp_path)
    listed = gc.stale_items(pipeline_dir)
    takers: list[Taker] = []

    def a_run_comes_to_wait_on_it(path):
        """Between gc's taking the lock and its unlink: a run opens that very file and waits on it."""
        assert path == lock
        takers.append(Taker(pipeline_dir))
        assert takers[0].said("waiting to reuse its outputs", 60), takers[0].lines

    monkeypatch.setattr(gc, "_before_unlink", a_run_comes_to_wait_on_it)
    try:
        gc.remove(listed)
        assert takers, "gc unlinked the lock while holding it"
        first = takers[0]
        assert first.said("held", 30), first.lines  # gc let go: it had the unlinked file, so took the new one
        assert lock.is_file()
        second = Taker(pipeline_dir)
        takers.append(second)
        assert not second.said("held", 1.5), "two runs held the execution lock at once (one of them a removed file)"
        first.release()
        assert second.said("held", 30), second.lines
    finally:
        for taker in takers:
            taker.kill()
