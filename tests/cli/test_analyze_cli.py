"""`dojo analyze` (issue 14 item 3) on skydy's examples (item 5): equilibria, poles and
stability against the closed forms skydy derives, controllability and accessibility ranks,
the discrete step's eigenvalues against exp(h lambda), the file round trip, and errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli import analysis, minimal
from dojo_cli.cli.app import app
from dojo_cli.io.dynamics_files import read_dynamics_file

runner = CliRunner()
G = 9.81
# skydy's numeric substitution: m = 1, inertias 1; the pendulum's COM l_c = 1 from the joint
M, I_YY, LC = 1.0, 1.0, 1.0


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def analyze_json(*args) -> dict:
    res = invoke("analyze", *args, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _eig(pairs) -> np.ndarray:
    return np.array([complex(re, im) for re, im in pairs])


def test_pendulum_equilibria_and_poles():
    doc = analyze_json("skydy_pendulum", "--equilibria")
    eqs = doc["equilibria"]
    assert len(eqs) == 2
    omega = np.sqrt(M * G * LC / (I_YY + M * LC**2))
    hanging, inverted = eqs  # sorted by potential energy
    assert abs(hanging["q"][0] - np.pi / 2) < 1e-9 and abs(inverted["q"][0] + np.pi / 2) < 1e-9
    assert hanging["stable"] is True and inverted["stable"] is False
    assert np.allclose(np.sort_complex(_eig(hanging["eigenvalues"])), [-1j * omega, 1j * omega], atol=1e-9, rtol=0)
    assert np.allclose(np.sort_complex(_eig(inverted["eigenvalues"])), [-omega, omega], atol=1e-9, rtol=0)
    assert doc["state_names"] == ["pivot", "pivot:dot"] and doc["input_names"] == ["T_y"]


def test_pendulum_linearisation_is_skydys_with_the_inverse_mass():
    # skydy: (I_yy + m l_c^2) th'' = m g l_c cos th + tau; about th: A = [[0, 1], [-m g l_c sin th / J, 0]]
    th = 0.3  # the scene's initial angle
    doc = analyze_json("skydy_pendulum", "--at", "initial")
    J = I_YY + M * LC**2
    A = np.array(doc["A"]["data"])
    assert np.allclose(A, [[0, 1], [-M * G * LC * np.sin(th) / J, 0]], atol=1e-12)
    assert np.allclose(doc["B"]["data"], [[0], [1 / J]], atol=1e-12)
    assert np.allclose(doc["M"]["data"], [[J]], atol=1e-12)
    assert np.allclose(doc["bias"]["data"], [-M * G * LC * np.cos(th)], atol=1e-12)
    assert doc["controllability_rank"] == 2 and doc["accessibility_rank"] == 2


def test_cart_pendulum_mass_matrix_and_controllability():
    th = 1.2
    doc = analyze_json("skydy_cart_pendulum", "--at", "initial")
    # skydy: G = [[m_c + m_p, -l m_p sin th], [-l m_p sin th, I_yy + l^2 m_p]], RHS = [F; g l m_p cos th + tau]
    assert np.allclose(doc["M"]["data"], [[2.0, -np.sin(th)], [-np.sin(th), 2.0]], atol=1e-12)
    assert np.allclose(doc["bias"]["data"], [0.0, -G * np.cos(th)], atol=1e-12)
    doc = analyze_json("skydy_cart_pendulum", "--equilibria", "--at", "equilibrium:0")
    assert len(doc["equilibria"]) == 2
    assert doc["equilibria"][0]["free"] == ["cart_joint"]
    assert doc["controllability_rank"] == 4 and doc["accessibility_rank"] == 4
    # hanging: a double zero eigenvalue (the cart's drift, a Jordan block) -> not stable
    assert doc["stable"] is False and "Jordan" in doc["stability"]


def test_hovercraft_not_linearly_controllable_but_accessible():
    doc = analyze_json("skydy_hovercraft", "--at", "initial")
    assert doc["state_names"][:3] == ["plane:x", "plane:y", "plane:qz"]
    assert doc["controllability_rank"] == 4
    assert doc["accessibility_rank"] == 6
    assert doc["accessibility_depth"] == 3  # [f, [g_T, [f, g_F]]] reaches y


def test_double_pendulum_four_equilibria_one_stable():
    doc = analyze_json("skydy_double_pendulum", "--equilibria")
    eqs = doc["equilibria"]
    assert len(eqs) == 4
    assert [e["stable"] for e in eqs] == [True, False, False, False]
    assert np.allclose(eqs[0]["q"], [np.pi / 2, 0.0], atol=1e-9)
    qs = sorted((round(q[0], 6), round(abs(q[1]), 6)) for q in (e["q"] for e in eqs))
    assert qs == sorted((round(a, 6), round(b, 6)) for a in (np.pi / 2, -np.pi / 2) for b in (0.0, np.pi))
    # the stable one: two distinct imaginary pairs; each unstable one a positive real eigenvalue
    assert np.allclose(_eig(eqs[0]["eigenvalues"]).real, 0.0, atol=1e-9)
    for e in eqs[1:]:
        assert max(_eig(e["eigenvalues"]).real) > 0.1


def test_discrete_eigenvalues_approach_the_exponential():
    errors = []
    hs = [0.02, 0.01, 0.005]
    for h in hs:
        mech = dojo.load_scene("skydy_pendulum", [f"timestep={h}"])
        model = minimal.build_model(mech)
        eqs = analysis.equilibria(model, seed=0)
        lin = analysis.linearize(model, eqs[0].x, accessibility=False)
        Ad, _, _, _ = analysis.discrete_linearization(model, eqs[0].x)
        lam_d = np.sort_complex(np.linalg.eigvals(Ad))
        lam_c = np.sort_complex(np.exp(h * lin.eigenvalues))
        errors.append(float(np.max(np.abs(lam_d - lam_c))))
        assert np.allclose(np.abs(lam_d), 1.0, atol=1e-9)  # symplectic: on the unit circle
    rates = [np.log2(errors[k] / errors[k + 1]) for k in range(len(errors) - 1)]
    assert all(r > 1.8 for r in rates), (errors, rates)
    doc = analyze_json("skydy_pendulum", "--at", "equilibrium:0", "--equilibria", "--discrete")
    assert doc["discrete_stable"] is True and doc["timestep"] == 0.01


@pytest.mark.parametrize("suffix", [".json", ".npz", ".h5"])
def test_output_round_trip(tmp_path, suffix):
    out = tmp_path / f"a{suffix}"
    doc = analyze_json("skydy_cart_pendulum", "--equilibria", "--at", "equilibrium:1", "-o", out)
    content = read_dynamics_file(out)
    for name in ("A", "B", "M"):
        mat, rows, cols = content.matrices[name]
        assert np.array_equal(mat, np.array(doc[name]["data"]))
        assert rows == doc[name]["rows"] and cols == doc[name]["cols"]
    meta = content.meta
    eqs = meta["equilibria"] if isinstance(meta["equilibria"], list) else json.loads(meta["equilibria"])
    assert eqs == doc["equilibria"]
    assert int(meta["controllability_rank"]) == 4


def test_at_a_state_file_from_dojo_step(tmp_path):
    y = [0.7, 0.0]  # Dojo's minimal state of the pendulum: [theta; theta_dot]
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"minimal": y}))
    doc = analyze_json("skydy_pendulum", "--at", path)
    J = I_YY + M * LC**2
    assert np.isclose(doc["A"]["data"][1][0], -M * G * LC * np.sin(0.7) / J, atol=1e-12)


def test_latex_fragment(tmp_path):
    tex = tmp_path / "eom.tex"
    res = invoke("analyze", "skydy_pendulum", "--equilibria", "--at", "equilibrium:0", "--latex", tex)
    assert res.exit_code == 0, res.output
    text = tex.read_text()
    assert "\\begin{bmatrix}" in text and "\\paragraph{Equilibria}" in text
    assert f"{np.sqrt(G / 2):.6g}" in text  # the hanging pendulum's pole


@pytest.mark.parametrize("args, message", [
    (["box"], "has contacts"),
    (["skydy_pendulum", "--at", "equilibrium:5"], "--at equilibrium:5: 2 equilibria found (K in 0..1)"),
    (["skydy_pendulum", "--at", "equilibrium:x"], "expected equilibrium:K"),
    (["skydy_pendulum", "--at", "nowhere.json"], "not initial, equilibrium[:K] or an existing state file"),
])
def test_errors_are_one_line_exit_2(args, message):
    res = invoke("analyze", *args)
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], res.output


def test_output_checks_are_the_other_labelled_file_commands(tmp_path):
    """--output is checked as dojo dynamics and dojo gradients check it (io.labelled_files.check_output):
    an unknown type first (exit 2, --force cannot mend it; this command used to report an
    existing file first, exit 3), then an existing file without --force (exit 3)."""
    existing = tmp_path / "out.txt"
    existing.write_text("keep")
    res = invoke("analyze", "skydy_pendulum", "-o", existing)
    assert res.exit_code == 2 and "unknown file type; use .h5, .json or .npz" in res.output, res.output
    taken = tmp_path / "out.json"
    taken.write_text("keep")
    res = invoke("analyze", "skydy_pendulum", "-o", taken)
    assert res.exit_code == 3 and "already exists (use --force to overwrite)" in res.output, res.output
    assert taken.read_text() == "keep" and existing.read_text() == "keep"


def test_bad_state_file_is_one_line(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"minimal": [1.0, 2.0, 3.0]}))
    res = invoke("analyze", "skydy_pendulum", "--at", path)
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1 and "--at" in res.output


def test_stability_verdicts():
    assert analysis.stability(np.array([[0.0, 1.0], [0.0, 0.0]]))[0] is False  # Jordan block at 0
    assert analysis.stability(np.zeros((2, 2)))[0] is True  # semisimple zero
    assert analysis.stability(np.array([[0.0, 1.0], [-4.0, 0.0]]))[0] is True
    assert analysis.stability(np.array([[0.0, 1.0], [4.0, 0.0]]))[0] is False
    assert analysis.stability(np.array([[1.0, 0.1], [0.0, 1.0]]), discrete=True)[0] is False
    c, s = np.cos(0.3), np.sin(0.3)
    assert analysis.stability(np.array([[c, -s], [s, c]]), discrete=True)[0] is True


def test_lie_bracket_skydys_example():
    # skydy's test: f = (x, y, 0), g = (0, 0, x y): (df/dq) g - (dg/dq) f = (0, 0, -2 x y);
    # ours is [f, g] = Dg f - Df g, its negative
    def f(q):
        return np.array([q[0], q[1], 0.0])

    def g(q):
        return np.array([0.0, 0.0, q[0] * q[1]])

    q = np.array([0.7, -1.3, 0.4])
    assert np.allclose(analysis.lie_bracket(f, g)(q), [0, 0, 2 * q[0] * q[1]], atol=1e-9)
    assert np.allclose(analysis.lie_bracket(g, f)(q), -analysis.lie_bracket(f, g)(q), atol=1e-12)


SPHERICAL = """\
name: spherical_pendulum
timestep: 0.01
gravity: [0, 0, -9.81]
bodies:
  - {name: bob, mass: 2.0, inertia: [0.3, 0.4, 0.5], shape: {type: sphere, radius: 0.1}}
joints:
  - {name: ball, dofs: [rx, ry, rz], parent: origin, child: bob, child_vertex: [0, 0, 0.8]}
actuators:
  - {name: T_x, body: bob, torque: [1, 0, 0]}
"""


def test_spherical_pendulum_in_tangent_coordinates(tmp_path):
    # hanging below a ball joint (quaternion coordinates): two pendulum modes
    # omega^2 = m g l / (I_axis + m l^2) about x and y, and a free spin about z (a Jordan block)
    path = tmp_path / "sp.yaml"
    path.write_text(SPHERICAL)
    doc = analyze_json(path, "--equilibria", "--at", "equilibrium:0", "--no-accessibility")
    # hanging and inverted, each at any yaw: two families of dimension 1, reported once each
    eqs = doc["equilibria"]
    assert len(eqs) == 2 and [e["family_dimension"] for e in eqs] == [1, 1] and eqs[0]["free"] == []
    assert np.allclose(eqs[0]["q"][1:3], 0.0, atol=1e-9)  # hanging: a pure yaw [cos, 0, 0, sin]
    assert abs(np.linalg.norm(eqs[1]["q"][1:3]) - 1.0) < 1e-9  # inverted: a half turn about a horizontal axis
    assert eqs[0]["potential_energy"] < eqs[1]["potential_energy"]
    m, g, lc = 2.0, G, 0.8
    wx, wy = np.sqrt(m * g * lc / (0.3 + m * lc**2)), np.sqrt(m * g * lc / (0.4 + m * lc**2))
    eig = np.sort_complex(_eig(doc["eigenvalues"]))
    expected = np.sort_complex(np.array([1j * wx, -1j * wx, 1j * wy, -1j * wy, 0, 0]))
    assert np.allclose(eig, expected, atol=1e-7)
    assert doc["stable"] is False and "Jordan" in doc["stability"]
    assert doc["controllability_rank"] == 2  # the x swing only


TWO_CARTS = """\
name: two_carts
timestep: 0.01
gravity: [0, 0, -9.81]
bodies:
  - {name: a, mass: 1.0, inertia: [1, 1, 1]}
  - {name: b, mass: 2.0, inertia: [1, 1, 1]}
joints:
  - {name: ja, dofs: [x], parent: origin, child: a}
  - {name: jb, dofs: [y], parent: origin, child: b}
actuators:
  - {name: F, body: a, force: [1, 0, 0]}
"""


def test_uncoupled_cart_is_not_accessible(tmp_path):
    # the second cart is out of reach of any input and any bracket: rank 2 of 4 both ways
    path = tmp_path / "c.yaml"
    path.write_text(TWO_CARTS)
    doc = analyze_json(path, "--at", "initial")
    assert doc["controllability_rank"] == 2 and doc["accessibility_rank"] == 2


def test_spring_and_damper_enter_equilibrium_and_linearisation():
    # (I_yy + m l_c^2) th'' = m g l_c cos th - k th - c th' (skydy's equation plus a Dojo spring
    # and damper on the joint): the equilibrium solves m g l_c cos th = k th (bisection here),
    # and A = [[0, 1], [-(m g l_c sin th + k) / J, -c / J]]
    k, c = 20.0, 0.7
    J = I_YY + M * LC**2
    lo, hi = 0.0, np.pi / 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if M * G * LC * np.cos(mid) - k * mid > 0 else (lo, mid)
    th = 0.5 * (lo + hi)
    doc = analyze_json("skydy_pendulum", "--set", f"joints.0.spring={k}", "--set", f"joints.0.damper={c}",
                       "--equilibria", "--at", "equilibrium:0")
    q = [e["q"][0] for e in doc["equilibria"]]
    assert any(abs(v - th) < 1e-9 for v in q)
    at = q.index(min(q, key=lambda v: abs(v - th)))
    doc = analyze_json("skydy_pendulum", "--set", f"joints.0.spring={k}", "--set", f"joints.0.damper={c}",
                       "--equilibria", "--at", f"equilibrium:{at}")
    A = np.array(doc["A"]["data"])
    assert np.allclose(A, [[0, 1], [-(M * G * LC * np.sin(th) + k) / J, -c / J]], atol=1e-8)
    assert doc["stable"] is True and doc["stability"] == "asymptotically stable"


def test_at_the_file_dojo_step_writes(tmp_path):
    out = tmp_path / "s.json"
    res = invoke("step", "skydy_pendulum", "-o", out)
    assert res.exit_code == 0, res.output
    y = json.loads(out.read_text())["minimal"]
    doc = analyze_json("skydy_pendulum", "--at", out)
    assert np.allclose(doc["x"]["data"], y, atol=1e-12)


# ------------------------------------------------------------------ locked joints
def _compound_pendulum(phi: float) -> tuple[float, float, float]:
    """(I_pivot, m g l_c, equilibrium offset) of skydy's double pendulum welded at the elbow
    angle phi: two links of l = 2 (centres at l/2 = 1), m = 1, I_yy = 1, turning about y."""
    # centres in the first link's frame, in its plane: link1 at (1, 0), link2 past the
    # elbow at (2, 0) turned by phi: (2 + cos phi, sin phi) up to the sign of the second
    c1 = np.array([1.0, 0.0])
    c2 = np.array([2.0 + np.cos(phi), np.sin(phi)])
    i_pivot = 2 * I_YY + M * c1 @ c1 + M * c2 @ c2  # parallel axes about the shoulder
    mc = M * (c1 + c2)  # total mass times the composite centre
    return i_pivot, G * float(np.linalg.norm(mc)), float(np.arctan2(mc[1], mc[0]))


def test_double_pendulum_with_the_elbow_locked_is_one_compound_pendulum():
    phi = 0.3  # joint2's initial angle in the scene: the lock holds it there
    doc = analyze_json("skydy_double_pendulum", "--equilibria", "--at", "equilibrium:0", "--discrete",
                       "--set", "joints.joint2.locked=true")
    i_pivot, mgl, offset = _compound_pendulum(phi)
    omega = np.sqrt(mgl / i_pivot)  # +-i sqrt(m g l_c / I_pivot) hanging, +-sqrt(...) inverted
    # the analysis is the free coordinate's; the state stays the full minimal state
    assert doc["locked_joints"] == ["joint2"] and doc["locked"] == ["joint2"]
    assert doc["state_names"] == ["joint1", "joint1:dot"] and doc["config_names"] == ["joint1", "joint2"]
    assert doc["x"]["names"] == ["joint1", "joint2", "joint1:dot", "joint2:dot"]
    eqs = doc["equilibria"]
    assert len(eqs) == 2, [e["q"] for e in eqs]  # the unlocked pendulum has four
    hanging, inverted = eqs
    for e in eqs:
        assert abs(e["q"][1] - phi) < 1e-12, f"the held elbow moved to {e['q'][1]}"
    # the composite centre straight below / above the shoulder
    assert abs(hanging["q"][0] - (np.pi / 2 - offset)) < 1e-9 and abs(inverted["q"][0] - (-np.pi / 2 - offset)) < 1e-9
    assert hanging["stable"] is True and inverted["stable"] is False
    assert np.allclose(np.sort_complex(_eig(hanging["eigenvalues"])), [-1j * omega, 1j * omega], atol=1e-9, rtol=0)
    assert np.allclose(np.sort_complex(_eig(inverted["eigenvalues"])), [-omega, omega], atol=1e-9, rtol=0)
    # the linearisation: one rigid body, both body torques about y act on it
    assert np.allclose(doc["M"]["data"], [[i_pivot]], atol=1e-12)
    assert np.allclose(doc["A"]["data"], [[0, 1], [-omega**2, 0]], atol=1e-9)
    assert np.allclose(doc["B"]["data"], [[0, 0], [1 / i_pivot, 1 / i_pivot]], atol=1e-12)
    assert doc["controllability_rank"] == 2 and doc["accessibility_rank"] == 2
    # the variational step's own map over the free joint: eigenvalues exp(+-i omega h) to O(h^3)
    h = doc["timestep"]
    assert doc["A_discrete"]["rows"] == ["joint1:r0", "joint1:r0_dot"]
    gap = np.abs(np.sort_complex(_eig(doc["discrete_eigenvalues"])) - np.sort_complex(np.exp(h * np.array([-1j, 1j]) * omega))).max()
    assert gap < 1e-5, f"discrete eigenvalues off exp(h lambda) by {gap:.1e}"


def test_locked_elbow_with_a_damped_shoulder_is_asymptotically_stable():
    # held coordinates kept as zero rows would add zero eigenvalues and call this only
    # marginally stable; the reduced system is I s^2 + c s + m g l_c = 0
    damper = 0.5
    res = invoke("analyze", "skydy_double_pendulum", "--equilibria", "--set", "joints.joint2.locked=true",
                 "--set", f"joints.joint1.damper={damper}")
    assert res.exit_code == 0, res.output
    assert "locked joints joint2: coordinates held" in res.output, res.output
    doc = analyze_json("skydy_double_pendulum", "--equilibria", "--set", "joints.joint2.locked=true",
                       "--set", f"joints.joint1.damper={damper}")
    i_pivot, mgl, _ = _compound_pendulum(0.3)
    hanging = doc["equilibria"][0]
    assert hanging["stability"] == "asymptotically stable", hanging["stability"]
    roots = np.roots([i_pivot, damper, mgl])
    assert np.allclose(np.sort_complex(_eig(hanging["eigenvalues"])), np.sort_complex(roots), atol=1e-8, rtol=0)


def test_equilibria_of_a_sprung_angle_are_not_wrapped():
    """A spring's -k (theta - theta0) is not periodic in theta: an equilibrium beyond pi turned
    by 2 pi is none (before the fix a reported one had the residual 2 pi k)."""
    mech = dojo.load_scene("skydy_pendulum", overrides={"joints.pivot.spring": 3.0, "joints.pivot.spring_offset": [5.0]})
    model = minimal.build_model(mech)
    eqs = analysis.equilibria(model)
    assert eqs
    assert any(e.x[0] > np.pi for e in eqs), [e.x[0] for e in eqs]  # the spring holds one past pi
    for e in eqs:
        r = minimal.C_func(model, e.x) - minimal.passive_forces(model, e.x)
        assert np.max(np.abs(r)) < 1e-8, f"equilibrium at {e.x[0]:.4f} has residual {r}"
