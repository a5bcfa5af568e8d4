"""ACP's "always allow" never covers running a command again outside the sandbox: that
question is asked each time, whatever was allowed for the command itself."""

from magi_code.acp.prompt_run import remembered_key
from magi_code.tools.approvals import Asked
from magi_code.tools.base import Access
from magi_code.tools.paths import Protected


def test_running_outside_the_sandbox_is_never_remembered() -> None:
    access = Access("shell", (), "make install")
    assert remembered_key(Asked("shell", access, "{}"), Protected()) == ("shell", "make install")
    outside = Asked("shell", access, "{}", outside_sandbox=True)
    assert remembered_key(outside, Protected()) is None
