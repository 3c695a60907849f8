"""passive_forces (core/minimal/tree_passive.cpp) against the maximal core's spring and damper
impulses: the same law on the same coordinates, computed by code that shares nothing with
the tree (core/maximal/residual.cpp's minimal-coordinate rows at z2).

The maximal step's body residual holds, per free coordinate f, the spring impulse
h Jf^T (-k (theta - theta0)) and the damper impulse -h c Jf^T Jf xi (its midpoint form:
half at the previous velocities, half at the unknown ones). With the bodies' velocities
those of the minimal state on both sides of the step, the difference of the residuals
of the scene with and without its springs and dampers is h times their wrenches; their
virtual power through the bodies' velocity Jacobian d[v_b; w_b]/dv is h passive_forces.
"""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import _core, minimal

# Both sides are exact expressions of the same forces: rounding only, relative to the
# forces' scale (the rotation vector and J_r^-1 are evaluated by different formulas).
TOL = 1e-9
STEPS = (1e-3, 1e-4)

# A fixed first link (revolute from the world), then the joint under test between link1
# and link2, with a turned joint frame (orientation_offset), joint points off the centres,
# per-coordinate springs, rest values and dampers.
SCENE = """
name: passive_{kind}
timestep: {h}
gravity: [0, 0, -9.81]
steps: 1
bodies:
  - {{name: link1, shape: {{type: box, size: [0.2, 0.3, 1.0]}}, mass: 1.3}}
  - {{name: link2, shape: {{type: box, size: [0.4, 0.2, 0.7]}}, mass: 0.8}}
joints:
  - {{name: base, type: revolute, parent: origin, child: link1, axis: [0, 1, 0], child_vertex: [0, 0, 0.5]}}
  - name: test
    type: {kind}
    parent: link1
    child: link2
    axis: {axis}
    parent_vertex: [0.1, 0.0, -0.5]
    child_vertex: [0.0, 0.05, 0.35]
    orientation_offset: [0.9238795325112867, 0.0, 0.3826834323650898, 0.0]
    spring: {spring}
    damper: {damper}
    spring_offset: {offset}
    damper_form: {form}
"""
CASES = {
    "revolute": dict(axis="[0.6, 0.8, 0.0]", spring="[2.5]", damper="[0.3]", offset="[0.2]"),
    "prismatic": dict(axis="[0.0, 0.6, 0.8]", spring="[7.0]", damper="[0.9]", offset="[-0.1]"),
    "spherical": dict(axis="[0, 0, 1]", spring="[1.5, 2.0, 0.5]", damper="[0.2, 0.1, 0.4]", offset="[0.1, -0.2, 0.05]"),
    "floating": dict(axis="[0, 0, 1]", spring="[3, 4, 5, 1.5, 2.0, 0.5]", damper="[0.5, 0.2, 0.3, 0.2, 0.1, 0.4]",
                     offset="[0.1, 0.0, -0.2, 0.1, -0.2, 0.05]"),
}


def _mech(tmp_path, kind: str, h: float, form: str, passive: bool):
    params = dict(CASES[kind])
    if not passive:
        n = params["spring"].count(",") + 1
        params.update(spring=f"[{', '.join(['0.0'] * n)}]", damper=f"[{', '.join(['0.0'] * n)}]")
    path = tmp_path / f"{kind}_{passive}.yaml"
    path.write_text(SCENE.format(kind=kind, h=h, form=form, **params))
    return dojo.load_scene(str(path))


def _maximal(model, x):
    """Maximal state (13 nb,) of x, its velocities on both sides of the step, and the unknowns' body part."""
    b = model.bodies_from_state(x)
    z = np.concatenate([b["x"], b["v"], b["q"], b["w"]], axis=1).reshape(-1)
    return z, np.concatenate([b["v"], b["w"]], axis=1).reshape(-1)


def _velocity_jacobian(model, x):
    """d[v_b; w_b]/dv (6 nb, nv): the bodies' velocities (world linear, body angular) are linear in v."""
    base = x.copy()
    base[model.nq:] = 0.0
    _, w0 = _maximal(model, base)
    cols = []
    for i in range(model.nv):
        xi = base.copy()
        xi[model.nq + i] = 1.0
        cols.append(_maximal(model, xi)[1] - w0)
    return np.column_stack(cols)


def _state(model, rng):
    x = minimal.randn_state(model, rng)
    for tj in model.joints:
        if tj.rot == 2:
            # moderate rotations: Dojo's rotation vector has its angle in [0, 2 pi) and so
            # depends on the quaternion's sign, which the bodies' quaternions must share
            q = minimal.axis_angle_to_quat(0.6 * rng.standard_normal(3))
            if tj.floating:
                off = np.asarray(model.mech.joints[tj.index].orientation_offset, dtype=float)
                q = minimal.L_mult(off) @ q
            x[tj.q.start + tj.n_trans: tj.q.stop] = q
    return x


@pytest.mark.parametrize("form", ["midpoint", "implicit"])
@pytest.mark.parametrize("h", STEPS)
@pytest.mark.parametrize("kind", sorted(CASES))
def test_passive_forces_are_the_maximal_spring_and_damper_impulses_over_h(tmp_path, kind, h, form):
    with_, without = _mech(tmp_path, kind, h, form, True), _mech(tmp_path, kind, h, form, False)
    model = minimal.build_model(with_)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = _state(model, rng)
        z, body_velocities = _maximal(model, x)
        w = np.zeros(with_.core.n)
        w[: 6 * with_.nb] = body_velocities
        r1 = np.asarray(_core.testing.step_residual(with_.core, _core.Data(with_.core), z, None, w))
        r0 = np.asarray(_core.testing.step_residual(without.core, _core.Data(without.core), z, None, w))
        impulse = -(r1 - r0)[: 6 * with_.nb]
        maximal = _velocity_jacobian(model, x).T @ impulse / h
        ours = minimal.passive_forces(model, x)
        err = np.max(np.abs(ours - maximal)) / max(1.0, np.max(np.abs(maximal)))
        assert err < TOL, f"{kind} ({form}, h={h:g}): passive_forces {ours} vs maximal impulses / h {maximal}: {err:.2e}"
        assert np.max(np.abs(ours)) > 0.1, f"{kind}: the springs and dampers act (|tau| = {np.max(np.abs(ours)):.2e})"
