"""Records behave as the dataclasses they replace: every generated method, the frozen and
mutable kinds, inheritance, and the helpers; and making one compiles exactly once and loads
neither `dataclasses` nor `inspect`."""

import builtins
import copy
import dataclasses
import pickle
from typing import ClassVar

import pytest

from magi_code.records import (
    KW_ONLY,
    FrozenRecordError,
    asdict,
    field,
    field_names,
    is_record,
    record,
    replace,
)
from source_imports import loaded_running


@record
class Point:
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    secret: str = field(default="", repr=False)
    instances: ClassVar[int] = 0
    _: KW_ONLY
    label: str = ""
    weight: float = field(repr=False)


@record(frozen=False)
class Counter:
    name: str
    count: int = 0
    seen: set[str] = field(default_factory=set)


@record
class Labelled(Point):
    y: int = 5  # declared again: keeps its place, takes this default
    note: str = "n"


@record
class Clipped:
    text: str
    words: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", self.text[:3])
        self.words.extend(self.text)


@record(frozen=False)
class Totalled(Counter):
    total: int = 0

    def __post_init__(self) -> None:
        self.total = self.count * 2


@record
class Empty:
    pass


def test_init_takes_positional_keyword_default_factory_and_keyword_only_fields() -> None:
    point = Point(1, 2, ["a"], "s", label="l", weight=0.5)
    assert vars(point) == {
        "x": 1,
        "y": 2,
        "tags": ["a"],
        "secret": "s",
        "label": "l",
        "weight": 0.5,
    }
    point = Point(x=1, weight=2.0)
    assert (point.y, point.tags, point.secret, point.label) == (0, [], "", "")
    assert Point(1, weight=0).tags is not Point(1, weight=0).tags  # one list per instance
    given: list[str] = []
    assert Point(1, tags=given, weight=0).tags is given
    with pytest.raises(TypeError):
        Point(1, 2, [], "s", "l", 1.0)  # type: ignore[misc]  # label is keyword-only
    with pytest.raises(TypeError):
        Point(1)  # type: ignore[call-arg]  # weight has no default
    assert Empty() == Empty() and vars(Empty()) == {}


def test_class_vars_and_the_marker_are_not_fields() -> None:
    assert field_names(Point) == ("x", "y", "tags", "secret", "label", "weight")
    assert Point.instances == 0
    assert "_" not in vars(Point(1, weight=0))


def test_string_annotations_are_read_as_the_names_they_spell() -> None:
    namespace: dict[str, object] = {}
    exec(
        "from __future__ import annotations\n"
        "import typing\n"
        "from typing import ClassVar\n"
        "from magi_code.records import KW_ONLY, record\n"
        "from magi_code import records\n"
        "@record\n"
        "class Late:\n"
        "    a: int\n"
        "    b: ClassVar[int] = 1\n"
        "    c: typing.ClassVar[str] = ''\n"
        "    d: ClassVarious = 2\n"
        "    _: records.KW_ONLY\n"
        "    e: str = ''\n",
        namespace,
    )
    late: type = namespace["Late"]  # type: ignore[assignment]
    assert field_names(late) == ("a", "d", "e")
    with pytest.raises(TypeError):
        late(1, 2, "e")
    assert vars(late(1, e="x")) == {"a": 1, "d": 2, "e": "x"}


def test_repr_shows_the_qualname_and_the_fields_not_hidden() -> None:
    assert repr(Point(1, 2, ["a"], "s", label="l", weight=1.0)) == (
        "Point(x=1, y=2, tags=['a'], label='l')"
    )
    assert repr(Counter("c")) == "Counter(name='c', count=0, seen=set())"
    assert repr(Empty()) == "Empty()"

    @record(frozen=False)
    class Node:
        child: object = None

    node = Node()
    node.child = node
    assert (
        repr(node)
        == "test_repr_shows_the_qualname_and_the_fields_not_hidden.<locals>.Node(child=...)"
    )


def test_eq_is_same_class_and_same_values() -> None:
    assert Point(1, weight=0) == Point(1, weight=0)
    assert Point(1, weight=0) != Point(1, weight=1)
    assert Point(1, secret="a", weight=0) != Point(1, secret="b", weight=0)  # repr=False counts
    assert Labelled(1, weight=0) != Point(1, 5, weight=0)  # a subclass is another class
    assert Point(1, weight=0).__eq__((1, 0, [], "", "", 0)) is NotImplemented
    nan = float("nan")
    same = Point(1, weight=nan)
    assert same == same  # values compared as tuples: identity first, as dataclasses


def test_frozen_records_hash_their_values_and_mutable_ones_do_not_hash() -> None:
    @record
    class Key:
        a: int
        b: tuple[str, ...] = ()

    assert hash(Key(1, ("x",))) == hash(Key(1, ("x",))) == hash((1, ("x",)))
    assert len({Key(1), Key(1), Key(2)}) == 2
    assert Counter.__hash__ is None
    with pytest.raises(TypeError):
        hash(Counter("c"))


def test_frozen_records_refuse_assignment_and_deletion_of_any_name() -> None:
    point = Point(1, weight=0)
    for name in ("x", "other"):
        with pytest.raises(FrozenRecordError, match=repr(name)):
            setattr(point, name, 2)
        with pytest.raises(AttributeError):
            delattr(point, name)
    assert issubclass(FrozenRecordError, AttributeError)
    assert vars(point)["x"] == 1


def test_mutable_records_take_assignment() -> None:
    counter = Counter("c")
    counter.count += 1
    counter.seen.add("x")
    assert counter == Counter("c", 1, {"x"})
    del counter.count
    assert "count" not in vars(counter)


def test_post_init_runs_after_the_fields_are_set() -> None:
    clipped = Clipped("abcdef")
    assert (clipped.text, clipped.words) == ("abc", ["a", "b", "c"])
    assert Totalled("t", 3).total == 6


def test_inheritance_puts_base_fields_first_and_keeps_a_redeclared_field_in_place() -> None:
    assert field_names(Labelled) == ("x", "y", "tags", "secret", "label", "weight", "note")
    labelled = Labelled(1, weight=0)
    assert (labelled.y, labelled.note) == (5, "n")
    assert Labelled(1, 2, [], "", "m", weight=0).note == "m"
    assert isinstance(labelled, Point) and is_record(labelled)
    with pytest.raises(FrozenRecordError):
        labelled.note = "o"  # type: ignore[misc]


def test_a_record_inherits_only_from_records_of_its_own_kind() -> None:
    with pytest.raises(TypeError, match="mutable"):

        @record(frozen=False)
        class Thawed(Point):  # type: ignore[misc]
            pass

    with pytest.raises(TypeError, match="frozen"):

        @record
        class Frozen(Counter):  # type: ignore[misc]
            pass

    @record(frozen=False)
    class Failure(Exception):
        code: str
        status: int | None = None

    error = Failure("bad", 3)
    assert error.args == ("bad", 3) and error.code == "bad" and error == Failure("bad", 3)


def test_declarations_dataclasses_refuse_are_refused() -> None:
    with pytest.raises(TypeError, match="follows"):

        @record
        class Disordered:
            a: int = 0
            b: str  # type: ignore[misc]

    with pytest.raises(ValueError, match="default_factory"):

        @record
        class Shared:
            items: list[int] = []  # noqa: RUF012

    with pytest.raises(ValueError, match="both"):
        field(default=1, default_factory=int)  # type: ignore[call-overload]

    with pytest.raises(TypeError, match="__setattr__"):

        @record
        class Guarded:
            def __setattr__(self, name: str, value: object) -> None:
                pass


def test_methods_the_class_defines_are_kept() -> None:
    @record
    class Own:
        a: int

        def __repr__(self) -> str:
            return "own"

        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 7

    assert (repr(Own(1)), Own(1) == Own(2), hash(Own(1))) == ("own", True, 7)


def test_a_field_named_self_is_a_parameter_like_any_other() -> None:
    @record
    class Selfish:
        self: int

    assert Selfish(self=3).self == 3 and Selfish(4).self == 4


def test_generated_methods_are_named_in_tracebacks() -> None:
    assert Point.__init__.__qualname__ == "Point.__init__"
    assert Point.__eq__.__qualname__ == "Point.__eq__"
    assert Point.__hash__.__qualname__ == "Point.__hash__"
    assert Counter.__eq__.__qualname__ == "Counter.__eq__"
    assert Point.__setattr__.__qualname__ == "_refuse_assignment"  # shared, so not renamed


def test_replace_asdict_field_names_and_is_record() -> None:
    point = Point(1, 2, label="l", weight=1.0)
    moved = replace(point, y=3, label="m")
    assert (type(moved), moved.y, moved.label, moved.weight) == (Point, 3, "m", 1.0)
    assert point.y == 2
    labelled = Labelled(1, weight=0)
    assert type(replace(labelled, note="x")) is Labelled
    with pytest.raises(TypeError):
        replace(point, z=1)
    assert asdict(point) == vars(point) and asdict(point) is not vars(point)
    assert asdict(point)["tags"] is point.tags  # one level deep
    assert field_names(Counter) == ("name", "count", "seen")
    assert is_record(point) and not is_record(Point) and not is_record(object())
    with pytest.raises(TypeError):
        asdict(object())


def test_copy_and_pickle_keep_the_fields() -> None:
    point = Point(1, tags=["a"], label="l", weight=1.0)
    assert copy.copy(point) == point and copy.deepcopy(point) == point
    assert copy.deepcopy(point).tags is not point.tags
    assert pickle.loads(pickle.dumps(point)) == point
    counter = Counter("c", 2, {"x"})
    assert pickle.loads(pickle.dumps(counter)) == counter


def test_records_agree_with_dataclasses_on_the_same_declaration() -> None:
    def declare(decorator: object) -> type:
        class Shape:
            a: int
            b: str = "b"
            c: tuple[int, ...] = ()

        return decorator(Shape)  # type: ignore[operator, no-any-return]

    shape_dc = declare(dataclasses.dataclass(frozen=True))
    shape_rec = declare(record)
    for args in [(1,), (1, "x"), (1, "x", (2,))]:
        dc, rec = shape_dc(*args), shape_rec(*args)
        assert repr(dc) == repr(rec) and vars(dc) == vars(rec) and hash(rec) == hash(dc)
        assert dataclasses.astuple(dc) == tuple(asdict(rec).values())


def test_a_record_compiles_its_init_once_on_its_first_instance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled: list[object] = []
    real_exec = builtins.exec

    def counting_exec(source: object, *args: object) -> None:
        compiled.append(source)
        real_exec(source, *args)  # type: ignore[call-overload]

    monkeypatch.setattr(builtins, "exec", counting_exec)

    @record
    class Many:
        a: int
        b: int = 1
        c: list[int] = field(default_factory=list)
        _: KW_ONLY
        d: int = 2

    assert compiled == [], "a class never instantiated costs no exec"
    assert Many(0) == Many(0, 1, [], d=2)
    assert len(compiled) == 1
    assert Many(5).a == 5 and Many.__init__.__qualname__.endswith(".Many.__init__")
    assert len(compiled) == 1
    with pytest.raises(TypeError):
        Many()  # type: ignore[call-arg]


def test_records_load_neither_dataclasses_nor_inspect() -> None:
    code = (
        "from magi_code.records import record, field, replace, asdict\n"
        "@record\nclass A:\n    a: int\n    b: list[int] = field(default_factory=list)\n"
        "replace(A(1), a=2); asdict(A(1))"
    )
    assert loaded_running(code, ("dataclasses", "inspect")) == []
