"""The live view against a real meshcat server (issue 30 item 1): closing the viewer's window
stops a `dojo simulate --view` run, a reload does not, a run no browser ever connected to
goes on, and SIGTERM leaves the file `interrupted`.

A browser is either a websocket client from Python (what meshcat's page opens) or headless
Chromium on the viewer's page, driven over DevTools (its tab closed)."""

from __future__ import annotations

import signal
import time

import pytest
import umsgpack

from dojo_cli.io.storage import read_storage
from dojo_cli.viz.meshcat_scene import ReplayOptions, load_run, mechanism_from_run
from dojo_cli.viz.live import PRESENCE_POLL, ViewerWatch
from dojo_cli.viz.meshcat_server import VIEWER_CLOSE_GRACE, ViewerPresence, start_server, viewer_closed
from tests.viz.browser import START_TIMEOUT, Chromium, DojoProcess, Websocket, chromium_missing
from tests.viz.test_replay import runs  # noqa: F401 (the fixture: built-in runs of 1 s)

# A --view run at real time lasts this long unless something stops it (s of simulated time).
LONG_RUN = 120
# The run stops within the grace, one presence poll and one frame of being closed; the rest
# is a loaded machine's slack (s).
STOP_TIMEOUT = VIEWER_CLOSE_GRACE + PRESENCE_POLL + 30.0
# SIGTERM this long after the run's file appears (s): the viewer is waiting for frames' wall
# times or sending them (the trials of issue 30 sent it by hand, about as late).
SIGTERM_DELAY = 0.5
# A server's presence report reaches the test within this long of a websocket's open or close (s).
REPORT_TIMEOUT = 10.0


def _wait_report(server, want, timeout: float = REPORT_TIMEOUT) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        report = server.presence()
        if all(report[k] == v for k, v in want.items()) or time.monotonic() > deadline:
            return report
        time.sleep(0.02)


# ------------------------------------------------------------------ what "closed" means


def test_closed_means_a_tab_connected_and_none_has_been_for_the_grace():
    p = ViewerPresence()
    assert not viewer_closed(p.report(1000.0)), "no browser ever connected: never closed"
    p.opened(1.0)
    p.opened(2.0)  # a second tab
    p.closed(3.0)
    assert p.report(100.0) == {"connected": 1, "ever": 2, "idle": None}, "one tab still open"
    p.closed(4.0)
    assert not viewer_closed(p.report(4.0 + 0.5 * VIEWER_CLOSE_GRACE)), "within the grace (a reload)"
    p.opened(4.5)  # the reload's new page
    assert not viewer_closed(p.report(100.0))
    p.closed(10.0)
    assert viewer_closed(p.report(10.0 + VIEWER_CLOSE_GRACE)), "the last tab left a grace ago"


def test_the_watch_asks_the_server_at_most_every_poll_and_says_connected_once():
    reports = iter([{"connected": 0, "ever": 0, "idle": None}] + [{"connected": 1, "ever": 1, "idle": None}] * 2
                   + [{"connected": 0, "ever": 1, "idle": VIEWER_CLOSE_GRACE}])
    now, asked, said = [0.0], [], []

    def presence():
        asked.append(now[0])
        return next(reports)

    watch = ViewerWatch(presence, on_connect=lambda: said.append(now[0]), clock=lambda: now[0])
    for k in range(40):  # 10 s in steps of 0.25 poll / 10
        now[0] = k * PRESENCE_POLL / 10
        if watch.closed():
            break
    assert asked == pytest.approx([0.0, PRESENCE_POLL, 2 * PRESENCE_POLL, 3 * PRESENCE_POLL])
    assert said == pytest.approx([PRESENCE_POLL]), "'connected' said once, at the first report of a tab"


def test_the_server_counts_the_tabs_on_its_websocket():
    with start_server() as server:
        assert server.presence() == {"connected": 0, "ever": 0, "idle": None}
        first, second = Websocket(server.web_url), Websocket(server.web_url)
        assert _wait_report(server, {"connected": 2}) == {"connected": 2, "ever": 2, "idle": None}
        first.close()
        assert _wait_report(server, {"connected": 1})["connected"] == 1
        second.close()
        report = _wait_report(server, {"connected": 0})
        assert report["connected"] == 0 and report["ever"] == 2 and 0 <= report["idle"] < REPORT_TIMEOUT, report
        time.sleep(0.2)
        assert server.presence()["idle"] >= report["idle"] + 0.2 - 1e-3, "idle counts up"


def test_the_panels_toggles_reach_browsers_connected_before_and_after(runs):
    """The panel's checkboxes (meshcat's set_control, which meshcat's own bridge refuses) are
    forwarded to a connected browser and kept for one that connects later."""
    run = read_storage(runs["box"])  # (contacts: the contact and force-arrow toggles)
    mech = mechanism_from_run(run)
    with start_server() as server:
        early = Websocket(server.web_url)
        _wait_report(server, {"connected": 1})
        load_run(server.visualizer, mech, run, ReplayOptions(contacts=True, arrows=("forces", "velocities")))
        late = Websocket(server.web_url)
        want = {"contacts", "force arrows", "velocity arrows"}
        for page in (early, late):
            seen = set()

            def control(message: bytes) -> bool:  # (each message decoded once: the animation is large)
                command = umsgpack.unpackb(message)
                if command["type"] == "set_control":
                    seen.add(command["name"])
                return seen >= want

            page.messages(control, timeout=START_TIMEOUT)
            assert seen == want
            page.close()


# ------------------------------------------------------------------ a run with --view


@pytest.mark.long
def test_a_reload_keeps_the_run_and_closing_the_viewer_stops_it_with_the_file_interrupted(tmp_path):
    """A websocket client stands in for the browser: it connects; a reload (close, and a new
    connection at once) leaves the run going past the grace; the last close stops it, no
    sooner than the grace, with the file `interrupted` and the exit code of Ctrl-C."""
    out = tmp_path / "closed.h5"
    run = DojoProcess("simulate", "pendulum", "-o", out, "--duration", LONG_RUN, "--view")
    try:
        url = run.url()
        page = Websocket(url)
        run.wait_for_line("viewer connected")
        page.close()
        page = Websocket(url)  # the reloaded page
        time.sleep(VIEWER_CLOSE_GRACE + 2 * PRESENCE_POLL)
        assert run.proc.poll() is None, f"the run stopped on a reload:\n{run.output()}"
        page.close()
        closed = time.monotonic()
        code = run.wait(STOP_TIMEOUT)
        took = time.monotonic() - closed
    finally:
        run.kill()
    assert code == 128 + signal.SIGINT, f"exit {code} (as for Ctrl-C):\n{run.output()}"
    assert "the viewer was closed" in "".join(run.stderr), run.output()
    assert took >= VIEWER_CLOSE_GRACE - 0.1, f"stopped {took:.2f} s after the close: before the grace"
    stored = read_storage(out)
    assert stored.status == "interrupted" and stored.steps_completed > 0, (stored.status, stored.steps_completed)


@pytest.mark.long
def test_closing_the_viewers_tab_in_chromium_stops_the_run(tmp_path):
    """The real page in headless Chromium: it connects and is shown the run; closing its tab
    stops the run."""
    if why := chromium_missing():
        pytest.skip(why)
    out = tmp_path / "tab.h5"
    run = DojoProcess("simulate", "pendulum", "-o", out, "--duration", LONG_RUN, "--view")
    browser = None
    try:
        browser = Chromium(run.url(), tmp_path / "profile")
        run.wait_for_line("viewer connected")
        # the page was sent the scene: the pendulum's link is in its scene tree
        assert browser.wait_for("viewer.scene_tree.find(['meshcat', 'dojo', 'bodies']).object.children.length") >= 1
        browser.close_tab()
        code = run.wait(STOP_TIMEOUT)
    finally:
        if browser is not None:
            browser.quit()
        run.kill()
    assert code == 128 + signal.SIGINT and "the viewer was closed" in "".join(run.stderr), run.output()
    assert read_storage(out).status == "interrupted"


def test_sigterm_of_a_view_run_leaves_the_file_interrupted(tmp_path, delay: float = SIGTERM_DELAY):
    """Issue 30: a SIGTERM of a --view run once seemed lost. SIGTERM once the file exists, or
    ``delay`` s later (the viewer waiting for frames' wall times, or sending them)."""
    out = tmp_path / "term.h5"
    run = DojoProcess("simulate", "pendulum", "-o", out, "--duration", LONG_RUN, "--view")
    try:
        run.url()
        deadline = time.monotonic() + STOP_TIMEOUT
        while not out.exists() and run.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(delay)
        run.proc.send_signal(signal.SIGTERM)
        code = run.wait(STOP_TIMEOUT)
    finally:
        run.kill()
    assert code == 128 + signal.SIGTERM, f"exit {code}:\n{run.output()}"
    stored = read_storage(out)
    assert stored.status == "interrupted", stored.status
    assert "interrupted by SIGTERM" in "".join(run.stderr), run.output()
