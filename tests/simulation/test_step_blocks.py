"""The run loops' block schedule (simulation.run.step_blocks), shared by both integrators."""

from __future__ import annotations

import pytest

from dojo_cli.simulation.run import FIRST_BLOCK, MAX_BLOCK, step_blocks


@pytest.mark.parametrize("steps", [0, 1, FIRST_BLOCK - 1, FIRST_BLOCK, 3 * FIRST_BLOCK + 5])
@pytest.mark.parametrize("adaptive", [False, True])
def test_blocks_cover_every_step_once_in_order(steps, adaptive):
    blocks = list(step_blocks(steps, adaptive))
    starts = [k for k, _ in blocks]
    assert [k + n for k, n in blocks[:-1]] == starts[1:], f"blocks {blocks} are not contiguous"
    assert sum(n for _, n in blocks) == steps, f"blocks {blocks} cover {sum(n for _, n in blocks)} of {steps} steps"
    assert all(1 <= n <= MAX_BLOCK for _, n in blocks), f"block sizes {[n for _, n in blocks]}"


def test_a_closed_loop_run_steps_one_at_a_time():
    assert list(step_blocks(3, adaptive=False)) == [(0, 1), (1, 1), (2, 1)]


def test_an_open_loop_run_starts_with_the_first_block_and_grows_when_steps_are_fast():
    blocks = list(step_blocks(10 * MAX_BLOCK, adaptive=True))
    assert blocks[0] == (0, FIRST_BLOCK)
    # nothing is done between blocks here: each takes microseconds, so the next is as large as allowed
    assert blocks[1][1] == MAX_BLOCK, f"second block {blocks[1][1]} steps"
