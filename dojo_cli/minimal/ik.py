"""Joint limits and leg inverse kinematics (PinnZoo's fix_joint_limits, inverse_kinematics,
nearest_ik; docs/minimal.md "Inverse kinematics").

PinnZoo writes these in closed form per robot (Go1, Go2, Pineapple). Here they are generic
over any minimal model: each kinematics point (``model.kinematics_points``, a foot contact or
a body) is reached by the scalar joints (revolute, prismatic, their combinations) on the
chain from the floating base (or the world) to the point's body, and the chain's
coordinates are found by Gauss-Newton on the core's ``kinematics`` and
``kinematics_jacobian`` (exact derivatives), the base pose held where ``x`` puts it.
A three-joint leg has two solutions (the knee bent one way or the other); they are found
from two starts: the current angles, and the current angles with each chain's last joint
angle reflected (-theta), the leg's "knee" branch.
"""

from __future__ import annotations

import math

import numpy as np

from dojo_cli.minimal.dynamics import kinematics, kinematics_jacobian
from dojo_cli.minimal.model import ROT_NONE, ROT_REVOLUTE, MinimalModel

# Gauss-Newton on a chain: converged when the point is within this of its target (m); at
# most this many iterations (a 3-joint leg from a start on its branch takes 4-8).
IK_TOLERANCE = 1e-12
# A chain out of iterations still counts as solved within this of its target (m).
IK_ACCEPT = 1e3 * IK_TOLERANCE
IK_MAX_ITERATIONS = 100
# Levenberg-Marquardt damping of the normal equations, relative to their diagonal: keeps the
# step finite at a straight (singular) leg and vanishes in effect near the solution.
IK_DAMPING = 1e-9
# Largest change of one coordinate in one iteration (rad or m).
IK_MAX_STEP = 0.3


def _config(model: MinimalModel, x) -> tuple[np.ndarray, bool]:
    """(full state x (nx,), whether the input was a configuration q (nq,))."""
    a = np.array(x, dtype=float).reshape(-1)
    if a.size == model.nq:
        return np.concatenate([a, np.zeros(model.nv)]), True
    if a.size == model.nx:
        return a, False
    raise ValueError(f"expected a configuration of nq = {model.nq} or a state of nx = {model.nx} entries, got {a.size}")


def _scalar_coordinates(model: MinimalModel):
    """(q index, lower, upper, is_angle) of every scalar coordinate of the non-floating joints."""
    out = []
    for tj in model.joints:
        if tj.floating or tj.rot not in (ROT_NONE, ROT_REVOLUTE):
            continue
        limits = model.mech.joints[tj.index].limits
        n = tj.q.stop - tj.q.start
        # the tree joint's own coordinates among its scene joint's (one axis of a universal joint)
        own = slice(tj.free.start - model.mech.joint_free_range[tj.index].start,
                    tj.free.stop - model.mech.joint_free_range[tj.index].start)
        lower = np.full(n, -np.inf) if limits is None else np.asarray(limits[0], dtype=float)[own]
        upper = np.full(n, np.inf) if limits is None else np.asarray(limits[1], dtype=float)[own]
        for k in range(n):
            out.append((tj.q.start + k, float(lower[k]), float(upper[k]), tj.rot == ROT_REVOLUTE and k == n - 1))
    return out


def fix_joint_limits(model: MinimalModel, x, suppress_error: bool = False, supress_error: bool | None = None) -> np.ndarray:
    """x (or q) with each joint angle wrapped by multiples of 2 pi into its limits where
    that is possible (the wrap nearest the given angle). Where it is not (a prismatic
    coordinate out of range, or a range narrower than the gap), a ValueError names the
    coordinate, unless ``suppress_error`` (PinnZoo's ``supress_error`` is accepted), in
    which case that coordinate is clamped to the nearer limit."""
    if supress_error is not None:
        suppress_error = supress_error
    full, was_q = _config(model, x)
    out = _fix(model, full.copy(), None, suppress_error)
    return out[: model.nq] if was_q else out


def _fix(model: MinimalModel, out: np.ndarray, only: list[int] | None, suppress_error: bool) -> np.ndarray:
    """fix_joint_limits on the coordinates ``only`` (all scalar coordinates: None), in place."""
    for i, lower, upper, angle in _scalar_coordinates(model):
        if only is not None and i not in only:
            continue
        value = out[i]
        if lower <= value <= upper:
            continue
        if angle and math.isfinite(lower) or angle and math.isfinite(upper):
            # smallest |k| with lower <= value + 2 pi k <= upper
            low = -np.inf if not math.isfinite(lower) else lower
            high = np.inf if not math.isfinite(upper) else upper
            k_min = math.ceil((low - value) / (2 * math.pi)) if math.isfinite(low) else -math.inf
            k_max = math.floor((high - value) / (2 * math.pi)) if math.isfinite(high) else math.inf
            if k_min <= k_max:
                k = k_min if abs(k_min) <= abs(k_max) else k_max
                if k_min <= 0 <= k_max:
                    k = 0
                out[i] = value + 2 * math.pi * k
                continue
        if not suppress_error:
            raise ValueError(f"{model.config_names[i]} = {value:.6g} is outside its limits [{lower:.6g}, {upper:.6g}]"
                             + (" and no 2 pi wrap fits" if angle else ""))
        out[i] = min(max(value, lower), upper)
    return out


def _chain(model: MinimalModel, point: int) -> list[int]:
    """q indices of the scalar coordinates moving kinematics point `point`, base to tip."""
    name = model.kinematics_points[point]
    mech = model.mech
    names = [c.name for c in mech.contacts]
    body = mech.contacts[names.index(name)].body if name in names else mech.body_index(name)
    scalar = {i for i, *_ in _scalar_coordinates(model)}
    chain: list[int] = []
    k = model._joint_of_body.get(int(body))
    while k is not None and k >= 0:
        tj = model.joints[k]
        chain = [i for i in range(tj.q.start, tj.q.stop) if i in scalar] + chain
        k = tj.parent
    return chain


def _solve(model: MinimalModel, x: np.ndarray, point: int, chain: list[int], target: np.ndarray) -> np.ndarray | None:
    """Gauss-Newton on the chain's coordinates; the converged x, or None."""
    start, x = x, x.copy()
    rows = slice(3 * point, 3 * point + 3)
    for _ in range(IK_MAX_ITERATIONS):
        r = kinematics(model, x)[rows] - target
        if np.linalg.norm(r) <= IK_TOLERANCE:
            return _unwrap(model, x, start, chain)
        J = kinematics_jacobian(model, x)[rows][:, chain]
        H = J.T @ J
        H[np.diag_indices_from(H)] += IK_DAMPING * (np.max(np.diag(H)) + 1.0)
        step = np.linalg.solve(H, J.T @ r)
        # a trust region on the joint change: a full Gauss-Newton step from far away can
        # jump across branches (and whole turns); IK_MAX_STEP keeps the walk on one branch
        x[chain] -= step * min(1.0, IK_MAX_STEP / max(np.max(np.abs(step)), 1e-300))
    # out of iterations: kept if it ended within IK_ACCEPT of the target (a slow tail), else none
    return _unwrap(model, x, start, chain) if np.linalg.norm(kinematics(model, x)[rows] - target) <= IK_ACCEPT else None


def _unwrap(model: MinimalModel, x: np.ndarray, start: np.ndarray, chain: list[int]) -> np.ndarray:
    """Each angle of the chain moved by multiples of 2 pi to within pi of its start value."""
    angles = {i for i, _, _, angle in _scalar_coordinates(model) if angle}
    for i in chain:
        if i in angles:
            x[i] = start[i] + math.remainder(x[i] - start[i], 2 * math.pi)
    return x


def ik_coordinates(model: MinimalModel) -> list[str]:
    """Names of the configuration entries inverse_kinematics solves for (its rows)."""
    return [model.config_names[i] for i in _all_chains(model)]


def _all_chains(model: MinimalModel) -> list[int]:
    seen: list[int] = []
    for p in range(len(model.kinematics_points)):
        seen += [i for i in _chain(model, p) if i not in seen]
    return sorted(seen)


def inverse_kinematics(model: MinimalModel, x, locations) -> np.ndarray:
    """(n, 2): the two solutions (columns) of the joint coordinates ``ik_coordinates(model)``
    that put every kinematics point at ``locations`` ((np, 3) or flat, world frame) with the
    base where x (or q) puts it. Column 0 starts from the current angles, column 1 from the
    other knee branch (module docstring). NaN where a chain has no solution from that start
    (a target out of reach). Limits are not imposed (nearest_ik does)."""
    full, _ = _config(model, x)
    targets = np.asarray(locations, dtype=float).reshape(-1, 3)
    if targets.shape[0] != len(model.kinematics_points):
        raise ValueError(f"expected {len(model.kinematics_points)} locations (the kinematics points "
                         f"{', '.join(model.kinematics_points)}), got {targets.shape[0]}")
    rows = _all_chains(model)
    out = np.full((len(rows), 2), np.nan)
    for branch in (0, 1):
        for p in range(targets.shape[0]):
            chain = _chain(model, p)
            if not chain:
                continue
            start = full.copy()
            if branch == 1:
                start[chain[-1]] = -start[chain[-1]]
            solved = _solve(model, start, p, chain, targets[p])
            if solved is not None:
                for i in chain:
                    out[rows.index(i), branch] = solved[i]
    return out


def nearest_ik(model: MinimalModel, x, locations, obey_limits: bool = True) -> np.ndarray:
    """x (or q) with the joint coordinates replaced by the inverse-kinematics solution
    closest to the current ones, per chain (minimum norm of the change), among the two
    branches; with ``obey_limits``, each branch wrapped into the joint limits
    (fix_joint_limits) and a branch that cannot be is not taken. A ValueError if no branch
    of some chain qualifies."""
    full, was_q = _config(model, x)
    solutions = inverse_kinematics(model, full, locations)
    rows = _all_chains(model)
    out = full.copy()
    for p in range(len(model.kinematics_points)):
        chain = _chain(model, p)
        best, best_change = None, np.inf
        for branch in (0, 1):
            candidate = out.copy()
            values = solutions[[rows.index(i) for i in chain], branch]
            if np.any(np.isnan(values)):
                continue
            candidate[chain] = values
            if obey_limits:
                try:
                    candidate = _fix(model, candidate, chain, False)
                except ValueError:
                    continue
            change = np.linalg.norm(candidate[chain] - full[chain])
            if change < best_change:
                best, best_change = candidate[chain], change
        if best is None:
            raise ValueError(f"no inverse-kinematics solution for {model.kinematics_points[p]!r}"
                             + (" within the joint limits" if obey_limits else ""))
        out[chain] = best
    return out[: model.nq] if was_q else out
