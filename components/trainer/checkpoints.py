"""Resuming from the newest checkpoint that reads whole.

TensorFlow checks every tensor's CRC32C when it reads a checkpoint, so a file torn by a kill, a full disk
or a power loss (truncated, or zeros of the right size) fails to restore; the loop's manager keeps the
two newest, and the one before is used, with a warning, instead of failing every resume until the
working folder is removed by hand.
"""

from __future__ import annotations

import logging
from pathlib import Path

import tensorflow as tf

log = logging.getLogger("kflow.trainer")


def restore_newest_readable(checkpoint: tf.train.Checkpoint, folder: Path, me: str) -> int:
    """Restores the newest readable checkpoint under `folder` into `checkpoint`; returns its step (0: none).
    The checkpoint number is the loop's step counter (see Runtime.step_counter)."""
    state = tf.train.get_checkpoint_state(str(folder))
    if state is None:
        return 0
    paths = list(state.all_model_checkpoint_paths) or [state.model_checkpoint_path]
    for path in reversed(paths):
        try:
            checkpoint.restore(path).assert_existing_objects_matched()
        except (tf.errors.OpError, ValueError, AssertionError, IndexError) as error:  # IndexError: truncated
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            log.warning("train: %s cannot restore %s (%s); trying the one before", me, path, reason)
            continue
        step = int(path.rsplit("-", 1)[1])
        log.info("train: %s resumed from step %d (%s)", me, step, path)
        return step
    raise RuntimeError(f"no checkpoint under {folder} can be read; remove that folder to train from the start")
