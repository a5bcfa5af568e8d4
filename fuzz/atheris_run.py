"""One target under atheris (libFuzzer) for a time budget: `python -m fuzz.atheris_run NAME
SECONDS DIRECTORY`. Exits 0 when the budget ran out with no finding; a finding is printed and
its input saved in DIRECTORY (libFuzzer's crash-* file)."""

import os
import sys
import tempfile

import atheris  # type: ignore[import-untyped]

with atheris.instrument_imports(include=["magi_code", "melchior"]):
    from fuzz.targets import TARGETS

from fuzz.mutate import TOKENS


def _escaped(token: bytes) -> str:
    return "".join(chr(b) if 0x20 <= b < 0x7F and b not in b'"\\' else f"\\x{b:02x}" for b in token)


def main() -> None:
    name, seconds, directory = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    target = TARGETS[name]
    corpus = tempfile.mkdtemp(prefix=f"fuzz-{name}-")
    seeds = os.path.join(corpus, "seeds")
    os.makedirs(seeds)
    for number, seed in enumerate(target.seeds):
        with open(os.path.join(seeds, f"seed{number}"), "wb") as out:
            out.write(seed)
    tokens = os.path.join(corpus, "tokens.dict")
    with open(tokens, "w") as out:  # libFuzzer's dictionary: the tokens mutate.py inserts
        out.writelines(f'"{_escaped(token)}"\n' for token in TOKENS)
    os.makedirs(directory, exist_ok=True)
    argv = [
        sys.argv[0],
        f"-max_total_time={seconds}",
        f"-artifact_prefix={os.path.join(directory, name)}-",
        "-max_len=4096",
        "-print_final_stats=1",
        f"-dict={tokens}",
        seeds,
    ]
    atheris.Setup(argv, target.run)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
