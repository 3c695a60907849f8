"""Convex hulls against other bodies in a step (dojo_cli/model/collisions.py's hull pairs over
the core's ``hull`` kind): a hull cube resting on a box and a hull resting on a hull hold
it with the weight's impulse and no deeper than the solver's tolerance, a hull dropped on a
hull comes to MuJoCo's rest pose (the same MJCF, its mesh files written here), and a step's
gradients through a hull-hull contact match finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict

# A resting contact's relaxed complementarity keeps it ~ btol / impulse apart (docs/physics.md,
# "Contacts"); 1e-6 makes that micrometres (tests/properties/test_box_stacks.py's choice).
BTOL = 1e-6
PENETRATION_TOL = 1e-6  # m: the equality residual (rtol 1e-6) allows this order
GRAVITY = 9.81
H = 0.01
CUBE = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float) * 0.1  # a 0.2 m cube


def _prism(sides: int, radius: float, half_height: float) -> np.ndarray:
    """A regular prism's vertices, its axis along z."""
    angles = 2.0 * np.pi * np.arange(sides) / sides
    ring = np.column_stack([radius * np.cos(angles), radius * np.sin(angles)])
    return np.vstack([np.column_stack([ring, np.full(sides, z)]) for z in (-half_height, half_height)])


def _on_a_table(table: dict, top: float, hull, height: float, mass: float = 1.0, steps: int = 60):
    """A body whose contact shape is the hull ``hull`` (vertices; or a shape mapping), its
    inertia a box's about the hull's extent, dropped from 1 mm above a table fixed to the world
    (``table``: the contact's ``against`` shape, its top at ``top``): the mechanism and its run."""
    shape = hull if isinstance(hull, dict) else {"type": "hull", "vertices": hull.tolist()}
    size = (hull.max(axis=0) - hull.min(axis=0)).tolist() if shape["type"] == "hull" else [0.1, 0.1, 0.1]
    scene = {"name": "rest", "timestep": H, "solver": {"btol": BTOL},
             "bodies": [{"name": "table", "mass": 10.0, "shape": {"type": "box", "size": [1.0, 1.0, 0.2]}},
                        {"name": "object", "mass": mass, "shape": {"type": "box", "size": size},
                         "initial": {"position": [0.01, -0.02, top + height + 1e-3]}}],
             "joints": [{"name": "held", "type": "fixed", "parent": "origin", "child": "table"},
                        {"name": "free", "type": "floating", "parent": "origin", "child": "object"}],
             "contacts": [{"name": "rest", "body": "object", "shape": shape,
                           "against": {"body": "table", **table}, "friction": 0.5}]}
    mech = build_mechanism(spec_from_dict(scene))
    return mech, dojo.simulate(mech, steps=steps)


def _assert_resting(mech, traj, height: float, mass: float, what: str) -> None:
    assert set(traj.status) == {"success"}, f"{what}: failed steps {sum(s != 'success' for s in traj.status)}"
    assert abs(traj.x[-1, 1, 2] - height) < 1e-5, f"{what}: rests at {traj.x[-1, 1, 2]:.7f} m, not {height} m"
    assert np.abs(traj.v[-1, 1]).max() < 1e-5, f"{what}: still moving {traj.v[-1, 1]}"
    assert traj.contact_distance[-1].min() > -PENETRATION_TOL, f"{what}: {traj.contact_distance[-1].min():.2e} m deep"
    total = traj.contact_normal_impulse[-1].sum()
    assert total == pytest.approx(mass * GRAVITY * H, rel=1e-4), f"{what}: impulses sum to {total}, m g h {mass * GRAVITY * H}"


def test_a_hull_cube_rests_on_a_box():
    """A hull cube on a box table: the table's corners against the hull and the hull's 8
    vertices against the box (8 + 8 contacts)."""
    mech, traj = _on_a_table({"shape": "box", "size": [1.0, 1.0, 0.2]}, 0.1, CUBE, 0.1)
    assert [c.kind for c in mech.contacts].count("hull") == 8 and [c.kind for c in mech.contacts].count("box") == 8
    _assert_resting(mech, traj, 0.2, 1.0, "hull cube on a box")


def test_a_hull_rests_on_a_hull():
    """A hexagonal prism (a hull) on a hull slab: each hull's vertices against the other
    (12 + 8 contacts), the slab's own corners far outside the prism's."""
    slab = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float) * [0.5, 0.5, 0.1]
    mech, traj = _on_a_table({"shape": "hull", "vertices": slab.tolist()}, 0.1, _prism(6, 0.15, 0.05), 0.05, mass=0.7)
    assert mech.nc == 12 + 8 and {c.kind for c in mech.contacts} == {"hull"}
    _assert_resting(mech, traj, 0.15, 0.7, "prism on a hull slab")


def test_a_cylinder_stands_on_a_hull():
    """A cylinder on its end on a hull slab: its rims' 8 fixed points each against the hull, the
    slab's 8 vertices against the cylinder kind (16 + 8 contacts)."""
    slab = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float) * [0.5, 0.5, 0.1]
    cylinder = {"type": "cylinder", "radius": 0.05, "height": 0.12}
    mech, traj = _on_a_table({"shape": "hull", "vertices": slab.tolist()}, 0.1, cylinder, 0.06, mass=0.4)
    assert [c.kind for c in mech.contacts] == ["hull"] * 16 + ["cylinder"] * 8
    _assert_resting(mech, traj, 0.16, 0.4, "cylinder on a hull slab")


@pytest.mark.parametrize("turned", [False, True])
def test_a_cylinder_stands_on_a_box(turned):
    """A cylinder on its end on a box table (the box as a hull: the rims' 8 fixed points each
    against the box kind, the box's corners against the cylinder kind, 16 + 8 contacts); the
    table turned by 0.3 rad about z in its body frame, which the box kind cannot carry: its own
    hull instead (Meta-World's mug, block_cyl and peg_insert fell through their table box)."""
    turn = [float(np.cos(0.15)), 0.0, 0.0, float(np.sin(0.15))] if turned else [1.0, 0.0, 0.0, 0.0]
    table = {"shape": "box", "size": [1.0, 1.0, 0.2], "orientation_offset": turn}
    cylinder = {"type": "cylinder", "radius": 0.05, "height": 0.12}
    mech, traj = _on_a_table(table, 0.1, cylinder, 0.06, mass=0.4)
    assert [c.kind for c in mech.contacts] == (["hull"] if turned else ["box"]) * 16 + ["cylinder"] * 8
    _assert_resting(mech, traj, 0.16, 0.4, f"cylinder on a {'turned ' if turned else ''}box")


def test_a_turned_box_rests_on_a_box():
    """A box turned 0.3 rad about z in its body frame (the table's box and corner_box take only
    quarter turns), dropped on a box table: it pairs as its own hull (the table's corners against
    it, its corners against the table's box, 8 + 8) and rests on its face (Meta-World's peg,
    turned 1.57 rad, fell through its table)."""
    turn = [float(np.cos(0.15)), 0.0, 0.0, float(np.sin(0.15))]
    block = {"type": "box", "size": [0.2, 0.1, 0.06], "orientation_offset": turn}
    mech, traj = _on_a_table({"shape": "box", "size": [1.0, 1.0, 0.2]}, 0.1, block, 0.03, mass=0.3)
    assert [c.kind for c in mech.contacts] == ["hull"] * 8 + ["box"] * 8
    _assert_resting(mech, traj, 0.13, 0.3, "turned box on a box")


def test_step_gradients_through_hull_hull_contacts():
    """A prism resting on a hull slab, then sliding (a midpoint velocity along the slab): A and B of
    a step against four-point differences, relaxed (kappa) and, at rest, as solved (a sliding
    contact's hard step is not smooth at the cone's boundary: its differences do not converge,
    tests/simulation/test_gradients.py)."""
    from tests.simulation.test_gradients import KAPPA, TIGHT, TOL, check_state_and_input

    slab = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float) * [0.5, 0.5, 0.1]
    mech, traj = _on_a_table({"shape": "hull", "vertices": slab.tolist()}, 0.1, _prism(6, 0.15, 0.05), 0.05, mass=0.7,
                             steps=30)
    z = traj.state(-1).reshape(mech.nb, 13).copy()
    for velocity in ((0.0, 0.0, 0.0), (0.3, 0.1, 0.0)):
        z[1, 3:6] = velocity
        for kappa in (KAPPA, None) if not any(velocity) else (KAPPA,):
            err = check_state_and_input(mech, z.ravel(), None, kappa, directions=2)
            assert err < TOL, f"velocity {velocity} kappa {kappa}: relative error {err:.2e}"


def test_a_hull_dropped_on_a_hull_rests_where_mujocos_does(tmp_path):
    """The same MJCF in MuJoCo and imported (its two meshes, STL files written here): a tilted
    hexagonal prism (a mesh on a free body) dropped 3 cm onto a mesh slab fixed to the world
    lands on an edge, tips onto its face and rests where MuJoCo's does (centre of mass within
    MuJoCo's soft-contact settling, a few mm; upright)."""
    import mujoco
    import trimesh
    from scipy.spatial import ConvexHull

    from dojo_cli.scene.mjcf import MjcfOptions, read_mjcf

    for name, points in (("prism", _prism(6, 0.15, 0.05)),
                         ("slab", np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
                          * [0.5, 0.5, 0.1])):
        hull = ConvexHull(points)  # its triangles turned outward (qhull's equations give the side)
        faces = np.array([f if np.cross(*(points[f[1:]] - points[f[0]])) @ e[:3] > 0 else f[::-1]
                          for f, e in zip(hull.simplices, hull.equations)])
        trimesh.Trimesh(points, faces, process=False).export(tmp_path / f"{name}.stl")
    path = tmp_path / "drop.xml"
    path.write_text("""<mujoco><option timestep="0.005"/>
  <asset><mesh name="prism" file="prism.stl"/><mesh name="slab" file="slab.stl"/></asset>
  <worldbody><geom type="mesh" mesh="slab" pos="0 0 0.1"/>
    <body name="prism" pos="0.02 0.01 0.3" euler="10 4 0"><freejoint/><geom type="mesh" mesh="prism" density="500"/></body>
  </worldbody></mujoco>""")
    seconds = 1.0
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_step(m, d, nstep=int(round(seconds / m.opt.timestep)))
    result = read_mjcf(path, MjcfOptions())
    mech = build_mechanism(spec_from_dict(result.scene, file=str(path)))
    traj = dojo.simulate(mech, steps=int(round(seconds / mech.timestep)))
    assert set(traj.status) == {"success"}, f"failed steps {sum(s != 'success' for s in traj.status)}"
    k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "prism")
    body = [b.name for b in mech.bodies].index("prism")
    assert abs(d.xipos[k][2] - 0.25) < 3e-3, f"MuJoCo's prism rests at {d.xipos[k][2]:.4f} m: not on its face"
    assert abs(traj.x[-1, body, 2] - d.xipos[k][2]) < 1e-3, f"rests at {traj.x[-1, body, 2]:.4f} m, MuJoCo {d.xipos[k][2]:.4f} m"
    assert np.abs(traj.x[-1, body, :2] - d.xipos[k][:2]).max() < 5e-3, "slid elsewhere than MuJoCo's"


def test_import_mjcf_pairs_meshes_across_trees_only(tmp_path):
    """A mesh on an arm (two hinged links, the second's mesh able to meet the base's) and a free
    mesh object: the object's pairs with the arm's shapes are hull pairs (each hull's vertices
    against the other); the arm's own pairs with its base's mesh are refused at the geom's line
    (a robot's own mesh pairs would multiply the contacts) and left out with --drop-unsupported."""
    import trimesh

    from dojo_cli.errors import SceneError
    from dojo_cli.scene.mjcf import MjcfOptions, read_mjcf

    trimesh.creation.box(extents=[0.1, 0.1, 0.1]).export(tmp_path / "cube.stl")
    path = tmp_path / "arm.xml"
    path.write_text("""<mujoco>
  <asset><mesh name="cube" file="cube.stl"/></asset>
  <worldbody>
    <body name="base" pos="0 0 0.5"><geom type="mesh" mesh="cube"/>
      <body name="link1" pos="0.2 0 0"><joint type="hinge" axis="0 0 1"/><geom type="capsule" size="0.02" fromto="0 0 0 0.2 0 0"/>
        <body name="link2" pos="0.2 0 0"><joint type="hinge" axis="0 0 1"/><geom type="mesh" mesh="cube"/></body>
      </body>
    </body>
    <body name="object" pos="0 0 1"><freejoint/><geom type="mesh" mesh="cube"/></body>
  </worldbody>
</mujoco>""")
    with pytest.raises(SceneError) as err:
        read_mjcf(path, MjcfOptions(), path.name)
    problems = [str(p) for p in err.value.problems]
    assert [p.split(" of its own kinematic tree")[0] for p in problems] == [
        "arm.xml:4: geom 'base_geom0': collides with geom 'link1_geom0' (mesh-capsule)",  # the base is the tree's top
        "arm.xml:4: geom 'base_geom0': collides with geom 'link2_geom0' (mesh-mesh)"], problems
    result = read_mjcf(path, MjcfOptions(drop_unsupported=True), path.name)
    assert any("hull pairs within one kinematic tree left out (--drop-unsupported), 2 at arm.xml:4" in w
               for w in result.warnings), result.warnings
    pairs = {(c["body"], c["against"]["body"]): c["against"]["shape"] for c in result.scene["contacts"]
             if isinstance(c["against"], dict) and "body" in c["against"]}
    assert pairs == {("base", "object"): "hull", ("link1", "object"): "hull", ("link2", "object"): "hull"}, pairs
    mech = build_mechanism(spec_from_dict(result.scene, file=str(path)))
    kinds = {c.kind for c in mech.contacts if c.other >= 0}
    assert kinds == {"hull", "capsule"}, kinds  # the capsule's end spheres against the hull, its vertices against it


def test_import_mjcf_leaves_out_hull_pairs_between_two_arms_mounted_on_the_world(tmp_path):
    """Two arms mounted on the world (their top bodies have no joint: gym-aloha's bimanual rig,
    whose arm-arm hull pairs were 4736 of its 6224 contacts, with failed steps) are one machine
    for the tree rule: their links' hull pairs are left out with --drop-unsupported, while each
    arm's links keep their pairs with the static table's mesh and with a free object."""
    import trimesh

    from dojo_cli.scene.mjcf import MjcfOptions, read_mjcf

    trimesh.creation.box(extents=[0.1, 0.1, 0.1]).export(tmp_path / "cube.stl")
    trimesh.creation.box(extents=[2.0, 2.0, 0.1]).export(tmp_path / "slab.stl")
    arm = """<body name="{s}_base" pos="{x} 0 0.3">
      <body name="{s}_link" pos="0 0 0.1"><joint type="hinge" axis="0 0 1"/><geom type="mesh" mesh="cube"/></body>
    </body>"""
    path = tmp_path / "rig.xml"
    path.write_text(f"""<mujoco>
  <asset><mesh name="cube" file="cube.stl"/><mesh name="slab" file="slab.stl"/></asset>
  <worldbody>
    <body name="table" pos="0 0 0"><geom type="mesh" mesh="slab"/></body>
    {arm.format(s="left", x=-0.15)}
    {arm.format(s="right", x=0.15)}
    <body name="object" pos="0 0.5 0.2"><freejoint/><geom type="mesh" mesh="cube"/></body>
  </worldbody>
</mujoco>""")
    result = read_mjcf(path, MjcfOptions(drop_unsupported=True), path.name)
    assert any("hull pairs within one kinematic tree left out (--drop-unsupported), 1 at rig.xml:" in w
               for w in result.warnings), result.warnings
    pairs = {frozenset((c["body"], c["against"]["body"])) for c in result.scene["contacts"]
             if isinstance(c["against"], dict) and "body" in c["against"]}
    assert frozenset(("left_link", "right_link")) not in pairs, pairs
    assert {frozenset(("left_link", "object")), frozenset(("right_link", "object")), frozenset(("left_link", "table")),
            frozenset(("right_link", "table")), frozenset(("object", "table"))} <= pairs, pairs
