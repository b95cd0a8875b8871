"""The Pusher component (the executor is imported by the runner, by path)."""

from kflow.components.pusher.component import Pusher

__all__ = ["Pusher"]
