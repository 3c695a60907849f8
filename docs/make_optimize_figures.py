"""Draws the figures of docs/optimize.md: each example task solved by ``dojo optimize`` (its
convergence, ``--plot``) and its optimal run drawn by ``dojo plot``.

Usage:
    python docs/make_optimize_figures.py [NAME ...]     # default: every example below

Writes docs/images/optimize/NAME_convergence.png and NAME_run.png, and prints each solve's
status, iterations and seconds (as the file stores them: wall time, on whatever machine
runs it). The runs go to a temporary folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from dojo_cli.io.storage import read_storage

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images" / "optimize"
# example -> the quantities `dojo plot` draws of its run
EXAMPLES = {
    "cartpole_swingup": ["-q", "minimal", "-q", "inputs"],
    "block_push": ["-q", "position", "-q", "inputs"],
    "hopper_hop": ["-q", "position", "-q", "distance", "-q", "inputs", "--coordinate", "leg",
                   "--coordinate", "floating_base:r1"],
    "quadruped_trot": ["-q", "position", "--body", "trunk", "-q", "distance", "-q", "inputs"],
    "humanoid_step": ["-q", "position", "--body", "pelvis", "--body", "right_ankle_roll_link", "-q", "distance"],
}


def main() -> None:
    names = sys.argv[1:] or list(EXAMPLES)
    dojo = [sys.executable, "-m", "dojo_cli.cli.app"] if not Path(sys.executable).with_name("dojo").exists() \
        else [str(Path(sys.executable).with_name("dojo"))]
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            run = Path(tmp) / f"{name}.h5"
            subprocess.run([*dojo, "optimize", str(ROOT / "configs" / "optimize" / f"{name}.yaml"), "-o", str(run),
                            "--plot", str(IMAGES / f"{name}_convergence.png")], check=False, capture_output=True)
            subprocess.run([*dojo, "plot", str(run), *EXAMPLES[name], "--png", str(IMAGES / f"{name}_run.png")],
                           check=True, capture_output=True)
            info = read_storage(run).attrs["optimize"]
            info = json.loads(info) if isinstance(info, str) else info
            print(f"{name}: {info['status']}, {info['iterations']} iterations, {info['seconds']:.2f} s")


if __name__ == "__main__":
    main()
