"""The folder where kflow keeps what only saves time on this machine (never a result): `$XDG_CACHE_HOME/kflow`,
`~/.cache/kflow` without it. Losing it costs the next process the work, nothing else."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache(*parts: str) -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "kflow", *parts)
