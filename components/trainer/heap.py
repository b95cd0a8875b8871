"""Keeps freed heap memory in a training process instead of handing it back to the kernel at every step.

glibc's malloc trims the top of its heap as soon as enough of it is free. A TensorFlow step on the CPU frees
its activations and gradients at its end and allocates them again at the next one, so with the default
settings each step can fault in tens of megabytes of fresh, zeroed pages: on this project's 2-core VM, a
MultiWorkerMirrored MNIST step spent half its time there (1.9 M page faults against 0.17 M for the same
training; bench/README.md). A top pad makes every heap extension ask for that much more and leaves that much
free at the top before trimming, so the steps reuse the pages they have.
"""

from __future__ import annotations

import ctypes
import os
import sys

M_TOP_PAD = -2  # glibc's <malloc.h>
TOP_PAD_BYTES = 256 << 20  # virtual until touched: it bounds what stays mapped, it does not allocate it
USER_SETTING = "MALLOC_TOP_PAD_"  # glibc reads it at start-up; a user who set it keeps their value


def keep_freed_heap(pad_bytes: int = TOP_PAD_BYTES) -> bool:
    """Sets glibc's top pad for this process (once is enough); returns whether it was set.

    Leaves things as they are off glibc (macOS, musl) and when the user set `MALLOC_TOP_PAD_` themselves.
    """
    if not sys.platform.startswith("linux") or USER_SETTING in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process runs on (no ldconfig lookup)
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_TOP_PAD, pad_bytes))
