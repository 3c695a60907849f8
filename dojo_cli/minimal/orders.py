"""Vector orders (PinnZoo's StateOrder / change_order, other_systems_notes.md 2.6).

An order names the entries of configurations, velocities and torques. Built in:
- ``nominal``: the model's own (scene joint order, the floating base first);
- ``pinocchio``: joints in the order ``pin.buildModelFromUrdf`` numbers them (a
  depth-first walk from the root, each link's children taken in the order of their
  joint names, as urdfdom stores them), quaternions scalar last [qx qy qz qw];
- ``mujoco``: the nominal order with MuJoCo's free-joint velocity convention: the
  linear velocity (and force) of a floating base in the world frame, not its body
  frame; converting velocities, error states or torques to or from it needs the
  configuration (``q=``; a state carries its own).
User orders: ``register_order(model, name, config_names, velocity_names, torque_names)``,
each a permutation of the model's names.

Kinds: "config" (nq), "velocity" (nv), "state" (nx = [q; v]), "error_state" (2 nv,
[dq; v] with dq in the velocity names) and "torque" (nv). Pass ``kind=`` (for a
matrix, one kind or a (rows, columns) pair); without it the kind is guessed from the
length as PinnZoo does, the first of config, velocity, state, error_state, torque that
fits, which is ambiguous when two lengths agree (a fixed base has nq = nv: then
config, velocity and torque share one permutation, and only a mujoco conversion of a
floating base would differ, where an explicit kind is required).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.minimal.model import MinimalModel

KINDS = ("config", "velocity", "state", "error_state", "torque")
BUILTIN_ORDERS = ("nominal", "pinocchio", "mujoco")


def _pinocchio_names(model: MinimalModel) -> tuple[list[str], list[str]]:
    children: dict[int, list[int]] = {}
    for k, tj in enumerate(model.joints):
        children.setdefault(tj.parent, []).append(k)
    walk: list[int] = []

    def visit(k: int) -> None:
        walk.append(k)
        for c in sorted(children.get(k, []), key=lambda c: model.joints[c].name.encode()):
            visit(c)

    for root in sorted(children.get(-1, []), key=lambda c: model.joints[c].name.encode()):
        visit(root)
    cq, cv = [], []
    for k in walk:
        tj = model.joints[k]
        q = model.config_names[tj.q]
        if tj.rot == 2:  # quaternion: scalar last
            q = q[: tj.n_trans] + q[tj.n_trans + 1:] + q[tj.n_trans: tj.n_trans + 1]
        cq += q
        cv += model.velocity_names[tj.v]
    return cq, cv


def order_names(model: MinimalModel, name: str) -> tuple[list[str], list[str], list[str]]:
    """(config_names, velocity_names, torque_names) of an order."""
    if name in ("nominal", "mujoco"):
        return list(model.config_names), list(model.velocity_names), list(model.torque_names)
    if name == "pinocchio":
        cq, cv = _pinocchio_names(model)
        return cq, cv, list(cv)
    if name in model.orders:
        return model.orders[name]
    raise ValueError(f"unknown order {name!r} (known: {', '.join(BUILTIN_ORDERS + tuple(model.orders))})")


def register_order(model: MinimalModel, name: str, config_names, velocity_names, torque_names=None) -> None:
    """Register a user order by names (each list a permutation of the model's names)."""
    if name in BUILTIN_ORDERS:
        raise ValueError(f"order {name!r} is built in")
    torque_names = velocity_names if torque_names is None else torque_names
    for what, given, own in (("config_names", config_names, model.config_names),
                             ("velocity_names", velocity_names, model.velocity_names),
                             ("torque_names", torque_names, model.torque_names)):
        if sorted(given) != sorted(own):
            missing = sorted(set(own) - set(given))
            extra = sorted(set(given) - set(own))
            raise ValueError(f"order {name!r}: {what} must be a permutation of the model's names "
                             f"(missing {missing}, unknown {extra})")
    model.orders[name] = (list(config_names), list(velocity_names), list(torque_names))


def _perm(names: list[str], own: list[str]) -> np.ndarray:
    """Indices i such that vector_in_order = nominal_vector[i]."""
    where = {n: k for k, n in enumerate(own)}
    return np.array([where[n] for n in names], dtype=int)


def _index(model: MinimalModel, order: str, kind: str) -> np.ndarray:
    """Nominal indices of the entries of a `kind` vector in `order`."""
    cq, cv, ct = order_names(model, order)
    pq, pv, pt = _perm(cq, model.config_names), _perm(cv, model.velocity_names), _perm(ct, model.torque_names)
    if kind == "config":
        return pq
    if kind == "velocity":
        return pv
    if kind == "torque":
        return pt
    if kind == "state":
        return np.concatenate([pq, model.nq + pv])
    return np.concatenate([pv, model.nv + pv])  # error_state


def _length(model: MinimalModel, kind: str) -> int:
    return {"config": model.nq, "velocity": model.nv, "state": model.nx, "error_state": 2 * model.nv,
            "torque": model.nv}[kind]


def _guess(model: MinimalModel, n: int) -> str:
    for kind in KINDS:
        if _length(model, kind) == n:
            return kind
    raise ValueError(f"length {n} is none of nq={model.nq}, nv={model.nv}, nx={model.nx}, 2nv={2 * model.nv}")


def _mujoco_map(model: MinimalModel, kind: str, q) -> np.ndarray | None:
    """The linear map nominal -> mujoco for a `kind` vector (None: identity): each
    floating base's linear velocity/force block rotated by R(q) into the world."""
    blocks = [tj for tj in model.joints if tj.floating]
    if kind == "config" or not blocks:
        return None
    if q is None:
        raise ValueError("converting to or from 'mujoco' needs the configuration: pass q= (a floating base's "
                         "linear velocity is in the world frame there)")
    n = _length(model, kind)
    T = np.eye(n)
    offsets = [0] if kind in ("velocity", "torque") else ([model.nq] if kind == "state" else [0])
    for tj in blocks:
        R = matrix_from_quaternion(np.asarray(q, dtype=float)[tj.q][3:7] / np.linalg.norm(np.asarray(q)[tj.q][3:7]))
        for off in offsets:
            s = off + tj.v.start
            T[s: s + 3, s: s + 3] = R
    return T


def _to_nominal_axis(model, a, axis, from_, kind, q):
    idx = _index(model, from_, kind)
    moved = np.moveaxis(a, axis, 0)
    res = np.empty_like(moved)
    res[idx] = moved
    if from_ == "mujoco":
        T = _mujoco_map(model, kind, q if (q is not None or kind != "state" or res.ndim != 1) else res[: model.nq])
        if T is not None:
            res = np.tensordot(T.T, res, axes=(1, 0))
    return np.moveaxis(res, 0, axis)


def _from_nominal_axis(model, a, axis, to, kind, q):
    moved = np.moveaxis(a, axis, 0)
    if to == "mujoco":
        T = _mujoco_map(model, kind, q if (q is not None or kind != "state" or moved.ndim != 1) else moved[: model.nq])
        if T is not None:
            moved = np.tensordot(T, moved, axes=(1, 0))
    idx = _index(model, to, kind)
    return np.moveaxis(moved[idx], 0, axis)


def change_order(model: MinimalModel, value, from_: str, to: str, dims=(0, 1), kind=None, q=None) -> np.ndarray:
    """Convert a vector or matrix between orders (PinnZoo's change_order).

    Args:
        model: the minimal model.
        value: (n,) vector or (n, m) matrix.
        from_, to: order names ("nominal", "pinocchio", "mujoco" or registered).
        dims: for a matrix, the axes to convert (rows 0, columns 1; default both).
        kind: "config", "velocity", "state", "error_state" or "torque" (a pair for a
            matrix's rows and columns); default: guessed from the length (module doc).
        q: (nq,) configuration (nominal and mujoco orders share it), for
            conversions involving "mujoco" of a floating base's velocities, error
            states, torques, and of matrices (a state vector carries its own).

    Returns:
        The converted array (a new array). A matrix's columns convert as a
        Jacobian's (A -> A T^-1 with the same orthogonal map T as its rows).
    """
    a = np.array(value, dtype=float)
    if a.ndim not in (1, 2):
        raise ValueError(f"expected a vector or a matrix, got shape {a.shape}")
    axes = (0,) if a.ndim == 1 else tuple(d for d in (0, 1) if d in tuple(np.atleast_1d(dims)))
    kinds = (kind, kind) if (kind is None or isinstance(kind, str)) else tuple(kind)
    for k in kinds:
        if k is not None and k not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {k!r}")
    if from_ == to:
        return a
    for axis in axes:
        k = kinds[axis] or _guess(model, a.shape[axis])
        if a.shape[axis] != _length(model, k):
            raise ValueError(f"axis {axis} has {a.shape[axis]} entries, a {k} has {_length(model, k)}")
        a = _to_nominal_axis(model, a, axis, from_, k, q)
        a = _from_nominal_axis(model, a, axis, to, k, q)
    return a


def change_orders(model: MinimalModel, values, from_: str, to: str, **kwargs) -> list[np.ndarray]:
    """change_order applied to each array of a list."""
    return [change_order(model, v, from_, to, **kwargs) for v in values]


def change_order_inplace(model: MinimalModel, value: np.ndarray, from_: str, to: str, **kwargs) -> np.ndarray:
    """PinnZoo's change_order!: convert ``value`` (a float numpy vector or matrix) in place and
    return it. The same arguments as change_order; the shape must not change (it never does:
    every order of a kind has the same length)."""
    if not isinstance(value, np.ndarray) or value.dtype != float:
        raise TypeError("change_order_inplace needs a float numpy array to write into")
    value[...] = change_order(model, value, from_, to, **kwargs)
    return value


def change_orders_inplace(model: MinimalModel, values, from_: str, to: str, **kwargs) -> list[np.ndarray]:
    """PinnZoo's change_orders!: change_order_inplace on each array of a list."""
    return [change_order_inplace(model, v, from_, to, **kwargs) for v in values]


@dataclass(frozen=True)
class ConversionIndices:
    """PinnZoo's ConversionIndices: for each kind, the index vector ``idx`` with
    ``vector_to = vector_from[idx]`` (config, velocity, state, error_state, torque)."""

    config: np.ndarray
    velocity: np.ndarray
    state: np.ndarray
    error_state: np.ndarray
    torque: np.ndarray


def conversion_indices(model: MinimalModel, from_: str, to: str) -> ConversionIndices:
    """The ConversionIndices from one order to another (PinnZoo's ``model.conversions[(from,
    to)]``). Only permutations have them: a conversion to or from "mujoco" of a model with a
    floating base also rotates the base's linear velocity (module docstring) and is refused;
    use change_order with ``q=`` for it."""
    if "mujoco" in (from_, to) and from_ != to and any(tj.floating for tj in model.joints):
        raise ValueError("a conversion to or from 'mujoco' of a floating base rotates velocities by the "
                         "configuration: it is not a permutation (use change_order with q=)")

    def indices(kind: str) -> np.ndarray:
        # nominal = from[inverse(idx_from)], to = nominal[idx_to]
        idx_from, idx_to = _index(model, from_, kind), _index(model, to, kind)
        inverse = np.empty_like(idx_from)
        inverse[idx_from] = np.arange(idx_from.size)
        return inverse[idx_to]

    return ConversionIndices(*(indices(kind) for kind in KINDS))
