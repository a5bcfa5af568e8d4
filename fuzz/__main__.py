"""`python -m fuzz [NAME ...]`: each target (all by default) for FUZZ_SECONDS (env, default
60), one after the other: first a sixth of the budget (at most 10 s) of mutate.py's seeded
loop, which grows structure fast (deep nesting, split escapes), then the rest under atheris,
coverage-guided, in its own process. Without atheris installed (`pip install -e '.[fuzz]'`)
the loop runs the whole budget. Prints one line per target; exits 1 when any found something.
"""

import importlib.util
import os
import subprocess
import sys
import time

from fuzz.mutate import run_for
from fuzz.targets import TARGETS

FINDINGS = os.path.join("fuzz", "findings")


def main() -> int:
    seconds = int(os.environ.get("FUZZ_SECONDS", "60"))
    names = sys.argv[1:] or list(TARGETS)
    with_atheris = importlib.util.find_spec("atheris") is not None
    if not with_atheris:
        print("atheris is not installed: the mutation loop runs the whole budget", flush=True)
    looped = min(10, seconds // 6) if with_atheris else seconds
    failed = []
    for name in names:
        started = time.monotonic()
        ok, runs = _loop(name, looped)
        if ok and with_atheris:
            ok, runs = _atheris(name, seconds - looped, runs)
        took = time.monotonic() - started
        verdict = "ok" if ok else "FINDING"
        print(f"{name:<9} {verdict:<8} {runs:>10} inputs  {took:6.1f} s", flush=True)
        if not ok:
            failed.append(name)
    if failed:
        print(f"findings in: {', '.join(failed)} (their inputs are under {FINDINGS}/)")
    return 1 if failed else 0


def _loop(name: str, seconds: int) -> tuple[bool, int]:
    try:
        return True, run_for(TARGETS[name].run, TARGETS[name].seeds, seconds)
    except Exception as finding:  # noqa: BLE001 - a finding is reported, not raised
        sys.stderr.write(f"{name}: {type(finding).__name__}: {finding}\n")
        for note in getattr(finding, "__notes__", []):
            sys.stderr.write(f"  {note[:400]}\n")
        os.makedirs(FINDINGS, exist_ok=True)
        with open(os.path.join(FINDINGS, f"{name}-loop-finding"), "wb") as out:
            out.write(getattr(finding, "fuzz_input", b""))
        return False, 0


def _atheris(name: str, seconds: int, runs: int) -> tuple[bool, int]:
    command = [sys.executable, "-m", "fuzz.atheris_run", name, str(seconds), FINDINGS]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
    for line in done.stderr.splitlines():
        if line.startswith("stat::number_of_executed_units:"):
            runs += int(line.split(":")[-1])
    return done.returncode == 0, runs


if __name__ == "__main__":
    raise SystemExit(main())
