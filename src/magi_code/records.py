"""Records: the subset of `dataclasses` this project uses, made cheaply.

The house rule (tests/test_record_style.py enforces it):
1. In magi_code a record (a class that is its fields) is a `@record`: `@record` frozen,
   `@record(frozen=False)` mutable; `field(default_factory=..., repr=False)` (a field holding
   a secret is `repr=False`); `replace`, `asdict`. `dataclasses` is used nowhere in src.
2. melchior stands alone (it imports nothing of magi_code; `melchior tool` starts in a few
   ms): its records are plain classes with `__slots__`.
3. A `NamedTuple` only where the value is used as a tuple (unpacked, indexed, compared with
   a tuple, built as one); otherwise a `@record`.
4. A hand-written class in magi_code with `__slots__` is one with behaviour (a state machine,
   a reader), never a record in disguise.

Why: the serve path to the first reply defines about sixty of the project's own record
classes. A frozen dataclass costs about 0.5 ms to create (dataclasses compiles one code
string per generated method and calls `inspect.signature` for its `__doc__`): 62 of them took
about 35 ms of the path. A record class is made with one `exec` (its `__init__`; the other
methods are shared functions or closures) in 0.06 to 0.1 ms (62 of them: about 6 ms), and this
module imports neither `dataclasses`, `inspect` nor `typing` (so the modules on the way to the
`initialize` result may declare records too). That `exec` waits for the class's first
instance: the many classes a process defines but never makes (errors, rare events) cost none.
A frozen record is built in about 0.55x the time of a frozen dataclass (a mutable one as
fast); its `__eq__` and `__hash__` are about 100 ns slower, its `__repr__` about 2x. It is
declared with `typing.dataclass_transform` (for type checkers; at run time a stand-in), so
they read it as a dataclass.

    @record                      # frozen
    class Point:
        x: int
        y: int = 0
        tags: list[str] = field(default_factory=list)
        secret: str = field(default="", repr=False)
        _: KW_ONLY               # the fields after it are keyword-only
        label: str = ""

    @record(frozen=False)        # mutable
    class Counter: ...

What a record class gets, exactly:
- Fields: every name annotated in the class body, in order, except `ClassVar[...]` ones and
  the `_: KW_ONLY` marker; annotations may be strings (`from __future__ import annotations`).
  A field's default is its class attribute, or `field(default=...)`, or
  `field(default_factory=...)` (called once per instance that is not given the field). A
  default of an unhashable type (a list, dict, set) is refused with ValueError, as by
  dataclasses: use a factory. A field without a default may not follow one with a default,
  keyword-only fields excepted (TypeError).
- Inheritance: a record may subclass records of its own kind (frozen or mutable, else
  TypeError); their fields come first, in their order, and a field declared again keeps its
  place and takes the new default.
- `__init__(self, <fields>, *, <keyword-only fields>)` (compiled on the first instance) sets
  every field in the instance's
  `__dict__` (so `vars(record)` is its fields), then calls `self.__post_init__()` if the class
  has one. A frozen record's `__post_init__` sets fields with `object.__setattr__`.
- `__repr__`: `QualName(a=1, b='x')`, without the fields marked `repr=False`; safe on cycles.
- `__eq__`: True when the other object is of exactly the same class and the tuples of field
  values are equal; NotImplemented for any other class.
- `__hash__`: a frozen record hashes the tuple of its field values; a mutable one is
  unhashable (`__hash__ = None`), as a dataclass with `eq=True`.
- Frozen: `__setattr__` and `__delattr__` raise `FrozenRecordError` (an AttributeError) for
  every name, fields or not.
- A method the class body defines itself (`__init__`, `__repr__`, `__eq__`, `__hash__`) is
  kept, not generated (a body that defines `__eq__` alone is unhashable, as Python makes it).
- Copying and pickling work as for any plain object (the state is the instance `__dict__`).
Left out, as unused here: ordering, slots, `__match_args__`, InitVar, per-field `init`,
`compare` or `kw_only`, and a generated `__doc__`.

Helpers: `replace(record, **changes)` (a new record of the same class), `field_names(cls)`,
`asdict(record)` (the fields as a new dict, one level deep: values are not copied) and
`is_record(value)` (an instance of a record class).
"""

from __future__ import annotations

import sys
from operator import attrgetter
from reprlib import recursive_repr

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from collections.abc import Callable

    # Type checkers know the dataclasses marker by its full name; it must be this one.
    from dataclasses import KW_ONLY as KW_ONLY
    from typing import Any, TypeVar, dataclass_transform, overload

    T = TypeVar("T")
    RecordT = TypeVar("RecordT")
else:

    class KW_ONLY:
        """The marker annotation (`_: KW_ONLY`) after which a record's fields are
        keyword-only."""

    def dataclass_transform(**parameters):  # what `typing.dataclass_transform` does at run time
        def transform(function):
            function.__dataclass_transform__ = parameters
            return function

        return transform


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_MISSING: Any = _Marker("MISSING")  # no default given
_FACTORY: Any = _Marker("FACTORY")  # the parameter default of a field with a factory
FIELDS = "__record_fields__"  # the class attribute holding a record class's fields


class FrozenRecordError(AttributeError):
    """An assignment to, or a deletion from, a frozen record."""


class Field:
    """One field: what `field()` declares, then, named, what a record class holds."""

    __slots__ = ("default", "default_factory", "kw_only", "name", "repr")

    def __init__(
        self,
        default: Any = _MISSING,
        default_factory: Any = _MISSING,
        repr: bool = True,  # shadows the builtin as dataclasses.field's parameter does
        name: str = "",
        kw_only: bool = False,
    ) -> None:
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.name = name
        self.kw_only = kw_only

    def __repr__(self) -> str:
        return f"Field({self.name!r})"

    @property
    def required(self) -> bool:
        return self.default is _MISSING and self.default_factory is _MISSING


if TYPE_CHECKING:  # the overloads are for type checkers alone

    @overload
    def field(*, default: T, repr: bool = True) -> T: ...
    @overload
    def field(*, default_factory: Callable[[], T], repr: bool = True) -> T: ...
    @overload
    def field(*, repr: bool = True) -> Any: ...


def field(
    *,
    default: Any = _MISSING,
    default_factory: Any = _MISSING,
    repr: bool = True,  # shadows the builtin as dataclasses.field's parameter does
) -> Any:
    """A field with a default, a per-instance default factory, or left out of the repr."""
    return Field(default, default_factory, repr)


if TYPE_CHECKING:

    @overload
    def record(cls: type[T], /) -> type[T]: ...
    @overload
    def record(*, frozen: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[T] | None = None, /, *, frozen: bool = True) -> Any:
    """Make `cls` a record (see the module docstring); frozen unless `frozen=False`."""
    if cls is None:
        return lambda cls: _make(cls, frozen)
    return _make(cls, frozen)


def _make(cls: type[T], frozen: bool) -> type[T]:
    fields = _inherited_fields(cls, frozen)
    for own in _own_fields(cls):
        fields[own.name] = own
    ordered = tuple(fields.values())
    _check_order(ordered)
    body = cls.__dict__
    if frozen and ("__setattr__" in body or "__delattr__" in body):
        raise TypeError(f"frozen record {cls.__qualname__} defines __setattr__ or __delattr__")
    generated = _compared(_values_of(ordered))
    if "__init__" not in body:
        generated["__init__"] = _compiled_on_first_use(
            cls, ordered, frozen, hasattr(cls, "__post_init__")
        )
    for name, method in generated.items():
        method.__qualname__ = f"{cls.__qualname__}.{name}"
    made: dict[str, Any] = {"__repr__": _repr, **generated}
    if frozen:
        made |= {"__setattr__": _refuse_assignment, "__delattr__": _refuse_deletion}
    else:
        made["__hash__"] = None
    for name, method in made.items():
        if name not in body:
            setattr(cls, name, method)
    setattr(cls, FIELDS, ordered)
    return cls


def _inherited_fields(cls: type, frozen: bool) -> dict[str, Field]:
    fields: dict[str, Field] = {}
    for base in cls.__mro__[-1:0:-1]:
        inherited: tuple[Field, ...] | None = base.__dict__.get(FIELDS)
        if inherited is None:
            continue
        if (base.__dict__.get("__setattr__") is _refuse_assignment) != frozen:
            kind = "frozen" if frozen else "mutable"
            raise TypeError(f"a {kind} record cannot inherit from {base.__qualname__}")
        fields.update((inherited_field.name, inherited_field) for inherited_field in inherited)
    return fields


def _own_fields(cls: type) -> list[Field]:
    """The fields the class body declares, with their defaults taken off the class."""
    own = []
    kw_only = False
    # Since Python 3.10 a class's own annotations: never its bases'.
    for name, annotation in cls.__annotations__.items():
        if _is_class_var(annotation):
            continue
        if _is_kw_only_marker(annotation):
            kw_only = True
            continue
        value = cls.__dict__.get(name, _MISSING)
        declared = value if isinstance(value, Field) else Field(value)
        declared.name, declared.kw_only = name, kw_only
        if declared.default is not _MISSING and type(declared.default).__hash__ is None:
            kind = type(declared.default).__name__
            raise ValueError(f"mutable default {kind} for field {name}: use default_factory")
        if declared.default is not _MISSING:
            setattr(cls, name, declared.default)
        elif name in cls.__dict__:
            delattr(cls, name)
        own.append(declared)
    return own


def _is_class_var(annotation: object) -> bool:
    if isinstance(annotation, str):
        return annotation.partition("[")[0].strip() in ("ClassVar", "typing.ClassVar")
    typing = sys.modules.get("typing")  # an annotation that is no string came from it
    return typing is not None and getattr(annotation, "__origin__", annotation) is typing.ClassVar


def _is_kw_only_marker(annotation: object) -> bool:
    if isinstance(annotation, str):
        return annotation.rpartition(".")[2] == "KW_ONLY"
    return annotation is KW_ONLY


def _check_order(fields: tuple[Field, ...]) -> None:
    defaulted = False
    for each in fields:
        if each.kw_only:
            continue
        if each.required and defaulted:
            raise TypeError(f"field {each.name} without a default follows one with a default")
        defaulted = defaulted or not each.required


def _compiled_on_first_use(
    cls: type, fields: tuple[Field, ...], frozen: bool, post_init: bool
) -> Callable[..., None]:
    """An `__init__` that compiles the real one (`_init`) on the class's first instance and
    puts it in its place: a record class the process never instantiates costs no `exec`."""

    def __init__(instance: object, /, *args: Any, **kwargs: Any) -> None:  # a field may be `self`
        made = _init(fields, frozen, post_init)
        made.__qualname__ = f"{cls.__qualname__}.__init__"
        setattr(cls, "__init__", made)  # noqa: B010 - a class attribute, not the instance's
        made(instance, *args, **kwargs)

    return __init__


def _init(fields: tuple[Field, ...], frozen: bool, post_init: bool) -> Any:
    """`__init__`, compiled from one source string (the one `exec` of a record class)."""
    names: dict[str, Any] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    lines = []
    self_name = "__record_self__" if "self" in {each.name for each in fields} else "self"
    if frozen and fields:
        lines.append(f"__record_dict__ = {self_name}.__dict__")
    for each in fields:
        parameter = each.name
        value = each.name
        if each.default is not _MISSING:
            names[f"_default_{each.name}"] = each.default
            parameter = f"{each.name}=_default_{each.name}"
        elif each.default_factory is not _MISSING:
            names[f"_factory_{each.name}"] = each.default_factory
            parameter = f"{each.name}=_FACTORY"
            value = f"_factory_{each.name}() if {each.name} is _FACTORY else {each.name}"
        (keyword if each.kw_only else positional).append(parameter)
        if frozen:
            lines.append(f"__record_dict__[{each.name!r}] = {value}")
        else:
            lines.append(f"{self_name}.{each.name} = {value}")
    if post_init:
        lines.append(f"{self_name}.__post_init__()")
    parameters = [self_name, *positional, *(["*", *keyword] if keyword else [])]
    body = "\n    ".join(lines or ["pass"])
    exec(f"def __init__({', '.join(parameters)}):\n    {body}\n", names)
    return names["__init__"]


def _values_of(fields: tuple[Field, ...]) -> Callable[[object], tuple[object, ...]]:
    """The function from a record to the tuple of its field values."""
    if len(fields) >= 2:
        return attrgetter(*(each.name for each in fields))
    if fields:
        value = attrgetter(fields[0].name)
        return lambda record: (value(record),)
    return lambda record: ()


def _compared(values: Callable[[object], tuple[object, ...]]) -> dict[str, Any]:
    """`__eq__` and `__hash__` over the tuple of field values."""

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    def __hash__(self: object) -> int:
        return hash(values(self))

    return {"__eq__": __eq__, "__hash__": __hash__}


@recursive_repr()
def _repr(self: object) -> str:
    shown = ", ".join(
        f"{each.name}={getattr(self, each.name)!r}" for each in _fields(type(self)) if each.repr
    )
    return f"{type(self).__qualname__}({shown})"


def _refuse_assignment(self: object, name: str, value: object) -> None:
    raise FrozenRecordError(f"cannot assign to field {name!r}")


def _refuse_deletion(self: object, name: str) -> None:
    raise FrozenRecordError(f"cannot delete field {name!r}")


def _fields(cls: type) -> tuple[Field, ...]:
    fields: tuple[Field, ...] | None = getattr(cls, FIELDS, None)
    if fields is None:
        raise TypeError(f"{cls.__qualname__} is not a record class")
    return fields


def is_record(value: object) -> bool:
    """Whether `value` is an instance of a record class (a record class itself is not)."""
    return hasattr(type(value), FIELDS)


def field_names(cls: type) -> tuple[str, ...]:
    """The names of a record class's fields, in order."""
    return tuple(each.name for each in _fields(cls))


def asdict(value: object) -> dict[str, Any]:
    """The fields of a record as a new dict; the values themselves are not copied."""
    return {each.name: getattr(value, each.name) for each in _fields(type(value))}


def replace(value: RecordT, /, **changes: Any) -> RecordT:
    """A new record of `value`'s class: its fields, but for `changes` (TypeError for a name
    that is not a field's)."""
    for each in _fields(type(value)):
        if each.name not in changes:
            changes[each.name] = getattr(value, each.name)
    return type(value)(**changes)
