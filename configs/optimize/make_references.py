"""Writes the reference gaits the example tasks track (``costs.reference.file``).

Usage:
    python configs/optimize/make_references.py

quadruped_trot.csv (quadruped_trot.yaml): the A1 (built-in scene ``quadruped`` at the
task's timestep 0.05 s) trotting from standing to standing, 5 half cycles of 8 steps,
strides of 0.25 m with the feet lifted 4 cm: the base 0.5 m ahead after 2 s
(dojo_cli.optimize.gait.trot). tests/optimize/test_gait.py checks the file is what this
writes.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
# The task's scene (its set: without the controller it refuses), and the gait's numbers.
QUADRUPED = {"scene": "quadruped", "overrides": {"timestep": 0.05, "controller": {"type": "none"}}}
TROT = {"pairs": [("FR_foot", "RL_foot"), ("FL_foot", "RR_foot")], "half_cycles": 5, "steps": 8, "stride": 0.25,
        "lift": 0.04}


def quadruped_trot():
    """The quadruped's reference (a dojo_cli.optimize.gait.Gait)."""
    import dojo_cli as dojo
    from dojo_cli.optimize.gait import trot

    mech = dojo.load_scene(QUADRUPED["scene"], overrides=QUADRUPED["overrides"])
    return trot(mech, **TROT)


def main() -> None:
    quadruped_trot().write_csv(HERE / "quadruped_trot.csv")


if __name__ == "__main__":
    main()
