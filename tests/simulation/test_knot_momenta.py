"""Dojo's Storage.px and Storage.pq: each body's momenta at the knots, world frame, in a
Trajectory (``dojo.simulate``) and in a storage file (``dojo simulate``), computed
by the core (physics.energy.knot_momenta). Checked against conservation laws and the
analytic pendulum, and file against memory."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.io.storage import read_storage
from dojo_cli.math.quaternion import matrix_from_quaternion
from tests.cli.test_cli import invoke

# Dojo's momentum.jl: solver tolerances 1e-12, drift = max |p(t) - p(t0)| below 1e-8.
EXACT = {"solver.rtol": 1e-12, "solver.btol": 1e-12, "solver.tolerances": "absolute"}
MOMENTUM_DRIFT = 1e-8
FREE_BOX = """
name: free_box
timestep: 0.01
gravity: [0, 0, 0]
steps: 500
bodies:
  - name: box
    shape: {type: box, size: [0.5, 0.3, 0.2]}
    mass: 2.0
joints:
  - name: base
    type: floating
    parent: origin
    child: box
    initial: {position: [0, 0, 1, 0.3, -0.2, 0.1], velocity: [1, 2, 3, 10, 10, 10]}
"""


def _free_box(tmp_path):
    path = tmp_path / "free_box.yaml"
    path.write_text(FREE_BOX)
    return dojo.load_scene(str(path), overrides=EXACT)


def test_free_body_momenta_are_constant_and_its_own(tmp_path):
    """Dojo's momentum.jl Box: a free box in zero gravity, v0 [1, 2, 3], omega0 [10, 10, 10]
    (a spin about no principal axis: omega turns in the body), 5 s. px = m v0 at every knot
    and pq, the world angular momentum, constant; at t = 0 (velocities given at t0) pq is
    R(q0) J omega0."""
    mech = _free_box(tmp_path)
    traj = dojo.simulate(mech)
    m, J = float(mech.mass[0]), np.asarray(mech.inertia[0]).reshape(3, 3)
    v0, w0 = traj.v[0, 0], traj.omega[0, 0]
    np.testing.assert_allclose(traj.px[0, 0], m * v0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(traj.pq[0, 0], matrix_from_quaternion(traj.q[0, 0]) @ J @ w0, rtol=0, atol=1e-13)
    for name, p in (("px", traj.px), ("pq", traj.pq)):
        drift = np.max(np.abs(p[:, 0] - p[0, 0]))
        assert drift < MOMENTUM_DRIFT, f"{name} drift {drift:.2e}"
    # the body-frame spin does turn: a constant pq is the law, not a frozen state
    assert np.max(np.abs(traj.omega[:, 0] - w0)) > 1.0


def _pivot_momentum(mech, traj, pivot):
    """(T+1, 3) angular momentum about ``pivot`` (world): sum over bodies of pq + (x - p) x px."""
    return (traj.pq + np.cross(traj.x - pivot, traj.px)).sum(axis=1)


PIVOT = np.array([0.0, 0.0, 1.1])  # the built-in pendulum's hinge point (its parent_vertex)


def _pendulum_inertia(mech):
    """I about the hinge (x) axis: the box's J_xx plus m d^2, d = 0.5 m from the pivot."""
    J = np.asarray(mech.inertia[0]).reshape(3, 3)
    return J[0, 0] + float(mech.mass[0]) * 0.5**2


def test_spinning_pendulum_keeps_its_angular_momentum_about_the_pivot():
    """Without gravity the hinge's reaction passes through the pivot: the angular momentum
    about it is I_p omega0 e_x at every knot (Dojo's momentum.jl pendulum, angle 0.7, omega 5)."""
    mech = dojo.load_scene("pendulum", overrides={**EXACT, "gravity": [0, 0, 0],
                                                  "joints.hinge.initial": {"position": [0.7], "velocity": [5.0]}})
    traj = dojo.simulate(mech, steps=500)
    L = _pivot_momentum(mech, traj, PIVOT)
    expected = np.array([_pendulum_inertia(mech) * 5.0, 0.0, 0.0])
    drift = np.max(np.abs(L - expected))
    assert drift < MOMENTUM_DRIFT, f"about the pivot: {drift:.2e} from I_p omega0 = {expected[0]:.6f}"


# With gravity the discrete energy oscillates at O(h^2) about its value (the variational
# integrator): measured 4.8e-4 of the peak rate at h = 0.01 between the rate from px, pq and the
# rate of exact energy conservation.
ENERGY_RATE_TOL = 2e-3
KNOT_MAP_TOL = 1e-6


def test_pendulum_angular_momentum_about_the_pivot_is_the_analytic():
    """The swinging pendulum (pi/4 from hanging, at rest): about the pivot, L = I_p theta_dot
    e_x, with |theta_dot| from energy conservation, I_p theta_dot^2 / 2 = m g d (cos theta -
    cos theta0) (theta from hanging), and no component off the hinge axis."""
    mech = dojo.load_scene("pendulum")
    traj = dojo.simulate(mech, steps=300)
    L = _pivot_momentum(mech, traj, PIVOT)
    I_p, m, g, d = _pendulum_inertia(mech), float(mech.mass[0]), 9.81, 0.5
    theta = traj.minimal_q[:, 0]
    rate = np.sqrt(np.maximum(0.0, 2 * m * g * d * (np.cos(theta) - np.cos(theta[0])) / I_p))
    peak = np.sqrt(2 * m * g * d * (1 - np.cos(theta[0])) / I_p)
    np.testing.assert_allclose(np.abs(L[:, 0]) / I_p, rate, rtol=0, atol=ENERGY_RATE_TOL * peak)
    np.testing.assert_allclose(L[:, 1:], 0.0, atol=1e-12)
    # and the sign is the swing's: L_x = I_p theta_dot with theta_dot the knot rate (the
    # knot velocities average two midpoint ones, each on the hinge's velocity map at its own
    # step, so they leave it by O(h^2): measured 3.4e-7 N m s)
    np.testing.assert_allclose(L[:, 0], I_p * traj.minimal_v[:, 0], rtol=0, atol=KNOT_MAP_TOL)


def test_stored_momenta_are_the_trajectorys(tmp_path, monkeypatch):
    """`dojo simulate` stores px, pq equal (bit for bit) to dojo.simulate's, over a run of
    several blocks, each written to the file at once (so each block's last row is revised
    on disk once its successor is known), and read back in the file's Trajectory; with
    --no-momenta the file has none and reads px = None, as files written before them."""
    from dojo_cli.cli.commands import simulate as simulate_command

    monkeypatch.setattr(simulate_command, "FLUSH_SECONDS", 0.0)  # a block write after every block
    out = tmp_path / "run.h5"
    res = invoke("simulate", "pendulum", "--steps", 400, "-o", out, "-q")
    assert res.exit_code == 0, res.output
    stored = read_storage(out).trajectory
    traj = dojo.simulate(dojo.load_scene("pendulum"), steps=400)
    assert stored.px.shape == (401, 1, 3) and stored.pq.shape == (401, 1, 3)
    np.testing.assert_array_equal(stored.px, traj.px)
    np.testing.assert_array_equal(stored.pq, traj.pq)
    plain = tmp_path / "plain.h5"
    assert invoke("simulate", "pendulum", "--steps", 10, "-o", plain, "--no-momenta", "-q").exit_code == 0
    with h5py.File(plain) as f:
        assert "px" not in f and "pq" not in f
    run = read_storage(plain).trajectory
    assert run.px is None and run.pq is None


def test_a_file_with_one_of_the_momenta_is_damaged(tmp_path):
    out = tmp_path / "run.h5"
    assert invoke("simulate", "pendulum", "--steps", 5, "-o", out, "-q").exit_code == 0
    with h5py.File(out, "a") as f:
        del f["pq"]
    with pytest.raises(dojo.StorageError, match="missing dataset 'pq'"):
        read_storage(out)
