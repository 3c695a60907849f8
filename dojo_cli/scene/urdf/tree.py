"""Links into bodies: the joint tree checked (one parent each, one root, no loop), links
joined by fixed joints merged into one body (always when massless; all with
``merge_fixed``), massless roots, leaves and subtrees dropped or merged, chains of revolute
joints through massless links recognised as one universal or gimbal joint, and each body's
mass, centre of mass and inertia by the parallel-axis rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dojo_cli.scene.importing.mass import combine
from dojo_cli.scene.importing.messages import listed
from dojo_cli.scene.urdf.inertia import MASSLESS, _positive_definite
from dojo_cli.scene.urdf.elements import _Joint, _Link
from dojo_cli.scene.urdf.reader import _Reader


# A planar joint's normal must be kept by its origin's rotation to this (rad).
AXIS_TOL = 1e-9


@dataclass
class _Group:
    """Links rigidly joined into one body."""

    reference: str  # the top link: its frame orientation is the body's
    links: dict[str, np.ndarray] = field(default_factory=dict)  # link -> (4,4) pose in the reference link frame
    name: str = ""
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))  # in the reference link frame
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))


def _tree(reader: _Reader, links: dict[str, _Link], joints: list[_Joint]) -> dict[str, _Joint]:
    """child link -> its joint; checks one parent per link, one root, no loop."""
    child_joint: dict[str, _Joint] = {}
    for joint in joints:
        if joint.child in child_joint:
            first = child_joint[joint.child]
            reader.problem(joint.line, f"joint {joint.name!r}", f"link {joint.child!r} already has a parent joint ({first.name!r}); URDF is a tree")
            continue
        if joint.child == joint.parent:
            reader.problem(joint.line, f"joint {joint.name!r}", "parent and child are the same link")
            continue
        child_joint[joint.child] = joint
    if reader.problems:
        return child_joint
    roots = [name for name in links if name not in child_joint]
    if len(roots) != 1:
        if not roots:
            reader.problem(None, "robot", "every link has a parent joint: the joints form a loop")
        else:
            line = links[roots[1]].line
            reader.problem(line, "robot", f"more than one root link ({listed(roots)}); a URDF has one")
        return child_joint
    for name in links:
        seen = []
        while name in child_joint and name not in seen:
            seen.append(name)
            name = child_joint[name].parent
        if name in seen:
            reader.problem(child_joint[name].line, f"joint {child_joint[name].name!r}", "is part of a loop of joints")
            break
    return child_joint


def _children(joints: list[_Joint]) -> dict[str, list[_Joint]]:
    out: dict[str, list[_Joint]] = {}
    for joint in joints:
        out.setdefault(joint.parent, []).append(joint)
    return out


def _group_links(reader, links, joints, child_joint, root, result):
    """Links -> bodies: which fixed joints merge, and the world-fixed links.

    Returns:
        groups (root to leaves), body_of (link -> group index, or -1 for the world),
        world_links (link -> (4, 4) pose in the world, for a dropped root).
    """
    children = _children(joints)
    root_link = links[root]
    world_links: dict[str, np.ndarray] = {}
    body_of: dict[str, int] = {}
    groups: list[_Group] = []
    options = reader.options

    # The root: a massless (or non-positive-definite) root cannot be a body. With a
    # floating base, or a single fixed child, it merges into the body below it; with a
    # fixed base it is the world itself (dropped), and its children hang from origin.
    root_usable = root_link.mass > MASSLESS and _positive_definite(root_link.inertia)
    drop_root = False
    root_fixed: set[str] = set()  # links merged into a massless root's body (its fixed subtree)
    if not root_usable:
        fixed_children = [j for j in children.get(root, []) if j.type == "fixed"]
        reason = "no mass" if root_link.mass <= MASSLESS else "an inertia that is not positive definite"
        if options.floating or (len(children.get(root, [])) == 1 and fixed_children):
            movable = [j for j in children.get(root, []) if j.type != "fixed"]
            if movable or not fixed_children:
                root_fixed = _massive_root_group(reader, root, children, links, movable, reason)
                if root_fixed is None:
                    # Bullet (and Gazebo's "world" link) read a base of mass 0 as static: the
                    # root is fixed to the world whatever --floating says (a massless body
                    # cannot float), and its joints hang from it (kuka_iiwa/model.urdf, cartpole)
                    drop_root, root_fixed = True, set()
                    reader.note(root_link.line, f"link {root!r}", f"the root link has {reason} and no link fixed to it has "
                                "mass: it is fixed to the world, not floating (Bullet reads a base of mass 0 as static), "
                                f"and its joints {listed([j.name for j in movable])} hang from the world")
                    result.dropped.append(root)
            else:
                reader.warn(root_link.line, f"link {root!r}", f"the root link has {reason}; merged into {fixed_children[0].child!r}")
        else:
            drop_root = True
            reader.warn(root_link.line, f"link {root!r}", f"the root link has {reason}; dropped (it is the world frame)")
            result.dropped.append(root)

    def merges(joint: _Joint) -> bool:
        child = links[joint.child]
        if joint.type != "fixed":
            return False
        massless = child.mass <= MASSLESS
        if options.merge_fixed or massless:
            return True
        if not _positive_definite(child.inertia):
            reader.warn(child.line, f"link {child.name!r}", "inertia is not positive definite; merged into its parent")
            return True
        # a massless root takes the links fixed to it in (its fixed subtree)
        return joint.child in root_fixed or (joint.parent == root and not root_usable and not drop_root)

    # walk root to leaves
    order: list[str] = [root]
    for name in order:
        order += [j.child for j in children.get(name, [])]
    for name in order:
        if name == root:
            if drop_root:
                world_links[root] = np.eye(4)
                body_of[root] = -1
            else:
                groups.append(_Group(reference=root, links={root: np.eye(4)}))
                body_of[root] = 0
            continue
        joint = child_joint[name]
        if body_of.get(name) in (-2, -3):
            continue  # part of a massless subtree dropped above, or a frame inside a multi-axis joint
        if joint.parent not in body_of:
            # its parent was refused (a problem already says why): nothing to hang it from
            continue
        parent_group = body_of[joint.parent]
        if parent_group == -1 and joint.type == "fixed":
            world_links[name] = world_links[joint.parent] @ joint.origin
            body_of[name] = -1
            # a fixed joint to the world: the link is part of the world unless it has mass
            if links[name].mass > MASSLESS:
                del world_links[name]
                groups.append(_Group(reference=name, links={name: np.eye(4)}))
                body_of[name] = len(groups) - 1
            continue
        if parent_group != -1 and merges(joint):
            group = groups[parent_group]
            group.links[name] = group.links[joint.parent] @ joint.origin
            body_of[name] = parent_group
            result.merged.append(joint.name)
            continue
        if links[name].mass <= MASSLESS or not _positive_definite(links[name].inertia):
            # a massless link on a movable joint: fine as a leaf frame (dropped), not as a carrier
            if not children.get(name) and links[name].mass <= MASSLESS:
                reader.warn(links[name].line, f"link {name!r}", f"has no mass and moves on joint {joint.name!r}; dropped with the joint")
                result.dropped.append(name)
                body_of[name] = -2
                continue
            subtree = _massless_subtree(name, children, links)
            if subtree is not None:
                _drop_massless_subtree(reader, links, child_joint, subtree, result, body_of)
                continue
            if links[name].mass <= MASSLESS:
                chain = _massless_chain(name, joint, children, links)
                axes, why = _multi_axis_chain(name, joint, children, links)
                if axes is not None:
                    # one universal or gimbal joint from the chain's parent onto its end link
                    for inner in axes[:-1]:
                        body_of[inner.child] = -3
                        result.dropped.append(inner.child)
                    reader.axes_chains[axes[-1].child] = axes
                    continue
                reader.problem(links[name].line, f"link {name!r}", f"has no mass but moves on joint {joint.name!r} and carries links; "
                               f"give it an <inertial> (the joints {', '.join(chain)} through massless links are not "
                               f"one universal or gimbal joint: {why})")
                continue
        groups.append(_Group(reference=name, links={name: np.eye(4)}))
        body_of[name] = len(groups) - 1

    for group in groups:
        _mass_properties(group, links)
        if group.mass <= MASSLESS:
            reader.problem(links[group.reference].line, f"link {group.reference!r}", "has no mass (nor do the links merged into it)")
    return groups, body_of, world_links


def _massive_root_group(reader, root: str, children: dict[str, list[_Joint]], links: dict[str, _Link],
                        movable: list[_Joint], reason: str) -> set[str] | None:
    """The links fixed to a massless root that carries movable joints (its subtree through
    fixed joints, the root included), merged into one body with a note; None (and a
    problem) when together they have no mass.

    URDF files often give the floating base to a frame without mass ("base") with the
    trunk's mass on a link fixed below it (anymal's base -> base_inertia) and the legs on
    the frame itself: merged, the group is one body whose tree frame is the root's frame,
    where Pinocchio puts its free flyer, and the legs hang from it.
    """
    group = {root}
    stack = [root]
    while stack:
        for joint in children.get(stack.pop(), []):
            if joint.type == "fixed":
                group.add(joint.child)
                stack.append(joint.child)
    line = links[root].line
    if sum(links[name].mass for name in group) <= MASSLESS:
        return None
    reader.note(line, f"link {root!r}", f"the root link has {reason}; merged with the links fixed to it "
                f"({listed(sorted(group - {root}))}) into one body, the floating base, which carries its joints "
                f"{listed([j.name for j in movable])}")
    return group


def _massless_subtree(name: str, children: dict[str, list[_Joint]], links: dict[str, _Link]) -> list[str] | None:
    """``name`` and every link below it, root to leaves, if none of them has mass; else None.

    A massless subtree on movable joints (romeo's fingers: three massless links each) moves
    nothing: it is frames, not bodies, and is dropped with its joints as a massless leaf is
    (Pinocchio keeps those joints with a singular mass matrix, M q'' = tau has no unique q'').
    """
    order = [name]
    for link in order:
        order += [j.child for j in children.get(link, [])]
    if any(links[link].mass > MASSLESS for link in order):
        return None
    return order


def _massless_chain(name: str, joint: _Joint, children: dict[str, list[_Joint]], links: dict[str, _Link]) -> list[str]:
    """The joints from ``joint`` (onto the massless link ``name``) down through massless links
    with one child each, to the first link with mass or a branch: a multi-axis joint as URDF
    writes it (human.urdf's hip: left_hip_Z, left_hip_X, left_hip_Y)."""
    chain = [joint.name]
    while links[name].mass <= MASSLESS and len(children.get(name, [])) == 1:
        below = children[name][0]
        chain.append(below.name)
        name = below.child
    return chain


def _multi_axis_chain(name: str, joint: _Joint, children: dict[str, list[_Joint]],
                      links: dict[str, _Link]) -> tuple[list[_Joint] | None, str]:
    """The joints of a universal (2) or gimbal (3) joint written as a chain from ``joint``
    (onto the massless link ``name``) through massless links with one child each onto a
    link with mass; (None, why not) when the chain is not one: its joints must be revolute
    (or continuous), all through one point (no translation in the later origins) and their
    axes mutually orthogonal (core/maximal/euler_joints.h)."""
    chain = [joint]
    while links[name].mass <= MASSLESS:
        below = children.get(name, [])
        if len(below) != 1:
            return None, f"link {name!r} has {len(below)} children"
        chain.append(below[0])
        name = below[0].child
    if len(chain) not in (2, 3):
        return None, f"{len(chain)} joints (a universal joint has 2 axes, a gimbal 3)"
    bad = [j.name for j in chain if j.type not in ("revolute", "continuous")]
    if bad:
        return None, f"{', '.join(bad)} not revolute"
    moved = [j.name for j in chain[1:] if np.linalg.norm(j.origin[:3, 3]) > AXIS_TOL]
    if moved:
        return None, f"the origins of {', '.join(moved)} are not at the previous joint's (not through one point)"
    axes = _chain_axes(chain)
    if np.max(np.abs(axes @ axes.T - np.eye(len(chain)))) > AXIS_TOL:
        return None, "their axes are not mutually orthogonal"
    return chain, ""


def _chain_axes(chain: list[_Joint]) -> np.ndarray:
    """(k, 3) the chain's axes in its last joint's frame: O1 R(a1, t1) O2 R(a2, t2) ... =
    O1 O2 ... R(a1', t1) R(a2', t2) ..., a_i' = (O_{i+1} ... O_k)^T a_i (the O's rotations)."""
    out = []
    for i, j in enumerate(chain):
        after = np.eye(3)
        for k in chain[i + 1:]:
            after = after @ k.origin[:3, :3]
        out.append(after.T @ j.axis)
    return np.array(out)


def _drop_massless_subtree(reader, links, child_joint, subtree: list[str], result, body_of) -> None:
    """Drop a massless subtree (``_massless_subtree``) with its joints; one note naming them."""
    for link in subtree:
        body_of[link] = -2
        result.dropped.append(link)
    joints = [child_joint[link].name for link in subtree]
    reader.note(links[subtree[0]].line, f"link {subtree[0]!r}",
                f"it and the {len(subtree) - 1} links below it have no mass; dropped with their joints ({listed(joints)})")


def _mass_properties(group: _Group, links: dict[str, _Link]) -> None:
    """Mass, centre of mass and central inertia of a group, in its reference frame.

    Parallel-axis rule (dojo_cli.scene.importing.mass): I = sum_i R_i I_i R_i^T + m_i (|r_i|^2 1
    - r_i r_i^T), r_i the link's centre of mass relative to the group's.
    """
    heaviest = max(group.links, key=lambda name: (links[name].mass, name == group.reference))
    # a massless reference (a frame above the body) gives its name up to the heaviest link
    group.name = group.reference if links[group.reference].mass > MASSLESS else heaviest
    items = []
    for name, pose in group.links.items():
        rot = pose[:3, :3]
        items.append((links[name].mass, rot @ links[name].com + pose[:3, 3], rot @ links[name].inertia @ rot.T))
    group.mass, com, inertia = combine(items)
    if group.mass <= 0:
        return
    group.com = com
    group.inertia = 0.5 * (inertia + inertia.T)
