"""The base of the scene specs: validated by pydantic-core, without pydantic.

A spec class lists its fields as ``Field`` class attributes, each holding the field's
pydantic-core schema (a plain dict, docs/formats.md's types written once in
schema/field_types.py) and its default. From them the class builds one
``pydantic_core.SchemaValidator`` when it is defined: the ``model`` schema pydantic would
generate from the same annotations, so the validation, its errors (types, messages,
locations) and its stages are pydantic's own, while importing the scene schema costs a few
milliseconds instead of the ~90 ms pydantic spends generating schemas from annotations
(issue 15, the shell-loop start-up).

Validation is staged as pydantic stages it: a spec's ``prepare`` function sees the raw
mapping (inside the model schema), then each field's schema runs, then the spec's
``after`` methods, in the order they are defined (each wraps the previous), and a spec
holding other specs runs theirs as part of its fields.

pydantic-core fills an instance's ``__dict__`` (the field values, in field order) and the
slots ``__pydantic_fields_set__`` (the fields the input gave), ``__pydantic_extra__`` and
``__pydantic_private__``; ``Spec`` reads them back as ``fields_set`` and offers what the
scene code used of pydantic's BaseModel under plainer names: ``dump()`` for
``model_dump(mode="json")``, ``replace(**changes)`` for ``model_copy(update=...)``,
``fields`` for ``model_fields``; ``copy.copy`` and ``copy.deepcopy`` copy as pydantic did.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, ClassVar

from pydantic_core import PydanticKnownError, SchemaValidator

REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()
"""The default of a field that has none (the input must give it)."""


# ------------------------------------------------------------- schema pieces
# Plain dicts in pydantic-core's schema language (pydantic_core.core_schema documents each).


def after(function: Callable[[Any], Any], schema: dict) -> dict:
    """``function`` applied to what ``schema`` validated (pydantic's AfterValidator)."""
    return {"type": "function-after", "function": {"type": "no-info", "function": function}, "schema": schema}


def before(function: Callable[[Any], Any], schema: dict) -> dict:
    """``function`` applied to the input before ``schema`` validates it (pydantic's BeforeValidator)."""
    return {"type": "function-before", "function": {"type": "no-info", "function": function}, "schema": schema}


def plain(function: Callable[[Any], Any]) -> dict:
    """``function`` alone validates the input."""
    return {"type": "function-plain", "function": {"type": "no-info", "function": function}}


def list_of(items: dict, **constraints: int) -> dict:
    """A list of ``items`` (``min_length``, ``max_length``)."""
    return {"type": "list", "items_schema": items, **constraints}


def dict_of(values: dict) -> dict:
    """A mapping of strings to ``values``."""
    return {"type": "dict", "keys_schema": {"type": "str"}, "values_schema": values}


def nullable(schema: dict) -> dict:
    """``schema`` or None."""
    return {"type": "nullable", "schema": schema}


def literal(*values: Any) -> dict:
    """One of ``values``."""
    return {"type": "literal", "expected": list(values)}


def tagged_union(discriminator: str | Callable[[Any], str], choices: dict[str, dict], **options: Any) -> dict:
    """One of ``choices``, picked by a key of the input or by a function of it; the
    tag is inserted into error locations (schema.UNION_TAGS)."""
    return {"type": "tagged-union", "choices": choices, "discriminator": discriminator, **options}


# Numeric bounds, as pydantic applies ``Field(gt=...)`` after other validators: the same
# error types and contexts (the loader formats ``greater_than`` with ctx["gt"], ...).


def _bounded(kind: str, key: str, bound: float, holds: Callable[[Any], bool]) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not holds(value):
            raise PydanticKnownError(kind, {key: bound})
        return value

    check.__name__ = f"{key}_{bound}"
    return check


def gt(bound: float, schema: dict) -> dict:
    return after(_bounded("greater_than", "gt", bound, lambda x: x > bound), schema)


def ge(bound: float, schema: dict) -> dict:
    return after(_bounded("greater_than_equal", "ge", bound, lambda x: x >= bound), schema)


def lt(bound: float, schema: dict) -> dict:
    return after(_bounded("less_than", "lt", bound, lambda x: x < bound), schema)


def le(bound: float, schema: dict) -> dict:
    return after(_bounded("less_than_equal", "le", bound, lambda x: x <= bound), schema)


# ------------------------------------------------------------------- fields


class Field:
    """One field of a spec.

    Attributes:
        schema: the pydantic-core schema of its value.
        default: its default (REQUIRED: none), copied for each spec that leaves it out.
        factory: makes its default instead (a fresh list, a spec).
        specs: the spec classes its value may hold (``field_default`` walks them).
    """

    __slots__ = ("schema", "default", "factory", "specs")

    def __init__(self, schema: dict, default: Any = REQUIRED, *, factory: Callable[[], Any] | None = None,
                 specs: tuple[type[Spec], ...] = ()):
        self.schema = schema
        self.default = default
        self.factory = factory
        self.specs = specs

    @property
    def required(self) -> bool:
        return self.default is REQUIRED and self.factory is None

    def get_default(self) -> Any:
        """A fresh default value, or REQUIRED when the field has none."""
        if self.factory is not None:
            return self.factory()
        return self.default if self.default is REQUIRED else copy.deepcopy(self.default)

    def core_schema(self) -> dict:
        """The ``model-field`` schema: the value's schema, with the default if there is one."""
        schema = self.schema
        if self.factory is not None:
            schema = {"type": "default", "schema": schema, "default_factory": self.factory}
        elif self.default is not REQUIRED:
            schema = {"type": "default", "schema": schema, "default": self.default}
        return {"type": "model-field", "schema": schema}


def check(method: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Mark a spec method as a consistency check, run on the validated spec (after its
    fields, before the enclosing spec's checks); it returns the spec or raises."""
    method.__spec_check__ = True
    return method


# -------------------------------------------------------------------- specs


class Spec:
    """Base of the scene specs: fields from ``Field`` attributes, unknown keys refused.

    Class attributes set by subclasses:
        prepare: a function of the raw input (a mapping, or anything) run before the
            fields are validated, returning the input to validate (None: none).
    Set for each subclass:
        fields: field name -> Field, in order (a subclass's fields after its bases',
            a redefined field where the base had it).
        validator: the class's SchemaValidator.
    """

    __slots__ = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")

    fields: ClassVar[dict[str, Field]] = {}
    prepare: ClassVar[Callable[[Any], Any] | None] = None
    validator: ClassVar[SchemaValidator]
    _schema: ClassVar[dict]

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        own = {name: value for name, value in vars(cls).items() if isinstance(value, Field)}
        for name in own:
            delattr(cls, name)
        cls.fields = {**cls.fields, **own}
        if cls.__name__.startswith("_"):
            return  # an abstract base (its subclasses build the validators)
        checks = [value for klass in reversed(cls.__mro__) for value in vars(klass).values()
                  if getattr(value, "__spec_check__", False)]
        config = {"extra_fields_behavior": "forbid", "title": cls.__name__}
        inner: dict = {"type": "model-fields", "fields": {name: field.core_schema() for name, field in cls.fields.items()},
                       "model_name": cls.__name__, "computed_fields": []}
        if cls.prepare is not None:
            inner = before(cls.prepare, inner)
        schema: dict = {"type": "model", "cls": cls, "schema": inner, "custom_init": False, "root_model": False,
                        "config": config}
        for method in checks:
            schema = after(method, schema)
        cls._schema = schema
        cls.validator = SchemaValidator(schema, config)

    @classmethod
    def core_schema(cls) -> dict:
        """The class's pydantic-core schema (for a field holding such specs)."""
        return cls._schema

    @classmethod
    def validate(cls, data: Any):
        """A spec validated from plain data.

        Raises:
            pydantic_core.ValidationError: the data is not a valid spec.
        """
        return cls.validator.validate_python(data)

    def __init__(self, **data: Any):
        """A spec validated from keyword arguments (pydantic_core.ValidationError if invalid)."""
        self.validator.validate_python(data, self_instance=self)

    # -------------------------------------------------------------- reading

    @property
    def fields_set(self) -> set[str]:
        """The fields the input gave (or ``replace`` or an assignment set)."""
        return self.__pydantic_fields_set__

    def dump(self) -> dict[str, Any]:
        """The spec as plain data (nested specs as dicts, enums as their values): what
        YAML can write and the loader reads back to an equal spec."""
        return {name: _plain(value) for name, value in self.__dict__.items()}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Spec):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"

    # -------------------------------------------------------------- changing

    def __setattr__(self, name: str, value: Any) -> None:
        """Set a field (not validated: the caller's value must be valid), which counts as given."""
        if name not in self.fields:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        self.__dict__[name] = value
        self.__pydantic_fields_set__.add(name)

    def replace(self, **changes: Any):
        """A shallow copy with some fields changed (not validated), which count as given."""
        unknown = sorted(set(changes) - set(self.fields))
        if unknown:
            raise AttributeError(f"{type(self).__name__} has no field {unknown[0]!r}")
        spec = copy.copy(self)
        spec.__dict__.update(changes)
        spec.__pydantic_fields_set__.update(changes)
        return spec

    def __copy__(self):
        spec = type(self).__new__(type(self))
        _set(spec, "__dict__", dict(self.__dict__))
        _set(spec, "__pydantic_extra__", copy.copy(self.__pydantic_extra__))
        _set(spec, "__pydantic_fields_set__", set(self.__pydantic_fields_set__))
        _set(spec, "__pydantic_private__", copy.copy(self.__pydantic_private__))
        return spec

    def __deepcopy__(self, memo: dict | None = None):
        spec = type(self).__new__(type(self))
        _set(spec, "__dict__", copy.deepcopy(self.__dict__, memo))
        _set(spec, "__pydantic_extra__", copy.deepcopy(self.__pydantic_extra__, memo))
        _set(spec, "__pydantic_fields_set__", set(self.__pydantic_fields_set__))
        _set(spec, "__pydantic_private__", copy.deepcopy(self.__pydantic_private__, memo))
        return spec


_set = object.__setattr__


def _plain(value: Any) -> Any:
    """A field value as plain data (``Spec.dump``)."""
    if isinstance(value, Spec):
        return value.dump()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value
