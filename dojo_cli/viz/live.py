"""A run shown in meshcat as it is computed (`dojo simulate --view`).

``LiveView`` is the run loop's two hooks (simulation.run.run: ``on_start`` with the first
state, ``on_block`` with each written block): it draws the scene as `dojo replay --contacts`
does (viz.meshcat_scene.set_scene, contact points) with the contact force arrows
(viz.arrows), then moves the bodies and arrows to the frames it picks from the states.

Frames, as a replay picks them (meshcat_scene.frame_indices): at ``rate`` r > 0 (simulated
seconds per wall second), frame f shows the state nearest to simulated time t0 + f r / fps,
and is shown at wall time w0 + f / fps (the view sleeps when the run is ahead; when the run
is slower it shows each frame as soon as its state exists and the schedule moves on from
then, so that a run that speeds up again is not replayed in a rush). At rate 0 the run goes
as fast as it can and each block's last state is a frame (blocks last about
simulation.run.BLOCK_SECONDS of computing). The view decides frame f once the first state
at or after its time exists, so frames come in order and never wait for the future.

A stop request is taken while the view sleeps (``stop_check``, called at least every
SLEEP_SLICE seconds): Ctrl-C stops a paced run as promptly as an unpaced one.

Closing the browser stops the run too (``ViewerWatch``, checked with the stop requests):
the server counts the tabs on its websocket, and the viewer is closed once a tab was
connected and none has been for meshcat_server.VIEWER_CLOSE_GRACE seconds (a reload is not
a close); the watch then raises ``ViewerClosed``, a KeyboardInterrupt, so that the file is
finished ``interrupted`` exactly as for Ctrl-C. A run no browser ever connected to goes on.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import meshcat
import numpy as np

from dojo_cli.errors import InputError
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.simulation.integrators import StepBlock
from dojo_cli.viz.arrows import ArrowSet, force_scale
from dojo_cli.viz.meshcat_scene import DEFAULT_FPS, ReplayOptions, set_body_transforms, set_scene, swept_radius
from dojo_cli.viz.meshcat_server import VIEWER_CLOSE_GRACE, viewer_closed

# Longest sleep between two stop checks (s): the Ctrl-C latency of a paced run.
SLEEP_SLICE = 0.05
# How often the run asks the server whether the viewer is still open (s): a ZeroMQ round trip
# (about 0.1 ms), at most this often whatever the block or frame rate.
PRESENCE_POLL = 0.25
# (frame_indices' allowance for a frame time landing just past a state by rounding)
_FRAME_ROUNDING = 1e-9


@dataclass
class LiveFrame:
    """One frame shown: the state's index in the run (0 = the first), its time, poses."""

    state: int
    time: float
    x: np.ndarray
    q: np.ndarray


@dataclass
class _State:
    index: int
    time: float
    z: np.ndarray
    normal_impulse: np.ndarray | None = None
    friction_impulse: np.ndarray | None = None


@dataclass
class LiveView:
    """The live viewer of one run: pass ``start`` as the run's ``on_start`` and ``block`` as its
    ``on_block`` (simulation.run.run_scene, simulation.run_file.write_run).

    Attributes:
        vis: a meshcat Visualizer (a server's, or a recording one in tests).
        mech: the run's mechanism.
        rate: simulated seconds per wall second (> 0), or 0 for as fast as the run goes.
        fps: frames per wall second at rate > 0.
        forces: draw the contact force arrows (viz.arrows).
        ground: the scene's ground {normal, point} (``GroundSpec.half_space``; None: z >= 0).
        stop_check: called while the view waits (it raises to stop the run).
        clock, sleep: wall time (s) and sleeping (tests pass a fake clock).
        frames: the frames shown, in order.
    """

    vis: meshcat.Visualizer
    mech: Mechanism
    rate: float = 1.0
    fps: float = DEFAULT_FPS
    forces: bool = True
    ground: dict | None = None
    stop_check: Callable[[], None] | None = None
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    frames: list[LiveFrame] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_view_rate(self.rate)
        ReplayOptions(fps=self.fps).check()
        self.arrows = ArrowSet(forces=self.forces and bool(self.mech.contacts), velocities=False,
                               force_scale=force_scale(self.mech))
        self._previous: _State | None = None
        self._t0 = 0.0
        self._wall0 = 0.0

    # ------------------------------------------------------------ the run loop's hooks

    def start(self, t0: float, z0: np.ndarray) -> None:
        """Draw the scene and show the first state (the run's ``on_start``)."""
        z0 = np.asarray(z0, float)
        x0 = z0.reshape(self.mech.nb, 13)[None, :, 0:3]
        set_scene(self.vis, self.mech, ReplayOptions(contacts=True, ground=self.ground), None, swept_radius(self.mech, x0))
        self.arrows.draw(self.vis, self.mech)
        self._t0 = float(t0)
        self._wall0 = self.clock()
        self._previous = None
        self._reach(_State(0, float(t0), z0))

    def block(self, block: StepBlock) -> None:
        """Show the frames a block of steps completes (the run's ``on_block``)."""
        if self._previous is None:
            raise RuntimeError("LiveView.block before LiveView.start")
        has_contacts = block.contact_normal_impulse.size > 0
        states = [
            _State(self._previous.index + 1 + i, float(block.time[i]), block.z[i],
                   block.contact_normal_impulse[i] if has_contacts else None,
                   block.contact_friction_impulse[i] if has_contacts else None)
            for i in range(block.n)
        ]
        if self.rate == 0:
            if states:
                self._show(states[-1])
                self._previous = states[-1]
            return
        for state in states:
            self._reach(state)

    # ------------------------------------------------------------ frames

    def _reach(self, state: _State) -> None:
        """The run has reached ``state``: show every frame due at or before its time."""
        if self.rate == 0:
            self._show(state)
            self._previous = state
            return
        step = self.rate / self.fps
        while len(self.frames) <= (state.time - self._t0) / step + _FRAME_ROUNDING:
            t = self._t0 + len(self.frames) * step
            before = self._previous
            nearest = before if before is not None and t - before.time <= state.time - t else state
            self._wait(len(self.frames))
            self._show(nearest)
        self._previous = state

    def _wait(self, f: int) -> None:
        """Until frame f's wall time (sleeping in slices, checking for a stop)."""
        # a stop is checked at every frame too: a view that is behind (a run, or the sending
        # of frames, slower than real time) does not sleep, and a block's frames can take
        # seconds to send (measured: the box with its contacts and force arrows, 20 commands
        # a frame, on the loaded machine: a closed window stopped the run after 8.9 s, not 3.3)
        if self.stop_check is not None:
            self.stop_check()
        due = self._wall0 + f / self.fps
        now = self.clock()
        if now > due:  # the run is behind: show it now and keep the schedule from here
            self._wall0 += now - due
            return
        while now < due:
            if self.stop_check is not None:
                self.stop_check()
            self.sleep(min(SLEEP_SLICE, due - now))
            now = self.clock()

    def _show(self, state: _State) -> None:
        s = state.z.reshape(self.mech.nb, 13)
        x, q = s[:, 0:3], s[:, 6:10]
        set_body_transforms(self.vis, self.mech, x, q, contacts=True)
        if self.arrows.forces:
            self.arrows.place(self.vis, self.mech,
                              *self.arrows.vectors(self.mech, state.z, state.normal_impulse, state.friction_impulse))
        self.frames.append(LiveFrame(state.index, state.time, x.copy(), q.copy()))


class ViewerClosed(KeyboardInterrupt):
    """The browser showing a run's live view was closed: the run stops as for Ctrl-C
    (its file ``interrupted``, exit code 130: ``signum`` is SIGINT's)."""

    signum = signal.SIGINT

    def __init__(self) -> None:
        super().__init__("the viewer was closed")


@dataclass
class ViewerWatch:
    """Whether the browser showing a live view is still open (module docstring).

    Attributes:
        presence: the server's report (``MeshcatServer.presence``).
        grace: seconds with no tab connected, after one was, that make "closed".
        poll: the server is asked at most this often (s); between asks ``check`` is free.
        on_connect: called once, when the first tab is seen (the CLI says so).
        clock: wall time (s).
    """

    presence: Callable[[], dict]
    grace: float = VIEWER_CLOSE_GRACE
    poll: float = PRESENCE_POLL
    on_connect: Callable[[], None] | None = None
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self._asked: float | None = None
        self.seen = False

    def closed(self) -> bool:
        """Ask the server (at most every ``poll`` s): was the viewer closed?"""
        now = self.clock()
        if self._asked is not None and now - self._asked < self.poll:
            return False
        self._asked = now
        report = self.presence()
        if report["ever"] > 0 and not self.seen:
            self.seen = True
            if self.on_connect is not None:
                self.on_connect()
        return viewer_closed(report, self.grace)

    def check(self) -> None:
        """Raise ViewerClosed if the viewer was closed."""
        if self.closed():
            raise ViewerClosed()


def check_view_rate(rate: float) -> None:
    """InputError unless ``rate`` is a finite number >= 0 (--view-rate)."""
    if not (np.isfinite(rate) and rate >= 0):
        raise InputError(f"--view-rate: must be >= 0 (0: as fast as the run goes; 1: real time), got {rate:g}")
