"""scene.task_file: the one reader of the files that name a scene (dojo optimize's task
files, dojo fit's fit files, dojo sweep's sweep files)."""

from __future__ import annotations

import pytest

from dojo_cli.errors import SceneError
from dojo_cli.fit.task import load_fit
from dojo_cli.optimize.task import load_task
from dojo_cli.scene.task_file import TaskFile
from dojo_cli.sweep.plan import load_sweep

LOADERS = {"task": load_task, "fit": load_fit, "sweep": load_sweep}


@pytest.mark.parametrize("kind", sorted(LOADERS))
def test_every_task_file_reads_its_scene_and_set_alike(tmp_path, kind):
    """One scene check and one `set:` check for the three kinds: the same file, line, field
    and cause (the readers before scene.task_file were three copies)."""
    path = tmp_path / f"{kind}.yaml"
    path.write_text("description: x\nscene: no_such_scene_here\nset: [1, 2]\n")
    with pytest.raises(SceneError) as info:
        LOADERS[kind](path)
    lines = info.value.lines()
    assert any(line.startswith(f"{path}:2: scene: ") and "no_such_scene_here" in line for line in lines), lines
    assert f"{path}:3: set: must be a mapping of field paths, got [1, 2]" in lines, lines


def test_a_missing_key_is_reported_at_its_enclosing_line():
    """A field without a line of its own (a missing key) is placed at the line of the key
    that encloses it; task and fit files name the field, sweep files the enclosing key."""
    lines = {"": 1, "random": 2, "random.n": 3}
    task, sweep = TaskFile("f.yaml", lines), TaskFile("f.yaml", lines, name_enclosing_field=True)
    for r in (task, sweep):
        r.problem("random.axes.mass", "needed")
        r.problem("random.n", "too many")
        r.problem("scene", "required")
    assert [str(p) for p in task.problems] == ["f.yaml:2: random.axes.mass: needed", "f.yaml:3: random.n: too many",
                                               "f.yaml:1: scene: required"]
    assert [str(p) for p in sweep.problems] == ["f.yaml:2: random: needed", "f.yaml:3: random.n: too many",
                                                "f.yaml:1: scene: required"]
