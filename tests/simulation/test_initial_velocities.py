"""Velocities at t = 0 and at the knots (issue 12, items 1-2; docs/physics.md,
"Velocities at t0 and at the knots").

Against independent references: scipy's DOP853 on the pendulum's minimal equation
(rtol 1e-12), Coulomb friction's stopping distance, free flight; and the storage
contract: v[0] is the velocity at t = 0, restarts from v_mid reproduce the run, files
written before knot velocities still read correctly.
"""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import dojo_cli as dojo
from dojo_cli.io.storage import StorageWriter, read_storage
from dojo_cli.physics.coordinates import interleave_minimal, minimal_to_maximal, minimal_velocities
from dojo_cli.physics.energy import knot_mechanics, mechanics
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import dump_scene, load_scene_spec
from tests.cli.test_cli import invoke

TIGHT = ["solver.rtol=1e-12"]
# A scene at rest whose initial state is solved to INNER_RTOL: its knot velocities at t = 0 with
# the first step solved as tightly (m/s, rad/s)
KNOT_REST_TOL = 1e-8


def pendulum_reference(t: np.ndarray, theta0: float) -> tuple[np.ndarray, np.ndarray]:
    """The built-in pendulum (a 1 kg box 0.1 x 0.1 x 1 m hinged at its top end about x)
    by DOP853 on I theta'' = -m g (L/2) sin theta: (theta, theta_dot) at t."""
    m, g, half = 1.0, 9.81, 0.5
    inertia = m * (0.1**2 + 1.0**2) / 12 + m * half**2
    sol = solve_ivp(lambda _, y: [y[1], -m * g * half / inertia * np.sin(y[0])], (0, t[-1]), [theta0, 0.0],
                    method="DOP853", rtol=1e-12, atol=1e-12, t_eval=t)
    return sol.y[0], sol.y[1]


def pendulum_errors(h: float, seconds: float, convention: str = "t0") -> tuple[float, float, float]:
    """(largest error of the link's centre of mass in m, of the stored hinge rate in rad/s,
    of the stored mechanical energy in J) over ``seconds`` from horizontal at rest."""
    mech = dojo.load_scene("pendulum", TIGHT + [f"timestep={h}", f"initial_velocity={convention}",
                                                "joints.0.initial.position=[1.5707963267948966]"])
    traj = dojo.simulate(mech, steps=int(round(seconds / h)))
    assert set(traj.status) == {"success"}
    theta, rate = pendulum_reference(traj.time, np.pi / 2)
    # the centre of mass is L/2 = 0.5 m from the pivot: its distance from the reference's
    position = float(np.max(2 * 0.5 * np.abs(np.sin((traj.minimal_q[:, 0] - theta) / 2))))
    me = knot_mechanics(mech, traj.time, traj.x, traj.q, traj.v, traj.omega)
    energy0 = 1.0 * 9.81 * 1.1  # at rest, horizontal: m g z of the centre of mass, at the pivot's height
    return position, float(np.max(np.abs(traj.minimal_v[:, 0] - rate))), float(np.max(np.abs(me.mechanical - energy0)))


def test_pendulum_from_horizontal_against_dop853_second_order():
    """Within 1e-4 m at h = 1e-3, and the errors of the position, of the stored knot
    velocity and of the energy from the stored datasets fall ~4x when h halves. (Over
    5 s: 1.1e-5 m at 1e-3, measured in the report; 1 s here keeps the suite fast.)"""
    coarse = pendulum_errors(2e-3, 1.0)
    fine = pendulum_errors(1e-3, 1.0)
    assert fine[0] < 1e-4, f"position error {fine[0]:.2e} m"
    for what, c, f in zip(("position", "knot velocity", "energy"), coarse, fine):
        assert 3.5 < c / f < 4.5, f"{what}: error {c:.3e} -> {f:.3e}, ratio {c / f:.2f} (second order: 4)"
    # Dojo's convention starts half a step early: an O(h) error, far larger
    midpoint = pendulum_errors(1e-3, 1.0, "midpoint")
    assert midpoint[0] > 20 * fine[0], f"midpoint convention {midpoint[0]:.2e} m, t0 {fine[0]:.2e} m"


def test_sliding_box_stops_at_coulomb_distance():
    """v0^2 / (2 mu g) to 1e-4 relative (2 m/s, mu 0.3: 0.6796 m); it was 1 cm short."""
    mech = dojo.load_scene("sliding_box", ["solver.rtol=1e-10", "solver.btol=1e-8"])
    traj = dojo.simulate(mech)
    assert set(traj.status) == {"success"}
    expected = 2.0**2 / (2 * 0.3 * 9.81)
    travelled = traj.x[-1, 0, 0] - traj.x[0, 0, 0]
    assert abs(travelled / expected - 1) < 1e-4, f"{travelled:.6f} m, expected {expected:.6f} m"
    assert abs(traj.v[0, 0, 0] - 2.0) < 1e-9 and np.max(np.abs(traj.v[-1])) < 1e-6


THROWN = """\
name: thrown
timestep: 0.01
gravity: [0, 0, -9.81]
steps: 20
solver: {rtol: 1.0e-12}
bodies:
  - name: box
    shape: {type: box, size: [0.2, 0.3, 0.5]}
    mass: 1.5
    initial: {position: [0, 0, 1], velocity: [1, 2, 3], angular_velocity: [3, -1, 2]}
joints:
  - {name: free, type: floating, parent: origin, child: box}
"""


def test_thrown_body_has_v0_at_t0_in_storage(tmp_path):
    """A body thrown at v0, w0 holds them at t = 0 in the file; its flight is exact
    (x(t) = x0 + v0 t + g t^2 / 2 at every knot, v(t) = v0 + g t), and its spin keeps
    |L| and the energy of the body-frame rotation."""
    scene, out = tmp_path / "thrown.yaml", tmp_path / "thrown.h5"
    scene.write_text(THROWN)
    assert invoke("simulate", scene, "-o", out).exit_code == 0
    r = read_storage(out)
    assert r.velocities == "knot"
    assert np.abs(r.trajectory.v[0, 0] - [1, 2, 3]).max() < 1e-12
    assert np.abs(r.trajectory.omega[0, 0] - [3, -1, 2]).max() < 1e-11
    t = r.trajectory.time[:, None]
    g = np.array([0, 0, -9.81])
    assert np.abs(r.trajectory.x[:, 0] - ([0, 0, 1] + np.array([1, 2, 3]) * t + 0.5 * g * t**2)).max() < 1e-12
    assert np.abs(r.trajectory.v[:, 0] - (np.array([1, 2, 3]) + g * t)).max() < 1e-12  # every knot, the last included


def test_restart_from_file_reproduces_the_next_step(tmp_path):
    """`dojo step --from RUN --index K` reads Dojo's state (v_mid, omega_mid) and the run's
    warm start: step K+1 to 1e-12, with contacts (box) and joints (cartpole)."""
    for scene in ("cartpole", "box"):
        out = tmp_path / f"{scene}.h5"
        assert invoke("simulate", scene, "-o", out, "--steps", 40).exit_code == 0
        r = read_storage(out)
        for k in (0, 17, 39):
            res = invoke("step", scene, "--from", out, "--index", k, "--json")
            assert res.exit_code == 0, res.output
            got = np.array(json.loads(res.stdout)["maximal"])
            assert np.abs(got - r.trajectory.state(k + 1)).max() < 1e-12, (scene, k)


def test_midpoint_option_reproduces_dojos_convention():
    """initial_velocity: midpoint is the state built as before (the given velocities as
    midpoint velocities), bit for bit, and its run is the run from that state."""
    spec = load_scene_spec("cartpole", ["initial_velocity=midpoint", "joints.1.initial.velocity=[1.5]"])
    mech = build_mechanism(spec)
    theta = np.zeros(mech.nf)
    rate = np.zeros(mech.nf)
    for i, j in enumerate(spec.joints):
        if j.initial is not None:
            theta[mech.joint_free_range[i]] = j.initial.position or 0.0
            rate[mech.joint_free_range[i]] = j.initial.velocity or 0.0
    before = minimal_to_maximal(mech, interleave_minimal(mech, theta, rate))
    assert np.array_equal(dojo.initial_state(mech), before)
    a = dojo.simulate(mech, steps=50)
    b = dojo.simulate(mech, steps=50, z0=before)
    assert np.abs(np.stack([a.state(k) for k in range(51)]) - np.stack([b.state(k) for k in range(51)])).max() <= 1e-12


def test_files_with_midpoint_velocities_still_read(tmp_path):
    """A file written before knot velocities (v, omega midpoint; no v_mid, no `velocities`
    attribute): read_storage, `dojo energy` and `dojo step --from` read it as such."""
    spec = load_scene_spec("pendulum", ["initial_velocity=midpoint"])
    mech = build_mechanism(spec)
    traj = dojo.simulate(mech, steps=30)
    # the old layout: the states' midpoint velocities as v, omega, and minimal/v their
    # backward differences (what the run loop stored then)
    mv = minimal_velocities(mech, np.stack([traj.state(k) for k in range(31)]))
    out = tmp_path / "old.h5"
    with StorageWriter(out, scene_yaml=dump_scene(spec),
                       scene_name="pendulum", timestep=mech.timestep, gravity=mech.gravity,
                       solver_options=mech.default_options.to_dict(), integrator="dojo-variational-midpoint",
                       body_names=[b.name for b in mech.bodies], minimal_q_names=mech.coordinate_names(),
                       minimal_v_names=[f"{c}_dot" for c in mech.coordinate_names()], input_dim=mech.nf,
                       dojo_cli_version="0") as writer:
        writer.write_initial(traj.time[0], traj.x[0], traj.q[0], traj.v_mid[0], traj.omega_mid[0], traj.minimal_q[0], mv[0])
        writer.write_steps(traj.time[1:], traj.x[1:], traj.q[1:], traj.v_mid[1:], traj.omega_mid[1:], traj.minimal_q[1:],
                           mv[1:], traj.inputs, iterations=traj.iterations, residual=traj.residual, status=traj.status,
                           extra={"impulses": traj.impulses, "solver/complementarity": traj.complementarity})
    with h5py.File(out, "r+") as f:
        del f.attrs["velocities"]  # as the files before it
        assert "v_mid" not in f
    r = read_storage(out)
    # a midpoint file's v, omega are the midpoint velocities: the trajectory holds them as v_mid too
    assert r.velocities == "midpoint" and r.trajectory.v_mid is r.trajectory.v and r.trajectory.omega_mid is r.trajectory.omega
    assert np.array_equal(r.trajectory.v, traj.v_mid) and np.array_equal(r.trajectory.state(12), traj.state(12))
    res = invoke("energy", out, "--json", tmp_path / "e.json")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "e.json").read_text())
    me = mechanics(mech, traj.time, traj.x, traj.q, traj.v_mid, traj.omega_mid)
    assert len(doc["time"]) == 30 and np.allclose(doc["mechanical"], me.mechanical, rtol=0, atol=1e-12)
    res = invoke("step", "pendulum", "--set", "initial_velocity=midpoint", "--from", out, "--index", 12, "--json")
    assert res.exit_code == 0, res.output
    assert np.abs(np.array(json.loads(res.stdout)["maximal"]) - traj.state(13)).max() < 1e-12


# ------------------------------------------- the double pendulum and the cartpole, DOP853


def _double_pendulum_reference(mech, t, a0, b0):
    """Both links' centres of mass (y, z) and velocities by DOP853 (rtol 1e-12) on the
    double pendulum's Lagrange equations in absolute angles a = theta1, b = theta1 +
    theta2 (each link's centre halfway along it, pivot at z = P):
      M11 a'' + M12 b'' + m2 L l2 sin(a - b) b'^2 + (m1 l1 + m2 L) g sin a = 0
      M12 a'' + M22 b'' - m2 L l2 sin(a - b) a'^2 + m2 l2 g sin b = 0
    with M11 = m1 l1^2 + I1 + m2 L^2, M12 = m2 L l2 cos(a - b), M22 = m2 l2^2 + I2."""
    (m1, i1), (m2, i2) = [(b.mass, b.inertia[0, 0]) for b in mech.bodies]
    length, l1, l2, g, pivot = 1.0, 0.5, 0.5, 9.81, 2.1

    def rhs(_, y):
        a, b, da, db = y
        c, s = np.cos(a - b), np.sin(a - b)
        mass = np.array([[m1 * l1**2 + i1 + m2 * length**2, m2 * length * l2 * c], [m2 * length * l2 * c, m2 * l2**2 + i2]])
        force = -np.array([m2 * length * l2 * s * db**2 + (m1 * l1 + m2 * length) * g * np.sin(a),
                           -m2 * length * l2 * s * da**2 + m2 * l2 * g * np.sin(b)])
        return [da, db, *np.linalg.solve(mass, force)]

    a, b, da, db = solve_ivp(rhs, (0, t[-1]), [a0, a0 + b0, 0.0, 0.0], method="DOP853", rtol=1e-12, atol=1e-12, t_eval=t).y
    p1 = np.stack([l1 * np.sin(a), pivot - l1 * np.cos(a)], -1)
    p2 = np.stack([length * np.sin(a) + l2 * np.sin(b), pivot - length * np.cos(a) - l2 * np.cos(b)], -1)
    v1 = np.stack([l1 * np.cos(a) * da, l1 * np.sin(a) * da], -1)
    v2 = np.stack([length * np.cos(a) * da + l2 * np.cos(b) * db, length * np.sin(a) * da + l2 * np.sin(b) * db], -1)
    return np.stack([p1, p2], 1), np.stack([v1, v2], 1)


def _cartpole_reference(mech, t, theta0):
    """The cart's and the pole's centres (y, z) and velocities by DOP853 on the cartpole's
    Lagrange equations (cart at s along y, pole angle theta from upright, its centre
    l = 0.5 from the hinge at the cart's centre: (s - l sin theta, l cos theta)):
      (mc + mp) s'' - mp l cos(theta) theta'' + mp l sin(theta) theta'^2 = 0
      -mp l cos(theta) s'' + (mp l^2 + Ip) theta'' - mp g l sin(theta) = 0"""
    (mc, _), (mp, ip) = [(b.mass, b.inertia[0, 0]) for b in mech.bodies]
    half, g = 0.5, 9.81

    def rhs(_, y):
        s, th, ds, dth = y
        c, sn = np.cos(th), np.sin(th)
        mass = np.array([[mc + mp, -mp * half * c], [-mp * half * c, mp * half**2 + ip]])
        force = np.array([-mp * half * sn * dth**2, mp * g * half * sn])
        return [ds, dth, *np.linalg.solve(mass, force)]

    s, th, ds, dth = solve_ivp(rhs, (0, t[-1]), [0.0, theta0, 0.0, 0.0], method="DOP853", rtol=1e-12, atol=1e-12, t_eval=t).y
    zero = np.zeros_like(s)
    cart, cart_v = np.stack([s, zero], -1), np.stack([ds, zero], -1)
    pole = np.stack([s - half * np.sin(th), half * np.cos(th)], -1)
    pole_v = np.stack([ds - half * np.cos(th) * dth, -half * np.sin(th) * dth], -1)
    return np.stack([cart, pole], 1), np.stack([cart_v, pole_v], 1)


def _chain_errors(scene: str, h: float, seconds: float) -> tuple[float, float]:
    """(largest error of the bodies' centres of mass in m, of their stored knot velocities
    in m/s) against the scene's DOP853 reference, from its initial angles at rest."""
    mech = dojo.load_scene(scene, TIGHT + [f"timestep={h}"])
    traj = dojo.simulate(mech, steps=int(round(seconds / h)))
    assert set(traj.status) == {"success"}
    angles = traj.minimal_q[0]
    if scene == "double_pendulum":
        position, velocity = _double_pendulum_reference(mech, traj.time, angles[0], angles[1])
    else:
        position, velocity = _cartpole_reference(mech, traj.time, angles[1])
    assert np.abs(traj.x[:, :, 0]).max() < 1e-12, "the motion stays in the y-z plane"
    return (float(np.abs(traj.x[:, :, 1:] - position).max()), float(np.abs(traj.v[:, :, 1:] - velocity).max()))


@pytest.mark.parametrize("scene", ["double_pendulum", "cartpole"])
def test_chains_against_dop853_second_order(scene):
    """The double pendulum and the cartpole (issue 12's checks) from their built-in initial
    angles at rest: within 1e-4 m at h = 1e-3 over 1 s, and the errors of the centres of
    mass and of the stored knot velocities fall ~4x when h halves."""
    coarse = _chain_errors(scene, 2e-3, 1.0)
    fine = _chain_errors(scene, 1e-3, 1.0)
    assert fine[0] < 1e-4, f"position error {fine[0]:.2e} m"
    for what, c, f in zip(("position", "knot velocity"), coarse, fine):
        assert 3.5 < c / f < 4.5, f"{what}: error {c:.3e} -> {f:.3e}, ratio {c / f:.2f} (second order: 4)"


def test_thrown_robot_with_hull_contacts_has_v0_at_t0():
    """A robot of 40 bodies and ~1300 hull contacts (centauro, --contacts collision
    --merge-fixed), its floating base thrown and spun, its joints at rest: the run's
    velocities at t = 0 (minimal coordinates, from the knot velocities of the first step)
    are the ones the scene gives, to the solver's tolerance. Its t = 0 solve runs both of
    the Newton step's factorisations (initial.cpp; measured at rest: the step's own
    elimination order rejected in 3 of 4 iterations, backward error 1e-7..1e-5, and the
    robust one used instead)."""
    from dojo_cli.scene import robots
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict
    from dojo_cli.scene.urdf import UrdfOptions, read_urdf

    path = robots.example_robot_data_root() / "robots/centauro_description/urdf/centauro.urdf"
    result = read_urdf(path, UrdfOptions(floating=True, contacts="collision", merge_fixed=True, meshes=False))
    base = [0.3, -0.2, 0.5, 0.4, 0.1, -0.3]  # the floating joint's rates
    result.scene["joints"][0]["initial"]["velocity"] = base
    result.scene["solver"] = {**result.scene.get("solver", {}), "rtol": 1e-10}
    mech = build_mechanism(spec_from_dict(result.scene))
    assert len(mech.contacts) > 1000
    traj = dojo.simulate(mech, steps=1)
    assert set(traj.status) == {"success"}
    expected = np.zeros(traj.minimal_v.shape[1])
    expected[:6] = base
    assert np.abs(traj.minimal_v[0] - expected).max() < 1e-9


def test_a_weakly_active_limit_at_t0_gets_its_first_step(monkeypatch):
    """dm_control's walker starts at rest with its knees on their upper bound and its feet on
    the floor: the steps' solutions are accurate to about the square root of their
    complementarity there, and at the run's btol the initial solve stalls at 4.9e-4 N s,
    above what it accepts. Solved again with the steps' complementarity at INNER_BTOL, the
    first step starts with zero momentum (v[0] = 0 at the knot); without that second solve
    the stall is reported as a stall, naming its residual, not as max_iter."""
    from pathlib import Path

    from dojo_cli.errors import SolverError
    from dojo_cli.scene.loader import spec_from_dict
    from dojo_cli.scene.mjcf import MjcfOptions, read_mjcf
    from dojo_cli.simulation import initial

    path = Path(__file__).parent.parent / "scene" / "data" / "mjcf" / "dmc_walker.xml"
    scene = read_mjcf(path, MjcfOptions(drop_unsupported=True), path.name).scene
    mech = build_mechanism(spec_from_dict(scene, file=str(path)))
    z0 = initial.initial_state(mech)  # the scene's solver options: btol 1e-4, the solve redone
    # the first step from it, solved as accurately, starts at rest (its knot velocities at t = 0;
    # at the run's btol they are only that accurate: 5.7e-4 m/s)
    tight = dojo.default_options(mech).replace(rtol=1e-10, btol=initial.INNER_BTOL)
    traj = dojo.simulate(mech, steps=1, z0=z0, opts=tight)
    at_rest = max(np.abs(traj.v[0]).max(), np.abs(traj.omega[0]).max())
    assert at_rest < KNOT_REST_TOL, f"velocities at t = 0 up to {at_rest:.1e}"
    monkeypatch.setattr(initial, "INNER_BTOL", 1.0)  # no second solve
    with pytest.raises(SolverError) as err:
        initial.initial_state(build_mechanism(spec_from_dict(scene, file=str(path))))
    (line,) = err.value.lines()
    assert "the solve stalled after 1 iterations at momentum residual 4.915e-04 N s (above 2.618e-04" in line, line
