"""`python -m fuzz [NAME ...]`: each target (all by default) under atheris for FUZZ_SECONDS
(env, default 60), each in its own process, one after the other. Without atheris installed
(`pip install -e '.[fuzz]'`) the seeded mutation loop of mutate.py runs instead, in process.
Prints one line per target; exits 1 when any target found something."""

import importlib.util
import os
import subprocess
import sys
import time

from fuzz.targets import TARGETS

FINDINGS = os.path.join("fuzz", "findings")


def main() -> int:
    seconds = int(os.environ.get("FUZZ_SECONDS", "60"))
    names = sys.argv[1:] or list(TARGETS)
    with_atheris = importlib.util.find_spec("atheris") is not None
    if not with_atheris:
        print("atheris is not installed: running the mutation loop instead", flush=True)
    failed = []
    for name in names:
        started = time.monotonic()
        if with_atheris:
            command = [sys.executable, "-m", "fuzz.atheris_run", name, str(seconds), FINDINGS]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            ok = done.returncode == 0
            runs = _stat(done.stderr, "stat::number_of_executed_units:")
            if not ok:
                sys.stderr.write(done.stderr[-4000:])
        else:
            from fuzz.mutate import run_for

            try:
                runs = str(run_for(TARGETS[name].run, TARGETS[name].seeds, seconds))
                ok = True
            except Exception as finding:  # noqa: BLE001 - a finding is reported, not raised
                runs, ok = "?", False
                sys.stderr.write(f"{name}: {type(finding).__name__}: {finding}\n")
                for note in getattr(finding, "__notes__", []):
                    sys.stderr.write(f"  {note[:400]}\n")
        took = time.monotonic() - started
        print(
            f"{name:<9} {'ok' if ok else 'FINDING':<8} {runs:>10} inputs  {took:6.1f} s", flush=True
        )
        if not ok:
            failed.append(name)
    if failed:
        print(f"findings in: {', '.join(failed)} (inputs under {FINDINGS}/)")
    return 1 if failed else 0


def _stat(text: str, key: str) -> str:
    for line in text.splitlines():
        if line.startswith(key):
            return line.removeprefix(key).strip()
    return "?"


if __name__ == "__main__":
    raise SystemExit(main())
