"""A second of every fuzz target (fuzz/targets.py: the decoders and the hostile-server
targets) with the seeded mutation loop, so `make test` keeps the harness that `make fuzz` runs
for longer under atheris."""

import pytest
from fuzz.mutate import run_for
from fuzz.targets import TARGETS, fuzz_session, fuzz_settings

SECONDS_EACH = 1.0  # nine targets: about 9 s in all


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_the_decoder_maps_every_input_to_its_documented_result(name: str) -> None:
    target = TARGETS[name]
    ran = run_for(target.run, target.seeds, SECONDS_EACH)
    assert ran > len(target.seeds)  # the seeds, then mutations


@pytest.mark.parametrize(
    "data",
    [b'\x00{"session_id":"s-fuzz","type":["user"]}\n', b'\x00{"session_id":"s-fuzz","type":{}}\n'],
)
def test_the_session_target_holds_the_record_type_finding(data: bytes) -> None:
    fuzz_session(data)  # issue 19.5: a list or object type raised TypeError


DEEP_TOML = [
    b"a = " + b"[" * 1000 + b"]" * 1000,
    b"a = " + b"{x = " * 1000 + b"1" + b"}" * 1000,
    b".".join([b"k"] * 990) + b" = 1",
]


@pytest.mark.parametrize("data", DEEP_TOML, ids=["array", "inline-table", "dotted-key"])
def test_the_settings_target_on_deep_nesting(data: bytes) -> None:
    fuzz_settings(data)  # issue 19.5: deep nesting raised RecursionError


def test_the_mcp_target_holds_the_non_ascii_header_finding() -> None:
    from fuzz.hostile import fuzz_mcp

    fuzz_mcp(b"\x00200\ndata: essi\x85n-id: s\n\r\n")  # a header value that is not ASCII raised
