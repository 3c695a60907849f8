"""`dojo analyze --symbolic` (issue 29, skydy's symbolic side): the equations of motion, the
equilibria and the linearisations as sympy expressions in the scene's parameters, checked
against the C++ core (minimal M, C, passive forces, B, E and dojo analyze's A, B) at several
states, at the scene's values and at other parameter values, and against closed forms."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli import analysis, minimal
from dojo_cli.analysis import symbolic
from dojo_cli.cli.app import app

# The symbolic and the core's numbers are the same formulas in double precision (measured
# agreement 1e-15); the brief's bound. dojo analyze's A takes its springs' part by central
# differences (step 1e-5), exact for a linear spring to rounding.
TOL = 1e-9
runner = CliRunner()


def _states(model, n=3, seed=0):
    rng = np.random.default_rng(seed)
    x0 = minimal.init_state(model)
    return [x0] + [x0 + rng.uniform(-1.0, 1.0, model.nx) for _ in range(n)]


def _assert_matches_core(eqs, mech, values=None):
    """M, C + G, tau_passive, B, E of the expressions (at ``values``: label -> value, else the
    scene's) equal the core's of ``mech`` at several states."""
    model = minimal.build_model(mech)
    for x in _states(model):
        got = {name: symbolic.evaluate(eqs, getattr(eqs, name), x, values) for name in ("M", "C", "G", "tau_passive", "B", "E")}
        pairs = [("M", got["M"], minimal.M_func(model, x)), ("C + G", got["C"] + got["G"], minimal.C_func(model, x)),
                 ("tau_passive", got["tau_passive"], minimal.passive_forces(model, x)),
                 ("E", got["E"], minimal.velocity_kinematics(model, x))]
        if model.nu:
            pairs.append(("B", got["B"], minimal.B_func(model, x)))
        for name, sym, core in pairs:
            d = symbolic.relative_difference(sym, core)
            assert d < TOL, f"{eqs.scene_name}: {name} differs from the core by {d:.2e} at x = {x}"


@pytest.mark.parametrize("scene", ["pendulum", "double_pendulum", "cartpole", "skydy_cart_pendulum",
                                   "skydy_hovercraft", "skydy_double_pendulum"])
def test_equations_equal_the_core_at_several_states(scene):
    mech = dojo.load_scene(scene)
    eqs = symbolic.derive(mech)
    _assert_matches_core(eqs, mech)
    # and the linearisation about each equilibrium equals dojo analyze's numeric one
    symbolic.equilibria(eqs)
    assert eqs.equilibria
    for e in eqs.equilibria:
        A, B = symbolic.first_order(eqs, e)
        lin = analysis.linearize(eqs.model, e.x, accessibility=False)
        dA, dB = symbolic.relative_difference(A, lin.A), symbolic.relative_difference(B, lin.B)
        assert max(dA, dB) < TOL, f"{scene}: A, B at {e.q} differ from dojo analyze's by {dA:.2e}, {dB:.2e}"


def test_expressions_hold_at_other_parameter_values():
    """The expressions are functions of the parameters, not of the scene's numbers: derived
    once, evaluated with other masses, inertia, gravity, lengths, spring, damper and offset,
    they equal the core's for the scene rebuilt with those values."""
    base = {"joints.pole_hinge.spring": 1.0, "joints.pole_hinge.damper": 0.2, "joints.pole_hinge.spring_offset": [0.3],
            "joints.cart_slider.damper": 0.1}
    eqs = symbolic.derive(dojo.load_scene("cartpole", overrides=base))
    assert {"bodies.pole.mass", "bodies.pole.inertia.xx", "gravity.z", "joints.pole_hinge.child_vertex.z",
            "joints.pole_hinge.spring.0", "joints.pole_hinge.damper.0", "joints.pole_hinge.spring_offset.0",
            "joints.cart_slider.damper.0"} <= set(eqs.used_parameters())
    other = {**base, "bodies.cart.mass": 2.5, "bodies.pole.mass": 0.7, "bodies.pole.inertia": [0.3, 0.2, 0.05],
             "gravity": [0, 0, -3.7], "joints.pole_hinge.child_vertex": [0, 0, -0.8], "joints.pole_hinge.spring": 2.5,
             "joints.pole_hinge.damper": 0.6, "joints.pole_hinge.spring_offset": [-0.4], "joints.cart_slider.damper": 0.9}
    mech = dojo.load_scene("cartpole", overrides=other)
    values = {"bodies.cart.mass": 2.5, "bodies.pole.mass": 0.7, "bodies.pole.inertia.xx": 0.3, "bodies.pole.inertia.yy": 0.2,
              "bodies.pole.inertia.zz": 0.05, "gravity.z": -3.7, "joints.pole_hinge.child_vertex.z": -0.8,
              "joints.pole_hinge.spring.0": 2.5, "joints.pole_hinge.damper.0": 0.6,
              "joints.pole_hinge.spring_offset.0": -0.4, "joints.cart_slider.damper.0": 0.9}
    values = {k: v for k, v in values.items() if k in eqs.parameters}
    _assert_matches_core(eqs, mech, values)
    # the same values through dojo.with_parameters (the gradient labels) for the kinds it has
    labels = ["bodies.pole.mass", "gravity.z", "joints.pole_hinge.spring.0", "joints.pole_hinge.damper.0"]
    mech2 = dojo.with_parameters(dojo.load_scene("cartpole", overrides=base), labels, [1.9, -1.62, 4.0, 0.05])
    _assert_matches_core(eqs, mech2, dict(zip(labels, [1.9, -1.62, 4.0, 0.05])))


def test_cart_pendulum_is_skydys_closed_form():
    """skydy's cart-pendulum (scenes/skydy/skydy_cart_pendulum.yaml): M = [[m_c + m_p, -l m_p
    sin th], [., I_yy + l^2 m_p]], the right-hand side [F + l m_p cos th th'^2; g l m_p cos th
    + tau] (with our child_vertex c_x = -l and g_z = -g); equilibria th =
    +-pi/2 exactly, the cart anywhere."""
    eqs = symbolic.derive(dojo.load_scene("skydy_cart_pendulum"))
    P = eqs.parameters
    mc, mp, Iyy, cx, gz = (P[k] for k in ("bodies.cart.mass", "bodies.pole.mass", "bodies.pole.inertia.yy",
                                          "joints.pole_joint.child_vertex.x", "gravity.z"))
    x, th = eqs.q
    xd, thd = eqs.v
    l, g = -cx, -gz
    expected_M = sp.Matrix([[mc + mp, -l * mp * sp.sin(th)], [-l * mp * sp.sin(th), Iyy + l**2 * mp]])
    assert sp.simplify(eqs.M - expected_M) == sp.zeros(2, 2)
    # M v' = B u - C - G with skydy's right-hand side [F + l m_p cos th th'^2; g l m_p cos th + tau]
    assert sp.simplify(eqs.C - sp.Matrix([-l * mp * sp.cos(th) * thd**2, 0])) == sp.zeros(2, 1)
    assert sp.simplify(eqs.G - sp.Matrix([0, -g * l * mp * sp.cos(th)])) == sp.zeros(2, 1)
    assert eqs.B == sp.eye(2) and eqs.tau_passive == sp.zeros(2, 1) and eqs.E == sp.eye(2)
    symbolic.equilibria(eqs)
    assert [(e.exact, e.free, e.q[1]) for e in eqs.equilibria] == [(True, ["cart_joint"], sp.pi / 2),
                                                                   (True, ["cart_joint"], -sp.pi / 2)]
    # hanging (th = pi/2, sin th = 1): K = dG/dth = diag(0, g l m_p) and A's pole row is
    # -(M^-1 K) = -(m_c + m_p) g l m_p / det M, det M = (m_c + m_p)(I + l^2 m_p) - l^2 m_p^2
    A = eqs.equilibria[0].lin["A"]
    det = (mc + mp) * (Iyy + l**2 * mp) - l**2 * mp**2
    assert sp.simplify(A[3, 1] + (mc + mp) * mp * g * l / det) == 0, A[3, 1]


def test_double_pendulum_equilibria_are_the_four_flips():
    eqs = symbolic.derive(dojo.load_scene("skydy_double_pendulum"))
    symbolic.equilibria(eqs)
    got = sorted((str(e.q[0]), str(e.q[1])) for e in eqs.equilibria)
    assert got == sorted([("pi/2", "0"), ("pi/2", "-pi"), ("-pi/2", "0"), ("-pi/2", "-pi")]), got
    assert all(e.exact and e.lin["A"] is not None for e in eqs.equilibria)


def test_sprung_equilibria_are_the_cores_numbers_where_no_closed_form_exists():
    """A spring against gravity: m g l cos th = k (th - th0) has no closed form; the
    equilibria are the core's, marked numeric, their A at the scene's values dojo analyze's."""
    mech = dojo.load_scene("skydy_pendulum", overrides={"joints.pivot.spring": 3.0, "joints.pivot.spring_offset": [5.0]})
    eqs = symbolic.derive(mech)
    symbolic.equilibria(eqs)
    assert eqs.equilibria and not any(e.exact for e in eqs.equilibria)
    model = eqs.model
    for e in eqs.equilibria:
        r = minimal.C_func(model, e.x) - minimal.passive_forces(model, e.x)
        assert np.max(np.abs(r)) < 1e-8, f"equilibrium {e.x} has residual {r} (a sprung angle must not be wrapped)"
        lin = analysis.linearize(model, e.x, accessibility=False)
        A, _ = symbolic.first_order(eqs, e)
        assert symbolic.relative_difference(A, lin.A) < TOL


def test_past_the_explicit_inverse_the_blocks_are_given(monkeypatch):
    """Past EXPLICIT_INVERSE_MAX free coordinates A is given as its blocks M*, K*, D*, B* at
    the equilibrium; solved, they are dojo analyze's A, B."""
    monkeypatch.setattr(symbolic, "EXPLICIT_INVERSE_MAX", 1)
    eqs = symbolic.derive(dojo.load_scene("cartpole", overrides={"joints.pole_hinge.damper": 0.3}))
    symbolic.equilibria(eqs)
    for e in eqs.equilibria:
        assert e.lin["A"] is None and e.lin["K"].free_symbols
        A, B = symbolic.first_order(eqs, e)
        lin = analysis.linearize(eqs.model, e.x, accessibility=False)
        assert symbolic.relative_difference(A, lin.A) < TOL and symbolic.relative_difference(B, lin.B) < TOL
    assert any("M*[" in line for line in symbolic.text_lines(eqs))


def test_a_four_coordinate_chain_on_a_cart(tmp_path):
    """The size limit's largest case: a cart carrying a triple pendulum (4 coordinates)."""
    scene = tmp_path / "cart_triple.yaml"
    scene.write_text("""\
name: cart_triple
timestep: 0.01
gravity: [0, 0, -9.81]
duration: 1.0
bodies:
  - {name: cart, shape: {type: box, size: [0.4, 0.2, 0.2]}, mass: 2.0}
  - {name: l1, shape: {type: box, size: [0.05, 0.05, 1.0]}, mass: 1.0}
  - {name: l2, shape: {type: box, size: [0.05, 0.05, 0.8]}, mass: 0.7}
  - {name: l3, shape: {type: box, size: [0.05, 0.05, 0.6]}, mass: 0.5}
joints:
  - {name: slide, type: prismatic, parent: origin, child: cart, axis: [1, 0, 0], spring: 2.0, damper: 0.3}
  - {name: j1, type: revolute, parent: cart, child: l1, axis: [0, 1, 0], child_vertex: [0, 0, 0.5], damper: 0.1}
  - {name: j2, type: revolute, parent: l1, child: l2, axis: [0, 1, 0], parent_vertex: [0, 0, -0.5], child_vertex: [0, 0, 0.4]}
  - {name: j3, type: revolute, parent: l2, child: l3, axis: [0, 1, 0], parent_vertex: [0, 0, -0.4], child_vertex: [0, 0, 0.3]}
""")
    mech = dojo.load_scene(str(scene))
    eqs = symbolic.derive(mech)
    _assert_matches_core(eqs, mech)


@pytest.mark.parametrize("scene, message", [
    ("npendulum", "npendulum: 5 minimal coordinates; the symbolic analysis takes at most 4"),
    ("spherical_chain", "joints with more than one rotation (floating_base (floating)"),
    ("box", "box: has contacts (corner_ppp"),
    ("fourbar", "fourbar: loop-closing joints (j5)"),
])
def test_refusals_name_the_limit(scene, message):
    res = runner.invoke(app, ["analyze", scene, "--symbolic"])
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_cli_prints_and_writes_text_json_and_latex(tmp_path):
    out_json, out_txt, tex = tmp_path / "cp.json", tmp_path / "cp.txt", tmp_path / "cp.tex"
    res = runner.invoke(app, ["analyze", "skydy_cart_pendulum", "--symbolic", "-o", str(out_json), "--latex", str(tex)])
    assert res.exit_code == 0, res.output
    assert "M[cart_joint:dot, cart_joint:dot] = bodies.cart.mass + bodies.pole.mass" in res.output
    assert "equilibrium 0: cart_joint any, pole_joint = pi/2 (exact)" in res.output
    assert f"wrote {out_json}" in res.output and f"wrote {tex}" in res.output
    doc = json.loads(out_json.read_text())
    assert doc["q"] == ["cart_joint", "pole_joint"] and doc["parameters"]["bodies.pole.mass"] == 1.0
    assert doc["M"][0][0] == "bodies.cart.mass + bodies.pole.mass"
    assert [e["q"][1] for e in doc["equilibria"]] == ["pi/2", "-pi/2"]
    assert doc["check"]["dynamics"] < TOL and doc["check"]["linearization"] < TOL
    text = tex.read_text()
    assert "m_{\\mathrm{pole}}" in text and "\\texttt{bodies.pole.mass}" in text and "\\begin{tabular}" in text
    res = runner.invoke(app, ["analyze", "skydy_cart_pendulum", "--symbolic", "-o", str(out_txt)])
    assert res.exit_code == 0 and out_txt.read_text().splitlines()[0].startswith("skydy_cart_pendulum: symbolic")
    res = runner.invoke(app, ["analyze", "skydy_cart_pendulum", "--symbolic", "-o", str(out_txt)])
    assert res.exit_code == 3 and "already exists" in res.output
    res = runner.invoke(app, ["analyze", "skydy_cart_pendulum", "--symbolic", "-o", str(tmp_path / "x.h5")])
    assert res.exit_code == 2 and "with --symbolic use .json or .txt" in res.output


def test_a_locked_elbow_leaves_the_shoulders_equations():
    """Drake's Lock (docs/analysis.md "Locked joints"): the linearisation is the free
    coordinates' (a 2 x 2 A for the shoulder), equal to dojo analyze's; the held elbow angle
    0.3 has no closed-form equilibrium (pi/2 - atan2(sin 0.3, 3 + cos 0.3)), so the
    equilibria are the core's numbers."""
    mech = dojo.load_scene("skydy_double_pendulum", overrides={"joints.joint2.locked": True, "joints.joint1.damper": 0.5})
    eqs = symbolic.derive(mech)
    symbolic.equilibria(eqs)
    assert len(eqs.equilibria) == 2 and not any(e.exact for e in eqs.equilibria)
    expected = np.pi / 2 - np.arctan2(np.sin(0.3), 3 + np.cos(0.3))
    assert abs(float(eqs.equilibria[0].q[0]) - expected) < 1e-9
    for e in eqs.equilibria:
        A, B = symbolic.first_order(eqs, e)
        assert A.shape == (2, 2) and B.shape == (2, 2)
        lin = analysis.linearize(eqs.model, e.x, accessibility=False)
        assert symbolic.relative_difference(A, lin.A) < TOL and symbolic.relative_difference(B, lin.B) < TOL
    assert "equilibrium 0: joint1 = 1.49622058464, joint2 = 0.3 (numeric" in "\n".join(symbolic.text_lines(eqs))
