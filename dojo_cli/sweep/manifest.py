"""A sweep's manifest: one row per run, as CSV (``manifest.csv``) and Parquet (``manifest.parquet``).

Columns, in order: ``run_id``, ``file`` (the storage file, relative to the sweep's folder;
empty when the run wrote none), ``status`` (a storage status: ``complete``,
``complete_with_failures``, ``interrupted``, ``failed``; or ``pending``, not run), ``failed_steps``,
``wall_time`` (s), one column per axis named exactly as its path (``contacts.*.friction``),
one per metric, then ``error`` (why a run failed, or a metric could not be evaluated).
Numbers are written at full precision (Python's shortest repr, which reads back to the
same float); a value that is not a number (a list, for an axis such as ``gravity``) is
written as JSON. The CSV is rewritten (atomically: a temporary file renamed over it) as
runs finish, so it always says which runs are done; the Parquet file when the sweep ends
or stops.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from dojo_cli.errors import StorageError
from dojo_cli.io.labelled_files import write_atomically

CSV_NAME = "manifest.csv"
PARQUET_NAME = "manifest.parquet"
# Beside the manifest: which of its columns are axes and which metrics (JSON), for summarize.
COLUMNS_NAME = "columns.json"
FIRST_COLUMNS = ("run_id", "file", "status", "failed_steps", "wall_time")
LAST_COLUMNS = ("error",)
# Columns that hold text whatever it looks like (a run id may be all digits).
TEXT_COLUMNS = ("run_id", "file", "status", "error")


def columns(axes: list[str], metrics: list[str]) -> list[str]:
    """The manifest's columns for these axes and metric columns."""
    return [*FIRST_COLUMNS, *axes, *[m for m in metrics if m not in axes], *LAST_COLUMNS]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    return json.dumps(value)


def write_csv(path: Path, rows: list[dict[str, Any]], names: list[str]) -> None:
    """Write the rows as CSV, replacing the file atomically.

    Raises:
        StorageError: it cannot be written (exit code 3).
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(names)
    for row in rows:
        writer.writerow([_cell(row.get(name)) for name in names])
    write_atomically(Path(path), lambda p: p.write_text(buffer.getvalue(), encoding="utf-8"), overwrite=True)


def write_parquet(path: Path, rows: list[dict[str, Any]], names: list[str]) -> None:
    """Write the rows as Parquet (pyarrow), replacing the file atomically. Columns of numbers
    are int64 or float64; any other column is text (JSON for lists).

    Raises:
        StorageError: it cannot be written.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = {}
    for name in names:
        values = [row.get(name) for row in rows]
        present = [v for v in values if v is not None]
        if name in TEXT_COLUMNS:
            arrays[name] = pa.array([None if v is None else str(v) for v in values], type=pa.string())
        elif present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            arrays[name] = pa.array(values, type=pa.int64())
        elif present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
            arrays[name] = pa.array([None if v is None else float(v) for v in values], type=pa.float64())
        else:
            arrays[name] = pa.array([None if v is None else (v if isinstance(v, str) else _cell(v)) for v in values],
                                    type=pa.string())
    table = pa.table(arrays)
    write_atomically(Path(path), lambda p: pq.write_table(table, p), overwrite=True)


def write_column_kinds(folder: Path, axes: list[str], metrics: list[str],
                       expressions: dict[str, str] | None = None) -> None:
    """Record which manifest columns are axes and which metrics (``columns.json``), and each
    metric's expression (a re-run evaluates a changed one again)."""
    text = json.dumps({"axes": list(axes), "metrics": list(metrics), "expressions": dict(expressions or {})},
                      indent=1)
    write_atomically(Path(folder) / COLUMNS_NAME, lambda p: p.write_text(text, encoding="utf-8"), overwrite=True)


def read_column_kinds(folder: Path) -> tuple[list[str], list[str]] | None:
    """(axes, metrics) as ``write_column_kinds`` recorded them, or None."""
    try:
        data = json.loads((Path(folder) / COLUMNS_NAME).read_text(encoding="utf-8"))
        axes, metrics = data["axes"], data["metrics"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not all(isinstance(n, str) for n in [*axes, *metrics]):
        return None
    return list(axes), list(metrics)


def read_metric_expressions(folder: Path) -> dict[str, str]:
    """{metric: expression} as ``write_column_kinds`` recorded them ({} when unknown)."""
    try:
        data = json.loads((Path(folder) / COLUMNS_NAME).read_text(encoding="utf-8"))
        expressions = data.get("expressions", {})
    except (OSError, ValueError, AttributeError):
        return {}
    if not isinstance(expressions, dict):
        return {}
    return {str(k): v for k, v in expressions.items() if isinstance(v, str)}


def _parsed(text: str) -> Any:
    """A CSV cell back as a value: int, float, JSON list or mapping, text; empty is None."""
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    if text[:1] in "[{":
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def read_csv(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """The columns and rows of a manifest CSV (values parsed back: numbers, lists, text).

    Raises:
        StorageError: the file cannot be read or is not a manifest (no run_id column).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise StorageError(f"{path}: cannot read the manifest ({reason or exc})") from None
    reader = csv.reader(io.StringIO(text))
    try:
        names = next(reader)
    except (StopIteration, csv.Error):
        raise StorageError(f"{path}: not a sweep manifest (empty)") from None
    if names[:1] != ["run_id"]:
        raise StorageError(f"{path}: not a sweep manifest (its first column is not run_id)")
    rows = []
    try:
        for cells in reader:
            if cells:
                rows.append({name: (cell or None) if name in TEXT_COLUMNS else _parsed(cell)
                             for name, cell in zip(names, cells)})
    except csv.Error as exc:
        raise StorageError(f"{path}: damaged manifest ({exc})") from None
    return names, rows


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not (
        isinstance(value, float) and math.isnan(value)
    )
