"""Gymnasium's MJCF models through `dojo import-mjcf`, dropped limp, against MuJoCo.

Usage:
    python benchmarks/mjcf_zoo.py [--duration 2] [--models hopper,ant,...] [--json FILE]
    python benchmarks/mjcf_zoo.py --dir path/to/dm_control/suite [--no-split-hinges]
    python benchmarks/mjcf_zoo.py --dir path/to/robosuite --recursive --isolate 300 --duration 1

--dir: every XML of that folder instead (another collection: the DeepMind Control Suite's
models are dm_control's suite/*.xml); a model that is refused is a row saying why.
--recursive: the XML files of every folder below --dir that MuJoCo itself loads as a model
with a body (a package's asset tree also holds included fragments and templates).
--isolate SECONDS: each model in a child process with that time limit and a 6 GB address-space
cap, so that one model that runs out of time or memory is a row saying so, not the end of the
run (a collection's largest models: dm_control's dog, rodent and CMU humanoid).

Per model (every XML in gymnasium/envs/mujoco/assets): the import time (read_mjcf and the
scene build, which solves the first step's initial condition), then a limp run from the
file's initial pose (qpos0, zero velocity, zero control) for --duration seconds at the
file's own timestep: steps failed, the whole-body centre-of-mass height at the end, ms per
step (CPU time of the run loop), and the same for MuJoCo (mj_step on the same file, its
own integrator and soft contacts), twice: as the file says, and with the armature set to
zero (to see what the armature does: our variational integrator models it on hinges and on
the slides of a body on the world that does not turn, not on other slides, balls and free
joints). The centre of
mass is over the bodies MuJoCo has (split-hinge links left out; they carry 1e-3 of a body).

Import options: --drop-unsupported and --split-hinges (each model's warnings are counted).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import pin_blas_threads  # noqa: E402

pin_blas_threads(sys.argv)

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def _model_paths(args) -> list[Path]:
    import gymnasium

    assets = Path(args.dir) if args.dir else Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"
    paths = sorted(assets.rglob("*.xml") if args.recursive else assets.glob("*.xml"))
    if args.recursive:  # only what MuJoCo loads as a model with a body (not fragments, templates)
        import mujoco

        def is_model(path: Path) -> bool:
            try:
                return mujoco.MjModel.from_xml_path(str(path)).nbody > 1
            except Exception:  # noqa: BLE001 - MuJoCo raises ValueError, or worse on odd files
                return False

        paths = [p for p in paths if is_model(p)]
    if args.models:
        wanted = set(args.models.split(","))
        paths = [p for p in paths if p.stem in wanted]
    return paths


def measure(path: Path, args) -> tuple[dict, str]:
    """One model's row and its printed line: import, limp drop, MuJoCo's on the same file."""
    import mujoco

    import dojo_cli as dojo
    from dojo_cli.errors import DojoError
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict
    from dojo_cli.scene.mjcf import MjcfOptions, read_mjcf

    label = str(path.relative_to(args.dir)) if args.recursive else path.stem
    row = {"model": label}
    started = time.perf_counter()
    try:
        result = read_mjcf(path, MjcfOptions(drop_unsupported=True, split_hinges=not args.no_split_hinges), path.name)
        scene = result.scene
        scene.pop("controller", None)
        mech = build_mechanism(spec_from_dict(scene, file=str(path)))
    except DojoError as exc:
        row["refused"] = exc.lines()[0]
        return row, f"{label:<26} refused: {exc.lines()[0][:110]}"
    row["import_s"] = time.perf_counter() - started
    row["warnings"] = len(result.warnings)
    try:  # other collections hold files MuJoCo itself refuses (pybullet_data's humanoid_symmetric)
        m = mujoco.MjModel.from_xml_path(str(path))
    except ValueError as exc:
        row["mujoco_refused"] = str(exc).splitlines()[0]
        return row, f"{label:<26}{row['import_s']:>9.2f}  MuJoCo refuses it: {row['mujoco_refused'][:90]}"
    ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b.name) for b in mech.bodies]
    keep = [i for i, k in enumerate(ids) if k > 0]
    masses = np.array([m.body_mass[ids[i]] for i in keep])
    steps = int(round(args.duration / mech.timestep))
    zero = np.zeros(mech.nu)
    cpu = time.process_time()
    traj = dojo.simulate(mech, steps=steps, controller=lambda *_: zero) if scene.get("integrator") != "rk4" \
        else dojo.simulate(mech, steps=steps)
    row["ms_per_step"] = 1e3 * (time.process_time() - cpu) / steps
    row["steps"] = steps
    row["failed"] = int(sum(s != "success" for s in traj.status)) if traj.status else 0
    row["com_z"] = float(masses @ traj.x[-1][keep, 2] / masses.sum()) if masses.sum() > 0 else float("nan")
    for name, armature in (("mj_com_z", True), ("mj_com_z_no_armature", False)):
        mm = mujoco.MjModel.from_xml_path(str(path))
        if not armature:
            mm.dof_armature[:] = 0.0
        d = mujoco.MjData(mm)
        cpu = time.process_time()
        for _ in range(int(round(args.duration / mm.opt.timestep))):
            mujoco.mj_step(mm, d)
        if armature:
            row["mj_ms_per_step"] = 1e3 * (time.process_time() - cpu) / int(round(args.duration / mm.opt.timestep))
        row[name] = float(masses @ d.xipos[[ids[i] for i in keep], 2] / masses.sum()) if masses.sum() > 0 else float("nan")
    kinds = sorted({j["type"] for j in scene["joints"]} & {"universal", "gimbal"})
    notes = (f"{mech.nb} bodies, {mech.nc} contacts, {row['warnings']} warnings" + (", rk4" if scene.get("integrator") == "rk4" else "")
             + "".join(f", {sum(j['type'] == k for j in scene['joints'])} {k}" for k in kinds))
    line = (f"{label:<26}{row['import_s']:>9.2f}{row['failed']:>8d}{steps:>7d}{row['com_z']:>9.4f}{row['mj_com_z']:>10.4f}"
            f"{row['mj_com_z_no_armature']:>9.4f}{row['ms_per_step']:>9.3f}{row['mj_ms_per_step']:>8.3f}  {notes}")
    return row, line


ISOLATE_MEMORY = 6 * 2**30  # bytes of address space a child may take (--isolate)


def _isolated(path: Path, args) -> tuple[dict, str]:
    """measure() in a child process with a time limit and a memory cap: a model that exceeds
    either, or kills its process, is a row saying so."""
    import resource
    import subprocess

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ISOLATE_MEMORY, ISOLATE_MEMORY))

    label = str(path.relative_to(args.dir)) if args.recursive else path.stem
    command = [sys.executable, __file__, "--one", str(path), "--duration", str(args.duration), "--dir", args.dir or "",
               "--blas-threads", args.blas_threads] + (["--recursive"] if args.recursive else []) \
        + (["--no-split-hinges"] if args.no_split_hinges else [])
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.isolate, preexec_fn=cap)
    except subprocess.TimeoutExpired:
        return {"model": label, "timeout_s": args.isolate}, f"{label:<26} did not finish in {args.isolate:g} s"
    for text in done.stdout.splitlines():
        if text.startswith("ROW "):
            row = json.loads(text[4:])
            return row, row.pop("_line")
    why = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    return {"model": label, "crashed": why}, f"{label:<26} crashed: {why[:110]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=2.0)
    parser.add_argument("--models", default="")
    parser.add_argument("--json", default="")
    parser.add_argument("--blas-threads", default="1")
    parser.add_argument("--dir", default="", help="a folder of MJCF files (default: Gymnasium's assets)")
    parser.add_argument("--recursive", action="store_true", help="every MuJoCo model in the folders below --dir")
    parser.add_argument("--isolate", type=float, default=0.0,
                        help="run each model in a child process with this many seconds and 6 GB at most")
    parser.add_argument("--one", default="", help=argparse.SUPPRESS)  # a child's single model (--isolate)
    parser.add_argument("--no-split-hinges", action="store_true",
                        help="import without --split-hinges (hinges no universal or gimbal joint represents are refused)")
    args = parser.parse_args()
    if args.one:
        row, line = measure(Path(args.one), args)
        print("ROW " + json.dumps({**row, "_line": line}), flush=True)
        return

    paths = _model_paths(args)
    rows = []
    header = (f"{'model':<26}{'import s':>9}{'failed':>8}{'steps':>7}{'com z':>9}{'mj com z':>10}{'mj a=0':>9}"
              f"{'ms/step':>9}{'mj ms':>8}  notes")
    print(header)
    for path in paths:
        row, line = _isolated(path, args) if args.isolate > 0 else measure(path, args)
        print(line, flush=True)
        rows.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
