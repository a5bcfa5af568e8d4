"""The Lua client's codec and discovery, under Lua 5.1, 5.2, 5.3, 5.4 and LuaJIT: the shared
golden wire vectors, JSON edges that real text brings, sha256, the runtime directory as
registry.py resolves it, and the constants `melchior lua-api` writes in."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mel_harness import MELCHIOR
from test_melchior_lua_host import DOUBLES, RUNTIMES, Host, lua_source, same, same_items

from melchior import cli, client, limits, registry, strict_json, wire

VECTORS = json.loads((Path(__file__).parent / "wire_vectors.json").read_text(encoding="utf-8"))
ENCODE = {"socket": wire.encode_socket, "pipe": wire.encode_pipe, "argv": wire.encode_argv}


@pytest.fixture(scope="module", params=RUNTIMES)
def host(request: pytest.FixtureRequest) -> Host:
    return Host(request.param)


def python_decode(transport: str, data: bytes) -> list[wire.Item]:
    if transport == "argv":
        return [wire.decode_argv(data)]
    if transport == "socket":
        return wire.SocketDecoder().feed(data)
    pipe = wire.PipeDecoder()
    return pipe.feed(data) + pipe.close()


# ---------------------------------------------------------------- the CLI and the package


def test_lua_api_prints_the_shipped_source_with_the_limits_written_in() -> None:
    printed = lua_source()
    assert printed.isascii() and b"__MELCHIOR_CONSTANTS__" not in printed
    assert printed.decode() == cli.lua_api()
    bad = subprocess.run([*MELCHIOR, "lua-api", "--x=1"], capture_output=True, timeout=30)
    assert bad.returncode == 2 and bad.stdout == b""


def test_the_client_lists_nothing_and_runs_nothing() -> None:
    """Discovery is the caller's own project directory and the id it names: the client has
    no way to list a directory, run a command or remove a file (the walls hold anyway)."""
    printed = lua_source().decode()
    for word in ("io.popen", "os.execute", "os.remove", "os.rename", "io.lines", "require"):
        assert word not in printed, word


def test_gate_wire_scans_this_client(tmp_path: Path) -> None:
    """The gate's Lua scan finds this file, passes it, and would catch a planted foreign tag."""
    from test_melchior_gate_wire import PKG, lua_offences

    shipped = PKG / "lua" / "melchior.lua"
    assert shipped in sorted((PKG / "lua").glob("*.lua"))
    assert lua_offences(shipped) == []
    planted = tmp_path / "melchior.lua"
    planted.write_text(shipped.read_text(encoding="utf-8") + "\nlocal t = v.kind\n")
    assert lua_offences(planted) == ["melchior.lua kind"]


def test_the_lua_file_is_package_data() -> None:
    from importlib import resources

    shipped = resources.files("melchior") / "lua" / "melchior.lua"
    assert "__MELCHIOR_CONSTANTS__" in shipped.read_text(encoding="utf-8")


def test_constants_come_from_limits(host: Host) -> None:
    k = host.m.limits
    for name in cli.LUA_LIMITS:
        assert k[name.encode()] == getattr(limits, name), name
    foreign = k[b"FOREIGN_TAGS"]
    assert {foreign[i].decode() for i in range(1, len(foreign) + 1)} == wire.FOREIGN_TAGS


def test_loads_from_a_config_file_with_loadfile(host: Host, tmp_path: Path) -> None:
    """`melchior lua-api > <config>/melchior.lua`, then loadfile from there."""
    config = tmp_path / "config"
    config.mkdir()
    with (config / "melchior.lua").open("wb") as out:
        subprocess.run([*MELCHIOR, "lua-api"], stdout=out, timeout=30, check=True)
    load = host.eval("function(path) return assert(loadfile(path))(nil) end")
    loaded = load(str(config / "melchior.lua").encode())
    assert loaded.sha256(b"") == hashlib.sha256(b"").hexdigest().encode()


# ---------------------------------------------------------------- golden vectors


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["name"])
def test_lua_decodes_every_vector_whole_and_byte_by_byte(host: Host, vector: Any) -> None:
    data = bytes.fromhex(vector["hex"])
    bound = vector.get("max_frame")
    for bytewise in (False, True) if vector["transport"] != "argv" else (False,):
        got = host.items(host.h.decode(vector["transport"].encode(), data, bound, bytewise))
        assert same_items(got, vector["items"]), (bytewise, got)


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["name"])
def test_lua_encodes_every_message_so_python_reads_it_back(host: Host, vector: Any) -> None:
    messages = [i["message"] for i in vector["items"] if "message" in i]
    encode = host.m.wire[b"encode_" + vector["transport"].encode()]
    out = b"".join(encode(host.lua_value(m)) for m in messages)
    if vector["transport"] == "argv":
        back = [wire.decode_argv(chunk + b"\n") for chunk in out.split(b"\n")[:-1]]
    else:
        back = python_decode(vector["transport"], out)
    assert all(not isinstance(it, wire.Refusal) for it in back)
    assert same(back, messages)
    if vector.get("canonical"):
        assert out.hex() == vector["hex"]


def test_the_vectors_cover_canonical_and_refusals() -> None:
    """The two tests above can fail: there are canonical vectors and refusing ones."""
    assert any(v.get("canonical") for v in VECTORS["vectors"])
    assert any("refused" in i for v in VECTORS["vectors"] for i in v["items"])


# ---------------------------------------------------------------- JSON edges

EDGES = [
    (rb'"a\"b\\c\/d\b\f\n\r\t"', 'a"b\\c/d\b\f\n\r\t', rb'"a\"b\\c/d\b\f\n\r\t"'),
    (rb'"\u0000\u001F\u007f"', "\x00\x1f\x7f", b'"\\u0000\\u001f\x7f"'),
    (rb'"\ud83d\ude00"', "\U0001f600", '"\U0001f600"'.encode()),
    (rb'"\u00e9\u2028"', "\u00e9\u2028", '"\u00e9\u2028"'.encode()),
    (b'[[],{},[{}],{"a":[]}]', [[], {}, [{}], {"a": []}], b'[[],{},[{}],{"a":[]}]'),
    (
        b'{"b":null,"a":true,"c":false}',
        {"a": True, "b": None, "c": False},
        b'{"a":true,"b":null,"c":false}',
    ),
    (b" \t\r\n[1 , -0 ,2]\n", [1, 0, 2], b"[1,0,2]"),
    (
        b'{"\xc3\xa9":1,"z":2,"\xf0\x9f\x98\x80":3,"Z":4}',
        {"é": 1, "z": 2, "\U0001f600": 3, "Z": 4},
        '{"Z":4,"z":2,"é":1,"\U0001f600":3}'.encode(),
    ),
    (b"9007199254740992", 2**53, b"9007199254740992"),
]


@pytest.mark.parametrize(("text", "value", "canonical"), EDGES)
def test_json_edges_decode_and_encode(
    host: Host, text: bytes, value: Any, canonical: bytes
) -> None:
    decoded = host.m.json.decode(text)
    assert same(host.py(decoded), value)
    assert host.m.json.encode(decoded) == canonical == strict_json.dumps(value).encode()


REFUSED = [
    b"[1,]",
    b"01",
    b"1.",
    b".5",
    b"+1",
    b"[1] [2]",
    b"",
    b" ",
    b"NaN",
    b"[Infinity]",
    b"\xef\xbb\xbf[]",
    b'"\xff"',
    b'"\xc0\xaf"',
    b'"\xed\xa0\x80"',
    b'"\xf4\x90\x80\x80"',
    b'{"a":1,"a":2}',
    b'"\x01"',
    b'"\\x"',
    b'"\\ud800"',
    b'"\\ude00"',
    b'"\\ud800\\u0041"',
    b"{1:2}",
    b"tru",
    b"[" * 600 + b"]" * 600,
    b"1e999",  # reads as Infinity
    b"[-1e400]",
]


@pytest.mark.parametrize("text", REFUSED, ids=repr)
def test_json_refusals(host: Host, text: bytes) -> None:
    assert host.refusal(host.m.json.decode, text) == "bad_json"


def test_lone_surrogate_is_where_lua_is_stricter_than_python() -> None:
    """Documented: Python reads a lone surrogate escape; UTF-8 cannot carry one."""
    assert strict_json.loads('"\\ud800"') == "\ud800"


def test_an_integer_past_the_double_range_is_where_lua_is_stricter_than_python(
    host: Host,
) -> None:
    """Python reads any integer (up to its digit limit) exactly; Lua reads one past 2^1024 as
    Infinity, which it refuses as it refuses `1e999`."""
    big = b"1" + b"0" * 400
    assert strict_json.loads(big.decode()) == 10**400
    assert host.refusal(host.m.json.decode, big) == "bad_json"
    assert host.m.json.encode(host.m.json.decode(b"1" + b"0" * 300)) == b"1e+300"


def test_nesting_at_the_lua_bound(host: Host) -> None:
    deepest = b"[" * 512 + b"]" * 512
    assert host.m.json.encode(host.m.json.decode(deepest)) == deepest
    assert host.refusal(host.m.json.decode, b"[" * 513 + b"]" * 513) == "bad_json"


def test_encoder_refuses_what_json_cannot_say(host: Host) -> None:
    for value in ("0/0", "1/0", "{[1]=1, x=2}", "function() end", "'\\255'"):
        assert host.refusal(host.m.json.encode, host.eval(value)) == "bad_args", value


def test_unmarked_tables_and_markers(host: Host) -> None:
    enc = host.m.json.encode
    assert enc(host.eval("{}")) == b"[]"
    assert enc(host.m.object()) == b"{}"
    assert enc(host.m.array()) == b"[]"
    assert enc(host.eval("{1, 2}")) == b"[1,2]"
    assert enc(host.eval("{b = 1, a = 'x'}")) == b'{"a":"x","b":1}'


def test_big_integers(host: Host) -> None:
    """Beyond 2^53 a double rounds; 5.3 and 5.4 keep 64-bit integers exact."""
    dec, enc = host.m.json.decode, host.m.json.encode
    assert enc(dec(b"9007199254740993")) == (
        b"9007199254740992" if host.version in DOUBLES else b"9007199254740993"
    )
    assert enc(dec(b"-9223372036854775807")) == (
        b"-9223372036854775808" if host.version in DOUBLES else b"-9223372036854775807"
    )
    assert enc(dec(b"18446744073709551616")) == b"1.8446744073709552e+19"  # 2^64


FLOATS = [0.1, 1.5, -2.25, 1e16, 1e-5, 123456.789, 1e300, 5e-324, -0.0, 100.0, 1e15]
# Powers of two and others whose correctly rounded digits miss and a neighbour reads back.
FLOATS += [2.0**-24, 5.858190679279809e-244, 5.426657103235053e-166, 5.986310706507379e51]


def test_floats_as_python_writes_them(host: Host) -> None:
    for x in FLOATS:
        got = host.m.json.encode(host.m.json.decode(json.dumps(x).encode()))
        if host.version in DOUBLES and x == int(x) and abs(x) <= 2**63:
            assert got == str(int(x)).encode(), x  # one number type: a whole number
        else:
            assert got == json.dumps(x).encode(), x


def _json_values(floats: bool) -> st.SearchStrategy[Any]:
    text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
    scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | text
    if floats:
        scalars |= st.floats(allow_nan=False, allow_infinity=False)
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
        max_leaves=12,
    )


@pytest.mark.parametrize("version", RUNTIMES)
def test_differential_lua_and_python_canonical_bytes(version: str) -> None:
    """Python's canonical bytes, decoded and re-encoded by Lua, come back byte for byte."""
    host = Host(version)

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_json_values(floats=version not in DOUBLES))
    def check(value: Any) -> None:
        data = strict_json.dumps(value).encode()
        assert host.m.json.encode(host.m.json.decode(data)) == data

    check()


# ---------------------------------------------------------------- sha256 and discovery


def python_project_dir(project: str, env: dict[str, str]) -> str:
    """registry.project_dir in a process of its own: the temp dir comes from os.environ."""
    code = "import os, sys; from melchior import registry; "
    code += "print(registry.project_dir(sys.argv[1], os.environ))"
    full = {"PATH": os.environ.get("PATH", ""), **env}
    done = subprocess.run(
        [MELCHIOR[0], "-c", code, project], env=full, capture_output=True, timeout=30, check=True
    )
    return done.stdout.decode().strip()


def test_sha256_matches_hashlib(host: Host) -> None:
    for data in (b"", b"abc", b"a" * 55, b"a" * 56, b"a" * 64, bytes(range(256)) * 2):
        assert host.m.sha256(data).decode() == hashlib.sha256(data).hexdigest()


LONG = "p" * 40 + "." + "q" * 87  # PROJECT_MAX characters


def test_project_dir_mirrors_registry_under_xdg(host: Host, tmp_path: Path) -> None:
    run = Path(tempfile.mkdtemp(prefix="mel-", dir="/tmp"))
    try:
        host.env = {"XDG_RUNTIME_DIR": str(run)}
        base = registry.base_dir(host.env)
        budget = limits.SUN_PATH_MAX - len(base) - 2 - limits.ID_MAX
        at, over = "x" * budget, "x" * (budget + 1)
        for project in ("demo", LONG, at, over):
            want = registry.project_dir(project, host.env)
            assert host.m.project_dir(project.encode()).decode() == want
        assert "~" not in registry.project_dir(at, host.env)
        assert "~" in registry.project_dir(over, host.env)
        assert host.refusal(host.m.project_dir, b"../up") == "usage"
    finally:
        import shutil

        shutil.rmtree(run, ignore_errors=True)


def test_runtime_dir_without_xdg_falls_back_like_python(host: Host, tmp_path: Path) -> None:
    short = Path(tempfile.mkdtemp(prefix="t-", dir="/tmp"))
    try:
        for env in ({"TMPDIR": str(short)}, {"TMPDIR": str(short) + "/", "XDG_RUNTIME_DIR": "x"}):
            host.env = env
            assert host.m.project_dir(LONG.encode()).decode() == python_project_dir(LONG, env)
        assert host.m.base_dir().decode().endswith(f"melchior-{os.getuid()}")
        deep = {"TMPDIR": str(short) + "/" + "d" * 60}
        host.env = deep
        assert host.refusal(host.m.project_dir, b"demo") == "path_too_long"
    finally:
        import shutil

        shutil.rmtree(short, ignore_errors=True)


def test_identity_from_the_environment(host: Host) -> None:
    base = {"MAGI_MELCHIOR_PROJECT": "demo", "MAGI_MELCHIOR_ID": "alpha-rho"}
    host.env = {**base, "MAGI_MELCHIOR_TOKEN": "s3cret", "MAGI_MELCHIOR_TALK": "project"}
    me = host.py(host.m.whoami())
    assert me == {"project": "demo", "id": "alpha-rho", "talk": "project"}  # no token
    for talk, project_talk, want in (
        ("project", "run", "run"),
        ("run", "project", "run"),
        ("bogus", None, "instance"),
        ("project", "", "instance"),
        (None, "project", "instance"),
    ):
        env = {**base, "MAGI_MELCHIOR_TOKEN": "t"}
        env.update(
            {
                k: v
                for k, v in (
                    ("MAGI_MELCHIOR_TALK", talk),
                    ("MAGI_MELCHIOR_PROJECT_TALK", project_talk),
                )
                if v is not None
            }
        )
        host.env = env
        from melchior.identity import talk_from

        assert host.py(host.m.whoami())["talk"] == want == talk_from(env)
    host.env = {**base}
    assert host.m.whoami() is None
    assert host.refusal(host.m.connect, b"beta-nu") == "no_identity"


# ---------------------------------------------------------------- the host stream contract


class Scripted:
    """A stream that plays back a session's replies and records what the client wrote."""

    def __init__(self, replies: bytes) -> None:
        self.replies, self.written, self.closed = replies, bytearray(), False

    def read(self, n: float) -> bytes | None:
        want = int(n)
        if len(self.replies) < want:
            return None
        data, self.replies = self.replies[:want], self.replies[want:]
        return data

    def write(self, data: bytes) -> bool:
        self.written += data
        return True

    def close(self) -> None:
        self.closed = True


ME = {
    "XDG_RUNTIME_DIR": "/run/nowhere",
    "MAGI_MELCHIOR_PROJECT": "demo",
    "MAGI_MELCHIOR_ID": "alpha-rho",
    "MAGI_MELCHIOR_TOKEN": "s3cret",
    "MAGI_MELCHIOR_TALK": "run",
}
HELLO = wire.encode_socket(wire.reply([{"id": "beta-nu", "role": "main", "who": "demo/main/x"}]))


def scripted_host(version: str, replies: bytes) -> tuple[Host, Scripted, list[bytes]]:
    stream, paths = Scripted(replies), []

    def dialler(path: bytes) -> tuple[Any, bytes | None]:
        paths.append(path)
        return stream, None

    return Host(version, ME, sandboxed=True, dialler=dialler), stream, paths


def reply_of_size(size: int) -> bytes:
    """A reply frame whose JSON body is exactly `size` bytes."""
    empty = len(wire.encode_json(wire.reply([""])))
    return wire.encode_socket(wire.reply(["x" * (size - empty)]))


@pytest.mark.parametrize("version", RUNTIMES)
def test_hello_is_the_python_clients_and_frames_at_the_bound(version: str) -> None:
    over = (limits.MAX_FRAME + 1).to_bytes(limits.FRAME_HEADER, "big")
    over += b"x" * (limits.MAX_FRAME + 1)
    at = reply_of_size(limits.MAX_FRAME)
    assert len(at) == limits.FRAME_HEADER + limits.MAX_FRAME
    ok = wire.encode_socket(wire.reply([{"busy": True}]))
    host, stream, paths = scripted_host(version, HELLO + at + over + ok)
    them = host.m.connect(b"beta-nu")
    assert paths == [b"/run/nowhere/melchior/demo/beta-nu"]
    from melchior.identity import from_env

    me = from_env(ME)
    assert me is not None
    sent = wire.SocketDecoder().feed(bytes(stream.written))
    assert sent == [wire.call("hello", client.hello_args(me))]
    assert len(host.py(them.status())) == limits.MAX_FRAME - len(wire.encode_json(wire.reply([""])))
    assert host.refusal(them.status) == "frame_too_large"  # skipped whole: still in step
    assert host.py(them.status()) == {"busy": True}
    assert host.refusal(them.status) == "broken"  # end of input
    assert stream.closed


@pytest.mark.parametrize("version", RUNTIMES)
def test_what_the_host_says_when_it_cannot_dial(version: str) -> None:
    def says(result: Any) -> str:
        def dialler(path: bytes) -> Any:
            if isinstance(result, Exception):
                raise result
            return result

        host = Host(version, ME, sandboxed=True, dialler=dialler)
        return host.refusal(host.m.connect, b"beta-nu")

    assert says((None, b"timeout")) == "timeout"
    assert says((None, b"gone")) == "gone"
    assert says((None, b"unknown_session")) == "unknown_session"
    assert says((None, b"the disk is on fire")) == "broken"  # nothing else crosses
    assert says(OSError("/secret/path")) == "broken"


@pytest.mark.parametrize("version", RUNTIMES)
def test_a_refused_hello_closes_the_stream(version: str) -> None:
    host, stream, _ = scripted_host(version, wire.encode_socket(wire.refusal("unauthenticated")))
    assert host.refusal(host.m.connect, b"beta-nu") == "unauthenticated"
    assert stream.closed
    host, stream, _ = scripted_host(version, wire.encode_socket({"event": "listening"}))
    assert host.refusal(host.m.connect, b"beta-nu") == "broken"  # not a reply
    host, stream, _ = scripted_host(version, wire.encode_socket({"type": "reply", "ok": True}))
    assert host.refusal(host.m.connect, b"beta-nu") == "bad_tag"
