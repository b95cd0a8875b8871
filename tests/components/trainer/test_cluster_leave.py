"""The end of a MultiWorkerMirrored cluster: the chief (the coordination service's host) ends after the others."""

from __future__ import annotations

import socket
import time

from kflow.components.trainer.strategies.multi_worker_mirrored import peer_addresses, wait_until_gone


def test_the_peers_are_every_chief_and_worker_task_but_this_one():
    cluster = {"chief": ["c:2000"], "worker": ["w0:2001", "[::1]:2002"], "ps": ["p:2003"], "evaluator": ["e:2004"]}
    assert peer_addresses({"cluster": cluster, "task": {"type": "worker", "index": 0}}) == [
        ("c", 2000), ("::1", 2002)
    ]  # fmt: skip
    assert peer_addresses({"cluster": cluster, "task": {"type": "chief", "index": 0}}) == [("w0", 2001), ("::1", 2002)]


def test_the_chief_waits_while_a_peer_listens_and_goes_on_once_it_is_gone():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    address = server.getsockname()
    started = time.monotonic()
    assert wait_until_gone([address], timeout=0.5) is False  # Still listening: the bound ends the wait.
    assert 0.5 <= time.monotonic() - started < 5
    server.close()
    started = time.monotonic()
    assert wait_until_gone([address], timeout=5) is True
    assert time.monotonic() - started < 1
