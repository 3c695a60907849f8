"""Family 4: mutated URDFs through `dojo import-urdf` (and the imported scene through check)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.conftest import SHARDS, family_settings
from tests.fuzz.strategies import UrdfCase, urdf_cases

FAMILY = "urdf"


@pytest.mark.long
@pytest.mark.parametrize("shard", range(SHARDS))
def test_urdf_mutations(fuzz, request, shard):
    test = request.node.nodeid

    @family_settings(FAMILY, shard)
    @given(case=urdf_cases(), then=st.integers(0, 9))
    def one(case: UrdfCase, then: int):
        d = fuzz.case_dir()
        (d / "robot.urdf").write_bytes(case.text)
        extra = {"base": case.base, "ops": [list(map(str, op))[:3] for op in case.ops]}
        res = fuzz.run(test, FAMILY, ["import-urdf", "robot.urdf", "-o", "out.yaml", *case.options], d,
                       inputs=["robot.urdf"], expect_written="out.yaml", extra=extra)
        if res.exitcode == 0 and (d / "out.yaml").exists():
            # what import-urdf wrote is a scene: it must load (or be refused) cleanly too
            if then < 5:
                fuzz.run(test, FAMILY, ["check", "out.yaml"], d, inputs=["robot.urdf", "out.yaml"], extra=extra)
            elif then < 8:
                fuzz.run(test, FAMILY, ["simulate", "out.yaml", "--steps", "3", "-q", "-o", "out.h5"], d,
                         inputs=["robot.urdf", "out.yaml"], outputs=["out.h5"], expect_written="out.h5",
                         extra=extra)
        fuzz.done(d)

    one()
    fuzz.assert_clean(test)
