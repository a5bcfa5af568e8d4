"""What a session's turns spent, read back from their `run_finished` records: every run's
tokens together (rewound ones too), and the conversation's weight from the last run's figure
until a compaction or a rewind changes the conversation; a file without usage counts nothing."""

from typing import Any

from sessions_support import finished, user

from magi_code.sessions.usage import StoredUsage, stored_usage


def spent(run: str, tokens_in: int, tokens_out: int, context: int) -> list[dict[str, Any]]:
    usage = {
        "rounds": 1,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cached_input_tokens": 0,
        "context_tokens": context,
    }
    return [user(run, "q", f"u{run}"), {**finished(run), "usage": usage}]


def test_the_totals_add_every_run_and_the_context_is_the_last_figure() -> None:
    records = [*spent("1", 100, 10, 110), *spent("2", 200, 20, 220)]
    records += [user("3", "cut short", "u3"), finished("3", "cancelled")]  # said no figure
    assert stored_usage(records) == StoredUsage(300, 30, 220)


def test_a_compaction_or_a_rewind_since_the_last_figure_leaves_the_context_unknown() -> None:
    records = [*spent("1", 100, 10, 110), *spent("2", 200, 20, 220)]
    rewind = {"type": "rewind", "drop_from": "u2"}
    assert stored_usage([*records, rewind]) == StoredUsage(300, 30, None)  # rewound: spent
    compaction = {"type": "compaction", "text": "summary", "keep_from": "u2"}
    assert stored_usage([*records, compaction, finished("c")]) == StoredUsage(300, 30, None)
    within = [user("4", "q", "u4"), compaction, *spent("4", 50, 5, 55)[1:]]
    assert stored_usage([*records, *within]) == StoredUsage(350, 35, 55)  # measured after it


def test_a_file_without_usage_counts_nothing() -> None:
    assert stored_usage([user("1", "q"), finished("1")]) == StoredUsage(0, 0, None)
