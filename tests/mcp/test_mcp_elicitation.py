"""Elicitation (mcp/elicitation.py, live.py): the restricted schema made a form within its
bounds, answers checked against it, the answer a real server gets; and where nobody can
answer (exec), the capability is not declared and a question sent anyway is declined, the
tool's result saying so."""

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types
import pytest

from magi_code.client import LocalAgentClient, environment
from magi_code.mcp.definitions import canonical_digest
from magi_code.mcp.elicitation import Answer, Form, Raw, checked, form_of, initial
from magi_code.mcp.limits import ANSWER_CHARS, FORM_CHOICES, FORM_FIELDS
from magi_code.mcp.live import LiveCall
from magi_code.mcp.manager import McpManager

EXEC = [str(Path(sys.executable).with_name("magi-code")), "exec", "--json"]

# server-everything's form (trigger-elicitation-request), in its own words.
EVERYTHING_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"title": "String", "type": "string", "description": "Your full, legal name"},
        "check": {"title": "Boolean", "type": "boolean"},
        "email": {"type": "string", "format": "email", "title": "Email"},
        "birthdate": {"type": "string", "format": "date"},
        "integer": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
        "number": {"type": "number", "minimum": 0, "maximum": 1000, "default": 3.14},
        "friend": {"type": "string", "enum": ["Monica", "Ross"], "default": "Monica"},
        "pet": {"type": "string", "enum": ["p1", "p2"], "enumNames": ["Cats", "Dogs"]},
        "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
        "fish": {
            "type": "array",
            "minItems": 1,
            "maxItems": 2,
            "items": {
                "anyOf": [{"const": "f1", "title": "Tuna"}, {"const": "f2"}, {"const": "f3"}]
            },
            "default": ["f1"],
        },
    },
    "required": ["name"],
}


def asked(schema: dict[str, Any], message: str = "Please fill this in") -> Form | str:
    return form_of(
        "ev", mcp_types.ElicitRequestFormParams(message=message, requested_schema=schema)
    )


def form() -> Form:
    made = asked(EVERYTHING_FORM)
    assert isinstance(made, Form)
    return made


def test_the_restricted_schema_becomes_a_form() -> None:
    made = form()
    by = {item.name: item for item in made.fields}
    assert [item.kind for item in made.fields] == [
        "text", "boolean", "text", "text", "integer", "number", "choice", "choice", "choice",
        "choices",
    ]  # fmt: skip
    assert by["name"].required and by["name"].label == "String"
    assert by["email"].format == "email" and by["birthdate"].label == "birthdate"
    assert (by["integer"].minimum, by["integer"].maximum) == (1, 100)
    assert by["pet"].choices == (("p1", "Cats"), ("p2", "Dogs"))
    assert by["fish"].choices == (("f1", "Tuna"), ("f2", "f2"), ("f3", "f3"))
    assert [initial(by[n]) for n in ("integer", "number", "friend", "fish", "check")] == [
        "42", "3.14", "Monica", ["f1"], None,
    ]  # fmt: skip


def test_what_no_form_can_show_is_refused_saying_why() -> None:
    url = mcp_types.ElicitRequestURLParams(
        message="sign in", url="https://x.test", elicitation_id="1"
    )
    assert form_of("ev", url) == "it asked to open a URL, which this client does not do"
    nested = {"type": "object", "properties": {"a": {"type": "object"}}}
    assert asked(nested) == "its field 'a' has a type this form does not take (object)"
    odd = {"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}}
    assert asked(odd) == "its field 'a' has a format this form does not check (ipv4)"


def test_a_form_is_bounded_at_its_exact_edges() -> None:
    def fields(count: int) -> dict[str, Any]:
        props = {f"f{n}": {"type": "string"} for n in range(count)}
        return {"type": "object", "properties": props}

    assert isinstance(asked(fields(FORM_FIELDS)), Form)
    over = f"its form has {FORM_FIELDS + 1} fields, more than {FORM_FIELDS}"
    assert asked(fields(FORM_FIELDS + 1)) == over

    def choices(count: int) -> dict[str, Any]:
        enum = [f"c{n}" for n in range(count)]
        return {"type": "object", "properties": {"c": {"type": "string", "enum": enum}}}

    assert isinstance(asked(choices(FORM_CHOICES)), Form)
    too_many = f"its field 'c' offers {FORM_CHOICES + 1} choices, more than {FORM_CHOICES}"
    assert asked(choices(FORM_CHOICES + 1)) == too_many
    text = {"type": "object", "properties": {"t": {"type": "string"}}}
    made = asked(text)
    assert isinstance(made, Form)
    assert checked(made, {"t": "x" * ANSWER_CHARS}) == {"t": "x" * ANSWER_CHARS}
    assert checked(made, {"t": "x" * (ANSWER_CHARS + 1)}) == [
        f"t: at most {ANSWER_CHARS} characters"
    ]


def test_an_answer_is_checked_against_the_form() -> None:
    made = form()
    wrong: dict[str, Raw] = {
        "email": "not-an-address",
        "birthdate": "31/12/2026",
        "integer": "101",
        "number": "many",
        "friend": "Joey",
        "fish": ["f1", "f2", "f3"],
    }
    assert checked(made, wrong) == [
        "String: required",
        "Email: must be an email address (name@example.com)",
        "birthdate: must be a date (2026-12-31)",
        "integer: at most 100",
        "number: must be a number",
        "friend: pick one of the choices shown",
        "fish: at most 2 choices",
    ]
    right: dict[str, Raw] = {
        "name": "Ada",
        "check": True,
        "integer": " 7",
        "number": 2.5,
        "fish": ["f2"],
    }
    assert checked(made, right) == {
        "name": "Ada", "check": True, "integer": 7, "number": 2.5, "fish": ["f2"],
    }  # fmt: skip
    assert checked(made, {"name": "Ada", "integer": 7.5}) == ["integer: must be a whole number"]


# ---- against real servers ----------------------------------------------------------------------


@pytest.fixture
def everything_manager(everything: Path, tmp_path: Path) -> Iterator[McpManager]:
    servers = {"ev": {"command": "node", "args": [str(everything), "stdio"], "enabled": True}}
    approved = [canonical_digest("ev", servers["ev"])]
    manager = McpManager.start(servers, approved=approved, cwd=str(tmp_path), elicits=True)
    yield manager
    manager.close()


def answer_with(live: LiveCall, answer: Answer) -> threading.Thread:
    """A person, in a thread of its own: answers the call's first question with `answer`."""

    def person() -> None:
        while not live.changed.wait(10) or not (questions := live.questions()):
            live.changed.clear()
        questions[0].future.set_result(answer)

    thread = threading.Thread(target=person, daemon=True)
    thread.start()
    return thread


def test_the_server_gets_the_persons_checked_answer(everything_manager: McpManager) -> None:
    """Declared (form mode only) where a face answers: the server offers its eliciting tool,
    and its result holds what the person typed, sent with the schema's types."""
    tools = {tool.name for _, tool in everything_manager.listed()}
    assert "trigger-elicitation-request" in tools
    assert "trigger-url-elicitation" not in tools  # form mode only: no face opens URLs
    live = LiveCall(answers=True)
    person = answer_with(live, Answer("accept", {"name": "Ada", "integer": "7", "check": True}))
    result = everything_manager.submit("ev", "trigger-elicitation-request", {}, live).result(30)
    person.join(5)
    assert isinstance(result, mcp_types.CallToolResult)
    text = "\n".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))
    assert "- Name: Ada" in text and "- Favorite Integer: 7" in text
    assert '"integer": 7' in text and '"check": true' in text
    assert live.notes == []


def test_a_declined_or_unfit_answer_reaches_the_server_as_decline(
    everything_manager: McpManager,
) -> None:
    for answer, note in (
        (Answer("decline"), "the person chose decline when the MCP server ev asked for input"),
        (Answer("accept", {"integer": "7"}), "did not fit its form (String: required); declined"),
    ):
        live = LiveCall(answers=True)
        person = answer_with(live, answer)
        result = everything_manager.submit("ev", "trigger-elicitation-request", {}, live).result(30)
        person.join(5)
        assert isinstance(result, mcp_types.CallToolResult)
        first = result.content[0]
        assert isinstance(first, mcp_types.TextContent) and "declined" in first.text
        assert note in live.notes[0]


ASK_CALL = {"name": "mcp__echo__ask", "arguments": {"question": "Your name?"}}
DECLINED = (
    "[the MCP server echo asked for input (Your name?); nobody here can answer it, so it was "
    "declined]\n"
)


def echo_home(tmp_path: Path, extra: str = "") -> tuple[Path, Path]:
    """MC_HOME with the echo server approved (and `extra` settings), and a workspace."""
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    home.mkdir()
    workspace.mkdir()
    echo = str(Path(__file__).with_name("echo_server.py"))
    definition = {"command": sys.executable, "args": [echo, "ok", str(tmp_path / "pid")]}
    table = "\n".join(f"{k} = {json.dumps(v)}" for k, v in definition.items())
    digest = canonical_digest("echo", {**definition, "enabled": True})
    (home / "settings.toml").write_text(
        f'{extra}[mcp]\napproved = ["{digest}"]\n[mcp.servers.echo]\n{table}\nenabled = true\n'
    )
    return home, workspace


def test_exec_declares_no_elicitation_and_declines_saying_so(tmp_path: Path) -> None:
    """exec has nobody to ask: a server that asks anyway is declined, and the model reads why
    in the tool's result."""
    home, workspace = echo_home(tmp_path)
    prompt = "fixture:" + json.dumps([{"tools": [ASK_CALL]}, {"text": "done"}])
    done = subprocess.run(
        [*EXEC, "--approval-mode", "full", prompt],
        capture_output=True,
        cwd=workspace,
        env=environment(home),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    outputs = [json.loads(line) for line in done.stdout.splitlines()]
    (output,) = [e["data"]["output"] for e in outputs if e["event"] == "tool.output"]
    assert output.startswith(DECLINED)
    assert "decline: None" in output


def test_the_local_agent_declines_too_saying_so_in_the_result(tmp_path: Path) -> None:
    rule = '[[permissions.rules]]\ntool = "mcp__echo__ask"\ndecision = "allow"\n'
    home, workspace = echo_home(tmp_path, rule)
    prompt = "fixture:" + json.dumps([{"tools": [ASK_CALL]}, {"text": "done"}])
    with LocalAgentClient.spawn(cwd=workspace, env=environment(home)) as agent:
        agent.request("initialize", {"required_capabilities": ["turn.start"]})
        session = agent.request("session.create")["session_id"]
        agent.request("turn.start", {"session_id": session, "prompt": prompt})
        while (event := agent.next_event()).name != "run.finished":
            pass
        assert event.data["outcome"] == "completed"
        agent.request("shutdown")
    stored = (home / "sessions" / f"{session}.jsonl").read_text().splitlines()
    (result,) = [r["result"] for r in map(json.loads, stored) if "result" in r]
    assert result.startswith(DECLINED) and "decline: None" in result
