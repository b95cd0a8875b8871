"""Scratch folders (`<tmp>/kflow-<what>-<pid>-…`): a process that ends by `kflow`'s own exit (Ctrl-C, a finished
command: exit_now, which skips the threads' `finally`) removes those it made; a forked child's exit leaves its
parent's; a killed process's are `kflow gc`'s (stale_scratch)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from kflow.pipeline.runners.gc import stale_scratch


def _run(code: str, tmp_path: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60,
                          env={"TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert done.returncode in (0, 130, -9), done.stderr[-2000:]  # -9: killed on purpose
    return done.stdout.split()


def test_a_process_ending_by_exit_now_removes_the_scratch_it_made_its_forked_child_does_not(tmp_path):
    made = _run(
        """
        import os
        from kflow.pipeline.dsl.scratch import scratch_dir
        from kflow.pipeline.dsl.process_exit import exit_now
        folder = scratch_dir("probe")
        (open(os.path.join(folder, "chunk"), "w")).write("half-written")
        child = os.fork()
        if child == 0:  # a forked worker inherits the record of the folder, not the folder: it leaves it
            exit_now(0)
        os.waitpid(child, 0)
        print(folder, os.path.isdir(folder))
        exit_now(130)
        """,
        tmp_path,
    )
    folder, after_child = made
    assert after_child == "True" and not Path(folder).exists()


def test_a_killed_process_s_scratch_is_left_to_gc(tmp_path):
    (folder,) = _run(
        """
        import os, signal
        from kflow.pipeline.dsl.scratch import scratch_dir
        folder = scratch_dir("probe")
        print(folder, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """,
        tmp_path,
    )
    assert Path(folder).is_dir() and [stale.path for stale in stale_scratch(tmp_path)] == [Path(folder)]


def test_a_cluster_process_stopped_by_signal_has_its_scratch_removed_by_the_launcher(tmp_path, monkeypatch):
    """A training cluster's worker stopped with SIGTERM (then SIGKILL) gets no exit of its own: the launcher's stop
    removes the scratch folders named with its pid (a MultiWorkerMirrored worker's kflow-ckpt-… were left)."""
    import tempfile
    import time

    from kflow.components.trainer import process_group

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code = "from kflow.pipeline.dsl.scratch import scratch_dir; import time; print(scratch_dir('ckpt'), flush=True); " \
           "time.sleep(600)"  # fmt: skip
    worker = process_group.spawn([sys.executable, "-c", code], {"TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    folder = Path(worker.stdout.readline().strip())
    assert folder.is_dir() and folder.parent == tmp_path
    started = time.monotonic()
    process_group.stop([worker], grace=2.0)
    assert worker.returncode is not None and time.monotonic() - started < 10
    assert not folder.exists()
