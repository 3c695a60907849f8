"""The C++ contact kernels (dojo_cli/core/collision.h, contact.h, contact.cpp).

Two kinds of checks:
(a) agreement with the numpy implementation they replace (dojo_cli/physics/collision.py
    and contact.py): every built-in scene with contacts under every contact model, and
    every collision pair with its special cases. These tests skip themselves once the
    numpy code is deleted.
    The Newton-matrix blocks are assembled from ContactEval with contact.h's signs
    (contact_map = -wrench_gamma, contact_body_body = -wrench_body) and compared with
    matrix_blocks.
(b) independent of it: the geometry Jacobians and the kernel's Jacobians against central
    finite differences of the C++ values, the hand-chained Jacobians against dual
    numbers through every operation (evaluate_contact_reference), Dojo's reference
    collision cases (dojo_engine_notes.md 9.7), analytic special cases, and the
    residual-only path against the full one (bitwise).

The module under test is dojo_cli._core (skipped while it has no contact bindings);
DOJO_CONTACT_MODULE names another module with the same functions (a development build
of bind_contacts).
"""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest

_MODULE = os.environ.get("DOJO_CONTACT_MODULE", "dojo_cli._core")
core = importlib.import_module(_MODULE)
if not hasattr(core, "evaluate_contact"):
    pytest.skip(f"{_MODULE} has no contact kernels (bind_contacts not bound yet)", allow_module_level=True)

# Agreement with numpy, entrywise |C++ - numpy| <= NUMPY_RTOL * max(1, max |numpy| of
# the field): the same formulas in double precision; they differ only in summation
# order (numpy's einsum/BLAS vs sequential sums) and x * (1/y) for x / y, a few ulps
# of the field's scale.
NUMPY_RTOL = 1e-12
# Central differences: step (m, rad, m/s, rad/s) and tolerance relative to
# max(1, max |FD| of the field). Truncation O(step^2) ~ 1e-12 times the third
# derivatives, rounding ~1e-16 / step = 1e-10 times the values.
FD_STEP = 1e-6
FD_RTOL = 1e-6

# Hand-chained Jacobians against dual numbers through every operation: both exact,
# they differ by the rounding of differently ordered sums (a few ulps of the scale).
REFERENCE_RTOL = 1e-13

MODELS = ("impact", "nonlinear", "linear")
HALF = {"impact": 1, "nonlinear": 4, "linear": 6}
SHAPE_KEYS = {
    "halfspace": ("normal", "point"),
    "sphere": ("offset", "radius"),
    "capsule": ("end1", "end2", "radius"),
    "box": ("centre", "half_sizes"),
}
GEOMETRY_FIELDS = ("distance", "normal", "tangent", "point_a", "point_b")
IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])
ZERO3 = np.zeros(3)
ZERO33 = np.zeros((3, 3))


# ------------------------------------------------------------ quaternions (test-local)
def qmul(p, q):
    """Hamilton product of [w, x, y, z] quaternions."""
    pw, pv, qw, qv = p[0], p[1:], q[0], q[1:]
    return np.concatenate([[pw * qw - pv @ qv], pw * qv + qw * pv + np.cross(pv, qv)])


def qexp(t):
    """exp(t / 2): the unit quaternion rotating by |t| about t."""
    a = np.linalg.norm(t)
    if a < 1e-12:
        return np.concatenate([[1.0], 0.5 * t])
    return np.concatenate([[np.cos(a / 2)], np.sin(a / 2) * t / a])


def rotate(q, v):
    return qmul(qmul(q, np.concatenate([[0.0], v])), q * [1, -1, -1, -1])[1:]


def random_quaternion(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def integrator_map(w, h):
    """Dojo's qmap(w) = (h/2) [sqrt(4/h^2 - |w|^2), w] (notes 2.2)."""
    return 0.5 * h * np.concatenate([[np.sqrt(4.0 / h**2 - w @ w)], w])


def integrator_map_jacobian(w, h):
    """dt3/dw25 = (h^2/2) (s I + w w^T / s - [w]x), s = sqrt(4/h^2 - |w|^2)."""
    s = np.sqrt(4.0 / h**2 - w @ w)
    skew = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
    return 0.5 * h**2 * (s * np.eye(3) + np.outer(w, w) / s - skew)


# ------------------------------------------------------------------ helpers
def assert_close(name, got, ref, rtol):
    got, ref = np.asarray(got, dtype=float), np.asarray(ref, dtype=float)
    assert got.shape == ref.shape, f"{name}: shape {got.shape} != {ref.shape}"
    err = np.max(np.abs(got - ref), initial=0.0)
    scale = max(1.0, np.max(np.abs(ref), initial=0.0))
    assert err <= rtol * scale, f"{name}: error {err:.2e} (scale {scale:.2e})"
    return err / scale


def params_of(contact, other=None):
    """The kernel's params dict from a Mechanism's Contact."""
    shape = np.concatenate([np.ravel(np.asarray(contact.params[k], dtype=float)) for k in SHAPE_KEYS[contact.kind]])
    return dict(
        body=contact.body,
        other=contact.other if other is None else other,
        model=contact.model,
        kind=contact.kind,
        friction=contact.friction,
        radius=contact.radius,
        offset=np.asarray(contact.offset, dtype=float),
        shape=shape,
    )


def random_cone_point(rng, model):
    """(N,) strictly inside the model's cone: orthant entries > 0, SOC parts (u0 > |u1:|)."""
    n = HALF[model]
    u = rng.uniform(0.1, 2.0, n)
    if model == "nonlinear":
        u[2:4] = rng.normal(size=2)
        u[1] = np.linalg.norm(u[2:4]) + rng.uniform(0.1, 1.0)
    return u


def body_state(x, q, v, w, h):
    return dict(x=x, q=q, v=v, w=w, mw=integrator_map_jacobian(w, h))


def evaluate(params, h, a, b, s, gamma, output="jacobians", reference=False):
    return core.evaluate_contact(
        params, h, a["x"], a["q"], a["v"], a["w"], a["mw"], b["x"], b["q"], b["v"], b["w"], b["mw"], s, gamma, output,
        reference=reference,
    )


WORLD = dict(x=ZERO3, q=IDENTITY, v=ZERO3, w=ZERO3, mw=ZERO33)


# ============================================================== (a) against numpy
def _numpy_contact():
    return pytest.importorskip("dojo_cli.physics.contact", reason="the numpy contact code is gone")


SCENES = ("box", "sphere", "sliding_box", "incline", "ball_on_ball", "ball_on_capsule", "ball_on_box", "tippetop")
VARIANTS = ("impact", "nonlinear", "linear", "mixed")
_MECHANISMS: dict = {}


def _mechanism(scene, variant):
    key = (scene, variant)
    if key not in _MECHANISMS:
        import dojo_cli as dojo

        nc = dojo.load_scene(scene).nc
        models = [variant if variant != "mixed" else MODELS[i % 3] for i in range(nc)]
        _MECHANISMS[key] = dojo.load_scene(scene, [f"contacts.{i}.model={m}" for i, m in enumerate(models)])
    return _MECHANISMS[key]


def _numpy_iterate(mech, rng, spread):
    """x3, q3 near the scene's state, random velocities, cone variables inside their cones."""
    import dojo_cli as dojo
    from dojo_cli.simulation.step import step_structure

    nb, h = mech.nb, mech.timestep
    z = dojo.initial_state(mech).reshape(nb, 13)
    x3 = z[:, 0:3] + spread * rng.normal(size=(nb, 3))
    q3 = z[:, 6:10] + 0.3 * rng.normal(size=(nb, 4))
    q3 /= np.linalg.norm(q3, axis=1, keepdims=True)
    v25 = rng.normal(size=(nb, 3))
    w25 = rng.normal(size=(nb, 3)) * min(3.0, 0.5 / h)  # |w| well inside 2/h
    cs = step_structure(mech).contacts
    w = np.zeros(cs.end)
    for model, (idx, s_idx, g_idx) in cs.groups.items():
        for j in range(len(idx)):
            w[s_idx[j]] = random_cone_point(rng, model)
            w[g_idx[j]] = random_cone_point(rng, model)
    return cs, w, x3, q3, v25, w25


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scene", SCENES)
def test_scene_contacts_match_numpy(scene, variant):
    """Every ContactEval field against evaluate_contacts / matrix_blocks' values."""
    contact = _numpy_contact()
    from dojo_cli.physics.integrator import chain_to_velocities

    mech = _mechanism(scene, variant)
    nb, h = mech.nb, mech.timestep
    rng = np.random.default_rng(10 * SCENES.index(scene) + VARIANTS.index(variant))
    for trial, spread in enumerate((0.05, 0.3, 0.6)):
        cs, w, x3, q3, v25, w25 = _numpy_iterate(mech, rng, spread)
        ev = contact.evaluate_contacts(mech, cs, w, x3, q3, v25, w25)
        evp = contact.evaluate_contacts(mech, cs, w, x3, q3, v25, w25, parameters=True)
        mw = np.array([integrator_map_jacobian(w25[i], h) for i in range(nb)] + [ZERO33])
        impulse = np.zeros(6 * nb)
        kernel = []
        for i, c in enumerate(mech.contacts):
            idx, s_idx, g_idx = cs.groups[c.model]
            j = int(np.flatnonzero(idx == i)[0])
            s, gamma = w[s_idx[j]], w[g_idx[j]]
            a = dict(x=x3[c.body], q=q3[c.body], v=v25[c.body], w=w25[c.body], mw=mw[c.body])
            world = c.other < 0
            b = WORLD if world else dict(x=x3[c.other], q=q3[c.other], v=v25[c.other], w=w25[c.other], mw=mw[c.other])
            out = evaluate(params_of(c), h, a, b, s, gamma, "parameters")
            comp_jac, local, (z3, direct), impulse_map = ev._blocks["models"][c.model]
            comp_pos, cons_pos = cs.positions[c.model]
            pair_a, pair_b = np.array([c.body]), np.array([nb if world else c.other])
            wrench_jac = ev._blocks["wrench_jac"][i]
            tag = f"{scene}/{variant} trial {trial} contact {c.name}"
            expected = {
                "comp": ev.residual[comp_pos[j]],
                "cons": ev.residual[cons_pos[j]],
                "wrench": impulse_map[j] @ gamma,  # the wrench is linear in gamma
                "distance": ev.distance[i],
                "normal_impulse": ev.normal_impulse[i],
                "friction_impulse": ev.friction_impulse[i],
                "slip": ev.slip[i],
                "comp_jac": comp_jac[j],
                "cons_local": local[j],
                "cons_z3": z3[j],
                "cons_body": chain_to_velocities(z3[j][None], pair_a, pair_b, mw, h)[0] + direct[j],
                "wrench_gamma": impulse_map[j],
                "wrench_z3": wrench_jac,
                "wrench_body": chain_to_velocities(wrench_jac[None], pair_a, pair_b, mw, h)[0],
                "cons_parameters": evp._blocks["models"][c.model][2][0][j][:, 12:16],
                "wrench_parameters": evp._blocks["wrench_jac"][i][:, 12:16],
            }
            for name, ref in expected.items():
                assert_close(f"{tag}: {name}", out[name], ref, NUMPY_RTOL)
            kernel.append(out)
            impulse[6 * c.body : 6 * c.body + 6] += out["wrench"][:6]
            if not world:
                impulse[6 * c.other : 6 * c.other + 6] += out["wrench"][6:]
        assert_close(f"{scene}/{variant} trial {trial}: body impulse", impulse, ev.body_impulse, NUMPY_RTOL)
        # the Newton-matrix blocks as contact.h says to assemble them (contact_map =
        # -wrench_gamma, contact_body_body = -wrench_body), against matrix_blocks
        blocks = ev.matrix_blocks(mw, h)
        for model in MODELS:
            idx = cs.groups[model][0]
            if not idx.size:
                continue
            stack = {key: np.array([kernel[i][key] for i in idx]) for key in ("comp_jac", "cons_local", "cons_body")}
            stack["wrench_gamma"] = np.array([kernel[i]["wrench_gamma"] for i in idx])
            ours = {
                f"contact_comp_{model}": stack["comp_jac"].ravel(),
                f"contact_cons_{model}": stack["cons_local"].ravel(),
                f"contact_body_{model}": stack["cons_body"][cs._keep[f"contact_body_{model}"]],
                f"contact_map_{model}": -stack["wrench_gamma"][cs._keep[f"contact_map_{model}"]],
            }
            for name, value in ours.items():
                assert_close(f"{scene}/{variant} trial {trial}: {name}", value, blocks[name], NUMPY_RTOL)
        body_body = -np.array([k["wrench_body"] for k in kernel])[cs._keep["contact_body_body"]]
        assert_close(f"{scene}/{variant} trial {trial}: contact_body_body", body_body, blocks["contact_body_body"],
                     NUMPY_RTOL)


# ------------------------------------------------------- collision pairs vs numpy
def _place(rng, centre):
    """Body a's pose and offset putting its sphere centre at a world point."""
    qa = random_quaternion(rng)
    offset = 0.4 * rng.normal(size=3)
    return centre - rotate(qa, offset), qa, offset


def _pair(kind, xa, qa, offset, radius, xb, qb, shape):
    return dict(kind=kind, xa=xa, qa=qa, offset=offset, radius=radius, xb=xb, qb=qb, shape=np.asarray(shape, float))


def _capsule_pair(seed, along, gap, radius=0.3, short=False):
    rng = np.random.default_rng(seed)
    xb, qb = rng.normal(size=3), random_quaternion(rng)
    end1, end2 = 0.6 * rng.normal(size=3), 0.6 * rng.normal(size=3)
    if short:
        end2 = end1.copy()
    e1, e2 = xb + rotate(qb, end1), xb + rotate(qb, end2)
    axis = e2 - e1
    side = rng.normal(size=3)
    if not short:
        side -= (side @ axis) / (axis @ axis) * axis
    side /= np.linalg.norm(side)
    xa, qa, offset = _place(rng, e1 + along * axis + gap * side)
    return _pair("capsule", xa, qa, offset, radius, xb, qb, np.concatenate([end1, end2, [0.25]]))


BOX_HALF = np.array([0.3, 0.5, 0.7])
BOX_POINTS = {  # sphere centre in box coordinates
    "outside face +z": [0.1, -0.2, 1.1],
    "outside edge": [0.5, -0.8, 0.1],
    "outside corner": [-0.5, 0.65, -0.95],
    "inside near +x": [0.26, 0.1, -0.2],
    "inside near -x": [-0.22, 0.3, 0.1],
    "inside near +y": [0.05, 0.44, 0.2],
    "inside near -y": [0.05, -0.42, 0.2],
    "inside near +z": [-0.1, 0.1, 0.6],
    "inside near -z": [0.0, 0.05, -0.65],
}


def _box_pair(seed, local, half=BOX_HALF, radius=0.15):
    rng = np.random.default_rng(seed)
    xb, qb = rng.normal(size=3), random_quaternion(rng)
    centre_b = 0.3 * rng.normal(size=3)
    xa, qa, offset = _place(rng, xb + rotate(qb, centre_b + np.asarray(local, float)))
    return _pair("box", xa, qa, offset, radius, xb, qb, np.concatenate([centre_b, half]))


def _halfspace_pair(seed, normal=None, point=None):
    rng = np.random.default_rng(seed)
    normal = rng.normal(size=3) if normal is None else np.asarray(normal, float)
    point = rng.normal(size=3) if point is None else np.asarray(point, float)
    return _pair("halfspace", rng.normal(size=3), random_quaternion(rng), 0.4 * rng.normal(size=3),
                 rng.uniform(0.0, 0.5), rng.normal(size=3), random_quaternion(rng), np.concatenate([normal, point]))


def _sphere_pair(seed, gap_direction=None, gap=None):
    rng = np.random.default_rng(seed)
    xb, qb, ob = rng.normal(size=3), random_quaternion(rng), 0.4 * rng.normal(size=3)
    cb = xb + rotate(qb, ob)
    if gap_direction is None:
        centre = cb + rng.normal(size=3)
    else:
        centre = cb + gap * np.asarray(gap_direction, float) / np.linalg.norm(gap_direction)
    xa, qa, offset = _place(rng, centre)
    return _pair("sphere", xa, qa, offset, rng.uniform(0.0, 0.8), xb, qb, np.concatenate([ob, [rng.uniform(0.0, 0.8)]]))


GEOMETRY_CASES = {
    **{f"halfspace random {s}": (lambda s=s: _halfspace_pair(s)) for s in range(3)},
    "halfspace ground": lambda: _halfspace_pair(7, [0, 0, 1], [0, 0, 0]),
    "halfspace normal +e_x (fallback)": lambda: _halfspace_pair(1, [1, 0, 0]),
    "halfspace normal -e_x (fallback)": lambda: _halfspace_pair(2, [-2, 0, 0]),
    "halfspace normal 5e-7 off e_x (fallback)": lambda: _halfspace_pair(3, [1, 5e-7, -1e-7]),
    "halfspace normal 2e-6 off e_x (no fallback)": lambda: _halfspace_pair(4, [1, 2e-6, 0]),
    **{f"sphere random {s}": (lambda s=s: _sphere_pair(s)) for s in range(3)},
    "sphere overlapping": lambda: _sphere_pair(5, [0.3, -0.2, 0.5], 0.2),
    "sphere coincident": lambda: _pair("sphere", np.array([0.1, 0.2, 0.3]), IDENTITY, ZERO3, 0.3,
                                       np.array([0.1, 0.2, 0.3]), IDENTITY, [0, 0, 0, 0.4]),
    "sphere normal 3e-7 off e_x (fallback)": lambda: _sphere_pair(7, [1, 3e-7, 0], 1.2),
    "sphere normal 3e-6 off -e_x (no fallback)": lambda: _sphere_pair(8, [-1, 0, 3e-6], 1.2),
    "capsule middle": lambda: _capsule_pair(0, 0.4, 0.9),
    "capsule near middle": lambda: _capsule_pair(1, 0.7, 0.2),
    "capsule end cap 1": lambda: _capsule_pair(2, -0.3, 0.8),
    "capsule end cap 2": lambda: _capsule_pair(3, 1.5, 0.6),
    "capsule end cap 1 overlapping": lambda: _capsule_pair(4, -0.2, 0.1),
    # exactly on the segment (|c - closest| = 0; a gap of rounding size would make the
    # distance Jacobian, (c - closest)/|c - closest| . d(c - closest), rounding noise)
    "capsule on segment": lambda: _pair("capsule", np.array([0, 0.5, 0]), IDENTITY, ZERO3, 0.2, ZERO3, IDENTITY,
                                        [0, 1, 0, 0, -1, 0, 0.3]),
    "capsule on segment along z": lambda: _pair("capsule", np.array([0, 0, -0.5]), IDENTITY, ZERO3, 0.2, ZERO3,
                                                IDENTITY, [0, 0, 1, 0, 0, -1, 0.3]),
    "capsule short segment": lambda: _capsule_pair(6, 0.0, 0.7, short=True),
    "capsule short segment, centre on it": lambda: _pair("capsule", np.array([0.3, 0, 0]), IDENTITY, ZERO3, 0.2,
                                                         ZERO3, IDENTITY, [0.3, 0, 0, 0.3, 0, 0, 0.3]),
    **{f"box {name}": (lambda p=p, s=s: _box_pair(s, p)) for s, (name, p) in enumerate(BOX_POINTS.items())},
    # exact ties (identity poses): the tie order +x, -x, +y, -y, +z, -z
    "box on the +x face": lambda: _pair("box", np.array([0.3, 0.1, 0.2]), IDENTITY, ZERO3, 0.15, ZERO3, IDENTITY,
                                        np.concatenate([ZERO3, BOX_HALF])),
    "box on the (-y, +z) edge": lambda: _pair("box", np.array([0.1, -0.5, 0.7]), IDENTITY, ZERO3, 0.15, ZERO3,
                                              IDENTITY, np.concatenate([ZERO3, BOX_HALF])),
    "box cube centre (all faces tied)": lambda: _pair("box", ZERO3, IDENTITY, ZERO3, 0.15, ZERO3, IDENTITY,
                                                      [0, 0, 0, 0.5, 0.5, 0.5]),
}
# Special cases whose branch changes within a finite-difference step, or (near e_x) whose
# tangents curve on a scale |e_x x n| ~ 1e-6 no larger than the step (checked against
# numpy and analytically, not by finite differences).
NOT_SMOOTH = {
    "halfspace normal 5e-7 off e_x (fallback)",
    "sphere coincident",
    "sphere normal 3e-7 off e_x (fallback)",
    "sphere normal 3e-6 off -e_x (no fallback)",
    "capsule on segment",
    "capsule on segment along z",
    "capsule short segment, centre on it",
    "box on the +x face",
    "box on the (-y, +z) edge",
    "box cube centre (all faces tied)",
}


def _numpy_geometry(case):
    contact = _numpy_contact()  # skips once the numpy code is gone
    from dojo_cli.physics import collision

    xa, qa, xb, qb = case["xa"][None], case["qa"][None], case["xb"][None], case["qb"][None]
    offset, radius, shape = case["offset"][None], np.array([case["radius"]]), case["shape"]
    kind = case["kind"]
    if kind == "halfspace":
        g = collision.sphere_halfspace(xa, qa, offset, radius, shape[0:3], shape[3:6])
    elif kind == "sphere":
        g = collision.sphere_sphere(xa, qa, offset, radius, xb, qb, shape[0:3], shape[3])
    elif kind == "capsule":
        g = collision.sphere_capsule(xa, qa, offset, radius, xb, qb, shape[0:3], shape[3:6], shape[6])
    else:
        g = collision.sphere_box(xa, qa, offset, radius, xb, qb, shape[0:3], shape[3:6])
    contact._parameter_columns(g, qa)
    return g


def _geometry(case, parameters=True):
    return core.contact_geometry(
        case["kind"], case["xa"], case["qa"], case["offset"], case["radius"], case["xb"], case["qb"], case["shape"],
        parameters,
    )


@pytest.mark.parametrize("name", list(GEOMETRY_CASES))
def test_geometry_matches_numpy(name):
    """Values and Jacobians (16 columns, and the 12-column variant) against collision.py."""
    case = GEOMETRY_CASES[name]()
    ref = _numpy_geometry(case)
    out = _geometry(case, parameters=True)
    out12 = _geometry(case, parameters=False)
    for f in GEOMETRY_FIELDS:
        jet = getattr(ref, f)
        assert_close(f"{name}: {f}", out[f], jet.value[0], NUMPY_RTOL)
        assert_close(f"{name}: {f}_jac", out[f + "_jac"], jet.jac[0], NUMPY_RTOL)
        assert np.array_equal(out12[f], out[f]), f"{name}: {f} differs between 12 and 16 columns"
        assert np.array_equal(out12[f + "_jac"], out[f + "_jac"][..., :12]), f"{name}: {f}_jac 12 vs 16 columns"


# ============================================================== (b) independent
def _geometry_values(case):
    g = _geometry(case, parameters=False)
    return {f: np.asarray(g[f], dtype=float) for f in GEOMETRY_FIELDS}


def _moved(case, e):
    """The case with the 16 coordinates [x_a, t_a, x_b, t_b, offset, radius] moved by e."""
    out = dict(case)
    out["xa"], out["qa"] = case["xa"] + e[0:3], qmul(case["qa"], qexp(e[3:6]))
    out["xb"], out["qb"] = case["xb"] + e[6:9], qmul(case["qb"], qexp(e[9:12]))
    out["offset"], out["radius"] = case["offset"] + e[12:15], case["radius"] + e[15]
    return out


@pytest.mark.parametrize("name", [n for n in GEOMETRY_CASES if n not in NOT_SMOOTH])
def test_geometry_jacobians_match_finite_differences(name):
    """d/d[x_a, t_a, x_b, t_b, offset, radius] of every field against central differences."""
    case = GEOMETRY_CASES[name]()
    out = _geometry(case, parameters=True)
    for k in range(16):
        e = np.zeros(16)
        e[k] = FD_STEP
        plus, minus = _geometry_values(_moved(case, e)), _geometry_values(_moved(case, -e))
        for f in GEOMETRY_FIELDS:
            fd = (plus[f] - minus[f]) / (2 * FD_STEP)
            assert_close(f"{name}: d {f} / d column {k}", np.asarray(out[f + "_jac"])[..., k], fd, FD_RTOL)


def _check_geometry_invariants(name, g):
    n, t = g["normal"], g["tangent"]
    assert abs(np.linalg.norm(n) - 1.0) < 1e-12, f"{name}: |n| = {np.linalg.norm(n)}"
    assert np.allclose(np.linalg.norm(t, axis=1), 1.0, atol=1e-12), f"{name}: |t| = {np.linalg.norm(t, axis=1)}"
    assert np.allclose(t @ n, 0.0, atol=1e-12) and abs(t[0] @ t[1]) < 1e-12, f"{name}: tangents not orthogonal"
    assert np.allclose(np.cross(t[0], n), t[1], atol=1e-12), f"{name}: t2 != t1 x n"
    assert np.allclose(g["point_a"] - g["point_b"], g["distance"] * n, atol=1e-12), f"{name}: pa - pb != d n"


@pytest.mark.parametrize("name", list(GEOMETRY_CASES))
def test_geometry_invariants(name):
    """Unit normal, orthonormal tangents with t2 = t1 x n, point_a - point_b = d n."""
    _check_geometry_invariants(name, _geometry(GEOMETRY_CASES[name]()))


def _simple(kind, xa, shape, radius=0.5, xb=ZERO3, qa=IDENTITY, qb=IDENTITY):
    return _geometry(_pair(kind, np.asarray(xa, float), qa, ZERO3, radius, np.asarray(xb, float), qb, shape))


@pytest.mark.parametrize(
    "xb, normal, tangent",
    [
        ([0.0, 0.0, 2.0], [0, 0, -1], [[0, 1, 0], [-1, 0, 0]]),
        ([2.0, 0.0, 0.0], [-1, 0, 0], [[0, 0, 1], [0, -1, 0]]),  # the e_y fallback
        ([0.0, 2.0, 0.0], [0, -1, 0], [[0, 0, -1], [-1, 0, 0]]),
    ],
)
def test_dojo_sphere_sphere_axes(xb, normal, tangent):
    """Dojo's collisions.jl: a (parent) r 0.5 at the origin, b (child) r 0.5 at 2 along an axis."""
    g = _simple("sphere", ZERO3, [0, 0, 0, 0.5], xb=xb)
    axis = np.array(xb) / 2.0
    assert np.allclose(g["distance"], 1.0, atol=1e-12)
    assert np.allclose(g["point_a"], 0.5 * axis, atol=1e-12)
    assert np.allclose(g["point_b"], 1.5 * axis, atol=1e-12)
    assert np.allclose(g["normal"], normal, atol=1e-12)
    assert np.allclose(g["tangent"], tangent, atol=1e-12)


def test_dojo_sphere_sphere_diagonal():
    """Dojo's child at [2, 2, 2]; its tangent rows are ours times |e_x x n| (Dojo does not normalise)."""
    g = _simple("sphere", ZERO3, [0, 0, 0, 0.5], xb=[2.0, 2.0, 2.0])
    assert np.allclose(g["distance"], 2.4641016, atol=1e-4)
    assert np.allclose(g["point_a"], 0.288675, atol=1e-4)
    assert np.allclose(g["point_b"], 1.711324, atol=1e-4)
    assert np.allclose(g["normal"], -0.57735, atol=1e-4)
    dojo_rows = np.array([[0.0, 0.57735, -0.57735], [-0.66666, 0.33333, 0.33333]])
    assert np.allclose(np.linalg.norm(np.cross([1.0, 0, 0], g["normal"])) * g["tangent"], dojo_rows, atol=1e-4)


@pytest.mark.parametrize("kind, shape", [("capsule", [0, 1, 0, 0, -1, 0, 0.5]), ("box", [0, 0, 0, 0.5, 0.5, 0.5])])
def test_dojo_sphere_capsule_and_box(kind, shape):
    """Dojo: sphere r 0.5 (a) at [0, 0, 2] above a capsule (segment (0, +-1, 0), r 0.5) or a unit box (b)."""
    g = _simple(kind, [0.0, 0.0, 2.0], shape)
    assert np.allclose(g["distance"], 1.0, atol=1e-12)
    assert np.allclose(g["normal"], [0, 0, 1], atol=1e-12)
    assert np.allclose(g["point_a"], [0, 0, 1.5], atol=1e-12)
    assert np.allclose(g["point_b"], [0, 0, 0.5], atol=1e-12)
    assert np.allclose(g["tangent"], [[0, -1, 0], [-1, 0, 0]], atol=1e-12)


def test_tangent_fallback():
    """Normals within 1e-6 of +-e_x take e_y x n; just outside they keep e_x x n."""
    cases = {(1.0, 0.0): [[0, 0, -1], [0, -1, 0]], (-1.0, 0.0): [[0, 0, 1], [0, -1, 0]], (1.0, 1e-7): [[0, 0, -1], [0, -1, 0]]}
    for (nx, ny), tangent in cases.items():
        g = _simple("halfspace", [0, 0, 1.0], [nx, ny, 0, 0, 0, 0])
        assert np.allclose(g["tangent"], tangent, atol=1e-6), f"n = ({nx}, {ny}): {g['tangent']}"
    g = _simple("halfspace", [0, 0, 1.0], [1.0, 2e-6, 0, 0, 0, 0])
    assert np.allclose(g["tangent"][0], [0, 0, 1], atol=1e-9), f"no fallback: t1 = {g['tangent'][0]}"


def test_sphere_coincident_centres():
    """Coincident centres: normal world +z (zero Jacobian), distance -(ra + rb)."""
    g = _geometry(GEOMETRY_CASES["sphere coincident"]())
    case = GEOMETRY_CASES["sphere coincident"]()
    assert np.allclose(g["distance"], -(case["radius"] + case["shape"][3]), atol=1e-12)
    assert np.array_equal(g["normal"], [0.0, 0.0, 1.0]) and not np.any(g["normal_jac"])


@pytest.mark.parametrize(
    "end1, end2, normal",
    [
        ([0, 1, 0], [0, -1, 0], [0, 0, 1]),  # +z is perpendicular to the segment
        ([0, 0, 1], [0, 0, -1], [1, 0, 0]),  # segment along z: +x
        ([0, 1, 1], [0, -1, -1], [0, -0.5**0.5, 0.5**0.5]),  # +z made perpendicular
        ([0.3, 0, 0], [0.3, 0, 0], [0, 0, 1]),  # zero-length segment: a sphere
    ],
)
def test_capsule_centre_on_segment(end1, end2, normal):
    end1, end2 = np.array(end1, float), np.array(end2, float)
    centre = 0.25 * end1 + 0.75 * end2
    g = _simple("capsule", centre, np.concatenate([end1, end2, [0.3]]), radius=0.2)
    assert np.allclose(g["distance"], -0.5, atol=1e-12)
    assert np.allclose(g["normal"], normal, atol=1e-12)
    assert np.allclose(g["point_b"], centre + 0.3 * np.array(normal), atol=1e-12)


@pytest.mark.parametrize(
    "local, half, normal, depth",
    [
        ([0.2, 0.1, 0.2], [0.3, 0.5, 0.7], [1, 0, 0], 0.1),
        ([-0.25, 0.1, 0.2], [0.3, 0.5, 0.7], [-1, 0, 0], 0.05),
        ([0.05, 0.44, 0.2], [0.3, 0.5, 0.7], [0, 1, 0], 0.06),
        ([0.05, -0.42, 0.2], [0.3, 0.5, 0.7], [0, -1, 0], 0.08),
        ([0.0, 0.1, 0.6], [0.3, 0.5, 0.7], [0, 0, 1], 0.1),
        ([0.0, 0.1, -0.65], [0.3, 0.5, 0.7], [0, 0, -1], 0.05),
        ([0.3, 0.1, 0.2], [0.3, 0.5, 0.7], [1, 0, 0], 0.0),  # on the +x face
        ([0.1, -0.5, 0.7], [0.3, 0.5, 0.7], [0, -1, 0], 0.0),  # on the (-y, +z) edge: first tied face
        ([0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [1, 0, 0], 0.5),  # cube centre: all tied, +x first
    ],
)
def test_box_centre_inside_pushed_out_through_the_nearest_face(local, half, normal, depth):
    g = _simple("box", local, np.concatenate([ZERO3, half]), radius=0.2)
    assert np.allclose(g["distance"], -depth - 0.2, atol=1e-12)
    assert np.allclose(g["normal"], normal, atol=1e-12)
    assert np.allclose(g["point_b"], np.array(local) + depth * np.array(normal), atol=1e-12)


# ------------------------------------------------------------ the kernel
KERNEL_CASES = {
    "ground": lambda rng: dict(kind="halfspace", other=-1, shape=[0, 0, 1, 0, 0, 0]),
    "tilted half-space": lambda rng: dict(kind="halfspace", other=-1, shape=[0.1, -0.3, 0.9, 0.1, 0.2, -0.3]),
    "sphere": lambda rng: dict(kind="sphere", other=1, shape=[0.1, -0.2, 0.05, 0.4]),
    "capsule": lambda rng: dict(kind="capsule", other=1, shape=[0.1, -0.3, 0.2, -0.2, 0.4, 0.1, 0.3]),
    "box": lambda rng: dict(kind="box", other=1, shape=[0.05, 0.1, -0.1, 0.3, 0.4, 0.5]),
}


def _kernel_case(name, model, seed):
    """A contact, z2 and xi25 of both bodies, s and gamma; body a's sphere near b's shape."""
    rng = np.random.default_rng(seed)
    params = dict(body=0, model=model, friction=0.7, radius=0.25, offset=[0.1, -0.2, 0.15], **KERNEL_CASES[name](rng))
    h = 0.01
    xb, qb = 0.2 * rng.normal(size=3), random_quaternion(rng)
    qa = random_quaternion(rng)
    near = xb + 0.6 * rng.normal(size=3) if params["other"] >= 0 else 0.3 * rng.normal(size=3)
    xa = near - rotate(qa, np.asarray(params["offset"]))
    xi = np.concatenate([rng.normal(size=3), 5 * rng.normal(size=3), rng.normal(size=3), 5 * rng.normal(size=3)])
    if params["other"] < 0:
        xi[6:] = 0.0
    return params, h, (xa, qa, xb, qb), xi, random_cone_point(rng, model), random_cone_point(rng, model)


def _kernel(params, h, z2, xi, s, gamma, output="jacobians", reference=False):
    """evaluate_contact at z3 = (x2 + h v25, q2 qmap(w25)) for both bodies."""
    xa, qa, xb, qb = z2
    a = body_state(xa + h * xi[0:3], qmul(qa, integrator_map(xi[3:6], h)), xi[0:3], xi[3:6], h)
    if params["other"] < 0:
        b = WORLD
    else:
        b = body_state(xb + h * xi[6:9], qmul(qb, integrator_map(xi[9:12], h)), xi[6:9], xi[9:12], h)
    return evaluate(params, h, a, b, s, gamma, output, reference)


def _fd(f, x, k):
    e = np.zeros_like(x)
    e[k] = FD_STEP
    plus, minus = f(x + e), f(x - e)
    return {name: (plus[name] - minus[name]) / (2 * FD_STEP) for name in ("comp", "cons", "wrench")}


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", list(KERNEL_CASES))
def test_kernel_jacobians_match_finite_differences(name, model):
    """cons_body, wrench_body (through z3 and directly), comp_jac, cons_local, wrench_gamma,
    cons_z3, wrench_z3 and the parameter columns against central differences of comp, cons, wrench."""
    for seed in range(3):
        params, h, z2, xi, s, gamma = _kernel_case(name, model, seed)
        n = HALF[model]
        out = _kernel(params, h, z2, xi, s, gamma, "parameters")
        tag = f"{name}/{model} seed {seed}"
        columns = range(12) if params["other"] >= 0 else range(6)
        for k in columns:  # body velocities xi25 = (v_a, w_a, v_b, w_b)
            fd = _fd(lambda x: _kernel(params, h, z2, x, s, gamma, "residual"), xi, k)
            assert_close(f"{tag}: cons_body[:, {k}]", out["cons_body"][:, k], fd["cons"], FD_RTOL)
            assert_close(f"{tag}: wrench_body[:, {k}]", out["wrench_body"][:, k], fd["wrench"], FD_RTOL)
        for k in range(2 * n):  # [s, gamma]
            sg = np.concatenate([s, gamma])
            fd = _fd(lambda x: _kernel(params, h, z2, xi, x[:n], x[n:], "residual"), sg, k)
            assert_close(f"{tag}: comp_jac[:, {k}]", out["comp_jac"][:, k], fd["comp"], FD_RTOL)
            assert_close(f"{tag}: cons_local[:, {k}]", out["cons_local"][:, k], fd["cons"], FD_RTOL)
            if k >= n:
                assert_close(f"{tag}: wrench_gamma[:, {k - n}]", out["wrench_gamma"][:, k - n], fd["wrench"], FD_RTOL)
        # z3 at fixed xi25: move the next configuration itself
        xa, qa, xb, qb = z2
        a3 = (xa + h * xi[0:3], qmul(qa, integrator_map(xi[3:6], h)))
        b3 = (xb + h * xi[6:9], qmul(qb, integrator_map(xi[9:12], h)))

        def at_z3(e, p=params):
            a = body_state(a3[0] + e[0:3], qmul(a3[1], qexp(e[3:6])), xi[0:3], xi[3:6], h)
            b = WORLD if p["other"] < 0 else body_state(b3[0] + e[6:9], qmul(b3[1], qexp(e[9:12])), xi[6:9], xi[9:12], h)
            return evaluate(p, h, a, b, s, gamma, "residual")

        for k in columns:
            fd = _fd(at_z3, np.zeros(12), k)
            assert_close(f"{tag}: cons_z3[:, {k}]", out["cons_z3"][:, k], fd["cons"], FD_RTOL)
            assert_close(f"{tag}: wrench_z3[:, {k}]", out["wrench_z3"][:, k], fd["wrench"], FD_RTOL)
        for k in range(4):  # the sphere's offset and radius

            def at_parameters(p4):
                p = dict(params, offset=p4[:3], radius=p4[3])
                return at_z3(np.zeros(12), p)

            fd = _fd(at_parameters, np.concatenate([params["offset"], [params["radius"]]]), k)
            assert_close(f"{tag}: cons_parameters[:, {k}]", out["cons_parameters"][:, k], fd["cons"], FD_RTOL)
            assert_close(f"{tag}: wrench_parameters[:, {k}]", out["wrench_parameters"][:, k], fd["wrench"], FD_RTOL)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", list(KERNEL_CASES))
def test_hand_chained_jacobians_match_all_dual_reference(name, model):
    """evaluate_contact's hand-chained Jacobians against dual numbers through every operation."""
    for seed in range(4):
        params, h, z2, xi, s, gamma = _kernel_case(name, model, 20 + seed)
        fast = _kernel(params, h, z2, xi, s, gamma, "parameters")
        ref = _kernel(params, h, z2, xi, s, gamma, "parameters", reference=True)
        for key, value in ref.items():
            if key in ("comp", "cons", "wrench", "distance", "normal_impulse", "friction_impulse", "slip"):
                assert np.array_equal(fast[key], value), f"{name}/{model} seed {seed}: {key} values differ"
            else:
                assert_close(f"{name}/{model} seed {seed}: {key}", fast[key], value, REFERENCE_RTOL)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", list(KERNEL_CASES))
def test_residual_path_equals_derivative_path(name, model):
    """The residual-only path (plain doubles) gives bitwise the values of the dual-number paths."""
    params, h, z2, xi, s, gamma = _kernel_case(name, model, 11)
    res = _kernel(params, h, z2, xi, s, gamma, "residual")
    jac = _kernel(params, h, z2, xi, s, gamma, "jacobians")
    par = _kernel(params, h, z2, xi, s, gamma, "parameters")
    for key in ("comp", "cons", "wrench", "distance", "normal_impulse", "friction_impulse", "slip"):
        assert np.array_equal(res[key], jac[key]), f"{name}/{model}: {key} differs with jacobians"
        assert np.array_equal(res[key], par[key]), f"{name}/{model}: {key} differs with parameters"
    for key in ("comp_jac", "cons_local", "cons_body", "wrench_gamma", "wrench_body", "cons_z3", "wrench_z3"):
        assert np.array_equal(jac[key], par[key]), f"{name}/{model}: {key} differs with parameters"


@pytest.mark.parametrize("model", MODELS)
def test_world_has_no_columns(model):
    """Against the world, every body-b column and the wrench's b half are zero."""
    params, h, z2, xi, s, gamma = _kernel_case("ground", model, 3)
    out = _kernel(params, h, z2, xi, s, gamma, "parameters")
    for key in ("cons_body", "cons_z3"):
        assert not np.any(out[key][:, 6:]), key
    for key in ("wrench_body", "wrench_z3"):
        assert not np.any(out[key][6:]) and not np.any(out[key][:, 6:]), key
    assert not np.any(out["wrench"][6:]) and not np.any(out["wrench_gamma"][6:])


def test_resting_ball_on_the_ground():
    """Analytic: a ball of radius r at height z with impulse gn: d = z - r, wrench (0, 0, gn) and no torque."""
    params = dict(body=0, model="nonlinear", kind="halfspace", other=-1, friction=0.5, radius=0.5, offset=ZERO3,
                  shape=[0, 0, 1, 0, 0, 0])
    a = dict(x=np.array([0.3, -0.2, 0.6]), q=IDENTITY, v=ZERO3, w=ZERO3, mw=0.01 * np.eye(3))
    s, gamma = np.array([0.1, 1.0, 0.0, 0.0]), np.array([2.0, 1.0, 0.0, 0.0])
    out = evaluate(params, 0.01, a, WORLD, s, gamma)
    assert np.isclose(out["distance"], 0.1, atol=1e-15)
    assert np.allclose(out["wrench"], [0, 0, 2.0] + [0] * 9, atol=1e-15)
    assert np.allclose(out["cons"], [0.0, 0.5 * 2.0 - 1.0, 0.0, 0.0], atol=1e-15)
    assert np.allclose(out["comp"], [0.2, 1.0, 0.0, 0.0], atol=1e-15)


@pytest.mark.parametrize("model, s", [("impact", [1.5]), ("nonlinear", [1.5, 1.5, 0, 0]), ("linear", [1.5] * 6)])
def test_contact_starting_point(model, s):
    """Dojo's starting point (notes 5.3): 1.5 in the orthant, (1.5, 0, 0) in the second-order cones."""
    s0, g0 = core.contact_starting_point(model)
    assert core.contact_half_size(model) == HALF[model]
    assert np.array_equal(s0, s) and np.array_equal(g0, s)
