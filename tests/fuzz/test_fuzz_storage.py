"""Family 3: damaged, truncated, tampered and foreign storage files through every reader."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.conftest import SHARDS, family_settings
from tests.fuzz.damage import apply_damage, layout_of
from tests.fuzz.strategies import builtin_text, damage_ops, reader_argv

FAMILY = "storage"


@pytest.mark.long(15)
@pytest.mark.parametrize("shard", range(SHARDS))
def test_damaged_storage(fuzz, base_runs, request, shard):
    test = request.node.nodeid
    layouts = {name: layout_of(path) for name, path in base_runs.items()}

    @family_settings(FAMILY, shard)
    @given(data=st.data())
    def one(data):
        base = data.draw(st.sampled_from(sorted(base_runs)), label="base")
        ops = data.draw(damage_ops(layouts[base]), label="damage")
        reader = data.draw(reader_argv(base), label="reader")
        d = fuzz.case_dir()
        run = d / "run.h5"
        shutil.copyfile(base_runs[base], run)
        applied = apply_damage(run, ops, builtin_text(base))
        argv = [a if a != "RUN" else "run.h5" for a in reader]
        fuzz.run(test, FAMILY, argv, d, inputs=["run.h5"], extra={"base": base, "ops": applied})
        fuzz.done(d)

    one()
    fuzz.assert_clean(test)
