"""`dojo fit` files and data: the example fit file runs end to end, and bad fit files and bad
data exit 2 naming the file, the row or line, and the cause (issue 27)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app
from dojo_cli.errors import SceneError
from dojo_cli.fit.task import load_fit, match_labels

ROOT = Path(__file__).resolve().parents[2]
SCENE = ROOT / "scenes" / "contact" / "cube_toss.yaml"
DATA = ROOT / "data" / "cube_tosses" / "cube_tosses_train.npz"
runner = CliRunner()


def _csv(path: Path, frames: np.ndarray, header="x,y,z,qw,qx,qy,qz") -> Path:
    path.write_text(header + "\n" + "\n".join(",".join(f"{v:.17g}" for v in row) for row in frames) + "\n")
    return path


def _toss_frames(k: int = 0) -> np.ndarray:
    with np.load(DATA) as d:
        o = d["offsets"]
        return np.asarray(d["frames"][o[k]:o[k + 1], :7], dtype=float)


def _fit_file(tmp_path: Path, data: dict, **extra) -> Path:
    body = {"scene": str(SCENE), "parameters": {"contacts.*.friction": {"initial": 0.2, "bounds": [0, 2], "tie": True}},
            "data": data, "solver": {"max_evaluations": 2}, **extra}
    path = tmp_path / "fit.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def _columns(**kw):
    return {"bodies": {"cube": {"position": ["x", "y", "z"], "orientation": ["qw", "qx", "qy", "qz"]}}, **kw}


def test_wildcards_name_labels_and_their_components():
    labels = dojo.parameter_labels(dojo.load_scene("cube_toss"), ["friction", "offset", "mass"])
    assert len(match_labels("contacts.*.friction", labels)) == 8
    assert len(match_labels("contacts.corner_p*.offset", labels)) == 12
    assert match_labels("contacts.corner_ppp.offset.x", labels) == ["contacts.corner_ppp.offset.x"]
    assert match_labels("bodies.cube.mass", labels) == ["bodies.cube.mass"]


def test_example_fit_file_reads():
    task = load_fit(ROOT / "configs" / "fit" / "cube_tosses.yaml")
    assert len(task.train) == 20 and len(task.validation) == 40
    assert task.parameters.names[:2] == ["contacts.*.friction", "contacts.*.restitution"]
    assert len(task.parameters.names) == 2 + 24 and len(task.parameters.labels) == 16 + 24


def test_fit_command_writes_a_scene_that_simulates(tmp_path):
    path = _fit_file(tmp_path, {"file": str(_csv(tmp_path / "toss.csv", _toss_frames(3))), **_columns()})
    res = runner.invoke(app, ["fit", str(path), "-o", str(tmp_path / "out"), "-q", "--plot", str(tmp_path / "fit.png")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "out.json").read_text())
    (mu,) = [p for p in report["parameters"] if p["name"] == "contacts.*.friction"]
    assert report["cost"] <= report["initial_cost"]
    assert (tmp_path / "fit.png").stat().st_size > 0 and (tmp_path / "out.txt").read_text() in res.output
    fitted = dojo.load_scene(str(tmp_path / "out.yaml"))
    assert all(c.friction == pytest.approx(mu["value"], rel=1e-15) for c in fitted.contacts)
    assert fitted.contacts[0].params["point"][2] == pytest.approx(-0.022), "the scene's ground kept"
    # dojo.fit is the same fit (deterministic: the same numbers to the last digit)
    result = dojo.fit(path)
    assert result.values[0] == mu["value"] and result.task.file == str(path)


def _exit_2(path: Path, *needles: str):
    res = runner.invoke(app, ["fit", str(path), "-o", str(path.parent / "out"), "-q"])
    assert res.exit_code == 2, res.output
    for needle in needles:
        assert needle in res.output, res.output
    assert "Traceback" not in res.output


def test_nan_row_names_file_row_and_column(tmp_path):
    frames = _toss_frames()
    frames[17, 4] = np.nan
    data = _csv(tmp_path / "toss.csv", frames)
    _exit_2(_fit_file(tmp_path, {"file": str(data), **_columns()}), "fit.yaml:", "toss.csv: row 18", "'qx'", "not finite")


def test_missing_column_and_unknown_body(tmp_path):
    data = _csv(tmp_path / "toss.csv", _toss_frames()[:, :6], header="x,y,z,qw,qx,qy")
    _exit_2(_fit_file(tmp_path, {"file": str(data), **_columns()}), "no column 'qz'")
    bad_body = {"bodies": {"crate": {"position": ["x", "y", "z"], "orientation": ["qw", "qx", "qy", "qz"]}}}
    _exit_2(_fit_file(tmp_path, {"file": str(data), **bad_body}), "data.bodies.crate", "unknown body 'crate'")


def test_non_unit_quaternion_names_the_row(tmp_path):
    frames = _toss_frames()
    frames[5:, 3] *= 1.5   # scalar part scaled: a wrong column, or another quantity
    data = _csv(tmp_path / "toss.csv", frames)
    _exit_2(_fit_file(tmp_path, {"file": str(data), **_columns()}), "toss.csv: row 6", "not a unit quaternion in the order wxyz")


def test_frame_period_must_be_the_scenes(tmp_path):
    frames = np.column_stack([np.arange(len(_toss_frames())) * 0.01, _toss_frames()])
    data = _csv(tmp_path / "toss.csv", frames, header="t,x,y,z,qw,qx,qy,qz")
    _exit_2(_fit_file(tmp_path, {"file": str(data), "time": "t", **_columns()}), "frame period 0.01 s", "timestep")


@pytest.mark.parametrize("change, needles", [
    ({"parameters": {"contacts.*.fricton": {}}}, ["parameters.contacts.*.fricton", "matches no parameter"]),
    ({"parameters": {"contacts.*.friction": {"initial": 3.0, "bounds": [0, 2]}}}, ["outside the bounds"]),
    ({"loss": {"type": "two_step"}}, ["loss.type", "one_step, shooting"]),
    ({"solver": {"starts": 0}}, ["solver.starts"]),
    ({"scene": "no_such_scene"}, ["scene"]),
])
def test_bad_fit_files_name_line_and_field(tmp_path, change, needles):
    data = _csv(tmp_path / "toss.csv", _toss_frames())
    path = _fit_file(tmp_path, {"file": str(data), **_columns()})
    body = yaml.safe_load(path.read_text())
    body.update(change)
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    _exit_2(path, "fit.yaml:", *needles)
    with pytest.raises(SceneError):
        load_fit(path)


def test_ctrl_c_keeps_the_best_iterate(tmp_path):
    """KeyboardInterrupt (Ctrl-C, SIGTERM through cli.signals) inside the solve: the fit stops
    with status interrupted and the best iterate so far, which the files are written from."""
    from dojo_cli.fit.solve import fit

    path = _fit_file(tmp_path, {"file": str(_csv(tmp_path / "toss.csv", _toss_frames(3))), **_columns()},
                     solver={"max_evaluations": 20})
    seen = []

    def progress(record):
        seen.append(record)
        if len(seen) == 4:
            raise KeyboardInterrupt

    result = fit(load_fit(path), progress)
    assert result.status == "interrupted" and len(seen) == 4
    best = min(seen, key=lambda r: r["cost"])
    assert result.cost == pytest.approx(best["cost"], rel=1e-12), "the files hold the best iterate seen"
    assert result.cost <= seen[0]["cost"]
