"""Numbers from a stored run: dataset expressions and built-in metrics.

The one home of the expressions of ``dojo info RUN.h5 --get EXPR`` and of a sweep's
``metrics:``, so that both give the same number for the same file.

An expression is a dataset indexed down to one number, numpy-style::

    x[-1, box, 0]             last state, body "box", x coordinate
    x[-1, box, z]             the same axis by its name (x y z; w x y z for q)
    minimal/q[-1, hinge:r0]   names with characters Python does not allow: 'quoted'
    max(abs(contacts/distance[:, foot]))
    time[-1] - 0.5

Indices are integers (negative from the end), slices (``:``, ``10:``), or names: the body
names of ``x``, ``q``, ``v``, ``omega``, ``v_mid``, ``omega_mid`` (attribute ``names`` of
``x``), the coordinate names of ``minimal/q``, ``minimal/v``, ``inputs``, the contact names
of ``contacts/...`` (attribute ``contact_names``), the component names of the last axis.
Expressions may add, subtract, multiply, divide and raise to powers, and call ``abs``,
``min``, ``max``, ``mean``, ``sum``, ``std``, ``norm`` (over every element of their
argument), ``first`` and ``last`` (entry 0 and -1 of the first axis). The result must be
one number. Built-in metrics are bare names:

- ``energy_drift``: max over the stored states of |E_k - E_0|, mechanical energy, J
  (``dojo energy``'s "max drift" of mechanical energy; rebuilds the run's mechanism);
- ``max_penetration``: the deepest contact penetration, max(0, -contacts/distance), m
  (0 without contacts or steps);
- ``failed_steps``: steps whose solver did not converge;
- ``iterations_mean``: mean solver iterations per step (NaN without steps);
- ``steps``: steps stored; ``wall_time``: seconds the run took (attribute ``wall_time``,
  NaN when the file has none); ``final_time``: ``time[-1]``.

A sweep metric may instead be a Python entry point ``module:function``: the function takes
the run (a ``dojo_cli.io.storage.StoredRun``: its arrays are ``run.trajectory``) and returns a dict {name: number}, one
column ``<metric>.<name>`` each (``custom_metrics``).
"""

from __future__ import annotations

import ast
import difflib
import importlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dojo_cli.errors import InputError
from dojo_cli.io.storage import KNOT, StoredRun

# Groups of the dataset names an expression may read (``minimal/q``, ``contacts/distance``, ...).
_GROUPS = ("minimal", "solver", "contacts", "gradients")
# `minimal/q` in an expression: Python would read a division, so such names become one token first.
_GROUP_NAME = re.compile(r"\b(" + "|".join(_GROUPS) + r")/([A-Za-z_]\w*)")
_TOKEN_SEPARATOR = "__SLASH__"
_ENTRY_POINT = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
# Longest expression accepted (a metric is a short formula; this bounds the parser's work).
MAX_EXPRESSION_CHARACTERS = 1000

_VECTOR_AXIS = ("x", "y", "z")
_QUATERNION_AXIS = ("w", "x", "y", "z")

BUILTIN_METRICS = ("energy_drift", "max_penetration", "failed_steps", "iterations_mean", "steps", "wall_time",
                   "final_time")

_REDUCTIONS: dict[str, Callable[[np.ndarray], Any]] = {
    "abs": np.abs,
    "min": np.min,
    "max": np.max,
    "mean": np.mean,
    "sum": np.sum,
    "std": np.std,
    "norm": lambda a: np.linalg.norm(np.ravel(a)),
    "first": lambda a: np.asarray(a)[0],
    "last": lambda a: np.asarray(a)[-1],
}
_BINARY = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.divide,
    ast.Pow: np.power,
}


class ExpressionError(InputError):
    """An expression that cannot be read or evaluated on a run (exit code 2)."""


@dataclass(frozen=True)
class Expression:
    """A parsed expression: its text and its syntax tree (checked: only the grammar above)."""

    text: str
    tree: ast.Expression


def parse_expression(text: str) -> Expression:
    """Parse and check an expression (the names it reads are resolved when evaluated).

    Raises:
        ExpressionError: not an expression of the grammar (module docstring).
    """
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError(f"{text!r}: an expression must be non-empty text")
    if len(text) > MAX_EXPRESSION_CHARACTERS:
        raise ExpressionError(f"expression of {len(text)} characters, more than {MAX_EXPRESSION_CHARACTERS}")
    source = _GROUP_NAME.sub(lambda m: f"{m.group(1)}{_TOKEN_SEPARATOR}{m.group(2)}", text.strip())
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"{text!r}: not an expression ({exc.msg})") from None
    _check(tree.body, text)
    return Expression(text, tree)


def _check(node: ast.AST, text: str) -> None:
    """Only the grammar of the module docstring: no attributes, no other calls, no lambdas."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float, str)):
            raise ExpressionError(f"{text!r}: {node.value!r} is not a number or a name")
        return
    if isinstance(node, ast.Name):
        return
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        _check(node.operand, text)
        return
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        _check(node.left, text)
        _check(node.right, text)
        return
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _REDUCTIONS or node.keywords or len(node.args) != 1:
            known = ", ".join(_REDUCTIONS)
            raise ExpressionError(f"{text!r}: only calls of one argument to {known} are allowed")
        _check(node.args[0], text)
        return
    if isinstance(node, ast.Subscript):
        if not isinstance(node.value, ast.Name):
            raise ExpressionError(f"{text!r}: only a dataset can be indexed (x[-1, box, 0])")
        for index in _indices(node):
            if isinstance(index, ast.Slice):
                for part in (index.lower, index.upper, index.step):
                    if part is not None:
                        _check(part, text)
            elif isinstance(index, (ast.Name, ast.Constant)) or (
                isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) and isinstance(index.operand, ast.Constant)
            ):
                if isinstance(index, ast.Constant) and not isinstance(index.value, (int, str)):
                    raise ExpressionError(f"{text!r}: index {index.value!r} is not an integer or a name")
            else:
                raise ExpressionError(f"{text!r}: an index is an integer, a slice or a name, got {ast.unparse(index)!r}")
        return
    raise ExpressionError(f"{text!r}: {type(node).__name__.lower()} is not allowed in an expression")


def _indices(node: ast.Subscript) -> list[ast.AST]:
    index = node.slice
    return list(index.elts) if isinstance(index, ast.Tuple) else [index]


# ------------------------------------------------------------------ evaluation


class RunData:
    """A stored run as expressions see it: datasets by name, their axis labels, built-in
    metrics (computed once). ``mech``: the run's mechanism when the caller has it (a sweep
    task), else it is rebuilt from the file's scene when ``energy_drift`` needs it."""

    def __init__(self, run: StoredRun, mech=None):
        self.run = run
        self._mech = mech
        self._metrics: dict[str, float] = {}

    def datasets(self) -> dict[str, Any]:
        """Every dataset an expression may read, by name."""
        run = self.run
        datasets = run.trajectory.datasets()  # the run's arrays by their dataset names
        if run.velocities != KNOT:  # a midpoint file stores no v_mid, omega_mid (its v, omega are those)
            del datasets["v_mid"], datasets["omega_mid"]
        datasets["solver/status"] = np.asarray(datasets["solver/status"], dtype=str)
        return {**run.extras, **datasets}

    def dataset(self, name: str) -> np.ndarray:
        datasets = self.datasets()
        if name not in datasets:
            known = sorted(datasets)
            raise ExpressionError(f"{self.run.path}: no dataset {name!r}{did_you_mean(name, known)} "
                                  f"(datasets: {', '.join(known)})")
        value = datasets[name]
        if np.asarray(value).dtype.kind not in "biuf":
            raise ExpressionError(f"{self.run.path}: dataset {name!r} holds text, not numbers")
        return np.asarray(value)

    def labels(self, name: str, axis: int, ndim: int) -> tuple[str, ...] | None:
        """Names along ``axis`` of dataset ``name`` (None when that axis has none)."""
        run = self.run
        if name in ("x", "q", "v", "omega", "v_mid", "omega_mid"):
            if axis == 1:
                return tuple(run.body_names)
            if axis == 2:
                return _QUATERNION_AXIS if name == "q" else _VECTOR_AXIS
        elif name in ("minimal/q", "inputs") and axis == 1:
            return tuple(run.minimal_q_names)
        elif name == "minimal/v" and axis == 1:
            return tuple(run.minimal_v_names)
        elif name.startswith("contacts/"):
            if axis == 1:
                names = run.attrs.get("contact_names")
                return tuple(names) if isinstance(names, list) else None
            if axis == 2 and ndim == 3:
                return _VECTOR_AXIS[:2]
        return None

    def metric(self, name: str) -> float:
        if name not in self._metrics:
            self._metrics[name] = self._compute(name)
        return self._metrics[name]

    def _compute(self, name: str) -> float:
        run = self.run
        if name == "failed_steps":
            value = run.attrs.get("failed_steps")
            if isinstance(value, int):
                return value
            return int(np.count_nonzero(np.asarray(run.trajectory.status, dtype=str) != "success"))
        if name == "iterations_mean":
            iterations = np.asarray(run.trajectory.iterations, dtype=float)
            return float(np.mean(iterations)) if iterations.size else math.nan
        if name == "max_penetration":
            distance = run.trajectory.contact_distance
            if distance is None or np.size(distance) == 0:
                return 0.0
            return float(max(0.0, -float(np.min(distance))))
        if name == "steps":
            return int(run.steps_completed)
        if name == "wall_time":
            value = run.attrs.get("wall_time")
            return float(value) if isinstance(value, (int, float)) else math.nan
        if name == "final_time":
            return float(run.trajectory.time[-1]) if len(run.trajectory.time) else math.nan
        if name == "energy_drift":
            return self._energy_drift()
        raise AssertionError(name)  # pragma: no cover

    def _energy_drift(self) -> float:
        # here: only this metric needs the physics and the scene loader
        from dojo_cli.physics.energy import knot_mechanics, mechanics

        run = self.run
        if run.steps_completed < 1:
            return math.nan
        mech = self._mech
        if mech is None:
            from dojo_cli.scene.stored_run import run_mechanism

            _, mech = run_mechanism(run, controller=False)
            self._mech = mech
        traj = run.trajectory
        if run.velocities == KNOT:
            energy = knot_mechanics(mech, traj.time, traj.x, traj.q, traj.v, traj.omega).mechanical
        else:
            energy = mechanics(mech, traj.time, traj.x, traj.q, traj.v, traj.omega).mechanical
        return float(np.max(np.abs(energy - energy[0])))


def evaluate(run: StoredRun | RunData, expression: str | Expression) -> float | int:
    """The number an expression gives on a run (an int for integer results, else a float).

    Raises:
        ExpressionError: the expression is malformed, names no dataset, label or metric of
            this run, indexes out of range, or does not give exactly one number.
    """
    data = run if isinstance(run, RunData) else RunData(run)
    expr = expression if isinstance(expression, Expression) else parse_expression(expression)
    value = np.asarray(_eval(expr.tree.body, data, expr.text))
    if value.size != 1:
        raise ExpressionError(
            f"{expr.text!r} on {data.run.path}: gives an array of shape {value.shape}, not one number (index it further)"
        )
    item = value.reshape(()).item()
    if isinstance(item, bool):
        return int(item)
    return item if isinstance(item, int) else float(item)


def _dataset_name(node: ast.Name) -> str:
    return node.id.replace(_TOKEN_SEPARATOR, "/")


def _eval(node: ast.AST, data: RunData, text: str) -> Any:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            raise ExpressionError(f"{text!r}: a quoted name {node.value!r} is only an index")
        return node.value
    if isinstance(node, ast.Name):
        name = _dataset_name(node)
        if name in BUILTIN_METRICS:
            return data.metric(name)
        return data.dataset(name)
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, data, text)
        return np.negative(value) if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        with np.errstate(all="ignore"):  # 1/0 is inf, as numpy says; not a warning
            return _BINARY[type(node.op)](np.asarray(_eval(node.left, data, text), dtype=float),
                                         np.asarray(_eval(node.right, data, text), dtype=float))
    if isinstance(node, ast.Call):
        argument = np.asarray(_eval(node.args[0], data, text))
        if argument.size == 0 and node.func.id not in ("abs",):
            raise ExpressionError(f"{text!r} on {data.run.path}: {node.func.id} of no values (the run has no steps?)")
        return _REDUCTIONS[node.func.id](argument)
    if isinstance(node, ast.Subscript):
        name = _dataset_name(node.value)
        array = data.dataset(name)
        indices = _indices(node)
        if len(indices) > array.ndim:
            raise ExpressionError(
                f"{text!r} on {data.run.path}: {len(indices)} indices for dataset {name!r} of shape {array.shape}"
            )
        key = tuple(_index(index, data, name, axis, array, text) for axis, index in enumerate(indices))
        return array[key]
    raise AssertionError(type(node))  # pragma: no cover (refused by _check)


def _index(node: ast.AST, data: RunData, name: str, axis: int, array: np.ndarray, text: str) -> int | slice:
    where = f"{text!r} on {data.run.path}"
    if isinstance(node, ast.Slice):
        parts = [None if p is None else _integer(_eval(p, data, text), where) for p in (node.lower, node.upper, node.step)]
        return slice(*parts)
    if isinstance(node, ast.UnaryOp):
        position = -int(node.operand.value)
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        position = node.value
    else:
        label = node.id if isinstance(node, ast.Name) else node.value
        labels = data.labels(name, axis, array.ndim)
        if labels is None:
            raise ExpressionError(f"{where}: axis {axis} of dataset {name!r} has no names; index it by number")
        if label not in labels:
            raise ExpressionError(f"{where}: no {label!r} on axis {axis} of {name!r}{did_you_mean(label, labels)} "
                                  f"(names: {', '.join(labels)})")
        return labels.index(label)
    size = array.shape[axis]
    if not -size <= position < size:
        raise ExpressionError(f"{where}: index {position} is out of range for axis {axis} of {name!r} (size {size})")
    return position


def did_you_mean(word: str, choices) -> str:
    """' (did you mean 'ball'?)' when a choice is close to a mistyped word (difflib), else ''."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_names(expression: str | Expression, data: RunData) -> None:
    """Check that every dataset, metric and label an expression names exists in a run like
    ``data`` (a sweep's pre-flight, on one step of its first run), without evaluating it:
    what depends on a run's length (an index beyond a short run) is left to the run.

    Raises:
        ExpressionError: the first unknown name, with a "did you mean" when one is close.
    """
    expr = expression if isinstance(expression, Expression) else parse_expression(expression)
    for node in ast.walk(expr.tree.body):
        if isinstance(node, ast.Subscript):
            name = _dataset_name(node.value)
            array = data.dataset(name)
            indices = _indices(node)
            if len(indices) > array.ndim:
                raise ExpressionError(f"{expr.text!r}: {len(indices)} indices for dataset {name!r}, which has "
                                      f"{array.ndim} axes")
            for axis, index in enumerate(indices):
                if isinstance(index, ast.Name) or (isinstance(index, ast.Constant) and isinstance(index.value, str)):
                    _index(index, data, name, axis, array, expr.text)
        elif isinstance(node, ast.Name) and not _is_index(node, expr.tree.body) and not _is_called(node, expr.tree.body):
            name = _dataset_name(node)
            if name not in BUILTIN_METRICS:
                try:
                    data.dataset(name)
                except ExpressionError:
                    known = [*BUILTIN_METRICS, *data.datasets()]
                    raise ExpressionError(f"{expr.text!r}: no dataset or metric {name!r}{did_you_mean(name, known)} "
                                          f"(metrics: {', '.join(BUILTIN_METRICS)})") from None


def _is_index(node: ast.Name, root: ast.AST) -> bool:
    """Whether a name is a label inside a subscript (``box`` of ``x[-1, box, 0]``)."""
    return any(isinstance(parent, ast.Subscript) and node in _indices(parent) for parent in ast.walk(root))


def _is_called(node: ast.Name, root: ast.AST) -> bool:
    """Whether a name is a function called (``max`` of ``max(x[:, box, z])``) or a subscript's dataset."""
    return any((isinstance(parent, ast.Call) and parent.func is node)
               or (isinstance(parent, ast.Subscript) and parent.value is node) for parent in ast.walk(root))


def _integer(value: Any, where: str) -> int:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    raise ExpressionError(f"{where}: a slice bound must be an integer, got {value!r}")


# ------------------------------------------------------------------ metrics of a sweep


def is_entry_point(text: str) -> bool:
    """Whether a metric is a Python entry point ``module:function`` rather than an expression."""
    return isinstance(text, str) and bool(_ENTRY_POINT.match(text.strip()))


def load_entry_point(text: str) -> Callable[[StoredRun], Mapping[str, Any]]:
    """The function of ``module:function``.

    Raises:
        ExpressionError: the module cannot be imported or has no such function.
    """
    module_name, _, function = text.strip().partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - a user's module can raise anything on import
        raise ExpressionError(f"{text}: cannot import {module_name!r} ({type(exc).__name__}: {exc})") from None
    target = getattr(module, function, None)
    if not callable(target):
        raise ExpressionError(f"{text}: module {module_name!r} has no function {function!r}")
    return target


def metric_values(data: RunData, metrics: Mapping[str, str]) -> tuple[dict[str, float], list[str]]:
    """Every metric of a sweep on one run: {column: number} and the problems met.

    A metric that cannot be evaluated on this run (an index beyond a short run, a custom
    function that raises) is NaN and its problem is listed; the others are unaffected.
    """
    values: dict[str, float] = {}
    problems: list[str] = []
    for name, text in metrics.items():
        if is_entry_point(text):
            try:
                result = load_entry_point(text)(data.run)
                if not isinstance(result, Mapping):
                    raise ExpressionError(f"{text}: returned {type(result).__name__}, not a dict of numbers")
                for key, value in result.items():
                    values[f"{name}.{key}"] = _number(value, f"{text}: {key}")
            except Exception as exc:  # noqa: BLE001 - a user's function can raise anything
                problems.append(f"metric {name}: {exc}")
            continue
        try:
            values[name] = evaluate(data, text)
        except ExpressionError as exc:
            values[name] = math.nan
            problems.append(f"metric {name}: {exc}")
    return values, problems


def _number(value: Any, what: str) -> float | int:
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ExpressionError(f"{what}: {value!r} is not a number") from None
