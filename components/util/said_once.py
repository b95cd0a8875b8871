"""A log line said once a process: what kflow tells about a user's model is found at each build of it, and a
Trainer builds a model more than once (to train, to export it)."""

from __future__ import annotations

import logging

_said: set[tuple[str, str]] = set()


def say_once(log: logging.Logger, message: str, level: int = logging.INFO) -> None:
    if (log.name, message) not in _said:
        _said.add((log.name, message))
        log.log(level, "%s", message)
