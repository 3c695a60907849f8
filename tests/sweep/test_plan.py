"""Sweep files: the runs they define, their ids, and problems at file:line."""

from __future__ import annotations

import pytest

from dojo_cli.errors import SceneError
from dojo_cli.sweep.plan import load_sweep


def plan_of(tmp_path, text: str):
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    return load_sweep(path), path


def test_grid_zip_and_random_multiply(tmp_path):
    plan, _ = plan_of(tmp_path, """\
scene: pendulum
grid:
  joints.0.damper: [0.0, 0.1]
  bodies.0.mass: {linspace: [1.0, 3.0, 3]}
zip:
  joints.0.spring: [1.0, 2.0]
  gravity.2: [-9.81, -1.62]
random: {n: 2, seed: 7, axes: {joints.0.initial.position.0: {uniform: [0.1, 0.2]}}}
""")
    assert plan.axes == ["joints.0.damper", "bodies.0.mass", "joints.0.spring", "gravity.2",
                         "joints.0.initial.position.0"]
    assert len(plan.runs) == 2 * 3 * 2 * 2
    first = plan.runs[0].values
    assert first["bodies.0.mass"] == 1.0 and first["joints.0.spring"] == 1.0 and first["gravity.2"] == -9.81
    assert {r.values["bodies.0.mass"] for r in plan.runs} == {1.0, 2.0, 3.0}
    assert {(r.values["joints.0.spring"], r.values["gravity.2"]) for r in plan.runs} == {(1.0, -9.81), (2.0, -1.62)}
    draws = sorted({r.values["joints.0.initial.position.0"] for r in plan.runs})
    assert len(draws) == 2 and all(0.1 <= d < 0.2 for d in draws), "two samples, the same for every grid point"
    assert len({r.run_id for r in plan.runs}) == len(plan.runs)


def test_run_ids_depend_on_values_only(tmp_path):
    a, _ = plan_of(tmp_path, "scene: pendulum\ngrid: {joints.0.damper: [0.0, 0.1]}\n")
    b, _ = plan_of(tmp_path, "scene: pendulum\ngrid: {joints.0.damper: [0.1, 0.0, 0.2]}\n")
    ids_a = {r.values["joints.0.damper"]: r.run_id for r in a.runs}
    ids_b = {r.values["joints.0.damper"]: r.run_id for r in b.runs}
    assert ids_a[0.0] == ids_b[0.0] and ids_a[0.1] == ids_b[0.1], "a grown grid keeps the runs it had"
    c, _ = plan_of(tmp_path, "scene: pendulum\nset: {duration: 1.0}\ngrid: {joints.0.damper: [0.0]}\n")
    assert c.runs[0].run_id != ids_a[0.0], "other common values, another run"


def test_no_axes_is_one_run(tmp_path):
    plan, _ = plan_of(tmp_path, "scene: pendulum\nset: {duration: 0.1}\n")
    assert len(plan.runs) == 1 and plan.runs[0].values == {}


def test_problems_name_file_line_and_key(tmp_path):
    with pytest.raises(SceneError) as err:
        plan_of(tmp_path, """\
scene: pendulm
grid:
  bodies.0.mass: 3
  joints.0.damper: {linspace: [0, 1, 0]}
zip: {a: [1, 2], b: [1]}
metrics:
  bad: "x[-1,"
colour: red
""")
    path = tmp_path / "sweep.yaml"
    assert err.value.lines() == [
        f"{path}:8: colour: unknown key (known: scene, config, set, grid, zip, random, metrics, output)",
        f"{path}:1: scene: no such scene file or built-in scene 'pendulm'; did you mean 'pendulum' or 'npendulum' or "
        "'skydy_pendulum'?",
        f"{path}:3: grid.bodies.0.mass: a list of values or one of {{linspace: [...]}}, {{logspace: [...]}}, "
        "{geomspace: [...]}, {arange: [...]}, got 3",
        f"{path}:4: grid.joints.0.damper.linspace: [start, stop, num] with an integer num from 1 to 1,000,000, got [0, 1, 0]",
        f"{path}:5: zip: the lists must have the same length, got a: 2, b: 1",
        f"{path}:7: metrics.bad: 'x[-1,': not an expression ('[' was never closed)",
    ]


def test_duplicate_runs_are_refused(tmp_path):
    with pytest.raises(SceneError) as err:
        plan_of(tmp_path, "scene: pendulum\ngrid: {joints.0.damper: [0.1, 0.1]}\n")
    assert "runs 0 and 1 set the same values (joints.0.damper=0.1)" in err.value.lines()[0]


def test_scene_and_config_resolve_against_the_sweep_file(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "fast.yaml").write_text("solver: {max_iter: 20}\n")
    (tmp_path / "sub" / "s.yaml").write_text("scene: pendulum\nconfig: fast.yaml\n")
    monkeypatch.chdir(tmp_path)
    plan = load_sweep("sub/s.yaml")
    assert plan.configs == [tmp_path / "sub" / "fast.yaml"]
    assert [(o.path, o.value) for o in plan.runs[0].overrides] == [("solver.max_iter", 20)]
