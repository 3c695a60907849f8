"""Test helpers that stand in for a user at a browser: a websocket client (what meshcat's page
opens to its server) and headless Chromium driven over the DevTools protocol (open a page,
evaluate in it, reload it, close its tab), both over tornado, meshcat's own dependency.

And a `dojo` command run as a separate process whose output lines are read as they come
(``DojoProcess``): a live view's URL, its "viewer connected" line, its exit."""

from __future__ import annotations

import asyncio
import json
import queue
import re
import shutil
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

from tornado.websocket import websocket_connect

from tests.processes import default_signals, dojo_command

CHROMIUM = "/usr/bin/chromium"
# Generous bounds (s) for a loaded 2-core machine: a process start (imports, the server),
# a page load in headless Chromium (2.4 s measured for meshcat's first load).
START_TIMEOUT = 60.0
URL_PATTERN = re.compile(r"http://127\.0\.0\.1:\d+/static/")


def chromium_missing() -> str | None:
    """Why the browser tests cannot run, or None."""
    if not Path(CHROMIUM).exists():
        return f"chromium not installed: {CHROMIUM} is absent (.ci/run installs Debian's chromium)"
    return None


class DojoProcess:
    """`dojo ARGS` in its own process; its stdout and stderr lines collected as they come."""

    def __init__(self, *args, cwd: Path | None = None):
        self.proc = subprocess.Popen(dojo_command() + [str(a) for a in args], cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                     preexec_fn=default_signals)
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._lines: queue.Queue[str] = queue.Queue()
        self._threads = [threading.Thread(target=self._read, args=(self.proc.stdout, self.stdout, True), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr, self.stderr, False), daemon=True)]
        for t in self._threads:
            t.start()

    def _read(self, stream, into: list[str], signal_lines: bool) -> None:
        for line in stream:
            into.append(line)
            if signal_lines:
                self._lines.put(line)

    def wait_for_line(self, pattern: str, timeout: float = START_TIMEOUT) -> str:
        """The first stdout line from now on that matches ``pattern`` (AssertionError if none
        comes within ``timeout`` or the process ends first)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=0.1)
            except queue.Empty:
                if self.proc.poll() is not None and self._lines.empty():
                    break
                continue
            if re.search(pattern, line):
                return line
        raise AssertionError(f"no line matching {pattern!r} (exit {self.proc.poll()}):\n{self.output()}")

    def url(self) -> str:
        return URL_PATTERN.search(self.wait_for_line(URL_PATTERN.pattern)).group(0)

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout=timeout)
        for t in self._threads:
            t.join(timeout=5)
        return code

    def output(self) -> str:
        return "".join(self.stdout) + "".join(self.stderr)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Websocket:
    """A websocket client of a meshcat server (what the viewer page opens): connect, close."""

    def __init__(self, web_url: str):
        self.loop = asyncio.new_event_loop()
        ws = web_url.replace("http://", "ws://").split("/static/")[0] + "/"

        async def connect():
            return await websocket_connect(ws, max_message_size=1 << 28)

        self.conn = self.loop.run_until_complete(connect())

    def messages(self, until, timeout: float = START_TIMEOUT) -> list[bytes]:
        """The messages the server sends, read until ``until(message)`` is true for one."""
        got: list[bytes] = []

        async def read():
            while not got or not until(got[-1]):
                message = await self.conn.read_message()
                if message is None:
                    raise AssertionError("the server closed the websocket")
                got.append(message)

        self.loop.run_until_complete(asyncio.wait_for(read(), timeout))
        return got

    def close(self) -> None:
        self.conn.close()
        self.loop.run_until_complete(asyncio.sleep(0.05))  # let the close frame go out
        self.loop.close()


class DevToolsError(AssertionError):
    """A DevTools command answered with an error."""


class Chromium:
    """Headless Chromium on one URL with its DevTools port open; networking off except the
    loopback (every host unresolvable, every other request sent to a proxy that does not
    exist); software WebGL."""

    def __init__(self, url: str, profile: Path):
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--proxy-server=127.0.0.1:9", f"--user-data-dir={profile}",
             "--window-size=800,600", "--remote-debugging-port=0", url],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        self.loop = asyncio.new_event_loop()
        self._id = 0
        deadline = time.monotonic() + START_TIMEOUT
        for line in self.proc.stderr:
            match = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if match:
                self.port = int(match.group(1))
                break
            if time.monotonic() > deadline:
                break
        else:
            raise AssertionError(f"chromium did not open its DevTools port (exit {self.proc.poll()})")
        # (stderr must keep being read, or a chatty browser blocks on a full pipe)
        threading.Thread(target=lambda: shutil.copyfileobj(self.proc.stderr, open("/dev/null", "w")), daemon=True).start()

    def page(self) -> dict:
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=10).read())
        (page,) = [t for t in targets if t["type"] == "page"]
        return page

    def call(self, method: str, **params) -> dict:
        """One DevTools command to the page; its result."""
        async def go():
            conn = await websocket_connect(self.page()["webSocketDebuggerUrl"], max_message_size=1 << 28)
            try:
                self._id += 1
                conn.write_message(json.dumps({"id": self._id, "method": method, "params": params}))
                while True:
                    message = await asyncio.wait_for(conn.read_message(), START_TIMEOUT)
                    if message is None:
                        raise AssertionError(f"{method}: the page's DevTools connection closed")
                    reply = json.loads(message)
                    if reply.get("id") == self._id:
                        return reply
            finally:
                conn.close()

        reply = self.loop.run_until_complete(go())
        if "error" in reply:
            raise DevToolsError(f"{method}: {reply['error']}")
        return reply["result"]

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (None when it throws, or while the
        page is between documents: a reload)."""
        try:
            result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        except DevToolsError:
            return None
        return None if "exceptionDetails" in result else result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = START_TIMEOUT):
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"{expression!r} still false after {timeout:g} s")

    def close_tab(self) -> None:
        """Close the page's tab (the browser itself keeps running, as with a tab closed)."""
        page = self.page()
        urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/close/{page['id']}", timeout=10).read()

    def quit(self) -> None:
        self.loop.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
