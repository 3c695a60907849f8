"""A meshcat server that listens on the loopback interface only.

meshcat 0.3.2's own server (``meshcat.Visualizer()``) binds its ZeroMQ socket to
127.0.0.1 but its web server (tornado ``Application.listen(port)``, no address) to
every interface, IPv4 and IPv6: anyone on the network could watch, or drive, the
viewer. This module runs meshcat's ``ZMQWebSocketBridge`` with the web server bound
to 127.0.0.1, as a subprocess like meshcat does (``python -m
dojo_cli.viz.meshcat_server PARENT_PID`` prints ``zmq_url=...`` and ``web_url=...``
and stops when its parent is gone), and
hands back a ``meshcat.Visualizer`` connected to it.

The server also tells who is watching (``MeshcatServer.presence``, a ``ViewerPresence``
report): how many browser tabs hold the viewer's websocket now, how many ever did, and
for how long none has. ``viewer_closed`` reads "the viewer was closed" from it: at least
one tab connected, then the last one left at least VIEWER_CLOSE_GRACE seconds ago (a
reload leaves and comes back within it); a server no browser ever connected to is never
closed. `dojo simulate --view` stops its run on it (viz.live.ViewerWatch).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import meshcat
import zmq
from meshcat.visualizer import ViewerWindow

from dojo_cli.errors import DojoError

LOOPBACK = "127.0.0.1"

# A REQ socket waits forever for a dead server; give up after this (ms). Generous:
# the largest reply is get_scene, a few MB of HTML built in well under a second.
_REPLY_TIMEOUT_MS = 30_000
# How long to wait for the server process to stop after SIGTERM before killing it (s).
_STOP_TIMEOUT = 5.0
# The server checks this often (s) whether the process that started it is still there, and
# stops when it is not: a `dojo replay` killed without cleanup (SIGTERM, SIGKILL) leaves
# no orphan server holding the ports.
_PARENT_POLL = 1.0
# A browser that reloads the viewer drops its websocket and opens a new one once the page
# has loaded again: 0.4 s measured in headless Chromium on the shared 2-core machine (2.4 s
# for a first load, script compiled cold). The viewer counts as closed when no tab has been
# connected for this long (s): a reload is not a close; closing the tab stops a run this late.
VIEWER_CLOSE_GRACE = 3.0
# The ZeroMQ request that asks the server for its ViewerPresence report (meshcat's own
# commands are set_object, set_transform, ...; the bridge answers unknown ones with an error).
PRESENCE_COMMAND = b"dojo_presence"


class MeshcatServerError(DojoError):
    """The meshcat server could not be started or stopped answering: exit code 3 (I/O)."""

    exit_code = 3


class _LoopbackWindow(ViewerWindow):
    """meshcat's ViewerWindow for a server we started: no printing, and a ``close``.

    (ViewerWindow.__init__ prints the URL, and meshcat 0.3.2's ``Visualizer.close``
    calls a ``window.close`` that ViewerWindow does not define.)
    """

    def __init__(self, process: subprocess.Popen, zmq_url: str, web_url: str):
        self.server_proc = process
        self.zmq_url = zmq_url
        self.web_url = web_url
        self.connect_zmq()

    def connect_zmq(self) -> None:
        super().connect_zmq()
        self.zmq_socket.setsockopt(zmq.RCVTIMEO, _REPLY_TIMEOUT_MS)
        self.zmq_socket.setsockopt(zmq.LINGER, 0)

    def send(self, command) -> None:
        try:
            super().send(command)
        except zmq.error.Again:
            raise MeshcatServerError(f"meshcat server at {self.zmq_url}: no reply (did it stop?)") from None

    def presence(self) -> dict:
        """The server's ViewerPresence report (``ViewerPresence.report``)."""
        try:
            self.zmq_socket.send_multipart([PRESENCE_COMMAND])
            return json.loads(self.zmq_socket.recv())
        except zmq.error.Again:
            raise MeshcatServerError(f"meshcat server at {self.zmq_url}: no reply (did it stop?)") from None

    def close(self) -> None:
        """Close the connection and stop the server process."""
        try:
            self.zmq_socket.close(linger=0)
        finally:
            _stop(self.server_proc)


@dataclass
class MeshcatServer:
    """A running loopback meshcat server and a Visualizer connected to it.

    Attributes:
        visualizer: ``meshcat.Visualizer`` rooted at ``/meshcat``.
        web_url: the viewer's address (``http://127.0.0.1:<port>/static/``).
        zmq_url: the command socket (``tcp://127.0.0.1:<port>``).
        process: the server subprocess.
    """

    visualizer: meshcat.Visualizer
    web_url: str
    zmq_url: str
    process: subprocess.Popen

    def close(self) -> None:
        """Stop the server (idempotent)."""
        self.visualizer.window.close()

    def presence(self) -> dict:
        """Who is watching: ``{"connected": tabs now, "ever": tabs ever, "idle": s since the
        last one left, or None while one is connected or none ever was}`` (ViewerPresence)."""
        return self.visualizer.window.presence()

    def __enter__(self) -> MeshcatServer:
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False


class ViewerPresence:
    """The browser tabs connected to a server's websocket (kept by the server process).

    Attributes:
        connected: tabs connected now.
        ever: tabs that ever connected.
        empty_since: when (the server's monotonic clock, s) the last tab left; None while
            one is connected, or before any connected.
    """

    def __init__(self) -> None:
        self.connected = 0
        self.ever = 0
        self.empty_since: float | None = None

    def opened(self, now: float) -> None:
        self.connected += 1
        self.ever += 1
        self.empty_since = None

    def closed(self, now: float) -> None:
        self.connected = max(self.connected - 1, 0)
        if self.connected == 0:
            self.empty_since = now

    def report(self, now: float) -> dict:
        """``{"connected", "ever", "idle"}``: idle is how long (s) no tab has been connected
        after one was, else None."""
        idle = None if self.empty_since is None else now - self.empty_since
        return {"connected": self.connected, "ever": self.ever, "idle": idle}


def viewer_closed(report: dict, grace: float = VIEWER_CLOSE_GRACE) -> bool:
    """Whether a ViewerPresence report says the viewer was closed: a tab connected once, and
    none has been connected for ``grace`` seconds (a reload comes back within it). A server
    no browser ever connected to is not closed."""
    return report["ever"] > 0 and report["connected"] == 0 and report["idle"] is not None and report["idle"] >= grace


def start_server() -> MeshcatServer:
    """Start a meshcat server on 127.0.0.1 (first free ports from 6000 / 7000).

    Raises:
        MeshcatServerError: the server process exited before printing its URLs.
    """
    env = dict(os.environ)
    # dojo_cli importable in the child even when it is not installed (run from a checkout)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "dojo_cli.viz.meshcat_server", str(os.getpid())],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,  # Ctrl-C in the terminal reaches us, and we stop it cleanly
    )
    atexit.register(_stop, process)
    urls = {}
    while len(urls) < 2:
        line = process.stdout.readline().decode("utf-8", "replace").strip()
        if not line and process.poll() is not None:
            raise MeshcatServerError(f"the meshcat server exited with code {process.returncode} before starting")
        key, sep, value = line.partition("=")
        if sep and key in ("zmq_url", "web_url"):
            urls[key] = value
    window = _LoopbackWindow(process, urls["zmq_url"], urls["web_url"])
    return MeshcatServer(meshcat.Visualizer(window=window), urls["web_url"], urls["zmq_url"], process)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=_STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _serve(parent: int | None) -> None:
    """The server process: meshcat's bridge with the web server on 127.0.0.1 only, until
    stopped or until process ``parent`` (when given) is gone."""
    import tornado.web
    from meshcat.servers.zmqserver import VIEWER_HTML, VIEWER_ROOT, StaticFileHandlerNoCache, WebSocketHandler, ZMQWebSocketBridge
    from tornado.ioloop import PeriodicCallback

    class PresenceHandler(WebSocketHandler):
        """meshcat's websocket handler, counting the tabs it serves (ViewerPresence)."""

        def open(self):
            self.bridge.presence.opened(time.monotonic())
            super().open()

        def on_close(self):
            super().on_close()
            self.bridge.presence.closed(time.monotonic())

    class LoopbackBridge(ZMQWebSocketBridge):
        def __init__(self, **kwargs):
            self.presence = ViewerPresence()
            self.controls: dict[bytes, bytes] = {}  # set_control commands by path
            super().__init__(**kwargs)

        def make_app(self):
            # meshcat's two routes, with the counting websocket handler
            app = tornado.web.Application([
                (r"/static/(.*)", StaticFileHandlerNoCache, {"path": VIEWER_ROOT, "default_filename": VIEWER_HTML}),
                (r"/", PresenceHandler, {"bridge": self}),
            ])
            # meshcat calls app.listen(port); without an address tornado binds every interface
            app.listen = functools.partial(app.listen, address=LOOPBACK)
            return app

        def handle_zmq(self, frames):
            if frames[0] == PRESENCE_COMMAND:
                self.zmq_socket.send(json.dumps(self.presence.report(time.monotonic())).encode("utf-8"))
            elif frames[0] == b"set_control" and len(frames) == 3:
                # a control of the viewer's panel (viz.meshcat_scene.add_toggle), which meshcat's
                # bridge does not know: shown to the browsers connected, and kept for later ones
                self.controls[frames[1]] = frames[2]
                self.forward_to_websockets(frames)
                self.zmq_socket.send(b"ok")
            else:
                super().handle_zmq(frames)

        def send_scene(self, websocket):
            super().send_scene(websocket)
            for data in self.controls.values():
                websocket.write_message(data, binary=True)

    bridge = LoopbackBridge(host=LOOPBACK)
    print(f"zmq_url={bridge.zmq_url}", flush=True)
    print(f"web_url={bridge.web_url}", flush=True)
    if parent is not None:
        def stop_when_orphaned() -> None:
            if os.getppid() != parent:
                bridge.ioloop.stop()

        PeriodicCallback(stop_when_orphaned, _PARENT_POLL * 1000).start()
    try:
        bridge.run()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    _serve(int(sys.argv[1]) if len(sys.argv) > 1 else None)
