"""Applying the storage damage that strategies.damage_ops draws, to a copy of a real run."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import h5py
import numpy as np

from tests.fuzz.strategies import Layout

BYTE_OPS = ("truncate", "overwrite", "zero", "flip")


def layout_of(path: Path) -> Layout:
    datasets, groups, attrs = [], [], []

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            datasets.append(name)
        else:
            groups.append(name)
        attrs.extend((name, a) for a in obj.attrs)

    with h5py.File(path, "r") as f:
        attrs.extend(("/", a) for a in f.attrs)
        f.visititems(visit)
    return Layout(tuple(sorted(datasets)), tuple(sorted(groups)), tuple(sorted(attrs)), path.stat().st_size)


def _attr(value):
    kind, v = value
    if kind == "int":
        return np.int64(v)
    if kind == "float":
        return np.float64(v)
    if kind == "str":
        return v  # h5py stores str as variable-length UTF-8
    if kind == "bytes":
        return np.void(v) if b"\x00" in v else np.bytes_(v)
    if kind == "floats":
        return np.asarray(v, dtype=float)
    if kind == "strs":
        return np.asarray(v, dtype=h5py.string_dtype())
    if kind == "bool":
        return np.bool_(v)
    raise ValueError(kind)


MAX_ROWS_READ = 100_000


def _replace(f: h5py.File, name: str, how: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ds = f[name]
    # a dataset an earlier op made huge (huge_shape: 10^9 rows of fill value) is damaged
    # further from its first rows: reading it whole took 60 GB in the test process
    old = ds[:MAX_ROWS_READ] if isinstance(ds, h5py.Dataset) and ds.shape and ds.shape[0] > MAX_ROWS_READ else ds[()]
    old = np.asarray(old)
    shape = old.shape
    del f[name]
    floaty = old.astype(float) if old.dtype.kind in "fiub" else np.zeros(shape)
    if how in ("nan", "inf", "huge", "negative", "zero"):
        new = floaty.copy()
        if new.size:
            fill = {"nan": np.nan, "inf": np.inf, "huge": 1e308, "negative": -1.0, "zero": 0.0}[how]
            mask = rng.random(new.shape) < rng.choice([0.05, 0.5, 1.0])
            new[mask] = fill
        f.create_dataset(name, data=new)
    elif how == "short":
        f.create_dataset(name, data=floaty[: max(0, shape[0] - 1 - seed % 5)] if shape else floaty)
    elif how == "long":
        reps = (2,) + (1,) * (len(shape) - 1) if shape else (2,)
        f.create_dataset(name, data=np.tile(floaty, reps))
    elif how == "empty":
        f.create_dataset(name, shape=(0,) + shape[1:], dtype=float)
    elif how == "scalar":
        f.create_dataset(name, data=np.float64(1.0))
    elif how == "flatten":
        f.create_dataset(name, data=floaty.reshape(-1))
    elif how == "extra_axis":
        f.create_dataset(name, data=floaty[..., None])
    elif how == "transpose":
        f.create_dataset(name, data=floaty.T)
    elif how == "int":
        f.create_dataset(name, data=np.nan_to_num(floaty).astype(np.int64))
    elif how == "bytes":
        f.create_dataset(name, data=np.full(shape, b"x\xff", dtype="S2"))
    elif how == "vlen_str":
        f.create_dataset(name, data=np.full(shape, "ünï", dtype=object), dtype=h5py.string_dtype())
    elif how == "bool":
        f.create_dataset(name, data=floaty > 0)
    elif how == "complex":
        f.create_dataset(name, data=floaty + 1j)
    elif how == "compound":
        f.create_dataset(name, data=np.zeros(shape, dtype=[("a", "f8"), ("b", "i4")]))
    elif how == "float16":
        with np.errstate(over="ignore"):  # large values becoming inf is the damage wanted
            f.create_dataset(name, data=floaty.astype(np.float16))
    elif how == "group":
        f.create_group(name)
    elif how == "softlink":
        f[name] = h5py.SoftLink("/no/such/dataset")
    elif how == "extlink":
        f[name] = h5py.ExternalLink("missing_other.h5", "/x")
    elif how == "huge_shape":
        # a tiny file claiming 10^9 states: a reader that loads it whole needs 10s of GB
        f.create_dataset(name, shape=(10**9,) + shape[1:], maxshape=(None,) + shape[1:], dtype=float,
                         chunks=(1024,) + shape[1:])
    elif how == "delete":
        pass
    else:
        raise ValueError(how)


def _foreign(path: Path, kind: str, scene_text: str) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("this is not an HDF5 file\n")
    elif kind == "random":
        path.write_bytes(np.random.default_rng(0).bytes(4096))
    elif kind == "png":
        path.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    elif kind == "yaml":
        path.write_text(scene_text)
    elif kind == "json":
        path.write_text(json.dumps({"maximal": [0.0] * 13}))
    elif kind == "hdf5_empty":
        h5py.File(path, "w").close()
    elif kind == "hdf5_other":
        with h5py.File(path, "w") as f:
            f["x"] = np.arange(10.0)
            f.attrs["format"] = "something-else"
    elif kind == "hdf5_array":
        with h5py.File(path, "w") as f:
            f.attrs["format"] = "dojo-storage"
            f.attrs["format_version"] = 1
            f["x"] = np.zeros((3, 1, 3))
    elif kind == "directory":
        path.mkdir()
    elif kind == "symlink_loop":
        os.symlink(path.name, path)
    elif kind == "dev_null":
        os.symlink(os.devnull, path)
    else:
        raise ValueError(kind)


def apply_damage(path: Path, ops: list, scene_text: str = "") -> list[str]:
    """Apply ``ops`` to ``path`` (HDF5 edits first, then byte edits); the ones that applied."""
    done = []
    h5ops = [op for op in ops if op[0] not in BYTE_OPS and op[0] != "foreign"]
    byteops = [op for op in ops if op[0] in BYTE_OPS]
    if h5ops:
        with h5py.File(path, "r+") as f:
            for op in h5ops:
                try:
                    _apply_h5(f, op)
                    done.append(repr(op)[:200])
                except (KeyError, ValueError, TypeError, OverflowError, RuntimeError, OSError) as exc:
                    done.append(f"skipped {op[0]}: {type(exc).__name__}")
    for op in byteops:
        data = bytearray(path.read_bytes())
        if op[0] == "truncate":
            data = data[: op[1]]
        elif op[0] == "overwrite":
            at = min(op[1], len(data))
            data[at: at + len(op[2])] = op[2]
        elif op[0] == "zero":
            at = min(op[1], len(data))
            data[at: at + op[2]] = bytes(len(data[at: at + op[2]]))
        elif op[0] == "flip" and data:
            at = min(op[1], len(data) - 1)
            data[at] ^= 1 << op[2]
        path.write_bytes(bytes(data))
        done.append(repr(op)[:200])
    for op in ops:
        if op[0] == "foreign":
            _foreign(path, op[1], scene_text)
            done.append(repr(op))
    return done


def _apply_h5(f: h5py.File, op) -> None:
    kind = op[0]
    if kind == "dataset":
        _, name, how, seed = op
        if name not in f or not isinstance(f[name], h5py.Dataset):
            raise KeyError(name)
        _replace(f, name, how, seed)
    elif kind == "attr":
        _, (obj, attr), value = op
        f[obj].attrs[attr] = _attr(value)
    elif kind == "attr_delete":
        _, (obj, attr) = op
        del f[obj].attrs[attr]
    elif kind == "delete_group":
        if op[1] in ("/", ""):
            raise KeyError(op[1])
        del f[op[1]]
    elif kind == "add":
        _, target, what = op
        group = f[target] if isinstance(f.get(target), h5py.Group) else f
        if what == "dataset":
            group.create_dataset("fuzz_extra", data=np.arange(3.0))
        elif what == "group":
            group.create_group("fuzz_group")
        else:
            group["fuzz_loop"] = h5py.SoftLink(group.name)
    else:
        raise ValueError(kind)
