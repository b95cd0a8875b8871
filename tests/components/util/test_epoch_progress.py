"""The in-epoch progress lines come every `log_every_steps`, also when steps arrive several at a time."""

from __future__ import annotations

import logging

import pytest

from kflow.components.util.progress import EpochProgress


@pytest.mark.parametrize(("chunk", "expected"), [(1, [100, 200, 300]), (8, [104, 200, 304]), (150, [150, 300])])
def test_a_line_and_a_loss_read_each_time_a_multiple_of_log_every_steps_is_passed(monkeypatch, caplog, chunk, expected):
    monkeypatch.setenv("KFLOW_PROGRESS", "plain")
    progress = EpochProgress(1, 1, steps=400, batch_size=16, log_every_steps=100)
    read = []
    with caplog.at_level(logging.INFO, logger="kflow"):
        for step in range(chunk, 400 + chunk, chunk):
            progress.update(min(step, 400), lambda step=step: read.append(step) or 0.5)
    assert read == expected  # every process reads the loss at the same steps; never at the epoch's last
    lines = [record.getMessage() for record in caplog.records if "step " in record.getMessage()]
    assert [line.split("step ")[1].split("/")[0] for line in lines] == [str(step) for step in expected]
