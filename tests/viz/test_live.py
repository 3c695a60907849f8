"""`dojo simulate --view` (viz.live.LiveView on the run loop's hooks) and the force and
velocity arrows (viz.arrows, Dojo's set_arrow!) of the live view and of `dojo replay`.

The viewer is meshcat's Visualizer with its commands recorded (meshcat_scene.recording_visualizer):
the frames a browser would receive, decoded, against the run's own states."""

from __future__ import annotations

import re

import numpy as np
import pytest
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app
from dojo_cli.cli.commands import simulate as simulate_command
from dojo_cli.io.storage import read_storage
from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.simulation import run as run_loop
from dojo_cli.simulation.run import FIRST_BLOCK, run_scene
from dojo_cli.simulation.trajectory import TrajectoryRecorder
from dojo_cli.viz import meshcat_server
from dojo_cli.viz.arrows import ARROW_ROOT, VELOCITY_ARROW_SECONDS, WEIGHT_ARROW_LENGTH, arrow_set, force_scale
from dojo_cli.viz.live import LiveView
from dojo_cli.viz.meshcat_scene import body_path, contacts_path, frame_indices, recording_visualizer, transform_from_pose
from dojo_cli.viz.meshcat_server import VIEWER_CLOSE_GRACE
from tests.cli.test_cli import interrupt_after
from tests.viz.test_replay import decode_page

runner = CliRunner()
# Transforms travel as float64 through msgpack: they come back exactly.
TRANSFORM_TOL = 1e-9
# A box at rest on its four bottom corners: the normal impulses balance its weight to the
# solver's tolerance (relative 1e-6 of the scene's momentum scale), far below this.
WEIGHT_RTOL = 1e-4
# A sliding box: friction over normal force is mu to the solver's tolerance (measured 2e-9);
# the normal force differs from m g by the box's vertical m a_z as the relaxed complementarity
# lets it settle by micrometres while it slides (measured 3.4e-4 of m g at 0.2 s).
COULOMB_RTOL = 1e-6
SLIDING_WEIGHT_RTOL = 1e-3
RESTING_BOX = ["joints.0.initial.position=[0, 0, 0.25, 0, 0, 0]", "joints.0.initial.velocity=[0, 0, 0, 0, 0, 0]"]


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


class FakeClock:
    """Wall time that passes only when the view sleeps: a run that computes in no time."""

    def __init__(self):
        self.now = 0.0
        self.sleeps = 0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.now += seconds
        self.sleeps += 1


def sent_transforms(recorder, path: str) -> list[np.ndarray]:
    """The 4x4 transforms sent to one node, in order."""
    full = "/meshcat/" + path
    return [np.array(c["matrix"]).reshape(4, 4).T for c in recorder.decoded()
            if c["type"] == "set_transform" and c["path"] == full]


def test_live_view_shows_every_frame_in_order_with_the_runs_poses_at_the_rate():
    """A tumbling box (contacts, 300 steps of 0.01 s) shown at 2x real time, 30 fps: the
    frames are the states a replay at the same speed and fps shows (frame_indices), in
    order, each body transform the state's pose, and the view sleeps until each frame's
    wall time (a run that computes in no time then lasts its frames' time exactly)."""
    mech = dojo.load_scene("box")
    vis, recorder = recording_visualizer()
    clock = FakeClock()
    view = LiveView(vis, mech, rate=2.0, fps=30.0, clock=clock, sleep=clock.sleep)
    writer = TrajectoryRecorder()
    run_scene(mech, 300, writer, on_start=view.start, on_block=view.block)
    traj = writer.trajectory(mech)
    expected = frame_indices(traj.time, 30.0, 2.0)
    assert len(expected) == 46  # 3 s at 2x, 30 fps: 45 intervals
    assert [f.state for f in view.frames] == expected.tolist()
    sent = sent_transforms(recorder, body_path("box"))[1:]  # (set_scene puts the body at the origin first)
    assert len(sent) == len(expected), "one transform per frame (and none between)"
    for f, k in enumerate(expected):
        error = np.max(np.abs(sent[f] - transform_from_pose(traj.x[k, 0], traj.q[k, 0])))
        assert error < TRANSFORM_TOL, f"frame {f} (state {k}): transform off by {error:.2e}"
    assert clock.now == pytest.approx((len(expected) - 1) / 30.0, abs=1e-9), "paced: frame f at f / fps"
    objects = {c["path"] for c in recorder.decoded() if c["type"] == "set_object"}
    assert sum(p.startswith("/meshcat/dojo/contacts/box/") for p in objects) == 8, "contact points drawn"
    assert sum(p.startswith(f"/meshcat/{ARROW_ROOT}/forces/") for p in objects) == 8 * 2, "a shaft and a head each"
    markers = sent_transforms(recorder, contacts_path("box"))[1:]
    assert len(markers) == len(sent) and all(np.array_equal(m, b) for m, b in zip(markers, sent)), \
        "the contact markers' node moves with the box, frame by frame"


def test_live_view_as_fast_as_it_goes_shows_each_blocks_last_state_without_sleeping():
    mech = dojo.load_scene("pendulum")
    vis, recorder = recording_visualizer()
    clock = FakeClock()
    blocks = []
    view = LiveView(vis, mech, rate=0.0, clock=clock, sleep=clock.sleep)

    def on_block(block):
        blocks.append(block.n)
        view.block(block)

    writer = TrajectoryRecorder()
    run_scene(mech, 200, writer, on_start=view.start, on_block=on_block)
    traj = writer.trajectory(mech)
    assert clock.sleeps == 0
    assert [f.state for f in view.frames] == [0] + np.cumsum(blocks).tolist()
    assert view.frames[-1].state == 200 and np.array_equal(view.frames[-1].x, traj.x[-1])
    sent = sent_transforms(recorder, body_path(mech.bodies[0].name))
    assert np.max(np.abs(sent[-1] - transform_from_pose(traj.x[-1, 0], traj.q[-1, 0]))) < TRANSFORM_TOL


def test_a_stop_while_the_view_waits_stops_the_run_at_once():
    """At real time a block of steps is shown over its simulated time; a stop request is
    checked while the view sleeps (every SLEEP_SLICE at most), not only between blocks."""
    mech = dojo.load_scene("pendulum")
    vis, _ = recording_visualizer()
    clock = FakeClock()
    checks = []

    def stop_check():
        checks.append(clock.now)
        if clock.now >= 0.1:
            raise KeyboardInterrupt

    view = LiveView(vis, mech, rate=1.0, clock=clock, sleep=clock.sleep, stop_check=stop_check)
    writer = TrajectoryRecorder()
    with pytest.raises(KeyboardInterrupt):
        run_scene(mech, 1000, writer, on_start=view.start, on_block=view.block)
    assert 0.1 <= checks[-1] < 0.1 + 1 / 60 + 1e-9, "stopped within a frame of the request"
    assert view.frames[-1].time < 0.12 and writer.steps_written >= 1


def test_a_stop_is_taken_at_every_frame_when_the_view_is_behind():
    """A view slower than real time (each command takes 50 ms to send: never a sleep) still
    takes a stop at the next frame, not at the end of the block's frames."""
    mech = dojo.load_scene("pendulum")
    vis, recorder = recording_visualizer()
    clock = FakeClock()
    send = recorder.send

    def slow_send(command):
        clock.now += 0.05
        send(command)

    recorder.send = slow_send
    requested = []

    def stop_check():
        if clock.now >= 0.5:
            requested.append(len(view.frames))
            raise KeyboardInterrupt

    view = LiveView(vis, mech, rate=1.0, clock=clock, sleep=clock.sleep, stop_check=stop_check)
    with pytest.raises(KeyboardInterrupt):
        run_scene(mech, 1000, TrajectoryRecorder(), on_start=view.start, on_block=view.block)
    assert clock.sleeps == 0, "behind: the view never slept"
    # the request (clock >= 0.5 s) is taken before the next frame is sent: at most one frame's
    # commands (a transform and an arrow: 2 x 50 ms) after it
    assert len(requested) == 1 and clock.now < 0.5 + 2 * 0.05 + 1e-9, \
        f"stopped at {clock.now:.2f} s after {len(view.frames)} frames: not within a frame of the request"


class FakeServer:
    """start_server's stand-in: a recording visualizer, and a 'process' that is running."""

    web_url = "http://127.0.0.1:7000/static/"
    # what presence() says: no browser ever connected (the run goes on)
    reports = ({"connected": 0, "ever": 0, "idle": None},)

    def __init__(self):
        self.visualizer, self.recorder = recording_visualizer()
        self.closed = False
        self.asked = 0

        class Process:
            returncode = None

            def poll(self):
                return None

        self.process = Process()

    def presence(self) -> dict:
        """The k-th report of ``reports`` at the k-th question (the last one from then on)."""
        self.asked += 1
        return self.reports[min(self.asked, len(self.reports)) - 1]

    def close(self):
        self.closed = True


@pytest.fixture
def fake_server(monkeypatch):
    """start_server replaced by FakeServer; the list gets the server started (a test may set
    ``fake_server.reports`` before the run: the presence reports it will give)."""
    class Servers(list):
        reports = FakeServer.reports

    servers = Servers()

    def start():
        servers.append(FakeServer())
        servers[0].reports = servers.reports
        return servers[0]

    monkeypatch.setattr(meshcat_server, "start_server", start)
    return servers


def test_simulate_view_streams_the_run_and_stops_its_viewer(tmp_path, fake_server):
    out = tmp_path / "v.h5"
    res = invoke("simulate", "box", "-o", out, "--steps", 40, "--view", "--view-rate", 0, "--no-wait")
    assert res.exit_code == 0, res.output
    assert re.search(r"meshcat: http://127\.0\.0\.1:\d+/static/", res.stdout), res.stdout
    (server,) = fake_server
    assert server.closed
    run = read_storage(out)
    sent = sent_transforms(server.recorder, body_path("box"))[1:]
    assert np.max(np.abs(sent[0] - transform_from_pose(run.trajectory.x[0, 0], run.trajectory.q[0, 0]))) < TRANSFORM_TOL
    assert np.max(np.abs(sent[-1] - transform_from_pose(run.trajectory.x[-1, 0], run.trajectory.q[-1, 0]))) < TRANSFORM_TOL


def test_simulate_view_ctrl_c_leaves_the_file_interrupted_as_without_view(tmp_path, fake_server, monkeypatch):
    monkeypatch.setattr(run_loop, "run", interrupt_after(run_loop.run, 5))
    out = tmp_path / "int.h5"
    res = invoke("simulate", "pendulum", "-o", out, "--steps", 50, "--view", "--view-rate", 0)
    assert res.exit_code == 130 and "interrupted" in res.stderr, res.output
    run = read_storage(out)
    assert run.status == "interrupted" and run.steps_completed == FIRST_BLOCK
    (server,) = fake_server
    assert server.closed, "the viewer stops with the run"
    sent = sent_transforms(server.recorder, body_path(run.body_names[0]))
    assert np.max(np.abs(sent[-1] - transform_from_pose(run.trajectory.x[-1, 0], run.trajectory.q[-1, 0]))) < TRANSFORM_TOL


CONNECTED = {"connected": 1, "ever": 1, "idle": None}
CLOSED = {"connected": 0, "ever": 1, "idle": VIEWER_CLOSE_GRACE}


def test_after_the_run_closing_the_viewer_ends_it_with_the_runs_exit_code(tmp_path, fake_server, monkeypatch):
    """The viewer stays up after a complete run until its window is closed: then the command
    says so and exits as the run did (0), not as for Ctrl-C."""
    serving = []
    serve = simulate_command._serve_until_stopped
    monkeypatch.setattr(simulate_command, "_serve_until_stopped", lambda s, w: (serving.append(s), serve(s, w)))
    monkeypatch.setattr(FakeServer, "presence", lambda self: CLOSED if serving else CONNECTED)
    out = tmp_path / "after.h5"
    res = invoke("simulate", "box", "-o", out, "--steps", 40, "--view", "--view-rate", 0)
    assert res.exit_code == 0, res.output
    assert "viewer connected" in res.stdout and "the viewer was closed" in res.stdout, res.output
    assert read_storage(out).status == "complete" and fake_server[0].closed


def test_view_options_are_checked_before_the_run(tmp_path):
    res = invoke("simulate", "pendulum", "-o", tmp_path / "a.h5", "--view", "--view-rate", -1)
    assert res.exit_code == 2 and "--view-rate" in res.stderr and not (tmp_path / "a.h5").exists(), res.output
    res = invoke("simulate", "pendulum", "-o", tmp_path / "a.h5", "--view-rate", 2)
    assert res.exit_code == 2 and "--view-rate: only with --view" in res.stderr, res.output


# ------------------------------------------------------------------ arrows


def arrow_keys(commands: list[dict], path: str) -> dict[str, list]:
    """The animation tracks (name -> values per frame) of one arrow node."""
    (anim,) = [c for c in commands if c["type"] == "set_animation"]
    (clip,) = [a["clip"] for a in anim["animations"] if a["path"] == "/meshcat/" + path]
    return {t["name"]: [k["value"] for k in t["keys"]] for t in clip["tracks"]}


def test_replay_force_arrows_of_a_resting_box_sum_to_its_weight_pointing_up(tmp_path):
    """Dojo's set_arrow! for contact forces: a box resting on a face. At the last frame the
    four bottom corners' arrows, over the stated scale (m per N), add to m g = 9.81 N and
    point along +z; the four top corners' arrows are hidden (no force)."""
    out, page = tmp_path / "rest.h5", tmp_path / "rest.html"
    sets = [a for item in RESTING_BOX for a in ("--set", item)]
    assert invoke("simulate", "box", "-o", out, "--steps", 50, "-q", *sets).exit_code == 0
    res = invoke("replay", out, "--html", page, "--arrows", "forces", "--fps", 20)
    assert res.exit_code == 0, res.output
    commands, info = decode_page(page.read_text(encoding="utf-8"))
    mech = dojo.load_scene("box")
    assert info["force_scale"] == pytest.approx(WEIGHT_ARROW_LENGTH / 9.81) == pytest.approx(force_scale(mech))
    assert f"{info['force_scale']:.4g} m/N" in res.stdout, "the factor is stated"
    total = np.zeros(3)
    for c in mech.contacts:
        keys = arrow_keys(commands, f"{ARROW_ROOT}/forces/{c.name}")
        length = keys[".scale"][-1][2]
        x, y, z, w = keys[".quaternion"][-1]
        direction = matrix_from_quaternion(np.array([w, x, y, z])) @ [0.0, 0.0, 1.0]
        if c.offset[2] > 0:
            assert length < 1e-6, f"{c.name}: a top corner carries no force"
        else:
            assert direction == pytest.approx([0.0, 0.0, 1.0], abs=1e-9), c.name
            assert keys[".scale"][-1][:2] == [1.0, 1.0]
        total += direction * length / info["force_scale"]
    assert total == pytest.approx([0.0, 0.0, 9.81], rel=WEIGHT_RTOL, abs=WEIGHT_RTOL * 9.81)
    first = arrow_keys(commands, f"{ARROW_ROOT}/forces/{mech.contacts[0].name}")[".scale"][0]
    assert max(first) < 1e-6, "state 0 has no step before it: no force"


def test_replay_velocity_arrows_are_the_stored_knot_velocities(tmp_path):
    """--arrows velocities: a body's arrow starts at its centre of mass and is its stored
    linear velocity times VELOCITY_ARROW_SECONDS, at every frame."""
    out, page = tmp_path / "p.h5", tmp_path / "p.html"
    assert invoke("simulate", "pendulum", "-o", out, "--steps", 60, "-q").exit_code == 0
    assert invoke("replay", out, "--html", page, "--arrows", "velocities,forces", "--fps", 50).exit_code == 0
    commands, info = decode_page(page.read_text(encoding="utf-8"))
    run = read_storage(out)
    name = run.body_names[0]
    keys = arrow_keys(commands, f"{ARROW_ROOT}/velocities/{name}")
    assert info["force_scale"] is not None and info["arrows"] == ["velocities", "forces"]
    for f, k in enumerate(info["states"]):
        v = run.trajectory.v[k, 0] * VELOCITY_ARROW_SECONDS
        x, y, z, w = keys[".quaternion"][f]
        drawn = matrix_from_quaternion(np.array([w, x, y, z])) @ [0.0, 0.0, keys[".scale"][f][2]]
        if np.linalg.norm(v) > 1e-4:
            assert drawn == pytest.approx(v, abs=1e-9), f"frame {f}"
        assert keys[".position"][f] == pytest.approx(run.trajectory.x[k, 0], abs=1e-12)


def test_replay_arrows_option_is_checked(tmp_path):
    out = tmp_path / "p.h5"
    assert invoke("simulate", "pendulum", "-o", out, "--steps", 5, "-q").exit_code == 0
    res = invoke("replay", out, "--html", tmp_path / "p.html", "--arrows", "force")
    assert res.exit_code == 2 and "--arrows: 'force': not an arrow kind (forces, velocities)" in res.stderr, res.output


# ------------------------------------------------------------------ the floor (set_floor!)


def test_replay_draws_the_floor_on_the_scenes_ground_with_its_size_and_colour(tmp_path):
    """Dojo's set_floor!: the floor is the scene's ground (`ground: {height: 0.3}`: its top face
    at z = 0.3, opaque since the corners touch it, and no second half-space drawn for it);
    --floor-size and --floor-color set its edge and colour."""
    out, page = tmp_path / "g.h5", tmp_path / "g.html"
    sets = ["ground.height=0.3", "joints.0.initial.position=[0, 0, 0.55, 0, 0, 0]",
            "joints.0.initial.velocity=[0, 0, 0, 0, 0, 0]"]
    res = invoke("simulate", "box", "-o", out, "--steps", 5, "-q", *[a for item in sets for a in ("--set", item)])
    assert res.exit_code == 0, res.output
    res = invoke("replay", out, "--html", page, "--floor-size", 3, "--floor-color", "0.2,0.4,0.6,0.5")
    assert res.exit_code == 0, res.output
    commands, _ = decode_page(page.read_text(encoding="utf-8"))
    ground = "/meshcat/dojo/world/ground"
    (pose,) = [np.array(c["matrix"]).reshape(4, 4).T for c in commands if c["type"] == "set_transform" and c["path"] == ground]
    (obj,) = [c["object"] for c in commands if c["type"] == "set_object" and c["path"] == ground]
    thickness = obj["geometries"][0]["depth"]
    assert pose[2, 3] + 0.5 * thickness == pytest.approx(0.3, abs=1e-12), "top face on the ground plane"
    assert np.allclose(pose[:3, :3], np.eye(3))
    assert obj["geometries"][0]["width"] == obj["geometries"][0]["height"] == 3.0
    material = obj["materials"][0]
    assert material["color"] == (round(0.2 * 255) << 16) | (round(0.4 * 255) << 8) | round(0.6 * 255)
    assert material["opacity"] == 0.5
    assert not any(c["path"].startswith("/meshcat/dojo/world/halfspace") for c in commands), "the ground is drawn once"
    res = invoke("replay", out, "--html", page, "--floor-color", "1,2,3")
    assert res.exit_code == 2 and "--floor-color" in res.stderr, res.output


def test_force_arrows_of_a_sliding_box_are_coulomb_friction_against_the_motion():
    """The built-in sliding box (mu 0.3, sliding along +x at 2 m/s): while it slides, the
    arrows' forces add to about m g up and to mu times that along -x (Coulomb's law in the
    nonlinear cone, maximum dissipation): the friction in the contact's tangent basis is
    mapped to the world the right way round."""
    mech = dojo.load_scene("sliding_box")
    traj = dojo.simulate(mech, 40)  # 0.4 s: it stops after 2 / (0.3 g) = 0.68 s
    arrows = arrow_set(mech, ["forces"])
    mu, weight = 0.3, 9.81
    for k in (10, 20, 30):
        z = np.concatenate([traj.x[k], traj.v[k], traj.q[k], traj.omega[k]], axis=1).reshape(-1)
        origins, vectors = arrows.vectors(mech, z, traj.contact_normal_impulse[k - 1], traj.contact_friction_impulse[k - 1])
        total = vectors.sum(axis=0) / arrows.force_scale
        assert traj.v[k, 0, 0] > 0.1, "still sliding"
        assert total[2] == pytest.approx(weight, rel=SLIDING_WEIGHT_RTOL), k
        assert total[:2] == pytest.approx([-mu * total[2], 0.0], rel=COULOMB_RTOL, abs=COULOMB_RTOL * weight), k
        assert np.allclose(origins[:, 2], 0.0, atol=1e-3), "from the corners on the ground"
