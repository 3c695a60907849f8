"""A fit's results as files (docs/fit.md, "Results"):

- ``OUT.yaml``: the scene with the fitted values, every field explicit, ready for
  ``dojo simulate`` (the scene's own file and overrides, then one override per fitted body,
  contact or joint field);
- ``OUT.json``: the report: status, values, initial values, standard errors, correlations,
  costs, evaluations, per-recording errors on train and validation and their means;
- ``OUT.txt``: the same as text (what ``dojo fit`` prints);
- plots (``plot_fit``, matplotlib): recorded against simulated positions of a few
  validation recordings, and their position and rotation errors over time.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dojo_cli.fit.metrics import Errors
from dojo_cli.fit.solve import FitResult
from dojo_cli.fit.task import FitTask
from dojo_cli.io.labelled_files import write_text
from dojo_cli.model.parameters import parameter_values

ERROR_FIELDS = ("position", "rotation", "final_position", "final_rotation", "penetration", "failed_steps")


def fitted_overrides(task: FitTask, result: FitResult) -> dict[str, object]:
    """Scene overrides that set every fitted field to its fitted value (whole fields: a
    contact's offset, a body's inertia matrix)."""
    mech = result.mech
    out: dict[str, object] = {}
    for label in task.parameters.labels:
        parts = label.split(".")
        if parts[0] == "gravity":
            out["gravity"] = [float(v) for v in mech.gravity]
        elif parts[0] == "bodies":
            b = mech.body_index(parts[1])
            if parts[2] == "mass":
                out[f"bodies.{parts[1]}.mass"] = float(mech.mass[b])
            else:
                out[f"bodies.{parts[1]}.inertia"] = [[float(v) for v in row] for row in np.asarray(mech.inertia[b])]
        elif parts[0] == "joints":
            j = [jt.name for jt in mech.joints].index(parts[1])
            out[f"joints.{parts[1]}.{parts[2]}"] = [float(v) for v in getattr(mech, parts[2])[mech.joint_free_range[j]]]
        elif parts[0] == "contacts":
            if parts[2] == "offset":
                out[f"contacts.{parts[1]}.offset"] = [float(v) for v in parameter_values(mech, [f"{label[:-2]}.{a}" for a in "xyz"])]
            else:
                out[f"contacts.{parts[1]}.{parts[2]}"] = float(parameter_values(mech, [label])[0])
    return out


def fitted_scene_text(task: FitTask, result: FitResult) -> str:
    """The fitted scene as YAML (module docstring)."""
    from dojo_cli.scene.loader import dump_scene, load_scene_spec
    from dojo_cli.scene.overrides import Override

    overrides = list(task.overrides) + [Override(p, v) for p, v in fitted_overrides(task, result).items()]
    spec = load_scene_spec(task.scene, overrides)
    header = (f"# Fitted by dojo fit {task.file}: {result.status}, cost {result.cost:.6g}\n"
              f"# (from {task.scene}; fitted fields: {', '.join(fitted_overrides(task, result))})\n")
    return header + dump_scene(spec)


def _mean(errors: list[Errors]) -> dict:
    if not errors:
        return {}
    return {f: float(np.mean([getattr(e, f) for e in errors])) for f in ERROR_FIELDS}


def report(task: FitTask, result: FitResult) -> dict:
    """The JSON report."""
    def finite(v):
        return [None if not np.isfinite(x) else float(x) for x in np.asarray(v, float).reshape(-1)]

    return {
        "fit_file": task.file,
        "scene": task.scene,
        "status": result.status,
        "loss": task.loss,
        "window": task.window,
        "rotation_weight": task.rotation_weight,
        "huber": task.options.huber,
        "kappa": task.kappa,
        "solver_options": {"rtol": task.mech.default_options.rtol, "btol": task.mech.default_options.btol},
        "parameters": [
            {"name": n, "labels": g, "value": float(v), "initial": float(i), "standard_error": se,
             "bounds": [float(lo), float(hi)]}
            for n, g, v, i, se, lo, hi in zip(result.names, task.parameters.groups, result.values, result.initial,
                                              finite(result.standard_errors), task.parameters.lower, task.parameters.upper)
        ],
        "correlations": [finite(row) for row in result.correlations],
        "cost": result.cost,
        "initial_cost": result.initial_cost,
        "residual_rms": result.residual_rms,
        "evaluations": result.evaluations,
        "starts": [{"cost": float(c), "values": [float(v) for v in x]} for c, x in result.starts],
        "train": {"recordings": [r.name for r in task.train], "mean": _mean(result.train_errors),
                  "errors": [e.as_dict() for e in result.train_errors]},
        "validation": {"recordings": [r.name for r in task.validation], "mean": _mean(result.validation_errors),
                       "errors": [e.as_dict() for e in result.validation_errors]},
        "width": task.width,
        "wall_time": result.wall_time,
    }


def report_text(task: FitTask, result: FitResult) -> str:
    """The report as text."""
    lines = [f"{task.file}: {result.status}, {result.evaluations} evaluations, {result.wall_time:.1f} s",
             f"loss {task.loss}" + (f" (windows of {task.window} steps)" if task.loss == "shooting" else "")
             + f": cost {result.initial_cost:.6g} -> {result.cost:.6g}, residual rms {result.residual_rms:.3g}",
             "", f"{'parameter':<32} {'value':>12} {'std error':>10} {'initial':>10}"]
    for n, v, se, i, lo, hi in zip(result.names, result.values, result.standard_errors, result.initial,
                                   task.parameters.lower, task.parameters.upper):
        # at a bound the covariance is not the estimate's spread (the bound holds it)
        bound = " (at its lower bound)" if v <= lo else " (at its upper bound)" if v >= hi else ""
        lines.append(f"{n:<32} {v:>12.6g} {se:>10.3g} {i:>10.4g}{bound}")
    strong = [(abs(result.correlations[a, b]), result.names[a], result.names[b])
              for a in range(len(result.names)) for b in range(a) if np.isfinite(result.correlations[a, b])]
    strong = sorted(strong, reverse=True)[:5]
    if strong:
        lines += ["", "largest correlations: " + "; ".join(f"{a} ~ {b} {c:.2f}" for c, a, b in strong)]
    for what, errs in (("train", result.train_errors), ("validation", result.validation_errors)):
        m = _mean(errs)
        if m:
            lines.append(f"{what} ({len(errs)} recordings, simulated from their first frames): position "
                         f"{m['position']:.2f} % of {task.width:g}, rotation {m['rotation']:.2f} deg; final frame "
                         f"{m['final_position']:.2f} %, {m['final_rotation']:.2f} deg; penetration {m['penetration']:.2g}; "
                         f"failed steps {int(m['failed_steps'] * len(errs))}")
    return "\n".join(lines) + "\n"


def write_results(task: FitTask, result: FitResult, out: Path) -> list[Path]:
    """OUT.yaml (the fitted scene), OUT.json and OUT.txt (the report); returns the paths."""
    paths = [out.with_suffix(".yaml"), out.with_suffix(".json"), out.with_suffix(".txt")]
    texts = [fitted_scene_text(task, result), json.dumps(report(task, result), indent=1) + "\n", report_text(task, result)]
    for path, text in zip(paths, texts):
        write_text(path, text)
    return paths


# Validation recordings drawn by the plot at most (one column each).
PLOT_RECORDINGS = 4


def plot_series(task: FitTask, result: FitResult, count: int = PLOT_RECORDINGS) -> list[dict]:
    """What ``viz.fit_plot.plot_fit`` draws: the first ``count`` validation recordings (the
    training ones without validation) simulated with the fitted model from their first frames."""
    from dojo_cli.fit.metrics import rotation_angle
    from dojo_cli.fit.solve import simulate_recording

    out = []
    for rec in (task.validation or task.train)[:count]:
        x, q, _ = simulate_recording(result.mech, rec, task.clearance)
        out.append({"name": Path(rec.name).name, "time": rec.time, "x_rec": rec.x[:, 0], "x_sim": x[:, 0],
                    "position_error": np.linalg.norm(x[:, 0] - rec.x[:, 0], axis=-1) / task.width * 100.0,
                    "rotation_error": np.degrees(rotation_angle(q[:, 0], rec.q[:, 0]))})
    return out
