"""prefixes.py: a prefix handed out never changes, whatever its owner does afterwards, and
two prefixes of one owner find their common prefix by identity."""

from hypothesis import given
from hypothesis import strategies as st

from magi_code.prefixes import Growing, Prefix

OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 9)),
        st.tuples(st.just("set"), st.integers(0, 30)),
        st.tuples(st.just("pop"), st.integers(0, 30)),
        st.tuples(st.just("truncate"), st.integers(0, 30)),
        st.tuples(st.just("drop_front"), st.integers(0, 5)),
        st.tuples(st.just("prefix"), st.integers(0, 2)),
    ),
    max_size=60,
)


@given(OPERATIONS)
def test_prefixes_keep_what_they_were_given(operations: list[tuple[str, int]]) -> None:
    owner: Growing[object] = Growing()
    model: list[object] = []
    taken: list[tuple[Prefix[object], list[object]]] = []
    for name, argument in operations:
        if name == "append":
            item = object()
            owner.append(item)
            model.append(item)
        elif name == "set" and argument < len(model):
            item = object()
            owner[argument] = item
            model[argument] = item
        elif name == "pop" and argument < len(model):
            assert owner.pop_at(argument) is model.pop(argument)
        elif name == "truncate":
            owner.truncate(argument)
            del model[argument:]
        elif name == "drop_front":
            owner.drop_front(argument)
            del model[:argument]
        elif name == "prefix":
            tail = [object() for _ in range(argument)]
            taken.append((owner.prefix(tail), [*model, *tail]))
        assert list(owner) == model
        for prefix, expected in taken:
            assert list(prefix) == expected and len(prefix) == len(expected)
    for prefix, expected in taken:
        assert prefix == expected and prefix[:] == tuple(expected)
        assert [prefix[i] for i in range(-len(expected), len(expected))] == expected * 2
        for other, other_expected in taken:
            same = 0
            while (
                same < min(len(expected), len(other_expected))
                and expected[same] is other_expected[same]
            ):
                same += 1
            assert prefix.common_prefix(other) == same
            assert prefix.common_prefix(other_expected) == same


def test_a_prefix_equals_sequences_of_equal_items_and_slices_to_tuples() -> None:
    owner: Growing[int] = Growing([1, 2, 3])
    prefix = owner.prefix([4])
    owner.append(5)
    assert prefix == [1, 2, 3, 4] and prefix == (1, 2, 3, 4) and prefix == [1, 2, 3, 4]
    assert prefix != [1, 2, 3] and prefix != "1234"
    assert prefix[1:3] == (2, 3) and prefix[::-1] == (4, 3, 2, 1) and prefix[2:] == (3, 4)
    assert prefix.extended([6]) == [1, 2, 3, 4, 6] and len(prefix) == 4
