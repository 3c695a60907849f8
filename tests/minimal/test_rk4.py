"""The rk4 integrator (Munthe-Kaas RK4 in minimal coordinates, RigidBodyDynamics.jl's
simulate; core/rk4.h): convergence order, energy, RBD's four-bar tests, a floating body
against an independent integration, and rk4 storage files read by energy, plot, replay."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli import minimal
from dojo_cli.cli.app import app
from dojo_cli.io.storage import read_storage
from dojo_cli.math.quaternion import matrix_from_quaternion
from tests.minimal.scenes import MINIMAL_JOINTS

runner = CliRunner()


def _energy(model, integ, x) -> float:
    """Analytic mechanical energy of a minimal state: 1/2 v^T M(q) v - sum m g . x_com."""
    mech = model.mech
    z = integ.bodies(x)
    v = np.asarray(x)[model.nq:]
    return 0.5 * v @ minimal.M_func(model, x) @ v - float(np.sum(mech.mass * (z[:, 0:3] @ mech.gravity)))


def _final(ts, qs, vs):
    return np.concatenate([qs[-1], vs[-1]])


def test_rk4_converges_at_fourth_order_on_the_double_pendulum():
    model = minimal.build_model(dojo.load_scene("double_pendulum"))
    x0 = minimal.init_state(model)
    # steps that are powers of two: every run ends exactly at t = 1
    ref = _final(*minimal.simulate(model, x0, 1.0, dt=2.0**-10))
    errors = []
    for p in (5, 6, 7):
        ts, qs, vs = minimal.simulate(model, x0, 1.0, dt=2.0**-p)
        assert ts[-1] == 1.0
        errors.append(np.max(np.abs(_final(ts, qs, vs) - ref)))
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    for r in ratios:
        assert 14.0 < r < 18.0, (errors, ratios)


def test_rk4_double_pendulum_keeps_its_energy_over_10_s_at_dt_001():
    model = minimal.build_model(dojo.load_scene("double_pendulum"))
    integ = minimal.Rk4(model)
    x0 = minimal.init_state(model)
    ts, qs, vs = minimal.simulate(model, x0, 10.0, dt=0.01)
    e0 = _energy(model, integ, x0)
    drift = max(abs(_energy(model, integ, np.concatenate([q, v])) - e0) for q, v in zip(qs, vs))
    assert drift < 0.005, drift
    assert ts[-1] >= 10.0 and len(ts) == len(qs)


def test_rk4_dynamics_is_the_tree_forward_dynamics_without_loops():
    model = minimal.build_model(dojo.load_scene("double_pendulum"))
    integ = minimal.Rk4(model)
    x = minimal.randn_state(model, np.random.default_rng(3))
    tau = np.zeros(model.nv)
    assert np.allclose(integ.dynamics(x), minimal.forward_dynamics(model, x, tau), atol=1e-12)


# ---------------------------------------------------------------- RBD's four-bar tests

def _fourbar():
    model = minimal.build_model(dojo.load_scene("rbd_fourbar"))
    return model, minimal.Rk4(model, None), minimal.init_state(model)


def test_rbd_fourbar_without_stabilisation_conserves_energy_and_keeps_the_loop():
    model, integ, x0 = _fourbar()
    assert model.loop_joints == ["joint4"]
    assert np.all(x0[model.nq:] == 0.0)
    assert integ.loop_errors(x0)[0, 0] < 1e-12  # RBD's angles close the loop
    ts, qs, vs = minimal.simulate(model, x0, 1.0, dt=1e-3, stabilization_gains=None)
    x1 = _final(ts, qs, vs)
    v = x1[model.nq:]
    kinetic = 0.5 * v @ minimal.M_func(model, x1) @ v
    assert kinetic > 1e-2  # it moved
    assert abs(_energy(model, integ, x1) - _energy(model, integ, x0)) < 1e-8
    assert integ.loop_errors(x1)[0, 0] < 1e-10  # loop-joint frames still coincide
    # the loop holds at every step, and its rotational rows (about x and z) too
    errs = np.array([integ.loop_errors(np.concatenate([q, w]))[0] for q, w in zip(qs, vs)])
    assert np.max(errs) < 1e-10


def test_rbd_fourbar_default_gains_close_an_open_loop():
    model, integ, x0 = _fourbar()
    x = x0.copy()
    x[0] = 1.7
    x[model.nq:] = [0.5, -0.47295, 0.341]
    assert integ.loop_errors(x)[0, 0] > 1e-2  # significant separation initially
    x15 = _final(*minimal.simulate(model, x, 15.0, dt=1e-3))  # stabilization_gains="default"
    assert integ.loop_errors(x15)[0, 0] < 1e-5
    x25 = _final(*minimal.simulate(model, x15, 10.0, dt=1e-3))
    assert abs(_energy(model, integ, x25) - _energy(model, integ, x15)) < 1e-5


def test_stabilization_gains_options():
    model, integ, x0 = _fourbar()
    x = x0.copy()
    x[0] = 1.7
    gap0 = integ.loop_errors(x)[0, 0]
    off = _final(*minimal.simulate(model, x, 1.0, dt=1e-3, stabilization_gains=None))
    per_joint = _final(*minimal.simulate(model, x, 1.0, dt=1e-3, stabilization_gains={"joint4": (100.0, 20.0)}))
    default = _final(*minimal.simulate(model, x, 1.0, dt=1e-3))
    assert np.array_equal(per_joint, default)
    assert integ.loop_errors(off)[0, 0] > 0.5 * gap0  # without gains the gap stays
    assert integ.loop_errors(default)[0, 0] < 1e-2 * gap0  # critically damped at 10 rad/s: e^-10 after 1 s
    with pytest.raises(ValueError, match="not a loop joint"):
        minimal.simulate(model, x, 0.01, dt=1e-3, stabilization_gains={"joint1": (1.0, 1.0)})


# ---------------------------------------------------------------- floating body

def _euler_reference(m, inertia, g, x0, T):
    """[p (world), v (world), q, w (body)] by DOP853 of Newton's and Euler's equations."""
    Iinv = np.linalg.inv(inertia)

    def rhs(t, y):
        q, w = y[6:10], y[10:13]
        qdot = 0.5 * np.array([
            -q[1] * w[0] - q[2] * w[1] - q[3] * w[2],
            q[0] * w[0] + q[2] * w[2] - q[3] * w[1],
            q[0] * w[1] - q[1] * w[2] + q[3] * w[0],
            q[0] * w[2] + q[1] * w[1] - q[2] * w[0],
        ])
        wdot = Iinv @ (-np.cross(w, inertia @ w))
        return np.concatenate([y[3:6], g, qdot, wdot])

    R0 = matrix_from_quaternion(x0[3:7])
    y0 = np.concatenate([x0[0:3], R0 @ x0[7:10], x0[3:7], x0[10:13]])
    return solve_ivp(rhs, (0.0, T), y0, method="DOP853", rtol=1e-13, atol=1e-13).y[:, -1]


def test_floating_body_matches_an_independent_integration_of_eulers_equations():
    inertia = [0.5, 1.0, 2.0]
    mech = dojo.load_scene("pinnzoo_rigid_body", overrides={"bodies.0.inertia": inertia})
    model = minimal.build_model(mech)
    q = np.array([0.9, 0.1, -0.3, 0.2])
    x0 = np.concatenate([[0.1, 0.2, 0.3], q / np.linalg.norm(q), [0.3, -0.2, 0.5], [0.2, 3.0, -0.1]])
    T = 2.0
    ts, qs, vs = minimal.simulate(model, x0, T, dt=2.0**-10)
    assert ts[-1] == T
    y = _euler_reference(1.0, np.diag(inertia), mech.gravity, x0, T)
    R = matrix_from_quaternion(qs[-1][3:7])
    assert np.max(np.abs(qs[-1][0:3] - y[0:3])) < 1e-9
    assert np.max(np.abs(R - matrix_from_quaternion(y[6:10] / np.linalg.norm(y[6:10])))) < 1e-9
    assert np.max(np.abs(vs[-1][0:3] - R.T @ y[3:6])) < 1e-9  # body-frame linear velocity
    assert np.max(np.abs(vs[-1][3:6] - y[10:13])) < 1e-9


# ---------------------------------------------------------------- simulate's options

def test_control_is_called_at_every_stage_and_acts_as_a_torque():
    mech = dojo.load_scene("pendulum")
    model = minimal.build_model(mech)
    x0 = minimal.init_state(model)
    dt = 2.0**-6
    calls = []

    def control(tau, t, x):
        calls.append(t)
        assert x.shape == (model.nx,)
        tau[:] = 0.7

    ts, qs, vs = minimal.simulate(model, x0, 0.25, control=control, dt=dt)
    n = len(ts) - 1
    assert len(calls) == 4 * n
    stage = np.array(calls).reshape(n, 4) - ts[:-1, None]
    assert np.allclose(stage, [0.0, dt / 2, dt / 2, dt], atol=1e-12)
    # the same torque as the scene's constant input (B = 1 for a revolute angle)
    integ = minimal.Rk4(model)
    qq, vv = x0[: model.nq].copy(), x0[model.nq:].copy()
    out_q, out_v = np.zeros((n, model.nq)), np.zeros((n, model.nv))
    integ.run(qq, vv, 0.0, dt, n, out_q, out_v, inputs=np.full((n, model.nu), 0.7))
    assert np.allclose(out_q[-1], qs[-1], atol=1e-14) and np.allclose(out_v[-1], vs[-1], atol=1e-14)


def test_keep_last_is_the_tail_of_the_full_run_and_times_follow_rbd():
    model = minimal.build_model(dojo.load_scene("double_pendulum"))
    x0 = minimal.init_state(model)
    ts, qs, vs = minimal.simulate(model, x0, 0.1, dt=0.01)
    # RBD's loop: t += dt while t < final_time; 0.01 added ten times is below 0.1, so 11 steps
    assert len(ts) == 12 and ts[-1] > 0.1
    tl, ql, vl = minimal.simulate(model, x0, 0.1, dt=0.01, keep_last=3)
    assert np.array_equal(tl, ts[-3:]) and np.array_equal(ql, qs[-3:]) and np.array_equal(vl, vs[-3:])



def test_max_realtime_rate_paces_the_run(monkeypatch):
    """RBD's integrate(max_realtime_rate): at most that many simulated seconds per wall-clock
    second. On a clock that moves only when the run sleeps, the run sleeps exactly until
    wall time = simulated time / rate, block after block (never ahead of the rate), and the
    states are those of the unpaced run."""
    import importlib

    module = importlib.import_module("dojo_cli.minimal.simulate")
    model = minimal.build_model(dojo.load_scene("double_pendulum"))
    x0 = minimal.init_state(model)
    free = minimal.simulate(model, x0, 0.5, dt=0.01)

    class Clock:
        now = 0.0
        sleeps: list = []

        @staticmethod
        def perf_counter():
            return Clock.now

        @staticmethod
        def sleep(seconds):
            Clock.now += seconds
            Clock.sleeps.append(Clock.now)

    monkeypatch.setattr(module, "time", Clock)
    rate = 0.5  # half real time: 0.5 s simulated take 1 s
    ts, qs, vs = minimal.simulate(model, x0, 0.5, dt=0.01, max_realtime_rate=rate)
    assert np.array_equal(ts, free[0]) and np.array_equal(qs, free[1]) and np.array_equal(vs, free[2])
    assert len(Clock.sleeps) > 1, "paced in blocks"
    assert Clock.now == pytest.approx(ts[-1] / rate, rel=1e-12)
    # each sleep ends where a step's time / rate is: the run waits for the wall clock
    assert all(np.isclose(ts / rate, wake, rtol=0, atol=1e-12).any() for wake in Clock.sleeps)
    assert Clock.sleeps == sorted(Clock.sleeps)


# ---------------------------------------------------------------- storage files

def test_rk4_storage_file_is_read_by_energy_plot_and_replay(tmp_path):
    out = tmp_path / "dp.h5"
    r = runner.invoke(app, ["simulate", "double_pendulum", "--integrator", "rk4", "--steps", "300", "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    stored = read_storage(out)
    assert stored.attrs["integrator"] == "munthe-kaas-rk4"
    mech = dojo.load_scene("double_pendulum")
    model = minimal.build_model(mech)
    integ = minimal.Rk4(model)
    x0 = minimal.init_state(model)
    n = 300
    qq, vv = x0[: model.nq].copy(), x0[model.nq:].copy()
    out_q, out_v = np.zeros((n, model.nq)), np.zeros((n, model.nv))
    integ.run(qq, vv, 0.0, mech.timestep, n, out_q, out_v)
    states = np.vstack([x0, np.hstack([out_q, out_v])])
    z = np.array([integ.bodies(x) for x in states])
    assert np.allclose(stored.trajectory.x, z[:, :, 0:3], atol=1e-12)
    assert np.allclose(stored.trajectory.v, z[:, :, 3:6], atol=1e-12)  # velocities at t_k
    assert np.allclose(stored.trajectory.omega, z[:, :, 10:13], atol=1e-12)
    # the scene's joint angles and rates (Dojo's minimal coordinates)
    assert np.allclose(stored.trajectory.minimal_q, states[:, : model.nq], atol=1e-9)
    assert np.allclose(stored.trajectory.minimal_v, states[:, model.nq:], atol=1e-9)
    # dojo energy: the analytic energy of each stored state
    js = tmp_path / "e.json"
    r = runner.invoke(app, ["energy", str(out), "--json", str(js)])
    assert r.exit_code == 0, r.output
    doc = json.loads(js.read_text())
    expected = [_energy(model, integ, x) for x in states]
    assert np.allclose(doc["mechanical"], expected, atol=1e-9)
    assert doc["summary"]["mechanical [J]"]["max_drift"] < 1e-3
    r = runner.invoke(app, ["plot", str(out), "--png", str(tmp_path / "p.png")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p.png").stat().st_size > 0
    r = runner.invoke(app, ["replay", str(out), "--html", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "r.html").stat().st_size > 0


def test_rk4_spring_energy_is_conserved_in_the_storage_file(tmp_path):
    out = tmp_path / "p.h5"
    r = runner.invoke(app, ["simulate", "pendulum", "--integrator", "rk4", "--steps", "500", "-o", str(out), "-q",
                            "--set", "joints.0.spring=20.0"])
    assert r.exit_code == 0, r.output
    js = tmp_path / "e.json"
    assert runner.invoke(app, ["energy", str(out), "--json", str(js)]).exit_code == 0
    doc = json.loads(js.read_text())
    pot = np.array(doc["potential"])
    assert np.ptp(pot) > 1.0  # the spring's energy is exchanged
    assert doc["summary"]["mechanical [J]"]["max_drift"] < 1e-4


def test_rk4_scene_key_and_clear_errors(tmp_path):
    out = tmp_path / "f.h5"
    r = runner.invoke(app, ["simulate", "rbd_fourbar", "-o", str(out), "-q"])  # integrator: rk4 in the scene
    assert r.exit_code == 0, r.output
    import h5py

    with h5py.File(out, "r") as f:
        assert f.attrs["integrator"] == "munthe-kaas-rk4"
        assert np.all(np.isnan(f["impulses"][:]))
        assert set(f["solver/status"][:].astype(str)) == {"success"}
    r = runner.invoke(app, ["simulate", "sphere", "--integrator", "rk4", "-o", str(tmp_path / "s.h5")])
    assert r.exit_code == 2
    assert "contacts.0" in r.output and "rk4" in r.output
    r = runner.invoke(app, ["simulate", "pendulum", "--integrator", "euler", "-o", str(tmp_path / "e.h5")])
    assert r.exit_code == 2 and "--integrator" in r.output


# ---------------------------------------------------------------- quaternion joints

def test_rk4_converges_at_fourth_order_with_floating_and_spherical_joints():
    model = minimal.build_model(dojo.load_scene("spherical_chain", overrides={"gravity": [0, 0, -9.81]}))
    x0 = minimal.randn_state(model, np.random.default_rng(7))
    x0[model.nq:] *= 0.5
    ref = _final(*minimal.simulate(model, x0, 0.5, dt=2.0**-11))
    errors = []
    for p in (6, 7, 8):
        errors.append(np.max(np.abs(minimal.state_error(model, _final(*minimal.simulate(model, x0, 0.5, dt=2.0**-p)), ref))))
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    for r in ratios:
        assert 13.0 < r < 19.0, (errors, ratios)


def test_rk4_springs_dampers_and_inputs_are_minimal_passive_forces_and_B_func():
    mech = dojo.load_scene("spherical_chain", overrides={
        "gravity": [0, 0, -9.81], "joints.0.spring": 3.0, "joints.0.damper": 0.4, "joints.1.spring": 5.0,
        "joints.2.damper": 0.7, "joints.3.spring": [1.0, 2.0, 3.0], "joints.1.spring_offset": [0.1, -0.2, 0.3],
    })
    model = minimal.build_model(mech)
    integ = minimal.Rk4(model)
    rng = np.random.default_rng(11)
    for _ in range(3):
        x = minimal.randn_state(model, rng)
        u = rng.standard_normal(model.nu)
        tau = minimal.passive_forces(model, x) + minimal.B_func(model, x) @ u
        assert np.allclose(integ.dynamics(x, u), minimal.forward_dynamics(model, x, tau), atol=1e-10)


def test_rk4_floating_chain_conserves_energy_and_momentum_without_gravity():
    # the scene's springs off (its potential is not in _energy): free motion, no gravity
    model = minimal.build_model(dojo.load_scene("spherical_chain", overrides={f"joints.{j}.spring": 0.0 for j in range(1, 5)}))
    integ = minimal.Rk4(model)
    mech = model.mech
    x0 = minimal.randn_state(model, np.random.default_rng(5))
    x0[model.nq:] *= 0.5
    ts, qs, vs = minimal.simulate(model, x0, 2.0, dt=2.0**-9)

    def momentum(x):
        z = integ.bodies(x)
        p = np.sum(mech.mass[:, None] * z[:, 3:6], axis=0)
        L = sum(np.cross(z[b, 0:3], mech.mass[b] * z[b, 3:6])
                + matrix_from_quaternion(z[b, 6:10]) @ (mech.inertia[b] @ z[b, 10:13]) for b in range(mech.nb))
        return np.concatenate([p, L])

    x1 = _final(ts, qs, vs)
    assert abs(_energy(model, integ, x1) - _energy(model, integ, x0)) < 1e-8
    assert np.max(np.abs(momentum(x1) - momentum(x0))) < 1e-7  # RK4 error at this step (momenta ~ 1-10)


def test_python_simulate_of_an_rk4_scene_runs_rk4():
    mech = dojo.load_scene("rbd_fourbar")  # integrator: rk4
    traj = dojo.simulate(mech, steps=200)
    model = minimal.build_model(mech)
    integ = minimal.Rk4(model)
    ts, qs, vs = minimal.simulate(model, minimal.init_state(model), 0.2 * (1 - 1e-9), dt=mech.timestep)
    assert len(ts) == 201
    z = np.array([integ.bodies(np.concatenate([q, v])) for q, v in zip(qs, vs)])
    assert np.allclose(traj.x, z[:, :, 0:3], atol=1e-12) and np.allclose(traj.v, z[:, :, 3:6], atol=1e-12)
    assert np.allclose(traj.omega, z[:, :, 10:13], atol=1e-12)
    me = dojo_cli_knot_mechanics(mech, traj)
    assert np.ptp(me.mechanical) < 1e-10


def dojo_cli_knot_mechanics(mech, traj):
    from dojo_cli.physics.energy import knot_mechanics

    return knot_mechanics(mech, traj.time, traj.x, traj.q, traj.v, traj.omega)


def _pendulum_with_actuators(tmp_path, actuators, controller=None, name="actuated") -> str:
    import yaml

    from dojo_cli.scene.loader import builtin_scene_path

    doc = yaml.safe_load(open(builtin_scene_path("pendulum")))
    if actuators:
        doc["actuators"] = actuators
    if controller:
        doc["controller"] = controller
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_rk4_joint_actuators_act_through_their_gain(tmp_path):
    """Under rk4 an actuator's input drives its coordinate times its gain: u = 0.5 at gain 2
    is the plain pendulum at u = 1, step for step; storage keeps the actuator's input."""
    scene = _pendulum_with_actuators(tmp_path, [{"name": "motor", "joint": "hinge", "coordinate": 0, "gain": 2.0}],
                                     {"type": "constant", "inputs": {"motor": [0.5]}})
    plain = _pendulum_with_actuators(tmp_path, None, {"type": "constant", "inputs": {"hinge": [1.0]}}, name="plain")
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    r = runner.invoke(app, ["simulate", scene, "--integrator", "rk4", "--steps", "200", "-o", str(a), "-q"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["simulate", plain, "--integrator", "rk4", "--steps", "200", "-o", str(b), "-q"])
    assert r.exit_code == 0, r.output
    sa, sb = read_storage(a), read_storage(b)
    assert np.max(np.abs(sa.trajectory.x - sb.trajectory.x)) < 1e-14
    assert np.max(np.abs(sb.trajectory.x[-1] - sb.trajectory.x[0])) > 1e-2  # it moved
    assert np.all(sa.trajectory.inputs == 0.5) and np.all(sb.trajectory.inputs == 1.0)


def test_rk4_refuses_body_actuators_naming_them(tmp_path):
    scene = _pendulum_with_actuators(tmp_path, [{"name": "push", "body": "link", "force": [1.0, 0, 0]}])
    r = runner.invoke(app, ["simulate", scene, "--integrator", "rk4", "--steps", "10", "-o", str(tmp_path / "c.h5")])
    assert r.exit_code == 2, r.output
    assert "actuators.0" in r.output and "push" in r.output and "Traceback" not in r.output


def test_rk4_files_store_angles_unwrapped_like_variational_runs(tmp_path):
    """A pendulum spun over the top winds several turns: rk4's stored minimal/q is continuous
    (as the variational writer stores it, docs/storage.md) and equals the integrator's own
    angle, which RK4 integrates without wrapping."""
    out = tmp_path / "spin.h5"
    r = runner.invoke(app, ["simulate", "pendulum", "--integrator", "rk4", "--steps", "300", "-o", str(out), "-q",
                            "--set", "joints.0.initial.velocity=[12.0]"])
    assert r.exit_code == 0, r.output
    q = read_storage(out).trajectory.minimal_q[:, 0]
    assert abs(q[-1] - q[0]) > 4 * np.pi  # more than two turns
    assert np.max(np.abs(np.diff(q))) < 0.2  # no 2 pi jumps
    model = minimal.build_model(dojo.load_scene("pendulum", overrides=["joints.0.initial.velocity=[12.0]"]))
    ts, qs, vs = minimal.simulate(model, minimal.init_state(model), 3.0 - 1e-9, dt=0.01)
    assert len(qs) == 301
    assert np.max(np.abs(np.asarray(qs)[:, 0] - q)) < 1e-9


# ---------------------------------------------------------------- swing joints (orbital) and
# translations measured in the predecessor frame (cylindrical_free, planar_free)

def test_rk4_swing_joints_forces_are_passive_forces_and_B_func_and_converge_at_fourth_order():
    model = minimal.build_model(dojo.load_scene(MINIMAL_JOINTS))
    integ = minimal.Rk4(model)
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = minimal.randn_state(model, rng)
        u = rng.standard_normal(model.nu)
        tau = minimal.passive_forces(model, x) + minimal.B_func(model, x) @ u
        assert np.allclose(integ.dynamics(x, u), minimal.forward_dynamics(model, x, tau), rtol=0, atol=1e-9)
    x0 = minimal.randn_state(model, np.random.default_rng(7))
    x0[model.nq:] *= 0.5
    ref = _final(*minimal.simulate(model, x0, 0.25, dt=2.0**-12))
    errors = [np.max(np.abs(minimal.state_error(model, _final(*minimal.simulate(model, x0, 0.25, dt=2.0**-p)), ref)))
              for p in (7, 8, 9)]
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    for r in ratios:
        assert 13.0 < r < 19.0, (errors, ratios)


def test_rk4_orbital_chain_keeps_its_energy_and_momentum(tmp_path):
    # the built-in scene as it is (springs on the orbital joints, no gravity): dojo energy
    # adds the springs' potential (Dojo's, on the same coordinates) to the kinetic energy
    out = tmp_path / "o.h5"
    r = runner.invoke(app, ["simulate", "orbital_chain", "--integrator", "rk4", "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    js = tmp_path / "e.json"
    assert runner.invoke(app, ["energy", str(out), "--json", str(js)]).exit_code == 0
    doc = json.loads(js.read_text())
    assert np.ptp(doc["potential"]) > 1e-3  # the springs exchange energy
    summary = doc["summary"]
    assert summary["mechanical [J]"]["max_drift"] < 1e-6  # 7.8e-8 over 3 s at dt = 0.01 (energy ~ 6 J)
    assert summary["linear momentum"]["max_drift"] < 1e-6
    assert summary["angular momentum"]["max_drift"] < 1e-5
