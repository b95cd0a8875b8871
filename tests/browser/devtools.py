"""Headless Chromium driven over the DevTools protocol: open a page, run JavaScript in it, read the result.

The browser is a real one (Debian's `chromium`; `.ci/run` installs it), started with its own profile folder
and a DevTools port it picks itself (written to `DevToolsActivePort`), and stopped, its process group with it,
however the test ends. `websocket-client` speaks the protocol.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
START_TIMEOUT = 60.0


def chromium_or_skip() -> str:
    browser = next((shutil.which(name) for name in CHROMIUM_NAMES if shutil.which(name)), None)
    if browser is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium; .ci/run installs it)")
    return browser


class Page:
    """One tab: `open(path)` loads a file and waits for it; `evaluate(js)` returns the expression's JSON value."""

    def __init__(self, socket: Any):
        self._socket, self._ids = socket, itertools.count(1)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self._ids)
        self._socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv())
            if message.get("id") == message_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def open(self, path: Path, width: int = 1280, height: int = 900) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        self.call("Page.navigate", url=path.resolve().as_uri())
        deadline = time.monotonic() + 30
        while self.evaluate("document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} did not load in 30 s")
            time.sleep(0.05)
        self.evaluate("document.fonts.ready.then(() => true)", wait=True)

    def evaluate(self, expression: str, wait: bool = False) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=wait)
        if "exceptionDetails" in result:
            raise RuntimeError(f"JavaScript failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, width: int = 1280) -> None:
        """The whole page (its full height) as a PNG."""
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        import base64

        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(shot["data"]))


@contextmanager
def chromium_page() -> Iterator[Page]:
    """A headless Chromium and one page of it, all of it stopped on the way out."""
    import websocket

    browser = chromium_or_skip()
    profile = tempfile.mkdtemp(prefix="kflow-chromium-")
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
               "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    socket = None
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT
        while not (port_file.exists() and port_file.read_text().strip()):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Chromium did not start (exit {process.poll()})")
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            target = next(item for item in json.load(answer) if item["type"] == "page")
        socket = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=30, suppress_origin=True)
        yield Page(socket)
    finally:
        if socket is not None:
            socket.close()
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=10)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)
