"""`exit_now`: a process ends with its code, its `atexit` handlers run, its streams and logs flushed."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_process_ends_with_its_code_handlers_run_and_outputs_flushed(tmp_path):
    script = textwrap.dedent(f"""
        import atexit, logging, sys
        from pathlib import Path
        from kflow.pipeline.dsl.process_exit import exit_now

        atexit.register(lambda: Path({str(tmp_path / "handler")!r}).write_text("ran"))
        handler = logging.FileHandler({str(tmp_path / "log")!r})
        logging.getLogger("kflow").addHandler(handler)
        logging.getLogger("kflow").warning("a last line")
        sys.stdout.write("no newline, still buffered")
        sys.stderr.write("to stderr")
        exit_now(3)
        raise SystemExit("not reached")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 3
    assert result.stdout == "no newline, still buffered" and result.stderr == "to stderr"
    assert (tmp_path / "handler").read_text() == "ran"
    assert (tmp_path / "log").read_text() == "a last line\n"


def test_under_a_profiler_the_process_ends_as_usual_so_the_profile_is_written(tmp_path):
    script = "from kflow.pipeline.dsl.process_exit import exit_now\nexit_now(0)\n"
    (tmp_path / "main.py").write_text(script)
    profile = tmp_path / "profile"
    command = [sys.executable, "-m", "cProfile", "-o", str(profile), str(tmp_path / "main.py")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert profile.stat().st_size > 0
