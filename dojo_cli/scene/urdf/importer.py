"""``read_urdf``: a URDF file into scene data, its stages in order (read, tree, bodies,
joints, initial pose, contacts, a floating base elsewhere than the root).
"""

from __future__ import annotations

import os
from pathlib import Path


from dojo_cli.errors import Problem, SceneError
from dojo_cli.scene.importing.messages import listed
from dojo_cli.scene.urdf.bodies import _body
from dojo_cli.scene.urdf.contacts import _contacts
from dojo_cli.scene.urdf.inertia import MASSLESS
from dojo_cli.scene.urdf.initial_pose import _lift_world_root, _stand_on_ground, _start_inside_limits, _turn_upright
from dojo_cli.scene.urdf.joints import _scene_joints
from dojo_cli.scene.urdf.options import DEFAULT_TIMESTEP, UrdfImport, UrdfOptions
from dojo_cli.scene.urdf.reader import _Reader
from dojo_cli.scene.urdf.transforms import _translation
from dojo_cli.scene.urdf.tree import _group_links, _tree


def read_urdf(path: str | os.PathLike, options: UrdfOptions | None = None, shown: str | None = None) -> UrdfImport:
    """Read a URDF file into scene data.

    Args:
        path: the URDF file.
        options: import options (defaults: fixed base, no contacts, keep fixed joints).
        shown: the file's name in problems and warnings (default: the path as given).

    Returns:
        The scene data with the warnings found.

    Raises:
        SceneError: the file cannot be read or is not a usable URDF; one problem per
            issue, each ``file:line: element: message``.
    """
    options = options or UrdfOptions()
    path = Path(path)
    reader = _Reader(path, shown or str(path), options)
    robot_name, links, joints = reader.read()
    child_joint = _tree(reader, links, joints)
    reader.fail_if_problems()
    roots = [name for name in links if name not in child_joint]
    root = roots[0]
    if all(link.mass <= MASSLESS for link in links.values()):
        # plane.urdf, table.urdf, tray.urdf: Bullet loads them as static objects (a base of mass 0
        # is fixed to the world); with nothing that moves there is nothing to simulate
        reader.problem(links[root].line, "robot", f"no link has mass ({listed(list(links))}): the file describes static "
                       "scenery (Bullet reads a base of mass 0 as fixed to the world), nothing that moves; a scene's static "
                       "ground is its 'ground:' half-space (docs/scenes.md)")
        reader.fail_if_problems()
    result = UrdfImport(scene={})
    groups, body_of, world_links = _group_links(reader, links, joints, child_joint, root, result)
    reader.fail_if_problems()
    floating = (options.floating or bool(options.floating_base)) and body_of.get(root) == 0

    bodies = []
    for group in groups:
        bodies.append(_body(reader, group, links, options))
        for link, pose in group.links.items():
            body_pose = _translation(-group.com) @ pose
            result.link_bodies[link] = (group.name, body_pose)
    scene_joints = _scene_joints(reader, links, joints, groups, body_of, world_links, root, options, result)
    reader.fail_if_problems()
    result.scene_joints = scene_joints
    reader.report_unmodelled()
    result.moved_into_range = _start_inside_limits(reader, scene_joints)
    if options.floating and not options.floating_base:
        _turn_upright(reader, result)
    contacts = _contacts(reader, links, groups, result, options)

    scene = {
        "name": robot_name,
        "description": f"imported from {path.name}" + (" (floating base)" if floating else ""),
        "timestep": DEFAULT_TIMESTEP,
        "bodies": bodies,
        "joints": scene_joints,
        "contacts": contacts,
    }
    if floating and contacts:
        _stand_on_ground(scene, result)
    elif options.floating and root in result.dropped and contacts:
        _lift_world_root(reader, scene, result, root, links[root].line)
    if options.floating_base:
        scene = _refloat(reader, scene, result, options.floating_base)
    result.scene = scene
    result.warnings = reader.warnings
    return result


def _refloat(reader: _Reader, scene: dict, result: UrdfImport, link: str) -> dict:
    """The scene re-rooted at ``link``'s body (dojo_cli.scene.floating_base)."""
    from dojo_cli.scene.floating_base import set_floating_base

    if link not in result.link_bodies:
        known = listed(sorted(result.link_bodies))
        raise SceneError(Problem(reader.file, None, "floating_base", f"no link {link!r} in the robot (links that are bodies' parts: {known})"))
    try:
        scene = set_floating_base(scene, result.link_bodies[link][0])
    except SceneError as exc:
        raise SceneError([Problem(reader.file, None, "floating_base", p.message) for p in exc.problems]) from None
    result.scene_joints = scene["joints"]
    return scene
