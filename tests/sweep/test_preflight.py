"""A sweep's axes and metrics are checked against its scene before the first run (issue 30):
a typo is exit 2 at its line with "did you mean", not NaN in every row or a failure per run."""

from __future__ import annotations

import pytest

from dojo_cli.errors import SceneError
from dojo_cli.sweep.plan import load_sweep


def problems_of(tmp_path, text: str) -> list[str]:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    with pytest.raises(SceneError) as err:
        load_sweep(path)
    return [line.replace(f"{path}:", "sweep.yaml:") for line in err.value.lines()]


def test_a_metric_naming_no_body_is_refused_with_did_you_mean(tmp_path):
    problems = problems_of(tmp_path, """\
scene: sphere
set: {duration: 0.05}
metrics:
  top: "max(x[:, bal, z])"
  fine: "x[-1, ball, z]"
  comp: "x[-1, ball, zz]"
""")
    assert problems[0].startswith("sweep.yaml:4: metrics.top: 'max(x[:, bal, z])': no 'bal' on axis 1 of 'x' "
                                  "(did you mean 'ball'?)")
    assert problems[1].startswith("sweep.yaml:6: metrics.comp: 'x[-1, ball, zz]': no 'zz' on axis 2 of 'x'")
    assert len(problems) == 2  # the correct metric passes


def test_a_metric_naming_no_dataset_or_metric_is_refused(tmp_path):
    problems = problems_of(tmp_path, """\
scene: pendulum
set: {duration: 0.05}
metrics:
  drift: energy_drfit
  pen: "max(contacts/distance)"
""")
    assert problems[0].startswith("sweep.yaml:4: metrics.drift: 'energy_drfit': no dataset or metric 'energy_drfit' "
                                  "(did you mean 'energy_drift'?)")
    # the pendulum has no contacts: its runs' files have no contact datasets
    assert problems[1].startswith("sweep.yaml:5: metrics.pen: 'max(contacts/distance)': no dataset or metric "
                                  "'contacts/distance'")


def test_an_axis_that_is_no_field_is_refused_before_any_run(tmp_path):
    problems = problems_of(tmp_path, """\
scene: sliding_box
set: {duration: 0.05}
grid:
  bodies.0.mas: [1.0, 2.0]
""")
    assert problems == ["sweep.yaml:4: bodies.0.mas: unknown field 'mas' (did you mean 'mass'?)"]


def test_an_invalid_value_is_left_to_its_run(tmp_path):
    """A value (not a path) that makes one run's scene invalid fails that run only: the
    pre-flight finds a run that loads and checks the metrics on it."""
    path = tmp_path / "sweep.yaml"
    path.write_text("""\
scene: sliding_box
set: {duration: 0.05}
grid:
  bodies.0.mass: [-1.0, 1.0]
metrics:
  x: "x[-1, box, x]"
""")
    assert len(load_sweep(path).runs) == 2
