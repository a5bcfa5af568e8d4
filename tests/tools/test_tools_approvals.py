"""The approval broker on a real anyio loop: allow, deny, expiry, cancellation, one winner."""

import uuid

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest

from magi_code.limits import APPROVAL_EXPIRY_MS
from magi_code.tools.approvals import ApprovalBroker

pytestmark = pytest.mark.anyio


class Frontend:
    """Records announcements; `announced` fires on each one."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int]] = []
        self.announced = anyio.Event()

    async def announce(self, approval_id: str, summary: str, expires_in_ms: int) -> None:
        self.seen.append((approval_id, summary, expires_in_ms))
        self.announced.set()

    async def next_id(self) -> str:
        with anyio.fail_after(5):
            await self.announced.wait()
        self.announced = anyio.Event()
        return self.seen[-1][0]


async def ask(broker: ApprovalBroker, results: list[bool], summary: str = "run: ls") -> None:
    results.append(await broker.request(summary))


async def test_explicit_allow_authorizes_once() -> None:
    ui = Frontend()
    broker = ApprovalBroker(ui.announce)
    results: list[bool] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, broker, results)
        approval_id = await ui.next_id()
        assert broker.answer(approval_id, True) is True
    assert results == [True]
    assert broker.answer(approval_id, True) is False  # answered ids never authorize again
    assert broker.pending == 0
    (_, summary, expires_in_ms) = ui.seen[0]
    assert summary == "run: ls"
    assert 0 < expires_in_ms <= APPROVAL_EXPIRY_MS
    assert uuid.UUID(approval_id).version == 4


async def test_explicit_deny_is_recorded_and_denies() -> None:
    ui = Frontend()
    broker = ApprovalBroker(ui.announce)
    results: list[bool] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, broker, results)
        approval_id = await ui.next_id()
        assert broker.answer(approval_id, False) is True
        assert broker.answer(approval_id, True) is False
    assert results == [False]


async def test_expiry_denies_and_kills_the_id() -> None:
    ui = Frontend()
    broker = ApprovalBroker(ui.announce, expiry_ms=50)
    started = anyio.current_time()
    assert await broker.request("write a.txt") is False
    assert anyio.current_time() - started >= 0.05
    approval_id, _, expires_in_ms = ui.seen[0]
    assert 0 < expires_in_ms <= 50
    assert broker.answer(approval_id, True) is False
    assert broker.pending == 0


async def test_cancellation_denies_propagates_and_kills_the_id() -> None:
    ui = Frontend()
    broker = ApprovalBroker(ui.announce)
    results: list[bool] = []
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, broker, results)
            approval_id = await ui.next_id()
            scope.cancel()
    assert scope.cancelled_caught  # the cancellation reached the scope: not swallowed
    assert results == []
    assert broker.answer(approval_id, True) is False
    assert broker.pending == 0


async def test_deny_all_denies_pending_and_later_requests() -> None:
    ui = Frontend()
    broker = ApprovalBroker(ui.announce)
    results: list[bool] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, broker, results)
        tg.start_soon(ask, broker, results)
        first = await ui.next_id()
        with anyio.fail_after(5):
            while len(ui.seen) < 2:
                await anyio.sleep(0)
        broker.deny_all()
    assert results == [False, False]
    assert broker.answer(first, True) is False
    assert await broker.request("later") is False
    assert len(ui.seen) == 2  # nothing announced after deny_all


async def test_exactly_one_winner_among_concurrent_answers() -> None:
    ui = Frontend()
    broker = ApprovalBroker(ui.announce)
    results: list[bool] = []
    wins: list[tuple[bool, bool]] = []  # (allow, won)

    async def reply(approval_id: str, allow: bool, go: anyio.Event) -> None:
        await go.wait()
        wins.append((allow, broker.answer(approval_id, allow)))

    def reply_from_thread(approval_id: str) -> None:
        wins.append((True, anyio.from_thread.run_sync(broker.answer, approval_id, True)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, broker, results)
        approval_id = await ui.next_id()
        go = anyio.Event()
        for i in range(20):
            tg.start_soon(reply, approval_id, i % 2 == 0, go)
        for _ in range(4):
            tg.start_soon(anyio.to_thread.run_sync, reply_from_thread, approval_id)
        go.set()
    assert len(wins) == 24
    winners = [allow for allow, won in wins if won]
    assert len(winners) == 1
    assert results == winners  # the request returns what the one winner said


async def test_wrong_ids_are_stale() -> None:
    ui = Frontend()
    broker = ApprovalBroker(ui.announce, expiry_ms=50)
    assert broker.answer(str(uuid.uuid4()), True) is False
    assert broker.answer("", True) is False
    results: list[bool] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, broker, results)
        approval_id = await ui.next_id()
        assert broker.answer(approval_id.upper(), True) is False
    assert results == [False]  # the wrong answers did not decide it; expiry did


async def test_an_answer_during_the_announcement_counts() -> None:
    broker: ApprovalBroker

    async def eager(approval_id: str, summary: str, expires_in_ms: int) -> None:
        assert broker.answer(approval_id, True) is True

    broker = ApprovalBroker(eager)
    assert await broker.request("run: make") is True


async def test_announced_summary_is_safe() -> None:
    ui = Frontend()
    broker = ApprovalBroker(ui.announce, expiry_ms=1)
    key = "ghp_" + "A" * 36
    await broker.request(f"run: git push https://{key}@github.com/x\nnext")
    summary = ui.seen[0][1]
    assert key not in summary and "\n" not in summary
