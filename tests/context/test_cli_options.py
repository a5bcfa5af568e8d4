"""`--agent` is taken from the options, never from the prompt text."""

import pytest

from magi_code.cli import launch_options


@pytest.mark.parametrize(
    ("argv", "agent", "prompt"),
    [
        (["--agent", "a", "--prompt", "hi"], "a", "hi"),
        (["--prompt", "hi", "--agent=a"], "a", "hi"),
        (["--prompt=--agent=a"], None, "--agent=a"),
        (["--prompt", "use --agent a"], None, "use --agent a"),
        ([], None, None),
    ],
)
def test_agent_option(argv: list[str], agent: str | None, prompt: str | None) -> None:
    launch = launch_options(argv)
    assert launch is not None and (launch.agent, launch.prompt) == (agent, prompt)
