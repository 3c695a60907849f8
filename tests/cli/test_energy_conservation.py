"""`dojo energy` reports drift only for what the scene conserves, decided from the mechanism."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from dojo_cli.cli.app import app
from dojo_cli.physics.energy import conservation
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import load_scene_spec_from_string

runner = CliRunner()

# momentum drift relative to its size, free pair at rtol 1e-10 (measured 7e-16 linear, 2e-13 angular)
MOMENTUM_REL_DRIFT = 1e-10

# a free box and an arm on a hinge, nothing acting from outside (a floating joint to the
# world constrains nothing); the hinge's spring exchanges energy between the bodies
FREE_PAIR = """\
name: free_pair
timestep: 0.01
gravity: [0, 0, 0]
steps: 100
solver: {rtol: 1.0e-10}
bodies:
  - name: box
    shape: {type: box, size: [1, 1, 1]}
    mass: 2.0
    initial: {position: [1, 2, 3], velocity: [0.5, 0, 0], angular_velocity: [0.3, 0, 2.0]}
  - name: arm
    shape: {type: box, size: [1, 0.1, 0.1]}
    mass: 1.0
joints:
  - {name: base, type: floating, parent: origin, child: box}
  - {name: hinge, type: revolute, parent: box, child: arm, axis: [0, 0, 1], spring: 4.0,
     parent_vertex: [0.5, 0, 0], child_vertex: [-0.5, 0, 0], initial: {position: [0.3]}}
"""


def _energy(tmp_path, scene: str, steps: int):
    """`dojo energy` of a fresh run of ``scene`` (a built-in name or YAML text): output, summary."""
    if "\n" in scene:
        path = tmp_path / "scene.yaml"
        path.write_text(scene)
        scene = str(path)
    run, js = tmp_path / "run.h5", tmp_path / "e.json"
    sim = runner.invoke(app, ["simulate", scene, "--steps", str(steps), "-o", str(run), "-q"])
    assert sim.exit_code == 0, sim.output
    res = runner.invoke(app, ["energy", str(run), "--json", str(js)])
    assert res.exit_code == 0, res.output
    rows = {line[:22].strip(): line[22:] for line in res.stdout.splitlines()}
    return rows, json.loads(js.read_text())["summary"]


def test_pendulum_conserves_energy_not_momentum(tmp_path):
    rows, summary = _energy(tmp_path, "pendulum", 300)
    assert "not conserved" not in rows["mechanical [J]"]
    assert summary["mechanical [J]"]["conserved"] == "yes"
    assert summary["mechanical [J]"]["conserved_relative_drift"] < 1e-3
    for name in ("kinetic [J]", "potential [J]"):
        assert "not conserved (exchanged with the" in rows[name]
        assert summary[name]["conserved_drift"] is None
    # the hinge to the world holds the bob: neither momentum is conserved, and the table says
    # why instead of a relative drift of order 1
    for name in ("linear momentum", "angular momentum"):
        assert "not conserved (a joint to the world)" in rows[name], rows[name]
        assert summary[name]["relative_drift"] > 0.1  # it does change: the label is not cosmetic


def test_free_bodies_without_gravity_conserve_both_momenta(tmp_path):
    rows, summary = _energy(tmp_path, FREE_PAIR, 100)
    for name in ("mechanical [J]", "linear momentum", "angular momentum"):
        assert "not conserved" not in rows[name], rows[name]
        assert summary[name]["conserved"] == "yes"
    # momentum to solver tolerance; energy with a spring to the integrator's bounded O(h^2) error
    assert summary["mechanical [J]"]["conserved_relative_drift"] < 1e-3
    for name in ("linear momentum", "angular momentum"):
        assert summary[name]["conserved_relative_drift"] < MOMENTUM_REL_DRIFT, (name, summary[name])
    assert summary["kinetic [J]"]["relative_drift"] > 1e-3  # the spring does exchange energy


def test_free_bodies_under_gravity_conserve_components(tmp_path):
    rows, summary = _energy(tmp_path, FREE_PAIR.replace("gravity: [0, 0, 0]", "gravity: [0, 0, -9.81]"), 100)
    assert rows["linear momentum"].rstrip().endswith("x,y only"), rows["linear momentum"]
    assert rows["angular momentum"].rstrip().endswith("z only"), rows["angular momentum"]
    assert summary["linear momentum"]["conserved_relative_drift"] < MOMENTUM_REL_DRIFT
    assert summary["angular momentum"]["conserved_relative_drift"] < MOMENTUM_REL_DRIFT
    assert summary["linear momentum"]["relative_drift"] > 0.5  # the fall itself is not


def test_box_with_contacts_conserves_nothing(tmp_path):
    rows, summary = _energy(tmp_path, "box", 100)
    for name in summary:
        assert "not conserved" in rows[name], rows[name]
        assert summary[name]["conserved_drift"] is None
    assert "not conserved (contacts)" in rows["mechanical [J]"]
    assert "contacts" in rows["linear momentum"]


def test_conservation_from_mechanism_content():
    free = build_mechanism(load_scene_spec_from_string(FREE_PAIR, file="s.yaml"))
    assert conservation(free).energy and conservation(free).linear.shape == (3, 3)
    damped = build_mechanism(load_scene_spec_from_string(FREE_PAIR.replace("spring: 4.0", "damper: 0.5"), file="s.yaml"))
    c = conservation(damped)
    assert not c.energy and c.energy_reason == "joint damping" and c.angular.shape == (3, 3)
    driven = conservation(free, inputs=np.full((3, free.nu), 0.1))
    assert not driven.energy and driven.linear.shape == (3, 0) and "inputs" in driven.momentum_reason
    assert conservation(free, inputs=np.zeros((3, free.nu))).energy  # zero inputs do no work
