"""`dojo dynamics` (issue 13 item 7): what it prints and writes equals dojo_cli.minimal's
functions (1e-12), in every order; on a URDF scene in the pinocchio order it equals
Pinocchio's crba / nonLinearEffects / aba / rnea reading the URDF itself; states come from
files of every kind and from a run's knots; bad input is one line and exit code 2."""

from __future__ import annotations

import json
import textwrap

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli import minimal
from dojo_cli.cli.app import app
from dojo_cli.io.dynamics_files import read_dynamics_file

runner = CliRunner()
# The command calls the same functions on the same numbers: equal to rounding (JSON keeps
# every digit of a float).
TOL = 1e-12
# Pinocchio against our tree algorithms: PinnZoo's tolerances (tests/minimal/test_pinocchio.py),
# ABA through M^-1.
PIN_TOL = {"M": 1e-12, "C": 1e-12, "inverse_dynamics": 1e-12, "forward_dynamics": 1e-9}
SCENES = {  # every joint kind of the tree, springs and dampers on some
    "pendulum": [],
    "spherical_chain": ["--set", "joints.1.damper=0.3"],
    "npendulum": ["--set", "joints.0.spring=3", "--set", "joints.1.damper=0.5"],
    "box2d": ["--set", "contacts=[]"],
}


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def run_json(*args) -> dict:
    res = invoke("dynamics", *args, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _numbers(values) -> str:
    return ",".join(repr(float(t)) for t in values)


def _rel(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b), initial=0.0) / max(1.0, np.max(np.abs(b), initial=0.0)))


def _model(scene, extra):
    overrides = dict(s.split("=", 1) for s in extra[1::2])
    return minimal.build_model(dojo.load_scene(scene, overrides={k: json.loads(v) for k, v in overrides.items()}))


def _expected(model, x, tau, vdot, tangent=False) -> dict:
    """Every quantity from dojo_cli.minimal, nominal order."""
    fx, ftau = minimal.forward_dynamics_deriv(model, x, tau, tangent)
    ix, ivdot = minimal.inverse_dynamics_deriv(model, x, vdot, tangent)
    return {
        "q": x[: model.nq], "v": x[model.nq:], "M": minimal.M_func(model, x), "C": minimal.C_func(model, x),
        "passive": minimal.passive_forces(model, x), "tau": tau, "vdot": vdot,
        "forward_dynamics": minimal.forward_dynamics(model, x, tau), "inverse_dynamics": minimal.inverse_dynamics(model, x, vdot),
        "E": minimal.velocity_kinematics(model, x), "forward_dynamics_dx": fx, "forward_dynamics_dtau": ftau,
        "inverse_dynamics_dx": ix, "inverse_dynamics_dvdot": ivdot,
    }


KIND = {"q": "config", "v": "velocity", "C": "torque", "passive": "torque", "tau": "torque", "vdot": "velocity",
        "forward_dynamics": "velocity", "inverse_dynamics": "torque", "M": ("torque", "velocity"),
        "E": ("config", "velocity"), "forward_dynamics_dx": ("velocity", "state"),
        "forward_dynamics_dtau": ("velocity", "torque"), "inverse_dynamics_dx": ("torque", "state"),
        "inverse_dynamics_dvdot": ("torque", "velocity")}


@pytest.mark.parametrize("order", ["nominal", "pinocchio", "mujoco"])
@pytest.mark.parametrize("scene", sorted(SCENES))
def test_json_equals_the_minimal_functions_in_every_order(scene, order):
    extra = SCENES[scene]
    model = _model(scene, extra)
    x = minimal.init_state(model)
    rng = np.random.default_rng(0)
    tau_o, vdot_o = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    doc = run_json(scene, *extra, "--order", order, "--derivatives",
                   "--tau", _numbers(tau_o), "--vdot", _numbers(vdot_o))
    assert doc["order"] == order and doc["format"] == "dojo-dynamics"
    q = x[: model.nq]
    tau = minimal.change_order(model, tau_o, order, "nominal", kind="torque", q=q)
    vdot = minimal.change_order(model, vdot_o, order, "nominal", kind="velocity", q=q)
    cq, cv, ct = minimal.order_names(model, order)
    names = {"config": cq, "velocity": cv, "torque": ct, "state": [f"q:{n}" for n in cq] + [f"v:{n}" for n in cv]}
    for name, nominal in _expected(model, x, tau, vdot).items():
        want = minimal.change_order(model, nominal, "nominal", order, kind=KIND[name], q=q)
        entry = doc[name]
        if isinstance(KIND[name], tuple):
            assert entry["rows"] == names[KIND[name][0]] and entry["cols"] == names[KIND[name][1]], f"{name}: labels"
        else:
            assert entry["names"] == names[KIND[name]], f"{name}: labels"
        err = _rel(entry["data"], want)
        assert err <= TOL, f"{scene} {order}: {name} differs from dojo_cli.minimal by {err:.2e}"


def test_tangent_derivatives_and_the_text_tables():
    model = _model("spherical_chain", [])
    x = minimal.init_state(model)
    doc = run_json("spherical_chain", "--derivatives", "--tangent")
    ours, _ = minimal.forward_dynamics_deriv(model, x, np.zeros(model.nv), tangent=True)
    assert doc["forward_dynamics_dx"]["cols"] == [f"dq:{n}" for n in model.velocity_names] + [f"v:{n}" for n in model.velocity_names]
    assert _rel(doc["forward_dynamics_dx"]["data"], ours) <= TOL
    res = invoke("dynamics", "pendulum", "--tau", "hinge=0.5")
    assert res.exit_code == 0, res.output
    C = minimal.C_func(_model("pendulum", []), minimal.init_state(_model("pendulum", [])))[0]
    for text in ("configuration", "hinge", "M: mass matrix", "E: qdot = E v", "FD(tau)", "ID(vdot)", f"{C:.6g}", "0.5"):
        assert text in res.stdout, f"{text!r} not in the printed tables"


# ------------------------------------------------------------- Pinocchio
URDF = """<?xml version="1.0"?>
<robot name="arm">
  <link name="base"><inertial><origin xyz="0 0 0.05"/><mass value="2.0"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.025"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.1" rpy="0 0 0.3"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <link name="upper"><inertial><origin xyz="0.02 0 0.2" rpy="0.1 0 0"/><mass value="1.2"/>
    <inertia ixx="0.012" ixy="0.001" ixz="0" iyy="0.011" iyz="0" izz="0.004"/></inertial></link>
  <joint name="slide" type="prismatic"><parent link="upper"/><child link="sleeve"/>
    <origin xyz="0 0 0.4"/><axis xyz="0 0 1"/><limit lower="-0.5" upper="0.5" effort="10" velocity="5"/></joint>
  <link name="sleeve"><inertial><origin xyz="0 0.01 0.1"/><mass value="0.6"/>
    <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.001"/></inertial></link>
  <joint name="elbow" type="revolute"><parent link="sleeve"/><child link="fore"/>
    <origin xyz="0 0 0.2" rpy="0.2 0 0"/><axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <link name="fore"><inertial><origin xyz="0 0 0.15"/><mass value="0.8"/>
    <inertia ixx="0.006" ixy="0" ixz="0" iyy="0.006" iyz="0" izz="0.001"/></inertial></link>
  <joint name="arm_wrist" type="revolute"><parent link="fore"/><child link="hand"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <link name="hand"><inertial><origin xyz="0.03 0 0.02"/><mass value="0.3"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.0005"/></inertial></link>
  <joint name="a_side" type="revolute"><parent link="base"/><child link="side"/>
    <origin xyz="0.1 0 0" rpy="0 0.4 0"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <link name="side"><inertial><origin xyz="0.1 0 0"/><mass value="0.5"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.002"/></inertial></link>
</robot>
"""


@pytest.fixture(scope="module")
def urdf_scene(tmp_path_factory):
    folder = tmp_path_factory.mktemp("urdf")
    (folder / "arm.urdf").write_text(URDF)
    res = invoke("import-urdf", folder / "arm.urdf", "-o", folder / "arm.yaml", "--floating")
    assert res.exit_code == 0, res.output
    return folder


def test_urdf_scene_in_pinocchio_order_equals_pinocchio(urdf_scene):
    import pinocchio as pin  # the test extra
    pm = pin.buildModelFromUrdf(str(urdf_scene / "arm.urdf"), pin.JointModelFreeFlyer())
    pd = pm.createData()
    rng = np.random.default_rng(3)
    model = minimal.build_model(dojo.load_scene(str(urdf_scene / "arm.yaml")))
    assert (pm.nq, pm.nv) == (model.nq, model.nv)
    assert model.velocity_names[6:] != [n for n in pm.names[1:] if n != "root_joint"], "the orders differ (a branch named first)"
    for trial in range(3):
        x = minimal.randn_state(model, rng)
        xp = minimal.change_order(model, x, "nominal", "pinocchio", kind="state")
        state = urdf_scene / f"state{trial}.json"
        state.write_text(json.dumps(xp.tolist()))
        tau, a = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        doc = run_json(urdf_scene / "arm.yaml", "--order", "pinocchio", "--state", state,
                       "--tau", _numbers(tau), "--vdot", _numbers(a))
        assert doc["v"]["names"][6:] == [n for n in pm.names[1:] if n != "root_joint"], "Pinocchio's joint order"
        q, v = np.array(doc["q"]["data"]), np.array(doc["v"]["data"])
        assert _rel(q, xp[: model.nq]) <= TOL and _rel(v, xp[model.nq:]) <= TOL
        Mp = pin.crba(pm, pd, q)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        theirs = {"M": Mp, "C": pin.nonLinearEffects(pm, pd, q, v).copy(), "forward_dynamics": pin.aba(pm, pd, q, v, tau).copy(),
                  "inverse_dynamics": pin.rnea(pm, pd, q, v, a).copy()}
        for name, want in theirs.items():
            err = _rel(doc[name]["data"], want)
            assert err <= PIN_TOL[name], f"trial {trial}: {name} differs from Pinocchio's by {err:.2e}"


# ------------------------------------------------------------------ states
def test_state_files_of_every_kind(tmp_path):
    model = _model("spherical_chain", [])
    x = minimal.randn_state(model, np.random.default_rng(5))
    want = minimal.M_func(model, x)
    xp = minimal.change_order(model, x, "nominal", "pinocchio", kind="state")
    cq, cv, _ = minimal.order_names(model, "pinocchio")
    files = {
        "list.json": json.dumps(x.tolist()),
        "named.json": json.dumps({"q": dict(zip(model.config_names, x[: model.nq])),
                                  "v": dict(zip(model.velocity_names, x[model.nq:]))}),
        "pin.json": json.dumps({"order": "pinocchio", "q": xp[: model.nq].tolist(), "v": xp[model.nq:].tolist()}),
        "x.csv": _numbers(x),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    np.savez(tmp_path / "arrays.npz", q=x[: model.nq], v=x[model.nq:])
    np.savez(tmp_path / "named.npz", q=xp[: model.nq], v=xp[model.nq:], q_names=np.array(cq), v_names=np.array(cv))
    for name in [*files, "arrays.npz", "named.npz"]:
        doc = run_json("spherical_chain", "--state", tmp_path / name)
        err = _rel(doc["M"]["data"], want)
        assert err <= TOL, f"{name}: M differs by {err:.2e}"
        assert _rel(np.concatenate([doc["q"]["data"], doc["v"]["data"]]), x) <= TOL, name


@pytest.mark.parametrize("suffix", [".h5", ".json", ".npz"])
def test_outputs_read_back_with_names_and_chain_as_states(tmp_path, suffix):
    out = tmp_path / f"dyn{suffix}"
    res = invoke("dynamics", "npendulum", "--order", "pinocchio", "--derivatives", "--tau", "1,2,3,4,5", "-o", out)
    assert res.exit_code == 0, res.output
    assert f"wrote {out}" in res.stdout
    assert [p.name for p in tmp_path.iterdir()] == [out.name], "no temporary file left"
    content = read_dynamics_file(out)
    doc = run_json("npendulum", "--order", "pinocchio", "--derivatives", "--tau", "1,2,3,4,5")
    assert content.meta["order"] == "pinocchio" and content.meta["scene_name"] == "npendulum"
    for name, (vec, names) in content.vectors.items():
        assert names == doc[name]["names"] and _rel(vec, doc[name]["data"]) == 0.0, name
    for name, (mat, rows, cols) in content.matrices.items():
        assert (rows, cols) == (doc[name]["rows"], doc[name]["cols"]) and _rel(mat, doc[name]["data"]) == 0.0, name
    assert set(content.vectors) >= {"q", "v", "C", "passive", "tau", "forward_dynamics", "vdot", "inverse_dynamics"}
    assert set(content.matrices) >= {"M", "E", "forward_dynamics_dx", "inverse_dynamics_dx"}
    if suffix == ".h5":
        with h5py.File(out) as f:
            assert [n.decode() if isinstance(n, bytes) else n for n in f["C"].attrs["names"]] == doc["C"]["names"]
    # the file is a state for the next call, read in its own order
    again = run_json("npendulum", "--state", out)
    assert _rel(again["M"]["data"], minimal.change_order(
        _model("npendulum", []), np.array(doc["M"]["data"]), "pinocchio", "nominal", kind="velocity")) <= TOL
    # an existing file is refused without --force (exit 3), replaced with it
    res = invoke("dynamics", "npendulum", "-o", out)
    assert res.exit_code == 3 and "already exists" in res.output
    assert invoke("dynamics", "npendulum", "-o", out, "--force").exit_code == 0


@pytest.fixture(scope="module")
def pendulum_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "run.h5"
    res = invoke("simulate", "npendulum", "--steps", "30", "-o", out)
    assert res.exit_code == 0, res.output
    return out


def test_from_run_takes_the_stored_knot(pendulum_run):
    """A revolute chain's minimal state is Dojo's minimal coordinates: the knot's x equals
    the run's minimal/q and minimal/v."""
    with h5py.File(pendulum_run) as f:
        q, v, t = f["minimal/q"][-1], f["minimal/v"][-1], f["time"][-1]
        q5 = f["minimal/q"][5]
    doc = run_json("npendulum", "--from", pendulum_run, "--index", -1)
    assert _rel(doc["q"]["data"], q) <= 1e-10 and _rel(doc["v"]["data"], v) <= 1e-10
    assert doc["time"] == pytest.approx(t) and "knot 30" in doc["source"]
    assert _rel(run_json("npendulum", "--from", pendulum_run, "--index", 5)["q"]["data"], q5) <= 1e-10


BAD = [
    (["pendulum", "--tau", "1,2"], "--tau: 2 values; this model has nv = 1 torque entries (hinge)"),
    (["pendulum", "--tau", "elbow=1"], "--tau: unknown torque name 'elbow' (known: hinge)"),
    (["pendulum", "--vdot", "hinge=1", "--vdot", "2"], "--vdot: give either 1 numbers or NAME=VALUE pairs, not both"),
    (["pendulum", "--tau", "hinge=nan"], "--tau: contains non-finite numbers"),
    (["pendulum", "--order", "drake"], "--order: must be one of nominal, pinocchio, mujoco"),
    (["pendulum", "--tangent"], "--tangent: only with --derivatives"),
    (["pendulum", "--index", "3"], "--index needs --from RUN.h5"),
    (["pendulum", "-o", "out.txt"], "unknown file type; use .h5, .json or .npz"),
]


@pytest.mark.parametrize("args, message", BAD, ids=[b[1][:30] for b in BAD])
def test_bad_input_is_one_line_and_exit_2(args, message):
    res = invoke("dynamics", *args)
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1, res.output


def test_bad_states_and_indices_exit_2(tmp_path, pendulum_run):
    model = _model("spherical_chain", [])
    cases = {
        "short.json": (json.dumps([0.0] * 5), "5 numbers; a state x = [q; v] of this model has nx = 41 (nq = 23: floating_base:x"),
        "unknown.json": (json.dumps({"q": {"elbow": 1.0}, "v": [0.0] * model.nv}), "'q': unknown name 'elbow'"),
        "nan.json": ('{"q": [NaN], "v": []}', "non-finite"),
        "quat.json": (json.dumps(([0.0] * 3 + [2.0, 0, 0, 0] + [1.0, 0, 0, 0] * 4) + [0.0] * model.nv),
                      "joint 'floating_base': [floating_base:qw, floating_base:qx, floating_base:qy, floating_base:qz] must be a unit quaternion"),
        "few.csv": ("1, 2, 3", "3 numbers; a state x = [q; v] of this model has nx = 41"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        res = invoke("dynamics", "spherical_chain", "--state", tmp_path / name)
        assert res.exit_code == 2 and message in res.output, f"{name}: {res.output}"
        assert len(res.output.strip().splitlines()) == 1, res.output
    res = invoke("dynamics", "npendulum", "--from", pendulum_run, "--index", 31)
    assert res.exit_code == 2 and "--index 31: " in res.output and "holds knots 0..30" in res.output, res.output
    res = invoke("dynamics", "pendulum", "--from", pendulum_run, "--index", 0)
    assert res.exit_code == 2 and "are not the scene's" in res.output, res.output
    res = invoke("dynamics", "npendulum", "--state", tmp_path / "few.csv", "--from", pendulum_run, "--index", 0)
    assert res.exit_code == 2 and "give one of them" in res.output


def test_documented_example_runs_as_shown(tmp_path):
    """docs/minimal.md's command-line example."""
    text = textwrap.dedent("""\
        {"q": {"hinge": 0.3}, "v": {"hinge": -1.0}}
    """)
    (tmp_path / "s.json").write_text(text)
    doc = run_json("pendulum", "--state", tmp_path / "s.json", "--tau", "hinge=0.2")
    model = _model("pendulum", [])
    x = np.array([0.3, -1.0])
    assert _rel(doc["forward_dynamics"]["data"], minimal.forward_dynamics(model, x, [0.2])) <= TOL


HOSTILE = {
    "truncated.npz": (b"PK\x03\x04" + b"\x00" * 40, "cannot read numbers"),
    "latin1.csv": (b"\xff\xfe1,2", "cannot read numbers"),
    "deep.json": (b"[" * 100000, "JSON nested too deeply"),
    "text.json": (b'{"q": ["0.3"], "v": [0]}', "'q': expected a list of 1 numbers"),
    "bool.json": (b"[true, 0]", "entry [0]: must be a number"),
    "huge.json": (b"[1e999, 0]", "non-finite"),
    "notours.h5": (b"not hdf5", "cannot read dynamics file"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_state_files_are_one_line_exit_2(tmp_path, name):
    data, message = HOSTILE[name]
    (tmp_path / name).write_bytes(data)
    res = invoke("dynamics", "pendulum", "--state", tmp_path / name)
    assert res.exit_code == 2 and message in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output, res.output


def test_output_file_has_the_usual_permissions(tmp_path):
    import os

    out = tmp_path / "d.json"
    assert invoke("dynamics", "pendulum", "-o", out).exit_code == 0
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask, oct(out.stat().st_mode)
