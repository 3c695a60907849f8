"""The spec base (dojo_cli.scene.specs): fields, defaults, checks, dump, replace, copies.

The scene format's own rules are tested through the loader (test_schema_loader.py); here
is what every spec gets from the base, on small specs made for the test and on the
scene's."""

from __future__ import annotations

import copy
import enum
import sys

import pytest
from pydantic_core import SchemaValidator, ValidationError

from dojo_cli.scene import schema
from dojo_cli.scene.schema import (
    SPEC_MODELS,
    BodySpec,
    BoxShapeSpec,
    ContactSpec,
    FrameShapeSpec,
    JointSpec,
    JointType,
    SceneSource,
    SceneSpec,
    SolverSpec,
    SpecProblems,
    field_default,
)
from dojo_cli.scene.specs import REQUIRED, Field, Spec, check, ge, list_of, literal, nullable


class Color(enum.Enum):
    RED = "red"


class _Inner(Spec):
    """(abstract: a leading underscore builds no validator)"""

    size = Field({"type": "float"}, 1.0)


class InnerSpec(_Inner):
    kind = Field(literal("inner"), "inner")


class OuterSpec(Spec):
    name = Field({"type": "str"})
    count = Field(ge(0, {"type": "int"}), 0)
    values = Field(list_of({"type": "float"}), factory=list)
    inner = Field(InnerSpec.core_schema(), factory=InnerSpec, specs=(InnerSpec,))
    extra = Field(nullable({"type": "any"}), None)

    @staticmethod
    def prepare(data):
        # (raw input: an old key renamed)
        if isinstance(data, dict) and "title" in data:
            data = {("name" if k == "title" else k): v for k, v in data.items()}
        return data

    @check
    def _first(self):
        if self.name == "bad":
            raise SpecProblems([("name", "is bad")])
        return self

    @check
    def _second(self):
        if self.count == 13:
            raise SpecProblems([("count", "is unlucky")])
        return self


def _errors(data) -> list[tuple]:
    with pytest.raises(ValidationError) as info:
        OuterSpec.validate(data)
    return [(e["type"], e["loc"]) for e in info.value.errors(include_url=False)]


# ------------------------------------------------------------------ fields


def test_fields_are_collected_in_order_and_removed_from_the_class():
    assert list(OuterSpec.fields) == ["name", "count", "values", "inner", "extra"]
    assert list(InnerSpec.fields) == ["size", "kind"], "a base's fields first"
    assert not hasattr(OuterSpec, "name"), "the Field is not left as a class attribute"
    assert OuterSpec.fields["name"].required and not OuterSpec.fields["count"].required
    assert not OuterSpec.fields["values"].required, "a factory is a default"


def test_a_redefined_field_keeps_its_place():
    """As pydantic orders fields: a shape's ``type`` stays first, as _ShapeSpec declares it."""
    assert list(BoxShapeSpec.fields)[:4] == ["type", "position_offset", "orientation_offset", "color"]
    assert BoxShapeSpec.fields["type"].default == "box"


def test_validated_spec_holds_values_defaults_and_fields_set():
    spec = OuterSpec.validate({"name": "a", "values": [1, 2]})
    assert (spec.name, spec.count, spec.values, spec.extra) == ("a", 0, [1.0, 2.0], None)
    assert isinstance(spec.inner, InnerSpec) and spec.inner.size == 1.0
    assert spec.fields_set == {"name", "values"}
    assert spec.inner.fields_set == set()
    assert OuterSpec(name="a", values=[1, 2]) == spec, "keyword construction validates the same"


def test_default_lists_and_specs_are_fresh_for_each_spec():
    a, b = OuterSpec.validate({"name": "a"}), OuterSpec.validate({"name": "b"})
    a.values.append(1.0)
    assert b.values == [] and a.inner is not b.inner
    assert OuterSpec.fields["values"].get_default() == [] and OuterSpec.fields["name"].get_default() is REQUIRED


def test_unknown_missing_and_bounded_fields_are_pydantic_core_errors():
    assert _errors({"name": "a", "nmae": 1}) == [("extra_forbidden", ("nmae",))]
    assert _errors({}) == [("missing", ("name",))]
    with pytest.raises(ValidationError) as info:
        OuterSpec.validate({"name": "a", "count": -1})
    (error,) = info.value.errors(include_url=False)
    assert (error["type"], error["ctx"], error["msg"]) == ("greater_than_equal", {"ge": 0},
                                                           "Input should be greater than or equal to 0")
    assert _errors(3) == [("model_type", ())]


def test_prepare_sees_the_raw_input_and_checks_run_in_order_after_the_fields():
    assert OuterSpec.validate({"title": "t"}).name == "t"
    with pytest.raises(ValidationError) as info:
        OuterSpec.validate({"name": "bad", "count": 13})
    (error,) = info.value.errors(include_url=False)
    assert error["ctx"]["error"].problems == [("name", "is bad")], "the first check stops the second"
    with pytest.raises(ValidationError) as info:
        OuterSpec.validate({"name": "ok", "count": 13})
    assert info.value.errors(include_url=False)[0]["ctx"]["error"].problems == [("count", "is unlucky")]
    # a field's own error stops before the checks
    assert _errors({"name": "bad", "count": "x"}) == [("int_parsing", ("count",))]


def test_an_abstract_base_builds_no_validator():
    assert "validator" not in vars(_Inner) and "validator" in vars(InnerSpec)
    assert "validator" not in vars(schema._ShapeSpec)


# ------------------------------------------------------------------- dump


def test_dump_is_plain_data():
    spec = OuterSpec.validate({"name": "a", "values": [1], "extra": (Color.RED, [Color.RED])})
    assert spec.dump() == {"name": "a", "count": 0, "values": [1.0], "inner": {"size": 1.0, "kind": "inner"},
                           "extra": ["red", ["red"]]}
    joint = JointSpec.validate({"name": "j", "type": "revolute", "parent": "origin", "child": "a"})
    assert isinstance(joint.type, JointType) and joint.dump()["type"] == "revolute"
    assert SolverSpec().dump()["undercut"] == float("inf"), "infinity stays a float (YAML writes .inf)"


# ---------------------------------------------------------------- changes


def test_replace_is_a_shallow_copy_with_the_changes_counted_as_given():
    spec = OuterSpec.validate({"name": "a"})
    other = spec.replace(count=3)
    assert (other.count, spec.count) == (3, 0)
    assert other.fields_set == {"name", "count"} and spec.fields_set == {"name"}
    assert other.inner is spec.inner, "shallow, as model_copy(update=...)"
    with pytest.raises(AttributeError, match="no field 'nosuch'"):
        spec.replace(nosuch=1)


def test_assigning_a_field_counts_it_as_given_and_unknown_names_are_refused():
    spec = OuterSpec.validate({"name": "a"})
    spec.count = 5
    assert spec.count == 5 and "count" in spec.fields_set
    with pytest.raises(AttributeError, match="no field 'cuont'"):
        spec.cuont = 5


def test_copies():
    spec = OuterSpec.validate({"name": "a", "values": [1.0]})
    shallow, deep = copy.copy(spec), copy.deepcopy(spec)
    assert shallow == spec == deep
    assert shallow.values is spec.values and deep.values is not spec.values
    assert deep.inner is not spec.inner and deep.inner == spec.inner
    deep.fields_set.add("count")
    shallow.fields_set.add("extra")
    assert spec.fields_set == {"name", "values"}, "each copy has its own fields_set"


def test_equality_is_by_type_and_fields():
    a = OuterSpec.validate({"name": "a"})
    assert a == OuterSpec.validate({"name": "a", "count": 0}), "fields_set does not count"
    assert a != OuterSpec.validate({"name": "b"})
    assert InnerSpec() != BoxShapeSpec(size=[1, 1, 1]) and InnerSpec() != {"size": 1.0, "kind": "inner"}
    with pytest.raises(TypeError):
        hash(a)
    assert repr(InnerSpec()) == "InnerSpec(size=1.0, kind='inner')"


# ------------------------------------------------------------- scene specs


def test_scene_source_is_kept_beside_the_fields():
    spec = SceneSpec(name="s", timestep=0.1, bodies=[{"name": "a", "mass": 1.0}],
                     joints=[{"name": "j", "type": "floating", "parent": "origin", "child": "a"}])
    assert spec.source == SceneSource() and spec.base_dir is None
    located = spec.with_source(SceneSource("s.yaml", None, {"bodies.0.mass": 4}))
    assert located.problem("bodies.0.mass", "m").line == 4 and spec.source == SceneSource()
    assert located == spec, "where a scene came from does not count"
    assert located.bodies[0] is not spec.bodies[0], "with_source copies deeply"
    assert copy.copy(located).source is located.source and located.replace(seed=2).source is located.source


def test_shapes_from_instances_and_contact_fields_set():
    spec = BodySpec(name="a", mass=1.0, shape=BoxShapeSpec(size=[1, 2, 3]))
    assert spec.shape.size == [1.0, 2.0, 3.0] and spec.shape.fields_set == {"size"}
    assert BodySpec(name="a", mass=1.0).shape == FrameShapeSpec()
    contact = ContactSpec.validate({"name": "c", "body": "a", "radius": 0.1})
    assert contact.fields_set == {"name", "body", "radius"}


def test_field_default_walks_the_specs():
    assert field_default({}, ["solver", "rtol"]) == 1e-6
    assert field_default({}, ["solver"]) == SolverSpec().dump()
    assert field_default({}, ["gravity"]) == [0.0, 0.0, -9.81]
    assert field_default({"bodies": [{"name": "a"}]}, ["bodies", "0", "shape"]) == FrameShapeSpec().dump()
    assert field_default({"bodies": [{"shape": {"type": "box"}}]}, ["bodies", "0", "shape", "color"]) is None
    # a joint's (or a controller's) own type is a field, not a union tag: its defaults are found
    joint = {"joints": [{"name": "j", "type": "revolute"}]}
    assert field_default(joint, ["joints", "0", "orientation_offset"]) == [1.0, 0.0, 0.0, 0.0]
    assert field_default({"controller": {"type": "pd"}}, ["controller", "after_end"]) == "zero"
    with pytest.raises(LookupError, match="no default"):
        field_default({}, ["timestep"])
    with pytest.raises(LookupError, match="no field"):
        field_default({}, ["nosuch"])


def test_spec_models_list_every_concrete_spec():
    concrete = {value for value in vars(schema).values()
                if isinstance(value, type) and issubclass(value, Spec) and value is not Spec
                and not value.__name__.startswith("_")}
    assert set(SPEC_MODELS) == concrete


def test_building_the_validators_runs_no_python_code():
    """pydantic-core builds a validator from the schema without calling back into Python,
    so a Ctrl-C (SIGINT, SIGTERM) cannot be raised inside the build and come out as a
    SchemaError naming a field, as it could inside pydantic's schema generation (issue 11;
    dojo_cli.cli.signals): it waits for the next Python line of the import."""
    calls = []
    scene_schema = SceneSpec.core_schema()

    def profile(frame, event, arg):
        if event == "call":
            calls.append(frame.f_code.co_qualname)

    sys.setprofile(profile)
    try:
        SchemaValidator(scene_schema)
    finally:
        sys.setprofile(None)
    assert calls == []
