"""One record style for the house, checked on the source.

1. In magi_code a record (a class that is its fields) is a `@record` (magi_code/records.py);
   `dataclasses` is imported nowhere in src (a type checker's `if TYPE_CHECKING:` import
   aside), and records.py itself loads neither `dataclasses`, `inspect` nor `typing`.
2. melchior stands alone: it imports nothing of magi_code (test_walls.py checks that); its
   records are plain classes with `__slots__`, never dataclasses or named tuples.
3. A `NamedTuple` only where the value is used as a tuple: each one is named below with the
   use that makes it one.
4. A hand-written class in magi_code with `__slots__` has behaviour: one whose methods are an
   `__init__` that only stores its parameters (or constants) and at most `__repr__`,
   `__eq__`, `__hash__` and properties is a record in disguise.
"""

import ast
from pathlib import Path

from source_imports import loaded_running, run_time_imports

SRC = Path(__file__).resolve().parents[1] / "src"

# Rule 3: the named tuples of src, each with the tuple use that keeps it one.
NAMED_TUPLES = {
    # The decoder's fast path builds each event with `tuple.__new__` from a tuple.
    "magi_code/providers/sse.py:SSEEvent",
    # A manifest row: built from `lstat`'s tuple and a stored JSON row (`State(*row)`).
    "magi_code/checkpoints/manifest.py:State",
    # Sorted as tuples: by sequence number, then phase.
    "magi_code/checkpoints/store.py:Listed",
}


def sources(package: str) -> list[Path]:
    files = sorted((SRC / package).rglob("*.py"))
    assert files, f"{package} has no modules"
    return files


def test_no_module_imports_dataclasses() -> None:
    offenders = [
        str(path.relative_to(SRC))
        for path in sources("magi_code") + sources("melchior")
        if any(name.split(".")[0] == "dataclasses" for name in run_time_imports(path))
    ]
    assert offenders == []


def test_records_load_no_typing_so_start_up_paths_may_use_them() -> None:
    code = "import magi_code.records"
    assert loaded_running(code, ("typing", "dataclasses", "inspect")) == []


def named_tuples(path: Path) -> list[str]:
    """The classes in `path` made by `NamedTuple` or `namedtuple(...)`."""
    found = []
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(base) for base in node.bases]
            found += [node.name] if any(b.endswith("NamedTuple") for b in bases) else []
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            made = ast.unparse(node.value.func).endswith("namedtuple")
            found += [ast.unparse(target) for target in node.targets] if made else []
    return found


def test_named_tuples_are_only_those_used_as_tuples() -> None:
    found = {
        f"{path.relative_to(SRC)}:{name}"
        for path in sources("magi_code") + sources("melchior")
        for name in named_tuples(path)
    }
    assert found == NAMED_TUPLES, "a named tuple that is never used as a tuple is a @record"


def _stores_only(init: ast.FunctionDef) -> bool:
    """Whether `__init__` only stores its parameters, or constants, on `self`."""
    arguments = init.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    if arguments.vararg or arguments.kwarg or not every:
        return False
    self_name, parameters = every[0].arg, {a.arg for a in every[1:]}

    def stored(value: ast.expr) -> bool:
        if isinstance(value, ast.Name):
            return value.id in parameters
        if isinstance(value, ast.Constant):
            return True
        if isinstance(value, ast.Tuple | ast.List | ast.Dict | ast.Set):
            return not any(ast.iter_child_nodes(value))  # an empty one
        if isinstance(value, ast.Call):  # an empty container: deque(), []
            return not value.args and not value.keywords
        if isinstance(value, ast.BoolOp):  # `items or []`
            return all(stored(each) for each in value.values)
        return False

    def on_self(target: ast.expr) -> bool:
        return (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == self_name
        )

    for statement in init.body:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring
        if isinstance(statement, ast.AnnAssign) and statement.value is not None:
            pairs = [(statement.target, statement.value)]
        elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                if len(target.elts) != len(value.elts):
                    return False
                pairs = list(zip(target.elts, value.elts, strict=True))
            else:
                pairs = [(target, value)]
        else:
            return False
        if not all(on_self(target) and stored(value) for target, value in pairs):
            return False
    return True


def _is_slotted(node: ast.ClassDef) -> bool:
    for statement in node.body:
        targets = (
            statement.targets
            if isinstance(statement, ast.Assign)
            else [statement.target]
            if isinstance(statement, ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in targets):
            return True
    return False


COMPARED = {"__repr__", "__eq__", "__hash__"}  # what a record generates besides __init__


def records_in_disguise(tree: ast.Module) -> list[str]:
    """The slotted classes of a module that are only their fields (see rule 4)."""
    disguised: list[str] = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or not _is_slotted(node):
            continue
        if any(ast.unparse(base) not in {"object", *disguised} for base in node.bases):
            continue
        methods = [
            statement
            for statement in node.body
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
        plain = True
        for method in methods:
            if method.name == "__init__":
                plain = plain and isinstance(method, ast.FunctionDef) and _stores_only(method)
            elif method.name not in COMPARED and not any(
                ast.unparse(decorator) == "property" for decorator in method.decorator_list
            ):
                plain = False
        if plain:
            disguised.append(node.name)
    return disguised


def test_no_slotted_class_in_magi_code_is_a_record_in_disguise() -> None:
    offenders = [
        f"{path.relative_to(SRC)}:{name}"
        for path in sources("magi_code")
        for name in records_in_disguise(ast.parse(path.read_bytes()))
    ]
    assert offenders == [], "a class that is only its fields is a @record"


DISGUISED = """
class Pair:
    __slots__ = ("a", "b")

    def __init__(self, a: int, b: int = 0) -> None:
        self.a, self.b = a, b

    def __repr__(self) -> str:
        return f"Pair({self.a})"


class Stream:
    __slots__ = ("chunks", "ended", "head")

    def __init__(self, head: str | None = None) -> None:
        self.head: str | None = head
        self.chunks = deque()
        self.ended = False

    @property
    def empty(self) -> bool:
        return not self.chunks


class Marker:
    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)


class End(Marker):
    __slots__ = ()
"""
WITH_BEHAVIOUR = """
class Reader:
    __slots__ = ("buffer",)

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> None:
        self.buffer += data


class Derived:
    __slots__ = ("instructions",)

    def __init__(self, sources: list[str]) -> None:
        self.instructions = "\\n".join(sources)


class Unslotted:
    def __init__(self, a: int) -> None:
        self.a = a


class Failure(Exception):
    __slots__ = ("code",)

    def __init__(self, code: str) -> None:
        self.code = code
"""


def test_the_finder_tells_a_record_in_disguise_from_a_class_with_behaviour() -> None:
    assert records_in_disguise(ast.parse(DISGUISED)) == ["Pair", "Stream", "Marker", "End"]
    assert records_in_disguise(ast.parse(WITH_BEHAVIOUR)) == []
