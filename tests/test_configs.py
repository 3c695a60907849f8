"""configs/: every preset applies to the scenes it is meant for, every example sweep reads, and
the example shell sweep runs and prints what `dojo info --get` reads from its files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dojo_cli.io.storage import read_storage
from dojo_cli.scene.loader import load_scene_spec
from dojo_cli.scene.presets import read_preset
from dojo_cli.sweep.plan import load_sweep

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
PRESETS = sorted((CONFIGS / "solver").glob("*.yaml")) + sorted((CONFIGS / "run").glob("*.yaml"))
SWEEPS = sorted((CONFIGS / "sweeps").glob("*.yaml"))


def test_the_layout_exists():
    assert {p.name for p in (CONFIGS / "solver").glob("*.yaml")} >= {"accurate.yaml", "fast.yaml"}
    assert PRESETS and SWEEPS and (CONFIGS / "sweeps" / "friction.sh").exists()
    assert "outputs/" in (ROOT / ".gitignore").read_text().split()


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize("scene", ["pendulum", "box"])
def test_presets_apply(preset, scene):
    items = read_preset(preset)
    spec = load_scene_spec(scene, items)
    for item in items:  # every value of the preset is the scene's now
        head, _, key = item.path.rpartition(".")
        holder = getattr(spec, head) if head else spec
        assert getattr(holder, key) == item.value, item.path


@pytest.mark.parametrize("sweep", SWEEPS, ids=lambda p: p.name)
def test_example_sweeps_read(sweep):
    plan = load_sweep(sweep)
    assert plan.runs and plan.metrics and plan.output is not None


def test_friction_sh_prints_what_the_files_hold(tmp_path):
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    res = subprocess.run(["bash", str(CONFIGS / "sweeps" / "friction.sh"), str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "friction final_x" and len(lines) == 6
    previous = None
    for line in lines[1:]:
        mu, x = line.split()
        run = read_storage(tmp_path / "out" / f"friction-{mu}.h5")
        assert run.attrs["overrides"]["contacts.*.friction"] == float(mu)
        assert run.status == "complete" and run.trajectory.time[-1] == pytest.approx(0.5, abs=1e-12), "configs/run/short.yaml"
        assert float(x) == run.trajectory.x[-1, 0, 0]
        assert previous is None or float(x) < previous, "more friction, a shorter slide"
        previous = float(x)
