"""Debian's Chromium, headless, driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
NUL-terminated JSON on fds 3 and 4, so no WebSocket client is needed). One page is loaded once and its
DOM polled until a condition holds, as a person waits for a page to show its result."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

COMMAND_TIMEOUT_S = 30


class Browser:
    def __init__(self, width: int = 1280, height: int = 800) -> None:
        chromium = shutil.which("chromium")
        if chromium is None:
            pytest.fail("no `chromium` on PATH: apt-get install chromium (`lab doctor` says so too)")
        to_browser, self._send = os.pipe()
        self._receive, from_browser = os.pipe()

        def fds_3_and_4() -> None:  # where --remote-debugging-pipe expects them
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        argv = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe"]
        argv += [f"--window-size={width},{height}", "--user-data-dir=/tmp/lab-test-chromium", "about:blank"]
        self._process = subprocess.Popen(
            argv,
            preexec_fn=fds_3_and_4,
            pass_fds=(3, 4),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]

    def _call(self, method: str, params: dict[str, Any] | None = None, session: bool = False) -> Any:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        os.write(self._send, json.dumps(message).encode() + b"\0")
        while True:  # events arrive between the answers; skip them
            while b"\0" not in self._buffer:
                chunk = os.read(self._receive, 1 << 16)
                if not chunk:
                    pytest.fail(f"chromium closed its DevTools pipe during {method}")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    pytest.fail(f"DevTools {method}: {reply['error']}")
                return reply["result"]

    def open(self, url: str) -> None:
        self._call("Page.navigate", {"url": url}, session=True)

    def text(self) -> str:
        """What the page shows: the body's rendered text."""
        result = self._call(
            "Runtime.evaluate",
            {"expression": "document.body ? document.body.innerText : ''", "returnByValue": True},
            session=True,
        )
        return str(result["result"].get("value", ""))

    def screenshot(self, path: Path) -> None:
        data = self._call("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self._call("Browser.close")
        except BaseException:
            self._process.kill()
        finally:
            self._process.wait(COMMAND_TIMEOUT_S)
            os.close(self._send)
            os.close(self._receive)
