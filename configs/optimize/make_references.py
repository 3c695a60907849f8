"""Writes the reference gaits the example tasks track (``costs.reference.file``).

Usage:
    python configs/optimize/make_references.py

quadruped_trot.csv (quadruped_trot.yaml): the A1 (built-in scene ``quadruped`` at the
task's timestep 0.05 s) trotting from standing to standing, 5 half cycles of 8 steps,
strides of 0.25 m with the feet lifted 4 cm: the base 0.5 m ahead after 2 s
(dojo_cli.optimize.gait.trot). 
humanoid_step.csv (humanoid_step.yaml): the G1 (built-in scene ``humanoid`` at 0.05 s, its
knees bent 0.6 rad and its pelvis lowered to keep the soles on the ground: the task's set:)
takes one step of 0.15 m with its right foot, lifted 4 cm: the pelvis over the left sole
and 3 cm lower (0.5 s), the swing (0.5 s), the pelvis forward to midway between the feet
(0.6 s), standing (0.4 s) (dojo_cli.optimize.gait.step).

tests/optimize/test_gait.py checks the files are what this writes.
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


# The humanoid crouched: hip pitch -a, knee 2a, ankle pitch -a keeps the soles level; the
# pelvis height puts them on the ground (0.0284 m below the scene's straight-legged 0.7919 m,
# from the core's kinematics: test_gait checks the soles touch). A bent knee also keeps the
# legs' inverse kinematics away from the straight knee's singularity.
CROUCH = 0.3
HUMANOID = {"scene": "humanoid", "overrides": {
    "timestep": 0.05, "controller": {"type": "none"},
    "joints.floating_base.initial.position": [0.0, 0.0, 0.7634313919, 0.0, 0.0, 0.0],
    **{f"joints.{side}_{joint}.initial.position": [value] for side in ("left", "right")
       for joint, value in (("hip_pitch_joint", -CROUCH), ("knee_joint", 2 * CROUCH), ("ankle_pitch_joint", -CROUCH))},
}}
STEP = {"stance": [f"left_ankle_roll_link_{i}" for i in range(4)], "swing": [f"right_ankle_roll_link_{i}" for i in range(4)],
        "length": 0.15, "lift": 0.04, "lower": 0.03, "phases": (10, 10, 12, 8)}


def humanoid_step():
    """The humanoid's reference (a dojo_cli.optimize.gait.Gait)."""
    import dojo_cli as dojo
    from dojo_cli.optimize.gait import step

    mech = dojo.load_scene(HUMANOID["scene"], overrides=HUMANOID["overrides"])
    return step(mech, **STEP)


def main() -> None:
    quadruped_trot().write_csv(HERE / "quadruped_trot.csv")
    humanoid_step().write_csv(HERE / "humanoid_step.csv")


if __name__ == "__main__":
    main()
