"""Properties of the pure projector over arbitrary record sequences (hypothesis)."""

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from magi_code.sessions.projection import Projector

RUNS = st.sampled_from(["r0", "r1", "r2"])
MIDS = st.sampled_from(["a0", "a1"])


def _record(kind: str, run: str, mid: str, n: int) -> dict[str, Any]:
    base: dict[str, Any] = {"type": kind, "run_id": run}
    if kind == "user":
        return {**base, "message_id": f"u{n}", "text": f"ask-{n}"}
    if kind == "assistant_chunk":
        return {**base, "message_id": mid, "index": n, "text": f"chunk-{run}-{mid}-{n};"}
    if kind == "assistant":
        return {**base, "message_id": mid, "text": f"final-{run}-{mid}-{n}"}
    if kind == "tool":
        return {
            **base,
            "activity_id": mid,
            "name": "t",
            "state": "completed",
            "summary": "",
            "result": "RAW-RESULT",
        }
    if kind == "reasoning_summary":
        return {**base, "item_id": mid, "text": f"sum-{n}", "provider_summary": n % 2 == 0}
    if kind == "run_finished":
        return {**base, "outcome": ["completed", "failed", "cancelled"][n % 3]}
    return {"type": kind, "text": "PRIVATE"}


RECORDS = st.lists(
    st.builds(
        _record,
        st.sampled_from(
            [
                "user",
                "assistant_chunk",
                "assistant",
                "tool",
                "reasoning_summary",
                "run_finished",
                "internal",
                "assessment",
                "reasoning",
            ]
        ),
        RUNS,
        MIDS,
        st.integers(0, 50),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(RECORDS, st.booleans())
def test_projection_invariants(records: list[dict[str, Any]], torn: bool) -> None:
    projector = Projector()
    for record in records:
        projector.feed(record)
    projection = projector.finish(torn=torn)
    texts = [e.text for e in projection.entries]
    assert not any("PRIVATE" in t or "RAW-RESULT" in t for t in texts)
    # incomplete exactly when something was interrupted or torn, and then it says so
    diagnostics = [e for e in projection.entries if e.kind == "diagnostic"]
    assert projection.complete == (not diagnostics)
    # one assistant copy per (run, message): the last reconciled text, else the joined chunks
    for run in ["r0", "r1", "r2"]:
        for mid in ["a0", "a1"]:
            own = [r for r in records if (r.get("run_id"), r.get("message_id")) == (run, mid)]
            finals = [r["text"] for r in own if r["type"] == "assistant"]
            chunks = "".join(r["text"] for r in own if r["type"] == "assistant_chunk")
            if finals:
                assert texts.count(finals[-1]) == 1
                assert not any(f"chunk-{run}-{mid}-" in t for t in texts)
            elif chunks:
                assert texts.count(chunks) == 1
    # reasoning summaries only with provider provenance (even n in this grammar)
    assert not any(t.startswith("sum-") and int(t[4:]) % 2 for t in texts)
