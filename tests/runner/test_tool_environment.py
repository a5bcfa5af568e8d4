"""The tools' environment is an allow-list: a real `magi-code exec` run whose shell tool runs
`env` shows none of 22 planted secrets, in the session file or on stdout, while PATH, HOME,
LANG and what `[shell] env_keep` names are there. Then the allow-list, its second net and
env_keep's globs, one by one."""

import json
import os
import random
import string
from pathlib import Path

import pytest

from magi_code.config import trust
from magi_code.runner import environment as tool_environment
from magi_code.runner.setup import tool_env
from magi_code.runner.startup import admit
from support.exec import exec_run

ALNUM = string.ascii_letters + string.digits


def fake(prefix: str, length: int, alphabet: str = ALNUM, seed: int = 0) -> str:
    """A realistic token: `prefix` and `length` random characters (built at run time, so the
    source holds no token shape a secret scanner would flag)."""
    rng = random.Random(f"{prefix}{length}{seed}")
    return prefix + "".join(rng.choice(alphabet) for _ in range(length))


B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
JWT = ".".join(
    [
        "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
        "eyJ" + fake("", 60, B64URL, 1),
        fake("", 43, B64URL, 2),
    ]
)
SLASHED = fake("pa/", 10, seed=3) + "/ss"
TOKEN_USER = fake("", 40, string.hexdigits.lower(), 4)

# The 14 the name-based scrub let through (the security issue's list), then 8 it caught.
PLANTED = {
    "GH_PAT": fake("ghp_", 36),
    "OPENAI_KEY": fake("sk-proj-", 48, B64URL),
    "STRIPE_KEY": fake("sk_" + "live_", 24),
    "MYSQL_PWD": "Tr0ub4dor&3-" + fake("", 8),
    "NPM_AUTH": fake("npm_", 36),
    "HF_AUTH": fake("hf_", 34, string.ascii_letters),
    "KUBE_BEARER": fake("", 43, B64URL, 5),
    "JWT": JWT,
    "MY_PASS": "correct-horse-battery-" + fake("", 6),
    "ANTHROPIC_AUTH": fake("sk-ant-api03-", 95, B64URL),
    "AWS_SESSION": fake("IQoJb3JpZ2luX2Vj", 300, B64),
    "SSH_AUTH_SOCK": "/tmp/ssh-" + fake("", 10) + "/agent.4242",
    "MY_TOOL_MIRROR": f"https://deploy:{SLASHED}@git.example.com/o/r.git",
    "MY_TOOL_UPSTREAM": f"https://{TOKEN_USER}@github.com/o/r.git",
    "GITHUB_TOKEN": fake("gho_", 36),
    "OPENAI_API_KEY": fake("sk-", 48, B64URL),
    "ANTHROPIC_API_KEY": fake("sk-ant-api03-", 95, B64URL, 6),
    "AWS_SECRET_ACCESS_KEY": fake("", 40, B64, 7),
    "SLACK_BOT_TOKEN": "xoxb-" + fake("", 12, string.digits) + "-" + fake("", 24),
    "DB_PASSWORD": "s3cr3t-" + fake("", 12),
    "CLIENT_SECRET": fake("", 32, seed=8),
    "DATABASE_URL": "postgres://app:" + fake("", 16, seed=9) + "@db.internal:5432/app",
}
KEPT = {"MY_TOOL_HOME": "/opt/my-tool-kept", "LANG": "C.UTF-8"}
# What must not be shown: each whole value and, for the URLs, the secret inside.
SECRETS = [*PLANTED.values(), SLASHED, TOKEN_USER]


def test_a_shell_command_sees_none_of_the_planted_secrets(tmp_path: Path) -> None:
    assert len(PLANTED) == 22
    home, workspace, user_home = tmp_path / "mc-home", tmp_path / "work", tmp_path / "user"
    for path in (home, workspace, user_home):
        path.mkdir()
    (home / "settings.toml").write_text('[shell]\nenv_keep = ["MY_TOOL_*"]\n')
    prompt = "fixture:" + json.dumps(
        [{"tools": [{"name": "shell", "arguments": {"command": "env"}}]}]
    )
    args = ["--json", "--approval-mode", "full", prompt]
    done = exec_run(args, workspace, home, **PLANTED, **KEPT, HOME=str(user_home))

    assert done.returncode == 0, done.stderr
    (session,) = (home / "sessions").glob("*.jsonl")
    records = [json.loads(line) for line in session.read_text().splitlines() if line]
    (result,) = [r["result"] for r in records if r.get("type") == "tool" and "result" in r]
    assert "[exit code 0" in result, result
    shown = {name: value for name, _, value in (line.partition("=") for line in result.split("\n"))}
    stdout = done.stdout.decode()
    leaked = [s for s in SECRETS if s in result or s in stdout or s in session.read_text()]
    assert leaked == [], sorted(n for n, v in PLANTED.items() if v in leaked)
    assert not set(PLANTED) & set(shown), sorted(set(PLANTED) & set(shown))
    assert shown["PATH"] == os.environ["PATH"]

    assert shown["HOME"] == str(user_home)
    assert shown["LANG"] == "C.UTF-8"
    assert shown["MY_TOOL_HOME"] == "/opt/my-tool-kept"  # kept by env_keep
    assert shown["MC_HOME"] == str(home)


# ---- the allow-list and its second net ------------------------------------------------------


def test_only_allowed_names_are_kept() -> None:
    env = {
        **{name: "/x" for name in ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "PWD")},
        **{"LANG": "C.UTF-8", "LANGUAGE": "en", "LC_ALL": "C", "LC_CTYPE": "C.UTF-8"},
        **{"TERM": "xterm", "COLORTERM": "truecolor", "TZ": "UTC", "NO_COLOR": "1", "CI": "1"},
        **{"EDITOR": "vim", "VISUAL": "vim", "PAGER": "less", "DISPLAY": ":0"},
        **{"WAYLAND_DISPLAY": "wayland-0", "XDG_RUNTIME_DIR": "/run/u", "XDG_STATE_HOME": "/s"},
        **{"MC_HOME": "/m", "MC_DEBUG_STDERR": "1", "MC_NO_LANDLOCK": "1"},
        **{"MAGI_SANDBOX_MODE": "read-only", "MAGI_MELCHIOR_ID": "a", "MAGI_MELCHIOR_PROJECT": "p"},
        **{"MAGI_MELCHIOR_TALK": "run", "MAGI_CODE_DELEGATION": "{}"},
        **{"HTTPS_PROXY": "http://proxy:3128", "no_proxy": "localhost", "VIRTUAL_ENV": "/v"},
        **{"SSL_CERT_FILE": "/etc/ca.pem", "JAVA_HOME": "/j", "CARGO_HOME": "/c"},
    }
    dropped = {
        **{
            "SSH_AUTH_SOCK": "/tmp/ssh/agent",
            "HOMEPAGE": "https://example.com",
            "HTTP_PROXY_USER": "me",
        },
        **{"PYTHONPATH": "/p", "LD_PRELOAD": "/l.so", "GIT_REMOTE": "ssh://git@github.com/o/r"},
        **{"LCX": "1", "XDGHOME": "/x", "MCHOME": "/x", "OLDPWD": "/x", "path": "/x"},
    }
    assert tool_environment.tool_environment({**env, **dropped}) == env


@pytest.mark.parametrize(
    "name",
    [
        *("MAGI_MELCHIOR_TOKEN", "XDG_SECRET_DIR", "XDG_TOKEN", "LC_PASSWORD", "MC_API_KEY"),
        *("MC_APIKEY", "MAGI_CREDENTIALS", "MC_PASSWD", "XDG_KEY", "MC_SIGNING_KEY", "MC_PAT"),
        *("MC_JWT", "MC_BEARER", "MC_AUTH", "MC_PWD", "MC_PASS", "MC_COOKIE", "LC_KEYS"),
    ],
)
def test_a_secret_looking_name_is_dropped_even_when_allowed_or_kept(name: str) -> None:
    assert tool_environment.tool_environment({name: "plain"}) == {}
    assert tool_environment.tool_environment({name: "plain"}, keep=(name, "*")) == {}


@pytest.mark.parametrize(
    "name", ["PWD", "SSH_AUTH_SOCK", "MC_AUTHOR", "MC_KEYBOARD", "MC_PATH", "MC_SESSION_ID"]
)
def test_a_name_that_only_resembles_a_secret_one_is_not_dropped(name: str) -> None:
    assert tool_environment.tool_environment({name: "/x"}, keep=("SSH_AUTH_SOCK",)) == {name: "/x"}


@pytest.mark.parametrize(
    "value",
    [
        "postgres://app:hunter2@db.internal:5432/app",
        "https://deploy:pa/ss@git.example.com/o/r.git",
        "https://deploy:p/a/s/s@host",
        "redis://:secret@cache:6379",
        "http://me:pw@proxy:3128",
        "see https://u:p@example.com/x for details",
        "https://" + fake("", 40, string.hexdigits.lower()) + "@github.com/o/r",
        "https://" + fake("ghp_", 36) + "@github.com/o/r",
        "https://" + fake("", 24) + "@github.com/o/r",
        "https://" + fake("glpat-", 20) + "@gitlab.com/o/r",
        fake("hf_", 34, string.ascii_letters),
        "Bearer-free " + fake("sk-ant-api03-", 95, B64URL),
        JWT,
    ],
)
def test_a_secret_looking_value_is_dropped_whatever_its_name(value: str) -> None:
    for name in ("EDITOR", "XDG_CONFIG_HOME", "MC_HOME", "MY_TOOL_X"):
        assert tool_environment.tool_environment({name: value}, keep=("MY_TOOL_*",)) == {}


@pytest.mark.parametrize(
    "value",
    [
        "ssh://git@github.com/o/r",
        "https://oauth2@gitlab.com/o/r",
        "https://deploy-bot-account@git.example.com/o/r",
        "https://example.com/a@b",
        "https://example.com/path",
        "/usr/local/bin:/usr/bin:/bin",
        "less -R",
        "task-runner-with-a-long-name",
        "C.UTF-8",
    ],
)
def test_an_ordinary_value_is_kept(value: str) -> None:
    assert tool_environment.tool_environment({"EDITOR": value}) == {"EDITOR": value}


# ---- [shell] env_keep -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keep", "name", "kept"),
    [
        (("MY_TOOL_HOME",), "MY_TOOL_HOME", True),
        (("MY_TOOL_HOME",), "MY_TOOL_HOMES", False),
        (("MY_TOOL_HOME",), "my_tool_home", False),  # names are case-sensitive
        (("MY_TOOL_*",), "MY_TOOL_HOME", True),
        (("MY_TOOL_*",), "MY_TOOL_", True),
        (("MY_TOOL_*",), "MY_TOOLS", False),
        (("*_HOME",), "JAVA_HOME", True),
        (("GO?ATH",), "GOPATH", True),
        (("SSH_AUTH_SOCK",), "SSH_AUTH_SOCK", True),
        ((), "SSH_AUTH_SOCK", False),
        (("JAVA_HOME", "NODE_*"), "NODE_OPTIONS", True),
    ],
)
def test_env_keep_names_and_globs(keep: tuple[str, ...], name: str, kept: bool) -> None:
    assert tool_environment.kept(name, keep) is kept
    got = tool_environment.tool_environment({name: "/x"}, keep=keep)
    assert got == ({name: "/x"} if kept else {})


@pytest.mark.parametrize(
    ("table", "entries"),
    [
        ({}, ()),
        ({"shell": {}}, ()),
        ({"shell": {"env_keep": ["A", "B_*", "C?"]}}, ("A", "B_*", "C?")),
        ({"shell": {"env_keep": ["A", 3, "", "B C", "D=1", "[E]", None, "F"]}}, ("A", "F")),
        ({"shell": {"env_keep": "A"}}, ()),
        ({"shell": ["A"]}, ()),
        ({"shell": "A"}, ()),
    ],
)
def test_bad_env_keep_entries_are_ignored(table: dict[str, object], entries: tuple[str]) -> None:
    assert tool_environment.env_keep(table) == entries


def test_env_keep_comes_from_the_global_settings_only(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    (work / ".magi-code").mkdir(parents=True)
    home.mkdir()
    env = {"MC_HOME": str(home), "GLOBAL_ONE": "g", "PROJECT_ONE": "p", "SSH_AUTH_SOCK": "/s"}
    (work / ".magi-code" / "settings.toml").write_text(
        '[shell]\nenv_keep = ["PROJECT_ONE", "SSH_AUTH_SOCK"]\n'
    )
    for trusted in (False, True):
        listed = f'trusted_projects = ["{work}"]\n' if trusted else ""
        (home / "settings.toml").write_text(
            f'[permissions]\n{listed}[shell]\nenv_keep = ["GLOBAL_*", "BAD NAME"]\n'
        )
        admitted = admit(str(work), env)
        assert tool_env(admitted) == {"MC_HOME": str(home), "GLOBAL_ONE": "g"}
        assert [d.key for d in admitted.dropped] == ["shell"]
    assert trust.TOP_LEVEL["shell"] == trust.NEVER


def test_every_providers_key_env_is_dropped_even_when_kept(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.toml").write_text(
        '[providers.local]\nwire_api = "openai-chat"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'api_key_env = "PLAINLY_NAMED"\n[shell]\nenv_keep = ["PLAINLY_*"]\n'
    )
    env = {"MC_HOME": str(home), "PLAINLY_NAMED": "k1", "PLAINLY_OTHER": "o"}
    assert tool_env(admit(str(tmp_path), env)) == {"MC_HOME": str(home), "PLAINLY_OTHER": "o"}
