"""Universal (Hooke's) and gimbal joints (core/maximal/euler_joints.h): their rows against
finite differences and dual numbers, their coordinates against an independent rotation
product (scipy), and the physics of a free-swinging universal pendulum (energy and the
angular momentum about its first, world-fixed axis) and of a gimbal pendulum."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from dojo_cli import _core
from dojo_cli.math.quaternion import multiply
from dojo_cli.physics.coordinates import maximal_to_minimal, minimal_to_maximal
from dojo_cli.physics.energy import knot_mechanics
from dojo_cli.api import simulate
from dojo_cli.solver.options import SolverOptions
from tests.mechanisms import ORIGIN, Joint, Mechanism, box_body

FD_STEP = 1e-6  # central differences: truncation ~1e-12, rounding ~1e-10
FD_TOL = 1e-8  # hand-derived Jacobian vs central differences (rows of size ~1)
DUAL_TOL = 1e-12  # hand-derived vs dual numbers: the same derivative, to rounding
ROUND_TOL = 1e-12  # angles and orientations through the conversions
TIGHT = SolverOptions(rtol=1e-12, btol=1e-12)  # Dojo's conservation tests use 1e-12
MOMENTUM_DRIFT = 1e-8  # Dojo's bound (notes 9.8)
ENERGY_DRIFT = 2e-3  # a variational integrator's bounded O(h^2) energy oscillation at h = 0.01

# tilted, orthonormal axes (a URDF's may be any), and an orientation offset
TILTED = Rotation.from_euler("zyx", [0.3, -0.7, 1.1]).as_matrix().T
OFFSET = np.array([np.cos(0.2), 0.0, np.sin(0.2), 0.0])


def _quaternion_exp(t):
    a = np.linalg.norm(t)
    return np.array([1.0, 0, 0, 0]) if a == 0 else np.r_[np.cos(a / 2), np.sin(a / 2) * t / a]


def hanging(joint_type: str, axes, gravity=(0, 0, -9.81), parent_world=True, offset=None) -> Mechanism:
    """A 0.1 x 0.2 x 1 box (asymmetric inertia) hanging from a universal or gimbal joint at
    its top, pivot at z = 1.2; with parent_world False, from a second box on a floating joint."""
    link = box_body("link", (0.1, 0.2, 1.0))
    offset = np.array([1.0, 0, 0, 0]) if offset is None else offset
    if parent_world:
        joint = Joint("hooke", joint_type, ORIGIN, 0, parent_vertex=np.array([0, 0, 1.2]),
                      child_vertex=np.array([0, 0, 0.5]), axes=np.asarray(axes, float), orientation_offset=offset)
        return Mechanism([link], [joint], 0.01, gravity, name=f"{joint_type}-pendulum")
    base = box_body("base", (0.3, 0.3, 0.3))
    joints = [Joint("base", "floating", ORIGIN, 0),
              Joint("hooke", joint_type, 0, 1, parent_vertex=np.array([0, 0, -0.15]), child_vertex=np.array([0, 0, 0.5]),
                    axes=np.asarray(axes, float), orientation_offset=offset)]
    return Mechanism([base, link], joints, 0.01, gravity, name=f"{joint_type}-pair")


@pytest.mark.parametrize("joint_type,axes", [("universal", TILTED[:2]), ("gimbal", TILTED),
                                             ("gimbal", [TILTED[0], TILTED[1], -TILTED[2]])],
                         ids=["universal", "gimbal", "gimbal-left-handed"])
def test_rows_against_finite_differences_and_dual_numbers(joint_type, axes):
    """Constraint and coordinate rows of the joint between two bodies at random poses (off
    the joint's manifold, as a Newton iterate is): the hand-derived tangent Jacobians match
    central differences of the values and the values' dual-number derivatives."""
    mech = hanging(joint_type, axes, parent_world=False, offset=OFFSET)
    rng = np.random.default_rng(0)
    for _ in range(5):
        xa, xb = rng.normal(size=3), rng.normal(size=3)
        qa, qb = rng.normal(size=4), rng.normal(size=4)
        qa, qb = qa / np.linalg.norm(qa), qb / np.linalg.norm(qb)
        rows = _core.testing.joint_rows(mech.core, 1, xa, qa, xb, qb)

        def values(e):
            return _core.testing.joint_rows(mech.core, 1, xa + e[0:3], multiply(qa, _quaternion_exp(e[3:6])),
                                            xb + e[6:9], multiply(qb, _quaternion_exp(e[9:12])))["value"]

        fd = np.zeros((6, 12))
        for c in range(12):
            e = np.zeros(12)
            e[c] = FD_STEP
            fd[:, c] = (values(e) - values(-e)) / (2 * FD_STEP)
        err = np.max(np.abs(rows["jacobian"] - fd))
        assert err < FD_TOL, f"jacobian vs finite differences: {err:.2e}"
        err = np.max(np.abs(rows["jacobian"] - rows["dual_jacobian"]))
        assert err < DUAL_TOL, f"jacobian vs dual numbers: {err:.2e}"
        # a joint input is its angle's generalized force: the impulses along the angle's gradient
        free = ~mech.constrained[1]
        free[:3] = False
        err = np.max(np.abs(rows["input_jacobian"][free] - rows["jacobian"][free]))
        assert err < DUAL_TOL, f"input rows vs angle gradients: {err:.2e}"


@pytest.mark.parametrize("joint_type,n", [("universal", 2), ("gimbal", 3)])
def test_angles_are_the_axes_rotation_product(joint_type, n):
    """The child's orientation from the angles is R_off R(a1, t1) R(a2, t2) [R(a3, t3)]
    (scipy's rotations, independent of the core), and the angles read back from it."""
    axes = TILTED[:n]
    mech = hanging(joint_type, axes, offset=OFFSET)
    rng = np.random.default_rng(1)
    limit = [np.pi, np.pi, np.pi] if n == 2 else [np.pi, np.pi / 2, np.pi]
    for _ in range(20):
        angles = rng.uniform(-1, 1, n) * np.array(limit[:n]) * 0.999
        z = minimal_to_maximal(mech, np.r_[angles, np.zeros(n)])
        expected = Rotation.from_quat(np.r_[OFFSET[1:], OFFSET[0]])
        for a, t in zip(axes, angles):
            expected = expected * Rotation.from_rotvec(a * t)
        got = Rotation.from_quat(np.r_[z[7:10], z[6]])
        err = (expected.inv() * got).magnitude()
        assert err < ROUND_TOL, f"orientation error {err:.2e} at angles {angles}"
        back = maximal_to_minimal(mech, z)[:n]
        assert np.max(np.abs(back - angles)) < ROUND_TOL, f"angles read back {back} for {angles}"


def test_constraint_is_not_an_orbital_joint():
    """The Hooke row holds on R(a1, t1) R(a2, t2) and fails on exp(t1 a1 + t2 a2) (Dojo's
    orbital joints' manifold), which differ by a twist: the element is new, not a relabel."""
    mech = hanging("universal", np.eye(3)[[2, 0]])
    t1, t2 = 0.7, -0.5
    q = Rotation.from_rotvec(np.array([0, 0, 1.0]) * t1) * Rotation.from_rotvec(np.array([1.0, 0, 0]) * t2)
    orbital = Rotation.from_rotvec(np.array([t2, 0, t1]))
    for rot, holds in ((q, True), (orbital, False)):
        qb = np.roll(rot.as_quat(), 1)
        xb = np.array([0, 0, 1.2]) - rot.apply([0, 0, 0.5])
        value = _core.testing.joint_rows(mech.core, 0, np.zeros(3), np.r_[1.0, 0, 0, 0], xb, qb)["value"]
        assert (abs(value[5]) < 1e-15) == holds, f"constraint row {value[5]:.2e} (holds: {holds})"
        assert np.max(np.abs(value[:3])) < 1e-15, "the joint point holds"


def _pivot_momentum_z(mech, tr, pivot):
    """Angular momentum about the vertical through the pivot at every knot (world)."""
    out = []
    for k in range(len(tr.time)):
        total = 0.0
        for b in range(mech.nb):
            R = Rotation.from_quat(np.r_[tr.q[k, b, 1:], tr.q[k, b, 0]]).as_matrix()
            spin = R @ (mech.inertia[b] @ tr.omega[k, b])
            total += (mech.mass[b] * np.cross(tr.x[k, b] - pivot, tr.v[k, b]) + spin)[2]
        out.append(total)
    return np.array(out)


def test_universal_pendulum_conserves_energy_and_vertical_momentum():
    """A universal pendulum whose first axis is the world's vertical, tilted 0.8 rad on its
    second axis and spun about the first: gravity and the joint's reactions (a force at the
    pivot and the Hooke torque, perpendicular to a1) exert no moment about the vertical,
    so that momentum is conserved exactly (a discrete symmetry); energy oscillates boundedly."""
    mech = hanging("universal", np.eye(3)[[2, 0]])
    z0 = minimal_to_maximal(mech, np.array([0.3, 0.8, 2.0, 0.5]))
    tr = simulate(mech, 400, z0, None, TIGHT)
    assert set(tr.status) == {"success"}, f"solver failed: {set(tr.status)}"
    me = knot_mechanics(mech, tr.time, tr.x, tr.q, tr.v, tr.omega)
    energy = me.mechanical
    drift = float(np.max(np.abs(energy - energy[0])) / np.max(np.abs(me.kinetic)))
    assert drift < ENERGY_DRIFT, f"energy drift {drift:.2e} (relative to the kinetic energy's scale)"
    lz = _pivot_momentum_z(mech, tr, np.array([0, 0, 1.2]))
    assert np.max(np.abs(lz - lz[0])) < MOMENTUM_DRIFT, f"vertical momentum drift {np.max(np.abs(lz - lz[0])):.2e}"
    # the motion is a real two-axis one: both angles move, the second far from its start
    y = np.array([maximal_to_minimal(mech, np.r_[tr.x[k, 0], tr.v[k, 0], tr.q[k, 0], tr.omega[k, 0]])[:2]
                  for k in range(len(tr.time))])
    assert np.ptp(y[:, 0]) > 1.0 and np.ptp(y[:, 1]) > 0.3, f"angle ranges {np.ptp(y, axis=0)}"


def test_gimbal_pendulum_energy_with_springs_inside_its_chart():
    """A gimbal pendulum with springs on its three angles: energy (kinetic, gravity, springs)
    is conserved up to the integrator's bounded oscillation while the angles stay inside
    their chart (|t2| < pi/2, |t1|, |t3| < pi; a spring on an angle acts on its chart value,
    whose potential is not continuous where the motion crosses +-pi, docs/scenes.md)."""
    link = box_body("link", (0.1, 0.2, 1.0))
    joint = Joint("gimbal", "gimbal", ORIGIN, 0, parent_vertex=np.array([0, 0, 1.2]), child_vertex=np.array([0, 0, 0.5]),
                  axes=TILTED, spring=np.array([3.0, 5.0, 2.0]), spring_offset=np.array([0.1, -0.2, 0.3]))
    mech = Mechanism([link], [joint], 0.01, (0, 0, -9.81), name="gimbal-pendulum")
    z0 = minimal_to_maximal(mech, np.array([0.4, -0.3, 0.5, 1.0, -0.5, 1.5]))
    tr = simulate(mech, 300, z0, None, TIGHT)
    assert set(tr.status) == {"success"}, f"solver failed: {set(tr.status)}"
    me = knot_mechanics(mech, tr.time, tr.x, tr.q, tr.v, tr.omega)
    drift = float(np.max(np.abs(me.mechanical - me.mechanical[0])) / np.max(np.abs(me.kinetic)))
    assert drift < ENERGY_DRIFT, f"energy drift {drift:.2e}"
    y = np.array([maximal_to_minimal(mech, np.r_[tr.x[k, 0], tr.v[k, 0], tr.q[k, 0], tr.omega[k, 0]])[:3]
                  for k in range(len(tr.time))])
    assert np.max(np.abs(y[:, 1])) < 1.2 and np.max(np.abs(y[:, [0, 2]])) < 3.0, "the motion stays inside the chart"
