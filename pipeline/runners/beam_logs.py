"""Beam's logs of a failing element, which kflow says itself: quiet in `kflow` and in `api.run`."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

# Beam logs a failing element's traceback, and its SDK worker the same again ("Error processing instruction"); kflow
# says the failed component in one line itself (PipelineFailed), naming the error log that holds the traceback.
BEAM_ELEMENT_LOGGERS = ("apache_beam.runners.common", "apache_beam.runners.worker.sdk_worker")


@contextlib.contextmanager
def beam_element_errors_quiet() -> Iterator[None]:
    """Within the block, Beam's loggers of a failing element's traceback are quiet (Ctrl-C in `api.run` printed a
    KeyboardInterrupt's traceback beside the Cancelled it raised); after it, as they were."""
    loggers = [logging.getLogger(name) for name in BEAM_ELEMENT_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
