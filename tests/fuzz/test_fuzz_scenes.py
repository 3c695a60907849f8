"""Family 1: mutated built-in scenes through `dojo check` and (a subset) `dojo simulate`."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.conftest import SHARDS, family_settings
from tests.fuzz.strategies import SceneCase, scene_cases

FAMILY = "scenes"


@pytest.mark.long(8)
@pytest.mark.parametrize("shard", range(SHARDS))
def test_scene_mutations(fuzz, request, shard):
    test = request.node.nodeid

    @family_settings(FAMILY, shard)
    @given(case=scene_cases(), simulate=st.integers(0, 9))
    def one(case: SceneCase, simulate: int):
        d = fuzz.case_dir()
        (d / case.filename).write_bytes(case.text)
        extra = {"base": case.base, "ops": [list(map(str, op))[:3] for op in case.ops]}
        res = fuzz.run(test, FAMILY, ["check", case.filename], d, inputs=[case.filename], extra=extra)
        # A scene that passes check is simulated 7 times in 10, one that fails it 1 in 10
        # (the same loader, reached through simulate's own arguments).
        if simulate < (7 if res.exitcode == 0 else 1):
            fuzz.run(test, FAMILY, ["simulate", case.filename, "--steps", "5", "-q", "-o", "out.h5"], d,
                     inputs=[case.filename], outputs=["out.h5"], expect_written="out.h5", extra=extra)
        fuzz.done(d)

    one()
    fuzz.assert_clean(test)
