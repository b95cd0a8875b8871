"""Log lines held back until a command knows they are true: said (`release`), or dropped with the context."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator


class HeldLines(logging.Filter):
    """Holds the records of one logger whose message holds `text`, to be said by `release`."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text, self.held = text, []

    def filter(self, record: logging.LogRecord) -> bool:
        if self.text in record.getMessage():
            self.held.append(record)
            return False
        return True

    def release(self) -> None:
        for record in self.held:
            logging.getLogger(record.name).handle(record)
        self.held = []


@contextlib.contextmanager
def held_lines(logger_name: str, text: str) -> Iterator[HeldLines]:
    """Within the block, `logger_name`'s lines holding `text` are held; those not released by its end are dropped."""
    logger, held = logging.getLogger(logger_name), HeldLines(text)
    logger.addFilter(held)
    try:
        yield held
    finally:
        logger.removeFilter(held)
