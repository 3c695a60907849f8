"""Family 2: `--set PATH=VALUE` with real and wrong paths and hostile values."""

from __future__ import annotations

import pytest
from hypothesis import given

from tests.fuzz.conftest import SHARDS, family_settings
from tests.fuzz.strategies import SetCase, set_cases

FAMILY = "set"


@pytest.mark.long
@pytest.mark.parametrize("shard", range(SHARDS))
def test_set_values(fuzz, request, shard):
    test = request.node.nodeid

    @family_settings(FAMILY, shard)
    @given(case=set_cases())
    def one(case: SetCase):
        d = fuzz.case_dir()
        sets = [a for s in case.sets for a in ("--set", s)]
        if case.command == "simulate":
            argv = ["simulate", case.scene, *sets, "-q", "-o", "out.h5", *case.extra]
            if not any(a in ("--steps", "--duration") for a in case.extra):
                argv += ["--steps", "5"]
            fuzz.run(test, FAMILY, argv, d, outputs=["out.h5"], expect_written="out.h5", extra={"base": case.scene})
        else:
            fuzz.run(test, FAMILY, [case.command, case.scene, *sets], d, extra={"base": case.scene})
        fuzz.done(d)

    one()
    fuzz.assert_clean(test)
