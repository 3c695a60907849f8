"""The built-in robots under their PD controllers: the A1 stands at h = 0.01 and 0.05, the
Panda holds its pose where the PD torques balance gravity (computed independently from
the URDF), the other robots stand."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.scene import robots
from tests import urdf_reference as ref

# Interior-point relaxation: a resting contact keeps a gap ~ btol / impulse, and the
# equality residual (rtol 1e-6) allows the same order of penetration.
_PENETRATION_TOL = 1e-6
_STEADY = 0.01  # m: the "trunk height steady within 1 cm"


def _stand(name, timestep, seconds):
    mech = dojo.load_scene(name, overrides={"timestep": timestep})
    traj = dojo.simulate(mech, steps=int(round(seconds / timestep)))
    assert set(traj.status) == {"success"}, f"{name} h={timestep}: {set(traj.status)}"
    return mech, traj


@pytest.mark.parametrize("timestep", [0.01, 0.05])
def test_quadruped_stands_for_five_seconds(timestep):
    mech, traj = _stand("quadruped", timestep, 5.0)
    trunk = mech.body_index("trunk")
    height = traj.x[:, trunk, 2]
    assert traj.contact_distance.min() >= -_PENETRATION_TOL, f"a foot {-traj.contact_distance.min():.2e} m into the ground"
    assert np.ptp(height) < _STEADY, f"trunk height varies by {np.ptp(height) * 100:.2f} cm"
    # it stands where it was put, on all four feet, upright, with the legs at the PD targets
    assert np.abs(traj.x[:, trunk, :2] - traj.x[0, trunk, :2]).max() < _STEADY, "the trunk wanders"
    assert np.all(traj.contact_normal_impulse[-1] > 0), "every foot carries weight"
    up = np.array([1.0 - 2 * (q[1] ** 2 + q[2] ** 2) for q in traj.q[:, trunk]])  # R[2, 2]: cosine of the tilt
    assert up.min() > np.cos(0.02), f"trunk tilts by {np.degrees(np.arccos(up.min())):.2f} degrees"
    targets = mech.controller.target
    legs = np.flatnonzero(mech.controller.kp)
    assert np.abs(traj.minimal_q[-1, legs] - targets[legs]).max() < 0.05, "legs near their targets"
    # weight carried: the feet's vertical impulse per step balances gravity at the end
    total = mech.mass.sum() * 9.81 * timestep
    assert abs(traj.contact_normal_impulse[-1].sum() - total) < 0.01 * total


def test_panda_holds_the_pose_where_pd_balances_gravity():
    """Static equilibrium u + Q = 0: kp (target - q) = dV/dq, V from the URDF's links (no dojo code)."""
    mech, traj = _stand("panda", 0.01, 5.0)
    q_final, v_final = traj.minimal_q[-1], traj.minimal_v[-1]
    assert np.abs(v_final).max() < 1e-3, f"still moving: {np.abs(v_final).max():.2e}"
    assert np.abs(traj.minimal_q[-50:] - q_final).max() < 2e-3, "the last half second is still"
    links, joints = ref.read(robots.example_robot_data_root() / "robots/panda_description/urdf/panda.urdf")
    names = [j.name for j in mech.joints if j.type != "fixed"]

    def potential(q):
        poses = ref.forward_kinematics(links, joints, dict(zip(names, q)))
        return sum(9.81 * l.mass * (poses[n][:3, :3] @ l.com + poses[n][:3, 3])[2] for n, l in links.items())

    eps = 1e-6
    gradient = np.array([(potential(q_final + eps * e) - potential(q_final - eps * e)) / (2 * eps) for e in np.eye(len(names))])
    pd = mech.controller.kp * (mech.controller.target - q_final)
    arm = slice(0, 7)
    error = np.abs(pd[arm] - gradient[arm]).max()
    assert error < 0.02 * np.abs(gradient[arm]).max(), f"PD torque {pd[arm]} vs gravity {gradient[arm]}"
    assert np.abs(q_final[arm] - mech.controller.target[arm]).max() < 0.1, "the pose is held"


@pytest.mark.parametrize("name", ["go1", "solo12", "humanoid"])
def test_other_robots_stand(name):
    mech, traj = _stand(name, 0.01, 1.0)
    root = 0
    assert traj.contact_distance.min() >= -_PENETRATION_TOL
    assert np.ptp(traj.x[:, root, 2]) < _STEADY, f"{name}: root height varies by {np.ptp(traj.x[:, root, 2]):.3f} m"
