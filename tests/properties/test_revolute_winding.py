"""Revolute limits of any size (issue 12, item 7b; docs/physics.md, "Revolute limits of
any size"): a limit row measures the joint angle unwrapped from the angle at the step's
start along the step's own increment (core/maximal/kinematics.h limit_row), runs carry that angle
from step to step and store it in minimal/q, so a joint winds through several turns and
stops at its bound, a restart from a stored state measures from the same branch, and the
step's derivatives are those of the unwrapped rows."""

import json

import numpy as np
import pytest
import yaml

import dojo_cli as dojo
from dojo_cli.io.storage import read_storage
from dojo_cli.model.controller import ConstantController
from dojo_cli.simulation.gradients import step_gradients
from dojo_cli.simulation.step import solve_step
from dojo_cli.simulation.run import minimal_state
from tests.cli.test_cli import invoke
from dojo_cli.analysis.gradient_check import four_point, tangent_difference
from dojo_cli.analysis.gradient_check import perturb_tangent as perturb
from tests.simulation.test_gradients import FD, KAPPA, TIGHT, TOL, relative_error

SCENE = {
    "format": 1, "name": "wind", "timestep": 0.01, "gravity": [0, 0, -9.81], "duration": 3.0, "seed": 0,
    "bodies": [{"name": "bar", "shape": {"type": "box", "size": [0.5, 0.1, 0.1]}, "mass": 1.0}],
    "joints": [{
        "name": "hinge", "type": "revolute", "parent": "origin", "child": "bar", "axis": [0, 0, 1],
        "parent_vertex": [0, 0, 0], "child_vertex": [0, 0, 0],
        "limits": {"lower": [-10.0], "upper": [10.0]}, "initial": {"position": [0.0], "velocity": [0.0]},
    }],
}


def wind_scene(tmp_path, lower, upper, velocity=0.0):
    scene = dict(SCENE, joints=[dict(SCENE["joints"][0], limits={"lower": [lower], "upper": [upper]},
                                     initial={"position": [0.0], "velocity": [velocity]})])
    path = tmp_path / "wind.yaml"
    path.write_text(yaml.safe_dump(scene))
    return path


# (lower, upper) pairs whose bounds lie beyond +-pi, several radians from the start: each
# of the last four stalled the interior point (max_iterations steps) before the step measured
# its angle along its own increment (a branch jump at ref +- pi within a Newton iteration).
@pytest.mark.parametrize("lower, upper", [(-10.0, 10.0), (-10.0, 4.0), (-6.0, 3.0), (-10.0, 3.0), (-3.0, 4.0)])
def test_a_driven_hinge_winds_past_pi_and_stops_at_its_upper_limit(tmp_path, lower, upper):
    mech = dojo.load_scene(str(wind_scene(tmp_path, lower, upper)))
    # 0.1 N m about a vertical axis (gravity does no work): the joint spins up and winds
    tr = dojo.simulate(mech, 300, controller=ConstantController(np.array([0.1])))
    assert set(tr.status) == {"success"}
    theta = tr.minimal_q[:, 0]  # stored unwrapped: continuous through the turns
    assert np.abs(np.diff(theta)).max() < 0.5
    # it reaches the bound on the right branch (4 rad, not 4 - 2 pi) within the solver's
    # tolerance, and stays there
    assert theta.max() == pytest.approx(upper, abs=1e-3)
    assert theta.max() <= upper + 1e-5
    assert theta[-50:].min() > upper - 0.1


def test_a_hinge_wound_the_other_way_stops_at_its_lower_limit(tmp_path):
    mech = dojo.load_scene(str(wind_scene(tmp_path, -10.0, 10.0)))
    tr = dojo.simulate(mech, 300, controller=ConstantController(np.array([-0.1])))
    assert set(tr.status) == {"success"}
    assert tr.minimal_q[:, 0].min() == pytest.approx(-10.0, abs=1e-3)


def test_restart_from_a_stored_wound_state_reproduces_the_next_step(tmp_path):
    """`dojo step --from RUN --index K` takes the stored (unwrapped) minimal/q as the angle
    the step starts from: step K+1 to 1e-12, past a turn and against the 10 rad limit."""
    scene = wind_scene(tmp_path, -10.0, 10.0, velocity=6.0)  # 10 rad after ~1.7 s
    out = tmp_path / "wind.h5"
    assert invoke("simulate", scene, "-o", out, "--steps", 250).exit_code == 0
    r = read_storage(out)
    theta = r.trajectory.minimal_q[:, 0]
    assert theta.max() == pytest.approx(10.0, abs=1e-3)
    hit = int(np.argmax(theta > 9.99))
    for k in (100, hit - 1, hit, 240):  # 6 rad (past a turn), at the limit, resting on it
        res = invoke("step", scene, "--from", out, "--index", k, "--json")
        assert res.exit_code == 0, res.output
        doc = json.loads(res.stdout)
        assert np.abs(np.array(doc["maximal"]) - r.trajectory.state(k + 1)).max() < 1e-12, k


@pytest.mark.parametrize("kappa", [KAPPA, None])
def test_gradients_of_a_step_against_the_wound_limit_match_finite_differences(tmp_path, kappa):
    """A and B of a step resting on the 10 rad bound (its row unwrapped past a turn and a
    half) against four-point central differences of the same step along random directions,
    relaxed (kappa = 1e-3: a smooth map) and where the solver stopped (pressed by an input
    into the bound: a strictly positive limit impulse, smooth there)."""
    mech = dojo.load_scene(str(wind_scene(tmp_path, -10.0, 10.0, velocity=6.0)))
    u = np.array([0.3])  # N m, into the bound
    tr = dojo.simulate(mech, 250, controller=ConstantController(u))
    k = int(np.argmax(tr.minimal_q[:, 0] > 9.99)) + 30  # resting on it
    z, angles = tr.state(k), tr.minimal_q[k]
    assert angles[0] > 3 * np.pi  # wound past a turn and a half: the stateless branch is 4 pi lower
    g = step_gradients(mech, z, u, TIGHT, kappa=kappa, angles=angles)
    assert g.result.status.name == "SUCCESS"

    def f(zz, uu):
        if kappa is None:
            return solve_step(mech, zz, uu, TIGHT, angles=angles)[0]
        return step_gradients(mech, zz, uu, TIGHT, wrt=(), kappa=kappa, angles=angles).next_state

    z1 = f(z, u)
    # the step rests on the bound (held s = kappa / gamma off it, the interior point's
    # complementarity: 0.015 rad at Dojo's btol, 0.04 relaxed at kappa = 1e-3)
    theta1 = minimal_state(mech, z1[None], (z, angles))[0][0, 0]
    assert 10.0 - 0.05 < theta1 <= 10.0
    rng = np.random.default_rng(0)
    nb = mech.nb
    errors = []
    for _ in range(3):
        d = rng.standard_normal(12 * nb)
        numeric = four_point(lambda t: tangent_difference(nb, z1, f(perturb(nb, z, t * d), u)), FD)
        errors.append(relative_error(g.A @ d, numeric))
    numeric = four_point(lambda t: tangent_difference(nb, z1, f(z, u + t)), FD)
    errors.append(relative_error(g.B[:, 0], numeric))
    assert max(errors) < TOL, f"relative error {max(errors):.2e}"
