"""Drake's PlanarJoint semantics on `planar_axis` (issue 14, item 1): the physics checks.

q = (x, y, theta): x, y the child joint point's position along the in-plane axes of the
parent's joint frame (for axis z: the parent's x and y), theta the rotation about the
normal by the right-hand rule; v = qdot exactly, the translational velocity measured and
expressed in the parent frame; per-DOF damping f_i = -d_i v_i (docs/planar.md).

1. A damped planar body without gravity has the closed form v_i(t) = v0_i exp(-d_i t / m)
   (translations, whatever the body's spin: the force is in the parent frame) and
   omega(t) = omega0 exp(-d_3 t / I_zz). The run (initial velocities at t = 0, the default
   midpoint damper) matches it to second order: the error falls ~4x per halving of h.
2. A planar base carrying a two-link arm (in-plane gravity, dampers on every DOF) matches
   an independent integration of the minimal-coordinate equations M vdot + C = tau_passive
   (dojo_cli.minimal; scipy's DOP853 at rtol 1e-12), converted to qdot by E(q).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import dojo_cli as dojo
from dojo_cli import minimal

HALVINGS = [4e-3, 2e-3, 1e-3, 5e-4]
MASS = 2.0
SIZE = (0.3, 0.5, 0.2)
IZZ = MASS * (SIZE[0] ** 2 + SIZE[1] ** 2) / 12.0
DAMPING = [0.8, 1.7, 0.05]
Q0 = [0.1, -0.2, 0.3]
V0 = [1.0, -0.5, 4.0]  # a fast spin: the translational decay must not see it


def damped_body_scene(tmp_path, h, steps):
    text = f"""\
format: 1
name: planar_damped
timestep: {h!r}
steps: {steps}
gravity: [0, 0, 0]
bodies:
  - name: block
    shape: {{type: box, size: {list(SIZE)}}}
    mass: {MASS}
joints:
  - name: base
    type: planar_axis
    parent: origin
    child: block
    axis: [0, 0, 1]
    damper: {DAMPING}
    initial: {{position: {Q0}, velocity: {V0}}}
"""
    path = tmp_path / f"planar_{h:g}.yaml"
    path.write_text(text)
    return dojo.load_scene(str(path))


def closed_form(t):
    """(q, qdot) at times t (T,): (T, 3) each."""
    inertia = np.array([MASS, MASS, IZZ])
    rate = np.array(DAMPING) / inertia
    decay = np.exp(-np.outer(t, rate))
    v = np.array(V0) * decay
    q = np.array(Q0) + np.array(V0) / rate * (1.0 - decay)
    return q, v


def decay_error(tmp_path, h, duration=1.0):
    steps = int(round(duration / h))
    mech = damped_body_scene(tmp_path, h, steps)
    traj = dojo.simulate(mech)
    q, v = closed_form(traj.time)
    return np.abs(traj.minimal_q - q).max(), np.abs(traj.minimal_v - v).max()


def test_damped_planar_body_closed_form_second_order(tmp_path):
    errors = np.array([decay_error(tmp_path, h) for h in HALVINGS])
    for column, what in ((0, "coordinates"), (1, "velocities")):
        e = errors[:, column]
        ratios = e[:-1] / e[1:]
        assert np.all(np.abs(ratios - 4.0) < 0.6), f"{what}: errors {e}, ratios {ratios}"
    # h = 1e-3 (measured 2.28e-6 and 1.63e-6; the ratios are 4.00)
    assert errors[2, 0] < 2.5e-6 and errors[2, 1] < 2e-6, errors[2]


def test_translation_is_in_the_parent_frame_while_spinning(tmp_path):
    """The translations decay at their own rates although the body turns through 2.66 rad:
    the damper's force and the coordinates are in the parent frame, not the child's."""
    mech = damped_body_scene(tmp_path, 1e-3, 1000)
    traj = dojo.simulate(mech)
    q, _ = closed_form(traj.time)
    assert traj.minimal_q[-1, 2] - Q0[2] > 2.5  # it did turn (2.66 rad)
    # the block's centre (the joint point) in the world is (x, y, 0): parent frame = world
    assert np.abs(traj.x[:, 0, :2] - traj.minimal_q[:, :2]).max() < 1e-12
    assert np.abs(traj.minimal_q[:, :2] - q[:, :2]).max() < 2.5e-6


# ------------------------------------------------------------ planar base and a two-link arm
ARM_H = 1e-3
ARM_T = 2.0
BASE_DAMPING = [0.3, 0.5, 0.02]
ARM_DAMPING = 0.01


def arm_scene(tmp_path, h, duration=ARM_T, integrator="variational"):
    """A 3 kg base in the world's x-y plane (gravity along -y, in the plane) carrying two
    1 m links hinged about z: five coordinates (x, y, theta, a1, a2)."""
    text = f"""\
format: 1
name: planar_arm
integrator: {integrator}
timestep: {h!r}
duration: {duration}
gravity: [0, -9.81, 0]
bodies:
  - {{name: base, shape: {{type: box, size: [0.4, 0.2, 0.1]}}, mass: 3.0}}
  - {{name: link1, shape: {{type: box, size: [0.1, 1.0, 0.1]}}, mass: 1.0}}
  - {{name: link2, shape: {{type: box, size: [0.1, 1.0, 0.1]}}, mass: 0.7}}
joints:
  - name: planar
    type: planar_axis
    parent: origin
    child: base
    axis: [0, 0, 1]
    damper: {BASE_DAMPING}
    initial: {{position: [0.2, 0.1, 0.4], velocity: [0.5, 1.0, -1.5]}}
  - name: shoulder
    type: revolute
    parent: base
    child: link1
    axis: [0, 0, 1]
    parent_vertex: [0.1, 0.1, 0]
    child_vertex: [0, 0.5, 0]
    damper: {ARM_DAMPING}
    initial: {{position: [0.7], velocity: [2.0]}}
  - name: elbow
    type: revolute
    parent: link1
    child: link2
    axis: [0, 0, 1]
    parent_vertex: [0, -0.5, 0]
    child_vertex: [0, 0.5, 0]
    damper: {ARM_DAMPING}
    initial: {{position: [-0.4], velocity: [-1.0]}}
"""
    path = tmp_path / f"arm_{integrator}_{h:g}.yaml"
    path.write_text(text)
    return dojo.load_scene(str(path))


def minimal_reference(mech, times):
    """DOP853 (rtol 1e-12) on q' = E(q) v, M(q) v' + C(q, v) = tau_passive(q, v), from the
    scene's initial minimal state; returns (q, qdot) at `times`, scene coordinate order."""
    model = minimal.build_model(mech)
    x0 = minimal.init_state(model)
    nq = model.nq

    def f(t, x):
        vdot = minimal.forward_dynamics(model, x, minimal.passive_forces(model, x))
        return np.r_[minimal.velocity_kinematics(model, x) @ x[nq:], vdot]

    sol = solve_ivp(f, (times[0], times[-1]), x0, method="DOP853", rtol=1e-12, atol=1e-13, t_eval=times)
    assert sol.success
    q = sol.y[:nq].T
    qdot = np.array([minimal.velocity_kinematics(model, x) @ x[nq:] for x in sol.y.T])
    assert model.config_names == ["planar:x", "planar:y", "planar:qz", "shoulder", "elbow"]
    return q, qdot


def arm_error(tmp_path, h, duration=ARM_T, integrator="variational"):
    mech = arm_scene(tmp_path, h, duration, integrator)
    traj = dojo.simulate(mech)
    q, qdot = minimal_reference(mech, traj.time)
    return np.abs(traj.minimal_q - q).max(), np.abs(traj.minimal_v - qdot).max()


def test_planar_base_with_arm_matches_minimal_integration(tmp_path):
    """Measured (docs/planar.md): over 2 s the largest coordinate error is 6.3e-6 at
    h = 2e-3 and 1.58e-6 at h = 1e-3, the velocity error 1.36e-5 and 3.40e-6: second order
    (ratio 4.0 per halving), so 1e-6 is reached at h = 5e-4 (3.9e-7 and 8.5e-7), not at
    1e-3. The test asserts the measured bound at h = 1e-3 and the order."""
    errors = np.array([arm_error(tmp_path, h) for h in (2e-3, ARM_H)])
    eq, ev = errors[-1]
    assert eq < 2e-6 and ev < 4e-6, (eq, ev)
    ratios = errors[0] / errors[1]
    assert np.all(np.abs(ratios - 4.0) < 0.3), (errors, ratios)


def test_planar_base_with_arm_in_minimal_coordinates_meets_1e6(tmp_path):
    """The same arm simulated in minimal coordinates (`integrator: rk4`, RigidBodyDynamics.jl's
    Munthe-Kaas RK4 on the planar joint's (x, y, theta)) meets the issue's 1e-6 at h = 1e-3
    over 2 s by far: measured 5.7e-11 in coordinates, 1.0e-10 in velocities (the same at
    h = 2e-3: the reference's rtol, not the step, limits it). Both sides use the minimal
    model's M, C and passive forces, so this checks the integrator on the planar chart; the
    test above ties the maximal-coordinate joint (the engine's) to that same model."""
    eq, ev = arm_error(tmp_path, ARM_H, integrator="rk4")
    assert eq < 1e-9 and ev < 1e-9, (eq, ev)


if __name__ == "__main__":  # pragma: no cover - measurement helper
    import pathlib
    import tempfile

    d = pathlib.Path(tempfile.mkdtemp())
    for h in HALVINGS:
        print("decay", h, decay_error(d, h))
    for h in (2e-3, 1e-3, 5e-4, 2.5e-4):
        print("arm", h, arm_error(d, h))
    pytest.main([])


def test_inputs_act_in_the_parent_frame(tmp_path):
    """Inputs (f_x, f_y, tau) held constant on the turned body (theta0 = 1 rad, no damping),
    stepped from the scene's state at rest: each step applies the impulse u h, so after N
    steps the translation is x0 + (f / m) h^2 N (N + 1) / 2 exactly (to rounding) along the
    parent's axes whatever the body's angle; the rotation follows the same sum with tau / I
    up to the rotational map's O(h^2 w^2) terms."""
    path = tmp_path / "push.yaml"
    path.write_text(f"""\
format: 1
name: planar_push
timestep: 0.01
gravity: [0, 0, 0]
bodies:
  - {{name: block, shape: {{type: box, size: {list(SIZE)}}}, mass: {MASS}}}
joints:
  - {{name: base, type: planar_axis, parent: origin, child: block, axis: [0, 0, 1],
      initial: {{position: [0.1, -0.2, 1.0]}}}}
""")
    mech = dojo.load_scene(str(path))
    u = np.array([1.0, -2.0, 0.03])
    z = dojo.initial_state(mech)
    for _ in range(100):
        z = dojo.step(mech, z, u)
    q = dojo.maximal_to_minimal(mech, z)[:3]
    h, n = 0.01, 100
    expected = np.array([0.1, -0.2, 1.0]) + u / np.array([MASS, MASS, IZZ]) * h**2 * n * (n + 1) / 2
    np.testing.assert_allclose(q[:2], expected[:2], rtol=0, atol=1e-12)
    assert abs(q[2] - expected[2]) < 2e-4, (q[2], expected[2])
