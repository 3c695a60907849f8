"""Drake's planar_joint_test.cc (other_systems_notes.md 3.7) translated for `planar_axis`.

Fixture as Drake's: one body on the world, damping 3 on every DOF, position limits
[-1, 1.5], velocity limits [-1.1, 1.6], acceleration limits [-1.2, 1.7]. Drake's
AddInOneForce and Clone(AutoDiff) have no counterpart here (no context forces, no scalar
conversion of a joint); the rest does, with the state a minimal state vector y.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.errors import SceneError
from dojo_cli.io.storage import read_storage as read_run

FIXTURE = """\
format: 1
name: planar_fixture
timestep: 0.01
steps: 10
gravity: [0, 0, 0]
seed: {seed}
bodies:
  - name: body
    shape: {{type: box, size: [0.3, 0.2, 0.1]}}
    mass: 1.0
joints:
  - name: planar
    type: planar_axis
    parent: origin
    child: body
    axis: [0, 0, 1]
    damper: [3, 3, 3]
    limits: {{lower: [-1, -1, -1], upper: [1.5, 1.5, 1.5]}}
    velocity_limits: {{lower: [-1.1, -1.1, -1.1], upper: [1.6, 1.6, 1.6]}}
    acceleration_limits: {{lower: [-1.2, -1.2, -1.2], upper: [1.7, 1.7, 1.7]}}
{extra}"""


def write(tmp_path, extra="", seed=0, name="fixture.yaml", replace=None):
    text = FIXTURE.format(seed=seed, extra=textwrap.indent(extra, "    ") if extra else "")
    for old, new in replace or ():
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text)
    return path


def load(tmp_path, **kw):
    return dojo.load_scene(str(write(tmp_path, **kw)))


def state(mech):
    return dojo.maximal_to_minimal(mech, dojo.initial_state(mech))


def test_type_and_dofs(tmp_path):
    mech = load(tmp_path)
    j = mech.joint("planar")
    assert j.type_name == "planar" and j.type.value == "planar_axis"  # Drake's name, our type
    assert (j.num_positions(), j.num_velocities()) == (3, 3)
    assert (j.position_start(), j.velocity_start()) == (0, 3)
    assert j.can_rotate() and j.can_translate()


def test_joint_limits_and_damping(tmp_path):
    j = load(tmp_path).joint("planar")
    for got, value in ((j.position_lower_limits(), -1), (j.position_upper_limits(), 1.5),
                       (j.velocity_lower_limits(), -1.1), (j.velocity_upper_limits(), 1.6),
                       (j.acceleration_lower_limits(), -1.2), (j.acceleration_upper_limits(), 1.7)):
        np.testing.assert_array_equal(got, np.full(3, value))
    np.testing.assert_array_equal(j.default_damping(), [3, 3, 3])


def test_context_dependent_access(tmp_path):
    mech = load(tmp_path)
    j = mech.joint("planar")
    y = state(mech)
    j.set_translation(y, [1.0, 0.3])
    np.testing.assert_array_equal(j.get_translation(y), [1.0, 0.3])
    j.set_rotation(y, 1.5)
    assert j.get_rotation(y) == 1.5
    assert j.set_pose(y, [2.0, 2.3], 3.0) is j  # setters chain
    np.testing.assert_array_equal(j.get_translation(y), [2.0, 2.3])
    assert j.get_rotation(y) == 3.0
    j.set_translational_velocity(y, [3.5, 4.0])
    np.testing.assert_array_equal(j.get_translational_velocity(y), [3.5, 4.0])
    j.set_angular_velocity(y, 3.5)
    assert j.get_angular_velocity(y) == 3.5
    # the state really is the joint's: the maximal state it gives has the body there, turned
    z = dojo.minimal_to_maximal(mech, y).reshape(mech.nb, 13)
    np.testing.assert_allclose(z[0, :3], [2.0, 2.3, 0.0], atol=1e-15)
    np.testing.assert_allclose(z[0, 6:10], [np.cos(1.5), 0, 0, np.sin(1.5)], atol=1e-15)
    j.lock(y)
    np.testing.assert_array_equal(j.get_translational_velocity(y), [0, 0])
    assert j.get_angular_velocity(y) == 0.0


def test_name_suffixes(tmp_path):
    mech = load(tmp_path)
    j = mech.joint("planar")
    assert [j.position_suffix(k) for k in range(3)] == ["x", "y", "qz"]
    assert [j.velocity_suffix(k) for k in range(3)] == ["vx", "vy", "wz"]


def test_storage_names_limits_and_random_record(tmp_path):
    path = write(tmp_path, extra="initial: {random: {x: [1, 2], theta: [3, 4]}}\n")
    out = tmp_path / "run.h5"
    res = subprocess.run([sys.executable, "-m", "dojo_cli", "simulate", str(path), "-o", str(out)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    run = read_run(str(out))
    assert run.minimal_q_names == ["planar:x", "planar:y", "planar:qz"]
    assert run.minimal_v_names == ["planar:vx", "planar:vy", "planar:wz"]
    limits = run.attrs["joint_limits"]["planar"]
    assert limits["velocity"] == {"lower": [-1.1] * 3, "upper": [1.6] * 3}
    assert limits["acceleration"] == {"lower": [-1.2] * 3, "upper": [1.7] * 3}
    assert limits["position"] == {"lower": [-1.0] * 3, "upper": [1.5] * 3}
    drawn = run.attrs["random_initial"]["planar"]
    assert set(drawn) == {"x", "theta"}
    np.testing.assert_allclose(run.trajectory.minimal_q[0], [drawn["x"], 0.0, drawn["theta"]], atol=1e-12)
    res = subprocess.run([sys.executable, "-m", "dojo_cli", "info", str(out)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "joint limits    planar: position [-1, -1, -1] .. [1.5, 1.5, 1.5]; velocity [-1.1, -1.1, -1.1] .. " \
           "[1.6, 1.6, 1.6]; acceleration [-1.2, -1.2, -1.2] .. [1.7, 1.7, 1.7]" in res.stdout, res.stdout
    assert f"random initial  planar: x {drawn['x']:.6g}, theta {drawn['theta']:.6g}" in res.stdout


@pytest.mark.parametrize("field, value, path, message", [
    ("velocity_limits", "{lower: [-1, -1], upper: [1, 1]}", "joints.0.velocity_limits.lower",
     "must have 3 values for a planar_axis joint (its free coordinates), got 2 "
     "(condition 'lower_limits.size() == num_velocities()' failed)"),
    ("acceleration_limits", "{lower: [-1, -1, -1], upper: [1, 1]}", "joints.0.acceleration_limits.upper",
     "must have as many values as lower (3), got 2 (condition 'lower_limits.size() == upper_limits.size()' failed)"),
    ("velocity_limits", "{lower: [0.2, 0.3, 0], upper: [0.2, 0.2, 0.2]}", "joints.0.velocity_limits.lower.1",
     "must be <= upper (0.3 > 0.2) (condition '(lower_limits.array() <= upper_limits.array()).all()' failed)"),
    ("limits", "{lower: [-1, -1], upper: [1, 1]}", "joints.0.limits.lower",
     "(condition 'lower_limits.size() == num_positions()' failed)"),
])
def test_set_limits_errors(tmp_path, field, value, path, message):
    old = {"velocity_limits": "velocity_limits: {lower: [-1.1, -1.1, -1.1], upper: [1.6, 1.6, 1.6]}",
           "acceleration_limits": "acceleration_limits: {lower: [-1.2, -1.2, -1.2], upper: [1.7, 1.7, 1.7]}",
           "limits": "limits: {lower: [-1, -1, -1], upper: [1.5, 1.5, 1.5]}"}[field]
    file = write(tmp_path, replace=[(old, f"{field}: {value}")])
    line = 1 + file.read_text().splitlines().index(f"    {field}: {value}")
    with pytest.raises(SceneError) as err:
        dojo.load_scene(str(file))
    text = str(err.value)
    assert f"{file}:{line}" in text and path in text and message in text, text
    res = subprocess.run([sys.executable, "-m", "dojo_cli", "simulate", str(file), "-o", str(tmp_path / "x.h5")],
                         capture_output=True, text=True)
    assert res.returncode == 2 and message in res.stderr


def test_new_velocity_and_acceleration_limits(tmp_path):
    j = load(tmp_path, replace=[("lower: [-1.1, -1.1, -1.1], upper: [1.6, 1.6, 1.6]", "lower: [-0.2, -0.2, -0.2], upper: [0.2, 0.2, 0.2]"),
                                ("lower: [-1.2, -1.2, -1.2], upper: [1.7, 1.7, 1.7]", "lower: [-0.2, -0.2, -0.2], upper: [0.2, 0.2, 0.2]")]).joint("planar")
    for got, value in ((j.velocity_lower_limits(), -0.2), (j.velocity_upper_limits(), 0.2),
                       (j.acceleration_lower_limits(), -0.2), (j.acceleration_upper_limits(), 0.2)):
        np.testing.assert_array_equal(got, np.full(3, value))


def test_default_state(tmp_path):
    mech = load(tmp_path)
    j = mech.joint("planar")
    np.testing.assert_array_equal(j.get_default_translation(), [0, 0])
    assert j.get_default_rotation() == 0.0
    j.set_default_translation([0.25, 0.25]).set_default_rotation(0.25)
    np.testing.assert_array_equal(j.get_default_translation(), [0.25, 0.25])
    assert j.get_default_rotation() == 0.25
    assert mech.joint("planar") is j  # the handle (and its defaults) persist
    # out-of-range defaults are allowed (limits -1 and 1.5)
    j.set_default_translation([-2.0, 2.5]).set_default_rotation(2.5)
    j.set_default_pose([0.5, -0.5], 0.75)
    y = state(mech)
    j.set_default_state(y)
    np.testing.assert_array_equal(y[:3], [0.5, -0.5, 0.75])
    # and out-of-range initial positions in a scene load (the limits then push back)
    out = load(tmp_path, extra="initial: {position: [-2, 2.5, 0]}\n", name="out.yaml")
    np.testing.assert_allclose(state(out)[:3], [-2, 2.5, 0], atol=1e-12)
    assert out.joint("planar").get_default_translation().tolist() == [-2, 2.5]



def test_default_positions_are_the_default_pose(tmp_path):
    """Drake's default_positions / set_default_positions: the joint's default coordinates
    (x, y, theta), the same numbers the default pose reads and set_default_state writes."""
    mech = load(tmp_path)
    j = mech.joint("planar")
    np.testing.assert_array_equal(j.default_positions(), [0, 0, 0])
    assert j.set_default_positions([0.2, -0.1, 0.6]) is j
    np.testing.assert_array_equal(j.default_positions(), [0.2, -0.1, 0.6])
    np.testing.assert_array_equal(j.get_default_translation(), [0.2, -0.1])
    assert j.get_default_rotation() == 0.6
    j.set_default_pose([1.0, 2.0], -0.5)
    np.testing.assert_array_equal(j.default_positions(), [1.0, 2.0, -0.5])
    y = state(mech)
    j.set_default_state(y)
    np.testing.assert_array_equal(y[:3], [1.0, 2.0, -0.5])
    with pytest.raises(Exception, match="default positions"):
        j.set_default_positions([0.0, 0.0])  # three coordinates


def test_random_state(tmp_path):
    mech = load(tmp_path)
    j = mech.joint("planar")
    y = state(mech)
    y[:3] = 7.0
    j.set_random_state(y, np.random.default_rng(0))  # no distribution: the default pose
    np.testing.assert_array_equal(y[:3], [0, 0, 0])
    j.set_random_pose_distribution({"x": (1, 2), "y": (2, 3), "theta": (3, 4)})
    rng = np.random.default_rng(1)
    j.set_random_state(y, rng)
    first = y[:3].copy()
    assert 1 <= first[0] <= 2 and 2 <= first[1] <= 3 and 3 <= first[2] <= 4
    j.set_random_state(y, rng)
    assert np.all(y[:3] != first)


def test_random_initial_pose_in_scene(tmp_path):
    extra = "initial: {position: [0.1, 0.2, 0.3], random: {x: [1, 2], y: [2, 3], theta: [3, 4]}}\n"
    draws = []
    for seed in (0, 0, 1):
        mech = load(tmp_path, extra=extra, seed=seed, name=f"r{seed}.yaml")
        q = state(mech)[:3]
        assert 1 <= q[0] <= 2 and 2 <= q[1] <= 3 and 3 <= q[2] <= 4
        assert mech.random_initial == {"planar": dict(zip(("x", "y", "theta"), q.tolist()))} or np.allclose(
            [mech.random_initial["planar"][k] for k in ("x", "y", "theta")], q, atol=1e-12)
        draws.append(q)
    np.testing.assert_array_equal(draws[0], draws[1])  # the same seed: the same pose
    assert np.all(draws[0] != draws[2])  # another seed: another pose
    # a random subset keeps the other coordinates of `position`
    mech = load(tmp_path, extra="initial: {position: [0.1, 0.2, 0.3], random: {y: [2, 3]}}\n", name="sub.yaml")
    q = state(mech)[:3]
    assert q[0] == pytest.approx(0.1, abs=1e-12) and 2 <= q[1] <= 3 and q[2] == pytest.approx(0.3, abs=1e-12)


@pytest.mark.parametrize("random, path, message", [
    ("{z: [0, 1]}", "joints.0.initial.random.z", "unknown coordinate 'z' (one of: x, y, theta)"),
    ("{x: [2, 1]}", "joints.0.initial.random.x", "must have lower <= upper, got [2, 1]"),
    ("{x: [1]}", "joints.0.initial.random.x", "must be an interval [lower, upper]"),
    ("{theta: [0, 1], qz: [0, 1]}", "joints.0.initial.random.qz", "names the same coordinate as 'theta'"),
])
def test_random_initial_errors(tmp_path, random, path, message):
    file = write(tmp_path, extra=f"initial: {{random: {random}}}\n")
    with pytest.raises(SceneError) as err:
        dojo.load_scene(str(file))
    text = str(err.value)
    assert path in text and message in text and f"{file}:" in text, text


def test_random_initial_only_for_planar_axis(tmp_path):
    file = write(tmp_path, extra="initial: {random: {x: [0, 1]}}\n",
                 replace=[("type: planar_axis", "type: revolute"), ("[3, 3, 3]", "3"),
                          ("[-1, -1, -1]", "[-1]"), ("[1.5, 1.5, 1.5]", "[1.5]"),
                          ("[-1.1, -1.1, -1.1]", "[-1.1]"), ("[1.6, 1.6, 1.6]", "[1.6]"),
                          ("[-1.2, -1.2, -1.2]", "[-1.2]"), ("[1.7, 1.7, 1.7]", "[1.7]")])
    with pytest.raises(SceneError, match="a random initial pose is for planar_axis joints, not revolute"):
        dojo.load_scene(str(file))


def test_default_pose_pair(tmp_path):
    j = load(tmp_path).joint("planar")
    j.set_default_pose_pair(([0.1, -0.3], 0.7))
    translation, theta = j.get_default_pose_pair()
    np.testing.assert_array_equal(translation, [0.1, -0.3])
    assert theta == 0.7
    np.testing.assert_array_equal(j.get_default_pose()[0], translation)


def test_bodies_frames_and_one_coordinate_access():
    """Drake's parent_body/child_body/frame_on_parent/frame_on_child and GetOnePosition on the
    double pendulum: the frames put the child's joint point where the parent's is, which is
    the joint's constraint (X_WF = X_WP X_PF and X_WM = X_WC X_CM coincide in position)."""
    from dojo_cli.math.quaternion import rotate

    mech = dojo.load_scene("double_pendulum")
    traj = dojo.simulate(mech, steps=20)
    upper, lower = mech.joint(0), mech.joint(1)
    assert upper.parent_body() is None and upper.child_body() is lower.parent_body()
    assert lower.child_body().name == mech.bodies[mech.joints[1].child].name
    for k in (0, 20):
        x, q = traj.x[k], traj.q[k]
        parent, child = mech.joints[1].parent, mech.joints[1].child
        p_origin, _ = lower.frame_on_parent()
        c_origin, _ = lower.frame_on_child()
        at_parent = x[parent] + rotate(q[parent], p_origin)
        at_child = x[child] + rotate(q[child], c_origin)
        np.testing.assert_allclose(at_parent, at_child, atol=1e-6)  # the constraint, to the solver tolerance
    y = dojo.maximal_to_minimal(mech, traj.state(20))
    assert lower.get_one_position(y) == y[lower.position_start()]
    assert lower.get_one_velocity(y) == y[lower.velocity_start()]
    assert lower.can_rotate() and not lower.can_translate()
    assert lower.type_name == "revolute"


def test_one_position_needs_one_coordinate(tmp_path):
    mech = load(tmp_path)
    with pytest.raises(TypeError, match="exactly one"):
        mech.joint("planar").get_one_position(state(mech))


def test_accessors_refuse_other_joint_types():
    mech = dojo.load_scene("pendulum")
    j = mech.joint(0)
    y = state(mech)
    with pytest.raises(TypeError, match="planar_axis"):
        j.get_translation(y)
    with pytest.raises(ValueError, match="the state must be"):
        mech.joint(0).lock(np.zeros(5))


# ------------------------------------------------------------------------- URDF
URDF = """<?xml version="1.0"?>
<robot name="sled">
  <link name="world_link"/>
  <link name="sled">
    <inertial><origin xyz="0 0 0"/><mass value="2.0"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.2"/></inertial>
  </link>
  <joint name="base" type="planar">
    <parent link="world_link"/><child link="sled"/>
    <axis xyz="0 0 1"/>
    <dynamics damping="{damping}"/>
  </joint>
</robot>
"""


def urdf_mech(tmp_path, damping):
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict
    from dojo_cli.scene.urdf import read_urdf

    path = tmp_path / "sled.urdf"
    path.write_text(URDF.format(damping=damping))
    return build_mechanism(spec_from_dict(read_urdf(path).scene)), path


def test_urdf_planar_reads_three_damping_values(tmp_path):
    mech, _ = urdf_mech(tmp_path, "0.1 0.2 0.3")
    j = mech.joint("base")
    assert j.type_name == "planar"
    np.testing.assert_array_equal(j.default_damping(), [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(mech.joints[0].axis, [0, 0, 1])  # <axis> is the plane normal
    assert mech.state_names()[0] == ["base:x", "base:y", "base:qz"]
    mech, _ = urdf_mech(tmp_path, "0.4")  # one value: every DOF
    np.testing.assert_array_equal(mech.joint("base").default_damping(), [0.4, 0.4, 0.4])


def test_urdf_planar_damping_of_two_values_is_an_error(tmp_path):
    with pytest.raises(SceneError) as err:
        urdf_mech(tmp_path, "0.1 0.2")
    assert "sled.urdf:" in str(err.value) and "1 or 3 values (x, y, theta), got 2" in str(err.value)


# ----------------------------------------------------------- position limits enforced
def test_position_limits_enforced(tmp_path):
    """Drake enforces position limits in discrete mode; here the step's contact solver does:
    pushed toward x = 1.5 and theta = -1 at 2 m/s and 3 rad/s, the joint stays within them."""
    mech = load(tmp_path, extra="initial: {velocity: [2, 0.5, -3]}\n",
                replace=[("steps: 10", "steps: 150"), ("damper: [3, 3, 3]", "damper: [0, 0, 0]")])
    traj = dojo.simulate(mech)
    q = traj.minimal_q
    assert q[:, 0].max() <= 1.5 + 1e-6 and q[:, 2].min() >= -1 - 1e-6
    assert q[:, 0].max() > 1.45 and q[:, 2].min() < -0.95  # it reached them
    v = traj.minimal_v
    assert v[-1, 0] < 0 and v[-1, 2] > 0  # and was turned back (the limits' restitution)
    assert q[-1, 1] == pytest.approx(0.5 * traj.time[-1], rel=1e-4)  # y is free: 0.5 m/s throughout


def test_negative_damping_is_an_error(tmp_path):
    """Drake's constructor throws on a negative damping entry; a scene names the entry."""
    file = write(tmp_path, replace=[("damper: [3, 3, 3]", "damper: [3, -1, 3]")])
    with pytest.raises(SceneError) as err:
        dojo.load_scene(str(file))
    assert f"{file}:" in str(err.value) and "joints.0.damper.1" in str(err.value), str(err.value)
