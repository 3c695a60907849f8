"""An independent reading of URDF files for the import tests: plain numpy over ElementTree.

Nothing here comes from dojo_cli or yourdfpy: origins are composed as
``Rz(yaw) Ry(pitch) Rx(roll)`` (URDF's fixed-axis roll, pitch, yaw), inertias are
rotated by their inertial origin, and forward kinematics multiplies joint origins
and joint motions from the root down.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np


def _floats(text: str | None, default: str) -> np.ndarray:
    return np.array([float(v) for v in (text or default).split()])


def rotation_from_rpy(rpy: np.ndarray) -> np.ndarray:
    r, p, y = rpy
    rx = np.array([[1, 0, 0], [0, np.cos(r), -np.sin(r)], [0, np.sin(r), np.cos(r)]])
    ry = np.array([[np.cos(p), 0, np.sin(p)], [0, 1, 0], [-np.sin(p), 0, np.cos(p)]])
    rz = np.array([[np.cos(y), -np.sin(y), 0], [np.sin(y), np.cos(y), 0], [0, 0, 1]])
    return rz @ ry @ rx


def rotation_about(axis: np.ndarray, angle: float) -> np.ndarray:
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def transform(element) -> np.ndarray:
    out = np.eye(4)
    if element is not None:
        out[:3, :3] = rotation_from_rpy(_floats(element.get("rpy"), "0 0 0"))
        out[:3, 3] = _floats(element.get("xyz"), "0 0 0")
    return out


@dataclass
class RefLink:
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))  # link frame
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))  # about the COM, link frame


@dataclass
class RefJoint:
    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    lower: float | None
    upper: float | None
    effort: float | None
    velocity: float | None
    damping: float


def read(path) -> tuple[dict[str, RefLink], list[RefJoint]]:
    root = ET.parse(path).getroot()
    links = {}
    for el in root.findall("link"):
        link = RefLink()
        inertial = el.find("inertial")
        if inertial is not None:
            link.mass = float(inertial.find("mass").get("value"))
            origin = transform(inertial.find("origin"))
            link.com = origin[:3, 3]
            i = inertial.find("inertia")
            g = {k: float(i.get(k, "0")) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
            tensor = np.array([[g["ixx"], g["ixy"], g["ixz"]], [g["ixy"], g["iyy"], g["iyz"]], [g["ixz"], g["iyz"], g["izz"]]])
            link.inertia = origin[:3, :3] @ tensor @ origin[:3, :3].T
        links[el.get("name")] = link
    joints = []
    for el in root.findall("joint"):
        limit = el.find("limit")
        dynamics = el.find("dynamics")
        get = (lambda key: float(limit.get(key)) if limit is not None and limit.get(key) is not None else None)
        axis = el.find("axis")
        joints.append(RefJoint(
            el.get("name"), el.get("type"), el.find("parent").get("link"), el.find("child").get("link"),
            transform(el.find("origin")), _floats(axis.get("xyz") if axis is not None else None, "1 0 0"),
            get("lower"), get("upper"), get("effort"), get("velocity"),
            float(dynamics.get("damping", "0")) if dynamics is not None else 0.0,
        ))
    return links, joints


def forward_kinematics(links, joints, q: dict[str, float] | None = None) -> dict[str, np.ndarray]:
    """World pose (4, 4) of every link, the root at the origin; q: revolute angle or prismatic travel by joint."""
    q = q or {}
    children = {j.child for j in joints}
    root = next(name for name in links if name not in children)
    poses = {root: np.eye(4)}
    pending = list(joints)
    while pending:
        for j in list(pending):
            if j.parent in poses:
                motion = np.eye(4)
                value = q.get(j.name, 0.0)
                if j.type in ("revolute", "continuous"):
                    motion[:3, :3] = rotation_about(j.axis, value)
                elif j.type == "prismatic":
                    motion[:3, 3] = j.axis / np.linalg.norm(j.axis) * value
                poses[j.child] = poses[j.parent] @ j.origin @ motion
                pending.remove(j)
    return poses


def system_mass_properties(links, poses) -> tuple[float, np.ndarray, np.ndarray]:
    """Total mass, world centre of mass and world inertia about it, from link poses."""
    mass = sum(link.mass for link in links.values())
    centres = {n: poses[n][:3, :3] @ link.com + poses[n][:3, 3] for n, link in links.items()}
    com = sum(link.mass * centres[n] for n, link in links.items()) / mass
    inertia = np.zeros((3, 3))
    for n, link in links.items():
        rot = poses[n][:3, :3]
        r = centres[n] - com
        inertia += rot @ link.inertia @ rot.T + link.mass * (r @ r * np.eye(3) - np.outer(r, r))
    return mass, com, inertia
