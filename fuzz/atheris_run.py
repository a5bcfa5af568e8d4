"""One target under atheris (libFuzzer) for a time budget: `python -m fuzz.atheris_run NAME
SECONDS DIRECTORY`. Exits 0 when the budget ran out with no finding; a finding is printed and
its input saved in DIRECTORY (libFuzzer's crash-* file)."""

import os
import sys
import tempfile

import atheris  # type: ignore[import-untyped]

with atheris.instrument_imports(include=["magi_code", "melchior"]):
    from fuzz.targets import TARGETS


def main() -> None:
    name, seconds, directory = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    target = TARGETS[name]
    corpus = tempfile.mkdtemp(prefix=f"fuzz-{name}-")
    for number, seed in enumerate(target.seeds):
        with open(os.path.join(corpus, f"seed{number}"), "wb") as out:
            out.write(seed)
    os.makedirs(directory, exist_ok=True)
    argv = [
        sys.argv[0],
        f"-max_total_time={seconds}",
        f"-artifact_prefix={os.path.join(directory, name)}-",
        "-max_len=4096",
        "-print_final_stats=1",
        corpus,
    ]
    atheris.Setup(argv, target.run)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
