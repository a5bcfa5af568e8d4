"""The worker-event channel in process: deltas merge or drop under pressure and never take
the room of critical events; delta part numbers show a gap exactly where text was lost."""

from magi_code.limits import LIVE_CHUNK_BYTES, WORKER_EVENTS
from magi_code.local_agent.channel import EventChannel, Item


def delta(text: str, message: str = "m") -> Item:
    return "message.delta", {"message_id": message, "part": -1, "text": text}


def drain(channel: EventChannel) -> list[Item]:
    items = []
    while (item := channel.take()) is not None:
        items.append(item)
    return items


def test_parts_are_numbered_as_deltas_enter_per_message() -> None:
    channel = EventChannel(lambda: None)
    for text in "abc":
        channel.offer_delta(delta(text))
    channel.offer_delta(delta("z", message="n"))
    assert [(d["message_id"], d["part"], d["text"]) for _, d in drain(channel)] == [
        ("m", 0, "a"),
        ("m", 1, "b"),
        ("m", 2, "c"),
        ("n", 0, "z"),
    ]


def test_deltas_fill_only_half_then_merge_without_spending_numbers() -> None:
    channel = EventChannel(lambda: None)
    half = WORKER_EVENTS // 2
    for n in range(half + 5):
        assert channel.offer_delta(delta(str(n % 10)))
    assert len(channel) == half
    assert channel.try_put(("activity", {}))  # critical events find the other half free
    assert not channel.offer_delta(delta("x"))  # behind a critical event: dropped
    items = drain(channel)
    parts = [d["part"] for name, d in items if name == "message.delta"]
    assert parts == list(range(half))  # merged deltas spent no number: no gap
    assert items[half - 1][1]["text"] == "".join(str(n % 10) for n in range(half - 1, half + 5))
    channel.offer_delta(delta("y"))
    assert drain(channel)[0][1]["part"] == half + 1  # the dropped delta's number is missing


def test_a_merge_never_passes_the_live_chunk_bound() -> None:
    channel = EventChannel(lambda: None)
    half = WORKER_EVENTS // 2
    for _ in range(half):
        channel.offer_delta(delta("é"))
    big = "é" * (LIVE_CHUNK_BYTES // 2 - 1)  # 2 bytes each: fits with the queued one
    assert channel.offer_delta(delta(big))
    assert not channel.offer_delta(delta("e"))  # one byte more would pass the bound
    items = drain(channel)
    assert len(items) == half and len(items[-1][1]["text"].encode()) == LIVE_CHUNK_BYTES
