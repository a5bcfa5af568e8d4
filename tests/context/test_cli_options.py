"""`--agent` is taken from the options, never from the prompt text."""

import pytest

from magi_code.cli import agent_option


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--agent", "a", "--prompt", "hi"], ("a", ["--prompt", "hi"])),
        (["--prompt", "hi", "--agent=a"], ("a", ["--prompt", "hi"])),
        (["--prompt", "--agent=a"], (None, ["--prompt", "--agent=a"])),
        (["--prompt", "--agent", "a"], (None, ["--prompt", "--agent", "a"])),
        (["context", "--agent", "b"], ("b", ["context"])),
        (["--agent"], (None, ["--agent"])),
        ([], (None, [])),
    ],
)
def test_agent_option(argv: list[str], expected: tuple[str | None, list[str]]) -> None:
    assert agent_option(argv) == expected
